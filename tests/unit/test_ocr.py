"""OCR of PDF pages without a usable text layer (tokenmill.extract.ocr, ocr_part), PDFs inside
WARCs, and the urls side file, on real PDFs (data/bench/pdf, provenance in its SOURCES.md) with
the real Tesseract (Debian tesseract-ocr, installed by the README's set-up)."""

import copy
import hashlib
import io
import json
from pathlib import Path

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tokenmill.config import ConfigError, schema_defaults, validate
from tokenmill.extract.ocr import OcrUnavailable, check_tesseract_languages
from tokenmill.extract.ocr_part import ocr_part, read_ocr_rows
from tokenmill.extract.part import extract_part
from tokenmill.extract.records import PartInfo
from tokenmill.io import read_jsonl_zst
from tests.unit.helpers import EXTRACT_SETTINGS

PDFS = Path(__file__).resolve().parents[2] / "data" / "bench" / "pdf"
INFO = PartInfo("papers", "s", "p", "academic", "CC-BY-SA-4.0")
SCAN, BLANK, READABLE = PDFS / "edgar_image.pdf", PDFS / "olmocr-bench/pdfs/blank_book_pg1.pdf", PDFS / "multicolumn.pdf"


def settings(**changes) -> dict:
    return {**copy.deepcopy(EXTRACT_SETTINGS), "urls": None, **changes}


def run_ocr(tmp_path: Path, inputs: list[str], kind: str = "pdf", workers: int = 2, **changes) -> tuple[Path, dict]:
    pages = tmp_path / f"ocr-{workers}.jsonl.zst"
    stats = ocr_part(inputs, kind, settings(**changes), "tesseract", str(pages), str(tmp_path / f"ocr-{workers}.json"),
                     workers)
    return pages, stats


def run_extract(tmp_path: Path, inputs: list[str], ocr: Path | None, kind: str = "pdf", **changes):
    out = {name: str(tmp_path / f"extract.{name}") for name in ("docs", "quarantine", "stats")}
    stats = extract_part(inputs, kind, INFO, settings(**changes), out["docs"], out["quarantine"], out["stats"],
                         workers=2, ocr_path=str(ocr) if ocr else None)
    return list(read_jsonl_zst(out["docs"])), list(read_jsonl_zst(out["quarantine"])), stats


def test_a_scanned_page_gets_tesseracts_text_and_a_blank_one_stays_quarantined(tmp_path):
    inputs = [str(READABLE), str(SCAN), str(BLANK)]
    pages, stats = run_ocr(tmp_path, inputs)
    assert (stats["pdfs"], stats["pages"]) == (3, 2) and stats["engine"].startswith("tesseract ")
    rows = read_ocr_rows(str(pages))
    # the blank page's specks read as two words of confidence 15
    blank = rows[(str(BLANK), 0)][1]["status"]
    assert rows[(str(SCAN), 0)][1]["status"] == "ok" and blank.startswith("low_confidence: ")
    docs, quarantine, extracted = run_extract(tmp_path, inputs, pages)
    assert [doc["url"] for doc in docs] == [str(READABLE), str(SCAN)]
    scan = docs[1]
    # the page is a picture of Wikipedia's article on King Edgar
    assert "Edgar" in scan["text"] and "England" in scan["text"]
    assert scan["extract_meta"]["ocr_pages"] == {"1": stats["engine"]} and scan["extract_meta"]["ocr_redo"] == [1]
    assert scan["extract_meta"]["needs_ocr"] == {} and docs[0]["extract_meta"]["ocr_pages"] == {}
    assert [(q["url"], q["reason"]) for q in quarantine] == [(str(BLANK), "needs_ocr")]
    assert quarantine[0]["detail"] == f"OCR read nothing usable: page 1: no_text_layer; OCR ({stats['engine']}): {blank}"
    assert (extracted["pdf_pages"], extracted["pages_needing_ocr"], extracted["ocr_pages"]) == (4, 1, 1)


