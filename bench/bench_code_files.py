"""The code sub-pipeline's file selection (tokenmill.code: read_repository, reject_files, the
tree-sitter parse gate) on the 26 release tarballs of data/bench/code-repos (see its SOURCES.md).

One core:
- quality: recall of the ground truth's vendored, generated and minified lists (a file counts
  when it is rejected with that reason; a vendored path that is a folder counts each file under
  it; poetry-core's `_vendor/tomli/__init__.py` counts as found when rejected vendored, and the
  scan's false positives, tomli's bump2version line and wcwidth's __init__.py, are left out of
  the generated list and shown as kept); and the members rejected as data per repository;
- speed: files per CPU-second of read + reject + parse (select_code), side by side with the bare
  tree-sitter parse of the same source files (already in memory, parsers made), which is the
  floor that the parse gate cannot beat.

usage: python bench/bench_code_files.py [--tiny]   (--tiny: two repositories; its figures mean nothing)
"""

from __future__ import annotations

import argparse
import csv
import time

from common import REPO, add_tiny_option, pin_to_one_cpu, skipped  # puts the repository on the import path

from tokenmill.code.files import GENERATED, MINIFIED, VENDORED  # noqa: E402
from tokenmill.code.parse import ParseGate, select_code  # noqa: E402
from tokenmill.code.repository import read_repository  # noqa: E402

DATA = REPO / "data" / "bench" / "code-repos"
TINY = ("pypi/click-8.1.3.tar.gz", "npm/mustache-4.2.0.tgz")
SPEED_ROUNDS = 3  # 6.5 MB of tarballs: a few rounds for a steadier CPU figure
FALSE_POSITIVES = {("pypi/tomli-2.0.0.tar.gz", "tomli/__init__.py"), ("pypi/tomli-2.0.1.tar.gz", "src/tomli/__init__.py"),
                   ("pypi/wcwidth-0.2.6.tar.gz", "wcwidth/__init__.py")}
COLUMNS = {"vendored_paths": VENDORED, "generated_files_marked": GENERATED, "minified_files": MINIFIED}


def ground_truth(tiny: bool) -> list[dict]:
    rows = list(csv.DictReader((DATA / "ground_truth.tsv").open(encoding="utf-8"), delimiter="\t"))
    return [row for row in rows if not tiny or row["file"] in TINY]


def expected_files(row: dict, column: str, all_paths: set[str]) -> list[str]:
    """The files that the ground truth lists in `column` (a folder: every file under it)."""
    root = "package/" if row["file"].startswith("npm/") else ""
    listed = [] if row[column] in ("", "-") else [path.removeprefix(root) for path in row[column].split(",")]
    return [path for entry in listed for path in sorted(all_paths)
            if path == entry or path.startswith(entry + "/")
            if (row["file"], path) not in FALSE_POSITIVES]


def recall(rows: list[dict], gate: ParseGate) -> None:
    found = {column: [0, 0] for column in COLUMNS}
    misses, data_counts, false_kept = [], [], []
    for row in rows:
        repository = read_repository(DATA / row["file"])
        selection, features = select_code(repository, gate)
        reasons = {rejected.path: rejected.reason for rejected in selection.rejected}
        all_paths = set(reasons) | {file.path for file in selection.kept}
        for column, wanted in COLUMNS.items():
            for path in expected_files(row, column, all_paths):
                # vendored is tried first: a vendored file that the scan also marked generated is found
                hit = reasons.get(path) in (wanted, VENDORED)
                found[column][0] += hit
                found[column][1] += 1
                if not hit:
                    misses.append(f"{row['file']}: {path} ({column}) -> {reasons.get(path, 'kept')}")
        false_kept += [f"{row['file']}: {path} kept" for name, path in FALSE_POSITIVES
                       if name == row["file"] and path in {file.path for file in selection.kept}]
        data_counts.append((row["file"], features.rejections.get("data", 0), features.members))
    print("recall of the ground truth (data/bench/code-repos/ground_truth.tsv):")
    print(f"  {'list':26s} {'found':>7s} {'listed':>7s} {'recall':>7s}")
    for column, (hit, total) in found.items():
        print(f"  {column:26s} {hit:7d} {total:7d} {hit / total if total else 1.0:7.1%}")
    for miss in misses:
        print(f"  miss: {miss}")
    for kept in false_kept:
        print(f"  the scan's false positive, not generated: {kept}")
    flagged = [f"{name.split('/')[-1]} {data}/{members}" for name, data, members in data_counts if data]
    print(f"  rejected as data (repository data/members): {', '.join(flagged) or 'none'}")


def speed(rows: list[dict], gate: ParseGate, rounds: int) -> None:
    archives = [DATA / row["file"] for row in rows]
    blobs = [(file.language.grammar, file.data)
             for archive in archives for file in select_code(read_repository(archive), gate)[0].kept
             if file.language is not None and file.language.grammar is not None]
    members = sum(len(read_repository(archive).files) + len(read_repository(archive).skipped) for archive in archives)

    start = time.process_time()
    for _ in range(rounds):
        for archive in archives:
            select_code(read_repository(archive), gate)
    ours = time.process_time() - start

    parsers = {grammar: gate.parser(grammar) for grammar, _ in blobs}
    start = time.process_time()
    for _ in range(rounds):
        for grammar, data in blobs:
            parsers[grammar].parse(data)
    bare = time.process_time() - start

    print(f"speed: {len(archives)} repositories, {members} members, {len(blobs)} files parsed, "
          f"{rounds} rounds, one core")
    print(f"  {'engine':52s} {'files':>7s} {'CPU-s':>7s} {'files/CPU-s':>12s}")
    print(f"  {'tokenmill read + reject + parse (all members)':52s} {members * rounds:7d} {ours:7.2f} "
          f"{members * rounds / ours:12.0f}")
    print(f"  {'bare tree-sitter parse (the kept files it parses)':52s} {len(blobs) * rounds:7d} {bare:7.2f} "
          f"{len(blobs) * rounds / bare:12.0f}")
    print(f"  tokenmill is {ours / bare:.1f}x the bare parse's CPU time "
          f"(it also reads and decompresses every member, classifies it and parses the kept ones)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_tiny_option(parser)
    args = parser.parse_args()
    cpu = pin_to_one_cpu()
    rows = ground_truth(args.tiny)
    missing = [row["file"] for row in rows if not (DATA / row["file"]).exists()]
    if missing:
        skipped(f"{len(missing)} tarballs", f"restore {', '.join(missing)} under {DATA}")
        rows = [row for row in rows if row["file"] not in missing]
    print(f"code file selection on {len(rows)} repositories of {DATA.relative_to(REPO)}; one core (cpu {cpu})")
    gate = ParseGate()
    recall(rows, gate)
    speed(rows, gate, 1 if args.tiny else SPEED_ROUNDS)
    print(f"(repository: {REPO})")


if __name__ == "__main__":
    main()
