"""The workflow on a real SLURM cluster (profiles/slurm) gives the local run's bytes, even after
a head is told to stop (SIGTERM), a running job is cancelled, the head process killed, and the run recovered with the README's
`snakemake --unlock` and `snakemake --profile profiles/slurm --rerun-incomplete`. The cluster runs go as
a user's do: from the root of a checkout, with their own --configfile beside the demo's."""

from __future__ import annotations

import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import (assert_same_outputs, built_hashes, demo_config, repository_copy, require_slurm,
                            result_hashes, run_snakemake, small_cut_config, snakemake_command, write_config)


def squeue_seconds(elapsed: str) -> int:
    """squeue's %M ([days-][hours:]minutes:seconds) in seconds."""
    days, _, clock = elapsed.rpartition("-")
    seconds = 0
    for field in clock.split(":"):
        seconds = seconds * 60 + int(field)
    return seconds + 86400 * int(days or 0)


def run_id_of(run_log: Path, timeout: int = 300) -> str:
    """The SLURM run ID that the slurm plugin prints at the start of a run: the name of each of its
    jobs, so that the test touches no other test's job."""
    deadline = time.monotonic() + timeout
    while not (found := re.search(r"SLURM run ID: (\S+)", run_log.read_text())):
        assert time.monotonic() < deadline, "the run printed no SLURM run ID"
        time.sleep(0.2)
    return found.group(1)


def jobs_of(run_id: str, *options: str) -> list[str]:
    listing = subprocess.run(["squeue", "-h", "--name", run_id, *options], capture_output=True, text=True)
    return [line for line in listing.stdout.splitlines() if line.strip()]


def environment_logging_status_checks(directory: Path) -> tuple[dict[str, str], Path]:
    """An environment whose `squeue` is the real one behind a script that first appends the time of
    each status check of the slurm plugin (`squeue ... --states=all ... --name <run ID>`) to a log."""
    log = directory / "status_checks.log"
    wrapper = directory / "bin" / "squeue"
    wrapper.parent.mkdir(parents=True)
    wrapper.write_text(f'#!/bin/sh\ncase " $* " in *" --states=all "*) date +%s.%N >> {log};; esac\n'
                       f'exec {shutil.which("squeue")} "$@"\n')
    wrapper.chmod(0o755)
    return {**os.environ, "PATH": f"{wrapper.parent}:{os.environ['PATH']}"}, log


