"""Normalization and 64-bit hashing shared by exact, line-level and near-duplicate detection."""

from __future__ import annotations

import re
import unicodedata

import numpy as np

from tokenmill.hashing import hash64

_SPACE_RUN = re.compile(r"\s+")
_HAS_WORD_CHAR = re.compile(r"\w")
# Han, kana and Hangul are written without spaces: each character is its own token, so
# that word n-grams become character n-grams there instead of one "word" per sentence.
_TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]|\w+")


def normalize_line(line: str) -> str:
    """NFKC, lower case, whitespace collapsed; '' for a line without any word character."""
    line = _SPACE_RUN.sub(" ", unicodedata.normalize("NFKC", line).lower()).strip()
    return line if _HAS_WORD_CHAR.search(line) else ""


def normalized_lines(text: str) -> list[str]:
    """normalize_line of each line of `text` (split on '\\n'), blank ones included. The text is
    normalized and lower-cased in one call each: a line end is a boundary that both leave alone (no
    character's NFKC form or lower case holds one, none composes with one, and a final sigma's
    context ends at one), so each line comes out as normalize_line makes it; then each line's
    whitespace is collapsed (str.split splits on what `\\s` matches), where it has any but single
    spaces between words (a printable line's only whitespace character is the space)."""
    lines = (line if line.isprintable() and "  " not in line and line[:1] != " " and line[-1:] != " "
             else " ".join(line.split()) for line in unicodedata.normalize("NFKC", text).lower().split("\n"))
    return [line if _HAS_WORD_CHAR.search(line) else "" for line in lines]


def normalize_for_dedup(text: str, lines: list[str] | None = None) -> str:
    """The document as exact and near-duplicate detection see it: normalized lines,
    blank and punctuation-only lines dropped (`lines`: its normalized_lines, where the caller has them)."""
    return "\n".join(line for line in (normalized_lines(text) if lines is None else lines) if line)


def content_hash(text: str) -> int:
    return hash64(normalize_for_dedup(text))


def line_hashes(text: str, lines: list[str] | None = None) -> np.ndarray:
    """One hash per line of `text` (split on '\\n'); 0 for blank or punctuation-only lines (`lines`: its
    normalized_lines, where the caller has them)."""
    return np.array([hash64(line) if line else 0 for line in (normalized_lines(text) if lines is None else lines)],
                    dtype=np.uint64)


def tokens(normalized: str) -> list[str]:
    return _TOKEN.findall(normalized)
