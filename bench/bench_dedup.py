"""Side-by-side: MinHash signatures and clustering against datasketch and datatrove.

1. Signature throughput, one core, K = 112, on the real sample documents (every extracted
   document of the bundled WARCs and JSONL, repeated 4 times; with --tiny the JSONL ones once):
   - tokenmill: text -> shingles -> signature, and signature alone from the shingle hashes;
   - datasketch.MinHash (update_batch, and update per shingle) on the same shingle hashes;
   - datatrove MinhashDedupSignature: its own shingling + signature, and get_signature on
     the same shingle hashes (run in datatrove's own virtualenv, see --datatrove-python).
2. Clustering of N synthetic documents (default 2,000,000; 20,000 with --tiny): band rows drawn at random,
   with a planted share of near-copies that take each band of an earlier document with
   probability 1/2, and a host and url hash each (hosts of Zipf-like sizes, one per 20 documents
   on average). tokenmill's minhash_cluster with 1 and 2 MPI ranks (wall time, peak memory per
   rank, and the CPU seconds of the host stats it counts in the same job), and datatrove's MinhashDedupBuckets + MinhashDedupCluster (single
   process) on the same band rows.

With --write-at-scale, the clustering's 1- and 2-rank wall seconds and peak memory per rank go into
config/cost_at_scale.json, where plan-cost prices minhash_cluster from them.

usage: python bench/bench_dedup.py [--docs N] [--datatrove-python PATH] [--skip-signatures] [--write-at-scale [PATH]] [--tiny]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from common import (DATATROVE_SKIPPED, REPO, add_at_scale_option, add_datatrove_option, add_tiny_option,  # puts the
                    record_at_scale, run_checked, run_peer, sample_texts, skipped, timed)  # repository on the import path
from tokenmill.config import schema_defaults, schema_settings  # noqa: E402
from tokenmill.dedup.minhash import MinHashParams, Shingler, band_hashes, permutation_coefficients, signatures  # noqa: E402
from tokenmill.dedup.normalize import normalize_for_dedup  # noqa: E402
from tokenmill.io import write_parquet  # noqa: E402
from tokenmill.plan import PLAN_COLUMNS, write_plan  # noqa: E402

PARAMS = schema_settings(MinHashParams, "minhash")
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
TOKENMILL_OUT = "tm-out"  # minhash_cluster's --out-dir, which holds the plan's dedup paths

DATATROVE_SIGNATURES = r"""
import json, sys, time, numpy as np
from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupSignature
texts = json.load(open(sys.argv[1])); shingles = np.load(sys.argv[2], allow_pickle=True)
step = MinhashDedupSignature(output_folder=sys.argv[3], config=MinhashConfig(n_grams=5, num_buckets=14, hashes_per_bucket=8))
start = time.perf_counter()
for text in texts:
    shingles_of_text = step.get_shingles(text)
    if len(shingles_of_text):  # datatrove skips documents shorter than one n-gram
        step.get_signature(shingles_of_text)
end_to_end = time.perf_counter() - start
start = time.perf_counter()
for s in shingles:
    step.get_signature(s.reshape(-1, 1))
print(json.dumps({"end_to_end": end_to_end, "signature": time.perf_counter() - start}))
"""

DATATROVE_CLUSTER = r"""
import sys, time
from datatrove.pipeline.dedup.minhash import MinhashConfig, MinhashDedupBuckets, MinhashDedupCluster
from datatrove.utils.hashing import HashConfig
config = MinhashConfig(n_grams=5, num_buckets=14, hashes_per_bucket=8, hash_config=HashConfig(precision=64))
start = time.perf_counter()
for bucket in range(config.num_buckets):  # one task per bucket, run one after the other in this process
    MinhashDedupBuckets(input_folder=sys.argv[1], output_folder=sys.argv[2], config=config).run(
        rank=bucket, world_size=config.num_buckets)
