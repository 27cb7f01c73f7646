"""host_stats (counted inside minhash_cluster's MPI job) finds crawler traps: hosts with many urls
and little distinct content, measured on real near-duplicate clustering of real article pages plus
a generated calendar trap."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from mpi4py import MPI

from tests.conftest import gold_articles
from tests.unit.helpers import EXTRACT_SETTINGS as SETTINGS
from tests.unit.helpers import signatures_part
from tokenmill.config import schema_settings
from tokenmill.dedup.minhash_cluster import ClusterPart, ClusterSettings, run
from tokenmill.dedup.minhash import MinHashParams
from tokenmill.extract.part import extract_part
from tokenmill.extract.records import PartInfo
from tokenmill.select.host_stats import crawler_traps, host_of
from tokenmill.io import read_jsonl_zst

TRAP_HOST = "events.trap.example"


def trap_and_articles() -> list[dict]:
    """60 real article pages on their own hosts, and a calendar trap (generated here): 300
    urls, each page the same real article body under a different date heading."""
    articles = [record for record in gold_articles().values() if record.get("articleBody")][:61]
    records = [{"id": f"article-{i}", "text": a["articleBody"], "url": a["url"], "created": "2024-01-01T00:00:00Z"}
               for i, a in enumerate(articles[:60])]
    template = articles[60]["articleBody"]
    for day in range(300):
        records.append({"id": f"trap-{day}", "url": f"http://{TRAP_HOST}/calendar?day={day}&view=month",
                        "text": f"Events on day {day} of the calendar\n{template}", "created": "2024-01-01T00:00:00Z"})
    return records


def test_a_calendar_trap_has_a_tiny_unique_share_and_articles_do_not(tmp_path):
    source = tmp_path / "crawl.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in trap_and_articles()))
    docs, signatures, dedup = (tmp_path / name for name in ("docs.jsonl.zst", "sig.parquet", "dedup.parquet"))
    extract_part(str(source), "jsonl", PartInfo("web", "s1", "p0", "crawl", "CC0-1.0"), SETTINGS, str(docs),
                 str(tmp_path / "q.jsonl.zst"), str(tmp_path / "stats.json"))
    signatures_part(str(docs), str(signatures), schema_settings(MinHashParams, "minhash"))
    run(MPI.COMM_SELF, [ClusterPart("web", "s1", "p0", str(signatures), str(dedup))],
        schema_settings(ClusterSettings, "minhash"), str(tmp_path / "hosts.parquet"))
    table = pq.read_table(tmp_path / "hosts.parquet")
    rows = {row["host"]: row for row in table.to_pylist()}
    trap = rows[TRAP_HOST]
    assert (trap["urls"], trap["docs"]) == (300, 300)
    assert trap["unique_share"] < 0.05  # the date headings do not make the pages distinct content
    articles = [row for host, row in rows.items() if host != TRAP_HOST]
    assert sum(row["docs"] for row in articles) == 60
    assert min(row["unique_share"] for row in articles) == 1.0
    assert crawler_traps(table, min_urls=100, max_unique_share=0.1) == {TRAP_HOST}
    assert crawler_traps(table, min_urls=301, max_unique_share=0.1) == set()  # too few urls to call it a trap
    assert table.column("host").to_pylist() == sorted(rows)
    assert {host_of(doc["url"]) for doc in read_jsonl_zst(docs)} == set(rows)


def test_host_of_survives_urls_without_a_host():
    assert host_of("https://WWW.Example.org:8443/a?b") == "www.example.org"
    assert host_of(None) == "" and host_of("") == "" and host_of("mailto:x@y.z") == ""
    assert host_of("http://[::1/broken") == ""


def test_signatures_scored_before_the_host_columns_are_refused_with_the_fix(tmp_path):
    """A part scored by an older tokenmill has no host or url hash beside its signatures: the job
    says which file and how to score it again, instead of failing on a missing column, and writes
    nothing."""
    old = tmp_path / "sig.parquet"
    pq.write_table(pa.table({"doc_id": ["a"], "url_key": pa.array([1], pa.uint64())}), old)
    with pytest.raises(ValueError, match=r"sig\.parquet has no host, url_hash column.*--forcerun score"):
        run(MPI.COMM_SELF, [ClusterPart("web", "s1", "p0", str(old), str(tmp_path / "dedup.parquet"))],
            schema_settings(ClusterSettings, "minhash"), str(tmp_path / "hosts.parquet"))
    assert not (tmp_path / "hosts.parquet").exists() and not (tmp_path / "dedup.parquet").exists()
