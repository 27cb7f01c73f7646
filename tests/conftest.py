"""Shared fixtures: paths to the bundled sample and a helper to run the workflow."""

from __future__ import annotations

import functools
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Callable

import pytest
from filelock import FileLock

# The data helpers live in a module without pytest, which the benchmarks import as well; the
# tests go on importing them from here.
from tests.sample_data import (REPO, SAMPLE, demo_config, gold_articles, lingua_records, sample,  # noqa: F401
                               with_one_encoder_epoch, with_sources, write_config)

SNAKEFILE = REPO / "Snakefile"
TIERS = ("unit", "workflow", "slurm")

# The runs the tests start cache bytecode as on a user's machine. The CI image sets
# PYTHONDONTWRITEBYTECODE, under which every job of every run compiled each module it imports
# from source again (a one-document scoring job: 7.2 CPU-s against 2.7 with the cache), and the
# demo's virtualenv, installed without byte-compiling (the Makefile's --no-compile), never had a
# cache at all.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False  # the test processes too: the Makefile installs without compiling


def pytest_collection_modifyitems(config, items):
    """Each test's tier is its folder: `-m unit`, `-m workflow`, `-m slurm`. Then the longest first,
    so that no long test starts last: the two that read the small cut (the SLURM run and the
    kill-and-resume run, each minutes), the other graph runs, the unit tests, and last the tests
    that read the demo, which builds in the background meanwhile (pytest_collection_finish).
    pytest-xdist's load scheduling sends each worker a first chunk of a quarter of its share in this
    order (the first worker: the graph runs and some unit tests; the second: unit tests), then the
    remaining tests one or two at a time to whichever worker runs low."""
    for item in items:
        if item.path.parent.name in TIERS:
            item.add_marker(item.path.parent.name)
    items.sort(key=schedule_rank)


def schedule_rank(item) -> int:
    reads = BUILT_RUNS.keys() & set(item.fixturenames)
    if "reference_run" in reads:
        return 3
    if reads:
        return 0
    return 2 if item.path.parent.name == "unit" else 1


def pytest_collection_finish(session):
    """Start building every finished run the selected tests read, in the background, as soon as the
    tests are known: the demo takes minutes, and the tests that do not read it run meanwhile. Under
    pytest-xdist each worker starts them; built_once's lock lets one build each run."""
    if session.config.option.collectonly:
        return
    needed = {name for item in session.items for name in item.fixturenames}
    # made here, once: the builders' threads and the first test each making it raced (FileExistsError)
    session.config._tmp_path_factory.getbasetemp()
    for fixture in BUILT_RUNS.keys() & needed:
        thread = threading.Thread(target=build_in_background, args=(session.config._tmp_path_factory, fixture),
                                  name=f"build {fixture}", daemon=True)
        _BUILDERS[fixture] = thread
        thread.start()


def written_twice(tmp_path: Path, write) -> tuple[Path, object]:
    """Call write(path) for two paths; assert the files are byte-identical (determinism) and
    return the first path and what the first call returned."""
    first, second = tmp_path / "written-1.parquet", tmp_path / "written-2.parquet"
    result = write(str(first))
    write(str(second))
    assert first.read_bytes() == second.read_bytes(), "the same input gave different bytes"
    return first, result


def repository_copy(root: Path) -> Path:
    """The repository's files (tracked, and new ones git does not ignore) copied into `root`: a
    checkout to run from, as users do, with the demo's config/config.yaml beside theirs."""
    listing = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                             capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listing):
        if (REPO / name).is_file():  # a tracked file deleted in the working tree is not copied
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, root / name)
    return root


def snakemake_command(workdir: Path, *args: str) -> list[str]:
    """Snakemake on the run's own config (`workdir`/config.yaml). In a repository copy it runs
    as the README says, from the root: with `--configfile` when the run has its own config,
    else on the demo's config/config.yaml; elsewhere with -s and -d."""
    if (workdir / "Snakefile").is_file():
        own = ["--configfile", "config.yaml"] if (workdir / "config.yaml").is_file() else []
        return [sys.executable, "-m", "snakemake", *own, *args]
    return [sys.executable, "-m", "snakemake", "-s", str(SNAKEFILE), "-d", str(workdir),
            "--configfile", str(workdir / "config.yaml"), *args]


