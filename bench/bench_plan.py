"""Side-by-side: planning one snapshot of N input files (`snakemake -n`), the workflow before
parts grouped files (commit 1908e44, one part per file) against the working tree (parts of
`parts.target_bytes`, the schema's default, and the listing cache).

Synthetic input (generated here, not crawl data): N WARC files of 1 GB each, sparse (no data
is written), in one snapshot of one source; each tree runs with its own rules and library
(PYTHONPATH), on one core. Reported per size: jobs in the DAG, wall time and peak memory of
the Snakemake process tree (RSS sampled every 50 ms), and the growth factor per 10x files;
for the working tree, both the first dry run (which globs and writes the listing) and a
second one (which reads it). A dry run that outlasts --timeout is stopped and reported as
"> T s", with the time extrapolated from the growth between the two sizes before it.

1908e44 comes from the repository's git history (`git archive`); outside a git checkout
(the copy that tests/workflow/test_bench.py runs in) that side is skipped, with a note.

usage: python bench/bench_plan.py [--sizes 1000 10000 100000] [--timeout 600] [--tiny]
(--tiny: 100 and 1,000 files)
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

import psutil
import yaml

from common import REPO, add_tiny_option, commit_tree, pin_to_one_cpu, skipped  # puts the repository on the import path

BEFORE = "1908e44"
FILE_BYTES = 1 << 30
DIGITS = 6  # input names CC-000000.warc.gz ...: a prefix of zeros selects the first 10^k files


def placeholders(folder: Path, count: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(count):
        with open(folder / f"CC-{number:0{DIGITS}d}.warc.gz", "wb") as handle:
            handle.truncate(FILE_BYTES)


def snapshot_config(workdir: Path, inputs: Path, files: int) -> None:
    """A config of one WARC snapshot: the first `files` placeholders (files is a power of ten)."""
    zeros = DIGITS - len(str(files)) + 1
    pattern = str(inputs / f"CC-{'0' * zeros}*.warc.gz")
    workdir.mkdir(parents=True)
    (workdir / "config.yaml").write_text(yaml.safe_dump({"sources": {"common_crawl": {
        "kind": "warc", "tier": "crawl", "license_id": "CC-TOU", "snapshots": {"CC-MAIN-2024-22": [pattern]}}}}))


def dry_run(tree: Path, workdir: Path, timeout: float) -> dict:
    """`snakemake -n` of `tree`'s workflow in `workdir`: jobs (None if stopped), wall seconds and
    the peak RSS of the process tree in MB."""
    command = [sys.executable, "-m", "snakemake", "-s", str(tree / "Snakefile"), "-d", str(workdir),
               "--configfile", str(workdir / "config.yaml"), "-n"]
    env = {**os.environ, "PYTHONPATH": str(tree)}  # the tree's own library, not the installed one
    with open(workdir / "dry-run.out", "w") as out, open(workdir / "dry-run.err", "w") as err:
        start = time.perf_counter()
        process = psutil.Popen(command, cwd=workdir, env=env, stdout=out, stderr=err)
        peak = 0
        while process.poll() is None and time.perf_counter() - start < timeout:
            try:
                tree_rss = sum(p.memory_info().rss for p in [process, *process.children(recursive=True)])
            except psutil.NoSuchProcess:
                tree_rss = 0
            peak = max(peak, tree_rss)
            time.sleep(0.05)
        seconds = time.perf_counter() - start
        if process.poll() is None:
            for child in process.children(recursive=True):
                child.kill()
            process.kill()
            process.wait()
            return {"jobs": None, "seconds": seconds, "mb": peak / 1e6}
    if process.returncode:
        raise RuntimeError(f"dry run of {tree} in {workdir} failed ({process.returncode}):\n"
                           f"{(workdir / 'dry-run.err').read_text()[-3000:]}")
    total = re.search(r"^total\s+(\d+)$", (workdir / "dry-run.out").read_text(), flags=re.MULTILINE)
    return {"jobs": int(total.group(1)), "seconds": seconds, "mb": peak / 1e6}


def growth(rows: list[dict], key: str) -> list[str]:
    """The factor per 10x files between consecutive finished sizes."""
    done = [row for row in rows if row["jobs"] is not None]
    return [f"{later[key] / earlier[key]:.1f}" for earlier, later in zip(done, done[1:])]


def report(name: str, sizes: list[int], rows: list[dict]) -> None:
    finished = [(files, row) for files, row in zip(sizes, rows) if row["jobs"] is not None]
    for files, row in zip(sizes, rows):
        if row["jobs"] is not None:
            print(f"{name:<28}{files:>9,}{row['jobs']:>9,}{row['seconds']:>10.1f}{row['mb']:>10,.0f}")
            continue
        estimates = {"seconds": "", "mb": ""}
        if finished:  # the last growth per 10x (linear without one) carried on to this size
            last_files, last = finished[-1]
            steps = math.log10(files / last_files)
            for key, unit in (("seconds", "s"), ("mb", "MB")):
                factor = last[key] / finished[-2][1][key] if len(finished) >= 2 else 10
                estimates[key] = f" (extrapolated {last[key] * factor ** steps:,.0f} {unit})"
        print(f"{name:<28}{files:>9,}{'stopped':>9}  > {row['seconds']:.0f} s{estimates['seconds']}, "
              f"> {row['mb']:,.0f} MB so far{estimates['mb']}")
    print(f"{name}: growth per 10x files: time x{', x'.join(growth(rows, 'seconds')) or ' -'}; "
          f"memory x{', x'.join(growth(rows, 'mb')) or ' -'}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000],
                        help="input files per run, powers of ten")
    parser.add_argument("--timeout", type=float, default=600, help="seconds before a dry run is stopped")
    add_tiny_option(parser)
    args = parser.parse_args()
    if args.tiny:
        args.sizes = [100, 1000]
    if any(str(size).rstrip("0") != "1" for size in args.sizes):
        parser.error("--sizes: powers of ten")
    cpu = pin_to_one_cpu()
    with tempfile.TemporaryDirectory(prefix="bench_plan-") as scratch:
        tmp = Path(scratch)
        placeholders(tmp / "warc", max(args.sizes))
        trees = [("working tree", REPO)]
        before = commit_tree(BEFORE, tmp)
        if before is None:
            skipped(f"planning with {BEFORE}, one part per file", f"run from a git checkout that has commit {BEFORE}")
        else:
            trees.insert(0, (BEFORE, before))
        print(f"planning (snakemake -n) on CPU {cpu} ({platform.processor() or platform.machine()}): "
              f"one snapshot of N WARC files of 1 GB (sparse), --timeout {args.timeout:.0f} s")
        print(f"{'code':<28}{'files':>9}{'jobs':>9}{'wall s':>10}{'peak MB':>10}")
        for name, tree in trees:
            rows, again = [], []
            for files in args.sizes:
                workdir = tmp / f"{name.replace(' ', '-')}-{files}"
                snapshot_config(workdir, tmp / "warc", files)
                if rows and rows[-1]["jobs"] is None:  # a smaller size was stopped: this one would be too
                    rows.append(rows[-1])
                    continue
                rows.append(dry_run(tree, workdir, args.timeout))
                if tree == REPO:
                    again.append(dry_run(tree, workdir, args.timeout))
            report(name, args.sizes, rows)
            if again:
                report("working tree, listing read", args.sizes, again)


if __name__ == "__main__":
    main()
