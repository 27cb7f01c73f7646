"""blockml: resiliparse's main-content text, each of its lines kept or dropped by a small learned
model (gradient-boosted trees, tokenmill.extract.gbdt) trained in this repository
(`python -m tokenmill train-extractor`, tokenmill.extract.blockml_train).

Resiliparse's loss against trafilatura is precision: link lists, teasers, captions and comment
prompts stay in its text. One parse, one serialisation by resiliparse (paragraphs, lists, tables,
formulas as TeX) with each link's target written after it, so that a line's links are counted
from its text and then taken out; every feature comes from the text (lengths, links, stop words,
punctuation, list bullets, table cells, paragraph breaks) of the line, its neighbours and its page.
Reading the DOM from Python instead costs more than trafilatura (about 1 ms per link's href read
through resiliparse's node objects), and marking the page's HTML with regular expressions ~1 ms
per pass over an average page: the whole budget.
"""

from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from tokenmill.extract.gbdt import Forest
from tokenmill.extract.math import recover_math_in_tree
from tokenmill.hashing import sha256_file

REPOSITORY = Path(__file__).resolve().parent.parent.parent
BUNDLED_MODEL = "data/models/blockml/model.json"
MODEL_FORMAT = 1

# the resiliparse engine's options (tokenmill.extract.html.RESILIPARSE_OPTIONS), links written as " (href)"
OPTIONS = {"preserve_formatting": True, "main_content": True, "list_bullets": True, "alt_texts": False,
           "comments": False, "post_meta": False, "noscript": False, "form_fields": False, "links": True}
# a link's target as resiliparse writes it after the link's text: empty, or shaped like a URL (root- or
# fragment-relative, ./ or ../, a scheme, www., or a file name of the web's extensions)
LINK_TARGET = re.compile(r" +\((?:|[/#?](?:[^()\s]|\([^()\s]*\))*|\.\.?/[^()\s]*|[a-zA-Z][a-zA-Z0-9+.-]*:"
                         r"(?:[^()\s]|\([^()\s]*\))*|www\.[^()\s]*|[^()\s]+\.(?:s?html?|php\d?|aspx?|jsp|cgi)"
                         r"(?:[?#][^()\s]*)?)\)")
