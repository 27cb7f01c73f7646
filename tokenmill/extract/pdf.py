"""PDF bytes to plain text with pdfium (pypdfium2): reading order across columns, running
headers and footers dropped, line-end hyphens repaired, and each page's text layer judged, so
that a page without one (a scan) or with a garbage one (a broken font encoding) is listed for
OCR instead of reaching the corpus.

Geometry is PDF user space: x to the right, y upwards, in points. pdfium gives each character
its box; characters become segments (runs on one line without a wide gap), segments are ordered
by a recursive XY-cut (a column gutter is cut before a horizontal gap, so a two-column page reads
the left column, then the right), and the leaves of the cut are the lines of the page.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from statistics import median

import pypdfium2 as pdfium
import pypdfium2.raw as pdfium_c
from importlib import metadata

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
_LATIN_VOWELS = frozenset("aeiouyàáâãäåæèéêëìíîïòóôõöøùúûüýÿāăąēĕėęěīĭįıōŏőœūŭůűų")


@dataclass(frozen=True)
class PdfSettings:
    """The `extract.pdf` config section (its defaults and what each key means are in the schema)."""

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
    margin_band: float
    margin_lines: int
    repeated_share: float
    margin_max_words: int
    margin_min_gap: float
    max_pages: int
    max_bytes: int  # read by the part job, before pdfium opens the file


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
    dropped = _drop_running_lines(page_lines, heights, settings)
    return PdfText([_page_text(lines) for lines in page_lines], page_chars, needs_ocr, dropped)


def _read_page(document: pdfium.PdfDocument, index: int, settings: PdfSettings
               ) -> tuple[list[_Line], int, float, str | None]:
    """(lines in reading order, text-layer characters, page height, OCR reason or None); the
    lines of a page that needs OCR are not kept."""
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
    if visible < settings.scan_max_chars and image_share >= settings.scan_image_share:
        return [], visible, height, f"{NO_TEXT_LAYER}: {visible} characters on a page {image_share:.0%} images"
    lines = _reading_order(segments)
    problem = garbage_reason(" ".join(line.text for line in lines), settings)
    if problem:
        return [], visible, height, f"{GARBAGE_TEXT_LAYER}: {problem}"
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
    current: list = []  # [left, bottom, right, top, chars, last box]
    space_pending = False
    visible = 0

    def close():
        nonlocal current
        if current and "".join(current[4]).strip():
            segments.append(_Segment(current[0], current[1], current[2], current[3], "".join(current[4]).strip()))
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
            current[4].append(char)
            current[0], current[1] = min(current[0], box[0]), min(current[1], box[1])
            current[2], current[3] = max(current[2], box[2]), max(current[3], box[3])
            current[5] = box
        else:
            close()
            current = [*box, [char], box]
        space_pending = False
    close()
    return segments, visible, width if main_turns % 2 else height


def _continues(last: tuple, box: tuple, char: str) -> bool:
    """Whether a character box goes on the run whose last character box is `last`: the two
    overlap vertically by half the smaller height and the gap between them is under about a
    character height (a right-to-left character may go leftwards)."""
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


def _reading_order(segments: list[_Segment]) -> list[_Line]:
    lines: list[_Line] = []
    _xy_cut(segments, lines)
    return lines


def _xy_cut(segments: list[_Segment], out: list[_Line]) -> None:
    """Appends the lines of `segments` in reading order: columns (a vertical gap of at least a
    line height, in which no segment lies) left to right, else the two sides of the widest
    horizontal gap top to bottom, else one line band (segments that overlap vertically)."""
    if not segments:
        return
    line_height = median(segment.height for segment in segments)
    columns = _split(segments, lambda s: (s.left, s.right), min_gap=max(4.0, 1.0 * line_height))
    if len(columns) > 1:
        for column in columns:
            _xy_cut(column, out)
        return
    rows = _split(segments, lambda s: (-s.top, -s.bottom), min_gap=0.0, widest_only=True)
    if len(rows) > 1:
        for row in rows:
            _xy_cut(row, out)
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
    """Segments that overlap vertically (a superscript with its line) as lines, top to bottom."""
    lines: list[list[_Segment]] = []
    for segment in sorted(segments, key=lambda s: (-s.top, s.left)):
        for line in lines:
            top, bottom = max(s.top for s in line), min(s.bottom for s in line)
            if min(top, segment.top) - max(bottom, segment.bottom) >= 0.5 * min(segment.height, top - bottom):
                line.append(segment)
                break
        else:
            lines.append([segment])
    return [_Line(line) for line in lines]


def _band_key(text: str) -> str:
    return re.sub(r"\d+", "#", " ".join(text.lower().split()))


def _margin_lines(lines: list[_Line], height: float, settings: PdfSettings) -> list[int]:
    """Indices of the lines within the top or bottom band of the page, at most
    `settings.margin_lines` from each edge."""
    by_top = sorted(range(len(lines)), key=lambda index: -lines[index].top)
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


def _drop_running_lines(page_lines: list[list[_Line]], heights: list[float], settings: PdfSettings) -> int:
    """Drops running headers and footers (a line of the top or bottom band seen, digits aside,
    on `repeated_share` of the pages of a document of several pages), page numbers in the
    bands, and on any page a short band line set apart from the body. Returns how many went."""
    bands = [_margin_lines(lines, height, settings) for lines, height in zip(page_lines, heights)]
    seen = Counter(key for lines, band in zip(page_lines, bands) for key in {_band_key(lines[i].text) for i in band})
    with_text = sum(1 for lines in page_lines if lines)
    dropped = 0
    for page, (lines, band) in enumerate(zip(page_lines, bands)):
        drop = set()
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
                          and min(previous.right, line.right) > max(previous.left, line.left))
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


def garbage_reason(text: str, settings: PdfSettings) -> str | None:
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
