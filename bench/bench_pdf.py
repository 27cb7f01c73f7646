"""PDF text extraction: tokenmill's `pdf_text` (pdfium) against poppler's `pdftotext` and plain
pypdf (peers outside the README's set-up: `apt-get install poppler-utils`, `pip install pypdf`;
a missing one is skipped with a note), on the real PDFs of data/bench/pdf (see its SOURCES.md).

One core (this process and the pdftotext it starts pinned to one CPU):
- quality: olmOCR-Bench's unit tests (olmocr-bench/dataset.jsonl and blanks.jsonl, 100 tests
  on 21 single pages), re-implemented after allenai/olmocr's olmocr/bench/tests.py: `present`
  and `absent` (fuzzy to `max_diffs` edits, `case_sensitive`, `first_n`/`last_n`), `order`
  (`before` found before `after`), `table` (a cell and its neighbours in a Markdown or HTML
  table: a text-layer extractor writes no table, so these fail for all three), `math` (a LaTeX
  formula between TeX delimiters: a text layer holds no TeX, so these fail too), `baseline`
  (a blank page gives at most `max_length` alphanumeric characters). Pass rate per type and
  overall per engine; a page that `pdf_text` leaves for OCR counts as an empty text;
- speed: pages per CPU-second of each engine over every readable PDF of the data and of the demo's
  PDF source, read five times; and of Tesseract (`pdf_text + Tesseract OCR`, the ocr rule's work) on
  every page that the text layer routes to OCR, with the share routed;
- robustness: what each engine does with every broken, encrypted or image-only file.

usage: python bench/bench_pdf.py [--tiny] [--data data/bench/pdf]
(--tiny: two benchmark pages and the robustness files; its figures mean nothing)
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import io
import json
import logging
import re
import resource
import shutil
import subprocess
import time
import unicodedata
from pathlib import Path

from common import REPO, add_tiny_option, pin_to_one_cpu, skipped  # puts the repository on the import path

from tokenmill.config import schema_settings  # noqa: E402
from tokenmill.extract.ocr import OcrSettings, ocr_rows, tesseract_version, with_ocr_text  # noqa: E402
from tokenmill.extract.pdf import join_pages, pdf_text  # noqa: E402
from tokenmill.extract.pdf_settings import PdfSettings  # noqa: E402
from tokenmill.extract.quarantine import Quarantine  # noqa: E402

PDF_SETTINGS = schema_settings(PdfSettings, "extract.pdf")
OCR_SETTINGS = schema_settings(OcrSettings, "extract.ocr")

DATA = REPO / "data" / "bench" / "pdf"
ENCRYPTED = ("aes-128.pdf", "libreoffice-writer-password.pdf")  # no engine reads them: left out of the speed run
SAMPLE_PDFS = REPO / "data" / "sample" / "pdf"
SPEED_ROUNDS = 5  # the files are few: read them several times for a steadier CPU figure
TROUBLE_FILES = ("zen_of_python_corrupted.pdf", "aes-128.pdf", "libreoffice-writer-password.pdf",
                 "issue-625-identity-cmap.pdf", "issue-791-non-unicode-cmap.pdf", "olmo-page-1.pdf", "edgar_image.pdf",
                 "olmocr-bench/pdfs/lincoln_letter.pdf", "olmocr-bench/pdfs/buildingnotes.pdf",
                 "olmocr-bench/pdfs/blank_book_pg1.pdf", "olmocr-bench/pdfs/mattsnotes.pdf",
                 "olmocr-bench/pdfs/test-graphical-text.pdf")
# olmocr's normalize_text: the typographic characters that count as their ASCII forms
_FANCY = {"‘": "'", "’": "'", "‚": "'", "“": '"', "”": '"', "„": '"', "＿": "_", "–": "-", "—": "-", "‑": "-",
          "‒": "-", "−": "-", "\u00b5": "\u03bc"}


def normalize(text: str) -> str:
    text = re.sub(r"<br/?>", " ", text)
    text = re.sub(r"(\*\*|__)(.*?)\1", r"\2", text)
    text = re.sub(r"\s+", " ", text)
    text = unicodedata.normalize("NFC", text)
    for fancy, plain in _FANCY.items():
        text = text.replace(fancy, plain)
    return text


def edit_distance_match(query: str, text: str, max_diffs: int) -> list[int]:
    """Start offsets in `text` of the substrings within `max_diffs` edits of `query` (exact
    substring search when `max_diffs` is 0); olmocr uses rapidfuzz and fuzzysearch, which are
    not installed here, for the same question."""
    if max_diffs == 0:
        return [match.start() for match in re.finditer(re.escape(query), text)]
    # Sellers' algorithm: edit distance of the query against any substring ending at each position;
    # a match's start is the end minus the query length, close enough to order two matches
    previous = list(range(len(query) + 1))
    starts = []
    for end, char in enumerate(text, start=1):
        current = [0]
        for index, wanted in enumerate(query, start=1):
            current.append(min(previous[index] + 1, current[index - 1] + 1, previous[index - 1] + (wanted != char)))
        if current[-1] <= max_diffs:
            starts.append(max(0, end - len(query)))
        previous = current
    return starts


def markdown_tables(text: str) -> list[list[list[str]]]:
    """Pipe tables of a Markdown text (rows of cells, the separator row left out)."""
    tables, rows = [], []
    for line in text.splitlines() + [""]:
        if line.strip().startswith("|"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-{3,}:?", cell) for cell in cells):
                rows.append(cells)
        elif rows:
            tables.append(rows)
            rows = []
    return tables


def table_test(test: dict, text: str) -> bool:
    """A cell whose neighbours (up, down, left, right) and headings (the top row, the first
    column) hold the given strings, in any Markdown table of the text."""
    for rows in markdown_tables(text):
        for r, row in enumerate(rows):
            for c, cell in enumerate(row):
                if normalize(cell) != normalize(test["cell"]):
                    continue
                around = {"up": rows[r - 1][c] if r and c < len(rows[r - 1]) else None,
                          "down": rows[r + 1][c] if r + 1 < len(rows) and c < len(rows[r + 1]) else None,
                          "left": row[c - 1] if c else None, "right": row[c + 1] if c + 1 < len(row) else None,
                          "top_heading": rows[0][c] if c < len(rows[0]) else None, "left_heading": row[0]}
                if all(not test.get(key) or (around[key] is not None and normalize(around[key]) == normalize(test[key]))
                       for key in around):
                    return True
    return False


def math_test(test: dict, text: str) -> bool:
    """The formula verbatim between TeX delimiters (olmocr also compares renderings with KaTeX)."""
    formulas = re.findall(r"\\\((.+?)\\\)|\\\[(.+?)\\\]|\$\$(.+?)\$\$|\$(.+?)\$", text, re.DOTALL)
    return any(part.strip() == test["math"] for formula in formulas for part in formula)


def run_test(test: dict, text: str) -> bool:
    kind = test["type"]
    if kind in ("present", "absent"):
        query, content = normalize(test["text"]), normalize(text)
        if not test.get("case_sensitive", True):
            query, content = query.lower(), content.lower()
        first_n, last_n = test.get("first_n"), test.get("last_n")
        if first_n or last_n:
            content = (content[:first_n] if first_n else "") + (content[-last_n:] if last_n else "")
        found = bool(edit_distance_match(query, content, test.get("max_diffs", 0)))
        return found if kind == "present" else not found
    if kind == "order":
        content, max_diffs = normalize(text), test.get("max_diffs", 0)
        befores = edit_distance_match(normalize(test["before"]), content, max_diffs)
        afters = edit_distance_match(normalize(test["after"]), content, max_diffs)
        return any(before < after for before in befores for after in afters)
    if kind == "table":
        return table_test(test, text)
    if kind == "math":
        return math_test(test, text)
    if kind == "baseline":
        return sum(char.isalnum() for char in text) <= test["max_length"]
    raise ValueError(f"unknown test type {kind}")


def ours(data: bytes) -> tuple[str, int]:
    extracted = pdf_text(data, PDF_SETTINGS)
    return extracted.text, extracted.pages


def ours_with_ocr(data: bytes) -> tuple[str, int]:
    """The part jobs' result: the text layer, and Tesseract's text for the pages routed to OCR."""
    extracted = pdf_text(data, PDF_SETTINGS)
    rows = {row["page"]: row for row in ocr_rows(data, PDF_SETTINGS, OCR_SETTINGS)}
    return join_pages(with_ocr_text(extracted, rows)[0])[0], extracted.pages


def pdftotext(data: bytes) -> tuple[str, int]:
    result = subprocess.run(["pdftotext", "-q", "-layout", "-", "-"], input=data, capture_output=True)
    if result.returncode:
        raise RuntimeError(f"pdftotext exit {result.returncode}: {result.stderr.decode(errors='replace')[:80]}")
    text = result.stdout.decode("utf-8", "replace")
    return text, text.count("\f") or 1


def plain_pypdf(data: bytes) -> tuple[str, int]:
    import pypdf
    reader = pypdf.PdfReader(io.BytesIO(data))
    if reader.is_encrypted and not reader.decrypt(""):
        raise RuntimeError("encrypted")
    return "\n\n".join(page.extract_text() or "" for page in reader.pages), len(reader.pages)


def engines() -> dict:
    found = {"pdf_text (pdfium)": ours}
    if shutil.which("tesseract"):
        found["pdf_text + Tesseract OCR"] = ours_with_ocr
    else:
        skipped("Tesseract OCR", "apt-get install -y tesseract-ocr (the README's set-up)")
    if shutil.which("pdftotext"):
        found["pdftotext -layout (poppler)"] = pdftotext
    else:
        skipped("pdftotext", "apt-get install -y poppler-utils")
    if importlib.util.find_spec("pypdf"):
        logging.getLogger("pypdf").setLevel(logging.ERROR)  # its repair warnings would break up the table
        found["pypdf extract_text"] = plain_pypdf
    else:
        skipped("plain pypdf", "pip install pypdf (the bench's only; not a runtime dependency)")
    return found


def cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def outcome(engine, data: bytes) -> str:
    try:
        text, pages = engine(data)
    except Quarantine as problem:
        return f"quarantined {problem.reason}"
    except Exception as error:  # a peer's own failure is what this table reports
        return f"error {type(error).__name__}: {str(error)[:60]}"
    return f"{pages} page(s), {sum(not char.isspace() for char in text)} characters"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(DATA), help="the PDF test data (SOURCES.md there)")
    add_tiny_option(parser)
    args = parser.parse_args()
    data_dir = Path(args.data)
    cpu = pin_to_one_cpu()
    tests = [json.loads(line) for name in ("dataset.jsonl", "blanks.jsonl")
             for line in (data_dir / "olmocr-bench" / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    pdfs = sorted({test["pdf"] for test in tests})
    if args.tiny:
        pdfs = pdfs[:2]
        tests = [test for test in tests if test["pdf"] in pdfs]
    found = engines()
    print(f"olmOCR-Bench sample: {len(tests)} tests on {len(pdfs)} pages; one core (cpu {cpu})")
    for name, engine in found.items():
        texts = {}
        for pdf in pdfs:
            try:
                texts[pdf] = engine((data_dir / "olmocr-bench" / "pdfs" / pdf).read_bytes())[0]
            except Exception:  # an engine that fails on a page scores it as an empty text
                texts[pdf] = ""
        passed, total = collections.Counter(), collections.Counter()
        for test in tests:
            total[test["type"]] += 1
            passed[test["type"]] += run_test(test, texts[test["pdf"]])
        by_type = ", ".join(f"{kind} {passed[kind]}/{total[kind]}" for kind in sorted(total))
        print(f"  {name:28s} overall {sum(passed.values())}/{len(tests)} "
              f"({sum(passed.values()) / len(tests):.0%}): {by_type}")

    speed_files = sorted(path for path in [*data_dir.rglob("*.pdf"), *SAMPLE_PDFS.rglob("*.pdf")]
                         if path.name not in ENCRYPTED)
    if args.tiny:
        speed_files = speed_files[:2]
    blobs = [path.read_bytes() for path in speed_files] * (1 if args.tiny else SPEED_ROUNDS)
    print(f"speed: {len(speed_files)} readable PDFs (with the demo's, data/sample/pdf) read "
          f"{1 if args.tiny else SPEED_ROUNDS} times, pages per CPU-second on one core")
    for name, engine in found.items():
        if engine is ours_with_ocr:
            continue  # its own line below: OCR pages are a different unit of work
        start_cpu, start_wall, pages = cpu_seconds(), time.perf_counter(), 0
        for blob in blobs:
            try:
                pages += engine(blob)[1]
            except Exception:  # counted as no pages
                continue
        seconds = cpu_seconds() - start_cpu
        print(f"  {name:28s} {pages} pages in {seconds:.2f} CPU-s ({time.perf_counter() - start_wall:.2f} s wall): "
              f"{pages / max(seconds, 1e-9):.0f} pages/CPU-s")

    if ours_with_ocr in found.values():
        ocr_speed(speed_files if args.tiny else [*speed_files, *(data_dir / "olmocr-bench" / "pdfs").rglob("*.pdf")])

    print("broken, encrypted and image-only files:")
    for relative in TROUBLE_FILES:
        blob = (data_dir / relative).read_bytes()
        try:
            extracted = pdf_text(blob, PDF_SETTINGS)
            ours_says = f"document, {extracted.pages} page(s)" + (
                f", OCR needed: {extracted.needs_ocr}" if extracted.needs_ocr else "")
        except Quarantine as problem:
            ours_says = f"quarantined {problem.reason}"
        print(f"  {relative}: pdf_text: {ours_says}")
        for name, engine in found.items():
            if engine is not ours:
                print(f"      {name}: {outcome(engine, blob)}")
    print(f"(repository: {REPO})")


def ocr_speed(files: list[Path]) -> None:
    """Tesseract on every page the text layer routes to OCR, once: pages per CPU-second (the
    job, pdfium's rendering and tesseract's own process), and the share of pages routed."""
    total = routed = 0
    statuses = collections.Counter()
    start_cpu, start_wall = cpu_seconds(), time.perf_counter()
    for path in sorted(set(files)):
        data = path.read_bytes()
        try:
            total += pdf_text(data, PDF_SETTINGS).pages
        except Quarantine:
            continue
        rows = ocr_rows(data, PDF_SETTINGS, OCR_SETTINGS)
        routed += len(rows)
        statuses.update(row["status"].split(":")[0] for row in rows)
    seconds = cpu_seconds() - start_cpu
    print(f"OCR ({tesseract_version()}, {OCR_SETTINGS.dpi} dpi, -l {OCR_SETTINGS.languages}): {routed} of {total} "
          f"pages routed to OCR ({routed / max(total, 1):.0%}) in {len(set(files))} readable PDFs")
    print(f"  Tesseract OCR pages: {routed} in {seconds:.2f} CPU-s ({time.perf_counter() - start_wall:.2f} s wall): "
          f"{routed / max(seconds, 1e-9):.2f} pages/CPU-s; kept: {dict(sorted(statuses.items()))}")


if __name__ == "__main__":
    main()
