"""blockml: the page's text blocks (paragraphs, list items, headings, table rows, ...) read from its
DOM, each kept or dropped by a small learned model (gradient-boosted trees, tokenmill.extract.gbdt)
trained in this repository (`python -m tokenmill train-extractor`, tokenmill.extract.blockml_train).

Resiliparse's loss against trafilatura is precision (link lists, teasers, captions, comment prompts
kept) and, once its text is filtered line by line, recall too: its main-content pass drops what the
line model would keep. So blockml reads the whole page itself, in one walk over lexbor's DOM
(selectolax; parsing and walking an average page's ~1,500 nodes cost about what resiliparse's main
content pass does): each block's text with the share of it inside links, the tags around it
(nav, footer, aside, list, table, ...), the boilerplate and content words of its own and its
ancestors' class, id and role attributes, and the size and link share of the three elements that
hold it. Every other feature comes from the block's text, its neighbours' and its page's.
Formulas are written as TeX first (tokenmill.extract.math), as for trafilatura.

A page keeps the blocks whose probability is at least a share (the model's relative_threshold) of
its most likely block's, and the display formulas beside them. The walk, the text features and
the forest also run in C (tokenmill/extract/_blockml.pyx, built by `make`), to the same blocks and
the same doubles.
"""

from __future__ import annotations

import functools
import json
import math
import re
import sys
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import NamedTuple

import numpy as np
from selectolax.lexbor import LexborHTMLParser

from tokenmill.extract.gbdt import Forest, libm
from tokenmill.extract.math import FORMULAS, recover_math
from tokenmill.hashing import pinned_sha256
from tokenmill.io import repository_file

BUNDLED_MODEL = "data/models/blockml/model.json"
MODEL_FORMAT = 3

# elements whose text no reader sees, or which hold no prose (a form control's options)
SKIPPED = frozenset({"script", "style", "noscript", "template", "svg", "iframe", "head", "select", "button", "input",
                     "textarea", "object", "embed", "canvas", "option", "datalist"})
# elements that start and end a block of text; table cells are a row's parts, not blocks
BLOCKS = frozenset({"p", "div", "li", "ul", "ol", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "table", "tbody", "thead",
                    "tfoot", "pre", "blockquote", "dd", "dt", "dl", "section", "article", "header", "footer", "nav",
                    "aside", "main", "form", "figure", "figcaption", "hr", "address", "details", "summary", "center",
                    "caption", "body", "fieldset", "legend", "menu"})
CELLS = frozenset({"td", "th"})
HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# a block inside one of these (any ancestor): one feature each
ENCLOSING_TAGS = ("nav", "footer", "header", "aside", "form", "li", "td", "article", "main", "heading", "pre", "a",
                  "figure", "blockquote", "dl")
