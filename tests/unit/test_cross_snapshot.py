"""The persistent band index on synthetic keys (generated here): no false negatives, Bloom
filters that keep most absent keys away from the sorted runs, and compaction that changes no
probe's answer."""

from __future__ import annotations

import numpy as np

from tokenmill.bloom import bloom_contains, build_bloom
from tokenmill.dedup.cross_snapshot import Generation, ProbeStats, _sorted_runs, compact, probe


def generation(rng, snapshot: str, n: int, bands: int = 4) -> tuple[Generation, np.ndarray]:
    keys = rng.integers(0, 2**63, size=(n, bands), dtype=np.uint64)
    return _sorted_runs([f"{snapshot}-{i}" for i in range(n)], keys, snapshot, 0.01), keys


def test_bloom_has_no_false_negatives_and_about_its_false_positive_rate():
    rng = np.random.default_rng(1)
    present = rng.integers(0, 2**63, size=50_000, dtype=np.uint64)
    words, hashes = build_bloom(present, 0.01)
    assert bloom_contains(words, hashes, present).all()
    absent = rng.integers(0, 2**63, size=200_000, dtype=np.uint64)
    assert bloom_contains(words, hashes, absent).mean() < 0.01


def test_probe_finds_the_earliest_copy_and_compaction_agrees():
    rng = np.random.default_rng(2)
    old, old_keys = generation(rng, "s1", 3000)
    mid, mid_keys = generation(rng, "s2", 3000)
    new = rng.integers(0, 2**63, size=(1000, 4), dtype=np.uint64)
    new[:100] = old_keys[:100]  # whole copies of s1 documents
    new[100:200, 2] = mid_keys[:100, 2]  # one band shared with s2 documents
    new[200:250] = old_keys[500:550]
    new[200:250, 0] = mid_keys[500:550, 0]  # in both: the earlier snapshot wins
    stats = ProbeStats()
    number, survivor, latest, latest_survivor = probe(new, [old, mid], stats)
    assert (number[:100] == 0).all() and (survivor[:100] == np.arange(100)).all()
    assert (number[100:200] == 1).all() and (survivor[100:200] == np.arange(100)).all()
    assert (number[200:250] == 0).all() and (survivor[200:250] == np.arange(500, 550)).all()
    assert (number[250:] == -1).all()
    assert (latest[:100] == 0).all() and (latest[100:200] == 1).all()
    assert (latest[200:250] == 1).all() and (latest_survivor[200:250] == np.arange(500, 550)).all()  # newest copy
    absent = stats.probes - stats.run_hits  # lookups of keys no run holds: most stop at a Bloom filter
    assert stats.bloom_hits - stats.run_hits < 0.02 * absent
    merged = compact([old, mid], 0.01)
    number_c, survivor_c, _, _ = probe(new, [merged], ProbeStats())
    ids = merged.doc_ids
    expected = [old.doc_ids[s] if g == 0 else mid.doc_ids[s] if g == 1 else None for g, s in zip(number, survivor)]
    assert [ids[s] if g >= 0 else None for g, s in zip(number_c, survivor_c)] == expected
