"""A part job against the bare library calls it makes, against itself on more cores, and its
own process against its workers.

One part of real WARCs: every sample WARC, copied REPEATS times under new names, so the part
is many files of at least 4,000 documents, as a part of a real snapshot is many files. The
extract part job (scripts/extract.py, as the rule runs it, with the demo's settings and
holdout) runs on it with each HTML engine (trafilatura, resiliparse, blockml), with 1 worker
pinned to 1 core and with 2 workers pinned to 2 cores (taskset); their outputs must be the
same bytes. The job says the CPU seconds of its own process and of its workers: their ratio
per page is how many workers one job's own process can keep fed. Then, in this process on one
core, the bare library calls the job makes on the same records: warcio reading them, the
engine on the same pages (decoded as the job decodes them) and ftfy.fix_encoding on its text.
Targets: the 2-worker job at least 1.9x the 1-worker job, the 1-worker job's documents per
second within 15 % of the bare calls', and its own process able to feed at least 64 workers.

The score part job then runs on the documents the trafilatura job wrote, with 1 and 2 workers
in the same way, against the bare calls it makes on them (common.score_bare_seconds: fastText
lid.176 and quality predict, MinHash, heuristics, PII, toxicity, the decontamination scan),
with a fastText quality model trained on the bundled labels and the index of the demo's
benchmarks (--tiny: GSM8K alone). Each job is a table of the same shape (`print_table`).

The OCR part job (scripts/ocr.py, Tesseract, the demo's settings) runs on a part of the
repository's PDFs (data/bench/pdf, data/sample/pdf) copied OCR_REPEATS times, with 1 and 2
workers in the same way: its outputs must be the same bytes, and its own process (which reads
each PDF and hands it to a sandbox) against its workers (which route it and run Tesseract) says
how many workers one job can feed.

usage: python bench/bench_part.py [WORKDIR] [--tiny]
(--tiny: the three smallest sample WARCs and one scanned PDF once; its figures mean nothing)
"""

from __future__ import annotations

import filecmp
import json
import os
import re
import resource
import shutil
import sys
import time
from pathlib import Path

# common puts the repository on the import path
from common import (REPO, pin_to_one_cpu, run_checked, run_in_workdir, score_arguments, score_bare_seconds,  # noqa: E402
                    timed)

import ftfy  # noqa: E402
import trafilatura  # noqa: E402
from resiliparse.extract.html2text import extract_plain_text  # noqa: E402
from warcio.archiveiterator import ArchiveIterator  # noqa: E402

from tests.sample_data import demo_config  # noqa: E402
from tokenmill.config import validate  # noqa: E402
from tokenmill.decontaminate import Benchmark, DecontaminationSettings, build_index  # noqa: E402
from tokenmill.extract.blockml import extract_blockml, load_model  # noqa: E402
from tokenmill.extract.records import FileStats, warc_candidates  # noqa: E402
from tokenmill.extract.settings import ocr_settings  # noqa: E402
from tokenmill.extract.html import decode_html  # noqa: E402
from tokenmill.holdout import HoldoutRules  # noqa: E402
from tokenmill.io import read_jsonl_zst  # noqa: E402
from tokenmill.langid import bundled_model_path  # noqa: E402
from tokenmill.quality.fasttext import FastTextSettings, train_fasttext  # noqa: E402

REPEATS = 15  # the sample's 16 WARCs hold 279 pages to parse (with the demo's web holdout): 15 copies make 4,185
TINY_WARCS = ("warcio/example.warc.gz", "common-crawl/whirlwind.warc.gz", "common-crawl/warcfile.warc.gz")
OCR_REPEATS = 3  # the repository's 37 PDFs, 3 times over
TINY_PDF = "data/bench/pdf/edgar_image.pdf"  # one scanned page
WORKERS = (1, 2)
ENGINES = ("trafilatura", "resiliparse", "blockml")
JOB_CPU = re.compile(r"CPU seconds: the job's own process ([\d.]+) \(([\d.]+) of them starting\), its workers ([\d.]+)")


def part_files(workdir: Path, tiny: bool) -> list[str]:
    """The part's input files: copies of the sample WARCs, in planning's (sorted) order."""
    sample = REPO / "data" / "sample" / "warc"
    originals = [sample / name for name in TINY_WARCS] if tiny else sorted(sample.glob("*/*.warc*"))
    inputs = workdir / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    for copy in range(1 if tiny else REPEATS):
        for original in originals:
            shutil.copyfile(original, inputs / f"copy{copy}-{original.parent.name}-{original.name}")
    return sorted(str(path) for path in inputs.iterdir())


