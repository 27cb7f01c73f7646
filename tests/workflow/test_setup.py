"""The first hour on a bare machine, as a user meets it: `make demo` and a run of their own stop
in their first seconds with the command that installs what is missing, and a run of one target
says what it built, not that a version is complete."""

from __future__ import annotations

import os
import subprocess
import time


from tests.conftest import repository_copy, snakemake_command
from tests.unit.test_system import path_without

OCR_TARGET = "results/ocr/pages/pdf_samples/py-pdf-6921079/edgar_image.jsonl.zst"


def test_make_demo_without_tesseract_or_apt_stops_at_once_with_the_command(tmp_path):
    root = repository_copy(tmp_path / "checkout")
    env = {**os.environ, "PATH": path_without(tmp_path, "tesseract", "apt-get")}
    start = time.monotonic()
    result = subprocess.run(["make", "demo"], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    seconds = time.monotonic() - start
    assert result.returncode != 0
    assert "apt-get install -y tesseract-ocr" in result.stderr, result.stdout + result.stderr
    assert "mamba env create -f envs/tokenmill.yaml" in result.stderr
    assert not (root / ".venv").exists(), "the virtualenv was built before the check"
    assert seconds < 60, f"the check took {seconds:.0f} s"


def test_a_run_stops_before_its_first_job_without_tesseract_and_one_target_says_what_it_built(tmp_path):
    root = repository_copy(tmp_path / "checkout")
    hidden = {**os.environ, "PATH": path_without(tmp_path, "tesseract")}
    ocr = subprocess.run(snakemake_command(root, "--cores", "1", OCR_TARGET), cwd=root, env=hidden,
                         capture_output=True, text=True, timeout=600)
    printed = ocr.stdout + ocr.stderr
    assert ocr.returncode != 0
    assert "tesseract: OCR of scanned PDF pages" in printed and "apt-get install -y tesseract-ocr" in printed, printed
    assert "Finished jobid" not in printed and not (root / "results" / "ocr").exists()

    plan = subprocess.run(snakemake_command(root, "--cores", "1", "results/plan/parts.tsv"), cwd=root,
                          capture_output=True, text=True, timeout=600)
    printed = plan.stdout + plan.stderr
    assert plan.returncode == 0, printed[-3000:]
    assert "tokenmill: built results/plan/parts.tsv" in printed
    assert "is complete" not in printed and "manifest: results" not in printed