buckets = time.perf_counter() - start
MinhashDedupCluster(input_folder=sys.argv[2], output_folder=sys.argv[3], config=config).run()
import resource
print(f"{buckets} {time.perf_counter() - start} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}")
"""


def bench_signatures(tmp: Path, datatrove_python: str | None, tiny: bool) -> None:
    texts = sample_texts(tmp, repeat=1 if tiny else 4, tiny=tiny)
    shingler = Shingler(PARAMS.ngram)
    coefficients = permutation_coefficients(PARAMS)
    end_to_end = timed(lambda: signatures([shingler.shingles(normalize_for_dedup(t)) for t in texts], PARAMS, coefficients))
    shingle_sets = [shingler.shingles(normalize_for_dedup(t)) for t in texts]
    signature_only = timed(lambda: signatures(shingle_sets, PARAMS, coefficients))
    n = len(texts)
    shingles = sum(len(s) for s in shingle_sets)
    rows = [("tokenmill text->signature", end_to_end), ("tokenmill signature from shingles", signature_only)]
    try:
        import datasketch
    except ImportError:
        skipped("datasketch signatures (datasketch is not installed)", "pip install -r requirements.txt")
    else:
        as_bytes = [[int(v).to_bytes(8, "little") for v in s] for s in shingle_sets]

        def batch():
            for s in as_bytes:
                datasketch.MinHash(num_perm=PARAMS.permutations).update_batch(s)

        def single():  # a tenth of the documents: one Python call per shingle is slow
            for s in as_bytes[: n // 10]:
                m = datasketch.MinHash(num_perm=PARAMS.permutations)
                for value in s:
                    m.update(value)

        rows.append((f"datasketch {datasketch.__version__} update_batch (same shingles)", timed(batch)))
        rows.append((f"datasketch {datasketch.__version__} update per shingle (same shingles)", timed(single) * 10))
    if datatrove_python:
        (tmp / "texts.json").write_text(json.dumps(texts))
        np.save(tmp / "shingles.npy", np.array(shingle_sets, dtype=object), allow_pickle=True)
        figures = json.loads(run_peer(datatrove_python, DATATROVE_SIGNATURES, str(tmp / "texts.json"),
                                      str(tmp / "shingles.npy"), str(tmp / "dt-out")))
        rows.append(("datatrove MinhashDedupSignature, its own shingling", figures["end_to_end"]))
        rows.append(("datatrove get_signature (same shingles)", figures["signature"]))
    else:
        skipped("datatrove signatures", DATATROVE_SKIPPED)
    print(f"\nsignatures: {n} real documents ({shingles} shingles), K={PARAMS.permutations}, one core")
    print(f"{'method':<58} {'docs/s':>10} {'tokenmill x':>12}")
    for name, seconds in rows:
        reference = end_to_end if "text" in name or "own shingling" in name else signature_only
        print(f"{name:<58} {n / seconds:>10.0f} {seconds / reference:>12.1f}")


def synthetic_bands(n: int, seed: int = 0) -> np.ndarray:
    """(n, bands, rows) uint64 band rows; a quarter of the documents copy each band of an
    earlier document with probability 1/2."""
    rng = np.random.default_rng(seed)
    # below 2^61 - 1: datatrove's 64-bit hashes live in [0, Mersenne prime)
    rows = rng.integers(0, 2**61 - 1, size=(n, PARAMS.bands, PARAMS.rows), dtype=np.uint64)
    copies = rng.choice(np.arange(1, n), size=n // 4, replace=False)
    sources = (rng.random(len(copies)) * copies).astype(np.int64)
    take = rng.random((len(copies), PARAMS.bands)) < 0.5
    for band in range(PARAMS.bands):
        chosen = take[:, band]
        rows[copies[chosen], band] = rows[sources[chosen], band]
    return rows


def write_tokenmill_parts(tmp: Path, rows: np.ndarray, parts: int) -> Path:
    n = len(rows)
    bands = np.concatenate([band_hashes(rows[:, band, :], 1, PARAMS.rows) for band in range(PARAMS.bands)], axis=1)
    random = np.random.default_rng(1)
    hosts = max(n // 20, 1)
    shares = 1 / np.arange(1, hosts + 1)
    host_names = np.array([f"host{index}.example" for index in range(hosts)], dtype=object)
    host_of_doc = host_names[random.choice(hosts, size=n, p=shares / shares.sum())]
    url_hashes = random.integers(0, 2**63, size=n, dtype=np.uint64)
    plan_rows = []
    for index, chunk in enumerate(np.array_split(np.arange(n), parts)):
        count = len(chunk)
        table = pa.Table.from_pydict({
            "row": np.arange(count, dtype=np.int64),
            "doc_id": [f"{i:032x}" for i in chunk],
            "fetch_ts": np.zeros(count, np.int64),
            "url_key": chunk.astype(np.uint64),
            "record_key": chunk.astype(np.uint64),
            "content_hash": chunk.astype(np.uint64) + np.uint64(1),
            "host": pa.array(host_of_doc[chunk], pa.string()),
            "url_hash": url_hashes[chunk],
            "line_hashes": pa.ListArray.from_arrays(pa.array(np.zeros(count + 1, np.int32)), pa.array([], pa.uint64())),
            **{f"band_{j:02d}": bands[chunk, j] for j in range(PARAMS.bands)},
        })
        signature_path = tmp / "tm" / f"part{index:03d}.parquet"
        write_parquet(signature_path, table)
        row = {column: "" for column in PLAN_COLUMNS}
        row.update(source="synthetic", snapshot="s", part=f"part{index:03d}", signatures=str(signature_path),
                   minhash_cluster=str(tmp / TOKENMILL_OUT / f"part{index:03d}.parquet"))
        plan_rows.append([row[column] for column in PLAN_COLUMNS])
    plan = tmp / "plan.tsv"
    write_plan(plan_rows, str(plan))
    return plan


def write_datatrove_signatures(tmp: Path, rows: np.ndarray) -> Path:
    """datatrove's signature files: per bucket, records (8 x uint64 hashes, uint32 doc) sorted."""
    folder = tmp / "dt-sigs"
    n = len(rows)
    record = np.dtype([("sig", "<u8", (PARAMS.rows,)), ("doc", "<u4")])
    for band in range(PARAMS.bands):
        data = np.empty(n, dtype=record)
        data["sig"] = rows[:, band, :]
        data["doc"] = np.arange(n, dtype=np.uint32)
        order = np.lexsort([data["doc"]] + [data["sig"][:, i] for i in reversed(range(PARAMS.rows))])
        path = folder / f"bucket_{band:03d}" / "00000.minhash.sig"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data[order].tobytes())
    return folder


