"""The minhash_cluster MPI job: union-find, bucket caps, rank-count and part-split independence,
and clustering quality on near-duplicates made from real documents."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from mpi4py import MPI

from tests.conftest import REPO, gold_articles, sample
from tests.unit.helpers import RESILIPARSE_SETTINGS, signatures_part
from tokenmill.config import schema_defaults, schema_settings
from tokenmill.dedup.minhash_cluster import _bucket_edges, _near_duplicates
from tokenmill.dedup.mpi import assign_parts
from tokenmill.dedup.components import DistributedForest
from tokenmill.dedup.union_find import union_find_labels
from tokenmill.dedup.cross_snapshot import SnapshotPart, build_generation, load_generation, probe_part
from tokenmill.dedup.minhash import MinHashParams, Shingler
from tokenmill.dedup.mpi import Exchange
from tokenmill.dedup.normalize import normalize_for_dedup
from tokenmill.extract.part import extract_part
from tokenmill.extract.records import PartInfo
from tokenmill.io import JsonlZstWriter, read_jsonl_zst
from tokenmill.plan import PLAN_COLUMNS, write_plan

MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")
INPUTS = [("govuk", "crawl-1", "warc-ukwa-govuk-1", sample("warc", "ukwa-govuk", "BL-20140325121225068-00000-32090~opera~8443.warc.gz")),
          ("govuk", "crawl-2", "warc-ukwa-govuk-2", sample("warc", "ukwa-govuk", "BL-20140325122341434-00000-32090~opera~8443.warc.gz")),
          ("dolma", "s", "sample-0000", sample("warc", "dolma", "sample-0000.warc.gz")),
          ("dolma", "s", "sample-0001", sample("warc", "dolma", "sample-0001.warc.gz"))]


def random_graph(seed: int, n: int = 400) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    u = rng.integers(0, n, size=n // 2)
    v = rng.integers(0, n, size=n // 2)
    chain = np.arange(n // 2, n - 1)  # a long path, the worst case for label propagation
    return np.concatenate([u, chain]).astype(np.uint64), np.concatenate([v, chain + 1]).astype(np.uint64)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_distributed_forest_matches_serial_union_find(seed):
    u, v = random_graph(seed)
    order = np.random.default_rng(seed + 10).permutation(len(u))
    forest = DistributedForest(Exchange(MPI.COMM_SELF), u[order], v[order]).solve()
    labels = forest.find(np.arange(400, dtype=np.uint64))
    assert np.array_equal(labels, union_find_labels(400, u.astype(np.int64), v.astype(np.int64)))
    assert forest.rounds < 30  # the 200-long chain converges by pointer jumping, not in 200 rounds


def test_forest_under_mpiexec_with_1_2_3_ranks(tmp_path):
    code = f"""
import numpy as np, sys
from mpi4py import MPI
sys.path.insert(0, {str(REPO)!r})
from tests.unit.test_minhash_cluster import random_graph
from tokenmill.dedup.components import DistributedForest
from tokenmill.dedup.mpi import Exchange
comm = MPI.COMM_WORLD
u, v = random_graph(7)
mine = np.arange(len(u)) % comm.size == comm.rank
labels = DistributedForest(Exchange(comm), u[mine], v[mine]).solve().find(np.arange(400, dtype=np.uint64))
if comm.rank == 0:
    np.save(sys.argv[1], labels)
