"""Side-by-side: two per-snapshot steps as they were against as they are, on the same files, one
core, in this process (CPU seconds: time.process_time, reading and decompressing included).

host_stats. Before: every document of the snapshot parsed for its url; sets of url strings and of
cluster ids per host. Now: counted inside minhash_cluster's MPI job from the host and url hash that
score stores beside each signature and the cluster the job has just found (the CPU here: reading
those two columns and counting, on one rank). Input: the documents extracted from the bundled WARCs
and JSONL, `--repeat` times over, cut into `--parts` parts; each part written as extract writes its
documents and its signatures as score writes them (tokenmill.dedup.minhash.signature_rows), then
clustered by minhash_cluster (one rank), whose host table is checked against both.

select_thresholds. Before: tokenmill as of THRESHOLDS_BEFORE, every part's scores read into the
snapshot's arrays and each language's quantiles taken from them (memory grows with the snapshot).
Now: the parts read one at a time, their scores counted per language in steps of 1e-7, and the
values in the steps that the quantiles need collected in a second read (memory bounded by a part
and the distinct steps), by one worker process or 2. Input (synthetic, generated here):
`--score-docs` documents in `--parts` parts, and twice as many in twice the parts, languages drawn
from 60 codes with Zipf-like shares, uniform random scores, written as langid, quality_fasttext and
score_quality_encoder write them (and naturalness and word counts, which today's reads too). Equal:
the same quality cut of every language (today's file holds more: tiers, language thresholds).

select. Before: tokenmill as of commit SELECT_BEFORE (from the repository's history; skipped
outside a git checkout), one process that held the snapshot's judged columns and sorted them all.
Now: an MPI job whose ranks each read a share of the parts and send each exact group's and each
near-duplicate cluster's members to the rank that owns it, on 1 rank and on 2 (mpiexec; memory per
rank). Each runs in its own processes (its tree on PYTHONPATH) on the same judged parts (synthetic,
generated here: `--score-docs` documents in `--parts` parts, exact groups and near-duplicate
clusters across parts, a quarter failing a rule), writing its own tables.

cross_snapshot_index and cross_snapshot_dedup. The index generation of an older snapshot (half as
many survivors as `--score-docs`, synthetic signatures in `--parts` parts) built by the MPI job on 1
and on 2 ranks (each rank writes the bucket of keys it owns). Then the probe of a newer snapshot
(`--score-docs` documents' signatures, a tenth copies of older ones). Before: one job per snapshot
probed every part. Now: a job per part (each maps the generation's buckets). Both run in processes
of their own on the same files and must write the same rows.

Each reports whether the outputs are equal. select_thresholds and select as they are run in a
process of their own, which also reports its peak memory over its memory before reading; with
--write-at-scale their per-document rates go into config/cost_at_scale.json, where plan-cost takes
them instead of the rates fitted on a local run's jobs of well under a second.

usage: python bench/bench_snapshot_steps.py [WORKDIR] [--repeat 20] [--parts 8] [--score-docs 2000000]
       [--write-at-scale [PATH]] [--tiny]
(--tiny: the JSONL documents once, 2 parts, 20,000 scored and judged documents)
"""

from __future__ import annotations

import filecmp
import json
import os
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from mpi4py import MPI

from common import (MEASURED_RUN, REPO, add_at_scale_option, at_scale_entry, commit_tree, memory,  # puts the
                    memory_mb, pin_to_one_cpu, record_at_scale, run_in_workdir, run_measured, sample_docs,  # repository
                    skipped)  # on the import path

from tokenmill.config import schema_defaults, schema_settings
from tokenmill.dedup.minhash import MinHashParams, Shingler, permutation_coefficients, signature_rows
from tokenmill.io import read_jsonl_zst, read_parquet, write_jsonl_zst, write_parquet, write_part_rows
from tokenmill.dedup.minhash_cluster import _ANSWER, ClusterPart, ClusterSettings, _id_words, host_stats, run
from tokenmill.dedup.mpi import Exchange
from tokenmill.select.host_stats import HOST_COLUMNS, SCHEMA, host_of
from tokenmill.select.judge import JUDGE_SCHEMA
from tokenmill.select.thresholds import thresholds_policy


