"""Side-by-side: the spine's rules against the bare library calls, on the same documents.

Runs the demo graph with one core (so seconds are core-seconds), reads Snakemake's
benchmark files for extract (WARC parts), langid and tokenize, then times
trafilatura.extract, fastText predict and tokenizers encode_batch (one thread) on exactly
the documents those rules handled, in this process. Prints documents per second per core
and the ratio rule / bare. The rule figures include everything a job does (process start,
imports, reading and writing compressed files); the bare figures are the library call alone.

A second table repeats the comparison on one large part (the gzipped sample WARCs
concatenated LARGE_PART_REPEATS times, which is a valid multi-member WARC; the damaged
clipped.warc.gz is left out because a broken gzip member ends the stream), where the fixed cost of a job (interpreter start, imports, model load) is spread
over more documents, as it is on real parts of 10^4-10^5 documents.

usage: python bench/bench_spine.py [WORKDIR]
"""

from __future__ import annotations

import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ["RAYON_NUM_THREADS"] = "1"  # before tokenizers is imported: one core for the bare calls

LARGE_PART_REPEATS = 5

import fasttext  # noqa: E402
import trafilatura  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

from common import REPO, timed  # noqa: E402 (puts the repository on the path)
from tests.conftest import demo_config, snakemake_command, write_config  # noqa: E402
from tokenmill.extract import PartStats, warc_candidates  # noqa: E402
from tokenmill.extract.html import decode_html  # noqa: E402
from tokenmill.io import read_jsonl_zst, read_parquet  # noqa: E402
from tokenmill.langid import bundled_model_path  # noqa: E402
from tokenmill.plan import read_plan  # noqa: E402


def job_seconds(workdir: Path, rule: str, row: dict, version: str) -> float:
    versioned = f"{version}/" if rule == "tokenize" else ""
    path = workdir / "results" / "benchmarks" / rule / f"{versioned}{row['source']}/{row['snapshot']}/{row['part']}.tsv"
    with open(path) as handle:
        return float(next(csv.DictReader(handle, delimiter="\t"))["s"])


def print_table(title: str, docs: dict, rule_seconds: dict, bare_seconds: dict, jobs: dict) -> None:
    print(title)
    print(f"{'stage':<9} {'docs':>5} {'jobs':>4} {'rule docs/s/core':>16} {'bare docs/s/core':>16} {'rule/bare':>9}")
    for stage in ("extract", "langid", "tokenize"):
        rule_rate = docs[stage] / rule_seconds[stage]
        bare_rate = docs[stage] / bare_seconds[stage]
        print(f"{stage:<9} {docs[stage]:>5} {jobs[stage]:>4} {rule_rate:>16.1f} {bare_rate:>16.1f} {rule_rate / bare_rate:>9.3f}")


def bare_seconds(pages: list, texts: list[str], selected: list[str], tokenizer_path: Path) -> dict:
    """Seconds of the bare library calls, one thread, on the given documents."""
    model = fasttext.load_model(bundled_model_path())
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    return {
        "extract": timed(lambda: [trafilatura.extract(html, url=url, favor_precision=True, include_comments=False,
                                                      include_tables=True, deduplicate=False) for html, url in pages]),
        "langid": timed(lambda: model.predict([t.replace("\n", " ") for t in texts], k=1)),
        "tokenize": timed(lambda: tokenizer.encode_batch(selected, add_special_tokens=False)),
    }


def run_script(name: str, *args: str) -> float:
    command = [sys.executable, "-P", str(REPO / "scripts" / f"{name}.py"), *args]
    return timed(lambda: subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))


