"""The OCR part job: every PDF of a part (PDF files, or PDF responses of WARCs) routed as
extract routes it, and the pages that need OCR read by the source's engine, to one row per page
(tokenmill.extract.ocr) that the part's extract job then reads.

Tesseract runs in the part's sandboxes (tokenmill.extract.sandbox), one PDF per sandbox at a
time, so a PDF that hangs or crashes pdfium costs that PDF's pages, not the part; vLLM runs in
the job's own process on the GPU, pages rendered in the sandboxes first. Rows come out in input
order (file, record, page) for any number of workers, and hold no timing: the same inputs give
the same bytes. The CPU time goes to the log (and Snakemake's benchmark file).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import os
import time
from collections import Counter

from tokenmill.extract.ocr import (OcrSettings, OcrUnavailable, check_tesseract_languages, judged, ocr_rows,
                                   ocr_settings, page_row, rendered_pages, tesseract_version, vllm_reader)
from tokenmill.extract.pdf_settings import PdfRouting
from tokenmill.extract.records import PDF_TYPE, Candidate, FileStats, pdf_candidates, warc_candidates
from tokenmill.extract.sandbox import SandboxFailure, SandboxPool, print_job_cpu
from tokenmill.io import JsonlZstWriter, read_jsonl_zst, write_json
from tokenmill.progress import Progress, log_progress_to_stderr

OCR_OUTPUT_FORMAT = "tokenmill-ocr/1"


def read_ocr_rows(path: str) -> dict[tuple[str, int], dict[int, dict]]:
    """An OCR output: (input, offset) of each PDF -> its rows by page number."""
    rows: dict[tuple[str, int], dict[int, dict]] = {}
    for row in read_jsonl_zst(path):
        if row["page"] is not None:
            rows.setdefault((row["input"], row["offset"]), {})[row["page"]] = row
    return rows


def _pdfs(inputs: list[str], kind: str, max_bytes: int):
    """Every complete PDF of the part's files, in order (truncated ones and everything else are
    extract's to count and quarantine). Rows name a PDF by its file and offset, not its url: the
    urls side file is extract's alone."""
    for path in inputs:
        # a WARC's HTML is extract's: no byte of it is kept here (the PDF cap applies to PDFs)
        records = (warc_candidates(path, 0, FileStats(), pdf_max_bytes=max_bytes) if kind == "warc"
                   else pdf_candidates(path, max_bytes, FileStats()))
        for record in records:
            if isinstance(record, Candidate) and record.content_type == PDF_TYPE and not record.truncated:
                yield record


def _rendered(data: bytes, pdf_settings: PdfRouting, settings: OcrSettings) -> list[tuple[dict, bytes | None]]:
    """The pages of a PDF that need OCR, rendered in a sandbox for the GPU engine."""
    return list(rendered_pages(data, pdf_settings, settings))


