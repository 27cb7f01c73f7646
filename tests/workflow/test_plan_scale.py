"""Planning a Common Crawl snapshot with the settings a newcomer gets: 100,000 WARC files of
1 GB (sparse placeholders: no data is written), dry runs only. Counts and sizes are asserted
here; the time and memory of planning are bench/bench_plan.py's."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from tests.conftest import CRAWL_FILE_BYTES, CRAWL_FILES, job_counts, run_snakemake, write_config
from tokenmill.config import load_schema
from tokenmill.plan import LISTING_MARK, listing_path

# The shared 100,000 files and one of this test's own, in a folder of its own where a late file arrives
FILES = CRAWL_FILES + 1
PER_PART_RULES = {"extract", "score", "judge", "tokenize"}
MAX_JOBS = 20_000


@pytest.fixture(scope="module")
def crawl(tmp_path_factory, crawl_of_100000_files):
    root = tmp_path_factory.mktemp("crawl")
    warcs = root / "warc"
    warcs.mkdir()
    with open(warcs / "CC-MAIN-20240522-own.warc.gz", "wb") as handle:
        handle.truncate(CRAWL_FILE_BYTES)
    write_config(root, {"sources": {"common_crawl": {
        "kind": "warc", "tier": "crawl", "license_id": "CC-TOU",
        "snapshots": {"CC-MAIN-2024-22": [str(crawl_of_100000_files / "*.warc.gz"), str(warcs / "*.warc.gz")]}}}})
    return root


def planned_parts(files: int) -> int:
    """The parts that the schema's default settings make of `files` WARCs of CRAWL_FILE_BYTES."""
    defaults = {key: spec["default"] for key, spec in load_schema()["properties"]["parts"]["properties"].items()}
    return math.ceil(files / min(defaults["max_files"], defaults["target_bytes"] // CRAWL_FILE_BYTES))


def plan_line(result: subprocess.CompletedProcess) -> str:
    summary = [line for line in result.stderr.splitlines() if line.startswith("tokenmill plan:")]
    assert len(summary) == 1, result.stderr[-3000:]
    return summary[0]


def dry_run(root) -> tuple[dict[str, int], str]:
    """The job counts of a dry run, and the plan line the workflow printed."""
    result = run_snakemake(root, "-n", "--quiet", "rules")
    return job_counts(result.stdout), plan_line(result)


def planned(root) -> str:
    """The plan line alone: the workflow parsed (which plans) without building the DAG of jobs."""
    return plan_line(run_snakemake(root, "--list-rules"))


def test_a_snapshot_of_100000_files_is_few_jobs_and_its_listing_is_read_once(crawl):
    parts = planned_parts(FILES)
    counts, summary = dry_run(crawl)
    assert {rule for rule, count in counts.items() if count == parts} == PER_PART_RULES
    # the snapshot's shards are written by one job per shards.parts_per_job parts, not by one job
    parts_per_shard_job = load_schema()["properties"]["shards"]["properties"]["parts_per_job"]["default"]
    assert counts["write_shards"] == math.ceil(parts / parts_per_shard_job) > 100
    assert sum(counts.values()) <= MAX_JOBS and parts <= 1000
    assert f"{FILES} input files in {parts} parts" in summary and "listings: 0 read, 1 globbed" in summary
    listing = crawl / listing_path("results/plan", "common_crawl", "CC-MAIN-2024-22")
    lines = listing.read_text().splitlines()
    assert lines[0].startswith(LISTING_MARK) and len(lines) == 2 + FILES
    listed = listing.stat().st_mtime_ns

    # a file that arrives later is not planned until the snapshot is listed again: the second
    # parse read the listing instead of globbing 100,000 files
    late = crawl / "warc" / "CC-MAIN-20240522-99999x.warc.gz"
    late.write_bytes(b"")
    assert f"{FILES} input files in {parts} parts" in (again := planned(crawl)) and "listings: 1 read, 0 globbed" in again
    assert listing.stat().st_mtime_ns == listed
    relisted = subprocess.run([sys.executable, "-m", "tokenmill", "relist", "config.yaml"], cwd=crawl,
                              capture_output=True, text=True, check=True)
    assert f"{FILES + 1} files in {parts + 1} parts; 1 new files in 1 new parts" in relisted.stdout
    # the first dry run showed one job of each per-part rule per planned part
    summary = planned(crawl)
    assert f"{FILES + 1} input files in {parts + 1} parts" in summary and "listings: 1 read, 0 globbed" in summary
    assert listing.read_text().splitlines()[:2 + FILES] == lines  # no listed part changed