def test_ocr_rows_are_the_same_bytes_for_any_number_of_workers(tmp_path):
    inputs = [str(SCAN), str(READABLE), str(PDFS / "olmo-page-1.pdf")]
    one, _ = run_ocr(tmp_path, inputs, workers=1)
    two, _ = run_ocr(tmp_path, inputs, workers=2)
    assert hashlib.sha256(one.read_bytes()).digest() == hashlib.sha256(two.read_bytes()).digest()
    # the OLMo page's garbage text layer is replaced by what Tesseract reads
    docs, _, _ = run_extract(tmp_path, [str(PDFS / "olmo-page-1.pdf")], one)
    assert "Accelerating the Science of Language Models" in docs[0]["text"]


def test_handwriting_that_tesseract_reads_as_junk_is_not_kept(tmp_path):
    pages, stats = run_ocr(tmp_path, [str(PDFS / "olmocr-bench/pdfs/lincoln_letter.pdf")], workers=1)
    (row,) = read_ocr_rows(str(pages))[(str(PDFS / "olmocr-bench/pdfs/lincoln_letter.pdf"), 0)].values()
    assert row["status"].startswith("low_confidence: ") and row["text"] == ""


def warc_of(path: Path, responses: list[tuple[str, bytes, bool]]) -> str:
    """A WARC of real PDFs served as application/pdf: (url, bytes, cut by the crawler)."""
    with open(path, "wb") as out:
        writer = WARCWriter(out, gzip=True)
        for url, data, cut in responses:
            http = StatusAndHeaders("200 OK", [("Content-Type", "application/pdf")], protocol="HTTP/1.1")
            headers = {"WARC-Date": "2024-01-02T03:04:05Z", **({"WARC-Truncated": "length"} if cut else {})}
            writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(data),
                                                          http_headers=http, warc_headers_dict=headers))
    return str(path)