def bench_cluster(tmp: Path, n: int, datatrove_python: str | None, at_scale: str | None) -> None:
    rows = synthetic_bands(n)
    plan = write_tokenmill_parts(tmp, rows, parts=16)
    print(f"\nclustering {n} synthetic documents ({PARAMS.bands} bands x {PARAMS.rows} rows, a quarter planted near-copies)")
    results, measured = {}, {}
    for ranks in (1, 2):
        command = [MPIEXEC, "-n", str(ranks), sys.executable, "-P", str(REPO / "scripts" / "minhash_cluster.py"),
                   "--plan", str(plan), "--bucket-cap", str(schema_defaults("minhash")["bucket_cap"]),
                   "--out-dir", str(tmp / TOKENMILL_OUT), "--host-stats", str(tmp / "hosts.parquet")]
        start = time.perf_counter()
        run = run_checked(f"minhash_cluster on {ranks} rank(s)", command)
        wall = time.perf_counter() - start
        peaks = [float(m) for m in re.findall(r"peak memory (\d+) MB", run.stderr)]
        edges = re.search(r"'edges': (\d+)", run.stderr)
        host_cpu = [float(m) for m in re.findall(r"host stats in ([\d.]+) CPU-s", run.stderr)]
        results[ranks] = wall
        measured[str(ranks)] = {"wall_seconds": round(wall, 2), "peak_rss_mb": max(peaks)}
        print(f"tokenmill minhash_cluster, {ranks} rank(s): {wall:7.1f} s wall, peak memory per rank "
              f"{', '.join(f'{p:.0f} MB' for p in peaks)}, {edges.group(1) if edges else '?'} chain edges; "
              f"host stats {', '.join(f'{c:.1f}' for c in host_cpu)} CPU-s per rank")
    print(f"speed-up 2 ranks vs 1: {results[1] / results[2]:.2f}x")
    record_at_scale(at_scale, "minhash_cluster", {"documents": n, "ranks": measured}, "bench_dedup.py",
                    f"{n:,} synthetic documents in 16 parts (random band rows, a quarter planted near-copies; "
                    f"hosts of Zipf-like sizes), minhash_cluster with its host stats, wall seconds with mpiexec")
    if not datatrove_python:
        skipped("datatrove clustering", DATATROVE_SKIPPED)
        return
    sigs = write_datatrove_signatures(tmp, rows)
    start = time.perf_counter()
    buckets, total, peak = map(float, run_peer(datatrove_python, DATATROVE_CLUSTER, str(sigs), str(tmp / "dt-buckets"),
                                               str(tmp / "dt-clusters")).split())
    wall = time.perf_counter() - start
    print(f"datatrove MinhashDedupBuckets + MinhashDedupCluster, 1 process: {wall:7.1f} s wall "
          f"(buckets {buckets:.1f} s, cluster {total - buckets:.1f} s), peak memory {peak:.0f} MB")
    print(f"tokenmill 1 rank is {wall / results[1]:.1f}x, 2 ranks {wall / results[2]:.1f}x faster "
          "(tokenmill's time includes its host stats, which datatrove does not count)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=None, help="synthetic documents to cluster (default 2,000,000)")
    add_datatrove_option(parser)
    parser.add_argument("--skip-signatures", action="store_true")
    add_tiny_option(parser)
    add_at_scale_option(parser)
    args = parser.parse_args()
    docs = args.docs or (20_000 if args.tiny else 2_000_000)
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_signatures:
            bench_signatures(Path(tmp), args.datatrove_python, args.tiny)
        bench_cluster(Path(tmp), docs, args.datatrove_python, args.write_at_scale)


if __name__ == "__main__":
    main()