def run_snakemake(workdir: Path, *args: str, check: bool = True, timeout: int = 1800,
                  env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    result = subprocess.run(snakemake_command(workdir, *args), cwd=workdir, capture_output=True, text=True,
                            timeout=timeout, env=env)
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


def built_once(tmp_path_factory, name: str, build) -> Path:
    """The folder `name` that build(folder) fills, built once per test session: under
    pytest-xdist (`make test` runs two workers) the first worker to ask builds it while the other
    waits on a lock, then both read it. Its result hashes are taken as soon as it is built
    (`built_hashes`), before any test reads it."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # the session's folder, above each worker's own
    root, done = shared / name, shared / f"{name}.hashes.json"
    with FileLock(str(shared / f"{name}.lock")):
        if not done.exists():
            shutil.rmtree(root, ignore_errors=True)  # what a build that failed left
            root.mkdir()
            build(root)
            done.write_text(json.dumps(result_hashes(root)))
    return root


def built_hashes(root: Path) -> dict[str, str]:
    return json.loads((root.parent / f"{root.name}.hashes.json").read_text())


def finished_run(tmp_path_factory, fixture: str) -> Path:
    """The finished run of a session fixture in BUILT_RUNS, waiting for its background build when
    this process started one (a build that failed there runs again here, and fails with its error)."""
    builder = _BUILDERS.get(fixture)
    if builder is not None:
        builder.join()
    return build_run(tmp_path_factory, fixture)


def build_in_background(tmp_path_factory, fixture: str) -> None:
    try:
        build_run(tmp_path_factory, fixture)
    except Exception:  # noqa: BLE001  the fixture builds again and fails the tests that read it, with the error
        pass


def build_run(tmp_path_factory, fixture: str) -> Path:
    name, build = BUILT_RUNS[fixture]
    return built_once(tmp_path_factory, name, build)


def make_demo(root: Path) -> None:
    repository_copy(root)
    result = subprocess.run(["make", "demo"], cwd=root, capture_output=True, text=True, timeout=3600)
    (root / "run.stdout").write_text(result.stdout)  # what the user sees at the end of the run
    if result.returncode != 0:
        raise AssertionError(f"make demo failed ({result.returncode}):\n{result.stdout[-6000:]}\n{result.stderr[-6000:]}")


CRAWL_FILES = 100_000
CRAWL_FILE_BYTES = 1 << 30


@pytest.fixture(scope="session")
def crawl_of_100000_files(tmp_path_factory) -> Path:
    """A folder of CRAWL_FILES sparse WARCs of CRAWL_FILE_BYTES (no data written), as a Common Crawl
    snapshot's listing stands in the tests that plan and cost one: made once a session for all of
    them (built_once; a minute of file creation on a busy machine), which must not write into it."""
    def build(root: Path) -> None:
        for number in range(CRAWL_FILES):
            with open(root / f"CC-MAIN-20240522-{number:05d}.warc.gz", "wb") as handle:
                handle.truncate(CRAWL_FILE_BYTES)
    return built_once(tmp_path_factory, "crawl-100000", build)


@pytest.fixture(scope="session")
def reference_run(tmp_path_factory) -> Path:
    """`make demo` in a fresh copy of the repository: its own virtualenv from requirements.txt
    alone (demo_python(); no test packages) and the whole graph on the bundled sample with the
    demo config, from the root. Shared by the workflow tests, which must not write into it."""
    return finished_run(tmp_path_factory, "reference_run")


def demo_python(root: Path) -> Path:
    """The interpreter of the virtualenv `make demo` built in `root` (the README's set-up)."""
    return root / ".venv" / "bin" / "python"


def run_as_demo_user(root: Path, command: list[str], cwd: Path) -> str:
    """`command` as a user of the virtualenv `make demo` built in `root` runs it: activated, from
    `cwd`; its output (stdout, then stderr), asserting it succeeded."""
    venv = demo_python(root).parent.parent
    env = {**os.environ, "VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"{' '.join(command)} failed ({result.returncode}):\n" \
                                   f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout + result.stderr


def job_counts(output: str) -> dict[str, int]:
    """The job table of `snakemake -n` (rule -> jobs)."""
    table = output.split("Job stats:")[1].split("Reasons:")[0]
    rows = (re.fullmatch(r"(\w+)\s+(\d+)", line.strip()) for line in table.splitlines())
    return {row.group(1): int(row.group(2)) for row in rows if row and row.group(1) != "total"}


SLURM_DRY_RUN = "snakemake --profile profiles/slurm -n"


@pytest.fixture(scope="session")
def fresh_dry_run(tmp_path_factory, reference_run) -> Path:
    """The README's `snakemake --profile profiles/slurm -n` (SLURM_DRY_RUN) from the root of a fresh
    repository copy, in the demo's virtualenv: the demo graph as a user inspects it before the first
    run, parsed once for the tests that only read it (its jobs, its group jobs, what a dry run
    writes). What it printed: dry_run_printed(folder)."""
    def build(root: Path) -> None:
        repository_copy(root)
        (root / "dry_run.stdout").write_text(run_as_demo_user(reference_run, SLURM_DRY_RUN.split(), root))
    return built_once(tmp_path_factory, "fresh-dry-run", build)


def dry_run_printed(fresh_dry_run: Path) -> str:
    return (fresh_dry_run / "dry_run.stdout").read_text()


# The small cut: one part of each kind of source, each its own snapshot (source: the files kept).
SMALL_CUT = {
    "aeb_articles": 2,        # WARC: one part of two files (trafilatura), rewritten by aeb_rephrased
    "aeb_rephrased": None,    # synthetic: the demo generator's rewrites of that part
    "pdf_samples": ["edgar_image.pdf", "pdflatex-4-pages.pdf"],  # PDF: a scanned page (OCR) and a text layer
    "code_samples": ["tomli-2.0.0.tar.gz"],  # a code repository
    "lingua_sentences": 2,    # JSONL: one part of two files
}


def small_cut_config() -> dict:
    """The demo config cut to SMALL_CUT. Its holdout is not pinned (holdout.manifest_sha256: null,
    as in a user's first run): pinning needs a carve first, and the runs that compare their bytes
    carve the same holdout, which the SLURM test compares too."""
    config = demo_config()
    with_sources(config, {name: source for name, source in config["sources"].items() if name in SMALL_CUT})
    for name, keep in SMALL_CUT.items():
        snapshots = config["sources"][name].get("snapshots")
        if not snapshots:
            continue
        snapshot = keep if isinstance(keep, str) else next(iter(snapshots))
        files = [path for pattern in snapshots[snapshot] for path in sorted(glob.glob(pattern))]
        if isinstance(keep, int):
            files = files[:keep]
        elif isinstance(keep, list):
            files = [path for path in files if os.path.basename(path) in keep]
        config["sources"][name]["snapshots"] = {snapshot: files}
    config["holdout"]["manifest_sha256"] = None
    # The small cut's runs compare bytes (resumed, on SLURM), not the models' quality: its encoder
    # trains one epoch, its generator 5 steps, a sixth of the demo's annotations and a third of its
    # rewrite tokens; every rule still runs, and the generation still has several batches for the
    # resume to read from its cache.
    with_one_encoder_epoch(config)
    config["synthetic"]["train"]["steps"] = 5
    config["synthetic"]["annotate"]["max_docs"] = 8
    config["sources"]["aeb_rephrased"]["synthetic"]["sampling"]["max_new_tokens"] = 32
    return config


@pytest.fixture(scope="session")
def small_run(tmp_path_factory) -> Callable[[], Path]:
    """The small cut (SMALL_CUT) run from the root of a repository copy with its own --configfile,
    as users run it, uninterrupted: the baseline that the kill-and-resume test and the SLURM test
    compare their bytes with (built_hashes). A call that returns its folder once built: both
    tests run the same cut themselves while it builds in the background, and call it to compare."""
    return functools.partial(finished_run, tmp_path_factory, "small_run")


def run_small_cut(root: Path) -> None:
    repository_copy(root)
    write_config(root, small_cut_config())
    run_snakemake(root, "--cores", "2")


# The session fixtures that are finished runs: fixture -> (folder name, how it is built).
BUILT_RUNS = {"reference_run": ("demo", make_demo), "small_run": ("small", run_small_cut)}
_BUILDERS: dict[str, threading.Thread] = {}


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
