"""Licence detection of code repositories: tokenmill's `detect_license` against the bare library
matcher it builds on (spdx-matcher's `analyse_license_text`, as shipped), on real release
tarballs: `--set code-repos` (default) the 26 of data/bench/code-repos, `--set extra` the 7 of
data/bench/code-license-extra (the cases of issue 32 the detection was fixed on), `--set heldout`
the 18 of data/bench/code-license-heldout, which it was not tuned on, `--set isc` the 3 ISC archives
of data/bench/code-license-isc that were read as 0BSD (issue 62 item 3, fixed on them), `--set
isc-heldout` the 36 ISC, 0BSD and MIT-0 archives of data/bench/code-license-isc-heldout, which that
fix was not tuned on (each folder's SOURCES.md).

One core (this process pinned to one CPU):
- accuracy: the repository's SPDX expression against ground_truth.tsv's `spdx`, compared as
  expressions (`Apache-2.0 OR BSD-2-Clause` equals `BSD-2-Clause OR Apache-2.0`), and its
  licence class against the class of the ground truth's expression. The bare
  matcher sees the root licence files only and says the AND of all it finds, which is what a
  pipeline without the evidence-combining of `detect_license` would record;
- speed: repositories and files per CPU-second, `detect_license` on every prefix it asks for
  (licence files, root manifests, 3,000-byte source headers) next to the bare matcher on the
  root licence files alone; the files are read from the tarballs before the clock starts. The
  bare matcher runs first, before `detect_license` memoises the library's text normalisation.

usage: python bench/bench_code_license.py [--tiny] [--set code-repos|extra|heldout|isc|isc-heldout]
       [--data FOLDER]
(--tiny: two repositories; its figures mean nothing)
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

from common import REPO, add_tiny_option, pin_to_one_cpu  # puts the repository on the import path

from tokenmill.code import license as code_license  # noqa: E402
from tokenmill.code.license import (detect_license, equivalent, is_license_file, license_class,  # noqa: E402
                                    license_read_size)
from tokenmill.code.repository import read_repository  # noqa: E402

BENCH_DATA = REPO / "data" / "bench"
SETS = {"code-repos": BENCH_DATA / "code-repos", "extra": BENCH_DATA / "code-license-extra",
        "heldout": BENCH_DATA / "code-license-heldout", "isc": BENCH_DATA / "code-license-isc",
        "isc-heldout": BENCH_DATA / "code-license-isc-heldout"}
SPEED_ROUNDS = 3  # 26 repositories take well under a second: read them several times for a steadier figure


def license_inputs(tarball: Path) -> dict[str, bytes]:
    """What `detect_license` reads of the repository's files."""
    return {file.path: file.data[:license_read_size(file.path)] for file in read_repository(tarball).files
            if license_read_size(file.path)}


def root_license_texts(files: dict[str, bytes]) -> list[str]:
    return [files[path].decode("utf-8", errors="replace") for path in sorted(files)
            if "/" not in path and is_license_file(path)]


def bare_expression(analyse, texts: list[str]) -> str:
    ids = sorted({spdx_id for text in texts for spdx_id in analyse(text)[0].get("licenses", {})})
    return " AND ".join(ids) or "NOASSERTION"


def cpu_seconds(function) -> float:
    start = time.process_time()
    function()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", choices=sorted(SETS), default="code-repos", help="which set of tarballs")
    parser.add_argument("--data", help="a folder of tarballs with a ground_truth.tsv (instead of --set)")
    add_tiny_option(parser)
    args = parser.parse_args()
    data_dir = Path(args.data) if args.data else SETS[args.set]
    cpu = pin_to_one_cpu()
    truth = {row["file"]: row["spdx"] for row in csv.DictReader(open(data_dir / "ground_truth.tsv", encoding="utf-8"),
                                                                 delimiter="\t")}
    names = sorted(truth)[:2] if args.tiny else sorted(truth)
    repositories = {name: license_inputs(data_dir / name) for name in names}
    licence_texts = {name: root_license_texts(files) for name, files in repositories.items()}

    import spdx_matcher  # the library as shipped: detect_license has not run yet
    analyse = spdx_matcher.analyse_license_text
    first_use = cpu_seconds(lambda: analyse("MIT License"))  # loads the library's 16 MB template cache
    bare_said = {name: bare_expression(analyse, texts) for name, texts in licence_texts.items()}
    rounds = 1 if args.tiny else SPEED_ROUNDS
    bare_seconds = cpu_seconds(lambda: [analyse(text) for _ in range(rounds) for texts in licence_texts.values()
                                        for text in texts])

    index_build = cpu_seconds(code_license._references)  # once per process: the SPDX texts' shingles
    ours_said = {}
    # the first pass also compares, word by word, the related reference texts it meets (once per
    # process and pair: ISC and 0BSD, BSD-3-Clause and BSD-4-Clause); the rounds below reuse them
    first_pass = cpu_seconds(lambda: ours_said.update(
        (name, detect_license(files).expression) for name, files in repositories.items()))

    def ours_cold():
        for _ in range(rounds):
            code_license._read_text.cache_clear()  # each round pays for every licence text again
            for files in repositories.values():
                detect_license(files)

    ours_seconds = cpu_seconds(ours_cold)

    print(f"licence detection on {len(names)} repositories of {data_dir.name} (one core, cpu {cpu}); "
          f"speed over {rounds} round(s)")
    print(f"  spdx-matcher first use (template cache load): {first_use:.2f} CPU-s; tokenmill's reference "
          f"index (once per process, not in the speed below): {index_build:.2f} CPU-s; its first pass (with the "
          f"comparisons of related references, once per process): {first_pass:.2f} CPU-s")
    licence_files = sum(len(texts) for texts in licence_texts.values())
    all_files = sum(len(files) for files in repositories.values())
    rows = [("tokenmill detect_license", ours_said, ours_seconds, all_files, "licence files, manifests, headers"),
            ("bare spdx-matcher", bare_said, bare_seconds, licence_files, "root licence files")]
    print(f"  {'engine':26s} {'right':>7s} {'class':>7s} {'repos/CPU-s':>12s} {'files/CPU-s':>12s}  files read")
    for engine, said, seconds, files, what in rows:
        right = sum(equivalent(said[name], truth[name]) for name in names)
        right_class = sum(license_class(said[name]) == license_class(truth[name]) for name in names)
        seconds = max(seconds, 1e-9)
        print(f"  {engine:26s} {right:>3d}/{len(names):<3d} {right_class:>3d}/{len(names):<3d} "
              f"{rounds * len(names) / seconds:12.1f} {rounds * files / seconds:12.1f}  {files} ({what})")
    print(f"  detect_license / bare spdx-matcher CPU time: {ours_seconds / max(bare_seconds, 1e-9):.2f}x")
    for engine, said, _, _, _ in rows:
        for name in names:
            if not equivalent(said[name], truth[name]):
                print(f"  wrong, {engine}: {name}: said {said[name]!r} ({license_class(said[name])}), "
                      f"truth {truth[name]!r} ({license_class(truth[name])})")


if __name__ == "__main__":
    main()
