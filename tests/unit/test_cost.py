"""The cost plan: rates fitted from a run's benchmark files, and the plan a user reads before
submitting (jobs, sbatch calls, documents, core-hours, bytes) for a config of 100,000 files."""

from __future__ import annotations

import copy
import json
import math
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from tests.sample_data import REPO
from tokenmill.__main__ import main
from tokenmill.config import validate
from tokenmill.cost import (FED_WORKERS, calibrate, fit_line, format_plan, plan_cost, read_at_scale, read_benchmark,
                            sbatch_calls)
from tokenmill.io import read_json
from tokenmill.layout import STAGES
from tokenmill.plan import PLAN_COLUMNS, Plan, list_inputs, write_plan
from tokenmill.select.thresholds import largest_file_bytes, thresholds_policy

BENCH_HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"
ARRAYS = {"slurm-array-jobs": "extract,score,judge,tokenize", "slurm-array-limit": 1000,
          "set-resources": {"score_quality_encoder": {"slurm_partition": "gpu", "gpu": 1}}}
BUNDLED_RATES = REPO / "config" / "cost_rates.json"
WARC_SIZES = {"a.warc.gz": 1000, "b.warc.gz": 3000, "c.warc.gz": 5000, "d.warc.gz": 9000}
JSONL_SIZES = {"x.jsonl": 2000, "y.jsonl": 6000}


def config_for(root: Path) -> dict:
    return validate(user_config(root))


def user_config(root: Path) -> dict:
    """Two sources, one part per file: web (WARC, two snapshots) and corpus (JSONL)."""
    return {"version": "v1", "parts": {"target_bytes": 10**12, "max_files": 1}, "sources": {
        "web": {"kind": "warc", "tier": "crawl", "license_id": "x", "snapshots": {
            "s1": [str(root / "in/web/[ab].warc.gz")], "s2": [str(root / "in/web/[cd].warc.gz")]}},
        "corpus": {"kind": "jsonl", "tier": "licensed", "license_id": "y",
                   "snapshots": {"v1": [str(root / "in/corpus/*.jsonl")]}}}}


def write_bench(path: Path, seconds: float, cpu: float | str, rss: float = 100.0) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(BENCH_HEADER + f"{seconds}\t0:00:01\t{rss}\t1\t1\t1\t0\t0\t0\t{cpu}\n")


def write_bytes(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)


@pytest.fixture
def run(tmp_path) -> tuple[Path, dict]:
    """A finished run, made up so that every cost is a known line: extract costs 0.5 + 0.001 core-s
    per input byte on WARC (0.2 + 0.0001 on JSONL); score 2 + 0.01 core-s per document and writes
    100 bytes per document; minhash_cluster 1 + 0.1 core-s per document of its snapshot;
    train_tokenizer (versioned, global) ended before Snakemake's first sample (cpu_time NA)."""
    for folder, sizes in (("web", WARC_SIZES), ("corpus", JSONL_SIZES)):
        for name, size in sizes.items():
            write_bytes(tmp_path / "in" / folder / name, size)
    config = config_for(tmp_path)
    results = tmp_path / "results"
    listings = list_inputs(config, str(results / "plan"))
    plan = Plan(listings, 2, {kind: f"results/{kind}/{{source}}/{{snapshot}}/{{part}}" for kind in PLAN_COLUMNS[5:]})
    write_plan(plan.rows(), str(results / "plan/parts.tsv"))
    bench = results / "benchmarks"
    for part in plan.parts:
        docs = part.bytes // (100 if part.kind == "warc" else 10)
        where = f"{part.source}/{part.snapshot}/{part.part}"
        (results / "extract" / "stats" / f"{where}.json").parent.mkdir(parents=True, exist_ok=True)
        (results / "extract" / "stats" / f"{where}.json").write_text(json.dumps({"docs": docs, "records": {"response": 99}}))
        fixed, rate = (0.5, 0.001) if part.kind == "warc" else (0.2, 0.0001)
        write_bench(bench / "extract" / f"{where}.tsv", 1 + part.bytes / 1000, fixed + rate * part.bytes)
        write_bench(bench / "score" / f"{where}.tsv", 3, 2 + 0.01 * docs)
        write_bytes(results / "score/langid" / f"{where}.parquet", 100 * docs)
    for (source, snapshot), parts in plan.by_snapshot.items():
        docs = sum(part.bytes // (100 if part.kind == "warc" else 10) for part in parts)
        write_bench(bench / "minhash_cluster" / source / f"{snapshot}.tsv", 2, 1 + 0.1 * docs)
    for (source, snapshot, chunk), parts in plan.chunks.items():  # the encoder: 3 + 0.02 s per document
        docs = sum(part.bytes // (100 if part.kind == "warc" else 10) for part in parts)
        where = f"{source}/{snapshot}/chunk-{chunk}"
        write_bench(bench / "score_quality_encoder" / f"{where}.tsv", 3 + 0.02 * docs, 1 + 0.01 * docs)
        (results / "score_quality_encoder" / where).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"doc_id": [str(n) for n in range(docs)]}),
                       results / "score_quality_encoder" / f"{where}.parquet")
        (results / "logs/score_quality_encoder" / where).parent.mkdir(parents=True, exist_ok=True)
        (results / "logs/score_quality_encoder" / f"{where}.log").write_text(
            'loading\n{"parts": 2, "documents": 1, "device": "cuda", "gpu": "NVIDIA H200"}\n')
    write_bench(bench / "train_tokenizer/v1.tsv", 0.4, "NA", rss=250)
    write_bytes(results / "train_tokenizer/v1/tokenizer.json", 1234)
    write_bench(bench / "retired_rule/web/s1.tsv", 1, 1)  # a rule the graph no longer has
    return tmp_path, config


