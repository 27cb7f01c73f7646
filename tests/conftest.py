"""Shared fixtures: paths to the bundled sample and a helper to run the workflow."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample"
SNAKEFILE = REPO / "Snakefile"


def sample(*parts: str) -> str:
    return str(SAMPLE.joinpath(*parts))


def written_twice(tmp_path: Path, write) -> tuple[Path, object]:
    """Call write(path) for two paths; assert the files are byte-identical (determinism) and
    return the first path and what the first call returned."""
    first, second = tmp_path / "written-1.parquet", tmp_path / "written-2.parquet"
    result = write(str(first))
    write(str(second))
    assert first.read_bytes() == second.read_bytes(), "the same input gave different bytes"
    return first, result


def gold_articles() -> dict[str, dict]:
    """The 181 real article pages' gold records (url, articleBody, ...) by page hash."""
    with gzip.open(sample("gold", "aeb-ground-truth.json.gz"), "rt", encoding="utf-8") as handle:
        return json.load(handle)


def lingua_records(lang: str) -> list[dict]:
    """The bundled lingua JSONL documents of one language (four languages share a file)."""
    records = []
    for path in sorted((SAMPLE / "jsonl" / "lingua-sentences").glob("lingua-*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            records += [r for r in map(json.loads, handle) if r["lang_hint"] == lang]
    return records


def demo_config(**overrides) -> dict:
    """The demo config with input globs made absolute, so a run can use any working directory."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for source in config["sources"].values():
        for snapshot, patterns in source["snapshots"].items():
            source["snapshots"][snapshot] = [str(REPO / pattern) for pattern in patterns]
    for benchmark in config.get("decontamination", {}).get("benchmarks", []):
        benchmark["path"] = str(REPO / benchmark["path"])
    if config.get("report", {}).get("recipe"):
        config["report"]["recipe"] = str(REPO / config["report"]["recipe"])
    for key, value in overrides.items():
        config[key] = value
    return config


def write_config(workdir: Path, config: dict) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def snakemake_command(workdir: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "-d", str(workdir),
            "--configfile", str(workdir / "config.yaml"), *args]


def run_snakemake(workdir: Path, *args: str, check: bool = True, timeout: int = 1800) -> subprocess.CompletedProcess:
    result = subprocess.run(snakemake_command(workdir, *args), cwd=workdir, capture_output=True, text=True,
                            timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"snakemake {' '.join(args)} failed ({result.returncode}):\n"
                             f"{result.stdout[-6000:]}\n{result.stderr[-6000:]}")
    return result


def result_hashes(workdir: Path) -> dict[str, str]:
    """sha256 of every file a run produced, except logs, benchmarks and Snakemake's own markers."""
    hashes = {}
    root = workdir / "results"
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.is_dir() or relative.parts[0] in ("logs", "benchmarks") or path.name == ".snakemake_timestamp":
            continue
        hashes[str(relative)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return hashes


def assert_same_outputs(expected: dict[str, str], actual: dict[str, str]) -> None:
    assert sorted(actual) == sorted(expected), (
        f"different files: only in expected {sorted(set(expected) - set(actual))[:10]}, "
        f"only in actual {sorted(set(actual) - set(expected))[:10]}")
    differing = [name for name in expected if expected[name] != actual[name]]
    assert not differing, f"{len(differing)} files differ, e.g. {differing[:10]}"


_REFERENCE_HASHES: dict[Path, dict[str, str]] = {}


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory) -> Path:
    """One complete local run of the demo graph, shared by the workflow tests (which must not
    write into it: its hashes are taken as soon as it finishes)."""
    workdir = tmp_path_factory.mktemp("reference")
    write_config(workdir, demo_config())
    result = run_snakemake(workdir, "--cores", "2")
    (workdir / "run.stdout").write_text(result.stdout)  # what the user sees at the end of the run
    _REFERENCE_HASHES[workdir] = result_hashes(workdir)
    return workdir


@pytest.fixture(scope="session")
def reference_hashes(reference_run) -> dict[str, str]:
    return _REFERENCE_HASHES[reference_run]


def slurm_available() -> tuple[bool, str]:
    try:
        result = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=20)
    except (FileNotFoundError, subprocess.TimeoutExpired) as error:
        return False, f"sinfo not usable: {error}"
    states = result.stdout.split()
    if result.returncode != 0 or not any(s.rstrip("*~#") in ("idle", "mixed", "allocated") for s in states):
        return False, f"no responsive SLURM node (sinfo rc={result.returncode}: {result.stdout.strip()} {result.stderr.strip()})"
    return True, ""


def require_slurm() -> None:
    ok, why = slurm_available()
    if ok:
        return
    if os.environ.get("TOKENMILL_REQUIRE_SLURM") == "1":
        pytest.fail(f"SLURM tests are required here (TOKENMILL_REQUIRE_SLURM=1) but {why}")
    pytest.skip(f"SLURM tests skipped: {why} (run tests/slurm/start_cluster.sh as root to start one)")
