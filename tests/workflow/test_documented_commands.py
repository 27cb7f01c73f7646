"""Every command the documentation shows (README.md and the pages of docs/) works from the
README's set-up: in the virtualenv that `make demo` built from requirements.txt alone (no test
packages), from the root of the checkout it ran in, after that run."""

from __future__ import annotations

import hashlib
import json
import re
import shutil

import pytest
import yaml

from tests.conftest import REPO, SLURM_DRY_RUN, dry_run_printed, run_as_demo_user
from tokenmill.io import read_json

MANIFEST = "results/shards/demo-v0/manifest.json"
TOMBSTONE = 'python -m tokenmill tombstone --source S --reason "TD-17" MANIFEST... [--raw FILE...]'
# Documented commands that other tests run as documented (with a cluster, a config of their own, or a
# benchmark's own sizes), so this file does not repeat them.
RUN_ELSEWHERE = {
    "make demo": "tests/conftest.py reference_run (this file's run)",
    "make test": ".ci/run",
    "make test-unit": ".ci/run (make test runs the unit tier with the others)",
    'make test-unit PYTEST_ARGS="-k robots"': ".ci/run (make test runs the unit tier with the others)",
    "snakemake results/plan/parts.tsv": "tests/workflow/test_setup.py, from a checkout's root",
    "snakemake ablate": "tests/workflow/test_ablate.py, from a checkout's root beside the demo's run",
    "snakemake ablate -n": "tests/workflow/test_ablate.py, from a checkout's root beside the demo's run",
    "python -m tokenmill train-extractor": "tests/unit/test_blockml.py (twice on a subset of the pages, same bytes)",
    "python -m tokenmill train-naturalness": "tests/unit/test_naturalness.py (the committed model's bytes, and its pin)",
    "snakemake --configfile my.yaml --cores all": "tests/workflow/test_snapshots.py, from a checkout's root",
    "sbatch profiles/slurm/head.sbatch": "tests/slurm/test_slurm.py::test_head_job_dry_run_through_sbatch",
    "snakemake --profile profiles/slurm --rerun-incomplete": "tests/slurm/test_slurm.py, from a checkout's root",
    "python -m tokenmill plan-cost my.yaml --cores 4096": "tests/workflow/test_cost.py",
    "python -m tokenmill calibrate results --out my_rates.json": "tests/workflow/test_cost.py",
    "python -m tokenmill plan-cost my.yaml --rates my_rates.json": "tests/workflow/test_cost.py",
    "python -m tokenmill similar wget-2024-04-25 515905325df2d4e8260cf44496252be4": "tests/workflow/test_similar.py",
}


def documentation_pages() -> list:
    """README.md and the pages of docs/."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def documented_commands() -> set[str]:
    """The shell commands of the documentation: lines of its pages' code blocks and inline code
    spans that start with a command of this project, comments left out."""
    return set().union(*(page_commands(page.read_text(encoding="utf-8")) for page in documentation_pages()))


def page_commands(text: str) -> set[str]:
    """The shell commands of one Markdown page."""
    blocks = re.findall(r"^```[a-z]*\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)
    lines = [line for block in blocks for line in block.splitlines()]
    spans = re.findall(r"`([^`]+)`", re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL))
    commands = set()
    for line in lines + spans:
        command = " ".join(line.split("#")[0].split())
        if re.match(r"(make|snakemake|sbatch|sha256sum|python -m tokenmill) ", command + " "):
            commands.add(command)
    return commands


@pytest.fixture(scope="module")
def demo(reference_run):
    """Runs a command as a user of the demo's virtualenv does: activated, from the root."""
    def run(*command: str) -> str:
        return run_as_demo_user(reference_run, list(command), reference_run)
    return run


def pinned_recipe(root, tmp_path, name: str = "recipe.yaml") -> str:
    """config/<name> when it pins this run's manifest (the demo's bytes on this machine); else a
    copy re-pinned as docs/loader.md says for a run that differs."""
    manifest = root / MANIFEST
    recipe = yaml.safe_load((root / "config" / name).read_text())
    digest = hashlib.sha256(manifest.read_bytes()).hexdigest()
    if recipe["manifest_sha256"] == digest:
        return f"config/{name}"
    recipe.update(manifest_sha256=digest, tokenizer_sha256=read_json(manifest)["tokenizer"]["sha256"])
    path = tmp_path / name
    path.write_text(yaml.safe_dump(recipe))
    return str(path)


def test_the_demo_environment_lacks_the_test_packages(demo):
    """Otherwise this file would prove nothing about the README's set-up."""
    for module in ("pytest", "megatron.core"):
        with pytest.raises(AssertionError, match="ModuleNotFoundError"):
            demo("python", "-c", f"import {module}")