def test_a_line_is_fitted_and_clamped_at_zero():
    assert fit_line([(10, 3.0), (20, 5.0), (40, 9.0)]) == {"fixed": 1.0, "per_unit": 0.2}
    assert fit_line([(7, 4.0)]) == {"fixed": 4.0, "per_unit": 0.0}  # one job: all fixed
    assert fit_line([(5, 2.0), (5, 4.0)]) == {"fixed": 3.0, "per_unit": 0.0}  # no spread in the driver
    assert fit_line([(10, 9.0), (20, 5.0)]) == {"fixed": 7.0, "per_unit": 0.0}  # cheaper when bigger: noise
    through_origin = fit_line([(10, 1.0), (20, 4.0), (30, 7.0)])  # the line would cut at -2
    assert through_origin == {"fixed": 0.0, "per_unit": pytest.approx(12 / 60, rel=1e-5)}  # the jobs' 12 s kept


def test_a_benchmark_without_cpu_time_counts_its_wall_seconds(tmp_path):
    write_bench(tmp_path / "b.tsv", 0.4, "NA", rss=250)
    assert read_benchmark(str(tmp_path / "b.tsv")) == {"wall_seconds": 0.4, "core_seconds": 0.4, "max_rss_mb": 250,
                                                     "cpu_time_sampled": False}
    write_bench(tmp_path / "b.tsv", 0.4, 0.0)  # one sample, taken before the program started
    assert read_benchmark(str(tmp_path / "b.tsv"))["core_seconds"] == 0.4


def test_calibration_recovers_each_stage_line_by_kind(run):
    root, _ = run
    rates = calibrate(str(root / "results"))
    stages = rates["stages"]
    extract = stages["extract"]["fits"]
    assert extract["warc"]["core_seconds"] == pytest.approx({"fixed": 0.5, "per_unit": 0.001})
    assert extract["jsonl"]["core_seconds"] == pytest.approx({"fixed": 0.2, "per_unit": 0.0001})
    assert extract["warc"]["wall_seconds"] == pytest.approx({"fixed": 1.0, "per_unit": 0.001})
    assert (extract["warc"]["jobs"], extract["jsonl"]["jobs"]) == (4, 2)
    score = stages["score"]["fits"]["all"]
    assert score["core_seconds"] == pytest.approx({"fixed": 2, "per_unit": 0.01})
    assert score["bytes_written"] == pytest.approx({"fixed": 0, "per_unit": 100})  # its outputs on disk
    assert stages["minhash_cluster"]["fits"]["all"]["core_seconds"] == pytest.approx({"fixed": 1, "per_unit": 0.1})
    assert stages["minhash_cluster"]["driver"] == "documents of the snapshot"
    tokenizer = stages["train_tokenizer"]["fits"]["all"]
    assert (tokenizer["core_seconds"]["fixed"], tokenizer["bytes_written"]["fixed"]) == (0.4, 1234)
    assert rates["documents_per_byte"] == {"jsonl": 0.1, "warc": 0.01}
    assert rates["run"] == {"runs": 1, "snapshots": 3, "parts": 6, "input_files": 6, "input_bytes": {"jsonl": 8000, "warc": 18000},
                            "documents": {"jsonl": 800, "warc": 180}}
    encoder = stages["score_quality_encoder"]
    assert encoder["fits"]["all"]["wall_seconds"] == pytest.approx({"fixed": 3, "per_unit": 0.02})
    assert encoder["device"] == rates["provenance"]["encoder_device"] == "cuda (NVIDIA H200)"
    assert rates["skipped_benchmarks"] == ["benchmarks/retired_rule/web/s1.tsv"]
    assert rates["provenance"]["cores"] == os.cpu_count() and rates["provenance"]["cpu"]


