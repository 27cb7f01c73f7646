"""Side-by-side: the persistent cross-snapshot band index (Bloom filters in front of sorted
runs) against the same sorted runs without Bloom filters and against a Python dict.

Synthetic signatures (generated here, not crawl data): `--survivors` older documents in
`--generations` generations, 8 bands each (so 8 x survivors keys), and `--probes` new
documents of which `--copy-share` repeat an older one. One core. Reported: keys probed per
second, the share of probes that reach a sorted run, index memory per million keys, build
and compaction time, and that the three answer alike.

usage: python bench/bench_cross_snapshot.py [--survivors 1250000] [--probes 1000000] [--tiny]
(--tiny: 20,000 survivors and 10,000 probes)
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
import psutil

from common import add_tiny_option, pin_to_one_cpu, timed  # also puts the repository on the import path
from tokenmill.dedup.cross_snapshot import ProbeStats, _sorted_runs, compact, probe

BANDS = 8


def probe_without_bloom(band_keys: np.ndarray, generations) -> np.ndarray:
    """Binary search of every key in every run (what the index does when the Bloom says maybe)."""
    found = np.full(len(band_keys), -1, dtype=np.int64)
    for number, generation in enumerate(generations):
        open_rows = np.flatnonzero(found < 0)
        for band in range(BANDS):
            keys = band_keys[open_rows, band]
            run = generation.keys[band]
            at = np.searchsorted(run, keys)
            hit = at < len(run)
            hit[hit] = run[at[hit]] == keys[hit]
            found[open_rows[hit]] = number
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--survivors", type=int, default=1_250_000, help="older documents in all generations")
    parser.add_argument("--generations", type=int, default=4)
    parser.add_argument("--probes", type=int, default=1_000_000)
    parser.add_argument("--copy-share", type=float, default=0.1)
    parser.add_argument("--rate", type=float, default=0.01)
    add_tiny_option(parser)
    args = parser.parse_args()
    if args.tiny:
        args.survivors, args.probes = 20_000, 10_000
    pin_to_one_cpu()
    rng = np.random.default_rng(7)
    per_generation = args.survivors // args.generations
    older = rng.integers(0, 2**63, size=(per_generation * args.generations, BANDS), dtype=np.uint64)
    started = time.perf_counter()
    generations = [_sorted_runs([f"g{g}-{i}" for i in range(per_generation)],
                                older[g * per_generation:(g + 1) * per_generation], f"s{g}", args.rate)
                   for g in range(args.generations)]
    build_s = time.perf_counter() - started
    keys_total = sum(g.size for g in generations)
    index_bytes = sum(sum(k.nbytes for k in g.keys) + sum(d.nbytes for d in g.docs) + sum(b.nbytes for b in g.blooms)
                      for g in generations)
    bloom_bytes = sum(sum(b.nbytes for b in g.blooms) for g in generations)

    new = rng.integers(0, 2**63, size=(args.probes, BANDS), dtype=np.uint64)
    copies = rng.choice(args.probes, size=int(args.copy_share * args.probes), replace=False)
    new[copies] = older[rng.choice(len(older), size=len(copies), replace=False)]

    stats = ProbeStats()
    started = time.perf_counter()
    number, _, _, _ = probe(new, generations, stats)
    index_s = time.perf_counter() - started
    started = time.perf_counter()
    plain = probe_without_bloom(new, generations)
    plain_s = time.perf_counter() - started

    rss_before = psutil.Process().memory_info().rss
    started = time.perf_counter()
    table = {}
    for g, generation in enumerate(generations):
        for band in range(BANDS):
            for key in generation.keys[band].tolist():
                table.setdefault((band, key), g)
    dict_build_s = time.perf_counter() - started
    dict_bytes = psutil.Process().memory_info().rss - rss_before
    started = time.perf_counter()
    dict_found = [min((table.get((band, key), 1 << 30) for band, key in enumerate(row)), default=1 << 30)
                  for row in new.tolist()]
    dict_s = time.perf_counter() - started
    dict_found = np.array([g if g < 1 << 30 else -1 for g in dict_found])

    merged = None

    def compaction():
        nonlocal merged
        merged = compact(generations, args.rate)

    compact_s = timed(compaction)
    compacted, _, _, _ = probe(new, [merged], ProbeStats())

    assert (number >= 0).sum() == len(copies) and np.array_equal(number, plain) and np.array_equal(number, dict_found)
    assert np.array_equal(compacted >= 0, number >= 0)
    print(f"machine: {platform.processor() or platform.machine()}, one core; {keys_total:,} keys in "
          f"{args.generations} generations, {args.probes:,} new documents ({len(copies):,} copies), {BANDS} bands")
    print(f"{'':32}{'documents/s':>13}{'key lookups/s':>15}{'build s':>9}{'bytes/key':>11}")
    print(f"{'tokenmill (Bloom + sorted runs)':32}{args.probes / index_s:>13,.0f}{stats.probes / index_s:>15,.0f}"
          f"{build_s:>9.2f}{index_bytes / keys_total:>11.1f}")
    print(f"{'sorted runs, no Bloom':32}{args.probes / plain_s:>13,.0f}{'':>15}{'':>9}"
          f"{(index_bytes - bloom_bytes) / keys_total:>11.1f}")
    print(f"{'Python dict':32}{args.probes / dict_s:>13,.0f}{'':>15}{dict_build_s:>9.2f}{dict_bytes / keys_total:>11.1f}")
    print(f"key lookups that reached a sorted run: {stats.bloom_hits / stats.probes:.4f} of {stats.probes:,} "
          f"(true hits {stats.run_hits / stats.probes:.4f})")
    print(f"index memory: {index_bytes / keys_total * 1e6 / 2**20:.1f} MiB per million keys "
          f"(Bloom {bloom_bytes / keys_total * 1e6 / 2**20:.1f}); compaction of {args.generations} generations: "
          f"{compact_s:.2f} s")
    print(f"tokenmill is {plain_s / index_s:.2f}x the speed of sorted runs alone and {dict_s / index_s:.2f}x a Python "
          f"dict, in {index_bytes / max(dict_bytes, 1):.3f}x its memory")

if __name__ == "__main__":
    main()