def a_running_job(run_id: str, after_seconds: int = 3, timeout: int = 900) -> str:
    """The run's first job that has run for `after_seconds` (so it is surely mid-work)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for job, elapsed in (line.split() for line in jobs_of(run_id, "-t", "RUNNING", "-o", "%i %M")):
            if squeue_seconds(elapsed) >= after_seconds:
                return job
        time.sleep(0.5)
    raise AssertionError("no SLURM job ran long enough")


def wait_for_an_empty_queue(run_id: str, timeout: int, states: str | None = None) -> None:
    """Until no job of the run is in `states` (squeue's -t), or by default none is listed (pending,
    running or completing)."""
    deadline = time.monotonic() + timeout
    while listed := jobs_of(run_id, *(("-t", states) if states else ()), "-o", "%i %T %M"):
        assert time.monotonic() < deadline, f"the run's jobs are still {states or 'queued'} after {timeout} s: {listed}"
        time.sleep(0.5)


def cancel_the_jobs_of(run_id: str) -> None:
    """The README's `scancel --name <SLURM run ID>`, and the queue left without the run's jobs."""
    subprocess.run(["scancel", "--name", run_id], check=True)
    wait_for_an_empty_queue(run_id, timeout=300)


def test_slurm_run_with_a_cancelled_job_and_a_killed_head_resumes_to_the_local_bytes(small_run, tmp_path):
    """The small cut (one part of each kind of source, conftest's small_run) on the cluster, from a
    checkout's root with the same --configfile, gives small_run's local bytes."""
    require_slurm()
    cluster = repository_copy(tmp_path / "slurm")
    write_config(cluster, small_cut_config())
    # --cores 1: each job asks for one CPU, so four run at once on the test node (start_cluster.sh
    # gives it two SLURM CPUs per core); the profile's bundles of the small per-snapshot jobs
    slurm = ["--profile", "profiles/slurm", "--cores", "1",
             "--slurm-init-seconds-before-status-checks", "1", "--seconds-between-status-checks", "1"]
    # SIGTERM to the head (scancel of the head job, its time limit): within SLURM's KillWait (30 s)
    # it cancels its run's jobs and exits, releasing its lock; nothing of it stays pending or running,
    # and a cancelled job leaves the queue once SLURM has stopped its processes (SIGKILL after KillWait)
    with open(tmp_path / "terminated.log", "w") as log:
        terminated = subprocess.Popen(snakemake_command(cluster, *slurm), cwd=cluster, stdout=log,
                                      stderr=subprocess.STDOUT)
        terminated_run = run_id_of(tmp_path / "terminated.log")
        a_running_job(terminated_run, after_seconds=1)
        terminated.terminate()
        assert terminated.wait(timeout=30) != 0
    wait_for_an_empty_queue(terminated_run, timeout=30, states="PENDING,RUNNING")
    wait_for_an_empty_queue(terminated_run, timeout=30 + 30)
    stopped = (tmp_path / "terminated.log").read_text()  # cancelled, not drained (Snakemake's own SIGTERM)
    assert "Terminating processes on user request" in stopped and "finishing currently running jobs" not in stopped
    with open(tmp_path / "first.log", "w") as log:
        first = subprocess.Popen(snakemake_command(cluster, *slurm, "--retries", "0", "--rerun-incomplete"),
                                 cwd=cluster, stdout=log, stderr=subprocess.STDOUT)
        first_run = run_id_of(tmp_path / "first.log")
        cancelled = a_running_job(first_run)
        subprocess.run(["scancel", cancelled], check=True)
        # the head job dies too (its node failed): SIGKILL, so it cannot release its lock
        first.kill()
        first.wait()
    # what the killed head submitted runs on, and the rerun runs it again (its head never saw it
    # end): the README says to scancel it
    cancel_the_jobs_of(first_run)
    # the README's recovery, command for command (with the test cluster's status checks)
    unlocked = run_snakemake(cluster, "--unlock")
    assert "Unlocked working directory" in unlocked.stdout + unlocked.stderr
    # with --jobs below the jobs a rule has (5 parts: 5 score jobs), which the slurm plugin alone
    # holds back for ever, waiting for a whole array (rules/slurm.smk); 4 is what the node runs at once
    logging_status_checks, status_checks = environment_logging_status_checks(tmp_path)
    result = run_snakemake(cluster, *slurm, "--rerun-incomplete", "--jobs", "4", timeout=2400,
                           env=logging_status_checks)
    output = (tmp_path / "first.log").read_text() + result.stdout + result.stderr
    # the per-part rules go out as job arrays: one sbatch per rule, whose tasks are <jobid>_<task>
    arrays = re.findall(r"Submitted array job with Snakemake IDs [\d,]+ and SLURM job ID (\d+)\. "
                        r"The individual task IDs are (\d+)-(\d+)", output)
    array_tasks = [f"{job}_{task}" for job, first_task, last_task in arrays
                   for task in range(int(first_task), int(last_task) + 1)]
    job_ids = re.findall(r"submitted with SLURM jobid (\d+)", output)
    print(f"sbatch job ids: {' '.join(job_ids)}; array tasks: {' '.join(array_tasks)}; cancelled: {cancelled}")
    assert cancelled in job_ids + array_tasks, output[-3000:]
    # 5 parts: the extraction of the three whose inputs are files on disk (not the synthetic part nor
    # the PDF part, which wait for generate and ocr) goes out as one array of 3 tasks; the later
    # per-part rules as arrays of the jobs that are ready together, and a lone ready job as a plain
    # job (how many are ready together depends on when each finished, so only the shape is asserted)
    assert any((first_task, last_task) == ("1", "3") for _, first_task, last_task in arrays), output[-3000:]
    assert len(arrays) >= 3, output[-3000:]
    assert all(int(last_task) > int(first_task) for _, first_task, last_task in arrays), output[-3000:]
    assert len(job_ids) >= 5, output[-3000:]
    # metadata goes to one SQLite file, not a file per output
    assert (cluster / ".snakemake" / "metadata.db").exists()
    assert not [path for path in (cluster / ".snakemake" / "metadata").rglob("*") if path.is_file()]
    # the head asks SLURM for its jobs' states every second asked for, as rules/slurm.smk makes the
    # plugin do: the plugin backed off by 10 s after each check that found no job finished (11, 21,
    # 31 s apart...), and each step of a chain of short jobs waited that long to be submitted. Gaps
    # also span the head's idle spells between stages (no job in the queue, nothing to check), hence
    # the median; it does not depend on how long each job's own Snakemake takes to exit.
    checks = [float(line) for line in status_checks.read_text().split()]
    gaps = sorted(later - earlier for earlier, later in zip(checks, checks[1:]))
    print(f"{len(checks)} status checks, seconds apart: median {statistics.median(gaps):.2f}, max {gaps[-1]:.1f}")
    assert len(gaps) >= 20 and statistics.median(gaps) <= 3, gaps
    assert "srun --mpi=pmi2 -n 2" in output  # minhash_cluster and select ran as 2-task MPI jobs, one per snapshot
    for rule, logs in (("minhash_cluster", "*/*.log"), ("select", "*/*/*.log")):
        rank_logs = sorted((cluster / "results" / "logs" / rule).glob(logs))
        assert rank_logs and all("rank 0/2" in log.read_text() and "rank 1/2" in log.read_text()
                                 for log in rank_logs), rule
    local = small_run()
    assert (local / "config.yaml").read_bytes() == (cluster / "config.yaml").read_bytes()
    assert_same_outputs(built_hashes(local), result_hashes(cluster))
    assert (local / "holdout/manifest.json").read_bytes() == (cluster / "holdout/manifest.json").read_bytes()


def test_head_job_dry_run_through_sbatch(tmp_path):
    """The documented head job starts Snakemake on the cluster with the slurm profile."""
    require_slurm()
    root = repository_copy(tmp_path / "checkout")
    write_config(root, demo_config())
    log = tmp_path / "head.log"
    result = subprocess.run(
        ["sbatch", "--wait", f"--chdir={root}", f"--output={log}", "profiles/slurm/head.sbatch",
         "--configfile", "config.yaml", "-n"],
        cwd=root, capture_output=True, text=True, timeout=600, env={**os.environ, "TOKENMILL_PYTHON": sys.executable})
    text = log.read_text() if log.exists() else ""
    assert result.returncode == 0, f"{result.stdout}{result.stderr}{text[-3000:]}"
    assert "Submitted batch job" in result.stdout
    assert "Job stats:" in text and re.search(r"extract\s+23", text) and "This was a dry-run" in text
    # the per-part jobs ask for a whole node: the profile's threads, not the default profile's or 1
    for rule in ("extract", "score"):
        threads = re.findall(rf"^rule {rule}:\n(?:    .*\n)*?    threads: (\d+)$", text, flags=re.MULTILINE)
        assert threads and set(threads) == {"64"}, (rule, threads)
