"""The cost plan against the demo run it was calibrated on (the reference run: no graph run of
its own). Jobs must be the jobs Snakemake makes, documents the documents extract wrote, and
core-seconds and bytes what the benchmark files and the outputs say."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
import yaml

from tests.conftest import REPO, dry_run_printed, job_counts, repository_copy, run_snakemake
from tests.sample_data import demo_config
from tokenmill.config import validate
from tokenmill.cost import job_cores, measure_run, measured_totals, mpi_ranks


def tokenmill(root, *args: str) -> str:
    """`python -m tokenmill ...` from the run's root, as a user types it there."""
    result = subprocess.run([sys.executable, "-m", "tokenmill", *args], cwd=root, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, f"tokenmill {' '.join(args)} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def demo_cost(reference_run, tmp_path_factory) -> dict:
    """The demo config costed with rates calibrated on the demo's own run (written outside it)."""
    rates = tmp_path_factory.mktemp("rates") / "rates.json"
    tokenmill(reference_run, "calibrate", "results", "--out", str(rates))
    return json.loads(tokenmill(reference_run, "plan-cost", "config/config.yaml", "--rates", str(rates), "--json"))


def test_every_stage_has_the_jobs_snakemake_makes(fresh_dry_run, demo_cost):
    # every job of the graph, as the dry run of the demo config before its first run lists them
    expected = job_counts(dry_run_printed(fresh_dry_run))
    expected.pop("all")
    assert {row["stage"]: row["jobs"] for row in demo_cost["stages"] if row["jobs"]} == expected


def test_each_job_is_billed_for_the_threads_snakemake_gives_it(fresh_dry_run):
    """The CPUs the cost plan bills a job for are the threads the SLURM profile's dry run gives
    it (printed where more than one), times the ranks of the MPI rule."""
    config = validate(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))
    profile = yaml.safe_load((REPO / "profiles" / "slurm" / "config.yaml").read_text())
    threads: dict[str, set[int]] = {}
    for block in re.split(r"\n\s*\n", dry_run_printed(fresh_dry_run)):
        rule = re.search(r"^\s*rule (\w+):", block, flags=re.MULTILINE)
        if rule:
            count = re.search(r"^\s*threads: (\d+)", block, flags=re.MULTILINE)
            threads.setdefault(rule.group(1), set()).add(int(count.group(1)) if count else 1)
    assert threads["extract"] == {64} and threads["tokenize"] == {2}
    ranks = {name: mpi_ranks(name, config) for name in threads}
    assert threads == {name: {job_cores(name, config, profile) // ranks.get(name, 1)} for name in threads}


def test_bundled_group_jobs_are_the_sbatch_calls_of_the_slurm_profile(fresh_dry_run, demo_cost):
    """Rules the profile bundles (groups, group-components) go out as one sbatch per group job:
    the SLURM profile's dry run lists them."""
    printed = dry_run_printed(fresh_dry_run)
    group_jobs = {group: len(re.findall(rf"Group job {group} ", printed)) for group in set(
        re.findall(r"Group job (\w+) ", printed))}
    predicted = {}
    for row in demo_cost["stages"]:
        if row["submission"].startswith("group "):
            predicted[row["submission"].split()[1].rstrip(",")] = row["sbatch"]
    assert predicted == group_jobs


def test_documents_core_seconds_and_bytes_are_those_of_the_calibration_run(reference_run, demo_cost):
    measured = measured_totals(measure_run(str(reference_run / "results")))
    assert set(measured) == {row["stage"] for row in demo_cost["stages"] if row["core_seconds"] is not None}
    assert not demo_cost["not_calibrated"], "a non-local rule of the demo has no benchmark file"
    # documents per input byte come from this run: its totals come back, up to 6-digit rounding
    assert demo_cost["inputs"]["documents"] == pytest.approx(measured["extract"]["documents"], rel=1e-4)
    # A stage's calibrated line sums to its jobs' seconds (fit_line's clamps keep the total), so a
    # stage's total comes back but for the plan's documents per job, estimated from input bytes
    # (7 % off for score_quality_encoder's chunks); 25 % leaves room for another machine's noise.
    # A stage priced per document at scale (config/cost_at_scale.json) keeps only the local run's
    # fixed cost: its slope on jobs of a few documents is noise (cross_snapshot_dedup's was 0.05 s a
    # document in one CI run against 4 µs at scale, 31 % of its total), so only its bytes are held.
    # The total over stages must hold to 5 %.
    for row in demo_cost["stages"]:
        if row["core_seconds"] is not None:
            truth = measured[row["stage"]]
            if not row.get("at_scale"):
                assert row["core_seconds"] == pytest.approx(truth["core_seconds"], rel=0.25), row["stage"]
            assert row["bytes_written"] == pytest.approx(truth["bytes_written"], rel=0.25), row["stage"]
    for measure in ("core_seconds", "bytes_written"):
        total = sum(stage[measure] for stage in measured.values())
        assert demo_cost["totals"][measure] == pytest.approx(total, rel=0.05), measure


def test_the_bundled_rates_predict_the_demo_documents(reference_run):
    """config/cost_rates.json was calibrated on another demo run (another machine's seconds, so
    only the documents, which depend on the sample alone, are compared)."""
    cost = json.loads(tokenmill(reference_run, "plan-cost", "config/config.yaml", "--json"))
    measured = measured_totals(measure_run(str(reference_run / "results")))
    assert cost["inputs"]["documents"] == pytest.approx(measured["extract"]["documents"], rel=0.02)
    assert not cost["not_calibrated"]


def test_the_documented_cost_commands_run_from_the_demo_root(reference_run, tmp_path):
    """The cost-plan commands as docs/cost-plan.md shows them, from the demo's root, with the demo's
    config for the user's my.yaml and the rates file written outside the run."""
    page = (REPO / "docs" / "cost-plan.md").read_text(encoding="utf-8")
    commands = re.findall(r"^(python -m tokenmill (?:calibrate|plan-cost) [^#\n]*?)\s*(?:#.*)?$", page, re.MULTILINE)
    assert len(commands) == 3, commands
    for command in sorted(commands, key=lambda line: "plan-cost" in line):  # calibrate first
        arguments = command.replace("my.yaml", "config/config.yaml").replace("my_rates.json", str(tmp_path / "r.json"))
        printed = tokenmill(reference_run, *arguments.split()[3:])
        assert ("wall time on" in printed) if "plan-cost" in command else "rates of" in printed


def test_the_gpu_engines_jobs_are_those_snakemake_makes(tmp_path):
    """The other branch of every engine choice (tokenmill.engine_rules): the demo config with its PDF
    source on the vllm OCR engine and its rewrites and annotate on a vllm generator. The cost plan
    of that config, before its first run, has the jobs of its dry run: ocr_vllm, generate_vllm and
    annotate_vllm instead of ocr, generate, annotate and train_generator."""
    root = repository_copy(tmp_path / "checkout")
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    config = demo_config()
    config["sources"]["pdf_samples"]["ocr"] = "vllm"
    config.setdefault("extract", {})["ocr"] = {"model": str(model)}
    config["synthetic"]["generators"]["big"] = {"engine": "vllm", "path": str(model),
                                                "knowledge_cutoff": "2024-01-01T00:00:00Z"}
    config["synthetic"]["annotate"]["generator"] = "big"
    config["sources"]["aeb_rephrased"]["synthetic"]["generator"] = "big"
    (root / "gpu.yaml").write_text(yaml.safe_dump(config))
    expected = job_counts(run_snakemake(root, "-n", "--configfile", "gpu.yaml").stdout)
    expected.pop("all")
    assert {"ocr_vllm", "generate_vllm", "annotate_vllm"} <= set(expected)
    assert not {"ocr", "generate", "annotate", "train_generator"} & set(expected)
    planned = json.loads(tokenmill(root, "plan-cost", "gpu.yaml", "--json"))
    assert {row["stage"]: row["jobs"] for row in planned["stages"] if row["jobs"]} == expected
