"""PDF bytes to plain text with pdfium (pypdfium2): reading order across columns, running
headers and footers dropped, line-end hyphens repaired, and each page's text layer judged, so
that a page without one (a scan) or with a garbage one (a broken font encoding) is listed for
OCR instead of reaching the corpus.

Geometry is PDF user space: x to the right, y upwards, in points. pdfium gives each character
its box; characters become segments (runs on one line without a wide gap), segments are ordered
by a recursive XY-cut (a column gutter is cut before a horizontal gap, so a two-column page reads
the left column, then the right), and the leaves of the cut are the lines of the page. A table
(rows of short cells whose columns line up) is found before the cut could split it and is
written as a Markdown pipe table in its place.
"""

from __future__ import annotations

import bisect
import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from statistics import median

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from importlib import metadata

from tokenmill.extract.pdf_settings import PdfRouting, PdfSettings
from tokenmill.extract.quarantine import Quarantine

PDF_ENGINE = f"pypdfium2-{metadata.version('pypdfium2')}"  # extract_meta.extractor of a PDF's text
NO_TEXT_LAYER = "no_text_layer"
GARBAGE_TEXT_LAYER = "garbage_text_layer"
# pdfium writes a hyphen that it takes for a line-end hyphenation as U+0002 or U+FFFE
PDFIUM_LINE_END_HYPHENS = ("\x02", "\ufffe")
LIGATURES = {"\ufb00": "ff", "\ufb01": "fi", "\ufb02": "fl", "\ufb03": "ffi", "\ufb04": "ffl", "\ufb05": "st",
             "\ufb06": "st"}
# pdfium's load errors (fpdfview.h FPDF_ERR_*)
_PASSWORD_ERRORS = {pdfium_c.FPDF_ERR_PASSWORD, pdfium_c.FPDF_ERR_SECURITY}
_PAGE_NUMBER = re.compile(r"(page\s*)?(\d{1,4}|[ivxlcdm]{1,7})(\s*(of|/)\s*\d{1,4})?", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\ufffe]")
_CURRENCY = frozenset("$€£¥₹")
_LATIN_VOWELS = frozenset("aeiouyàáâãäåæèéêëìíîïòóôõöøùúûüýÿāăąēĕėęěīĭįıōŏőœūŭůűų")


PAGE_BREAK = "\n\n"  # between the pages of a PDF's text


def join_pages(page_texts: list[str]) -> tuple[str, list[int]]:
    """A PDF's text from its pages' texts, and where each page starts in it."""
    starts = [sum(len(text) + len(PAGE_BREAK) for text in page_texts[:index]) for index in range(len(page_texts))]
    return PAGE_BREAK.join(page_texts), starts


@dataclass
class PdfText:
    """The text of each page of a PDF (an empty string for a page left for OCR)."""

    page_texts: list[str]
    page_chars: list[int]  # characters of each page's text layer, before any line was dropped
    needs_ocr: dict[int, str] = field(default_factory=dict)  # page number (from 1) -> reason
    dropped_lines: int = 0  # running headers, footers and page numbers

    @property
    def pages(self) -> int:
        return len(self.page_texts)

    @property
    def text(self) -> str:
        return join_pages(self.page_texts)[0]

    @property
    def page_starts(self) -> list[int]:
        return join_pages(self.page_texts)[1]

    def meta(self) -> dict:
        return {"pages": self.pages, "page_starts": self.page_starts, "page_chars": self.page_chars,
                "needs_ocr": {str(page): reason for page, reason in sorted(self.needs_ocr.items())},
                "dropped_lines": self.dropped_lines}


@dataclass
class _Segment:
    left: float
    bottom: float
    right: float
    top: float
    text: str
    words: list[tuple[float, float, str]] = field(default_factory=list)  # (left, right, text) of each word
    cells: list[list[str]] | None = None  # a table's rows of cells, `text` being its Markdown

    @property
    def height(self) -> float:
        return self.top - self.bottom


@dataclass
class _Line:
    segments: list[_Segment]
    left: float = 0.0
    bottom: float = 0.0
    right: float = 0.0
    top: float = 0.0
    text: str = ""

    def __post_init__(self):
        self.segments.sort(key=lambda segment: (segment.left, -segment.top))
        self.left = min(segment.left for segment in self.segments)
        self.right = max(segment.right for segment in self.segments)
        self.bottom = min(segment.bottom for segment in self.segments)
        self.top = max(segment.top for segment in self.segments)
        self.text = " ".join(segment.text for segment in self.segments)

    @property
    def height(self) -> float:
        return max(1.0, median(segment.height for segment in self.segments))

    @property
    def is_table(self) -> bool:
        return any(segment.cells is not None for segment in self.segments)

    @property
    def plain_text(self) -> str:
        """The text without a table's Markdown: its cells, row by row."""
        if not self.is_table:
            return self.text
        return " ".join(" ".join(cell for row in segment.cells or [[segment.text]] for cell in row)
                        for segment in self.segments)


