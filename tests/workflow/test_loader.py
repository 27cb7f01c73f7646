"""The loader over the demo run's shards: determinism, resharding, resume, caps, lineage, interop."""

from __future__ import annotations

import shutil
from collections import Counter

import numpy as np
import pytest

from tests.sample_data import recipe_for
from tests.unit.helpers import flip_byte
from tokenmill.io import read_json, read_jsonl_zst
from tokenmill.trainer.loader import Loader, LoaderError, sample_dataset, token_dataset
from tokenmill.shards.megatron import MegatronReader
from tokenmill.trainer.recipe import RecipeError

GLOBAL_BATCH = 12  # config/recipe.yaml's global_batch


@pytest.fixture(scope="module")
def manifest(reference_run):
    return reference_run / "results" / "shards" / "demo-v0" / "manifest.json"


@pytest.fixture(scope="module")
def loader(manifest) -> Loader:
    return Loader(recipe_for(manifest), manifest)


def consumed(loader: Loader, steps: int, world: int, micro: int = 2) -> Counter:
    samples = Counter()
    for step in range(steps):
        for rank in range(world):
            for batch in loader.micro_batches(step, rank, world, micro, GLOBAL_BATCH):
                samples.update((int(i), row.tobytes()) for i, row in zip(batch["indices"], batch["tokens"]))
    return samples


def test_same_arguments_give_the_same_tokens(loader, manifest):
    again = Loader(recipe_for(manifest), manifest)
    for step in (0, 7, 500):
        for mine, theirs in zip(loader.micro_batches(step, 1, 3, 2, GLOBAL_BATCH),
                                again.micro_batches(step, 1, 3, 2, GLOBAL_BATCH)):
            assert np.array_equal(mine["tokens"], theirs["tokens"])
    other_seed = recipe_for(manifest)
    other_seed["seed"] += 1
    changed = Loader(other_seed, manifest).micro_batches(0, 0, 1, GLOBAL_BATCH, GLOBAL_BATCH)[0]["tokens"]
    assert not np.array_equal(changed, loader.micro_batches(0, 0, 1, GLOBAL_BATCH, GLOBAL_BATCH)[0]["tokens"])


def test_changing_the_data_parallel_size_keeps_what_each_step_consumed(loader):
    four, three = consumed(loader, 6, 4, micro=3), consumed(loader, 6, 3, micro=2)
    assert four == three and sum(four.values()) == 6 * GLOBAL_BATCH
    assert sorted(i for i, _ in four) == list(range(6 * GLOBAL_BATCH))


def test_resuming_at_a_step_equals_the_uninterrupted_run(loader):
    uninterrupted = loader.iterate(0, 1, 2, 3, GLOBAL_BATCH)
    for _ in range(5 * 2):  # five steps of two micro-batches
        next(uninterrupted)
    resumed = loader.iterate(5, 1, 2, 3, GLOBAL_BATCH)
    for _ in range(6):
        a, b = next(uninterrupted), next(resumed)
        assert np.array_equal(a["indices"], b["indices"]) and np.array_equal(a["tokens"], b["tokens"])


def test_samples_are_packed_stream_tokens_with_document_boundaries(loader):
    eod = read_json(loader.manifest_path)["tokenizer"]["eod_id"]
    for index in [0, 1, 99, 50_000, loader.total_samples - 1, *range(3, loader.total_samples, 4999)]:
        sample = loader.sample(index)
        phase, stream_number, _, position = loader.locate(index)
        stream = phase.streams[stream_number]
        every_token = np.concatenate([MegatronReader(loader.root / loader.shards[shard]["path"])[int(document)]
                                      for shard, document in zip(stream.shards, stream.documents)])
        start = position * phase.seq_len
        assert np.array_equal(sample.tokens, every_token[start:start + phase.seq_len + 1])
        assert len(sample.tokens) == phase.seq_len + 1 and sample.tokens.dtype == np.int64
        assert sample.cu_seqlens[0] == 0 and sample.cu_seqlens[-1] == len(sample.tokens)
        for boundary in sample.cu_seqlens[1:-1]:  # a document starts right after the previous one's EOD
            assert sample.tokens[boundary - 1] == eod


def test_mixture_and_epoch_caps_hold_over_the_whole_recipe(loader):
    rows = loader.replay()
    assert max(row["relative_error"] for row in rows) <= 1e-4
    for row in rows:
        assert row["epochs"] <= row["max_epochs"] + 1e-9
    capped = [row for row in rows if row["samples"] == int(row["per_epoch"] * row["max_epochs"])]
    assert capped
    for phase in {row["phase"] for row in rows}:  # what capped streams could not take went out pro rata
        ratios = [row["planned"] / row["weight"] for row in rows if row["phase"] == phase and row not in capped]
        assert ratios and max(ratios) - min(ratios) < 1e-3 and min(ratios) > 1
    # within one epoch of a stream every sample position comes exactly once
    phase = loader.phases[1]
    streams, _ = phase.schedule()
    govuk = phase.streams.index(next(s for s in phase.streams if s.name == "govuk"))
    per_epoch = int(phase.per_epoch[govuk])
    positions = [loader.locate(phase.first + int(i))[1:] for i in np.flatnonzero(streams == govuk)]
    for epoch in range(3):
        assert sorted(p for _, e, p in positions if e == epoch) == list(range(per_epoch))


