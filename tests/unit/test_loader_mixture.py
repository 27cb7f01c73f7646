"""The loader's arithmetic: keyed permutations, the stratified interleave, planned counts, recipes,
and steps that never mix phases (over small real shards)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

from tests.conftest import REPO
from tests.unit.helpers import SHARD_LIMITS, tokenized_parts
from tokenmill.__main__ import main
from tokenmill.hashing import sha256_file
from tokenmill.io import read_json
from tokenmill.trainer.loader import Loader
from tokenmill.trainer.recipe import RecipeError, load_recipe, validate_recipe
from tokenmill.trainer.schedule import interleave, keyed_permutation, permute, plan_counts
from tokenmill.shards.manifest import build_manifest
from tokenmill.shards.writer import write_shards
from tokenmill.tokenize import load_tokenizer, token_dtype


@pytest.mark.parametrize("n", [1, 2, 3, 5, 64, 1000, 4097])
def test_keyed_permutation_is_a_bijection_chosen_by_the_key(n):
    first = keyed_permutation(np.arange(n), n, key=7)
    assert sorted(first.tolist()) == list(range(n))
    assert [permute(i, n, 7) for i in range(n)] == first.tolist()  # the scalar path agrees
    assert keyed_permutation(np.arange(n), n, key=7).tolist() == first.tolist()
    if n >= 64:
        assert keyed_permutation(np.arange(n), n, key=8).tolist() != first.tolist()
        assert first.tolist() != list(range(n))


def test_interleave_keeps_every_window_within_two_of_its_share():
    counts = np.array([50_000, 30_000, 15_000, 4_999, 1])
    offsets = np.array([0.1, 0.7, 0.3, 0.99, 0.5])
    streams, ks = interleave(counts, offsets)
    total = counts.sum()
    assert np.bincount(streams).tolist() == counts.tolist()
    for s in range(len(counts)):  # each stream's samples come in order 0, 1, 2, ...
        assert ks[streams == s].tolist() == list(range(counts[s]))
    one_hot = np.eye(len(counts), dtype=np.int64)[streams]
    prefix = np.vstack([np.zeros(len(counts), np.int64), np.cumsum(one_hot, axis=0)])
    rng = np.random.default_rng(3)
    for window in (7, 100, 1000, 25_000):
        starts = rng.integers(0, total - window, 400)
        seen = prefix[starts + window] - prefix[starts]
        deviation = np.abs(seen - window * counts / total)
        assert deviation.max() <= 2.0, (window, deviation.max())


def test_interleave_breaks_exact_ties_deterministically():
    streams, _ = interleave(np.array([4, 4, 4]), np.array([0.5, 0.5, 0.5]))
    assert streams.tolist() == [0, 1, 2] * 4


def test_capped_streams_pass_their_share_to_the_others_in_proportion():
    counts = plan_counts(1000, np.array([0.5, 0.3, 0.2]), np.array([100, 10_000, 10_000]), "phases.0")
    assert counts.tolist() == [100, 540, 360]
    with pytest.raises(RecipeError, match=r"recipe field phases.1.tokens: 1000 samples, but max_epochs allow only 30"):
        plan_counts(1000, np.array([0.5, 0.5]), np.array([10, 20]), "phases.1")


@pytest.fixture
def demo_recipe() -> dict:
    return yaml.safe_load((REPO / "config" / "recipe.yaml").read_text())


@pytest.mark.parametrize("change, message", [
    (lambda r: r["phases"][0]["weights"].update(govuk=0.5), "recipe field phases.0.weights: weights sum to 1.4"),
    (lambda r: r["phases"][1].update(seq_lenn=3), "recipe field phases.1.seq_lenn: unknown key 'seq_lenn'"),
    (lambda r: r["phases"][0]["bucket_weights"].update(govuk={"2k-3k": 1.0}), "recipe field phases.0.bucket_weights.govuk"),
    (lambda r: r["phases"][1]["max_epochs"].update(dolma_crawl=2), "recipe field phases.1.max_epochs.dolma_crawl: not a source"),
    (lambda r: r.update(manifest_sha256="abc"), "recipe field manifest_sha256: 'abc' does not match"),
])
def test_a_bad_recipe_names_the_field(demo_recipe, change, message):
    recipe = copy.deepcopy(demo_recipe)
    change(recipe)
    with pytest.raises(RecipeError, match=message.replace("[", r"\[").replace(".", r"\.")):
        validate_recipe(recipe)
    assert validate_recipe(copy.deepcopy(demo_recipe))["max_skipped_share"] == 0.5


def test_the_demo_recipe_is_whole_steps_of_its_global_batch(demo_recipe):
    recipe = validate_recipe(copy.deepcopy(demo_recipe))
    assert all((phase["tokens"] // phase["seq_len"]) % recipe["global_batch"] == 0 for phase in recipe["phases"])


def test_a_phase_that_ends_inside_a_step_is_refused_when_the_recipe_is_loaded(demo_recipe, tmp_path):
    recipe = copy.deepcopy(demo_recipe)  # the case: main has 156,250 samples, the trainer steps 15
    recipe["global_batch"] = 15
    recipe["phases"][0]["tokens"] = 20_000_000
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    with pytest.raises(RecipeError) as refused:
        load_recipe(path)
    assert ("recipe field phases.0.tokens: phase 'main' has 156250 samples (20000000 // seq_len 128), not a multiple "
            "of global batch 15 (10416 steps and 10 samples); use tokens 19998720 (10416 steps) or 20000640 "
            "(10417 steps)") in str(refused.value)
    assert ("recipe field phases.1.tokens: phase 'anneal' has 7812 samples (2000000 // seq_len 256), not a multiple "
            "of global batch 15 (520 steps and 12 samples); use tokens 1996800 (520 steps) or 2000640 (521 steps)"
            ) in str(refused.value)
    recipe["phases"][0]["tokens"], recipe["phases"][1]["tokens"] = 19_998_720, 2_000_640
    assert validate_recipe(recipe)["global_batch"] == 15


@pytest.fixture(scope="module")
def small_manifest(tmp_path_factory):
    """A manifest over two real sources, de and fr (lingua text, a few thousand tokens each)."""
    tmp = tmp_path_factory.mktemp("steps")
    tokenizer, parts, _ = tokenized_parts(tmp, ["de", "fr"], seed=5)
    tok, sha = load_tokenizer(str(tokenizer))
    for part in parts:
        write_shards(part.part, "s1", [part], str(tmp / "v1" / part.part / "s1"), 30000, "Apache-2.0", "academic",
                     token_dtype(tok.get_vocab_size()), SHARD_LIMITS)
    manifest = tmp / "v1" / "manifest.json"
    build_manifest("v1", [str(tmp / "v1" / part.part / "s1") for part in parts], str(manifest),
                   str(tmp / "v1" / "validation.tsv"), {"sha256": sha}, "c" * 64, "0.1.0")
    return manifest


def three_phases(manifest, **fields) -> dict:
    """Phases of 30, 18 and 24 samples of three seq_lens: whole steps of a global batch of 6
    (5, 3 and 4 steps), not of 4."""
    sources = {"de": 0.5, "fr": 0.5}
    return validate_recipe({
        "recipe_id": "steps", "manifest_sha256": sha256_file(manifest),
        "tokenizer_sha256": read_json(manifest)["tokenizer"]["sha256"], "seed": 3, **fields,
        "phases": [{"name": "short", "tokens": 30 * 16, "seq_len": 16, "weights": sources,
                    "max_epochs": {"de": 50, "fr": 50}},
                   {"name": "long", "tokens": 18 * 64 + 63, "seq_len": 64, "weights": {"de": 1.0},  # 63 make no sample
                    "max_epochs": {"de": 50}},
                   {"name": "tiny", "tokens": 24 * 8, "seq_len": 8, "weights": {"fr": 1.0},
                    "max_epochs": {"fr": 50}}]})


@pytest.mark.parametrize("world, micro", [(1, 1), (2, 3), (3, 1)])
def test_every_step_of_a_valid_recipe_lies_within_one_phase(small_manifest, world, micro):
    loader = Loader(three_phases(small_manifest, global_batch=6), small_manifest)
    served = {}  # step -> (index, phase, width) of its samples, over every rank
    for rank in range(world):
        for number, batch in enumerate(loader.iterate(0, rank, world, micro)):
            assert batch["tokens"].shape[0] == micro
            step = number // (6 // world // micro)
            for index in batch["indices"]:
                served.setdefault(step, []).append((int(index), loader.phase_of(int(index)).name,
                                                    batch["tokens"].shape[1]))
    assert len(served) == 5 + 3 + 4
    for step, samples in served.items():
        assert sorted(index for index, _, _ in samples) == list(range(6 * step, 6 * step + 6))
        assert len({(phase, width) for _, phase, width in samples}) == 1, (step, samples)
    assert [served[step][0][1:] for step in (4, 5, 7, 8)] == [("short", 17), ("long", 65), ("long", 65), ("tiny", 9)]


def test_a_global_batch_that_ends_a_phase_inside_a_step_is_refused_before_any_sample(small_manifest):
    loader = Loader(three_phases(small_manifest), small_manifest)  # declares no global batch
    # with 4 per step, step 7 would hold samples 28, 29 of 'short' and 30, 31 of 'long'
    for step in (7, 0):
        with pytest.raises(RecipeError, match=r"global batch 4 does not make every phase whole steps:\n  "
                                              r"recipe field phases\.0\.tokens: phase 'short' has 30 samples "
                                              r"\(480 // seq_len 16\), not a multiple of global batch 4 \(7 steps "
                                              r"and 2 samples\); use tokens 448 \(7 steps\) or 512 \(8 steps\)"):
            loader.micro_batches(step, 0, 1, 1, 4)
    with pytest.raises(RecipeError, match=r"phases\.1\.tokens: phase 'long' has 18 samples \(1215 // seq_len 64\)"):
        loader.iterate(0, 0, 1, 2, 4)  # refused when called, before the first batch is asked for
    with pytest.raises(RecipeError, match="phase 'short' has 30 samples"):
        Loader(three_phases(small_manifest), small_manifest, global_batch=4)
    assert len(loader.micro_batches(7, 0, 1, 1, 6)) == 6  # a global batch that divides every phase is served


def test_a_global_batch_other_than_the_recipe_s_is_refused(small_manifest):
    loader = Loader(three_phases(small_manifest, global_batch=6), small_manifest)
    with pytest.raises(RecipeError, match="recipe field global_batch: the recipe declares 6, but the trainer asks "
                                          "for global batch 3"):
        loader.micro_batches(0, 0, 1, 1, 3)
    with pytest.raises(RecipeError, match="the recipe declares 6, but the trainer asks for global batch 12"):
        Loader(three_phases(small_manifest, global_batch=6), small_manifest, global_batch=12)
    assert [len(b["indices"]) for b in loader.micro_batches(1, 0, 2, 3)] == [3]  # the recipe's, when none is given
    built_for_six = Loader(three_phases(small_manifest), small_manifest, global_batch=6)
    with pytest.raises(ValueError, match="the loader was built for global batch 6, but the trainer asks for global "
                                         "batch 3"):
        built_for_six.iterate(0, 0, 1, 1, 3)


def test_replay_checks_the_global_batch_and_prints_each_phase_s_steps(small_manifest, tmp_path, capsys):
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(three_phases(small_manifest)))
    replay = ["replay", str(path), "--manifest", str(small_manifest)]
    assert main(replay) == 2
    refused = capsys.readouterr().err
    assert (f"error: recipe field global_batch: {path} declares none; give --global-batch G, the trainer's samples "
            "per step (the phases' samples 30, 18, 24 are whole steps of any G that divides 6)") in refused
    assert main([*replay, "--global-batch", "4"]) == 2
    refused = capsys.readouterr().err
    assert "phase 'short' has 30 samples" in refused and "phase 'long' has 18 samples" in refused
    assert "phase 'tiny'" not in refused
    assert main([*replay, "--global-batch", "6"]) == 0
    printed = capsys.readouterr().out
    assert ("phase short: 30 samples = 5 steps of global batch 6, steps 0 to 4\n"
            "phase long: 18 samples = 3 steps of global batch 6, steps 5 to 7\n"
            "phase tiny: 24 samples = 4 steps of global batch 6, steps 8 to 11\n") in printed