def open_pdf(data: bytes) -> pdfium.PdfDocument:
    """The document, opened with the empty password when it is encrypted with one; a PDF that
    needs a password is quarantined `encrypted`, one that pdfium cannot read `broken_pdf`."""
    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as error:
        if getattr(error, "err_code", None) in _PASSWORD_ERRORS:
            raise Quarantine("encrypted", f"a password is needed: {error}") from None
        raise Quarantine("broken_pdf", str(error)) from None


def pdf_text(data: bytes, settings: PdfSettings) -> PdfText:
    page_lines, page_chars, needs_ocr, heights = _read_pages(data, settings)
    dropped = _drop_running_lines(page_lines, heights, settings)
    return PdfText([_page_text(lines) for lines in page_lines], page_chars, needs_ocr, dropped)


def ocr_routes(data: bytes, settings: PdfRouting) -> dict[int, str]:
    """The pages of a PDF that need OCR (page number from 1 -> why), as pdf_text lists them."""
    return _read_pages(data, settings)[2]


def _read_pages(data: bytes, settings: PdfRouting
                ) -> tuple[list[list[_Line]], list[int], dict[int, str], list[float]]:
    """Each page's lines in reading order, text-layer characters and height, and the pages that
    need OCR; a PDF that cannot be read is quarantined."""
    if b"%PDF" not in data[:1024]:
        raise Quarantine("broken_pdf", "no %PDF header in the first kilobyte")
    document = open_pdf(data)
    try:
        pages = len(document)
        if pages > settings.max_pages:
            raise Quarantine("too_many_pages", f"{pages} pages, more than {settings.max_pages}")
        page_lines, page_chars, needs_ocr, heights = [], [], {}, []
        for number in range(1, pages + 1):
            try:
                lines, chars, height, problem = _read_page(document, number - 1, settings)
            except pdfium.PdfiumError as error:  # one broken page does not lose the others
                lines, chars, height, problem = [], 0, 0.0, f"broken_page: {error}"
            page_lines.append(lines)
            page_chars.append(chars)
            heights.append(height)
            if problem:
                needs_ocr[number] = problem
    finally:
        document.close()
    return page_lines, page_chars, needs_ocr, heights


def _read_page(document: pdfium.PdfDocument, index: int, settings: PdfRouting
               ) -> tuple[list[_Line], int, float, str | None]:
    """(lines in reading order, text-layer characters, page height, OCR reason or None). A page
    that needs OCR keeps no lines, except a scan with a thin text layer that is not garbage (a
    caption, a stamp, text drawn over the picture): its lines stand until OCR reads the page better."""
    page = document[index]
    try:
        textpage = page.get_textpage()
        try:
            segments, visible, height = _segments(textpage, *page.get_size())
        finally:
            textpage.close()
        image_share = _image_share(page)
    finally:
        page.close()
    if visible < settings.min_page_chars:
        return [], visible, height, NO_TEXT_LAYER
    lines = _reading_order(segments, settings)
    problem = garbage_reason(" ".join(line.plain_text for line in lines), settings)
    if problem:
        return [], visible, height, f"{GARBAGE_TEXT_LAYER}: {problem}"
    if visible < settings.scan_max_chars and image_share >= settings.scan_image_share:
        return lines, visible, height, f"{NO_TEXT_LAYER}: {visible} characters on a page {image_share:.0%} images"
    return lines, visible, height, None


def _image_share(page: pdfium.PdfPage) -> float:
    """The share of the page area that image objects cover (overlaps counted twice, at most 1)."""
    width, height = page.get_size()
    covered = 0.0
    for image in page.get_objects(filter=[pdfium_c.FPDF_PAGEOBJ_IMAGE], max_depth=4):
        left, bottom, right, top = image.get_bounds()
        covered += max(0.0, min(right, width) - max(left, 0.0)) * max(0.0, min(top, height) - max(bottom, 0.0))
    return min(1.0, covered / max(width * height, 1.0))


