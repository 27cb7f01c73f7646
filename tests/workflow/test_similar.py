"""`python -m tokenmill similar` on the demo run (the reference run: no graph run of its own), as
docs/dedup.md shows it, from the demo's virtualenv (runtime requirements only, datasketch among them)."""

from __future__ import annotations

import json
import subprocess

import pyarrow.parquet as pq

from tests.conftest import REPO, demo_python
from tokenmill.dedup.similar import find_similar
from tokenmill.io import read_jsonl_zst
from tokenmill.plan import read_plan

# dolma's allenai.org home page, fetched three times: one cluster of three exact copies
SNAPSHOT, ALLENAI = "wget-2024-04-25", "515905325df2d4e8260cf44496252be4"
DOCUMENTED_COMMAND = f"python -m tokenmill similar {SNAPSHOT} {ALLENAI}"


def similar(root, *args: str) -> str:
    result = subprocess.run([str(demo_python(root)), "-m", "tokenmill", "similar", *args], cwd=root,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"similar {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def snapshot_rows(root, source: str, snapshot: str) -> list[dict]:
    """Every document of a snapshot with minhash_cluster's and select's columns, in plan order."""
    rows = []
    for part in read_plan(str(root / "results" / "plan" / source / f"{snapshot}.tsv"), version="demo-v0"):
        docs = read_jsonl_zst(root / part["docs"])
        clustered = pq.read_table(root / part["minhash_cluster"]).to_pylist()
        selected = pq.read_table(root / part["select"]).to_pylist()
        rows += [{**cluster, **choice, "url": doc["url"], "fetch_ts": doc["fetch_ts"]}
                 for doc, cluster, choice in zip(docs, clustered, selected)]
    return rows


def identity(row: dict) -> tuple[str, str, str]:
    """A document's text, url and fetch time (none for code, PDF and JSONL documents)."""
    return row["doc_id"], row["url"], row["fetch_ts"] or ""


def test_the_documented_command_finds_the_copies_of_a_page(reference_run):
    page = (REPO / "docs" / "dedup.md").read_text(encoding="utf-8")
    printed = similar(reference_run, *DOCUMENTED_COMMAND.split()[4:])
    assert DOCUMENTED_COMMAND in page and all(line in page for line in printed.splitlines()), printed
    report = json.loads(similar(reference_run, *DOCUMENTED_COMMAND.split()[4:], "--json"))
    copies = [row for row in snapshot_rows(reference_run, "dolma_crawl", SNAPSHOT) if row["doc_id"] == ALLENAI]
    assert len(copies) == 3 and {row["url"] for row in copies} == {"https://allenai.org/"}
    assert report["source"] == "dolma_crawl" and report["query"]["copies"] == 3
    found = report["near_duplicates"]
    assert sorted(row["fetch_ts"] for row in found) == sorted(row["fetch_ts"] for row in copies)[1:]
    for row in found:  # the same text: every band matches, and minhash_cluster put it in the query's cluster
        assert row["lsh_candidate"] and row["exact_jaccard"] == row["estimated_jaccard"] == 1.0
        assert row["matching_bands"] == list(range(14))
        assert row["dup_cluster_id"] == copies[0]["dup_cluster_id"] == report["query"]["dup_cluster_id"]
    # select kept none: all three fail a heuristic rule, and the table says so
    assert not any(row["selected"] for row in copies)
    (cluster,) = report["clusters"]
    assert cluster["kept"] is None and cluster["why"].startswith("none: the cluster is lost")
    assert "heuristics:" in cluster["why"] and f"cluster {ALLENAI} (3 documents): kept none" in printed
    assert printed.count("all 14") == 2 and "exact_duplicate" in printed


def test_an_edited_text_finds_the_page_and_every_cluster_of_the_demo_is_listed(reference_run, tmp_path):
    """A text with a few words changed finds the three copies (Jaccard below 1); a doc_id query of
    every cluster of the demo lists exactly the other members of its cluster, with select's choice."""
    (text,) = {doc["text"] for part in read_plan(str(reference_run / "results/plan/dolma_crawl" / f"{SNAPSHOT}.tsv"))
               for doc in read_jsonl_zst(reference_run / part["docs"]) if doc["doc_id"] == ALLENAI}
    edited = text.replace("AI", "artificial intelligence", 2)
    (tmp_path / "edited.txt").write_text(edited)
    report = json.loads(similar(reference_run, SNAPSHOT, "--text-file", str(tmp_path / "edited.txt"), "--json"))
    assert [row["doc_id"] for row in report["near_duplicates"]] == [ALLENAI] * 3
    assert all(0.72 < row["exact_jaccard"] < 1 and row["matching_bands"] for row in report["near_duplicates"])
    assert {round(row["exact_jaccard"], 3) for row in report["near_duplicates"]} == {0.912}  # as docs/dedup.md says
    with_clusters = set()
    snapshots = {(part["source"], part["snapshot"])
                 for part in read_plan(str(reference_run / "results/plan/parts.tsv"), version="demo-v0")}
    for source, snapshot in sorted(snapshots):
        rows = snapshot_rows(reference_run, source, snapshot)
        clusters = sorted({row["dup_cluster_id"] for row in rows if row["dup_cluster_size"] > 1})
        if clusters:
            with_clusters.add((source, snapshot))
        for cluster_id in clusters:
            members = [row for row in rows if row["dup_cluster_id"] == cluster_id]
            report = find_similar(str(reference_run), snapshot, "demo-v0", doc_id=cluster_id)
            assert report["query"]["is_cluster_representative"]
            assert sorted(map(identity, report["near_duplicates"])) == \
                sorted(identity(row) for row in members if not row["is_cluster_representative"])
            (cluster,) = report["clusters"]
            selected = [identity(row) for row in members if row["selected"]]
            if cluster["kept"]:
                assert [identity(cluster["kept"])] == selected
            else:  # none kept, or the files of one repository, kept whole
                assert len(selected) != 1 and cluster["why"].startswith(
                    f"{len(selected)} members kept: files of the repository" if selected else "none"), cluster["why"]
    # the allenai.org copies, archive.org's home page fetched twice, code files copied between repositories
    assert {("dolma_crawl", SNAPSHOT), ("web_archive_tests", "wget-2013-10-21"), ("code_samples", "pypi-2023")} \
        <= with_clusters, with_clusters