def test_several_runs_are_fitted_together(run, tmp_path):
    """A small run pins a stage's fixed cost and a large one its rate: calibrate fits each line
    over the jobs of every run it is given, and counts their documents and parts together."""
    root, _ = run
    second = tmp_path / "second"
    shutil.copytree(root / "results", second)
    points = []
    for stats in sorted((second / "extract" / "stats").rglob("*.json")):  # score costs 3x per document there
        docs = json.loads(stats.read_text())["docs"]
        write_bench(second / "benchmarks" / "score" / stats.relative_to(second / "extract" / "stats").with_suffix(".tsv"),
                    3, 2 + 0.03 * docs)
        points += [(docs, 2 + 0.01 * docs), (docs, 2 + 0.03 * docs)]
    rates = calibrate([str(root / "results"), str(second)])
    assert rates["stages"]["score"]["fits"]["all"]["core_seconds"] == pytest.approx(fit_line(points))
    assert rates["stages"]["score"]["jobs"] == 12 and rates["run"]["runs"] == 2
    assert rates["run"]["documents"] == {"jsonl": 1600, "warc": 360}
    assert rates["documents_per_byte"] == calibrate(str(root / "results"))["documents_per_byte"]
    assert len(rates["skipped_benchmarks"]) == 2  # the retired rule's file in each, named with its folder


def test_the_rates_file_is_the_same_bytes_for_the_same_run(run, tmp_path):
    root, _ = run
    for name in ("first", "second"):
        assert main(["calibrate", str(root / "results"), "--out", str(tmp_path / f"{name}.json")]) == 0
    assert (tmp_path / "first.json").read_bytes() == (tmp_path / "second.json").read_bytes()
    written = json.loads((tmp_path / "first.json").read_text())
    assert list(written) == sorted(written)


def test_the_bundled_rates_price_only_stages_of_the_graph():
    """A rule that left the graph (host_stats, now written by minhash_cluster) must leave the
    bundled rates with it: plan-cost would otherwise show a stage that no run has."""
    bundled = read_json(BUNDLED_RATES)["stages"]
    assert set(bundled) <= {stage.name for stage in STAGES if not stage.local}
    assert {"extract", "score", "minhash_cluster", "select", "write_shards"} <= set(bundled)


def test_planning_the_calibrated_config_gives_back_its_documents_and_core_seconds(run):
    root, config = run
    rates = calibrate(str(root / "results"))
    cost = plan_cost(config, list_inputs(config, str(root / "results/plan")), rates, ARRAYS, cores=4)
    assert cost["inputs"]["documents"] == pytest.approx(980)
    stages = {row["stage"]: row for row in cost["stages"]}
    # least squares with a free intercept: over the calibration's own jobs the sum is exact
    assert stages["extract"]["core_seconds"] == pytest.approx(4 * 0.5 + 0.001 * 18000 + 2 * 0.2 + 0.0001 * 8000)
    assert stages["score"]["core_seconds"] == pytest.approx(6 * 2 + 0.01 * 980)
    assert stages["minhash_cluster"]["core_seconds"] == pytest.approx(3 * 1 + 0.1 * 980)
    assert stages["judge"]["note"] == "not calibrated" and "judge" in cost["not_calibrated"]
    order = [row["stage"] for row in cost["stages"]]
    assert order.index("extract") < order.index("score") < order.index("judge") < order.index("tokenize")
    # each stage lasts its billed core-seconds over the cores or its longest job, one after another
    costed = [row for row in cost["stages"] if row["core_seconds"] is not None]
    assert all(row["billed_core_seconds"] >= row["core_seconds"] for row in costed)
    assert cost["wall_seconds"] == pytest.approx(sum(max(row["billed_core_seconds"] / 4, row["longest_job_seconds"])
                                                     for row in costed))