def _quarter_turns(textpage: pdfium.PdfTextPage, count: int) -> list[int | None]:
    """Each character's direction in quarter turns counter-clockwise (pdfium measures its angle
    clockwise), None for one more than about 30 degrees off a quarter (italic fonts lean by 0.2
    radians)."""
    turns = []
    for index in range(count):
        quarters = pdfium_c.FPDFText_GetCharAngle(textpage, index) / (math.pi / 2)
        nearest = round(quarters)
        turns.append((4 - nearest) % 4 if abs(quarters - nearest) < 0.33 else None)
    return turns


def _upright(box: tuple, turns: int, width: float, height: float) -> tuple:
    """A (left, bottom, right, top) box in the frame where text turned `turns` quarters
    counter-clockwise reads left to right, with the page's corner at the origin."""
    left, bottom, right, top = box
    if turns == 1:
        return bottom, width - right, top, width - left
    if turns == 2:
        return width - right, height - top, width - left, height - bottom
    if turns == 3:
        return height - top, left, height - bottom, right
    return box


def _segments(textpage: pdfium.PdfTextPage, width: float, height: float) -> tuple[list[_Segment], int, float]:
    """Runs of characters on one line, in content-stream order, the count of visible
    characters and the page height, all in the frame of the page's main text direction (a
    page set sideways reads as it is). Characters of another direction are left out. Boxes
    are pdfium's loose ones (the font's ascent to descent), of one height along a line; a
    space is pdfium's, written or generated from the gap."""
    count = textpage.count_chars()
    text = textpage.get_text_range(0, count) if count else ""
    if len(text) != count:  # characters outside the BMP: UTF-16 pairs no longer line up with indices
        text = "".join(chr(pdfium_c.FPDFText_GetUnicode(textpage, index)) for index in range(count))
    turns = _quarter_turns(textpage, count)
    main_turns = Counter(turn for turn in turns if turn is not None).most_common(1)
    main_turns = main_turns[0][0] if main_turns else 0
    rect = pdfium_c.FS_RECTF()
    segments: list[_Segment] = []
    current: list = []  # [left, bottom, right, top, chars, last box, [left, right] of each word]
    space_pending = False
    visible = 0

    def close():
        nonlocal current
        text = "".join(current[4]) if current else ""
        if text.strip():  # a space goes in only between two words: the text splits at them into its words
            words = [(left, right, word) for (left, right), word in zip(current[6], text.split(" "))]
            segments.append(_Segment(current[0], current[1], current[2], current[3], text.strip(), words))
        current = []

    for index, char in enumerate(text):
        if char in "\r\n":
            close()
            continue
        if char.isspace():
            space_pending = True
            continue
        if turns[index] != main_turns or not pdfium_c.FPDFText_GetLooseCharBox(textpage, index, rect):
            continue
        box = _upright((rect.left, rect.bottom, rect.right, rect.top), main_turns, width, height)
        visible += 1
        char = LIGATURES.get(char, char)
        if box[3] - box[1] <= 0 or box[2] - box[0] < 0:  # an empty glyph box: keep the character, not the box
            if current:
                current[4].append(char)
            continue
        if current and _continues(current[5], box, char):
            if space_pending:
                current[4].append(" ")
                current[6].append([box[0], box[2]])
            else:
                word = current[6][-1]
                word[0], word[1] = min(word[0], box[0]), max(word[1], box[2])
            current[4].append(char)
            current[0], current[1] = min(current[0], box[0]), min(current[1], box[1])
            current[2], current[3] = max(current[2], box[2]), max(current[3], box[3])
            current[5] = box
        else:
            close()
            current = [*box, [char], box, [[box[0], box[2]]]]
        space_pending = False
    close()
    return segments, visible, width if main_turns % 2 else height


def _continues(last: tuple, box: tuple, char: str) -> bool:
    """Whether a character box goes on the run whose last character box is `last`: the two
    overlap vertically by half the smaller height and the gap between them is under about a
    character height (a right-to-left character may go leftwards). The characters of a ligature
    glyph ("fi") share its box: they always go on."""
    if box == last:
        return True
    height = min(last[3] - last[1], box[3] - box[1])
    overlap = min(last[3], box[3]) - max(last[1], box[1])
    if overlap < 0.5 * height:
        return False
    limit = 1.2 * max(last[3] - last[1], box[3] - box[1])
    gap = box[0] - last[2]
    if _right_to_left(char):
        return -limit - (box[2] - box[0]) - (last[2] - last[0]) <= gap <= limit
    return -0.5 * height <= gap <= limit


def _right_to_left(char: str) -> bool:
    return unicodedata.bidirectional(char) in ("R", "AL", "AN")


