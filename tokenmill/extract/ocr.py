"""OCR of the PDF pages that `pdf_text` lists in `needs_ocr` (no text layer, or a garbage one).

Two engines, one output: Tesseract on the CPU (the default; each page rendered with pdfium and
read by the `tesseract` program), and a vision-language model served by vLLM on a GPU
(olmOCR-style: the page image and a prompt, the model writes the page's text). Each writes one
row per page it read, `{input, offset, record_id, page, route, engine, status, text}`,
and extract puts a page's OCR text in place of its text layer where `status` is `ok`.

An OCR text must pass the same garbage check as a text layer, and Tesseract's own confidence:
it reads handwriting as junk words of low confidence, and that is not kept (status
`low_confidence: ...`), so the page stays listed for a later engine. Pages that Tesseract read
are tagged in extract_meta (`ocr_redo`) so that a later GPU pass can find them.
"""

from __future__ import annotations

import base64
import csv
import dataclasses
import functools
import importlib.util
import io
import math
import os
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata

import pypdfium2 as pdfium

from tokenmill.extract.pdf import PdfText, garbage_reason, ocr_routes, open_pdf
from tokenmill.extract.pdf_settings import PdfRouting
from tokenmill.extract.quarantine import Quarantine
from tokenmill.system import installed_tesseract_languages, tesseract_language

# olmOCR's instruction, shortened: the page as plain reading-order text, formulas as LaTeX
VLLM_PROMPT = ("Below is the image of one page of a document. Return the plain text of the page as if you were "
               "reading it naturally, in reading order. Write equations in LaTeX and tables in Markdown. Do not "
               "describe images and do not add anything that is not on the page.")


@dataclass(frozen=True)
class OcrSettings:
    """The `extract.ocr` config section (its defaults and what each key means are in the schema);
    in an OCR job, the keys its engine does not read are None."""

    languages: str
    dpi: int
    max_pixels: int
    page_timeout_s: float
    min_confidence: float
    max_pages: int
    model: str | None
    max_new_tokens: int
    batch_pages: int
    gpu_memory_utilization: float


class OcrUnavailable(RuntimeError):
    """The configured OCR engine cannot run here (a program, a package or a model is missing)."""