def cpu_seconds(function) -> tuple[float, object]:
    start = time.process_time()
    result = function()
    return time.process_time() - start, result


def stored_bytes(path: Path, columns: list[str]) -> int:
    """The compressed bytes of `columns` in a parquet file: what a reader of those columns reads."""
    metadata = pq.read_metadata(path)
    return sum(metadata.row_group(group).column(index).total_compressed_size
               for group in range(metadata.num_row_groups) for index in range(metadata.num_columns)
               if metadata.schema.column(index).name in columns)


def documents_host_stats(parts: list[tuple[str, str]]) -> pa.Table:
    """host_stats before (tokenmill 905781b): every document parsed for its url, a set of url
    strings and of cluster ids per host."""
    urls: dict[str, set[str]] = defaultdict(set)
    docs: dict[str, int] = defaultdict(int)
    clusters: dict[str, set[str]] = defaultdict(set)
    for docs_path, dedup_path in parts:
        cluster_ids = read_parquet(dedup_path, columns=["dup_cluster_id"]).column("dup_cluster_id").to_pylist()
        for doc, cluster_id in zip(read_jsonl_zst(docs_path), cluster_ids, strict=True):
            host = host_of(doc.get("url"))
            if host:
                urls[host].add(doc["url"])
                docs[host] += 1
                clusters[host].add(cluster_id)
    hosts = sorted(urls)
    return pa.Table.from_pydict({
        "host": hosts, "urls": [len(urls[h]) for h in hosts], "docs": [docs[h] for h in hosts],
        "distinct_content": [len(clusters[h]) for h in hosts], "unique_share": [len(clusters[h]) / docs[h] for h in hosts],
    }, schema=SCHEMA)


def write_documents_part(folder: Path, index: int, docs: list[dict], params: MinHashParams) -> tuple[Path, Path, Path]:
    """The part's documents and signatures, and where minhash_cluster is to write its clusters."""
    docs_path, signatures_path, dedup_path = (folder / f"p{index:03d}{suffix}" for suffix in
                                              (".jsonl.zst", ".signatures.parquet", ".dedup.parquet"))
    write_jsonl_zst(docs_path, docs)
    signatures = signature_rows(docs, params, 0, Shingler(params.ngram), permutation_coefficients(params))
    write_parquet(signatures_path, signatures)
    return docs_path, signatures_path, dedup_path


def counted_host_stats(parts: list[tuple[str, str]]) -> pa.Table:
    """host_stats now, as minhash_cluster counts them on one rank: the signatures' host and url
    hash columns read, and the clusters (here read back from the job's files, in the job already
    in memory)."""
    hosts = pa.concat_tables(read_parquet(signatures, HOST_COLUMNS) for signatures, _ in parts)
    cluster_ids = pa.concat_tables(read_parquet(dedup, ["dup_cluster_id"]) for _, dedup in parts)
    clusters = np.zeros(hosts.num_rows, dtype=_ANSWER)
    clusters["id_hi"], clusters["id_lo"] = _id_words(cluster_ids.column(0).to_pylist())
    return host_stats(Exchange(MPI.COMM_SELF), hosts.column("host"), hosts.column("url_hash").to_numpy(),
                      np.arange(hosts.num_rows, dtype=np.uint64), clusters)


