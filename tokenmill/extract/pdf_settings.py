"""The `extract.pdf` settings, apart from the reader (tokenmill.extract.pdf): every Snakemake start
reads them to key the jobs' params, and needs no pdfium for that."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PdfRouting:
    """The `extract.pdf` settings that decide which pages need OCR: the file and page caps, the
    text-layer checks, and the tables, whose cells the garbage check reads. The OCR jobs route
    pages with these alone, so the settings of running lines (PdfSettings) rerun no OCR."""

    min_page_chars: int
    scan_max_chars: int
    scan_image_share: float
    garbage_min_words: int
    max_one_letter_word_share: float
    min_mean_word_length: float
    min_letter_share: float
    max_control_share: float
    min_latin_vowel_share: float
    max_latin_vowel_share: float
    table_cell_gap: float
    table_max_cell_words: int
    table_min_rows: int
    table_min_columns: int
    table_gutter_tolerance: float
    max_pages: int
    max_bytes: int  # read by the part job, before pdfium opens the file


@dataclass(frozen=True)
class PdfSettings(PdfRouting):
    """The `extract.pdf` config section (its defaults and what each key means are in the schema):
    the routing settings, and those of the running headers and footers dropped after routing."""

    margin_band: float
    margin_lines: int
    repeated_share: float
    margin_max_words: int
    margin_min_gap: float