def large_part(workdir: Path, plan: list[dict], version: str) -> None:
    """Run extract, langid and tokenize scripts on one part holding every sample WARC record."""
    big = workdir / "large"
    big.mkdir(exist_ok=True)
    warc = big / "all.warc.gz"
    members = b"".join(Path(row["input"]).read_bytes() for row in plan
                       if row["input"].endswith(".warc.gz") and not row["input"].endswith("clipped.warc.gz"))
    warc.write_bytes(members * LARGE_PART_REPEATS)
    settings = json.dumps({"max_bytes": 8 << 20, "fast": False, "favor_precision": True, "include_tables": True,
                           "zstd_level": 6, "fields": {}})
    docs, select, tokens = big / "docs.jsonl.zst", big / "select.parquet", big / "tokens.parquet"
    seconds = {
        "extract": run_script("extract", "--input", str(warc), "--kind", "warc", "--source", "s", "--snapshot", "x",
                              "--part", "all", "--tier", "crawl", "--license-id", "x", "--settings", settings,
                              "--docs", str(docs), "--quarantine", str(big / "q.jsonl.zst"),
                              "--stats", str(big / "stats.json")),
        "langid": run_script("langid", "--docs", str(docs), "--out", str(big / "langid.parquet")),
    }
    policy = json.dumps({"languages": None, "min_lang_conf": 0.0, "lang_conf": {}, "min_chars": 0,
                         "keep_truncated_records": True})
    run_script("select", "--docs", str(docs), "--langid", str(big / "langid.parquet"), "--policy", policy,
               "--out", str(select))
    tokenizer = workdir / "results" / "tokenizer" / version / "tokenizer.json"
    seconds["tokenize"] = run_script("tokenize", "--docs", str(docs), "--select", str(select), "--tokenizer",
                                     str(tokenizer), "--seed", "1", "--out", str(tokens))
    texts = [doc["text"] for doc in read_jsonl_zst(docs)]
    pages = [(decode_html(c.payload, c.header_charset).text, c.url) for c in warc_candidates(str(warc), 8 << 20, PartStats())]
    bare = bare_seconds(pages, texts, texts, tokenizer)
    counts = {"extract": len(pages), "langid": len(texts), "tokenize": len(texts)}
    print_table(f"\none large part (the sample WARCs x{LARGE_PART_REPEATS} in one file)", counts, seconds, bare,
                {"extract": 1, "langid": 1, "tokenize": 1})


def main(workdir: Path) -> None:
    write_config(workdir, demo_config())
    start = time.perf_counter()
    subprocess.run(snakemake_command(workdir, "--cores", "1", "--quiet", "all"), cwd=workdir, check=True,
                   stdout=subprocess.DEVNULL)
    print(f"demo graph on 1 core: {time.perf_counter() - start:.1f} s wall")
    plan_path = next((workdir / "results" / "plan").glob("*/parts.tsv"))
    version = plan_path.parent.name
    plan = read_plan(str(plan_path))

    pages, texts, selected = [], [], []
    seconds = {"extract": [], "langid": [], "tokenize": []}
    for row in plan:
        docs = list(read_jsonl_zst(workdir / row["docs"]))
        keep = read_parquet(workdir / row["select"]).column("selected").to_pylist()
        texts += [doc["text"] for doc in docs]
        selected += [doc["text"] for doc, chosen in zip(docs, keep) if chosen]
        seconds["langid"].append(job_seconds(workdir, "langid", row, version))
        seconds["tokenize"].append(job_seconds(workdir, "tokenize", row, version))
        if row["kind"] == "warc":
            for candidate in warc_candidates(row["input"], 8 << 20, PartStats()):
                pages.append((decode_html(candidate.payload, candidate.header_charset).text, candidate.url))
            seconds["extract"].append(job_seconds(workdir, "extract", row, version))

    bare = bare_seconds(pages, texts, selected, workdir / "results" / "tokenizer" / version / "tokenizer.json")
    docs = {"extract": len(pages), "langid": len(texts), "tokenize": len(selected)}
    print_table("demo graph (Snakemake benchmark files, one job per part)", docs,
                {stage: sum(values) for stage, values in seconds.items()}, bare,
                {stage: len(values) for stage, values in seconds.items()})
    print("median job wall time: " + ", ".join(f"{stage} {statistics.median(values):.2f} s"
                                               for stage, values in seconds.items()))
    large_part(workdir, plan, version)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]).resolve())
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp))
