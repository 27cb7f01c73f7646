"""The schedule as a pure function of the recipe and each source's document lengths: the same
seed gives the same samples in the same order, another seed another order of the same mixture;
epochs, length buckets, phase boundaries, Megatron shares and the steps of each data-parallel rank."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from tokenmill.trainer.recipe import RecipeError, validate_recipe
from tokenmill.trainer.schedule import Schedule, Steps

# per source: its shards' document lengths in tokens (shard numbers run on across the sources,
# as in a manifest)
SHARDS = {"web": [[300, 5000, 90, 1200], [700, 40, 2500]],
          "books": [[20_000, 1500], [9000], [3000, 70_000, 800]],
          "code": [[150] * 40]}


def source_documents(source: str, where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    first = sum(len(SHARDS[s]) for s in list(SHARDS)[:list(SHARDS).index(source)])
    shards = [np.full(len(lengths), first + n, dtype=np.int32) for n, lengths in enumerate(SHARDS[source])]
    documents = [np.arange(len(lengths), dtype=np.int64) for lengths in SHARDS[source]]
    lengths = [np.array(lengths, dtype=np.int64) for lengths in SHARDS[source]]
    return tuple(map(np.concatenate, (shards, documents, lengths)))


def recipe(seed: int = 1, **fields) -> dict:
    """Two phases: 'main' of 500 samples of 64 tokens (books by length bucket), 'long' of 40 of 1024."""
    return validate_recipe({
        "recipe_id": "schedule", "manifest_sha256": "a" * 64, "tokenizer_sha256": "b" * 64, "seed": seed, **fields,
        "phases": [{"name": "main", "tokens": 500 * 64, "seq_len": 64,
                    "weights": {"web": 0.5, "books": 0.3, "code": 0.2},
                    "bucket_weights": {"books": {"1k-4k": 0.5, "4k-16k": 0.25, "16k-64k": 0.25}},
                    "max_epochs": {"web": 4, "books": 4, "code": 1}},
                   {"name": "long", "tokens": 40 * 1024, "seq_len": 1024, "weights": {"books": 1.0},
                    "max_epochs": {"books": 2}}]})


def places(schedule: Schedule) -> list[tuple]:
    """(phase, stream, epoch, position) of every global sample, in order."""
    return [(phase.name, phase.streams[stream].name, epoch, position)
            for phase, stream, epoch, position in map(schedule.locate, range(schedule.total_samples))]


def test_a_seed_gives_one_sample_sequence_and_another_seed_another():
    first = places(Schedule(recipe(seed=1), source_documents))
    assert len(first) == 540
    assert places(Schedule(recipe(seed=1), source_documents)) == first
    other = places(Schedule(recipe(seed=2), source_documents))
    assert other != first
    assert sum(a[:2] != b[:2] for a, b in zip(first, other)) > 50  # the streams interleave otherwise
    for stream in ("web", "books[1k-4k]", "code"):  # and each stream's samples come in another order
        assert [p[2:] for p in other if p[1] == stream] != [p[2:] for p in first if p[1] == stream]
    assert Counter(p[1] for p in other) == Counter(p[1] for p in first)  # the mixture is planned from the weights


def test_each_epoch_of_a_stream_takes_every_sample_position_once():
    schedule = Schedule(recipe(), source_documents)
    main = schedule.phases[0]
    seen = {}
    for name, stream, epoch, position in places(schedule):
        if name == "main":
            seen.setdefault((stream, epoch), []).append(position)
    for number, stream in enumerate(main.streams):
        per_epoch = int(main.per_epoch[number])
        assert per_epoch == (stream.tokens - 1) // 64
        epochs = sorted(epoch for name, epoch in seen if name == stream.name)
        assert len(epochs) <= main.max_epochs[number]
        for epoch in epochs[:-1]:  # every epoch but the last is whole
            assert sorted(seen[stream.name, epoch]) == list(range(per_epoch))
        assert len(set(seen[stream.name, epochs[-1]])) == len(seen[stream.name, epochs[-1]])


def test_length_buckets_split_a_source_into_streams_of_their_documents():
    streams = {stream.name: stream for stream in Schedule(recipe(), source_documents).phases[0].streams}
    assert list(streams) == ["web", "books[1k-4k]", "books[4k-16k]", "books[16k-64k]", "code"]
    assert np.diff(streams["books[1k-4k]"].starts).tolist() == [1500, 3000]
    assert np.diff(streams["books[4k-16k]"].starts).tolist() == [9000]
    assert np.diff(streams["books[16k-64k]"].starts).tolist() == [20_000]  # 70,000 is in 64k+, which has no weight
    assert (streams["books[16k-64k]"].shards.tolist(), streams["books[16k-64k]"].documents.tolist()) == ([2], [0])
    assert streams["web"].tokens == sum(map(sum, SHARDS["web"]))
    assert [stream.target for stream in streams.values()] == [0.5, 0.15, 0.075, 0.075, 0.2]


def test_replay_realizes_the_planned_counts_and_caps():
    schedule = Schedule(recipe(), source_documents)
    rows = schedule.replay()
    assert [(row["phase"], row["stream"]) for row in rows][-1] == ("long", "books")
    for row in rows:
        assert row["realized"] == row["planned"] and row["relative_error"] == 0.0
        assert row["epochs"] <= row["max_epochs"]
    code = next(row for row in rows if row["stream"] == "code")
    assert code["samples"] == code["per_epoch"] == 93  # capped at one epoch of 5,999 tokens: not 0.2 of 500
    assert sum(row["samples"] for row in rows if row["phase"] == "main") == 500


def test_phase_boundaries_and_indices_outside_the_recipe():
    schedule = Schedule(recipe(), source_documents)
    assert [(p.name, p.first, p.samples, p.seq_len) for p in schedule.phases] == [("main", 0, 500, 64),
                                                                                   ("long", 500, 40, 1024)]
    assert [schedule.phase_of(i).name for i in (0, 499, 500, 539)] == ["main", "main", "long", "long"]
    for index in (-1, 540):
        with pytest.raises(IndexError, match="outside the recipe's 540 samples"):
            schedule.locate(index)
    with pytest.raises(RecipeError, match=r"recipe field phases.0.tokens: 320000 samples, but max_epochs allow only"):
        Schedule(validate_recipe({**recipe(), "phases": [{**recipe()["phases"][0], "tokens": 320_000 * 64}]}),
                 source_documents)


def test_megatron_shares_spread_each_stream_over_its_shards_by_tokens():
    schedule = Schedule(recipe(), source_documents)
    long_shares = schedule.shard_shares("long")
    books = [sum(lengths) for lengths in SHARDS["books"]]
    assert list(long_shares) == [2, 3, 4]
    assert [long_shares[shard] for shard in (2, 3, 4)] == pytest.approx([tokens / sum(books) for tokens in books])
    assert sum(schedule.shard_shares("main").values()) == pytest.approx(1.0)
    with pytest.raises(RecipeError, match="no phase named 'warmup'"):
        schedule.shard_shares("warmup")


def test_a_step_s_samples_do_not_depend_on_the_data_parallel_size():
    steps = Steps(recipe(global_batch=20))
    for step in (0, 3, 26):
        for world in (1, 2, 4, 5, 10, 20):
            ranks = [steps.indices(step, rank, world).tolist() for rank in range(world)]
            assert sorted(sum(ranks, [])) == list(range(20 * step, 20 * step + 20))
            assert ranks[0][:2] == [20 * step, 20 * step + world][:len(ranks[0])]
    with pytest.raises(ValueError, match="global batch 20 is not a multiple of dp_world_size 3"):
        steps.indices(0, 0, 3)
    with pytest.raises(ValueError, match="dp_rank 4 is outside dp_world_size 4"):
        steps.indices(0, 4, 4)


def test_a_global_batch_that_splits_a_phase_is_refused():
    with pytest.raises(RecipeError, match=r"global batch 40 does not make every phase whole steps:\n  recipe field "
                                          r"phases.0.tokens: phase 'main' has 500 samples"):
        Steps(recipe(), 40)
    undeclared = Steps(recipe())
    assert undeclared.global_batch is None
    with pytest.raises(ValueError, match="no global batch"):
        undeclared.indices(0, 0, 1)
    assert undeclared.indices(2, 1, 2, global_batch=10).tolist() == [21, 23, 25, 27, 29]
    with pytest.raises(RecipeError, match="the recipe declares 20, but the trainer asks for global batch 10"):
        Steps(recipe(global_batch=20)).indices(0, 0, 1, 10)
    with pytest.raises(ValueError, match="the loader was built for global batch 20, but the trainer asks for global "
                                         "batch 10"):
        Steps(recipe(), 20).checked_global_batch(10)


def test_a_tier_share_cap_holds_when_an_exhausted_source_passes_its_share_on():
    """web runs out after one epoch; its share goes to books and to code, the synthetic tier, whose
    max_tier_share keeps it at a quarter of the phase."""
    def phase(**fields) -> dict:
        return validate_recipe({
            "recipe_id": "tiers", "manifest_sha256": "a" * 64, "tokenizer_sha256": "b" * 64, "seed": 1,
            "phases": [{"name": "main", "tokens": 500 * 64, "seq_len": 64,
                        "weights": {"web": 0.6, "books": 0.2, "code": 0.2},
                        "max_epochs": {"web": 1, "books": 10, "code": 10}, **fields}]})

    tiers = {"web": "crawl", "books": "licensed", "code": "synthetic"}

    def samples(recipe: dict) -> dict[str, int]:
        return {row["stream"]: row["samples"] for row in Schedule(recipe, source_documents, tiers).replay()}

    free = samples(phase())
    assert free["web"] == 153 and free["code"] == 173 > 125  # one epoch of web; code takes half of the rest
    capped = samples(phase(max_tier_share={"synthetic": 0.25}))
    assert capped["code"] <= 125 and capped["web"] == 153 and sum(capped.values()) == 500
    assert capped["books"] == 500 - 153 - capped["code"]
    with pytest.raises(RecipeError, match=r"phases.0.max_tier_share.synthetic: the weights give the synthetic sources 0.2"):
        Schedule(phase(max_tier_share={"synthetic": 0.1}), source_documents, tiers)
    with pytest.raises(RecipeError, match="the manifest names no tier for source web"):
        Schedule(phase(max_tier_share={"synthetic": 0.25}), source_documents)


def long_phase_recipe(long_epochs: float) -> dict:
    """One phase of 200 samples of 1,024 tokens, web and books half each, 60 % of each source's
    tokens from its documents of 16k tokens or more (books has two, web none)."""
    return validate_recipe({
        "recipe_id": "long", "manifest_sha256": "a" * 64, "tokenizer_sha256": "b" * 64, "seed": 3,
        "phases": [{"name": "long", "tokens": 200 * 1024, "seq_len": 1024, "weights": {"web": 0.5, "books": 0.5},
                    "max_epochs": {"web": 50, "books": long_epochs},
                    "long_share": {"min_tokens": 16384, "share": 0.6}}]})


@pytest.mark.parametrize("long_epochs", [50, 0.5])
def test_long_share_upsamples_long_documents_within_each_source_and_keeps_its_share(long_epochs):
    schedule = Schedule(long_phase_recipe(long_epochs), source_documents)
    report = {row["source"]: row for row in schedule.length_report()}
    assert report["web"]["long_realized"] == report["web"]["long_natural"] == 0  # none to upsample: short fills
    books = report["books"]
    assert books["long_natural"] == pytest.approx(90_000 / 104_300)  # 20k and 70k of its 104,300 tokens
    if long_epochs == 50:
        for source in ("web", "books"):
            assert report[source]["realized"] == pytest.approx(0.5, abs=0.01)  # the source's weight holds
        assert books["long_realized"] == pytest.approx(0.6, abs=0.01) and books["long_planned"] == 0.6
    else:  # half an epoch of each stream: 43 long samples and 6 short ones; web takes what books cannot
        assert books["realized"] == 49 / 200 and report["web"]["realized"] == 151 / 200
        assert books["long_realized"] == pytest.approx(43 / 49)
    streams = {stream.name: number for number, stream in enumerate(schedule.phases[0].streams)}
    assert set(streams) == {"web[long]", "web[short]", "books[long]", "books[short]"}
    # a 1,024-token sample of books[long] holds one document but where the 20k one ends
    assert books["max"] == 70_000 and books["single_unit"] > 0.5