def _reading_order(segments: list[_Segment], settings: PdfRouting) -> list[_Line]:
    lines: list[_Line] = []
    _xy_cut(segments, lines, settings)
    return lines


def _xy_cut(segments: list[_Segment], out: list[_Line], settings: PdfRouting, find_tables: bool = True) -> None:
    """Appends the lines of `segments` in reading order: columns (a vertical gap of at least a
    line height, in which no segment lies) left to right, else the two sides of the widest
    horizontal gap top to bottom, else one line band (segments that overlap vertically).
    Tables are found first, on the page and in each column (a cut between two rows leaves the
    rows as they were), and each goes on as one segment, which no cut can split."""
    if not segments:
        return
    if find_tables:
        segments = _with_tables(segments, settings)
    line_height = median(segment.height for segment in segments)
    columns = _split(segments, lambda s: (s.left, s.right), min_gap=max(4.0, 1.0 * line_height))
    if len(columns) > 1:
        for column in columns:
            _xy_cut(column, out, settings)
        return
    rows = _split(segments, lambda s: (-s.top, -s.bottom), min_gap=0.0, widest_only=True)
    if len(rows) > 1:
        for row in rows:
            _xy_cut(row, out, settings, find_tables=False)
        return
    out.extend(_bands(segments))


def _split(segments: list[_Segment], interval, min_gap: float, widest_only: bool = False) -> list[list[_Segment]]:
    """`segments` cut at the empty gaps of their projection on one axis (`interval` gives each
    segment's extent, increasing in reading order) of more than `min_gap`; with `widest_only`
    at the widest gap alone."""
    ordered = sorted(segments, key=lambda s: (interval(s), s.left, -s.top))
    groups, gaps, reach = [[ordered[0]]], [], interval(ordered[0])[1]
    for segment in ordered[1:]:
        start, end = interval(segment)
        if start - reach > min_gap:
            gaps.append(start - reach)
            groups.append([segment])
        else:
            groups[-1].append(segment)
        reach = max(reach, end)
    if widest_only and len(groups) > 2:
        widest = max(range(len(gaps)), key=lambda index: (gaps[index], -index))
        return [sum(groups[:widest + 1], []), sum(groups[widest + 1:], [])]
    return groups


def _bands(segments: list[_Segment]) -> list[_Line]:
    """Segments that overlap vertically (a superscript with its line) as lines, top to bottom; a
    table is a line of its own."""
    lines: list[list[_Segment]] = []
    for segment in sorted(segments, key=lambda s: (-s.top, s.left)):
        for line in lines:
            if segment.cells is not None or line[0].cells is not None:
                continue
            top, bottom = max(s.top for s in line), min(s.bottom for s in line)
            if min(top, segment.top) - max(bottom, segment.bottom) >= 0.5 * min(segment.height, top - bottom):
                line.append(segment)
                break
        else:
            lines.append([segment])
    return [_Line(line) for line in lines]


def _with_tables(segments: list[_Segment], settings: PdfRouting) -> list[_Segment]:
    """`segments` with the segments of each table among them replaced by one segment, the
    table's Markdown, that spans them."""
    rows = _rows(segments)
    cell_rows = [_cells(row, settings) for row in rows]
    tables = []
    for headings, first, end in _table_runs(rows, cell_rows, settings):
        found = _grid(cell_rows[headings:end], first - headings, settings)
        if found:
            skipped, grid = found
            members = [segment for row in rows[headings + skipped:end] for segment in row]
            tables.append((members, grid))
    if not tables:
        return segments
    taken = {id(segment) for members, _ in tables for segment in members}
    kept = [segment for segment in segments if id(segment) not in taken]
    for members, grid in tables:
        kept.append(_Segment(min(s.left for s in members), min(s.bottom for s in members),
                             max(s.right for s in members), max(s.top for s in members), _markdown(grid), cells=grid))
    return kept


def _rows(segments: list[_Segment]) -> list[list[_Segment]]:
    """Segments that overlap vertically by half the smaller height, as rows top to bottom."""
    rows: list[list[_Segment]] = []
    top = bottom = 0.0
    for segment in sorted(segments, key=lambda s: (-s.top, s.left)):
        if rows and min(top, segment.top) - max(bottom, segment.bottom) >= 0.5 * min(segment.height, top - bottom):
            rows[-1].append(segment)
            bottom = min(bottom, segment.bottom)
        else:
            rows.append([segment])
            top, bottom = segment.top, segment.bottom
    return rows