def compare_host_stats(workdir: Path, tiny: bool, repeat: int, parts: int) -> bool:
    docs = sample_docs(workdir, repeat, tiny)
    params = schema_settings(MinHashParams, "minhash")
    size = -(-len(docs) // parts)
    files = [write_documents_part(workdir, index, docs[start:start + size], params)
             for index, start in enumerate(range(0, len(docs), size))]
    documents_mb = sum(docs_path.stat().st_size for docs_path, _, _ in files) / 1e6
    columns_mb = sum(stored_bytes(s, HOST_COLUMNS) for _, s, _ in files) / 1e6
    print(f"host_stats input: {len(docs):,} documents of the bundled sample ({repeat} time(s) over) in {len(files)} "
          f"parts, {documents_mb:.1f} MB of documents (zstd)")
    job_table = workdir / "hosts.parquet"
    run(MPI.COMM_SELF, [ClusterPart("bench", "s", f"p{index:03d}", str(s), str(c)) for index, (_, s, c) in enumerate(files)],
        schema_settings(ClusterSettings, "minhash"), str(job_table))
    before_s, before = cpu_seconds(lambda: documents_host_stats([(str(d), str(c)) for d, _, c in files]))
    now_s, now = cpu_seconds(lambda: counted_host_stats([(str(s), str(c)) for _, s, c in files]))
    same = now.equals(before) and pq.read_table(job_table).equals(before)
    print(f"{'host_stats':<44}{'CPU-s':>8}{'docs/CPU-s':>13}{'reads':>24}")
    print(f"{'documents parsed (as before)':<44}{before_s:>8.3f}{len(docs) / before_s:>13,.0f}"
          f"{f'{documents_mb:.1f} MB of documents':>24}")
    print(f"{'in minhash_cluster, one rank (tokenmill now)':<44}{now_s:>8.3f}{len(docs) / now_s:>13,.0f}"
          f"{f'{columns_mb:.2f} MB of columns':>24}")
    print(f"host_stats now: {now_s / before_s:.2f}x the CPU of parsing the documents; "
          f"the same table: {same} (counted, written by the job, from the documents; {now.num_rows} hosts)")
    return same


def write_score_parts(folder: Path, docs: int, parts: int) -> list[tuple[str, ...]]:
    """Each part's ScoreFiles (tokenmill.select.thresholds): its langid, quality_fasttext,
    quality_naturalness and heuristics files, and the encoder's chunk of every part."""
    rng = np.random.default_rng(0)
    codes = [f"l{index:02d}" for index in range(60)]
    shares = 1 / np.arange(1, len(codes) + 1)
    rows, encoder_rows = [], []
    for index in range(parts):
        part, count = f"p{index:03d}", docs // parts
        langs = rng.choice(len(codes), size=count, p=shares / shares.sum())
        files = {name: folder / f"{part}.{name}.parquet" for name in ("langid", "fasttext", "naturalness", "heuristics")}
        write_parquet(files["langid"], pa.table({"lang": pa.array([codes[code] for code in langs], pa.string()),
                                                 "lang_conf": rng.uniform(0.3, 1.0, count).astype(np.float32)}))
        write_parquet(files["fasttext"], pa.table({"quality_fasttext": rng.random(count, dtype=np.float32)}))
        write_parquet(files["naturalness"], pa.table({"quality_naturalness": rng.random(count, dtype=np.float32)}))
        write_parquet(files["heuristics"], pa.table({"word_count": rng.integers(50, 2000, count)}))
        encoder_rows.append(pa.table({"part": pa.array([part] * count), "row": pa.array(np.arange(count)),
                                      "quality_encoder": rng.random(count, dtype=np.float32)}))
        rows.append((part, str(files["langid"]), str(files["fasttext"]), str(folder / "encoder.parquet"),
                     str(files["naturalness"]), str(files["heuristics"])))
    write_part_rows(folder / "encoder.parquet", pa.concat_tables(encoder_rows))  # as the encoder's chunk
    return rows


def run_thresholds(tree: Path, rows: list[tuple[str, ...]], policy: dict, out: Path, *workers: int) -> dict:
    """build_thresholds of `tree`: THRESHOLDS_BEFORE's takes (part, langid, fasttext, encoder) rows and
    the quality section; today's ScoreFiles and thresholds_policy (every language valid for both
    classifiers)."""
    if tree != REPO:
        return run_measured(tree, THRESHOLDS_RUN, [[row[:4] for row in rows], policy["quality"], str(out), *workers])
    return run_measured(tree, THRESHOLDS_RUN, [rows, {**thresholds_policy(policy), "valid": {}}, str(out), *workers])


def quality_cuts(path: Path) -> dict:
    """Each language's quality cut points in a thresholds file: what select_thresholds computed then and now."""
    return {lang: (entry.get("cut"), entry.get("mid_floor"))
            for lang, entry in json.loads(path.read_text())["languages"].items()}


def compare_thresholds(workdir: Path, docs: int, parts: int, at_scale: str | None) -> bool:
    """The snapshot's scores at `docs` documents and at twice as many in twice the parts (memory
    that grows with the snapshot doubles; memory bounded by a part does not)."""
    select = schema_defaults("select")
    policy = {**select, "quality": {**select["quality"], "score": "ensemble", "keep_top": 0.9}}  # the demo's cut
    print(f"select_thresholds input: synthetic scores (60 languages, Zipf-like shares, random scores), parts of "
          f"{docs // parts:,} documents; the demo's quality cut (ensemble, keep_top 0.9)")
    before_tree = commit_tree(THRESHOLDS_BEFORE, workdir / "trees")
    print(f"{'select_thresholds':<44}{'documents':>11}{'CPU-s':>8}{'docs/CPU-s':>13}{'memory MB':>11}")
    same, runs = True, {}
    for size, count in ((docs, parts), (2 * docs, 2 * parts)):
        folder = workdir / f"{count}-parts"
        folder.mkdir()
        rows = write_score_parts(folder, size, count)
        now = run_thresholds(REPO, rows, policy, folder / "now.json")
        runs[size] = now
        trees = [(f"the snapshot's arrays ({THRESHOLDS_BEFORE})", run_thresholds(before_tree, rows, policy,
                                                                                  folder / "before.json"))
                 ] if before_tree else []
        for name, measured in [*trees, ("parts counted and collected (now)", now)]:
            print(f"{name:<44}{size:>11,}{measured['cpu_seconds']:>8.3f}{size / measured['cpu_seconds']:>13,.0f}"
                  f"{memory(measured):>11}")
        if trees:  # today's file has more in it (tiers, language thresholds, naturalness): the cuts compare
            same &= quality_cuts(folder / "before.json") == quality_cuts(folder / "now.json")
            print(f"  the same quality cuts as {THRESHOLDS_BEFORE}'s: {same}")
    pinned = os.sched_getaffinity(0)
    os.sched_setaffinity(0, CPUS)  # the 2 workers on 2 CPUs
    try:
        two = run_thresholds(REPO, rows, policy, folder / "two.json", 2)
    finally:
        os.sched_setaffinity(0, pinned)
    same &= (folder / "two.json").read_bytes() == (folder / "now.json").read_bytes()
    print(f"{'now, the parts read by 2 worker processes':<44}{2 * docs:>11,}{two['cpu_seconds']:>8.3f}"
          f"{2 * docs / two['cpu_seconds']:>13,.0f}{memory(two):>11}  (parent's)")
    print(f"  2 workers: {runs[2 * docs]['wall_seconds'] / two['wall_seconds']:.2f}x the speed of 1 "
          f"({two['wall_seconds']:.2f} s against {runs[2 * docs]['wall_seconds']:.2f} s of wall), the same bytes: {same}")
    if not before_tree:
        skipped(f"select_thresholds as of {THRESHOLDS_BEFORE}", f"run from a git checkout that has commit {THRESHOLDS_BEFORE}")
    growth = memory_mb(runs[2 * docs]) / memory_mb(runs[docs])
    print(f"select_thresholds now: twice the documents take {growth:.2f}x the memory")
    workers = {str(count): {"wall_seconds": round(measured["wall_seconds"], 3)}
               for count, measured in ((1, runs[2 * docs]), (2, two))}
    record_at_scale(at_scale, "select_thresholds", {**at_scale_entry(2 * docs, runs[2 * docs]),
                                                    "documents_per_part": docs // parts, "workers": workers},
                    "bench_snapshot_steps.py",
                    f"{2 * docs:,} documents in {2 * parts} parts (synthetic: 60 languages, Zipf-like shares, random "
                    "scores), one process on one core; and 2 worker processes on 2 cores")
    return same


SELECT_BEFORE = "99f2fc6"
SELECT_RUN = MEASURED_RUN.format(imports="from tokenmill.select.select import select_snapshot", call=(
    'select_snapshot([tuple(pair) for pair in arguments], {"drop_exact_duplicates": True, "drop_near_duplicates": True})'))
SELECT_RANKS_RUN = MEASURED_RUN.format(imports="from mpi4py import MPI\nfrom tokenmill.select.select import select_snapshot",
                                       call=('select_snapshot([tuple(pair) for pair in arguments], {"drop_exact_duplicates": '
                                             'True, "drop_near_duplicates": True}, MPI.COMM_WORLD)'))
THRESHOLDS_BEFORE = "e27b890"
THRESHOLDS_RUN = MEASURED_RUN.format(imports="from tokenmill.select import thresholds", call=(
    'thresholds.build_thresholds([getattr(thresholds, "ScoreFiles", lambda *row: row)(*row) for row in arguments[0]], '
    'arguments[1], arguments[2], *arguments[3:])'))
REASONS = ["", "", "", "", "", "", "lang_not_selected", "low_quality", "heuristics:web:gopher_quality.word_count",
           "opted_out", "too_short", "contaminated"]


def write_judged_parts(folder: Path, docs: int, parts: int) -> list[str]:
    """`docs` judged documents (JUDGE_SCHEMA) in `parts` parts: exact groups of 1.25 documents
    and near-duplicate clusters of 1.43 on average, drawn across parts; random scores, fetch times,
    urls and reasons."""
    random = np.random.default_rng(7)
    paths = []
    for index in range(parts):
        n = docs // parts
        empty_lists = pa.array([[]] * n, pa.list_(pa.int32()))
        table = pa.table({
            "row": np.arange(n), "doc_id": [f"{value:032x}" for value in random.integers(0, 2**62, n)],
            "reason": np.array(REASONS)[random.integers(0, len(REASONS), n)],
            "cross_snapshot_duplicate": random.random(n) < 0.05,
            "exact_group": random.integers(0, int(docs * 0.8), n).astype(np.uint64),
            "exact_canonical": random.random(n) < 0.9,
            "dup_cluster_id": [f"{value:032x}" for value in random.integers(0, int(docs * 0.7), n)],  # as doc ids
            "is_cluster_representative": random.random(n) < 0.8,
            "fetch_ts": random.integers(1_600_000_000, 1_700_000_000, n),
            "url_key": random.integers(0, 2**63, n).astype(np.uint64),
            "record_key": random.integers(0, 2**63, n).astype(np.uint64),
            "lang": ["en"] * n, "lang_conf": random.random(n).astype(np.float32), "lang_tier": ["high"] * n,
            "quality": random.random(n),
            "quality_mid_kept": random.random(n) < 0.1, "drop_lines": empty_lists,
            "scrub_spans": pa.array([[]] * n, JUDGE_SCHEMA.field("scrub_spans").type),
            "raw_bytes": random.integers(100, 10_000, n), "chars": random.integers(100, 10_000, n),
            "bytes": random.integers(100, 10_000, n), "math_count": np.zeros(n, np.int32), "kind": ["web"] * n,
            "copy_unit": pa.nulls(n, pa.string())}, schema=JUDGE_SCHEMA)
        paths.append(str(folder / f"judged-{index:02d}.parquet"))
        write_parquet(paths[-1], table)
    return paths


def run_select(tree: Path, judged: list[str], out: Path, ranks: int | None = None) -> dict:
    """select_snapshot of `tree`'s tokenmill on the judged parts, in its own process or on `ranks`
    MPI ranks (the snapshot's summary is its result); the tables go to `out`."""
    out.mkdir(parents=True, exist_ok=True)
    return run_measured(tree, SELECT_RANKS_RUN if ranks else SELECT_RUN,
                        [(path, str(out / Path(path).name)) for path in judged], ranks)


def compare_select(workdir: Path, docs: int, parts: int, at_scale: str | None) -> bool:
    judged = write_judged_parts(workdir, docs, parts)
    print(f"select input: {docs:,} judged documents (synthetic: exact groups and near-duplicate clusters across "
          f"parts, a quarter failing a rule) in {parts} parts")
    runs = {1: run_select(REPO, judged, workdir / "ranks-1", 1)}
    pinned = os.sched_getaffinity(0)
    os.sched_setaffinity(0, CPUS)  # the 2 ranks on 2 CPUs
    try:
        runs[2] = run_select(REPO, judged, workdir / "ranks-2", 2)
    finally:
        os.sched_setaffinity(0, pinned)
    summary = runs[1]["result"]
    same = runs[2]["result"] == summary and all(filecmp.cmp(workdir / "ranks-1" / Path(path).name,
                                                            workdir / "ranks-2" / Path(path).name, shallow=False)
                                                for path in judged)
    record_at_scale(at_scale, "select", {"documents": docs, "ranks": {
        str(ranks): {"wall_seconds": round(measured["wall_seconds"], 2), "peak_rss_mb": round(measured["peak_rss_mb"], 1)}
        for ranks, measured in runs.items()}}, "bench_snapshot_steps.py",
        f"{docs:,} judged documents in {parts} parts (synthetic: exact groups and near-duplicate clusters across parts, "
        "a quarter failing a rule), the MPI job on 1 rank (one core) and 2 ranks (2 cores), wall seconds with mpiexec")
    before = commit_tree(SELECT_BEFORE, workdir / "trees")
    print(f"{'select':<44}{'CPU-s':>8}{'docs/CPU-s':>13}{'wall s':>8}{'memory MB':>11}")
    rows = [(f"one process holds the snapshot ({SELECT_BEFORE})", run_select(before, judged, workdir / "before"))
            ] if before else []
    rows += [(f"MPI job, {ranks} rank{'s' if ranks > 1 else ''} (now)", measured) for ranks, measured in runs.items()]
    for name, measured in rows:
        print(f"{name:<44}{measured['cpu_seconds']:>8.3f}{docs / measured['cpu_seconds']:>13,.0f}"
              f"{measured['wall_seconds']:>8.2f}{memory(measured):>11}")
    print(f"select now: 2 ranks {runs[1]['wall_seconds'] / runs[2]['wall_seconds']:.2f}x the speed of 1, peak memory "
          f"per rank {runs[2]['peak_rss_mb']:,.0f} MB against {runs[1]['peak_rss_mb']:,.0f}; the same tables and summary "
          f"on 1 and 2 ranks: {same} ({summary['exact_groups']:,} exact groups, {summary['clusters']:,} clusters)")
    if not before:
        skipped(f"select as of {SELECT_BEFORE}", f"run from a git checkout that has commit {SELECT_BEFORE}")
        return same
    old = rows[0][1]
    same_as_before = old["result"] == summary and all(
        same_columns(workdir / "before" / Path(path).name, workdir / "ranks-1" / Path(path).name) for path in judged)
    print(f"  1 rank: {runs[1]['cpu_seconds'] / old['cpu_seconds']:.2f}x the CPU and "
          f"{memory_mb(runs[1]) / memory_mb(old):.2f}x the memory of {SELECT_BEFORE}; the same tables and summary: "
          f"{same_as_before}")
    return same and same_as_before


PROBE_RUN = MEASURED_RUN.format(imports="from tokenmill.dedup.cross_snapshot import probe_part", call=(
    'vars(probe_part(*arguments))'))
PROBE_SNAPSHOT_RUN = MEASURED_RUN.format(imports="from tokenmill.dedup.cross_snapshot import probe_part", call=(
    '[vars(probe_part(*job)) for job in arguments]'))


INDEX_RUN = MEASURED_RUN.format(
    imports="from mpi4py import MPI\nfrom tokenmill.dedup.cross_snapshot import SnapshotPart, build_generation",
    call=('len(build_generation("CC-OLDER", [SnapshotPart(*part) for part in arguments[0]], 8, 14, 0.01, arguments[1], '
          'MPI.COMM_WORLD).doc_ids)'))


def write_signatures(path: str, doc_ids: list[str], signature: np.ndarray) -> None:
    write_parquet(path, pa.table({"doc_id": doc_ids, "signature": pa.FixedSizeListArray.from_arrays(
        pa.array(signature.reshape(-1)), signature.shape[1])}))


def write_signature_parts(folder: Path, docs: int, parts: int) -> tuple[list[str], list[list[str]]]:
    """An older snapshot of docs / 2 survivors and a newer one of `docs` documents, each in `parts`
    parts of signatures (random, 112 permutations; the older one's with minhash_cluster's flags,
    every document a survivor); a tenth of the newer documents are copies of older ones."""
    random = np.random.default_rng(11)
    width = 112
    older = random.integers(0, 2**63, size=(docs // 2, width), dtype=np.uint64)
    older_parts = []
    for index, rows in enumerate(np.array_split(np.arange(len(older)), parts)):
        ids = [f"{value:032x}" for value in random.integers(0, 2**62, len(rows))]
        signatures, dedup = str(folder / f"older-{index:02d}.parquet"), str(folder / f"older-{index:02d}.dedup.parquet")
        write_signatures(signatures, ids, older[rows])
        write_parquet(dedup, pa.table({"doc_id": ids, "is_cluster_representative": np.ones(len(rows), bool)}))
        older_parts.append([f"older-{index:02d}", signatures, dedup])
    paths = []
    for index in range(parts):
        n = docs // parts
        signature = random.integers(0, 2**63, size=(n, width), dtype=np.uint64)
        copies = random.random(n) < 0.1
        signature[copies] = older[random.integers(0, len(older), int(copies.sum()))]
        paths.append(str(folder / f"signatures-{index:02d}.parquet"))
        write_signatures(paths[-1], [f"{value:032x}" for value in random.integers(0, 2**62, n)], signature)
    return paths, older_parts


def compare_cross_snapshot_dedup(workdir: Path, docs: int, parts: int, at_scale: str | None) -> bool:
    """The older snapshot's index generation built by the MPI job on 1 rank and on 2 (each writes
    the bucket of keys it owns); then the newer snapshot probed against it: one process over every
    part (as the job per snapshot was; today's code, called part after part, against the 1-rank
    index) against a job per part (as it is, against the 2-rank index), each in a process of its own."""
    signatures, older_parts = write_signature_parts(workdir, docs, parts)
    print(f"cross_snapshot_index input: {docs // 2:,} survivors of an older snapshot (synthetic signatures) in "
          f"{parts} parts")
    builds = {}
    pinned = os.sched_getaffinity(0)
    for ranks in (1, 2):
        os.sched_setaffinity(0, CPUS if ranks == 2 else pinned)  # the 2 ranks on 2 CPUs
        try:
            builds[ranks] = run_measured(REPO, INDEX_RUN, [older_parts, str(workdir / f"older-{ranks}")], ranks)
        finally:
            os.sched_setaffinity(0, pinned)
    print(f"{'cross_snapshot_index':<44}{'CPU-s':>8}{'wall s':>8}{'memory MB':>11}")
    for ranks, measured in builds.items():
        print(f"{f'MPI job, {ranks} rank' + ('s' if ranks > 1 else ''):<44}{measured['cpu_seconds']:>8.3f}"
              f"{measured['wall_seconds']:>8.2f}{memory(measured):>11}")
    record_at_scale(at_scale, "cross_snapshot_index", {"documents": docs // 2, "ranks": {
        str(ranks): {"wall_seconds": round(measured["wall_seconds"], 2), "peak_rss_mb": round(measured["peak_rss_mb"], 1)}
        for ranks, measured in builds.items()}}, "bench_snapshot_steps.py",
        f"{docs // 2:,} survivors' signatures in {parts} parts (synthetic), the MPI job on 1 rank (one core) and 2 "
        "ranks (2 cores), wall seconds with mpiexec")
    jobs = [[f"part-{index:02d}", path, [str(workdir / "older-2")], 8, 14, str(workdir / f"part-{index:02d}.parquet")]
            for index, path in enumerate(signatures)]
    print(f"cross_snapshot_dedup input: {docs:,} documents' signatures (synthetic, a tenth copies of the older "
          f"snapshot) in {parts} parts")
    snapshot = run_measured(REPO, PROBE_SNAPSHOT_RUN, [[job[0], job[1], [str(workdir / "older-1")], *job[3:5],
                                                        job[-1] + ".snapshot"] for job in jobs])
    per_part = [run_measured(REPO, PROBE_RUN, job) for job in jobs]
    same = all(filecmp.cmp(job[-1], job[-1] + ".snapshot", shallow=False) for job in jobs)
    matched = sum(stats["run_hits"] for stats in snapshot["result"])
    longest = max(per_part, key=lambda measured: measured["cpu_seconds"])
    total = sum(measured["cpu_seconds"] for measured in per_part)
    print(f"{'cross_snapshot_dedup':<44}{'CPU-s':>8}{'docs/CPU-s':>13}{'memory MB':>11}")
    for name, documents, cpu, measured in (
            ("one process over the snapshot (as it was)", docs, snapshot["cpu_seconds"], snapshot),
            (f"a job per part, longest of {parts}", docs // parts, longest["cpu_seconds"], longest),
            (f"a job per part, all {parts}", docs, total, longest)):
        print(f"{name:<44}{cpu:>8.3f}{documents / cpu:>13,.0f}{memory(measured):>11}")
    print(f"cross_snapshot_dedup now: the longest job {longest['cpu_seconds'] / snapshot['cpu_seconds']:.2f}x the one "
          f"process's CPU, all jobs {total / snapshot['cpu_seconds']:.2f}x; the same rows (against the 1- and the "
          f"2-rank index): {same} ({matched:,} band matches)")
    record_at_scale(at_scale, "cross_snapshot_dedup", {
        "documents": docs, "core_seconds": round(total, 3), "documents_per_part": docs // parts,
        **{name: round(longest[name], 1) for name in ("base_rss_mb", "peak_rss_mb")}}, "bench_snapshot_steps.py",
        f"{docs:,} documents' signatures in {parts} parts (synthetic, a tenth copies), a job per part on one core "
        f"against an older generation of {docs // 2:,} survivors in 2 buckets; CPU of all jobs, memory of the largest")
    return same


def same_columns(before: Path, now: Path) -> bool:
    """Whether today's table holds the earlier table's columns with the same values (judge has added
    columns since, which select carries along)."""
    earlier = pq.read_table(before)
    return pq.read_table(now, columns=earlier.column_names).equals(earlier)


CPUS = os.sched_getaffinity(0)  # before main pins this process to one


def main(workdir: Path, tiny: bool, repeat: int, parts: int, score_docs: int, write_at_scale: str | None) -> None:
    if tiny:
        repeat, parts, score_docs = 1, 2, 20_000
    cpu = pin_to_one_cpu()
    print(f"one core (CPU {cpu})")
    for folder in ("host_stats", "thresholds", "select", "cross_snapshot_dedup"):
        (workdir / folder).mkdir(parents=True, exist_ok=True)
    same = [compare_host_stats(workdir / "host_stats", tiny, repeat, parts),
            compare_thresholds(workdir / "thresholds", score_docs, parts, write_at_scale),
            compare_select(workdir / "select", score_docs, parts, write_at_scale),
            compare_cross_snapshot_dedup(workdir / "cross_snapshot_dedup", score_docs, parts, write_at_scale)]
    if not all(same):
        raise SystemExit("a step's output changed")


def add_options(parser) -> None:
    parser.add_argument("--repeat", type=int, default=20, help="copies of the sample's documents (host_stats)")
    parser.add_argument("--parts", type=int, default=8)
    parser.add_argument("--score-docs", type=int, default=2_000_000, help="documents (select_thresholds, select)")
    add_at_scale_option(parser)


if __name__ == "__main__":
    run_in_workdir(main, __doc__, "folder for the parts (default: a temporary one)", add_options)
