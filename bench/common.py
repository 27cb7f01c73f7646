"""What the benchmarks share: the repository on the import path, a timer, one CPU, the sample
texts, the --tiny option, running a script or a peer (in its own virtualenv), and saying which
comparison was skipped."""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tokenmill.extract import PartInfo, extract_part  # noqa: E402
from tokenmill.io import read_jsonl_zst  # noqa: E402

EXTRACT_SETTINGS = {"max_bytes": 8 << 20, "fast": False, "favor_precision": True, "include_tables": True,
                    "zstd_level": 6, "fields": {"text": "text", "id": "id", "url": "url", "fetch_ts": "created"}}
# datatrove 0.10.1 hashes str, which xxhash 4 refuses; its dedup imports tokenizers
DATATROVE_VENV = "python3 -m venv /tmp/dt && /tmp/dt/bin/pip install datatrove==0.10.1 xxhash==3.5.0 regex spacy tokenizers"
DATATROVE_SKIPPED = f"{DATATROVE_VENV}, then pass --datatrove-python /tmp/dt/bin/python"


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def pin_to_one_cpu() -> int:
    """Pin this process, and the peers it starts, to one CPU: seconds are core-seconds."""
    cpu = min(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpu})
    return cpu


def add_tiny_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tiny", action="store_true",
                        help="the smallest sizes that still run every comparison, in seconds, so that "
                             "tests/workflow/test_bench.py keeps this benchmark running; its figures mean nothing")


def add_datatrove_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--datatrove-python", default=None,
                        help=f"python of datatrove's own virtualenv ({DATATROVE_VENV})")


def skipped(comparison: str, how_to_include: str) -> None:
    """A comparison whose peer is not installed: the benchmark goes on without it, and says so."""
    print(f"skipped: {comparison}; to include it: {how_to_include}")


def run_checked(what: str, command: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess:
    """`command` with its output captured; a failure raises with the end of what it printed, so
    that a benchmark which stops says why."""
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True)
    if result.returncode:
        raise RuntimeError(f"{what} failed ({result.returncode}):\n{result.stdout[-2000:]}\n{result.stderr[-6000:]}")
    return result


def run_peer(python: str, source: str, *args: str) -> str:
    """`source` run by a peer's own interpreter (its virtualenv); the last line it printed."""
    return run_checked(f"{python} -c <benchmark>", [python, "-c", source, *args]).stdout.strip().splitlines()[-1]


def sample_texts(tmp: Path, repeat: int = 4, tiny: bool = False) -> list[str]:
    """Every document extracted from the bundled WARCs and JSONL, `repeat` times over; with
    `tiny` the JSONL documents only, which have no HTML to parse."""
    texts = []
    inputs = [] if tiny else [(p, "warc") for p in sorted(glob.glob(str(REPO / "data/sample/warc/*/*.warc*")))]
    inputs += [(p, "jsonl") for p in sorted(glob.glob(str(REPO / "data/sample/jsonl/*/*.jsonl.gz")))]
    for i, (path, kind) in enumerate(inputs):
        out = tmp / f"{i}.jsonl.zst"
        extract_part(path, kind, PartInfo("s", "x", str(i), "crawl", "x"), EXTRACT_SETTINGS, str(out),
                     str(tmp / f"{i}.q.jsonl.zst"), str(tmp / f"{i}.json"))
        texts += [doc["text"] for doc in read_jsonl_zst(out)]
    return texts * repeat
