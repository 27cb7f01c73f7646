"""Side-by-side: one snapshot's shards written by one write_shards job (as before shard groups)
against the same snapshot written by G jobs of one shard group each (shards.parts_per_job), on
one core, each job a process of its own as Snakemake runs them.

Synthetic input (generated here, not crawl text): P tokenized parts of D documents each, written
as tokenize writes them (sorted by shuffle key, row groups of SHARD_GROUP_READ_ROWS with the
key's min and max), random token ids of 50-600 tokens per document, and their select tables.
Reported: CPU seconds (user + system) and peak RSS of each job, the longest job against the one
job (what bounds a stage's wall time on a cluster), the groups' sum against the one job (what
the cluster bills), and whether the groups' shards, one after another, hold the one job's
documents in the same order.

usage: python bench/bench_shards.py [WORKDIR] [--parts 8] [--docs 50000] [--groups 4] [--tiny]
(--tiny: 2 parts of 2,000 documents, 2 groups)
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from common import add_at_scale_option, pin_to_one_cpu, record_at_scale, run_in_workdir  # puts the repository on the import path

from tokenmill.hashing import keyed_hash64, seed_key
from tokenmill.io import write_parquet
from tokenmill.shards.validation import ValidationLimits
from tokenmill.shards.writer import TokenizedPart, write_shards
from tokenmill.tokenize import SHARD_GROUP_READ_ROWS

SEED = 7
EOD = 0
TARGET_TOKENS = 1 << 24
LANGS = ["en", "de", "fr"]


def tokenized_part(folder: Path, part: str, docs: int, rng: np.random.Generator) -> TokenizedPart:
    """One synthetic part, in tokenize's layout, and its select table (every document selected)."""
    doc_ids = [f"{part}-{row:08d}" for row in range(docs)]
    keys = np.array([keyed_hash64(seed_key(SEED), doc_id) for doc_id in doc_ids], dtype=np.uint64)
    order = np.argsort(keys, kind="stable")
    lengths = rng.integers(50, 600, size=docs)
    offsets = np.zeros(docs + 1, dtype=np.int64)
    np.cumsum(lengths[order] + 1, out=offsets[1:])
    flat = rng.integers(1, 3000, size=int(offsets[-1]), dtype=np.uint16)
    flat[offsets[1:] - 1] = EOD
    table = pa.table({
        "shuffle_key": pa.array(keys[order], pa.uint64()),
        "row": pa.array(order.astype(np.int64)),
        "doc_id": pa.array([doc_ids[i] for i in order]),
        "n_tokens": pa.array(np.diff(offsets)),
        "tokens": pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(flat)),
    }).replace_schema_metadata({"tokenizer_sha256": "0" * 64, "seed": str(SEED), "eod_id": str(EOD)})
    tokens_path, select_path = folder / f"{part}.tokens.parquet", folder / f"{part}.select.parquet"
    write_parquet(tokens_path, table, statistics=["shuffle_key"], row_group_rows=SHARD_GROUP_READ_ROWS)
    write_parquet(select_path, pa.table({"row": pa.array(np.arange(docs)), "selected": pa.array(np.ones(docs, bool)),
                                         "lang": pa.array([LANGS[row % len(LANGS)] for row in range(docs)])}))
    return TokenizedPart("s1", part, str(tokens_path), str(select_path))


def job(arguments: str) -> None:
    """One write_shards job (run in a process of its own): its CPU seconds and peak RSS on stdout."""
    spec = json.loads(arguments)
    parts = [TokenizedPart(*part) for part in spec["parts"]]
    write_shards("bench", "s1", parts, spec["out"], TARGET_TOKENS, "x", "crawl", np.dtype(np.uint16),
                 ValidationLimits(**spec["limits"]), spec["group"], spec["groups"])
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"cpu_s": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024}))


def run_job(parts: list[TokenizedPart], out: Path, group: int, groups: int) -> dict:
    limits = {"max_repeated_run": 1000, "min_token_entropy_bits": 2.0, "max_token_share": 0.3,
              "max_lang_distance": 0.05, "lang_sampling_allowance": 3.0}
    spec = {"parts": [[p.snapshot, p.part, p.path, p.select] for p in parts], "out": str(out), "group": group,
            "groups": groups, "limits": limits}
    result = subprocess.run([sys.executable, __file__, "--job", json.dumps(spec)], capture_output=True, text=True,
                            check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def documents_in_order(folders: list[Path]) -> list[str]:
    order = []
    for folder in folders:
        for name in json.loads((folder / "shards.json").read_text())["shards"]:
            order += pq.read_table(folder / f"{name}.docs.parquet", columns=["doc_id"]).column("doc_id").to_pylist()
    return order


def main(workdir: Path, tiny: bool, parts: int, docs: int, groups: int, write_at_scale: str | None) -> None:
    if tiny:
        parts, docs, groups = 2, 2000, 2
    cpu = pin_to_one_cpu()
    rng = np.random.default_rng(0)
    inputs = workdir / "tokenized"
    inputs.mkdir(parents=True, exist_ok=True)
    tokenized = [tokenized_part(inputs, f"p{index:03d}", docs, rng) for index in range(parts)]
    tokens = sum(pq.read_metadata(p.path).num_rows for p in tokenized)
    size_mb = sum(Path(p.path).stat().st_size for p in tokenized) / 1e6
    print(f"input: {parts} tokenized parts of {docs:,} documents ({tokens:,} documents, {size_mb:,.0f} MB), "
          f"row groups of {SHARD_GROUP_READ_ROWS:,}; one core (CPU {cpu})")
    one = run_job(tokenized, workdir / "one" / "group-0000", 0, 1)
    grouped = [run_job(tokenized, workdir / "grouped" / f"group-{group:04d}", group, groups) for group in range(groups)]
    print(f"{'write_shards':<28}{'jobs':>6}{'CPU-s (longest job)':>22}{'CPU-s (all jobs)':>19}{'peak RSS MB':>14}")
    print(f"{'one job per snapshot':<28}{1:>6}{one['cpu_s']:>22.2f}{one['cpu_s']:>19.2f}{one['rss_mb']:>14.0f}")
    longest, total = max(job["cpu_s"] for job in grouped), sum(job["cpu_s"] for job in grouped)
    print(f"{f'{groups} shard groups':<28}{groups:>6}{longest:>22.2f}{total:>19.2f}"
          f"{max(job['rss_mb'] for job in grouped):>14.0f}")
    print(f"longest job: {longest / one['cpu_s']:.2f}x the one job's CPU; all jobs: {total / one['cpu_s']:.2f}x")
    record_at_scale(write_at_scale, "write_shards", {"documents": tokens, "core_seconds": round(one["cpu_s"], 3)},
                    "bench_shards.py", f"{tokens:,} synthetic documents of 50-600 token ids in {parts} tokenized parts, "
                    "one write_shards job on one core (its start included)")
    same = documents_in_order([workdir / "one" / "group-0000"]) == documents_in_order(
        [workdir / "grouped" / f"group-{group:04d}" for group in range(groups)])
    print(f"the groups' shards one after another hold the one job's documents in its order: {same}")
    if not same:
        raise SystemExit("shard groups changed the order of the snapshot's documents")


def add_options(parser) -> None:
    parser.add_argument("--parts", type=int, default=8)
    parser.add_argument("--docs", type=int, default=50_000)
    parser.add_argument("--groups", type=int, default=4)
    add_at_scale_option(parser)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--job"]:
        job(sys.argv[2])
    else:
        run_in_workdir(main, __doc__, "folder for the synthetic parts and the shards (default: a temporary one)",
                       add_options)