_ENCLOSING_BIT = {tag: 1 << index for index, tag in enumerate(ENCLOSING_TAGS)}
# words of class, id and role attributes, in groups: one feature per group for the block's own
# element, and one for any of its ancestors
CLASS_WORDS = {
    "nav": "nav|menu|breadcrumb|pagination|pager|skip|toolbar|tabs",
    "footer": "footer|copyright|legal|bottom",
    "header": "header|masthead|topbar|banner",
    "side": "sidebar|side|widget|aside|rail",
    "comment": "comment|reply|respond|discuss|disqus",
    "share": "share|social|facebook|twitter|sharing|follow",
    "related": r"related|recommend|more|popular|trending|teaser|promo|sponsor|advert|ads?\b|ad-",
    "meta": r"meta|byline|author|date|time|tags?\b|categor|posted|info",
    "subscribe": "subscribe|newsletter|signup|login|register|cookie|consent|popup|modal|search",
    "caption": "caption|credit|thumb|gallery|image|photo|figure",
    "content": "content|article|post|entry|story|text|body|main|blog|prose",
    "title": "title|headline|heading",
    "hidden": "hidden|sr-only|visually-hidden|screen-reader|d-none",
}
_CLASS_GROUPS = tuple(CLASS_WORDS)
_CLASS_WORD = re.compile("|".join(f"(?P<{group}>{words})" for group, words in CLASS_WORDS.items()))
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
CELL = "\t"  # between a table row's cells in a block's text, until the row is written as trafilatura writes it
CONTAINER_LEVELS = 3  # the elements around a block whose size and link share are features
_SENTENCE_END = frozenset(".!?。！？:;\"”’)")
_PUNCTUATION = re.compile("[.,;:!?。，、！？]")
_SEPARATORS = re.compile("[|·»›/•–—]")
_CJK = re.compile("[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_TEX = re.compile(r"\$[^$]+\$")
# a block that is one display formula, as the page wrote it or tokenmill.extract.math did
DISPLAY_FORMULA = re.compile(r"(\\\[.*\\\]|\$\$.*\$\$|\\begin\{.*\})\Z", re.S)
_NON_ASCII = re.compile("[^\x00-\x7f]")
_DIGITS = b"0123456789"
_UPPER = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LETTERS = _UPPER + _UPPER.lower()
# the block's own element, one feature (an ordinal of no meaning: the trees split on it)
BLOCK_TAGS = ("body", "div", "p", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "dd", "dt",
              "section", "article", "header", "footer", "nav", "aside", "main", "form", "figcaption", "figure")
_BLOCK_TAG_CODE = {tag: index for index, tag in enumerate(BLOCK_TAGS)}

TEXT_FEATURES = ("log_chars", "words", "stopword_share", "punctuation_share", "ends_sentence", "digit_share",
                 "upper_share", "separators", "cjk_share", "mean_word_chars", "tex")
BLOCK_FEATURES = (TEXT_FEATURES + ("link_share", "cells", "position", "char_position", "repeats", "depth", "block_tag")
                  + tuple(f"container{level}_{name}" for level in range(1, CONTAINER_LEVELS + 1)
                          for name in ("log_chars", "link_share", "log_blocks", "block_share"))
                  + tuple(f"in_{tag}" for tag in ENCLOSING_TAGS)
                  + tuple(f"ancestor_class_{group}" for group in _CLASS_GROUPS)
                  + tuple(f"own_class_{group}" for group in _CLASS_GROUPS))
NEIGHBOUR_FEATURES = ("log_chars", "link_share", "stopword_share", "ends_sentence", "depth")
WINDOW_FEATURES = ("log_chars", "link_share", "stopword_share")
WINDOWS = (3, 10)
FEATURES = (BLOCK_FEATURES + tuple(f"previous_{name}" for name in NEIGHBOUR_FEATURES)
            + tuple(f"next_{name}" for name in NEIGHBOUR_FEATURES)
            + tuple(f"window{size}_{name}" for size in WINDOWS for name in WINDOW_FEATURES)
            + ("page_blocks", "page_log_chars", "page_link_share", "page_stopword_share"))
_COLUMN = {name: index for index, name in enumerate(BLOCK_FEATURES)}
_STOPWORD_SHARE, _PAGE_STOPWORD_SHARE = FEATURES.index("stopword_share"), FEATURES.index("page_stopword_share")


class ModelError(ValueError):
    """A missing, altered or unreadable blockml model."""


def _character_counts(line: str) -> tuple[int, int, int]:
    """The characters of a line for which str.isdigit, str.isupper and str.isalpha hold: its ASCII
    ones counted in C, the others one by one."""
    ascii_part = line.encode("ascii", "ignore")
    size = len(ascii_part)
    counts = [size - len(ascii_part.translate(None, chars)) for chars in (_DIGITS, _UPPER, _LETTERS)]
    if size != len(line):
        others = _NON_ASCII.findall(line)
        counts = [count + sum(map(test, others)) for count, test in zip(counts, (str.isdigit, str.isupper, str.isalpha))]
    return counts[0], counts[1], counts[2]


@functools.lru_cache(maxsize=65536)
def class_groups(class_: str | None, id_: str | None, role: str | None) -> int:
    """The CLASS_WORDS groups (bits, in _CLASS_GROUPS' order) that an element's class, id and role name."""
    bits = 0
    for words in (class_, id_, role):
        for match in _CLASS_WORD.finditer(words.lower() if words else ""):
            bits |= 1 << _CLASS_GROUPS.index(match.lastgroup)
    return bits


class Block(NamedTuple):  # a tuple: made for every block of every page
    text: str  # whitespace collapsed; a table row's cells separated by CELL
    link_chars: int  # characters of the text inside links
    enclosing: int  # ENCLOSING_TAGS bits
    ancestor_classes: int  # class_groups bits of the block's element and its ancestors
    own_classes: int  # class_groups bits of the block's element and its inline elements
    depth: int
    tag: str  # the block's element
    containers: tuple[int, ...]  # serial numbers of the block's element and the elements above it, innermost last


def _hidden(attributes: dict) -> bool:
    style = attributes.get("style")
    return ("hidden" in attributes or attributes.get("aria-hidden") == "true"
            or bool(style and _HIDDEN_STYLE.search(style)))


def _collapsed(text: str) -> str:
    """Whitespace collapsed, in each table cell when the text holds cells."""
    if CELL not in text:
        return " ".join(text.split())
    return CELL.join(" ".join(cell.split()) for cell in text.split(CELL)).strip(CELL + " ")


def blocks_of(body) -> list[Block]:
    """The text blocks of a parsed page's body (lexbor's, or None) in document order: the text
    between two block elements' starts or ends (a <br> ends one too), with the context of the
    innermost block element around it. Hidden elements (hidden, aria-hidden, display:none,
    visibility:hidden), SKIPPED ones, comments and processing instructions are left out."""
    if body is None:
        return []
    blocks: list[Block] = []
    pieces: list[str] = []
    link_chars = 0
    # an element's context, a plain tuple (one is made for every element of every page):
    # (enclosing, ancestor_classes, own_classes, depth, in_link, block tag) as in Block
    root = (0, 0, 0, 0, False, "body")
    open_blocks, serials, serial = [root], [0], 0

    def flush(context: tuple) -> None:
        nonlocal link_chars
        text = _collapsed("".join(pieces))
        if text:
            blocks.append(Block(text, link_chars, context[0], context[1], context[2], context[3], context[5],
                                tuple(serials[-1 - CONTAINER_LEVELS:])))
        pieces.clear()
        link_chars = 0

    stack: list = [(body, root)]
    while stack:
        node, context = stack.pop()
        if node is None:  # a block element's end
            if pieces:
                flush(context)
            open_blocks.pop()
            serials.pop()
            continue
        tag = node.tag
        if tag == "-text":
            text = node.text_content
            if text:
                pieces.append(text)
                if context[4]:
                    link_chars += len(text.strip())
            continue
        # None: a node that is neither element, text, comment, document nor doctype: a processing
        # instruction, which selectolax 1.0.2's lexbor makes of "<?php ... ?>" (a bogus comment to
        # other HTML parsers), read as a comment is; an element named "" (no parse makes one) with them
        if tag in SKIPPED or not tag or tag[0] == "-":
            continue
        if tag == "br":
            if pieces:
                flush(open_blocks[-1])
            continue
        if tag in CELLS:
            pieces.append(CELL)
        attributes = node.attributes
        own = 0
        if attributes:
            if ("style" in attributes or "hidden" in attributes or "aria-hidden" in attributes) and _hidden(attributes):
                continue
            own = class_groups(attributes.get("class"), attributes.get("id"), attributes.get("role"))
        bit = _ENCLOSING_BIT.get("heading" if tag in HEADINGS else tag, 0)
        children = list(node.iter(include_text=True))
        if tag in BLOCKS:
            inner = (context[0] | bit, context[1] | own, own, context[3] + 1, context[4], tag)
            if pieces:
                flush(open_blocks[-1])
            open_blocks.append(inner)
            serial += 1
            serials.append(serial)
            stack.append((None, inner))
        else:
            inner = (context[0] | bit, context[1] | own, context[2] | own, context[3] + 1, context[4] or tag == "a",
                     context[5])
        stack.extend(zip(reversed(children), repeat(inner)))
    if pieces:
        flush(open_blocks[-1])
    return blocks


def _compiled():
    """blockml's loops in C (tokenmill/extract/_blockml.pyx, which `make` builds): the walk, the
    text features and the forest, once the module has read this one's constants and agreed with
    blocks_of and _text_rows on a test page; None where it is not built or was built for another
    selectolax: the same blocks, features and log-odds then come from Python and numpy."""
    try:
        from tokenmill.extract import _blockml
        _blockml.configure(sys.modules[__name__])
    except (ImportError, ValueError):  # ValueError: Cython's check of selectolax's node struct's size
        return None
    return _blockml


def row_text(text: str) -> str:
    """A block's text as it is written: a table row's cells as the trafilatura engine writes them ('| a |  | c |')."""
    if CELL not in text:
        return text
    return "| " + " | ".join(cell.strip() for cell in text.split(CELL)) + " |"


def _text_rows(texts: list[str], stopwords: frozenset[str]) -> list[list[float]]:
    """TEXT_FEATURES of each text."""
    rows = []
    for text in texts:
        words = text.lower().split()  # lowering makes no whitespace: the same words as text.split(), once
        chars = len(text)
        digits, upper, letters = _character_counts(text)
        # counts in C (map over a builtin, subn, translate): a generator per character costs more than the walk
        rows.append([
            math.log1p(chars), min(len(words), 200), sum(map(stopwords.__contains__, words)) / len(words),
            _PUNCTUATION.subn("", text)[1] / chars, float(text[-1] in _SENTENCE_END), digits / chars,
            upper / max(1, letters), float(_SEPARATORS.subn("", text)[1]), _CJK.subn("", text)[1] / chars,
            chars / len(words), float("$" in text and bool(_TEX.search(text)))])
    return rows


def _text_columns(texts: list[str], stopwords: frozenset[str]) -> np.ndarray:
    """_text_rows as an array: the same doubles, in C where the module is built."""
    if COMPILED is None:
        return np.array(_text_rows(texts, stopwords), dtype=np.float64)
    return np.frombuffer(COMPILED.text_rows(texts, stopwords), dtype=np.float64).reshape(-1, len(TEXT_FEATURES))


def _bits(values: list[int], count: int) -> np.ndarray:
    return (np.array(values, dtype=np.int64)[:, None] >> np.arange(count)) & 1


def _container_columns(blocks: list[Block], chars: np.ndarray, link_chars: np.ndarray) -> np.ndarray:
    """For each block and each of its CONTAINER_LEVELS elements above its own: the log of the
    characters of the blocks that element holds (within CONTAINER_LEVELS levels), their link
    share, the log of their number and the block's share of their characters; -1 above the body."""
    width = CONTAINER_LEVELS + 1
    serials = np.array([(-1,) * (width - len(block.containers)) + block.containers for block in blocks],
                       dtype=np.int64).reshape(len(blocks), width)
    held = serials >= 0
    flat = serials[held]
    size = int(serials.max()) + 1 if len(blocks) else 1
    repeat = held.sum(axis=1)
    total = np.bincount(flat, weights=np.repeat(chars, repeat), minlength=size)
    links = np.bincount(flat, weights=np.repeat(link_chars, repeat), minlength=size)
    count = np.bincount(flat, minlength=size)
    columns = []
    for level in range(1, CONTAINER_LEVELS + 1):
        serial = serials[:, -1 - level]
        present = serial >= 0
        at = np.where(present, serial, 0)
        level_total = total[at]
        values = np.stack([libm(math.log1p, level_total), np.minimum(1.0, links[at] / np.maximum(1.0, level_total)),
                           libm(math.log1p, count[at]), chars / np.maximum(1.0, level_total)], axis=1)
        columns.append(np.where(present[:, None], values, -1.0))
    return np.hstack(columns)


def _sliding_mean(columns: np.ndarray, size: int) -> np.ndarray:
    """Each row's mean of `columns` over the rows within `size` of it (fewer at the page's ends)."""
    n = len(columns)
    padded = np.vstack([np.zeros((size, columns.shape[1])), columns, np.zeros((size, columns.shape[1]))])
    sums = np.cumsum(np.vstack([np.zeros((1, columns.shape[1])), padded]), axis=0)
    counts = np.minimum(np.arange(n) + size, n - 1) - np.maximum(np.arange(n) - size, 0) + 1
    return (sums[2 * size + 1:2 * size + 1 + n] - sums[:n]) / np.maximum(counts, 1)[:, None]


def page_matrix(blocks: list[Block], stopwords: frozenset[str]) -> tuple[list[str], np.ndarray]:
    """Each block's text as written (row_text) and its FEATURES: its own, its containers', its
    neighbours', its windows' and its page's."""
    texts = [row_text(block.text) for block in blocks]
    if not texts:
        return texts, np.zeros((0, len(FEATURES)))
    text_columns = _text_columns(texts, stopwords)
    if COMPILED is not None:
        matrix = np.empty((len(texts), len(FEATURES)))
        COMPILED.page_rows(blocks, texts, text_columns, matrix)
    else:
        matrix = _python_page_matrix(blocks, texts, text_columns)
    matrix[:, _PAGE_STOPWORD_SHARE] = np.ascontiguousarray(matrix[:, _STOPWORD_SHARE]).mean()
    return texts, matrix


def _python_page_matrix(blocks: list[Block], texts: list[str], text_columns: np.ndarray) -> np.ndarray:
    """page_matrix's FEATURES, but the page's mean stop-word share (left at 0)."""
    n = len(texts)
    chars = np.array([len(text) for text in texts], dtype=np.float64)
    link_chars = np.array([block.link_chars for block in blocks], dtype=np.float64)
    counts: dict[str, int] = {}
    for text in texts:
        counts[text] = counts.get(text, 0) + 1
    base = np.hstack([
        text_columns,
        np.stack([np.minimum(1.0, link_chars / chars), [block.text.count(CELL) for block in blocks],
                  np.arange(n) / n, (np.cumsum(chars) - chars) / max(1.0, chars.sum()),
                  [counts[text] - 1 for text in texts], [block.depth for block in blocks],
                  [_BLOCK_TAG_CODE.get(block.tag, -1) for block in blocks]], axis=1),
        _container_columns(blocks, chars, link_chars),
        _bits([block.enclosing for block in blocks], len(ENCLOSING_TAGS)),
        _bits([block.ancestor_classes for block in blocks], len(_CLASS_GROUPS)),
        _bits([block.own_classes for block in blocks], len(_CLASS_GROUPS))])
    neighbours = base[:, [_COLUMN[name] for name in NEIGHBOUR_FEATURES]]
    missing = np.full((1, len(NEIGHBOUR_FEATURES)), -1.0)
    window_columns = base[:, [_COLUMN[name] for name in WINDOW_FEATURES]]
    page = np.tile([math.log1p(n), math.log1p(chars.sum()), float(link_chars.sum() / max(1.0, chars.sum())), 0.0],
                   (n, 1))
    return np.hstack([base, np.vstack([missing, neighbours[:-1]]), np.vstack([neighbours[1:], missing])]
                     + [_sliding_mean(window_columns, size) for size in WINDOWS] + [page])


@dataclass(frozen=True)
class Model:
    forest: Forest
    # a block is kept when its probability is at least this share of the page's most likely block's:
    # every page keeps its best block, so a page whose main content the model doubts is not emptied
    relative_threshold: float
    stopwords: frozenset[str]
    sha256: str


def resolve_model_path(path: str | None) -> Path:
    """The configured model, or the bundled one (tokenmill.io.repository_file)."""
    return repository_file(path, BUNDLED_MODEL)


@functools.lru_cache(maxsize=4)
def load_model(path: str | None, expected_sha256: str | None) -> Model:
    """The model at `path` (`extract.blockml.model`), its sha256 checked against the pin
    (`extract.blockml.sha256`); a missing, altered or malformed file is a ModelError naming the key."""
    resolved = resolve_model_path(path)
    actual = pinned_sha256(resolved, expected_sha256, "extract.blockml",
                           "train one with `python -m tokenmill train-extractor`", ModelError)
    try:
        data = json.loads(resolved.read_text(encoding="utf-8"))
        if data.get("format") != MODEL_FORMAT or tuple(data["features"]) != FEATURES:
            raise ModelError(f"config key extract.blockml.model: {resolved} is not a blockml model of format "
                             f"{MODEL_FORMAT} with this version's features")
        return Model(Forest.from_json(data["forest"]), float(data["relative_threshold"]),
                     frozenset(data["stopwords"]), actual)
    except (ValueError, KeyError, TypeError) as error:
        if isinstance(error, ModelError):
            raise
        raise ModelError(f"config key extract.blockml.model: {resolved} does not read as a blockml model: "
                         f"{error}") from error


def configured_model(section: dict) -> Model:
    """The model an `extract.blockml` section (its model path and sha256 pin) names."""
    return load_model(section["model"], section["sha256"])


@dataclass(frozen=True)
class PageBlocks:
    texts: list[str]  # each block's text as written, in order
    matrix: np.ndarray  # FEATURES of each of `texts`
    formulas: int


def page_blocks(html: str, stopwords: frozenset[str], utf8: bytes | None = None) -> PageBlocks:
    """The page with its formulas as TeX, read into blocks with their features. lexbor finds
    whether a page has formula markup (the same query as tokenmill.extract.math's, a tenth of the
    cost of searching the page's text); only a page that has is written again with TeX and reparsed.
    `utf8`: html.encode() where the caller has it (the page's bytes), which lexbor parses as they are."""
    body = LexborHTMLParser(html if utf8 is None else utf8).body
    formulas = 0
    if body is not None and body.css_first(FORMULAS) is not None:
        html, formulas = recover_math(html)
        body = LexborHTMLParser(html).body
    texts, matrix = page_matrix(walk(body), stopwords)
    return PageBlocks(texts, matrix, formulas)


def log_odds(forest: Forest, matrix: np.ndarray) -> np.ndarray:
    """forest.log_odds(matrix): the same doubles, in C where the module is built."""
    if COMPILED is None or not len(matrix):
        return forest.log_odds(matrix)
    out = np.empty(len(matrix))
    COMPILED.forest_log_odds(np.ascontiguousarray(matrix, dtype=np.float64), forest.features, forest.thresholds,
                             forest.leaves, forest.base, out)
    return out


def block_probabilities(model: Model, matrix: np.ndarray) -> np.ndarray:
    """The model's probability that each block (a row of FEATURES) is main text."""
    return 1.0 / (1.0 + libm(math.exp, -log_odds(model.forest, matrix)))


def extract_blockml(html: str, model: Model, utf8: bytes | None = None) -> tuple[str, int]:
    """(main text: the kept blocks, a line each; formulas written as TeX) of a page (and its UTF-8
    bytes, page_blocks)."""
    page = page_blocks(html, model.stopwords, utf8)
    if not page.texts:
        return "", page.formulas
    probability = block_probabilities(model, page.matrix)
    kept = probability >= model.relative_threshold * probability.max()
    # a display formula reads unlike prose to the model (no stop words, no sentence); beside the
    # article's text it is the article's
    beside_kept = np.zeros_like(kept)
    beside_kept[1:] |= kept[:-1]
    beside_kept[:-1] |= kept[1:]
    for index in np.flatnonzero(beside_kept & ~kept).tolist():
        kept[index] = DISPLAY_FORMULA.match(page.texts[index]) is not None
    return "\n".join(text for text, chosen in zip(page.texts, kept.tolist()) if chosen), page.formulas


COMPILED = _compiled()
walk = COMPILED.blocks_of if COMPILED is not None else blocks_of  # the page's blocks, as blocks_of reads them
