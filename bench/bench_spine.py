"""Side-by-side: the spine's rules against the bare library calls, on the same documents.

Runs the demo graph with one core (so seconds are core-seconds), reads Snakemake's
benchmark files for extract (WARC parts), score and tokenize, then times
trafilatura.extract, the bare library calls of the score job (common.score_bare_seconds:
fastText lid.176 and quality predict, MinHash, heuristics, PII, toxicity, the decontamination
scan, together) and tokenizers encode_batch (one thread) on exactly the documents those rules
handled, in this process. Prints documents per second per core
and the ratio rule / bare. The rule figures include everything a job does (process start,
imports, reading and writing compressed files); the bare figures are the library call alone.

A second table repeats the comparison on one large part (the gzipped sample WARCs
concatenated LARGE_PART_REPEATS times, which is a valid multi-member WARC; the damaged
clipped.warc.gz is left out because a broken gzip member ends the stream), where the fixed cost of a job (interpreter start, imports, model load) is spread
over more documents, as it is on real parts of 10^4-10^5 documents.

With --tiny the graph runs on one source of the demo, gov.uk's first snapshot (one WARC part),
its holdout carved and pinned first as a user does, and the large part is that part once.

With --run DIR no graph runs: the figures are read from a finished run of the demo config in DIR
(`make demo` leaves one in the repository's root), whose jobs ran under that run's --cores, so
its seconds are not core-seconds on a busy machine. With --tiny as well, only gov.uk's first
snapshot of it is read: the test suite's form, which reads the demo it has built already.

usage: python bench/bench_spine.py [WORKDIR] [--tiny] [--run DIR]
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

os.environ["RAYON_NUM_THREADS"] = "1"  # before tokenizers is imported: one core for the bare calls

LARGE_PART_REPEATS = 5
TINY_SOURCE, TINY_SNAPSHOT = "govuk", "BL-20140325121225"

import pyarrow as pa  # noqa: E402
import trafilatura  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

from common import REPO, run_checked, run_in_workdir, score_arguments, score_bare_seconds, timed  # noqa: E402 (puts the repository on the path)
from tests.sample_data import demo_config, with_one_encoder_epoch, with_sources, write_config  # noqa: E402
from bench_part import extract_settings  # noqa: E402
from tokenmill.extract.records import FileStats, warc_candidates  # noqa: E402
from tokenmill.extract.html import decode_html  # noqa: E402
from tokenmill.holdout import HoldoutRules  # noqa: E402
from tokenmill.io import read_jsonl_zst, read_parquet, write_parquet  # noqa: E402
from tokenmill.langid import bundled_model_path  # noqa: E402
from tokenmill.plan import read_plan  # noqa: E402
from tokenmill.select.judge import SCHEMA as SELECT_SCHEMA  # noqa: E402


def job_seconds(root: Path, rule: str, row: dict, version: str) -> float:
    versioned = f"{version}/" if rule == "tokenize" else ""
    path = root / "results" / "benchmarks" / rule / f"{versioned}{row['source']}/{row['snapshot']}/{row['part']}.tsv"
    with open(path) as handle:
        return float(next(csv.DictReader(handle, delimiter="\t"))["s"])


def print_table(title: str, docs: dict, rule_seconds: dict, bare_seconds: dict, jobs: dict) -> None:
    print(title)
    print(f"{'stage':<9} {'docs':>5} {'jobs':>4} {'rule docs/s/core':>16} {'bare docs/s/core':>16} {'rule/bare':>9}")
    for stage in ("extract", "score", "tokenize"):
        rule_rate = docs[stage] / rule_seconds[stage]
        bare_rate = docs[stage] / bare_seconds[stage]
        print(f"{stage:<9} {docs[stage]:>5} {jobs[stage]:>4} {rule_rate:>16.1f} {bare_rate:>16.1f} {rule_rate / bare_rate:>9.3f}")


def bare_seconds(pages: list, texts: list[str], selected: list[str], tokenizer_path: Path, results: Path) -> dict:
    """Seconds of the bare library calls, one thread, on the given documents (the score job's
    models from the run's `results`)."""
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    quality_model, index = scorer_files(results)
    settings = extract_settings()
    return {
        "extract": timed(lambda: [trafilatura.extract(html, url=url, fast=settings["fast"],
                                                      favor_precision=settings["favor_precision"], include_comments=False,
                                                      include_tables=settings["include_tables"], deduplicate=False)
                                  for html, url in pages]),
        "score": sum(score_bare_seconds(texts, bundled_model_path(), str(quality_model), str(index)).values()),
        "tokenize": timed(lambda: tokenizer.encode_batch(selected, add_special_tokens=False)),
    }


def scorer_files(results: Path) -> tuple[Path, Path]:
    """The fastText quality model and the decontamination index that the run's score jobs read."""
    return results / "train_quality_fasttext" / "model.bin", results / "decontamination_index"


def run_script(name: str, *args: str) -> float:
    return timed(lambda: run_checked(name, [sys.executable, "-P", str(REPO / "scripts" / f"{name}.py"), *args]))


def keep_everything(docs: Path, out: Path) -> None:
    """The columns of a select table that tokenize reads, keeping every document unchanged: the
    large part times tokenize, not select (which needs a whole snapshot's attributes)."""
    rows = sum(1 for _ in read_jsonl_zst(docs))
    columns = {"row": list(range(rows)), "selected": [True] * rows, "drop_lines": [[]] * rows,
               "scrub_spans": [[]] * rows}
    write_parquet(out, pa.Table.from_pydict(columns, schema=pa.schema([SELECT_SCHEMA.field(c) for c in columns])))


def large_part(workdir: Path, root: Path, config: dict, plan: list[dict], repeats: int) -> None:
    """Run extract, score and tokenize scripts on one part holding every WARC record of the run in
    `root`, in `workdir`."""
    big = workdir / "large"
    big.mkdir(exist_ok=True)
    warc = big / "all.warc.gz"
    members = b"".join((root / path).read_bytes() for row in plan for path in row["inputs"]
                       if path.endswith(".warc.gz") and not path.endswith("clipped.warc.gz"))
    warc.write_bytes(members * repeats)
    settings = extract_settings()
    docs, select, tokens = big / "docs.jsonl.zst", big / "select.parquet", big / "tokens.parquet"
    seconds = {
        "extract": run_script("extract", "--inputs", str(warc), "--workers", "1", "--kind", "warc", "--source", "s",
                              "--snapshot", "x", "--part", "all", "--tier", "crawl", "--license-id", "x",
                              "--settings", json.dumps(settings),
                              "--holdout-dir", str(big / "holdout"), "--carve-receipt", str(big / "carve.json"),
                              "--docs", str(docs), "--quarantine", str(big / "q.jsonl.zst"),
                              "--stats", str(big / "stats.json")),
        "score": run_script("score", *score_arguments(docs, big / "score", 1, *scorer_files(root / "results"))),
    }
    keep_everything(docs, select)
    tokenizer = root / "results" / "train_tokenizer" / config["version"] / "tokenizer.json"
    seconds["tokenize"] = run_script("tokenize", "--docs", str(docs), "--select", str(select), "--tokenizer",
                                     str(tokenizer), "--tokenizer-sha256=", "--seed", "1", "--out", str(tokens))
    texts = [doc["text"] for doc in read_jsonl_zst(docs)]
    pages = [(decode_html(c.payload, c.header_charset).text, c.url)
             for c in warc_candidates(str(warc), settings["max_bytes"], FileStats(), HoldoutRules(**settings["holdout"]))]
    bare = bare_seconds(pages, texts, texts, tokenizer, root / "results")
    counts = {"extract": len(pages), "score": len(texts), "tokenize": len(texts)}
    print_table(f"\none large part (the run's WARCs x{repeats} in one file)", counts, seconds, bare,
                {"extract": 1, "score": 1, "tokenize": 1})


def run_graph(workdir: Path, *targets: str) -> None:
    """Snakemake on the run's own config (`workdir`/config.yaml), one core."""
    run_checked(f"snakemake {' '.join(targets)}",
                [sys.executable, "-m", "snakemake", *targets, "-s", str(REPO / "Snakefile"), "-d", str(workdir),
                 "--configfile", str(workdir / "config.yaml"), "--cores", "1"], cwd=workdir)


def tiny_config(workdir: Path) -> dict:
    """The demo config on one source's one snapshot, with the holdout that this carves pinned."""
    config = demo_config()
    source = config["sources"][TINY_SOURCE]
    source["snapshots"] = {TINY_SNAPSHOT: source["snapshots"][TINY_SNAPSHOT]}
    with_sources(config, {TINY_SOURCE: source})
    config["holdout"].update(manifest_sha256=None, time_forward={"cutoff": None, "sources": []})
    with_one_encoder_epoch(config)
    write_config(workdir, config)
    run_graph(workdir, "holdout/manifest.json")
    config["holdout"]["manifest_sha256"] = hashlib.sha256((workdir / "holdout/manifest.json").read_bytes()).hexdigest()
    return config


def main(workdir: Path, tiny: bool, run: str | None) -> None:
    if run is None:
        config = tiny_config(workdir) if tiny else demo_config()
        write_config(workdir, config)
        start = time.perf_counter()
        run_graph(workdir, "all")
        graph = "tiny graph" if tiny else "demo graph"
        print(f"{graph} on 1 core: {time.perf_counter() - start:.1f} s wall")
        root = workdir
    else:
        config, root = demo_config(), Path(run).resolve()
        graph = f"demo run in {root}" + (f", {TINY_SOURCE} {TINY_SNAPSHOT}" if tiny else "")
    version = config["version"]
    plan = read_plan(str(root / "results" / "plan" / "parts.tsv"), version=version)
    if run is not None and tiny:
        plan = [row for row in plan if (row["source"], row["snapshot"]) == (TINY_SOURCE, TINY_SNAPSHOT)]

    pages, texts, selected = [], [], []
    seconds = {"extract": [], "score": [], "tokenize": []}
    for row in plan:
        docs = list(read_jsonl_zst(root / row["docs"]))
        keep = read_parquet(root / row["select"]).column("selected").to_pylist()
        texts += [doc["text"] for doc in docs]
        selected += [doc["text"] for doc, chosen in zip(docs, keep) if chosen]
        seconds["score"].append(job_seconds(root, "score", row, version))
        seconds["tokenize"].append(job_seconds(root, "tokenize", row, version))
        if row["kind"] == "warc":
            for path in row["inputs"]:
                for candidate in warc_candidates(str(root / path), extract_settings()["max_bytes"], FileStats()):
                    pages.append((decode_html(candidate.payload, candidate.header_charset).text, candidate.url))
            seconds["extract"].append(job_seconds(root, "extract", row, version))

    bare = bare_seconds(pages, texts, selected, root / "results" / "train_tokenizer" / version / "tokenizer.json",
                        root / "results")
    docs = {"extract": len(pages), "score": len(texts), "tokenize": len(selected)}
    print_table(f"{graph} (Snakemake benchmark files, one job per part)", docs,
                {stage: sum(values) for stage, values in seconds.items()}, bare,
                {stage: len(values) for stage, values in seconds.items()})
    print("median job wall time: " + ", ".join(f"{stage} {statistics.median(values):.2f} s"
                                               for stage, values in seconds.items()))
    large_part(workdir, root, config, plan, 1 if tiny else LARGE_PART_REPEATS)


def run_option(parser) -> None:
    parser.add_argument("--run", metavar="DIR", default=None,
                        help="read a finished run of the demo config in DIR instead of running the graph")


if __name__ == "__main__":
    run_in_workdir(main, __doc__, "where the run goes (kept afterwards); default a temporary folder", run_option)