def test_every_documented_command_runs_from_the_demo_environment(demo, reference_run, fresh_dry_run, tmp_path):
    recipe, long_recipe = pinned_recipe(reference_run, tmp_path), pinned_recipe(reference_run, tmp_path, "recipe-long.yaml")
    export = tmp_path / "export"  # not into the shared run's results
    shards = tmp_path / "shards"  # tombstone deletes shards: it gets a copy of the version
    shutil.copytree(reference_run / "results/shards/demo-v0", shards / "demo-v0")
    checks = {
        "snakemake -n": lambda out: "Nothing to be done" in out,
        "snakemake --cores all": lambda out: "Nothing to be done" in out,
        "snakemake --unlock": lambda out: "Unlocked working directory" in out,
        # nothing new since make demo: the listings stay as they are
        "python -m tokenmill relist config/config.yaml":
            lambda out: "aeb_articles/built-2026-11-29: 4 files in 2 parts; 0 new files in 0 new parts" in out,
        # before a run, as users inspect the DAG: every job, bundled into groups without a cycle
        SLURM_DRY_RUN:
            lambda out: "This was a dry-run" in out and re.search(r"judge\s+23", out),
        "snakemake --report report.html": lambda out: (reference_run / "report.html").stat().st_size > 100_000,
        "snakemake --rulegraph": lambda out: "digraph snakemake_dag" in out,
        f"sha256sum {MANIFEST}": lambda out: out.startswith(hashlib.sha256(
            (reference_run / MANIFEST).read_bytes()).hexdigest()),
        "python -m tokenmill replay config/recipe.yaml": lambda out: "main" in out and "anneal" in out,
        "python -m tokenmill lineage config/recipe.yaml --step N --rank R --world W --sample S --position P":
            lambda out: json.loads(out)["doc_id"],
        "python -m tokenmill megatron-blend config/recipe.yaml --phase P": lambda out: "results/shards/demo-v0" in out,
        # the long stage: chains of aeb_articles and the code repositories kept whole, 60 % long within each source
        "python -m tokenmill replay config/recipe-long.yaml":
            lambda out: "groups kept whole, cu_seqlens per group" in out and "aeb_articles[long]" in out,
        "python -m tokenmill export-groups config/recipe-long.yaml --phase long --out results/export/long":
            lambda out: str(export) in out and read_json(export / "export.json")["phase"] == "long",
        "python -m tokenmill manifest-diff OLD NEW [--json]": lambda out: json.loads(out)["removed"] == [],
        TOMBSTONE:
            lambda out: read_json(shards / "demo-v0" / "tombstones.json")["tombstones"],
    }
    as_run = {
        "python -m tokenmill replay config/recipe.yaml": ["python", "-m", "tokenmill", "replay", recipe],
        "python -m tokenmill lineage config/recipe.yaml --step N --rank R --world W --sample S --position P":
            ["python", "-m", "tokenmill", "lineage", recipe, "--step", "3", "--rank", "1", "--world", "3",
             "--sample", "0", "--position", "17"],
        "python -m tokenmill megatron-blend config/recipe.yaml --phase P":
            ["python", "-m", "tokenmill", "megatron-blend", recipe, "--phase", "anneal"],
        "python -m tokenmill replay config/recipe-long.yaml": ["python", "-m", "tokenmill", "replay", long_recipe],
        "python -m tokenmill export-groups config/recipe-long.yaml --phase long --out results/export/long":
            ["python", "-m", "tokenmill", "export-groups", long_recipe, "--phase", "long", "--out", str(export)],
        "python -m tokenmill manifest-diff OLD NEW [--json]":
            ["python", "-m", "tokenmill", "manifest-diff", MANIFEST, MANIFEST, "--json"],
        TOMBSTONE:
            ["python", "-m", "tokenmill", "tombstone", "--source", "govuk", "--reason", "TD-17",
             str(shards / "demo-v0" / "manifest.json")],
    }
    documented = documented_commands()
    assert documented - set(checks) - set(RUN_ELSEWHERE) == set(), "a documented command that no test runs"
    assert set(checks) <= documented, "a command the documentation no longer shows"
    for command, check in checks.items():
        if command == SLURM_DRY_RUN:  # run from a fresh copy's root, once for the tests that read it
            output = dry_run_printed(fresh_dry_run)
        else:
            output = demo(*as_run.get(command, command.split()))
        assert check(output), f"{command}: unexpected output\n{output[-3000:]}"