def extract_settings() -> dict:
    """The demo's extract settings and holdout, as the workflow hands them to a crawl source's job
    (gov.uk's: the web holdout; the time-forward slice would hold out every article page)."""
    config = validate(demo_config())
    holdout = HoldoutRules.from_config(config["holdout"], "govuk")
    return {**config["extract"], "fields": {}, "holdout": vars(holdout)}


def run_job(workdir: Path, inputs: list[str], workers: int, cpus: list[int], settings: dict
            ) -> tuple[float, Path, tuple[float, float, float]]:
    """Wall seconds of the extract script on the part, pinned to `cpus`; its output folder; the
    CPU seconds of its own process, of its start-up (imports, which the forked workers share) and
    of its workers."""
    out = workdir / f"{settings['engine']}-{workers}-workers"
    shutil.rmtree(out, ignore_errors=True)
    command = ["taskset", "-c", ",".join(map(str, cpus)), sys.executable, "-P", str(REPO / "scripts" / "extract.py"),
               "--inputs", *inputs, "--workers", str(workers), "--kind", "warc", "--source", "common_crawl",
               "--snapshot", "bench", "--part", "part", "--tier", "crawl", "--license-id", "CC-TOU",
               "--settings", json.dumps(settings), "--holdout-dir", str(out / "holdout"),
               "--carve-receipt", str(out / "carve.json"), "--docs", str(out / "docs.jsonl.zst"),
               "--quarantine", str(out / "quarantine.jsonl.zst"), "--stats", str(out / "stats.json")]
    start = time.perf_counter()
    result = run_checked(f"extract with {settings['engine']} and {workers} worker(s)", command)
    wall = time.perf_counter() - start
    return wall, out, tuple(map(float, JOB_CPU.search(result.stdout).groups()))


def pdf_part_files(workdir: Path, tiny: bool) -> list[str]:
    """The OCR part's input files: copies of the repository's PDFs, in planning's (sorted) order."""
    originals = sorted([*(REPO / "data" / "bench" / "pdf").rglob("*.pdf"), *(REPO / "data" / "sample" / "pdf").rglob("*.pdf")])
    inputs = workdir / "pdf-inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    for copy in range(1 if tiny else OCR_REPEATS):
        for original in originals:
            if not tiny or original == REPO / TINY_PDF:
                shutil.copyfile(original, inputs / f"copy{copy}-{original.parent.name}-{original.name}")
    return sorted(str(path) for path in inputs.iterdir())


def run_ocr_job(workdir: Path, inputs: list[str], workers: int, cpus: list[int]
                ) -> tuple[float, Path, tuple[float, float, float]]:
    """Wall seconds of the OCR script (Tesseract, the demo PDF source's settings) on the part,
    pinned to `cpus`; its output folder; the CPU seconds of its own process, of its start-up and
    of its workers."""
    out = workdir / f"ocr-{workers}-workers"
    shutil.rmtree(out, ignore_errors=True)
    command = ["taskset", "-c", ",".join(map(str, cpus)), sys.executable, "-P", str(REPO / "scripts" / "ocr.py"),
               "--inputs", *inputs, "--kind", "pdf", "--workers", str(workers),
               "--settings", ocr_settings(validate(demo_config()), "pdf_samples"),
               "--pages", str(out / "pages.jsonl.zst"), "--stats", str(out / "stats.json")]
    start = time.perf_counter()
    result = run_checked(f"ocr with {workers} worker(s)", command)
    return time.perf_counter() - start, out, tuple(map(float, JOB_CPU.search(result.stdout).groups()))