@functools.cache
def tesseract_version() -> str:
    """`tesseract 5.3.0`, the engine name that every page it read carries."""
    try:
        result = subprocess.run(["tesseract", "--version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError) as error:
        raise OcrUnavailable(f"the tesseract program is not installed ({error}): on Debian, apt-get install "
                             "tesseract-ocr and the language packs of extract.ocr.languages") from None
    return result.stdout.splitlines()[0].strip()


def check_tesseract_languages(languages: str) -> None:
    """Fail before any page is read when a language of `languages` (`eng+deu`) has no pack."""
    tesseract_version()
    installed = installed_tesseract_languages()
    missing = sorted(set(languages.split("+")) - installed)
    if missing:
        raise OcrUnavailable(f"extract.ocr.languages names {missing}, which tesseract lacks (installed: "
                             f"{sorted(installed)}): on Debian, apt-get install "
                             + " ".join(tesseract_language(name).debian for name in missing))


def render_page(document: pdfium.PdfDocument, index: int, settings: OcrSettings) -> bytes:
    """Page `index` as a greyscale PNG at `dpi`, or smaller so that it has at most `max_pixels`
    (a poster-sized scan would otherwise render to hundreds of megapixels)."""
    page = document[index]
    try:
        width, height = page.get_size()
        scale = min(settings.dpi / 72, math.sqrt(settings.max_pixels / max(width * height, 1.0)))
        image = page.render(scale=scale, grayscale=True).to_pil()
    finally:
        page.close()
    png = io.BytesIO()
    image.save(png, format="PNG")
    return png.getvalue()


def tesseract_page(png: bytes, settings: OcrSettings) -> tuple[str, str]:
    """(status, text): `ok`, `low_confidence: ...`, `timeout` or `failed: ...`. Tesseract writes
    the text and its words' confidences in one run; a text whose mean word confidence (weighted
    by length) is under `min_confidence` is not kept: printed pages score 85-95, handwriting that
    Tesseract cannot read 20-40. One thread per tesseract, so that the part job's pool decides
    how many cores are busy and the output does not depend on thread timing."""
    with tempfile.TemporaryDirectory(prefix="tokenmill-ocr-") as folder:
        out = os.path.join(folder, "page")
        try:
            result = subprocess.run(["tesseract", "stdin", out, "-l", settings.languages, "txt", "tsv"], input=png,
                                    capture_output=True, timeout=settings.page_timeout_s,
                                    env={**os.environ, "OMP_THREAD_LIMIT": "1"})
        except subprocess.TimeoutExpired:
            return "timeout", ""
        if result.returncode != 0:
            return f"failed: {result.stderr.decode('utf-8', 'replace').strip()[-300:]}", ""
        with open(f"{out}.txt", encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        with open(f"{out}.tsv", encoding="utf-8", errors="replace", newline="") as handle:
            words = [(float(row["conf"]), len(row["text"].strip())) for row in
                     csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
                     if row["level"] == "5" and row["text"] and row["text"].strip()]
    characters = sum(length for _, length in words)
    confidence = sum(conf * length for conf, length in words) / characters if characters else 0.0
    if characters and confidence < settings.min_confidence:
        return f"low_confidence: mean word confidence {confidence:.0f} < {settings.min_confidence}", ""
    return "ok", text


def rendered_pages(data: bytes, pdf_settings: PdfRouting, settings: OcrSettings) -> Iterator[tuple[dict, bytes | None]]:
    """(row, image) for each page of the PDF `data` that needs OCR, routed as extract routes it:
    row {page, route}, and the page as a PNG; a page past `max_pages` or that pdfium cannot render
    comes with no image and its row says why (status, text). A PDF that cannot be opened gives
    none (extract quarantines it)."""
    try:
        routed = ocr_routes(data, pdf_settings)
    except Quarantine:
        return
    document = open_pdf(data)
    try:
        for index, (number, route) in enumerate(sorted(routed.items())):
            row = {"page": number, "route": route}
            if index >= settings.max_pages:
                yield {**row, "status": f"skipped: more than extract.ocr.max_pages {settings.max_pages} pages of "
                                        "this PDF need OCR", "text": ""}, None
                continue
            try:
                yield row, render_page(document, number - 1, settings)
            except pdfium.PdfiumError as error:
                yield {**row, "status": f"failed: render: {error}", "text": ""}, None
    finally:
        document.close()


def ocr_rows(data: bytes, pdf_settings: PdfRouting, settings: OcrSettings) -> list[dict]:
    """One row per page of the PDF `data` that needs OCR, read by Tesseract: {page, route,
    engine, status, text}."""
    engine = tesseract_version()
    return [page_row(row if png is None else {**row, **judged(*tesseract_page(png, settings), pdf_settings)}, engine)
            for row, png in rendered_pages(data, pdf_settings, settings)]


def page_row(row: dict, engine: str) -> dict:
    """An OCR output row of a page, its keys in the output's order."""
    return {"page": row["page"], "route": row["route"], "engine": engine, "status": row["status"], "text": row["text"]}


def with_ocr_text(extracted: PdfText, rows: dict[int, dict]) -> tuple[list[str], dict[int, str], dict[int, str]]:
    """A PDF's page texts with the OCR text of each page that needed it where its row is `ok`:
    (page texts, pages still without text -> why and what OCR made of them, pages read by OCR ->
    engine)."""
    page_texts, needs_ocr, ocr_pages = list(extracted.page_texts), dict(extracted.needs_ocr), {}
    for number, row in sorted(rows.items()):
        if number not in needs_ocr:
            continue
        if row["status"] == "ok":
            page_texts[number - 1] = row["text"]
            ocr_pages[number] = row["engine"]
            del needs_ocr[number]
        else:
            needs_ocr[number] += f"; OCR ({row['engine']}): {row['status']}"
    return page_texts, needs_ocr, ocr_pages


def judged(status: str, text: str, pdf_settings: PdfRouting) -> dict:
    """An OCR result after the text layer's garbage check: {status, text}; a garbage text is
    not kept."""
    if status == "ok":
        problem = garbage_reason(text, pdf_settings)
        if problem:
            return {"status": f"garbage: {problem}", "text": ""}
        if len("".join(text.split())) < pdf_settings.min_page_chars:  # a blank page reads as a few specks
            return {"status": "empty", "text": ""}
    return {"status": status, "text": text}


class VllmReader:
    """A vision-language model served by vLLM, loaded once: called with page images, it returns
    the text the model writes for each (greedy, a fixed seed, batches of `batch_pages`)."""

    def __init__(self, settings: OcrSettings):
        from vllm import LLM, SamplingParams

        self.settings = settings
        self.engine = f"vllm-{metadata.version('vllm')}:{os.path.basename(os.path.normpath(settings.model))}"
        self._model = LLM(model=settings.model, seed=0, gpu_memory_utilization=settings.gpu_memory_utilization,
                          limit_mm_per_prompt={"image": 1})
        self._sampling = SamplingParams(temperature=0.0, max_tokens=settings.max_new_tokens, seed=0)

    def __call__(self, images: list[bytes]) -> list[str]:
        texts = []
        for start in range(0, len(images), self.settings.batch_pages):
            # the model's own chat template places the image: prompt formats differ between models
            conversations = [[{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode()}},
                {"type": "text", "text": VLLM_PROMPT}]}] for png in images[start:start + self.settings.batch_pages]]
            outputs = self._model.chat(conversations, self._sampling, use_tqdm=False)
            texts.extend(output.outputs[0].text for output in outputs)
        return texts


def vllm_reader(settings: OcrSettings) -> VllmReader:
    """The GPU engine, or OcrUnavailable saying what is missing: the vllm package (an optional
    extra, on the GPU nodes) or the local model directory `extract.ocr.model` (nothing downloads)."""
    if not settings.model or not os.path.isdir(settings.model):
        raise OcrUnavailable(f"extract.ocr.model must name a local model directory for the vllm engine, not "
                             f"{settings.model!r}")
    if importlib.util.find_spec("vllm") is None:
        raise OcrUnavailable("the vllm OCR engine needs the vllm package where the ocr_vllm rule runs (the gpu "
                             "partition: pip install vllm); it is not installed in this environment")
    return VllmReader(settings)


def ocr_settings(settings: dict) -> OcrSettings:
    """The OcrSettings of an OCR job's settings (tokenmill.extract.settings.ocr_settings), whose
    `ocr` section holds the keys its engine reads: those of the other engine are None."""
    return OcrSettings(**{field.name: settings["ocr"].get(field.name) for field in dataclasses.fields(OcrSettings)})