def test_a_job_lasts_its_core_seconds_over_the_cores_it_keeps_busy_and_bills_those_it_holds(run):
    """Under a profile that gives extract and score more CPUs than one job can feed, a job's wall
    time is its core-seconds over the workers its own process feeds, and the cluster bills every
    CPU it holds for that time; a job that outlasts its rule's run time in the profile is named."""
    root, config = run
    rates = calibrate(str(root / "results"))
    listings = list_inputs(config, str(root / "results/plan"))
    held = 4 * FED_WORKERS["score"]
    profile = {**ARRAYS, "set-threads": {"extract": 8, "score": held},
               "set-resources": {**ARRAYS["set-resources"], "minhash_cluster": {"runtime": 0.001}}}
    stages = {row["stage"]: row for row in plan_cost(config, listings, rates, profile, cores=64)["stages"]}
    extract, score = stages["extract"], stages["score"]
    assert extract["cores_per_job"] == extract["busy_cores_per_job"] == 8
    # no job shorter than its start: the fitted wall's fixed second (extract) and 3 seconds (score)
    extract_walls = [max((0.5 + 0.001 * size) / 8, 1) for size in WARC_SIZES.values()] + [
        max((0.2 + 0.0001 * size) / 8, 1) for size in JSONL_SIZES.values()]
    assert extract["longest_job_seconds"] == pytest.approx((0.5 + 0.001 * max(WARC_SIZES.values())) / 8)
    assert extract["billed_core_seconds"] == pytest.approx(8 * sum(extract_walls))
    assert (score["cores_per_job"], score["busy_cores_per_job"]) == (held, FED_WORKERS["score"])
    assert score["billed_core_seconds"] == pytest.approx(held * 3 * 6)
    # one process: its wall is its CPU time, or the calibration's wall where that is longer
    assert stages["minhash_cluster"]["over_runtime"] == pytest.approx(0.06)
    assert "LONGER than the profile's runtime" in format_plan(plan_cost(config, listings, rates, profile))


def test_rates_measured_at_scale_price_the_mpi_job_by_its_ranks_and_size_its_memory(run, tmp_path):
    """A benchmark's 1- and 2-rank runs of minhash_cluster replace the local run's per-document
    rate: the job keeps busy its ranks times the measured efficiency, each rank holds its share
    of the documents, and the plan names the ranks its memory needs and a node it would overflow."""
    root, config = run
    rates = calibrate(str(root / "results"))
    listings = list_inputs(config, str(root / "results/plan"))
    at_scale = {"format": 1, "stages": {"minhash_cluster": {"documents": 1000, "ranks": {
        "1": {"wall_seconds": 10.0, "peak_rss_mb": 1100.0}, "2": {"wall_seconds": 6.25, "peak_rss_mb": 600.0}}}}}
    config = {**config, "minhash": {**config["minhash"], "tasks": 4}}
    profile = {**ARRAYS, "cores": 4}
    cost = plan_cost(config, listings, rates, profile, cores=4, at_scale=at_scale, node_memory_gb=0.8)
    minhash = {row["stage"]: row for row in cost["stages"]}["minhash_cluster"]
    # per snapshot, 40, 140 and 800 documents: the local run's 1 core-second of start and 0.01 per document
    assert minhash["core_seconds"] == pytest.approx(3 + 0.01 * (40 + 140 + 800))
    assert minhash["busy_cores_per_job"] == pytest.approx(4 * 10.0 / (2 * 6.25))
    assert minhash["longest_job_seconds"] == pytest.approx((1 + 0.01 * 800) / 3.2)
    assert minhash["max_rss_mb"] == pytest.approx(100 + 1.0 * 800 / 4)  # base 100 MB, 1 MB per document per rank
    assert minhash["ranks_for_memory"] == 8 and minhash["over_memory"] == 800  # 200 MB per core, 100 of it the base
    text = format_plan(cost)
    assert "at least 8 ranks for memory" in text and "MORE memory than a node's 1 GB" in text
    without = {row["stage"]: row for row in plan_cost(config, listings, rates, profile, cores=4)["stages"]}
    assert without["minhash_cluster"]["core_seconds"] == pytest.approx(3 + 0.1 * 980)
    (tmp_path / "old.json").write_text(json.dumps({"format": 1, "stages": {"host_stats": {}}}))
    with pytest.raises(ValueError, match="host_stats is no stage of the workflow"):
        read_at_scale(str(tmp_path / "old.json"))


