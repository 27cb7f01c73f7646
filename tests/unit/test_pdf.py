"""tokenmill.extract.pdf on real PDFs (data/bench/pdf, provenance in its SOURCES.md)."""

from pathlib import Path

import pytest

from tokenmill.config import schema_settings
from tokenmill.extract.pdf import GARBAGE_TEXT_LAYER, NO_TEXT_LAYER, PdfSettings, pdf_text
from tokenmill.extract.part import extract_part
from tokenmill.extract.quarantine import Quarantine
from tokenmill.extract.records import PartInfo
from tokenmill.io import read_jsonl_zst
from tests.unit.helpers import EXTRACT_SETTINGS

PDFS = Path(__file__).resolve().parents[2] / "data" / "bench" / "pdf"
SETTINGS = schema_settings(PdfSettings, "extract.pdf")


def read(name: str) -> bytes:
    return (PDFS / name).read_bytes()


def test_empty_user_password_opens_and_reads_the_invoice():
    extracted = pdf_text(read("issue-625-identity-cmap.pdf"), SETTINGS)
    assert extracted.pages == 2 and not extracted.needs_ocr
    # pdfminer's own expectation for this file (tests/test_highlevel_extracttext.py)
    assert "Termin płatności: 2021-05-03" in extracted.text
    assert "Faktura nr FV 1/2021" in extracted.text


@pytest.mark.parametrize("name", ["aes-128.pdf", "libreoffice-writer-password.pdf"])
def test_a_pdf_that_needs_a_password_is_quarantined_encrypted(name):
    with pytest.raises(Quarantine) as caught:
        pdf_text(read(name), SETTINGS)
    assert caught.value.reason == "encrypted"


def test_a_pdf_cut_short_is_quarantined_broken():
    data = read("multicolumn.pdf")
    with pytest.raises(Quarantine) as caught:
        pdf_text(data[:len(data) // 3], SETTINGS)  # a download broken off: no cross-reference table, no trailer
    assert caught.value.reason == "broken_pdf"


def test_bytes_that_are_not_a_pdf_are_quarantined_broken():
    with pytest.raises(Quarantine) as caught:
        pdf_text(read("SOURCES.md"), SETTINGS)
    assert caught.value.reason == "broken_pdf"


def test_a_corrupted_content_stream_on_a_sideways_page_still_reads():
    extracted = pdf_text(read("zen_of_python_corrupted.pdf"), SETTINGS)
    assert not extracted.needs_ocr
    assert "Beautiful is better than ugly.\nExplicit is better than implicit." in extracted.text


@pytest.mark.parametrize("name", ["olmo-page-1.pdf", "issue-791-non-unicode-cmap.pdf"])
def test_a_garbage_text_layer_is_left_for_ocr(name):
    extracted = pdf_text(read(name), SETTINGS)
    assert list(extracted.needs_ocr) == [1]
    assert extracted.needs_ocr[1].startswith(GARBAGE_TEXT_LAYER)
    assert extracted.page_chars[0] > 0 and extracted.text == ""


@pytest.mark.parametrize("name", ["edgar_image.pdf", "olmocr-bench/pdfs/blank_book_pg1.pdf"])
def test_a_page_without_text_layer_is_left_for_ocr(name):
    extracted = pdf_text(read(name), SETTINGS)
    assert extracted.needs_ocr == {1: NO_TEXT_LAYER}
    assert extracted.page_chars == [0]


@pytest.mark.parametrize("name", ["habibi.pdf", "multicolumn.pdf", "issue-625-identity-cmap.pdf"])
def test_ordinary_pages_are_not_left_for_ocr(name):
    extracted = pdf_text(read(name), SETTINGS)
    assert extracted.needs_ocr == {}
    assert all(chars > 0 for chars in extracted.page_chars)


def test_arabic_text_is_kept():
    assert "habibi" in pdf_text(read("habibi.pdf"), SETTINGS).text
    assert "يبيب" in pdf_text(read("habibi.pdf"), SETTINGS).text


def test_two_columns_read_left_column_first():
    text = pdf_text(read("multicolumn.pdf"), SETTINGS).text
    # the last line of the left column, then the first of the right one (multicolumn.tex's lipsum)
    left = text.index("congue non, volutpat at, tincidunt tristique, libero.")
    right = text.index("pellentesque ante. Phasellus adipiscing semper elit.")
    assert left < right
    assert text.index("Two-Column Document with Lorem Ipsum") < left


def test_line_end_hyphens_are_repaired():
    text = pdf_text(read("multicolumn.pdf"), SETTINGS).text
    # printed "adip-" at the end of a line and "iscing elit." on the next
    assert "consectetuer adipiscing elit. Ut purus elit" in text
    assert "adip-" not in text and "\ufffe" not in text and "\x02" not in text


def test_page_boundaries_are_kept():
    extracted = pdf_text(read("multicolumn.pdf"), SETTINGS)
    assert extracted.pages == 3 and len(extracted.page_starts) == 3
    assert extracted.page_starts[0] == 0
    for start, following in zip(extracted.page_starts[1:], extracted.page_starts[2:] + [len(extracted.text) + 2]):
        assert extracted.text[start - 2:start] == "\n\n" and start < following
    meta = extracted.meta()
    assert meta["pages"] == 3 and meta["needs_ocr"] == {}


@pytest.mark.parametrize("name", ["multicolumn.pdf", "issue-625-identity-cmap.pdf", "olmo-page-1.pdf"])
def test_same_bytes_give_the_same_text(name):
    first, second = pdf_text(read(name), SETTINGS), pdf_text(read(name), SETTINGS)
    assert first.text == second.text and first.meta() == second.meta()


def test_a_part_of_pdfs_gives_documents_quarantine_and_pages_for_ocr(tmp_path):
    """The extract part job on PDF files: a document per readable PDF with its pages in
    extract_meta, an encrypted one quarantined with its reason, a scan counted for OCR and no text."""
    inputs = [str(PDFS / name) for name in ("multicolumn.pdf", "libreoffice-writer-password.pdf", "edgar_image.pdf")]
    out = {kind: str(tmp_path / f"pdf.{kind}") for kind in ("docs", "quarantine", "stats")}
    stats = extract_part(inputs, "pdf", PartInfo("papers", "s", "p", "academic", "CC-BY-SA-4.0"), EXTRACT_SETTINGS,
                         out["docs"], out["quarantine"], out["stats"], workers=2)
    docs, quarantine = list(read_jsonl_zst(out["docs"])), list(read_jsonl_zst(out["quarantine"]))
    assert [doc["url"] for doc in docs] == [inputs[0]] and docs[0]["content_type"] == "application/pdf"
    meta = docs[0]["extract_meta"]
    assert meta["pages"] == 3 and meta["extractor"].startswith("pypdfium2-") and not meta["needs_ocr"]
    assert docs[0]["text"] == pdf_text(read("multicolumn.pdf"), SETTINGS).text
    assert docs[0]["text"][meta["page_starts"][2]:].startswith("Table 1: EU Countries")  # the third page
    assert [(q["url"], q["reason"]) for q in quarantine] == [(inputs[1], "encrypted")]
    assert (stats["docs"], stats["no_text"], stats["pdf_pages"], stats["ocr_pages"]) == (1, 1, 4, 1)