def _cells(row: list[_Segment], settings: PdfRouting) -> list[_Segment]:
    """The cells of a row, left to right: its segments cut where two words lie `table_cell_gap`
    line heights apart, pieces that overlap joined (pdfium splits a word at some ligatures), and
    a currency sign joined to the amount after it. None for a row that holds a table."""
    if any(segment.cells is not None for segment in row):
        return []
    pieces = sorted((piece for segment in row for piece in _pieces(segment, settings.table_cell_gap)),
                    key=lambda piece: (piece.left, -piece.top))
    cells: list[_Segment] = []
    for piece in pieces:
        if cells and (piece.left < cells[-1].right or cells[-1].text in _CURRENCY):
            last = cells[-1]
            glue = "" if piece.left < last.right and last.text[-1].isalpha() and piece.text[0].islower() else " "
            cells[-1] = _Segment(last.left, min(last.bottom, piece.bottom), max(last.right, piece.right),
                                 max(last.top, piece.top), last.text + glue + piece.text)
        else:
            cells.append(piece)
    return cells


def _pieces(segment: _Segment, cell_gap: float) -> list[_Segment]:
    """A segment cut at each gap between words of at least `cell_gap` times its height."""
    words, wide = segment.words, cell_gap * segment.height
    if all(after[0] - before[1] < wide for before, after in zip(words, words[1:])):
        return [segment]
    groups = [[words[0]]]
    for word in words[1:]:
        if word[0] - groups[-1][-1][1] >= wide:
            groups.append([word])
        else:
            groups[-1].append(word)
    return [_Segment(group[0][0], segment.bottom, max(word[1] for word in group), segment.top,
                     " ".join(word[2] for word in group)) for group in groups]


def _grid_row(cells: list[_Segment], settings: PdfRouting) -> bool:
    """A row that reads like a table's: two cells or more, none longer than a few words."""
    return len(cells) >= 2 and all(len(cell.text.split()) <= settings.table_max_cell_words for cell in cells)


def _table_runs(rows: list[list[_Segment]], cell_rows: list[list[_Segment]], settings: PdfRouting
                ) -> list[tuple[int, int, int]]:
    """(headings, first, end) of each run of rows that may be a table: from `first`, at least
    `table_min_rows` grid rows, with at most two other short rows between two of them (a
    spanning heading, a cell's second line); from `headings`, up to two short rows just above
    that stand closer to the run than to the text above them (a heading over several columns)."""
    grid = [_grid_row(cells, settings) for cells in cell_rows]
    short = [0 < len(cells) and all(len(cell.text.split()) <= 2 * settings.table_max_cell_words for cell in cells)
             for cells in cell_rows]
    runs, index = [], 0
    while index < len(rows):
        if not grid[index]:
            index += 1
            continue
        end, grid_rows = index + 1, 1
        while True:
            step = next((step for step in (1, 2, 3) if end + step <= len(rows) and grid[end + step - 1]
                         and all(short[end:end + step - 1])), None)
            if step is None:
                break
            end, grid_rows = end + step, grid_rows + 1
        first, last = _inside_rows(cell_rows, index, end - 1)
        if sum(grid[first:last + 1]) >= settings.table_min_rows:
            runs.append((_heading_start(rows, cell_rows, first, settings), first, last + 1))
        index = end
    return runs


def _inside_rows(cell_rows: list[list[_Segment]], first: int, last: int) -> tuple[int, int]:
    """The first and last rows of a run less a row at either end that reaches more than a line
    height out of the span of the others (a section heading under a table, set at the margin)."""
    def sticks_out(index: int, others: range) -> bool:
        left = min(cell.left for other in others for cell in cell_rows[other])
        right = max(cell.right for other in others for cell in cell_rows[other])
        height = median(cell.height for cell in cell_rows[index])
        return cell_rows[index][0].left < left - height or cell_rows[index][-1].right > right + height
    while last - first >= 2 and sticks_out(last, range(first, last)):
        last -= 1
    while last - first >= 2 and sticks_out(first, range(first + 1, last + 1)):
        first += 1
    return first, last


def _heading_start(rows: list[list[_Segment]], cell_rows: list[list[_Segment]], first: int,
                   settings: PdfRouting) -> int:
    """The first row of a table whose first grid row is `first`: up to two short rows above it
    join when each is nearer to the row below it than to the row above it."""
    for _ in range(2):
        if first == 0 or not 0 < len(cell_rows[first - 1]) <= 3 or any(
                len(cell.text.split()) > settings.table_max_cell_words for cell in cell_rows[first - 1]):
            break
        above = _row_gap(rows[first - 2], rows[first - 1]) if first >= 2 else math.inf
        if _row_gap(rows[first - 1], rows[first]) >= above:
            break
        first -= 1
    return first