def ocr_part_job(workdir: Path, cpus: list[int], tiny: bool) -> None:
    """The OCR part job with 1 and 2 workers: wall time, the same bytes, and how many workers its
    own process feeds (per PDF, which is what it hands out, and per page Tesseract read)."""
    inputs = pdf_part_files(workdir, tiny)
    wall, outputs, cpu = {}, {}, {}
    for workers in WORKERS[:len(cpus)]:
        wall[workers], outputs[workers], cpu[workers] = run_ocr_job(workdir, inputs, workers, cpus[:workers])
    stats = json.loads((outputs[1] / "stats.json").read_text())
    read = stats["status"].get("ok", 0) + stats["status"].get("low_confidence", 0)
    print(f"\nocr (tesseract) part job: {stats['pdfs']} PDFs ({sum(os.path.getsize(p) for p in inputs) / 1e6:.1f} MB), "
          f"{stats['pages']} page rows, {read} pages read by Tesseract")
    for workers, seconds in wall.items():
        own, starting, workers_cpu = cpu[workers]
        per_pdf = max(own - starting, 1e-3)
        print(f"  {workers} worker(s) on {workers} core(s): {seconds:.1f} s wall; the job's own process {starting:.2f} s "
              f"starting, then {1000 * per_pdf / stats['pdfs']:.2f} ms per PDF; its workers "
              f"{1000 * workers_cpu / stats['pdfs']:.0f} ms per PDF ({workers_cpu / max(read, 1):.2f} s per page read): "
              f"one job feeds {workers_cpu / per_pdf:.0f} workers   (target >= 64)")
    if len(outputs) > 1:
        print(f"  speed-up 2 workers vs 1: {wall[1] / wall[2]:.2f}x   (target >= 1.9x)")
        print(f"ocr: outputs of 1 and 2 workers byte-identical: {same_bytes(outputs[1], outputs[2])}")


def same_bytes(first: Path, second: Path) -> bool:
    names = sorted(str(p.relative_to(first)) for p in first.rglob("*") if p.is_file())
    return names == sorted(str(p.relative_to(second)) for p in second.rglob("*") if p.is_file()) and \
        all(filecmp.cmp(first / name, second / name, shallow=False) for name in names)


def bare_engine(settings: dict):
    """The library call the job's engine makes on a decoded page."""
    engine = settings["engine"]
    if engine == "trafilatura":
        return lambda page, url: trafilatura.extract(
            page, url=url, fast=settings["fast"], favor_precision=settings["favor_precision"], include_comments=False,
            include_tables=settings["include_tables"], deduplicate=False) or ""
    if engine == "resiliparse":
        return lambda page, url: extract_plain_text(page, preserve_formatting=True, main_content=True, alt_texts=False,
                                                    comments=False)
    model = load_model(settings["blockml"]["model"], settings["blockml"]["sha256"])
    return lambda page, url: extract_blockml(page, model)[0]


def bare_extract_seconds(inputs: list[str], settings: dict) -> tuple[int, dict[str, float]]:
    """(pages, seconds of each bare library call) on the records the job parses, in this process."""
    holdout = HoldoutRules(**settings["holdout"])

    def read_records():
        for path in inputs:
            with open(path, "rb") as handle:
                for record in ArchiveIterator(handle, arc2warc=True):
                    record.content_stream().read()

    candidates = [c for path in inputs for c in warc_candidates(path, settings["max_bytes"], FileStats(), holdout)]
    pages = [(decode_html(c.payload, c.header_charset).text, c.url) for c in candidates]
    texts = []
    engine = bare_engine(settings)
    seconds = {"warcio: read every record": timed(read_records),
               f"{settings['engine']}: the page's text": timed(lambda: texts.extend(engine(*page) for page in pages))}
    seconds["ftfy.fix_encoding (its text)"] = timed(lambda: [ftfy.fix_encoding(text) for text in texts])
    return len(pages), seconds


def scorer_files(workdir: Path, tiny: bool) -> tuple[Path, Path]:
    """What the score job reads besides the documents: the fastText quality model trained on the
    bundled labels, and the decontamination index of the demo's benchmarks (--tiny: GSM8K)."""
    quality_model, index = workdir / "quality.bin", workdir / "decontamination_index"
    demo = validate(demo_config())
    train_fasttext(str(REPO / "data/sample/quality/aeb-quality-labels.jsonl.gz"), str(quality_model),
                   str(workdir / "quality.json"), FastTextSettings(**demo["quality"]["fasttext"]))
    config = demo["decontamination"]
    benchmarks = [Benchmark(b["name"], b["path"], b["format"], b["fields"]) for b in config["benchmarks"]
                  if not tiny or b["name"] == "gsm8k"]
    build_index(benchmarks, DecontaminationSettings(**{k: v for k, v in config.items() if k != "benchmarks"}),
                str(index))
    return quality_model, index