def test_pdf_responses_in_a_warc_are_documents_and_a_cut_one_is_quarantined(tmp_path):
    whole, scanned = READABLE.read_bytes(), SCAN.read_bytes()
    warc = warc_of(tmp_path / "pdfs.warc.gz", [("https://example.org/paper.pdf", whole, False),
                                               ("https://example.org/cut.pdf", whole[:len(whole) // 2], True),
                                               ("https://example.org/scan.pdf", scanned, False)])
    docs, quarantine, stats = run_extract(tmp_path, [warc], None, kind="warc")
    assert [(doc["url"], doc["content_type"], doc["fetch_ts"]) for doc in docs] == \
        [("https://example.org/paper.pdf", "application/pdf", "2024-01-02T03:04:05Z")]
    assert docs[0]["text"].startswith("Two-Column Document with Lorem Ipsum")
    assert [(q["url"], q["reason"]) for q in quarantine] == [("https://example.org/cut.pdf", "truncated_pdf"),
                                                              ("https://example.org/scan.pdf", "needs_ocr")]
    assert stats["records"]["pdf_response"] == 3
    # a WARC source with OCR: the scan becomes a document, the cut one is not read as if whole
    pages, ocr_stats = run_ocr(tmp_path, [warc], kind="warc")
    assert (ocr_stats["pdfs"], ocr_stats["pages"]) == (2, 1)
    docs, quarantine, _ = run_extract(tmp_path, [warc], pages, kind="warc")
    assert [doc["url"] for doc in docs] == ["https://example.org/paper.pdf", "https://example.org/scan.pdf"]
    assert [q["reason"] for q in quarantine] == ["truncated_pdf"]


def test_a_pdf_over_the_size_cap_in_a_warc_is_quarantined_as_cut(tmp_path):
    data = READABLE.read_bytes()
    warc = warc_of(tmp_path / "big.warc.gz", [("https://example.org/big.pdf", data, False)])
    pdf = {**EXTRACT_SETTINGS["pdf"], "max_bytes": len(data) - 1}
    _, quarantine, _ = run_extract(tmp_path, [warc], None, kind="warc", pdf=pdf)
    assert [q["reason"] for q in quarantine] == ["truncated_pdf"]


def test_the_urls_side_file_gives_each_pdf_its_url_and_fetch_time(tmp_path):
    side = tmp_path / "urls.tsv"
    side.write_text(f"path\turl\tfetch_ts\n{READABLE}\thttps://arxiv.org/pdf/0000.00000\t2023-04-05T06:07:08Z\n")
    docs, _, stats = run_extract(tmp_path, [str(READABLE), str(PDFS / "habibi.pdf")], None, urls=str(side))
    assert [(doc["url"], doc["host"], doc["fetch_ts"], doc["record_id"]) for doc in docs] == [
        ("https://arxiv.org/pdf/0000.00000", "arxiv.org", "2023-04-05T06:07:08Z", str(READABLE)),
        (str(PDFS / "habibi.pdf"), None, None, str(PDFS / "habibi.pdf"))]
    assert stats["records"]["pdf_file_without_url"] == 1


@pytest.mark.parametrize("content, message", [
    ("file\turl\nx\ty\n", "header of columns"),
    ("path\turl\nx\n", ":2: 1 columns"),
    ("path\turl\tfetch_ts\nx\ty\tyesterday\n", "not an ISO 8601 time"),
])
def test_a_bad_urls_side_file_is_an_error_naming_the_line(tmp_path, content, message):
    side = tmp_path / "urls.tsv"
    side.write_text(content)
    with pytest.raises(ValueError, match=message):
        run_extract(tmp_path, [str(READABLE)], None, urls=str(side))


def config_with(source: dict, **extract) -> dict:
    base = {"kind": "pdf", "tier": "academic", "license_id": "x", "snapshots": {"s": ["x"]}}
    return {"sources": {"papers": {**base, **source}}, "extract": extract}


@pytest.mark.parametrize("config, key", [
    (config_with({"kind": "jsonl", "ocr": "tesseract"}), "sources.papers.ocr"),
    (config_with({"kind": "warc", "urls": "urls.tsv"}), "sources.papers.urls"),
    (config_with({"ocr": "vllm"}), "extract.ocr.model"),
    (config_with({}, ocr={"engine": "vllm"}), "extract.ocr.model"),
    (config_with({}, ocr={"languages": "eng;rm -rf"}), "extract.ocr.languages"),
])
def test_a_bad_ocr_config_names_its_key(config, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        validate(config)


def test_a_missing_language_pack_or_gpu_engine_is_a_clear_error(tmp_path):
    with pytest.raises(OcrUnavailable, match="apt-get install tesseract-ocr-xyz"):
        check_tesseract_languages("eng+xyz")
    model = tmp_path / "model"
    model.mkdir()
    ocr = {**schema_defaults("extract.ocr"), "model": str(model)}
    with pytest.raises(OcrUnavailable, match="needs the vllm package"):
        ocr_part([str(SCAN)], "pdf", settings(ocr=ocr), "vllm", str(tmp_path / "p"), str(tmp_path / "s"))
    assert json.dumps(ocr)  # the settings stay plain JSON, as the rule passes them


def test_pages_past_the_ocr_cap_are_listed_as_skipped(tmp_path):
    ocr = {**EXTRACT_SETTINGS["ocr"], "max_pages": 1}
    mattsnotes = str(PDFS / "olmocr-bench/pdfs/mattsnotes.pdf")  # pages 1 and 3 are scans
    pages, stats = run_ocr(tmp_path, [mattsnotes], workers=1, ocr=ocr)
    rows = read_ocr_rows(str(pages))[(mattsnotes, 0)]
    assert sorted(rows) == [1, 3] and rows[3]["status"].startswith("skipped: more than extract.ocr.max_pages 1")
    assert not rows[1]["status"].startswith("skipped") and stats["status"]["skipped"] == 1