def _row_gap(upper: list[_Segment], lower: list[_Segment]) -> float:
    return min(segment.bottom for segment in upper) - max(segment.top for segment in lower)


def _grid(cell_rows: list[list[_Segment]], headings: int, settings: PdfRouting
          ) -> tuple[int, list[list[str]]] | None:
    """(heading rows left out, the table as rows of cells) of a run of rows whose first `headings`
    rows may head it, or None when not `table_min_rows` of its rows fill `table_min_columns`
    columns. Columns are divided by gutters: gaps of at least `table_cell_gap` line heights that
    the cells of no more than `table_gutter_tolerance` of the grid rows cross. A heading row that
    reaches into the first column (a caption) is left out."""
    grid_rows = [cells for cells in cell_rows[headings:] if _grid_row(cells, settings)]
    height = median(cell.height for cells in grid_rows for cell in cells)
    gutters = _gutters([cell for cells in grid_rows for cell in cells],
                       int(settings.table_gutter_tolerance * len(grid_rows)), settings.table_cell_gap * height)
    bounds = [split for _, _, split in gutters]
    placed = [[(bisect.bisect(bounds, cell.left), cell) for cell in cells] for cells in cell_rows]
    if sum(len({column for column, _ in row}) >= settings.table_min_columns for row in placed) < settings.table_min_rows:
        return None
    skipped = next((index + 1 for index in range(headings - 1, -1, -1) if any(column == 0 for column, _ in placed[index])), 0)
    placed = placed[skipped:]
    extents = _column_extents(grid_rows, gutters)
    table = []
    for row in placed:
        texts = [""] * (len(gutters) + 1)
        for column, cell in row:
            texts[column] = f"{texts[column]} {cell.text}".strip()
        table.append(texts)
    headings = next((index for index, texts in enumerate(table) if texts[0]), len(table))  # above the first row name
    body = table[headings:]
    dense = [2 * sum(1 for texts in body if texts[column]) >= len(body) for column in range(len(gutters) + 1)]
    for index in range(headings):
        table[index] = _spread_headings(placed[index], table[index], extents, dense)
    return skipped, _merge_headings(table)


def _gutters(cells: list[_Segment], tolerance: int, min_gap: float) -> list[tuple[float, float, float]]:
    """(start, end, split) of each x-range of at least `min_gap` inside the cells' span that no
    more than `tolerance` cells cover; two columns divide at `split`, the middle of its widest
    stretch that the fewest cells cover (the edge of a gutter may lie in the column beside it,
    under the few long cells of that column)."""
    events = sorted([(cell.left, 1) for cell in cells] + [(cell.right, -1) for cell in cells])
    gutters, covered, opened, stretches = [], 0, None, []
    for (x, change), following in zip(events, [x for x, _ in events[1:]] + [math.inf]):
        before, covered = covered, covered + change
        if before > tolerance >= covered:
            opened, stretches = x, []
        elif covered > tolerance >= before and opened is not None:
            if x - opened >= min_gap:
                _, start, end = min(stretches, key=lambda stretch: (stretch[0], stretch[1] - stretch[2]))
                gutters.append((opened, x, (start + end) / 2))
            opened = None
        if opened is not None and covered <= tolerance and following > x:
            stretches.append((covered, x, following))
    return gutters


def _column_extents(grid_rows: list[list[_Segment]], gutters: list[tuple[float, float, float]]
                    ) -> list[tuple[float, float]]:
    """Each column's x-range: that of the cells which lie between two gutters."""
    edges = [-math.inf] + [x for start, end, _ in gutters for x in (start, end)] + [math.inf]
    extents = []
    for column in range(len(gutters) + 1):
        start, end = edges[2 * column], edges[2 * column + 1]
        inside = [cell for cells in grid_rows for cell in cells if cell.left >= start and cell.right <= end]
        extents.append((min(cell.left for cell in inside), max(cell.right for cell in inside)) if inside
                       else (max(start, -1e9), min(end, 1e9)))
    return extents