def run_score_job(workdir: Path, docs: Path, workers: int, cpus: list[int], scorers: tuple[Path, Path]
                  ) -> tuple[float, Path]:
    """Wall seconds of the score script on the extracted part, pinned to `cpus`; its output folder."""
    out = workdir / f"score-{workers}-workers"
    shutil.rmtree(out, ignore_errors=True)
    command = ["taskset", "-c", ",".join(map(str, cpus)), sys.executable, "-P", str(REPO / "scripts" / "score.py"),
               *score_arguments(docs, out, workers, *scorers)]
    return timed(lambda: run_checked(f"score with {workers} worker(s)", command)), out


def print_table(job: str, docs: int, bare: dict[str, float], wall: dict[int, float],
                cpu: dict[int, tuple[float, float, float]] | None = None) -> None:
    """One part job: its wall time per worker count against the bare calls' seconds on one core;
    with `cpu`, its own process's CPU per document (its start-up aside) against its workers'."""
    bare_total = sum(bare.values())
    rows = [*((f"bare {call}", seconds) for call, seconds in bare.items()), ("bare calls, sum (one core)", bare_total),
            *((f"{job} job, {workers} worker(s) on {workers} core(s)", seconds) for workers, seconds in wall.items())]
    print(f"\n{job} part job, {docs} documents")
    for name, seconds in rows:
        print(f"  {name:<46} {seconds:8.1f} s {docs / seconds:8.1f} docs/s")
    print(f"  job/bare (1 worker, docs/s): {bare_total / wall[1]:.3f}   (target >= 0.85)")
    if 2 in wall:
        print(f"  speed-up 2 workers vs 1: {wall[1] / wall[2]:.2f}x   (target >= 1.9x)")
    for workers, (own, starting, workers_cpu) in (cpu or {}).items():
        per_document = max(own - starting, 1e-3)
        print(f"  {workers} worker(s): the job's own process {starting:.2f} s starting, then {1000 * per_document / docs:.3f} "
              f"ms per document; its workers {1000 * workers_cpu / docs:.2f} ms: one job feeds "
              f"{workers_cpu / per_document:.0f} workers   (target >= 64)")


def main(workdir: Path, tiny: bool) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    inputs = part_files(workdir, tiny)
    print(f"one part of {len(inputs)} WARC files ({sum(os.path.getsize(p) for p in inputs) / 1e6:.1f} MB), "
          f"CPUs {cpus}")
    jobs = {}
    for engine in ENGINES:
        settings = {**extract_settings(), "engine": engine}
        wall, outputs, cpu = {}, {}, {}
        for workers in WORKERS:
            if workers > len(cpus):
                print(f"skipped: {workers} workers; this machine lets the benchmark use {len(cpus)} CPU(s)")
                continue
            wall[workers], outputs[workers], cpu[workers] = run_job(workdir, inputs, workers, cpus[:workers], settings)
        if len(outputs) > 1:
            print(f"{engine}: outputs of 1 and 2 workers byte-identical: {same_bytes(outputs[1], outputs[2])}")
        jobs[engine] = settings, wall, outputs, cpu
    print(f"peak memory of one process (the job or a worker): "
          f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.0f} MB")
    docs = json.loads((jobs["trafilatura"][2][1] / "stats.json").read_text())["candidates"]
    extracted = jobs["trafilatura"][2][1] / "docs.jsonl.zst"
    scorers = scorer_files(workdir, tiny)
    score_wall, score_outputs = {}, {}
    for workers in jobs["trafilatura"][1]:
        score_wall[workers], score_outputs[workers] = run_score_job(workdir, extracted, workers, cpus[:workers], scorers)
    if len(score_outputs) > 1:
        print(f"score outputs of 1 and 2 workers byte-identical: {same_bytes(score_outputs[1], score_outputs[2])}")
    ocr_part_job(workdir, cpus, tiny)
    pin_to_one_cpu()
    for engine, (settings, wall, _, cpu) in jobs.items():
        pages, bare = bare_extract_seconds(inputs, settings)
        assert pages == docs, f"the bare calls saw {pages} pages, the job {docs}"
        print_table(f"extract ({engine})", docs, bare, wall, cpu)
    texts = [doc["text"] for doc in read_jsonl_zst(extracted)]
    print_table("score", len(texts), score_bare_seconds(texts, bundled_model_path(), *map(str, scorers)), score_wall)


if __name__ == "__main__":
    run_in_workdir(main, __doc__, "where the part and its outputs go (kept); default a temporary one")