# resiliparse pads a link's text inside a list item with the item's indentation when it writes links
_SPACES = re.compile(" {2,}")
_SENTENCE_END = frozenset(".!?。！？:;\"”’)")
_PUNCTUATION = re.compile("[.,;:!?。，、！？]")
_SEPARATORS = re.compile("[|·»›/•–—]")
_CJK = re.compile("[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_TEX = re.compile(r"\$[^$]+\$")
_NON_ASCII = re.compile("[^\x00-\x7f]")
_DIGITS = b"0123456789"
_UPPER = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_LETTERS = _UPPER + _UPPER.lower()
BULLET = "•"
CELL = "\t\t"  # resiliparse's separator of table cells (a <pre>'s tabs come one at a time)

LINE_FEATURES = ("log_chars", "words", "links", "links_per_word", "link_target_share", "stopword_share",
                 "punctuation_share", "ends_sentence", "digit_share", "upper_share", "bullet", "cells",
                 "blank_before", "blank_after", "position", "char_position", "separators", "cjk_share", "tex",
                 "repeats", "mean_word_chars")
NEIGHBOUR_FEATURES = ("log_chars", "links_per_word", "stopword_share", "ends_sentence", "bullet")
WINDOW_FEATURES = ("log_chars", "links_per_word", "stopword_share")
WINDOW = 3
FEATURES = (LINE_FEATURES + tuple(f"previous_{name}" for name in NEIGHBOUR_FEATURES)
            + tuple(f"next_{name}" for name in NEIGHBOUR_FEATURES)
            + tuple(f"window_{name}" for name in WINDOW_FEATURES)
            + ("page_lines", "page_log_chars", "page_links_per_word", "page_stopword_share"))


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


def lines_of(text: str, stopwords: frozenset[str]) -> tuple[list[str], list[str], list[list[float]]]:
    """Resiliparse's text (links written) as lines without their link targets ('' for a blank
    line), the lines that carry text, and LINE_FEATURES of each of those (page-relative ones 0)."""
    all_lines, texts, rows = [], [], []
    raw_lines = text.split("\n")
    for index, raw in enumerate(raw_lines):
        links = raw.count(" (") and len(LINK_TARGET.findall(raw))
        line = _SPACES.sub(" ", LINK_TARGET.sub("", raw)).strip() if links else raw.strip()
        bare = line.removeprefix(BULLET).strip()
        if not bare:
            all_lines.append("")
            continue
        words = bare.lower().split()  # lowering makes no whitespace: the same words as bare.split(), once
        chars = len(bare)
        digits, upper, letters = _character_counts(bare)
        # counts in C (map over a builtin, subn, translate): a generator per character costs more than the parse
        rows.append([
            math.log1p(chars), min(len(words), 200), links, links / len(words), 1 - len(line) / max(1, len(raw)),
            sum(map(stopwords.__contains__, words)) / len(words),
            _PUNCTUATION.subn("", bare)[1] / chars, float(bare[-1] in _SENTENCE_END),
            digits / chars, upper / max(1, letters),
            float(line.startswith(BULLET)), float(bare.count("\t")),
            float(index > 0 and not raw_lines[index - 1].strip()),
            float(index + 1 < len(raw_lines) and not raw_lines[index + 1].strip()), 0.0, 0.0,
            float(_SEPARATORS.subn("", bare)[1]), _CJK.subn("", bare)[1] / chars,
            float("$" in bare and bool(_TEX.search(bare))), 0.0, chars / len(words)])
        if CELL in line:
            line = table_row(line)
        all_lines.append(line)
        texts.append(line)
    return all_lines, texts, rows


def table_row(line: str) -> str:
    """resiliparse's row of table cells as the trafilatura engine writes it: '| a |  | c |'."""
    return "| " + " | ".join(cell.strip() for cell in line.split(CELL)) + " |"


_COLUMN = {name: index for index, name in enumerate(LINE_FEATURES)}


def page_matrix(texts: list[str], rows: list[list[float]]) -> np.ndarray:
    """FEATURES of every line of one page: its own, its neighbours', its window's and its page's."""
    base = np.array(rows, dtype=np.float64).reshape(len(rows), len(LINE_FEATURES))
    n = len(rows)
    if n:
        chars = np.exp(base[:, _COLUMN["log_chars"]]) - 1
        base[:, _COLUMN["position"]] = np.arange(n) / n
        base[:, _COLUMN["char_position"]] = (np.cumsum(chars) - chars) / max(1.0, chars.sum())
        counts: dict[str, int] = {}
        for text in texts:
            counts[text] = counts.get(text, 0) + 1
        base[:, _COLUMN["repeats"]] = [counts[text] - 1 for text in texts]
    neighbours = base[:, [_COLUMN[name] for name in NEIGHBOUR_FEATURES]]
    missing = np.full((1, len(NEIGHBOUR_FEATURES)), -1.0)
    previous = np.vstack([missing, neighbours[:-1]]) if n else neighbours
    following = np.vstack([neighbours[1:], missing]) if n else neighbours
    window_columns = base[:, [_COLUMN[name] for name in WINDOW_FEATURES]]
    padded = np.vstack([np.zeros((WINDOW, window_columns.shape[1])), window_columns,
                        np.zeros((WINDOW, window_columns.shape[1]))])
    sums = np.cumsum(np.vstack([np.zeros((1, window_columns.shape[1])), padded]), axis=0)
    counts_in_window = np.minimum(np.arange(n) + WINDOW, n - 1) - np.maximum(np.arange(n) - WINDOW, 0) + 1
    window = (sums[2 * WINDOW + 1:2 * WINDOW + 1 + n] - sums[:n]) / np.maximum(counts_in_window, 1)[:, None]
    page = np.empty((n, 4))
    if n:
        page[:] = [math.log1p(n), math.log1p(chars.sum()),
                   float(base[:, _COLUMN["links"]].sum() / max(1.0, base[:, _COLUMN["words"]].sum())),
                   float(base[:, _COLUMN["stopword_share"]].mean())]
    return np.hstack([base, previous, following, window, page])


@dataclass(frozen=True)
class Model:
    forest: Forest
    threshold: float
    stopwords: frozenset[str]
    sha256: str


def resolve_model_path(path: str | None) -> Path:
    """A relative path that does not exist here is the repository's file (the bundled model)."""
    candidate = Path(path or BUNDLED_MODEL)
    return candidate if candidate.is_absolute() or candidate.exists() else REPOSITORY / candidate


@functools.lru_cache(maxsize=4)
def load_model(path: str | None, expected_sha256: str | None) -> Model:
    """The model at `path` (`extract.blockml.model`), its sha256 checked against the pin
    (`extract.blockml.sha256`); a missing, altered or malformed file is a ModelError naming the key."""
    resolved = resolve_model_path(path)
    if not resolved.is_file():
        raise ModelError(f"config key extract.blockml.model: no model at {resolved} "
                         "(train one with `python -m tokenmill train-extractor`)")
    actual = sha256_file(resolved)
    if expected_sha256 and actual != expected_sha256:
        raise ModelError(f"config key extract.blockml.sha256 pins {expected_sha256}, but {resolved} has sha256 "
                         f"{actual}")
    try:
        data = json.loads(resolved.read_text(encoding="utf-8"))
        if data.get("format") != MODEL_FORMAT or tuple(data["features"]) != FEATURES:
            raise ModelError(f"config key extract.blockml.model: {resolved} is not a blockml model of format "
                             f"{MODEL_FORMAT} with this version's features")
        return Model(Forest.from_json(data["forest"]), float(data["threshold"]), frozenset(data["stopwords"]),
                     actual)
    except (ValueError, KeyError, TypeError) as error:
        if isinstance(error, ModelError):
            raise
        raise ModelError(f"config key extract.blockml.model: {resolved} does not read as a blockml model: "
                         f"{error}") from error


@dataclass(frozen=True)
class PageLines:
    all_lines: list[str]  # every line of resiliparse's text, '' for blank ones
    texts: list[str]  # the lines that carry text, in order
    matrix: np.ndarray  # FEATURES of each of `texts`
    formulas: int


def page_lines(html: str, stopwords: frozenset[str]) -> PageLines:
    """One parse of the page, its formulas as TeX, resiliparse's text split into lines with
    their features."""
    tree = HTMLTree.parse(html)
    formulas, _ = recover_math_in_tree(tree)
    all_lines, texts, rows = lines_of(extract_plain_text(tree, **OPTIONS), stopwords)
    return PageLines(all_lines, texts, page_matrix(texts, rows), formulas)


def kept_text(lines: PageLines, keep: np.ndarray) -> str:
    """The kept lines in their order, paragraphs (blank lines) between them as resiliparse wrote them."""
    out, index, blank = [], 0, False
    for line in lines.all_lines:
        if not line:
            blank = bool(out)
            continue
        if keep[index]:
            if blank:
                out.append("")
            out.append(line)
            blank = False
        index += 1
    return "\n".join(out)


def extract_blockml(html: str, model: Model) -> tuple[str, int]:
    """(main text, formulas written as TeX) of a page."""
    lines = page_lines(html, model.stopwords)
    if not lines.texts:
        return "", lines.formulas
    keep = model.forest.log_odds(lines.matrix) > math.log(model.threshold / (1 - model.threshold))
    return kept_text(lines, keep), lines.formulas
