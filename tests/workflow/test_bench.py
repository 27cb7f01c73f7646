"""Every benchmark runs as shipped, at its --tiny size, from the README's set-up: the reference
run is a repository copy where `make demo` ran, so its virtualenv has the runtime dependencies
only (datasketch among them, no pytest) and its results/ holds the demo run that bench_loader
and bench_spine read. A peer outside that set-up (datatrove, megatron-core) must be skipped with
a note, not crash the benchmark; megatron-core's comparison runs again in the test virtualenv,
which has it.
A benchmark that dies halfway or stops printing its comparison fails here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, demo_python

# What each benchmark's output must hold: its comparison, its last section, and the note for a
# peer that the README's set-up lacks.
PRINTED = {
    # its --run defaults to the repository root, which is the demo run in the copy; either verdict is printed
    "bench_ablate.py": ["degradation: shuffle", "documents degraded", "0 < 0.25 < 0.5 < 1) on every seed: ",
                        "CPU-minutes, the whole ablation"],
    "bench_cross_snapshot.py": ["tokenmill (Bloom + sorted runs)", "Python dict", "tokenmill is"],
    "bench_decontam.py": ["tokenmill Bloom + hash set + item runs", "Python set of 13-gram tuples",
                          "short MMLU items"],
    "bench_code_files.py": ["vendored_paths", "minified_files", "tokenmill read + reject + parse",
                            "bare tree-sitter parse"],
    "bench_code_license.py": ["tokenmill detect_license", "bare spdx-matcher", "repos/CPU-s"],
    "bench_code_repos.py": ["line sketch (tokenmill)", "whole-file sha256 sets", "vendored copies",
                            "tokenmill code_candidates", "bare tree-sitter + spdx-matcher"],
    "bench_chains.py": ["tokenmill, 2 buckets", "one bucket (no partitioning)", "random chains, same lengths",
                        "leaf-bound ms", "at scale: part", "chain_groups: the same files on 1 and 2 ranks: True",
                        "deterministic: True", "targets: adjacent/random"],
    "bench_cost.py": ["demo run: predicted by the bundled rates of", "fitted together",
                      "the same run: predicted by its own rates / measured", "total"],
    "bench_end_to_end.py": ["tokenmill two_pass", "skipped: datatrove end to end", "pages read"],
    "bench_dedup.py": ["tokenmill signature from shingles", "datasketch 2.0.0 update_batch",
                       "skipped: datatrove signatures", "tokenmill minhash_cluster, 2 rank(s)",
                       "speed-up 2 ranks vs 1", "skipped: datatrove clustering"],
    "bench_extract.py": ["tokenmill trafilatura", "two_pass vs trafilatura", "routing bound at 0.35x", "bare resiliparse main content",
                         "extract job: resiliparse/trafilatura", "math, tokenmill two_pass"],
    "bench_pdf.py": ["olmOCR-Bench sample", "pdf_text (pdfium)", "pdf_text + Tesseract OCR", "pages/CPU-s",
                     "Tesseract OCR pages:", "broken, encrypted and image-only files:",
                     "libreoffice-writer-password.pdf: pdf_text: quarantined encrypted"],
    "bench_heuristics.py": ["tokenmill heuristic_scores", "skipped: datatrove's four heuristic filters"],
    "bench_languages.py": ["the graph on the labelled excerpts, schema defaults", "median per-language AUC",
                           "leave one language out", "real article pages, the default engine's text"],
    "bench_loader.py": ["tokenmill Loader.sample", "skipped: megatron-core GPTDataset", "replay:"],
    "bench_part.py": ["trafilatura: outputs of 1 and 2 workers byte-identical: True",
                      "resiliparse: outputs of 1 and 2 workers byte-identical: True", "bare blockml: the page's text",
                      "extract (resiliparse) job, 2 worker(s) on 2 core(s)", "job/bare (1 worker, docs/s)",
                      "speed-up 2 workers vs 1", "one job feeds", "ocr (tesseract) part job",
                      "ocr: outputs of 1 and 2 workers byte-identical: True"],
    # the copy has no git history to take 1908e44 from
    "bench_plan.py": ["skipped: planning with 1908e44", "planning (snakemake -n)", "working tree, listing read",
                      "working tree: growth per 10x files"],
    "bench_proxy.py": ["tokenmill train_proxy (loader, masks, state file)", "plain loop, same batches in memory",
                       "the same losses as the plain loop, to the bit: True"],
    "bench_quality.py": ["fastText (held-out accuracy", "encoder on CPU", "patch_bytes 1, max_bytes 512 (a position per byte)"],
    "bench_regmix.py": ["tokenmill lightgbm", "tokenmill loglinear", "bare LGBMRegressor(), defaults",
                        "RegMix notebook (stops on 1M test)", "propose on the lightgbm fit"],
    "bench_robots.py": ["tokenmill (robots_state + judge)", "bare protego 0.7.0", "urllib.robotparser",
                        "judge's question"],
    "bench_shards.py": ["one job per snapshot", "2 shard groups", "longest job:",
                        "the groups' shards one after another hold the one job's documents in its order: True"],
    "bench_snapshot_steps.py": ["documents parsed (as before)", "in minhash_cluster, one rank (tokenmill now)",
                                "the same table: True", "parts counted and collected (now)",
                                "now, the parts read by 2 worker processes", "the same bytes: True",
                                "skipped: select_thresholds as of e27b890", "skipped: select as of 99f2fc6",
                                "MPI job, 2 ranks (now)", "the same tables and summary on 1 and 2 ranks: True",
                                "MPI job, 2 ranks", "a job per part, longest of 2",
                                "the same rows (against the 1- and the 2-rank index): True"],
    "bench_spine.py": [", govuk BL-20140325121225 (Snakemake benchmark files", "rule/bare", "one large part"],
    "bench_synth.py": ["tokenmill generate (cached batches)", "bare transformers, same batches",
                       "bare transformers, one prompt at a time", "rerun of the same requests",
                       "real-vs-synthetic distinguisher AUC"],
}


# Benchmarks that read the finished demo run in the copy's root instead of building a graph of their own
READS_THE_DEMO = {"bench_spine.py": ["--run", "."]}


def run_tiny(python: Path | str, root: Path, script: str) -> str:
    """The benchmark `script` of the repository copy `root` at its tiny size; its output."""
    result = subprocess.run([str(python), str(root / "bench" / script), "--tiny", *READS_THE_DEMO.get(script, [])],
                            cwd=root, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"{script} --tiny failed ({result.returncode}):\n{result.stdout[-3000:]}\n" \
                                   f"{result.stderr[-6000:]}"
    return result.stdout


def test_every_benchmark_has_a_tiny_run_here():
    assert sorted(PRINTED) == sorted(path.name for path in (REPO / "bench").glob("bench_*.py"))


@pytest.mark.parametrize("script", sorted(PRINTED))
def test_the_benchmark_runs_from_the_demo_virtualenv(reference_run, script):
    printed = run_tiny(demo_python(reference_run), reference_run, script)
    missing = [line for line in PRINTED[script] if line not in printed]
    assert not missing, f"{script} did not print {missing}:\n{printed}"


def test_the_loader_benchmark_compares_with_megatron_in_the_test_virtualenv(reference_run):
    printed = run_tiny(sys.executable, reference_run, "bench_loader.py")
    for line in ("tokenmill Loader.sample", "megatron-core GPTDataset, attention mask on",
                 "megatron-core GPTDataset, attention mask off", "replay:"):
        assert line in printed, f"bench_loader.py did not print {line!r}:\n{printed}"
    assert "skipped" not in printed