def ocr_part(inputs: list[str], kind: str, settings: dict, engine: str, out_path: str, stats_path: str,
             workers: int = 1) -> dict:
    """OCR a part's PDF pages that need it with `engine` (tesseract or vllm); `settings` is what
    the engine reads (tokenmill.extract.settings.ocr_settings: the PDF routing settings, the
    engine's `extract.ocr` keys, the sandbox limits and zstd_level). Writes the rows and the
    part's OCR stats."""
    pdf_settings = PdfRouting(**{field.name: settings["pdf"][field.name] for field in dataclasses.fields(PdfRouting)})
    settings_ocr = ocr_settings(settings)
    if engine == "tesseract":
        check_tesseract_languages(settings_ocr.languages)
        work = functools.partial(ocr_rows, pdf_settings=pdf_settings, settings=settings_ocr)
        engine_version = tesseract_version()
    elif engine == "vllm":
        reader = vllm_reader(settings_ocr)
        work = functools.partial(_rendered, pdf_settings=pdf_settings, settings=settings_ocr)
        engine_version = reader.engine
    else:
        raise OcrUnavailable(f"unknown OCR engine {engine!r}")
    # every page a PDF may send to OCR, each under its own deadline, plus pdfium's routing
    deadline = settings_ocr.page_timeout_s * settings_ocr.max_pages + settings["timeout_s"]
    statuses, pdfs, started, cpu_before = Counter(), 0, time.monotonic(), os.times()
    progress = Progress("ocr", unit="PDFs")
    with SandboxPool(work, workers, deadline, settings["memory_mb"]) as pool, \
            JsonlZstWriter(out_path, settings["zstd_level"]) as out:
        pending: list[tuple[Candidate, dict]] = []  # rendered pages waiting for a GPU batch

        def flush():
            texts = reader([page.pop("png") for _, page in pending])
            for (candidate, page), text in zip(pending, texts):
                write(candidate, page_row({**page, **judged("ok", text, pdf_settings)}, reader.engine))
            pending.clear()

        def write(candidate: Candidate, row: dict):
            statuses[row["status"].split(":")[0] if row["page"] is not None else "pdf_failed"] += 1
            out.write({"input": candidate.input, "offset": candidate.offset, "record_id": candidate.record_id,
                       **row})

        for candidate, outcome in pool.imap(_pdfs(inputs, kind, pdf_settings.max_bytes),
                                            lambda candidate: candidate.payload):
            pdfs += 1
            progress.tick()
            try:
                rows = outcome.get()
            except SandboxFailure as failure:  # the PDF's pages stay listed for OCR in extract
                write(candidate, {"page": None, "route": None, "engine": engine_version,
                                  "status": f"failed: {failure.reason}: {failure.detail}", "text": ""})
                continue
            for row in rows:
                if engine == "tesseract":
                    write(candidate, row)
                elif row[1] is None:  # not rendered: its row says why
                    write(candidate, page_row(row[0], engine_version))
                else:
                    pending.append((candidate, {**row[0], "png": row[1]}))
            if engine == "vllm" and len(pending) >= settings_ocr.batch_pages:
                flush()
        if engine == "vllm" and pending:
            flush()
    progress.finish()
    cpu = os.times()
    cpu_s = sum(cpu[:4]) - sum(cpu_before[:4])
    pages = sum(count for status, count in statuses.items() if status != "pdf_failed")
    print(f"OCR ({engine}): {pdfs} PDFs, {pages} pages in {time.monotonic() - started:.1f} s wall, {cpu_s:.1f} s CPU "
          f"(job and tesseract): {pages / cpu_s if cpu_s else 0:.2f} pages per CPU-second; {dict(statuses)}")
    stats = {"format": OCR_OUTPUT_FORMAT, "engine": engine_version,
             "pdfs": pdfs, "pages": pages, "status": dict(sorted(statuses.items()))}
    write_json(stats_path, stats)
    return stats


def main(engine: str, argv=None, description: str = "") -> None:
    """The command line of the ocr and ocr_vllm rules' scripts."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--inputs", required=True, nargs="+", help="the part's input files, in order")
    parser.add_argument("--kind", required=True, choices=["warc", "pdf"])
    parser.add_argument("--workers", type=int, required=True, help="PDFs routed (and, for tesseract, read) at once")
    parser.add_argument("--settings", required=True, help="the part's OCR settings (JSON)")
    parser.add_argument("--pages", required=True, help="the OCR rows, one per page read")
    parser.add_argument("--stats", required=True)
    args = parser.parse_args(argv)
    started = time.process_time()  # the job's start-up (imports), which its forked sandboxes share
    log_progress_to_stderr()
    try:
        stats = ocr_part(args.inputs, args.kind, json.loads(args.settings), engine, args.pages, args.stats,
                         args.workers)
    except OcrUnavailable as error:
        raise SystemExit(f"ocr ({engine}): {error}") from None
    print(json.dumps(stats, indent=1))
    print_job_cpu(started)