def _spread_headings(row: list[tuple[int, _Segment]], texts: list[str], extents: list[tuple[float, float]],
                     dense: list[bool]) -> list[str]:
    """A heading row with each heading copied into the empty columns beside its own that it is
    centred over, when they are `dense` (filled in half the rows below: the data a heading over
    several columns stands for); Markdown has no cell spanning columns."""
    spread = list(texts)
    for column, cell in row:
        centre, best = (cell.left + cell.right) / 2, None
        for first in range(column, -1, -1):
            if first < column and texts[first] or not dense[first]:
                break
            for last in range(column, len(texts)):
                if last > column and texts[last] or not dense[last]:
                    break
                if last > first and abs((extents[first][0] + extents[last][1]) / 2 - centre) <= 0.2 * cell.height:
                    if best is None or last - first > best[1] - best[0]:
                        best = (first, last)
        if best:
            spread[best[0]:best[1] + 1] = [texts[column]] * (best[1] - best[0] + 1)
    return spread


def _merge_headings(table: list[list[str]]) -> list[list[str]]:
    """Heading rows stacked over each other, with no column in common and the first column
    empty at the top, as one row (a heading over the numbers' columns above one over the names')."""
    while len(table) > 1 and not table[0][0] and not any(a and b for a, b in zip(table[0], table[1])):
        table = [[a or b for a, b in zip(table[0], table[1])]] + table[2:]
    return table


def _markdown(table: list[list[str]]) -> str:
    lines = ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in table]
    return "\n".join(lines[:1] + ["|" + "---|" * len(table[0])] + lines[1:])


def _band_key(text: str) -> str:
    return re.sub(r"\d+", "#", " ".join(text.lower().split()))


def _margin_lines(lines: list[_Line], height: float, settings: PdfSettings) -> list[int]:
    """Indices of the lines within the top or bottom band of the page, at most
    `settings.margin_lines` from each edge."""
    by_top = sorted((index for index, line in enumerate(lines) if not line.is_table), key=lambda index: -lines[index].top)
    top = [index for index in by_top[:settings.margin_lines] if lines[index].bottom >= height * (1 - settings.margin_band)]
    bottom = [index for index in by_top[::-1][:settings.margin_lines] if lines[index].top <= height * settings.margin_band]
    return sorted(set(top + bottom))


def _set_apart(lines: list[_Line], index: int, settings: PdfSettings) -> bool:
    """Whether the nearest other line above or below lies at least `margin_min_gap` line heights
    away from this one (a header stands apart from the text it heads)."""
    line = lines[index]
    gaps = [max(other.bottom - line.top, line.bottom - other.top) for position, other in enumerate(lines)
            if position != index]
    return not gaps or min(gaps) >= settings.margin_min_gap * line.height


def _edge_blocks(lines: list[_Line], height: float, settings: PdfSettings) -> set[int]:
    """Indices of the lines of a block at the top or bottom edge of the page, up to `margin_lines`
    lines of the band, each of at most `margin_max_words` words, that stands `margin_min_gap`
    line heights apart from the next line inward: a header of two lines, or a footer of a
    journal's name, the page number and the date side by side (each line too near the others to
    stand apart alone)."""
    ordered = [index for index, line in enumerate(lines) if not line.is_table]
    from_top = sorted(ordered, key=lambda index: -lines[index].top)
    from_bottom = sorted(ordered, key=lambda index: lines[index].bottom)
    found: set[int] = set()
    for edge, in_band, gap in (
            (from_top, lambda line: line.bottom >= height * (1 - settings.margin_band),
             lambda block, inner: min(line.bottom for line in block) - inner.top),
            (from_bottom, lambda line: line.top <= height * settings.margin_band,
             lambda block, inner: inner.bottom - max(line.top for line in block))):
        block = []
        for position, index in enumerate(edge[:min(settings.margin_lines, len(edge) - 1)]):
            line = lines[index]
            if not in_band(line) or len(line.text.split()) > settings.margin_max_words:
                break
            block.append(line)
            if gap(block, lines[edge[position + 1]]) >= settings.margin_min_gap * max(line.height for line in block):
                found.update(edge[:position + 1])
    return found


def _edge_page_numbers(lines: list[_Line], settings: PdfSettings) -> set[int]:
    """Indices of the topmost and the bottommost line when it is a page number set apart from
    the text, wherever it lies (the text of a cropped page ends well above the page's edge)."""
    ordered = sorted((index for index, line in enumerate(lines) if not line.is_table), key=lambda index: -lines[index].top)
    return {index for index in ordered[:1] + ordered[-1:]
            if _PAGE_NUMBER.fullmatch(lines[index].text.strip()) and _set_apart(lines, index, settings)}


