"""Same inputs and config, same bytes: across clean runs and across a killed-and-resumed run."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from tests.conftest import assert_same_outputs, demo_config, result_hashes, run_snakemake, snakemake_command, write_config


def test_two_clean_runs_give_identical_outputs(reference_hashes, tmp_path):
    write_config(tmp_path, demo_config())
    run_snakemake(tmp_path, "--cores", "2")
    assert_same_outputs(reference_hashes, result_hashes(tmp_path))
    assert any(name.endswith(".bin") for name in reference_hashes)
    assert any(name.endswith("manifest.json") for name in reference_hashes)


def test_killed_run_resumes_to_the_same_bytes(reference_hashes, tmp_path):
    """SIGKILL the whole run (as a dying node would) while a rule is writing, then resume."""
    write_config(tmp_path, demo_config())
    started = tmp_path / "results" / "logs" / "train_tokenizer" / "demo-v0.log"
    run = subprocess.Popen(snakemake_command(tmp_path, "--cores", "2"), cwd=tmp_path, start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while not started.exists():
        assert run.poll() is None, "the run ended before train_tokenizer started"
        assert time.monotonic() < deadline, "train_tokenizer never started"
        time.sleep(0.05)
    time.sleep(0.5)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    tokenizer = tmp_path / "results" / "tokenizer" / "demo-v0" / "tokenizer.json"
    assert not tokenizer.exists(), "train_tokenizer was expected to be cut off mid-rule"
    assert not (tmp_path / "results" / "shards").exists()
    run_snakemake(tmp_path, "--unlock")  # the killed run could not release its lock
    run_snakemake(tmp_path, "--cores", "2", "--rerun-incomplete")
    assert_same_outputs(reference_hashes, result_hashes(tmp_path))
    leftovers = [p for p in (tmp_path / "results").rglob("*.tmp-*")]
    assert not leftovers, f"temporary files survived the resumed run: {leftovers[:5]}"