def test_the_demo_recipe_changes_phase_between_two_steps(loader):
    first_anneal_step = loader.phases[1].first // GLOBAL_BATCH
    assert loader.phases[1].first == first_anneal_step * GLOBAL_BATCH
    for step, phase, width in ((first_anneal_step - 1, "main", 129), (first_anneal_step, "anneal", 257)):
        for rank in range(3):
            for batch in loader.micro_batches(step, rank, 3, 1, GLOBAL_BATCH):
                assert batch["tokens"].shape == (1, width)
                assert loader.phase_of(int(batch["indices"][0])).name == phase


def test_a_global_batch_that_would_mix_two_phases_is_refused_before_any_sample(manifest):
    recipe = recipe_for(manifest)  # the case: main has 156,250 samples, the trainer steps 15
    recipe.pop("global_batch", None)
    recipe["phases"][0]["tokens"] = 20_000_000
    refusal = (r"recipe field phases\.0\.tokens: phase 'main' has 156250 samples \(20000000 // seq_len 128\), not a "
               r"multiple of global batch 15 \(10416 steps and 10 samples\); use tokens 19998720 \(10416 steps\) or "
               r"20000640 \(10417 steps\)")
    loader = Loader(recipe, manifest)
    for micro in (1, 3):  # step 10,416 would hold samples of both phases
        with pytest.raises(RecipeError, match=refusal):
            loader.micro_batches(10_416, 0, 1, micro, 15)
    with pytest.raises(RecipeError, match=refusal):
        Loader(recipe, manifest, global_batch=15)


def test_a_corrupt_shard_is_replaced_and_recorded_in_the_skip_set(loader, manifest, tmp_path):
    copy_root = tmp_path / "demo-v0"
    shutil.copytree(manifest.parent, copy_root)
    recipe = recipe_for(manifest)
    first_shard, broken, last_shard = [s["path"] for s in read_json(manifest)["shards"]
                                       if s["source"] == "lingua_sentences"]
    flip_byte(copy_root / f"{broken}.bin", 100)
    first, second = Loader(recipe, copy_root / "manifest.json"), Loader(recipe, copy_root / "manifest.json")
    assert first.skip_set == second.skip_set == {broken}
    told = Loader(recipe, manifest, skip=[broken])  # an intact copy, told the checkpoint's skip set
    for index in range(0, loader.total_samples, 997):
        assert np.array_equal(first.sample(index).tokens, second.sample(index).tokens)
        assert np.array_equal(first.sample(index).tokens, told.sample(index).tokens)
    phase = first.phases[0]
    for stream in phase.streams:  # the broken shard is never read; its successor stands in
        assert broken not in {first.shards[s]["path"] for s in stream.shards}
    for other in (first_shard, last_shard):
        flip_byte(copy_root / f"{other}.idx", 40)
    with pytest.raises(LoaderError, match="3 of 3 shards of lingua_sentences fail their sha256 check"):
        Loader(recipe, copy_root / "manifest.json")


def test_the_loader_refuses_another_manifest(manifest):
    recipe = recipe_for(manifest)
    recipe["manifest_sha256"] = "0" * 64
    with pytest.raises(RecipeError, match="recipe field manifest_sha256: pins 0000"):
        Loader(recipe, manifest)


def test_lineage_leads_from_a_token_to_its_document(loader, reference_run):
    results = reference_run / "results"
    for step, rank, sample, position in ((0, 0, 0, 0), (3, 1, 2, 50), (900, 2, 1, 128), (1300, 0, 0, 200)):
        index = int(loader.step_indices(step, rank, 3, GLOBAL_BATCH)[sample])
        position = min(position, loader.phase_of(index).seq_len)
        found = loader.lineage(index, position)
        tokens = MegatronReader(loader.root / found["shard"])[found["document_in_shard"]]
        assert tokens[found["token_in_document"]] == loader.sample(index).tokens[position] == found["token"]
        # doc_id hashes the text: a page captured twice with the same text is one doc_id in two records
        records = {(d["url"], d["license_id"], d["fetch_ts"])
                   for path in (results / "extract" / "docs" / found["source"]).rglob("*.jsonl.zst")
                   for d in read_jsonl_zst(path) if d["doc_id"] == found["doc_id"]}
        assert (found["url"], found["license_id"], found["fetch_ts"]) in records


def test_torch_wrappers_serve_the_same_samples(loader):
    batch = next(iter(token_dataset(loader, 4, 0, 2, 3, GLOBAL_BATCH)))
    expected = loader.micro_batches(4, 0, 2, 3, GLOBAL_BATCH)[0]
    assert np.array_equal(batch["tokens"].numpy(), expected["tokens"])
    item = sample_dataset(loader)[17]
    assert np.array_equal(item["tokens"].numpy(), loader.sample(17).tokens)


def test_megatron_gpt_dataset_trains_on_the_same_blend(loader, tmp_path):
    from tests.megatron_gpt import HFTokenizer, gpt_dataset

    blend = loader.megatron_blend("anneal")
    assert sum(weight for weight, _ in blend) == pytest.approx(1.0)
    tokenizer = HFTokenizer(str(loader.root / "tokenizer.json"), read_json(loader.manifest_path)["tokenizer"]["eod_id"])
    dataset = gpt_dataset(blend, 256, 200, tokenizer, seed=5, workdir=tmp_path)
    shard_tokens = {prefix: np.asarray(MegatronReader(prefix).tokens) for _, prefix in blend}
    for index in (0, 57, 199):
        tokens = np.asarray(dataset[index]["tokens"])
        assert len(tokens) == 256
        window = np.lib.stride_tricks.sliding_window_view
        assert any((window(data.astype(np.int64), 16) == tokens[:16]).all(axis=1).any()
                   for data in shard_tokens.values())
