"""tokenmill.extract.pdf on real PDFs (data/bench/pdf, provenance in its SOURCES.md)."""

from pathlib import Path

import pytest

from tokenmill.config import schema_settings
from tokenmill.extract.pdf import GARBAGE_TEXT_LAYER, NO_TEXT_LAYER, pdf_text
from tokenmill.extract.pdf_settings import PdfSettings
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
    extract_meta, an encrypted one quarantined with its reason, and a scan, with no OCR run,
    quarantined needs_ocr with the page and why."""
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
    assert [(q["url"], q["reason"]) for q in quarantine] == [(inputs[1], "encrypted"), (inputs[2], "needs_ocr")]
    assert quarantine[1]["detail"] == "no OCR ran for this source: page 1: no_text_layer"
    assert (stats["docs"], stats["no_text"], stats["pdf_pages"], stats["ocr_pages"]) == (1, 0, 3, 0)


def test_a_scan_with_a_thin_text_layer_keeps_it_while_listed_for_ocr():
    """olmOCR-Bench's graphical-text page: 50 characters of text layer drawn over a picture."""
    extracted = pdf_text(read("olmocr-bench/pdfs/test-graphical-text.pdf"), SETTINGS)
    assert extracted.needs_ocr[1].startswith(f"{NO_TEXT_LAYER}: 50 characters on a page")
    assert len("".join(extracted.text.split())) == 50


def markdown_rows(text: str) -> list[list[str]]:
    """The rows of the Markdown pipe tables in a text, as cells (separator rows left out)."""
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in text.splitlines() if line.startswith("|")]
    return [row for row in rows if not all(set(cell) == {"-"} for cell in row)]


def test_a_table_is_written_as_a_markdown_table_in_its_place():
    """OLMo 2's Table 1 (olmOCR-Bench): a header row, one row per source, each value under its
    column, and the caption and the body text after it as ordinary lines."""
    text = pdf_text(read("olmocr-bench/pdfs/olmo2-pg4.pdf"), SETTINGS).text
    assert text.startswith("| Source | Type | Tokens | Words | Bytes | Docs |\n|---|---|---|---|---|---|\n")
    rows = markdown_rows(text)
    assert ["Algebraic Stack", "Math proofs code", "11.8B", "10.8B", "44.0B", "2.83M"] in rows
    assert ["OpenWebMath", "Math web pages", "12.2B", "11.1B", "47.2B", "2.89M"] in rows
    assert rows[-1] == ["Total", "", "3.90T", "3.48T", "22.38T", "3.08B"]  # one line of pdfium's split in cells
    assert "| 3.08B |\n\nTable 1 Composition of the pretraining data for OLMo 2." in text
    assert "The mix used for this stage is shown in Table 1. It consists of approximately" in text


def test_a_heading_over_several_columns_heads_each_of_them():
    """NVIDIA's 10-K note (olmOCR-Bench): "Year Ended" is centred over three columns of amounts, a
    dollar sign stays with its amount, and the sentence that introduces the table is not in it."""
    text = pdf_text(read("olmocr-bench/pdfs/earnings.pdf"), SETTINGS).text
    rows = markdown_rows(text)
    assert rows[0] == ["", "Year Ended", "Year Ended", "Year Ended"]
    assert rows[1] == ["", "Jan 26, 2025", "Jan 28, 2024", "Jan 29, 2023"]
    assert ["Cost of revenue", "$ 178", "$ 141", "$ 138"] in rows
    assert ["Research and development", "3,423", "2,532", "1,892"] in rows
    assert "of revenue, as follows:\n\n| " in text


def test_columns_of_prose_are_not_a_table_and_a_table_among_them_is():
    """Two-column pages (multicolumn.tex's lipsum, olmOCR-Bench's formula sheets and papers) give
    no table; the EU table on multicolumn.pdf's third page does, with its caption above it."""
    for name in ("olmocr-bench/pdfs/mathfuncs.pdf", "olmocr-bench/pdfs/mathfuncs_colswitch.pdf",
                 "olmocr-bench/pdfs/multi_column_miss.pdf", "olmocr-bench/pdfs/openstax_caculus_pg_273.pdf"):
        assert markdown_rows(pdf_text(read(name), SETTINGS).text) == [], name
    pages = pdf_text(read("multicolumn.pdf"), SETTINGS).page_texts
    assert markdown_rows(pages[0]) == markdown_rows(pages[1]) == []
    assert pages[2].startswith("Table 1: EU Countries Information\n\n| Country | Population (millions) |")
    assert ["Czech Republic", "10.7", "78,866", "Prague", "Czech"] in markdown_rows(pages[2])


def test_a_footer_of_lines_side_by_side_and_a_header_of_two_lines_go_on_a_single_page():
    """olmOCR-Bench's single pages: PLOS's footer (journal, page number, issue on one baseline)
    and the BMJ page's two header lines (download stamp over running title) stand apart from the
    text as blocks, though no line of them does alone; the body around them stays."""
    plos = pdf_text(read("olmocr-bench/pdfs/headers_footers/ff0f0b22c55d8b90dd77d153f48e144fc9db_pg2.pdf"), SETTINGS)
    assert "PLOS Neglected Tropical Diseases | www.plosntds.org" not in plos.text
    assert "March 2014 | Volume 8 | Issue 3 | e2748" not in plos.text
    assert plos.text.startswith("Lassa Fever in Post-Conflict Sierra Leone\n")
    assert plos.text.endswith("decision to publish, or preparation of the\nmanuscript.")
    bmj = pdf_text(read("olmocr-bench/pdfs/multi_column_miss.pdf"), SETTINGS).text
    assert "Downloaded from http://tobaccocontrol.bmj.com/" not in bmj and "Advocacy in Action" not in bmj
    assert bmj.startswith("stakeholders has occurred in other nations, with groups and\n")


def test_a_page_number_under_the_text_of_a_cropped_page_goes():
    """NVIDIA's 10-K page ends halfway down the sheet: its page number is far above the bottom
    band, yet the last line and set apart; the sentence above it stays."""
    text = pdf_text(read("olmocr-bench/pdfs/earnings.pdf"), SETTINGS).text
    assert text.endswith("not significant during fiscal years 2025, 2024, and 2023.")


def test_the_letters_of_a_ligature_glyph_stay_one_word():
    """pdfium gives both letters of an "fi" glyph one box; they are not split by a space."""
    crazy = pdf_text((PDFS.parents[1] / "sample/pdf/py-pdf-sample-files/crazyones-pdfa.pdf").read_bytes(), SETTINGS)
    assert "The misfits." in crazy.text
    paper = pdf_text(read("olmocr-bench/pdfs/math_2503_04086.pdf"), SETTINGS)
    assert "generous financial support" in paper.text and "f inancial" not in paper.text