def test_documents_and_costs_grow_with_the_bytes_of_the_inputs(run, tmp_path):
    root, config = run
    rates = calibrate(str(root / "results"))
    bigger = tmp_path / "bigger"
    for folder, sizes in (("web", WARC_SIZES), ("corpus", JSONL_SIZES)):
        placeholders(bigger / "in" / folder, {name: size * 10 for name, size in sizes.items()})
    cost = plan_cost(config_for(bigger), list_inputs(config_for(bigger), str(bigger / "plan")), rates, ARRAYS)
    stages = {row["stage"]: row for row in cost["stages"]}
    assert cost["inputs"]["documents"] == pytest.approx(9800)
    assert stages["extract"]["core_seconds"] == pytest.approx(4 * 0.5 + 0.01 * 18000 + 2 * 0.2 + 0.001 * 8000)
    assert stages["score"]["core_seconds"] == pytest.approx(6 * 2 + 0.01 * 9800)


def placeholders(folder: Path, sizes: dict[str, int]) -> None:
    """Sparse files of the given sizes (no data written), as a crawl's WARCs stand in the tests."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, size in sizes.items():
        with open(folder / name, "wb") as handle:
            handle.truncate(size)


def test_a_source_kind_the_calibration_never_saw_is_named(run):
    root, config = run
    rates = calibrate(str(root / "results"))
    del rates["documents_per_byte"]["jsonl"]
    with pytest.raises(ValueError, match="no calibration for source kind jsonl"):
        plan_cost(config, list_inputs(config, str(root / "results/plan")), rates, ARRAYS)


def test_sbatch_calls_follow_the_profile():
    jobs = {"plan": 1, "extract": 2500, "score": 2500, "score_quality_encoder": 40, "cross_snapshot_index": 3,
            "select_thresholds": 3, "minhash_cluster": 3, "judge": 1}
    profile = {**ARRAYS, "groups": {"cross_snapshot_index": "steps", "select_thresholds": "steps",
                                    "score_quality_encoder": "gpu"}, "group-components": {"steps": 4, "gpu": 16}}
    calls = sbatch_calls(jobs, profile, None, components=lambda group: {"steps": 6, "gpu": 40}[group])
    assert calls["plan"] == (None, "local")
    assert calls["extract"][0] == calls["score"][0] == 3  # 2,500 tasks, 1,000 to an array
    assert calls["judge"][0] == 1  # an array rule with one job goes as a plain job
    assert calls["minhash_cluster"][0] == 3  # not an array: one per job
    assert calls["score_quality_encoder"][0] == 3  # 40 chunks, 16 to a bundle
    assert calls["cross_snapshot_index"][0] == 2 and calls["select_thresholds"] == (0, "in group steps")
    assert sbatch_calls(jobs, profile, 100, components=lambda group: 1)["extract"][0] == 25
    assert sbatch_calls(jobs, {}, None)["extract"][0] == 2500  # no arrays in the profile


@pytest.fixture(scope="module")
def snapshot_of_100000_files(tmp_path_factory, crawl_of_100000_files) -> tuple[Path, dict]:
    """One Common Crawl-sized snapshot: 100,000 sparse 1 GiB WARCs (no data written)."""
    root = tmp_path_factory.mktemp("cc")
    snapshots = {"CC-MAIN-2024-22": [str(crawl_of_100000_files / "*.warc.gz")]}
    config = validate({"version": "v1", "sources": {
        "cc": {"kind": "warc", "tier": "crawl", "license_id": "x", "snapshots": snapshots}}})
    return root, config


def test_a_snapshot_of_100000_files_is_costed_from_its_listing(snapshot_of_100000_files, run):
    root, config = snapshot_of_100000_files
    rates = calibrate(str(run[0] / "results"))
    listings = list_inputs(config, str(root / "plan"))
    cost = plan_cost(config, listings, rates, ARRAYS, cores=128)
    stages = {row["stage"]: row for row in cost["stages"]}
    parts = math.ceil(100_000 / (120 * 10**9 // (1 << 30)))  # default part: 120 GB, 111 such files
    assert cost["inputs"]["parts"] == parts == 901
    assert {name: stages[name]["jobs"] for name in ("extract", "score", "judge", "tokenize")} == dict.fromkeys(
        ("extract", "score", "judge", "tokenize"), parts)
    assert {name: stages[name]["sbatch"] for name in ("extract", "score", "judge", "tokenize")} == dict.fromkeys(
        ("extract", "score", "judge", "tokenize"), 1)
    assert stages["score_quality_encoder"]["jobs"] == math.ceil(parts / 4)
    assert stages["cross_snapshot_dedup"]["jobs"] == 0  # one snapshot: nothing older to probe
    assert stages["minhash_cluster"]["jobs"] == 1 and stages["cross_snapshot_index"]["jobs"] == 0
    assert stages["plan"]["sbatch"] is None
    assert cost["totals"]["jobs"] <= 20_000
    assert cost["inputs"]["documents"] == pytest.approx(100_000 * (1 << 30) * 0.01)
    encoder = stages["score_quality_encoder"]  # on a GPU in the profile: its wall seconds are GPU-seconds
    assert encoder["gpu_seconds"] == pytest.approx(encoder["jobs"] * 3 + 0.02 * cost["inputs"]["documents"], rel=1e-3)
    assert "measured on cuda (NVIDIA H200)" in encoder["note"]
    assert stages["extract"]["core_seconds"] == pytest.approx(parts * 0.5 + 0.001 * 100_000 * (1 << 30), rel=1e-3)
    # on the bundled rates, select_thresholds writes one file of sketches for each language lid.176
    # names, however many the documents (its calibrated bytes per document made it 395 GB)
    bundled = {row["stage"]: row for row in plan_cost(config, listings, read_json(BUNDLED_RATES), ARRAYS, cores=128)["stages"]}
    assert 0 < bundled["select_thresholds"]["bytes_written"] <= largest_file_bytes(176, thresholds_policy(config["select"])) < 10**7
    text = format_plan(cost)
    assert "100,000 files" in text and f"in {parts} parts" in text and "wall time on 128 cores" in text
    # a second plan reads the listing: no glob of 100,000 files
    assert not list_inputs(config, str(root / "plan"))[0].globbed


def slurm_plan(config: dict, root: Path, **settings) -> dict[str, dict]:
    """The plan of `config` with the bundled rates, the rates measured at scale and profiles/slurm,
    on 6,400 cores: its rows by stage, and the whole plan under "the plan"."""
    for path, value in settings.items():
        section = config
        *keys, last = path.split(".")
        for key in keys:
            section = section[key]
        section[last] = value
    profile = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())
    cost = plan_cost(config, list_inputs(config, str(root / "plan")), read_json(BUNDLED_RATES), profile, cores=6400,
                     at_scale=read_at_scale(str(REPO / "config/cost_at_scale.json")))
    return {**{row["stage"]: row for row in cost["stages"]}, "the plan": cost}


def test_a_snapshot_with_the_schema_defaults_plans_within_12_hours_and_every_job_fits(snapshot_of_100000_files):
    """A config that names one Common Crawl snapshot and nothing else: no job longer than its
    runtime in profiles/slurm or larger than a node, and under 12 hours of wall time on 6,400
    cores (11 days before: a 9.7-day encoder chunk, 2 ranks of 2 TB, one 9.7-hour probe)."""
    root, config = snapshot_of_100000_files
    stages = slurm_plan(copy.deepcopy(config), root)
    cost = stages.pop("the plan")
    assert not [name for name, row in stages.items() if row.get("over_runtime") or row.get("over_memory")]
    assert cost["wall_seconds"] <= 12 * 3600
    assert stages["minhash_cluster"]["ranks"] == stages["select"]["ranks"] >= 1000  # minhash.tasks: auto
    assert stages["minhash_cluster"]["max_rss_mb"] <= 4000  # a core's share of a 256 GB, 64-core node
    encoder = stages["score_quality_encoder"]
    assert "2,700 documents/s a GPU (--gpu-docs-per-second, not measured)" in encoder["note"]


def test_a_later_snapshot_is_probed_by_a_job_per_part(tmp_path):
    """Two snapshots of 10,000 files: the later one's parts are each probed against the earlier
    one's generation by a job of their own (one 9.7-hour job per snapshot before), and only the
    earlier snapshot, which a later one probes, gets an index generation."""
    placeholders(tmp_path / "in", {f"CC-{number:05d}.warc.gz": 1 << 30 for number in range(20_000)})
    config = validate({"version": "v1", "sources": {"cc": {
        "kind": "warc", "tier": "crawl", "license_id": "x", "snapshots": {
            "CC-MAIN-2024-10": [str(tmp_path / "in/CC-0*.warc.gz")], "CC-MAIN-2024-18": [str(tmp_path / "in/CC-1*.warc.gz")]}}},
        "minhash": {"cross_snapshot": {"enabled": True}}})
    stages = slurm_plan(config, tmp_path)
    later = math.ceil(10_000 / (120 * 10**9 // (1 << 30)))
    assert stages["cross_snapshot_dedup"]["jobs"] == later and stages["cross_snapshot_index"]["jobs"] == 1
    assert stages["cross_snapshot_dedup"]["longest_job_seconds"] < 600 and stages["cross_snapshot_dedup"]["sbatch"] == 1


def test_a_job_over_its_runtime_or_a_node_names_the_setting_that_fits_it(snapshot_of_100000_files):
    root, config = snapshot_of_100000_files
    stages = slurm_plan(copy.deepcopy(config), root, **{"minhash.tasks": 2, "quality.encoder.parts_per_job": 64,
                                                        "shards.parts_per_job": 64})
    advice = {name: row["advice"] for name, row in stages.items() if name != "the plan" and row.get("advice")}
    assert set(advice) == {"minhash_cluster", "select", "score_quality_encoder", "write_shards"}
    assert advice["minhash_cluster"].startswith("set minhash.tasks: auto (at least 1,")
    assert "fix: set minhash.tasks: auto" in format_plan(stages["the plan"])
    settings = {line.split(": ")[0].removeprefix("set "): int(line.split(": ")[1].replace(",", ""))
                for line in (advice["score_quality_encoder"], advice["write_shards"])}
    assert set(settings) == {"quality.encoder.parts_per_job", "shards.parts_per_job"}
    fixed = slurm_plan(copy.deepcopy(config), root, **{"minhash.tasks": "auto", **settings})
    assert not [name for name, row in fixed.items() if name != "the plan" and row.get("advice")]
    # the calibration's CPU rate where no GPU figure is given: the table says it is one
    cpu = plan_cost(config, list_inputs(config, str(root / "plan")), read_json(BUNDLED_RATES),
                    yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text()), cores=6400,
                    gpu_docs_per_second=None)
    encoder = {row["stage"]: row for row in cpu["stages"]}["score_quality_encoder"]
    assert "a CPU rate: --gpu-docs-per-second prices a GPU" in encoder["note"] and encoder["over_runtime"]


def test_plan_cost_command_prints_the_table_and_json(run, tmp_path, capsys):
    root, config = run
    rates = tmp_path / "rates.json"
    assert main(["calibrate", str(root / "results"), "--out", str(rates)]) == 0
    (tmp_path / "config.yaml").write_text(json.dumps(user_config(root)))
    profile = tmp_path / "profile"
    profile.mkdir()
    (profile / "config.yaml").write_text(json.dumps(ARRAYS))
    options = ["--rates", str(rates), "--profile", str(profile), "--results", str(root / "results"), "--cores", "8"]
    capsys.readouterr()
    assert main(["plan-cost", str(tmp_path / "config.yaml"), *options]) == 0
    text = capsys.readouterr().out
    assert "wall time on 8 cores" in text and "stage-barrier estimate" in text
    assert main(["plan-cost", str(tmp_path / "config.yaml"), *options, "--json"]) == 0
    cost = json.loads(capsys.readouterr().out)
    assert cost["inputs"]["parts"] == 6 and cost["cores"] == 8


def test_a_job_that_reads_one_part_at_a_time_needs_the_memory_of_its_largest_part(run):
    """select_thresholds measured with `documents_per_part`: its memory follows the largest part
    (the corpus' 600 documents) in each of its workers, not the snapshot's documents."""
    root, config = run
    for (source, snapshot), _ in Plan(list_inputs(config, str(root / "results/plan")), 2, {}).by_snapshot.items():
        write_bench(root / "results/benchmarks/select_thresholds/v1" / source / f"{snapshot}.tsv", 1, 0.5)
    rates = calibrate(str(root / "results"))
    listings = list_inputs(config, str(root / "results/plan"))
    measured = {"documents": 1000, "core_seconds": 2.0, "base_rss_mb": 50.0, "peak_rss_mb": 250.0}
    rows = {}
    for name, entry in (("snapshot", measured), ("part", {**measured, "documents_per_part": 100})):
        cost = plan_cost(config, listings, rates, ARRAYS, cores=4, node_memory_gb=1,
                         at_scale={"format": 1, "stages": {"select_thresholds": entry}})
        rows[name] = {row["stage"]: row for row in cost["stages"]}["select_thresholds"]
    # the local run's 100 MB, and 0.2 MB per document of the largest snapshot, or 2 MB per document of
    # the largest part in each of its 2 worker processes (the rule's threads)
    assert rows["snapshot"]["max_rss_mb"] == pytest.approx(100 + 0.2 * 800)
    assert rows["part"]["max_rss_mb"] == pytest.approx(100 + 2.0 * 600 * 2)
    assert "over_memory" not in rows["snapshot"] and rows["part"]["over_memory"] == 1000
    # its 2 worker processes (the rule's threads) at 0.8 of a worker's speed each
    workers = {**measured, "workers": {"1": {"wall_seconds": 10.0}, "2": {"wall_seconds": 6.25}}}
    cost = plan_cost(config, listings, rates, ARRAYS, cores=4, at_scale={"format": 1, "stages": {"select_thresholds": workers}})
    parallel = {row["stage"]: row for row in cost["stages"]}["select_thresholds"]
    assert (parallel["cores_per_job"], parallel["busy_cores_per_job"]) == (2, pytest.approx(1.6))
    assert parallel["longest_job_seconds"] == pytest.approx(rows["snapshot"]["longest_job_seconds"] / 1.6)
    assert "0.80 of a worker's speed per worker" in format_plan(cost)


def test_chains_of_a_snapshot_are_priced_as_the_graph_makes_their_jobs(snapshot_of_100000_files):
    """chains.sources naming the snapshot's source: a topic model per snapshot, a vectors job per
    part, one MPI job per snapshot on minhash.tasks' ranks, none over its runtime or a node, within
    the issue's 2 hours on 6,400 cores."""
    root, config = snapshot_of_100000_files
    stages = slurm_plan(copy.deepcopy(config), root, **{"chains.sources": ["cc"], "chains.centroids": 8192})
    parts = math.ceil(100_000 / (120 * 10**9 // (1 << 30)))
    assert (stages["chain_model"]["jobs"], stages["chain_vectors"]["jobs"], stages["chain_groups"]["jobs"]) == (1, parts, 1)
    chain_rows = [stages[name] for name in ("chain_model", "chain_vectors", "chain_groups")]
    assert not [row["stage"] for row in chain_rows if row.get("over_runtime") or row.get("over_memory")]
    assert stages["chain_groups"]["ranks"] == stages["minhash_cluster"]["ranks"]
    # chain_model learns from 2,000 documents a part, not the snapshot's billions
    assert stages["chain_model"]["core_seconds"] < stages["chain_vectors"]["core_seconds"] / 100
    print({row["stage"]: (row["documents"], row["core_seconds"] / 3600, row["longest_job_seconds"] / 3600) for row in chain_rows})
    assert sum(row["longest_job_seconds"] for row in chain_rows) <= 2 * 3600