def _drop_running_lines(page_lines: list[list[_Line]], heights: list[float], settings: PdfSettings) -> int:
    """Drops running headers and footers (a line of the top or bottom band seen, digits aside,
    on `repeated_share` of the pages of a document of several pages), page numbers in the
    bands or set apart at the edge of the text, and on any page short band lines set apart from
    the body, alone or as a block. Returns how many went."""
    bands = [_margin_lines(lines, height, settings) for lines, height in zip(page_lines, heights)]
    seen = Counter(key for lines, band in zip(page_lines, bands) for key in {_band_key(lines[i].text) for i in band})
    with_text = sum(1 for lines in page_lines if lines)
    dropped = 0
    for page, (lines, band) in enumerate(zip(page_lines, bands)):
        drop = _edge_blocks(lines, heights[page], settings) | _edge_page_numbers(lines, settings)
        for index in band:
            text = lines[index].text
            repeated = with_text >= 2 and seen[_band_key(text)] >= max(2, settings.repeated_share * with_text)
            page_number = _PAGE_NUMBER.fullmatch(text.strip()) is not None
            short = len(text.split()) <= settings.margin_max_words and _set_apart(lines, index, settings)
            if repeated or page_number or short:
                drop.add(index)
        if len(drop) < len(lines):  # a page all of whose lines look like margins is a short page, kept
            page_lines[page] = [line for index, line in enumerate(lines) if index not in drop]
            dropped += len(drop)
    return dropped


def _page_text(lines: list[_Line]) -> str:
    """Lines joined by a newline, a blank line between blocks (a gap of more than about a line
    height, or a jump to another column), and hyphenations at line ends repaired."""
    pieces: list[str] = []
    previous = None
    for line in lines:
        text = line.text
        if previous is not None:
            same_block = (0 <= previous.bottom - line.top <= 0.9 * max(previous.height, line.height)
                          and min(previous.right, line.right) > max(previous.left, line.left)
                          and not previous.is_table and not line.is_table)
            if same_block and _hyphenated(pieces[-1], text):
                pieces[-1] = pieces[-1][:-1]
            else:
                pieces.append("\n" if same_block else "\n\n")
        pieces.append(text)
        previous = line
    text = "".join(pieces)
    for hyphen in PDFIUM_LINE_END_HYPHENS:
        text = text.replace(hyphen, "-")
    return _CONTROL.sub("", text)


def _hyphenated(before: str, after: str) -> bool:
    """A line ending in a hyphen after a lower-case letter, followed by one starting with a
    lower-case letter: one word broken in two ("exam-" "ple")."""
    return (len(before) >= 2 and (before[-1] == "-" or before[-1] in PDFIUM_LINE_END_HYPHENS) and before[-2].isalpha()
            and before[-2].islower() and after[:1].isalpha() and after[:1].islower())


def garbage_reason(text: str, settings: PdfRouting) -> str | None:
    """Why a page's text layer is garbage (characters that are not the words on the page), or
    None: control characters (glyph codes without a Unicode map), too few letters, words too short or too often a single letter, or Latin letters with
    too few or too many vowels. (pdfium's own flag for characters without a Unicode mapping is
    set on every character of the sample invoice, whose text is right, so it is not used.)"""
    words = text.split()
    visible = sum(len(word) for word in words)
    control = sum(unicodedata.category(char) in ("Cc", "Co", "Cn") for word in words for char in word)
    if control > settings.max_control_share * visible:
        return f"control characters are {control / visible:.2f} of the characters"
    if len(words) < settings.garbage_min_words:
        return None
    letters = sum(char.isalpha() for word in words for char in word)
    digits = sum(char.isdigit() for word in words for char in word)
    if digits < letters < settings.min_letter_share * visible:
        return f"letters are {letters / visible:.2f} of the characters"
    alpha_words = [word for word in words if any(char.isalpha() for char in word)]
    if alpha_words:
        one_letter = sum(1 for word in alpha_words if len(word) == 1) / len(alpha_words)
        if one_letter > settings.max_one_letter_word_share:
            return f"{one_letter:.2f} of the words are a single letter"
        mean_length = sum(len(word) for word in alpha_words) / len(alpha_words)
        if mean_length < settings.min_mean_word_length:
            return f"mean word length {mean_length:.1f}"
    latin = [char.lower() for word in words for char in word if char.isalpha() and char.isascii()
             or "\u00c0" <= char <= "\u017f"]
    if len(latin) >= 100:
        vowels = sum(char in _LATIN_VOWELS for char in latin) / len(latin)
        low, high = settings.min_latin_vowel_share, settings.max_latin_vowel_share
        if not low <= vowels <= high:
            return f"vowels are {vowels:.2f} of the Latin letters"
    return None
