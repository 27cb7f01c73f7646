"""Code repositories as extract reads them (tokenmill.extract.records.code_candidates: read,
reject, parse gate, licence, documents) on the 26 release tarballs of data/bench/code-repos (see
its SOURCES.md), and their repository-level near-dedup.

One core:
- groups: the repositories that share an LSH bucket (14 bands x 8 rows, as minhash.code), with
  each repository's MinHash taken over its line sketch (what the pipeline does) and, side by side,
  over the set of its kept files' sha256 (the obvious alternative), against the ground truth's five
  version pairs; any other group is a false merge;
- vendored copies: the repositories a repository's vendored files are byte-identical copies of,
  against the ground truth's (poetry-core vendors attrs 23.1.0, packaging 23.1 and tomli 2.0.1);
- speed: files per CPU-second of the whole code_candidates path, side by side with the bare
  tree-sitter parse of the same kept files (in memory, parsers made) plus the bare spdx-matcher on
  the root licence files: the two library calls it is built around.

usage: python bench/bench_code_repos.py [--tiny]   (--tiny: four repositories; its figures mean nothing)
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

import numpy as np

from common import REPO, add_tiny_option, pin_to_one_cpu  # puts the repository on the import path

from tokenmill.code.documents import code_documents  # noqa: E402
from tokenmill.code.license import is_license_file  # noqa: E402
from tokenmill.code.overlap import bucket_groups, repository_files, vendored_copies  # noqa: E402
from tokenmill.config import validate  # noqa: E402
from tokenmill.dedup.minhash import MinHashParams, band_hashes, permutation_coefficients, signatures  # noqa: E402
from tokenmill.extract.records import FileStats, PartInfo, code_candidates, document  # noqa: E402

DATA = REPO / "data" / "bench" / "code-repos"
TINY = ("pypi/click-8.1.2.tar.gz", "pypi/click-8.1.3.tar.gz", "pypi/six-1.16.0.tar.gz", "npm/mustache-4.2.0.tgz")
PARAMS = MinHashParams(112, 14, 8, 5, 1)
SETTINGS = validate({"sources": {"code": {"kind": "code", "tier": "code", "license_id": "x",
                                          "snapshots": {"s": ["x"]}}}})["extract"]
INFO = PartInfo("code", "bench", "part", "code", "per-repository")


def repository_name(path: str) -> str:
    return Path(path).name.split(".t")[0]


def lsh_groups(sets: dict[str, np.ndarray]) -> list[set[str]]:
    """Repositories joined through any shared (band, hash) bucket, groups of two or more."""
    names = sorted(sets)
    signature = signatures([sets[name] for name in names], PARAMS, permutation_coefficients(PARAMS))
    return [group for group in bucket_groups(names, band_hashes(signature, PARAMS.bands, PARAMS.rows))
            if len(group) > 1]


def score_groups(label: str, groups: list[set[str]], pairs: set[frozenset]) -> None:
    found = [pair for pair in pairs if any(pair <= group for group in groups)]
    false = [group for group in groups if frozenset(group) not in pairs]
    print(f"  {label:34s} version pairs grouped {len(found)}/{len(pairs)}   false merges {len(false)}"
          + (f" {sorted(map(sorted, false))}" if false else ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_tiny_option(parser)
    args = parser.parse_args()
    cpu = pin_to_one_cpu()
    rows = list(csv.DictReader((DATA / "ground_truth.tsv").open(encoding="utf-8"), delimiter="\t"))
    rows = [row for row in rows if not args.tiny or row["file"] in TINY]
    paths = [str(DATA / row["file"]) for row in rows]
    names = {repository_name(path) for path in paths}
    pairs = {frozenset(row["near_duplicate_group"].split("~")[:2]) for row in rows
             if "~" in row["near_duplicate_group"] and set(row["near_duplicate_group"].split("~")[:2]) <= names
             and ":" not in row["near_duplicate_group"].split("~")[1]}

    def extract():
        return [document(candidate, INFO, SETTINGS)[0] for path in paths
                for candidate in code_candidates(path, SETTINGS, FileStats())]

    extract()  # warm: the parsers and spdx-matcher's template cache are loaded once per process
    start = time.process_time()
    docs = extract()
    ours_seconds = time.process_time() - start

    made = {repository_name(path): code_documents(path, SETTINGS["code"]) for path in paths}
    files = sum(len(repository.selection.kept) + len(repository.selection.rejected) for repository in made.values())
    kept = [file for repository in made.values() for file in repository.selection.kept]
    licence_texts = [file.text or "" for repository in made.values() for file in repository.repository.files
                     if "/" not in file.path and is_license_file(file.path)]
    from tree_sitter_language_pack import get_parser
    import spdx_matcher
    parsers = {file.language.grammar: get_parser(file.language.grammar) for file in kept
               if file.language and file.language.grammar}
    spdx_matcher.analyse_license_text("MIT License")  # its template cache, loaded once
    start = time.process_time()
    for file in kept:
        if file.language and file.language.grammar:
            parsers[file.language.grammar].parse(file.data)
    for text in licence_texts:
        spdx_matcher.analyse_license_text(text)
    bare_seconds = time.process_time() - start

    print(f"code repositories: {len(paths)} tarballs of {DATA.relative_to(REPO)}, {files:,} members, "
          f"{len(kept):,} kept, {len(docs)} documents; CPU {cpu}")
    print("groups (LSH 14 bands x 8 rows, threshold 0.72):")
    sketches = {name: np.array([int(value, 16) for value in repository.meta(repository.documents[0])["sketch"]],
                               np.uint64) for name, repository in made.items()}
    whole_files = {name: np.array([int(file.sha256[:16], 16) for file in repository.selection.kept], np.uint64)
                   for name, repository in made.items()}
    score_groups("line sketch (tokenmill)", lsh_groups(sketches), pairs)
    score_groups("whole-file sha256 sets", lsh_groups(whole_files), pairs)
    print("vendored copies (byte-identical vendored files of a repository we also have):")
    for row in vendored_copies(repository_files(docs)):
        print(f"  {repository_name(row['repository'])} vendors {repository_name(row['copies'])}: {row['files']} files")
    parsed = sum(bool(file.language and file.language.grammar) for file in kept)
    print(f"speed on one core ({parsed:,} of the {len(kept):,} kept files parsed, {len(licence_texts)} root licence "
          "files matched; files/CPU-s over every member):")
    print(f"  tokenmill code_candidates           {files / ours_seconds:8,.0f} files/CPU-s   ({ours_seconds:.2f} s)")
    print(f"  bare tree-sitter + spdx-matcher     {files / bare_seconds:8,.0f} files/CPU-s   ({bare_seconds:.2f} s)")
    print(f"  code_candidates / bare CPU time: {ours_seconds / max(bare_seconds, 1e-9):.2f}x")


if __name__ == "__main__":
    main()