"""
    script = tmp_path / "forest.py"
    script.write_text(code)
    u, v = random_graph(7)
    expected = union_find_labels(400, u.astype(np.int64), v.astype(np.int64))
    for ranks in (1, 2, 3):
        out = tmp_path / f"labels-{ranks}.npy"
        subprocess.run([MPIEXEC, "-n", str(ranks), sys.executable, str(script), str(out)], check=True, timeout=120)
        assert np.array_equal(np.load(out), expected), ranks


def test_oversized_bucket_is_split_and_counted():
    n = 25
    keys = np.zeros(n, dtype=[("fetch_ts", np.int64), ("url_key", np.uint64), ("id_hi", np.uint64),
                              ("id_lo", np.uint64), ("record_key", np.uint64), ("gid", np.uint64)])
    keys["gid"] = np.arange(n)
    keys["record_key"] = np.arange(n) * 7919 + 11
    bands = np.full((n, 2), 42, dtype=np.uint64)  # every document in the same bucket of both bands
    ex = Exchange(MPI.COMM_SELF)
    u, v, stats = _bucket_edges(ex, np.zeros(n, np.uint64), bands, keys, cap=10)
    assert stats["split_buckets"] == 2 and stats["largest_bucket"] == 25
    labels, answers = _near_duplicates(ex, np.zeros(n, np.uint64), bands, keys, 10, "test")
    sizes = sorted(np.unique(labels, return_counts=True)[1].tolist())
    assert len(sizes) == 3 and sum(sizes) == n and max(sizes) <= 10 + 5  # split, not merged back


def test_parts_are_shared_by_document_count():
    assert assign_parts([10, 10, 10, 10], 2) == [0, 0, 1, 1]
    assert assign_parts([100, 1, 1, 1], 2) == [0, 1, 1, 1]
    assert assign_parts([5, 5], 3) == [0, 1]


def extract_docs(tmp: Path) -> list[tuple[str, str, str, Path]]:
    parts = []
    for source, snapshot, part, path in INPUTS:
        docs = tmp / f"{part}.jsonl.zst"
        extract_part(path, "warc", PartInfo(source, snapshot, part, "crawl", "x"), RESILIPARSE_SETTINGS, str(docs),
                     str(tmp / f"{part}.q.jsonl.zst"), str(tmp / f"{part}.stats.json"))
        parts.append((source, snapshot, part, docs))
    return parts


def cluster_with(tmp: Path, parts: list, ranks: int, name: str) -> list[Path]:
    """Signatures for `parts`, then the minhash_cluster script under mpiexec -n `ranks`."""
    rows, outputs = [], []
    for source, snapshot, part, docs in parts:
        signature = tmp / f"{part}.sig.parquet"
        if not signature.exists():
            signatures_part(str(docs), str(signature), schema_settings(MinHashParams, "minhash"))
        output = tmp / name / f"{part}.parquet"
        outputs.append(output)
        row = {column: "" for column in PLAN_COLUMNS}
        row.update(source=source, snapshot=snapshot, part=part, signatures=str(signature), minhash_cluster=str(output))
        rows.append([row[column] for column in PLAN_COLUMNS])
    plan = tmp / f"{name}.plan.tsv"
    write_plan(rows, str(plan))
    command = [MPIEXEC, "-n", str(ranks), sys.executable, "-P", str(REPO / "scripts" / "minhash_cluster.py"),
               "--plan", str(plan), "--bucket-cap", str(schema_defaults("minhash.bucket_cap")), "--out-dir", str(tmp / name),
               "--host-stats", str(tmp / f"{name}.hosts.parquet")]
    subprocess.run(command, check=True, timeout=300, capture_output=True)
    return outputs


@pytest.fixture(scope="module")
def sample_parts(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cluster")
    return tmp, extract_docs(tmp)


def test_same_bytes_and_host_counts_with_1_2_3_ranks(sample_parts):
    tmp, parts = sample_parts
    results = [cluster_with(tmp, parts, ranks, f"ranks{ranks}") for ranks in (1, 2, 3)]
    for outputs in results[1:]:
        for expected, actual in zip(results[0], outputs):
            assert expected.read_bytes() == actual.read_bytes(), actual
    hosts = [(tmp / f"ranks{ranks}.hosts.parquet").read_bytes() for ranks in (1, 2, 3)]
    assert hosts[0] == hosts[1] == hosts[2]
    # each host counted by the rank that owns it, against pyarrow's distinct counts over one table
    documents = pa.concat_tables(
        pq.read_table(tmp / f"{part}.sig.parquet", columns=["host", "url_hash"]).append_column(
            "cluster", pq.read_table(output, columns=["dup_cluster_id"]).column(0))
        for (_, _, part, _), output in zip(parts, results[2]))
    documents = documents.filter(pc.not_equal(documents["host"], ""))
    expected = documents.group_by("host").aggregate([("url_hash", "count_distinct"), ("url_hash", "count"),
                                                     ("cluster", "count_distinct")]).sort_by("host")
    stats = pq.read_table(tmp / "ranks3.hosts.parquet")
    assert stats.num_rows == expected.num_rows > 10
    assert stats.column("host").equals(expected.column("host"))
    assert stats.column("urls").to_pylist() == expected.column("url_hash_count_distinct").to_pylist()
    assert stats.column("docs").to_pylist() == expected.column("url_hash_count").to_pylist()
    assert stats.column("distinct_content").to_pylist() == expected.column("cluster_count_distinct").to_pylist()
    assert sum(stats.column("docs").to_pylist()) > sum(stats.column("distinct_content").to_pylist())  # copies
    dolma = pq.read_table(results[0][2]).to_pylist() + pq.read_table(results[0][3]).to_pylist()
    assert sum(not row["exact_canonical"] for row in dolma) >= 1


def test_same_results_for_any_split_into_parts(sample_parts):
    """The two dolma parts merged into one part, and split into three: per-document results agree."""
    tmp, parts = sample_parts
    docs = [doc for part in parts[2:] for doc in read_jsonl_zst(part[3])]
    merged = tmp / "merged.jsonl.zst"
    with JsonlZstWriter(merged) as writer:
        for doc in docs:
            writer.write(doc)
    thirds = []
    for i in range(3):
        path = tmp / f"third{i}.jsonl.zst"
        with JsonlZstWriter(path) as writer:
            for doc in docs[i::3]:
                writer.write(doc)
        thirds.append(("dolma", "s", f"third{i}", path))
    reference = cluster_with(tmp, parts, 2, "split-reference")
    one = cluster_with(tmp, parts[:2] + [("dolma", "s", "merged", merged)], 2, "split-one")
    three = cluster_with(tmp, parts[:2] + thirds, 3, "split-three")

    def by_record(outputs, doc_lists):
        rows = {}
        for output, doc_list in zip(outputs, doc_lists):
            for row, doc in zip(pq.read_table(output).to_pylist(), doc_list):
                rows[doc["record_id"]] = row
        return rows

    expected = by_record(reference[2:], [list(read_jsonl_zst(p[3])) for p in parts[2:]])
    assert by_record(one[2:], [docs]) == expected
    assert by_record(three[2:], [docs[i::3] for i in range(3)]) == expected


def test_near_duplicate_quality_on_edited_real_documents(tmp_path):
    """Copies of real article bodies with small edits, paragraph reorderings and boilerplate
    swaps. Ground truth: exact Jaccard of the shingle sets. Pairs at J >= 0.8 should share a
    cluster (recall); pairs at J < 0.5 should not (precision of 'same cluster')."""
    gold = gold_articles()
    bodies = [entry["articleBody"] for _, entry in sorted(gold.items()) if len(entry["articleBody"].split()) > 150]
    rng = np.random.default_rng(11)
    boilerplate = ["Subscribe to our newsletter", "Share this article", "Related posts", "Cookie settings",
                   "Advertisement", "Sign in to comment"]
    records = []
    for index, body in enumerate(bodies[:60]):
        paragraphs = [p for p in body.split("\n") if p.strip()]
        variants = [body]
        words = body.split(" ")
        for fraction in (0.01, 0.05, 0.15, 0.4):
            copy = list(words)
            for position in rng.choice(len(copy), size=int(fraction * len(copy)), replace=False):
                copy[position] = copy[rng.integers(len(copy))]
            variants.append(" ".join(copy))
        variants.append("\n".join(rng.permutation(paragraphs)))
        variants.append("\n".join([rng.choice(boilerplate)] + paragraphs + [rng.choice(boilerplate)]))
        for number, text in enumerate(variants):
            records.append({"doc_id": f"{index:016x}{number:016x}", "record_id": f"{index}-{number}", "url": None,
                            "fetch_ts": None, "text": text, "group": index})
    docs = tmp_path / "variants.jsonl.zst"
    with JsonlZstWriter(docs) as writer:
        for record in records:
            writer.write(record)
    (output,) = cluster_with(tmp_path, [("q", "s", "variants", docs)], 2, "quality")
    clusters = pq.read_table(output).column("dup_cluster_id").to_pylist()
    shingler = Shingler(5)
    sets = [set(shingler.shingles(normalize_for_dedup(r["text"])).tolist()) for r in records]
    high_same = high = low_same = low = same_pairs = 0
    for i in range(len(records)):
        for j in range(i + 1, len(records)):
            if records[i]["group"] != records[j]["group"] and rng.random() > 0.02:
                continue  # sample the many unrelated pairs
            jaccard = len(sets[i] & sets[j]) / len(sets[i] | sets[j])
            same = clusters[i] == clusters[j]
            same_pairs += same
            if jaccard >= 0.8:
                high, high_same = high + 1, high_same + same
            elif jaccard < 0.5:
                low, low_same = low + 1, low_same + same
    recall, false_merge = high_same / high, low_same / low
    precision = 1 - low_same / max(same_pairs, 1)
    print(f"near-duplicate quality: recall at J>=0.8 {recall:.3f} ({high} pairs); "
          f"same-cluster rate at J<0.5 {false_merge:.3f} ({low} pairs); "
          f"precision (same-cluster pairs not below J 0.5) {precision:.3f} ({same_pairs} pairs)")
    assert recall >= 0.95 and false_merge <= 0.10


def test_the_recrawl_is_tagged_against_the_first_crawls_index(sample_parts):
    """gov.uk crawl 2 (a real re-crawl) probed against crawl 1's index generation: its copies
    are tagged with crawl-1 documents; crawl 1 probed against nothing is untouched."""
    tmp, parts = sample_parts
    outputs = cluster_with(tmp, parts, 2, "cross")
    first, second = (SnapshotPart(p[2], str(tmp / f"{p[2]}.sig.parquet"), str(o)) for p, o in zip(parts[:2], outputs))
    generation = build_generation("crawl-1", [first], 8, 14, 0.01, str(tmp / "generation-1"))
    assert load_generation(str(tmp / "generation-1"))[0].doc_ids.tolist() == generation.doc_ids.tolist()
    stats = probe_part(second.part, second.signatures, [str(tmp / "generation-1")], 8, 14, str(tmp / "probe-2.parquet"))
    rows = pq.read_table(tmp / "probe-2.parquet").to_pylist()
    tagged = [row for row in rows if row["xsnap_dup_of"]]
    assert len(tagged) >= 3 and {row["xsnap_dup_snapshot"] for row in tagged} == {"crawl-1"}
    assert {row["xsnap_dup_of"].encode() for row in tagged} <= set(generation.doc_ids.tolist())
    assert stats.run_hits >= len(tagged) and stats.bloom_hits <= stats.probes
    probe_part(first.part, first.signatures, [], 8, 14, str(tmp / "probe-1.parquet"))
    assert not any(row["xsnap_dup_of"] for row in pq.read_table(tmp / "probe-1.parquet").to_pylist())
    build_generation("crawl-1", [first], 8, 14, 0.01, str(tmp / "generation-1b"))
    files = sorted(path.relative_to(tmp / "generation-1") for path in (tmp / "generation-1").rglob("*") if path.is_file())
    assert len(files) == 9  # meta.json and one bucket's runs, filters (each with its bands' starts), ids and numbers
    for name in files:
        assert (tmp / "generation-1" / name).read_bytes() == (tmp / "generation-1b" / name).read_bytes()


def test_an_index_built_on_two_ranks_answers_every_probe_as_one_rank_s(sample_parts):
    """cross_snapshot_index under mpiexec -n 2: two buckets of keys, neither rank holding the
    snapshot, and the re-crawl's probe rows the same bytes as against the one-rank index."""
    tmp, parts = sample_parts
    outputs = cluster_with(tmp, parts, 2, "ranks")
    first, second = (SnapshotPart(p[2], str(tmp / f"{p[2]}.sig.parquet"), str(o)) for p, o in zip(parts[:2], outputs))
    row = {column: "" for column in PLAN_COLUMNS}
    row.update(source=parts[0][0], snapshot=parts[0][1], part=first.part, signatures=first.signatures,
               minhash_cluster=first.dedup)
    write_plan([[row[column] for column in PLAN_COLUMNS]], str(tmp / "first.plan.tsv"))
    subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-P", str(REPO / "scripts" / "cross_snapshot_index.py"),
                    "--plan", str(tmp / "first.plan.tsv"), "--bands", "8", "--rows", "14",
                    "--false-positive-rate", "0.01", "--out", str(tmp / "generation-ranks")],
                   check=True, timeout=300, capture_output=True)
    build_generation(parts[0][1], [first], 8, 14, 0.01, str(tmp / "generation-rank"))
    buckets = load_generation(str(tmp / "generation-ranks"))
    assert len(buckets) == 2 and all(len(bucket.doc_ids) < sum(len(b.doc_ids) for b in buckets) for bucket in buckets)
    for name in ("ranks", "rank"):
        probe_part(second.part, second.signatures, [str(tmp / f"generation-{name}")], 8, 14, str(tmp / f"probe-{name}.parquet"))
    assert (tmp / "probe-ranks.parquet").read_bytes() == (tmp / "probe-rank.parquet").read_bytes()
    assert any(row["xsnap_dup_of"] for row in pq.read_table(tmp / "probe-ranks.parquet").to_pylist())
