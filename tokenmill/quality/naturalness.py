"""Naturalness: how much of a document reads as running text in its language, in every language.

Web spam and boilerplate (SEO word lists, keyword stuffing, menus, link lists, product tables) are
"unnatural" to a native reader whatever the language. This score asks no language model: it reads a
document's words (tokenmill.words, the language's own segmenter) for a few properties that running
text has in every language, each measured against the same property of reference text of the
language (data/languages/languages.json, from real sentences in 75 languages):

| feature | running text | spam and boilerplate |
|---|---|---|
| stop_share | the language's function words, as often as in its reference text | few: names, product words, numbers |
| title_share | capitalised words as often as in the reference (cased scripts only) | Title Case lists and headings |
| ttr | varied vocabulary within 50-word windows | the same keywords again and again |
| separators | few menu separators (`|`, `»`, `•`, ` - `, `>` standing alone) | breadcrumbs, menus, tag lists |
| short_segments | long runs of words between separators and line ends | items of one to three words |
| duplication | few repeated 5-word phrases | the same phrase over and over |
| symbols | few symbol characters (Unicode category S) | arrows, stars, currency, emoji |
| mixed_tokens | few tokens mixing letters and digits, few domain names | SKUs, QQ numbers, sites to visit |

A logistic model of these features (`Model`, data/models/naturalness/model.json) gives the
probability that a piece of text reads as natural; its coefficients are fitted on native speakers'
labels (data/train/naturalness, HPLT v2 excerpts in Russian, Persian, Asturian and English), each
constrained to the sign the table gives, so that no feature can learn to reward spam. Its labels
cover four languages; its features are measured against each language's own reference, and its
transfer to languages it was not fitted on is measured leave-one-language-out (bench_languages.py).

A document is scored in chunks of at least CHUNK_CHARS characters cut at line ends (the length of the
labelled excerpts): its naturalness is the chunks' probabilities averaged by their length (the share of
its text that reads as natural), or its first chunk's where that is higher: an article opens with its
content, and the list of awards, references or comments that follows it is the heuristics' to judge
(on the repository's 271 real article pages in 17 languages, bench_languages.py, 3 score under 0.6
this way, 11 by the average alone; a labelled excerpt is one chunk). Table rows as the extractors write
them (`| a | b |`) are left out: a table is not prose, and the heuristics judge it.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa

from tokenmill.hashing import pinned_sha256
from tokenmill.io import repository_file
from tokenmill.quality.heuristics import Vocabulary, documents_read, duplicated_chars, ranked, repeated_keys
from tokenmill.words import code_points, space_table, words

SCHEMA = pa.schema([("doc_id", pa.string()), ("quality_naturalness", pa.float32()), ("chunks", pa.int32())])
CHUNK_CHARS = 1000
WINDOW_WORDS = 50
SHORT_SEGMENT_WORDS = 3
DUPLICATE_NGRAM = 5
FEATURES = ("stop_share", "title_share", "ttr", "separators", "short_segments", "duplication", "symbols",
            "mixed_tokens")
# the features compared with the language's reference text (data/languages/languages.json: `reference`)
REFERENCED = ("stop_share", "title_share", "ttr")
# +1: more is more natural, -1: more is less natural (the fitted coefficients keep these signs)
SIGNS = {"stop_share": 1, "title_share": -1, "ttr": 1, "separators": -1, "short_segments": -1, "duplication": -1,
         "symbols": -1, "mixed_tokens": -1}
_STOP_SMOOTHING = 0.02

_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
# a separator standing alone between spaces (or at a line's start or end): menus, breadcrumbs, tag lists
# (the run's first character comes first in the pattern, and its place is checked after it, so that
# the search skips from one candidate character to the next)
_SEPARATOR_CHARS = r"-–—|/\\»«›‹•·●○■□▪►▶◄→←>~*"
_SEPARATOR = re.compile(rf"[{_SEPARATOR_CHARS}](?<!\S.)[{_SEPARATOR_CHARS}]*(?=\s|$)", re.M)
_LINE_END = re.compile("\n")
_DOMAIN = re.compile(r"[A-Za-z0-9]\.(?:com|net|org|cn|ru|de|info|biz|top|xyz|html?|php|aspx?)\b", re.I)


# what a token is, by bit: a word (has a letter), counted (a word or has a digit), a symbol (every
# character of Unicode category S), mixed (letters and digits, a URL, an address or a domain name),
# cased (its first character has case), upper (its first character is upper case)
_WORD_BIT, _COUNTED_BIT, _SYMBOL_BIT, _MIXED_BIT, _CASED_BIT, _UPPER_BIT = (1 << bit for bit in range(6))


def _token_kind(token: str) -> int:
    """The bits above of one token."""
    if token.isalpha():  # most tokens: a word of letters only, never mixed, never a symbol
        first = token[0]
        if first.isupper():
            return _WORD_BIT | _COUNTED_BIT | _CASED_BIT | _UPPER_BIT
        return _WORD_BIT | _COUNTED_BIT | (_CASED_BIT if first.islower() else 0)
    alpha = any(char.isalpha() for char in token)
    digit = any(char.isdigit() for char in token)
    kind = 0
    if alpha:
        kind |= _WORD_BIT | _COUNTED_BIT
        first = token[0]
        if first.isupper() or first.islower():
            kind |= _CASED_BIT | (_UPPER_BIT if first.isupper() else 0)
    elif digit:
        kind |= _COUNTED_BIT
    if all(unicodedata.category(char)[0] == "S" for char in token):
        kind |= _SYMBOL_BIT
    if (alpha and digit) or "://" in token or "@" in token or _DOMAIN.search(token):
        kind |= _MIXED_BIT
    return kind


Spans = list[tuple[int, int]]  # (start, end) ranges of a text, read as joined by line ends


# token -> _token_kind, emptied when full: a language's common words make most of a text
_KINDS: dict[str, int] = {}
_KINDS_HELD = 1 << 18


def _kind(token: str) -> int:
    kind = _KINDS.get(token)
    if kind is None:
        if len(_KINDS) >= _KINDS_HELD:
            _KINDS.clear()
        kind = _KINDS[token] = _token_kind(token)
    return kind


def _joined_length(spans: Spans) -> int:
    return sum(end - start for start, end in spans) + max(0, len(spans) - 1)


def _split_spans(spans: Spans, offset: int) -> tuple[Spans, Spans]:
    """`spans` cut at `offset` of their joined text: (its first `offset` characters, the rest)."""
    position = 0
    for index, (start, end) in enumerate(spans):
        if offset <= position + end - start:
            cut = start + offset - position
            return spans[:index] + [(start, cut)], [(cut, end)] + spans[index + 1:]
        position += end - start + 1
    return spans, []


def chunk_spans(text: str, size: int = CHUNK_CHARS) -> list[Spans]:
    """The text without table rows, in pieces of at least `size` characters cut at line ends (a line
    longer than twice that is cut inside); a last piece under half of `size` joins the one before.
    Each piece is the lines of the text it holds (chunks() joins them)."""
    pieces: list[Spans] = []
    current: Spans = []
    length = line_start = 0  # length: of the current piece's joined text
    has_tables = "|" in text
    for line in text.split("\n"):
        span = (line_start, line_start + len(line))
        line_start = span[1] + 1
        if has_tables and _TABLE_ROW.match(line):
            continue
        if length >= size:
            pieces.append(current)
            current, length = [], 0
        if length:
            current.append(span)
            length += 1 + len(line)
        else:
            current, length = [span], len(line)
        while length > 2 * size:
            head, current = _split_spans(current, size)
            pieces.append(head)
            length -= size
    if any(not text[start:end].isspace() and end > start for start, end in current):
        pieces.append(current)
    if len(pieces) > 1 and _joined_length(pieces[-1]) < size / 2:
        tail = pieces.pop()
        pieces[-1] = pieces[-1] + tail
    return pieces


def _joined(text: str, spans: Spans) -> str:
    return "\n".join(text[start:end] for start, end in spans)


def chunks(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """The pieces of chunk_spans, as text."""
    return [_joined(text, spans) for spans in chunk_spans(text, size)]


def _token_starts(text: str, tokens: list[str], lengths: np.ndarray) -> np.ndarray | None:
    """Where each token (of `lengths`) starts in `text`, in order; None where one is not found there (a
    segmenter that rewrote its input)."""
    codes = code_points(text)
    solid = np.flatnonzero(~space_table()[codes])  # the places of the non-space characters
    joined = "".join(tokens)
    if len(joined) == len(solid) and "" not in tokens and np.array_equal(codes[solid], code_points(joined)):
        # the tokens are the text's non-space characters in order (every segmenter's but one that rewrites
        # its input): each starts at the non-space character that follows its predecessors', which is
        # where a search from the end of its predecessor finds it (only spaces lie between them)
        return solid[np.cumsum(lengths) - lengths]
    starts, position = [], 0
    for token in tokens:
        position = text.find(token, position)
        if position < 0:
            return None
        starts.append(position)
        position += len(token)
    return np.array(starts, dtype=np.int64)


def _vocabulary_measures(words: np.ndarray, lengths: np.ndarray, ends: np.ndarray
                         ) -> tuple[list[float], list[float]]:
    """(ttr, duplication) of each piece: `words`, the pieces' words one after another as numbers (the
    same for the same word), `lengths` their lengths, `ends` where each piece's words end. Both read
    the words of a piece sorted by (word, place), in one sort of the batch.

    ttr: distinct words per word in windows of WINDOW_WORDS words (half-overlapping), averaged: a
    type-token ratio that does not fall with the text's length (a piece of fewer words: its distinct
    words per word). A word counts in a window where it is the first of its kind there: where the
    same word before it in the piece lies before the window's start.

    duplication: characters in repeated word 5-grams, of all word characters (Gopher's duplicated
    n-gram fraction: a repeat is counted once and the scan jumps past it). A 5-gram is numbered level
    by level, as the heuristics' n-grams (heuristics._ngram_metrics): the number of the n-gram at a
    place is the rank of the pair (the (n-1)-gram's number there, the n-th word), the first word's
    with its piece, so that no two pieces share one; only the places whose (n-1)-gram occurs twice
    can start a repeated n-gram, and the scan visits the repeated 5-grams alone (a 5-gram that
    occurs once is never seen again)."""
    count, total = len(ends), len(words)
    sizes = np.diff(ends, prepend=0)
    piece = np.repeat(np.arange(count), sizes)
    place = np.arange(total) - np.repeat(ends - sizes, sizes)  # in its piece
    word_numbers = int(words.max(initial=0)) + 1
    group, order, new = ranked(piece * word_numbers + words, stable=True)  # stable: `before` reads the order

    # ttr: the place of the same word before each in its piece (-1: none)
    again = np.flatnonzero(~new)
    before = np.full(total, -1, dtype=np.int64)
    before[order[again]] = place[order[again - 1]]
    stride = WINDOW_WORDS // 2
    windows = np.where(sizes >= WINDOW_WORDS, (sizes - WINDOW_WORDS) // stride + 1, 0)  # per piece, none if shorter
    firsts = np.bincount(piece, before < 0, minlength=count)  # distinct words, for a piece of fewer words
    in_windows = np.zeros(count, dtype=np.int64)
    for window in (place // stride, place // stride - 1):  # the windows a word is in start at these strides
        counts = (window >= 0) & (window < windows[piece]) & (before < window * stride)
        in_windows += np.bincount(piece, counts, minlength=count).astype(np.int64)
    ttr = [0.0 if not size else distinct / size if size < WINDOW_WORDS else found / (WINDOW_WORDS * window_count)
           for size, distinct, found, window_count in zip(sizes.tolist(), firsts.astype(np.int64).tolist(),
                                                          in_windows.tolist(), windows.tolist())]

    # duplication
    cum = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(lengths, out=cum[1:])
    repeated = repeated_keys(order, new)
    positions = np.flatnonzero(repeated & (place <= np.repeat(sizes, sizes) - DUPLICATE_NGRAM))
    group = group[positions]
    for offset in range(1, DUPLICATE_NGRAM):
        if not positions.size:
            break
        group, order, new = ranked(group * word_numbers + words[positions + offset])
        repeated = repeated_keys(order, new)
        positions, group = positions[repeated], group[repeated]
    repeated_chars = duplicated_chars(positions, group, DUPLICATE_NGRAM, cum, piece, count)
    chars = np.diff(cum[np.r_[0, ends]])
    duplication = [repeated / all_chars if all_chars else 0.0
                   for repeated, all_chars in zip(repeated_chars.tolist(), chars.tolist())]
    return ttr, duplication


@dataclass(frozen=True)
class _Words:
    """The words of some documents of a batch, one after another, as _feature_sets counts them."""
    counts: list[int]            # each document's words
    kinds: np.ndarray            # uint8, each word's bits (_token_kind)
    lowered: np.ndarray          # int64, each word's lower case as a number (the same for the same lower case)
    stops: np.ndarray            # bool, each word: whether its lower case is one of its document's stop words
    lowered_lengths: np.ndarray  # int64, each lower case's length, by its number


def _words(vocabulary: Vocabulary, documents: list[int], stop_word_sets: list[frozenset[str]]) -> _Words:
    """_Words of `documents` (numbers of the documents that `vocabulary` and `stop_word_sets` are of):
    the kind, lower case and stop words of each entry of a document's vocabulary, not of each word."""
    entries = vocabulary.words
    known = list(map(_KINDS.get, entries))
    kinds = np.array([_kind(entry) if kind is None else kind for entry, kind in zip(entries, known)]
                     if None in known else known, dtype=np.uint8)
    lowered = list(map(str.lower, entries))
    numbers = dict(zip(dict.fromkeys(lowered), itertools.count()))
    lowered_numbers = np.fromiter(map(numbers.__getitem__, lowered), dtype=np.int64, count=len(lowered))
    firsts = vocabulary.entry_firsts
    stops = np.fromiter(itertools.chain.from_iterable(
        map(stop_words.__contains__, lowered[first:last])
        for stop_words, first, last in zip(stop_word_sets, firsts, firsts[1:])), dtype=bool, count=len(lowered))
    id_lists = [vocabulary.document_ids(number) for number in documents]
    ids = np.concatenate(id_lists) if id_lists else np.zeros(0, dtype=np.int64)
    return _Words(list(map(len, id_lists)), kinds[ids], lowered_numbers[ids], stops[ids],
                  np.fromiter(map(len, numbers), dtype=np.int64, count=len(numbers)))


def _feature_sets(texts: list[str], text_words: _Words, start_lists: list[np.ndarray],
                  stop_word_sets: list[frozenset[str]], piece_lists: list[list[Spans]]) -> list[list[dict[str, float]]]:
    """FEATURES of each piece (its spans of its text) of each text of a batch, from the words of all of
    the text (`text_words`) and where they start: a word belongs to the piece its first character is
    in, and to the segment (the run of text between separators and line ends) it starts in; no word
    spans a separator (one stands between spaces) or a line end. The batch's texts are read as one, each after a line
    end that follows the one before (numpy's cost per call is paid once a batch, not once a text),
    and its pieces are numbered one after another."""
    text_starts = np.fromiter(itertools.accumulate((len(text) + 1 for text in texts[:-1]), initial=0), dtype=np.int64,
                              count=len(texts))
    places = np.concatenate(start_lists) + np.repeat(text_starts, text_words.counts)
    kinds = text_words.kinds

    def found_in_texts(pattern: re.Pattern) -> np.ndarray:
        """Where `pattern` matches in each text, as places of the batch."""
        found = [[match.start() for match in pattern.finditer(text)] for text in texts]
        return np.fromiter(itertools.chain.from_iterable(found), dtype=np.int64, count=sum(map(len, found))) + \
            np.repeat(text_starts, list(map(len, found)))
    separators = found_in_texts(_SEPARATOR)
    boundaries = np.union1d(separators, found_in_texts(_LINE_END))
    piece_counts = list(map(len, piece_lists))
    first_pieces = list(itertools.accumulate(piece_counts, initial=0))
    count = first_pieces[-1]
    spans = [(text_start + start, text_start + end, first_piece + number)
             for text_start, first_piece, pieces in zip(text_starts.tolist(), first_pieces, piece_lists)
             for number, piece in enumerate(pieces) for start, end in piece if end > start]
    span_starts = np.array([start for start, _, _ in spans], dtype=np.int64)
    span_ends = np.array([end for _, end, _ in spans], dtype=np.int64)
    span_piece = np.array([number for _, _, number in spans], dtype=np.int64)

    def piece_of(positions: np.ndarray) -> np.ndarray:
        """The piece each place of the batch is in, -1 for none (a table row, a line end)."""
        span = np.searchsorted(span_starts, positions, side="right") - 1
        inside = (span >= 0) & (positions < span_ends[span.clip(0)])
        return np.where(inside, span_piece[span.clip(0)], -1)

    def per_piece(piece: np.ndarray, weights: np.ndarray | None = None) -> list[int]:
        kept = piece >= 0
        return np.bincount(piece[kept], None if weights is None else weights[kept], minlength=count) \
            .astype(np.int64).tolist()

    piece = piece_of(places)
    is_word = (kinds & _WORD_BIT) > 0
    n_tokens, n_words = per_piece(piece), per_piece(piece, is_word)
    n_cased, n_upper = per_piece(piece, (kinds & _CASED_BIT) > 0), per_piece(piece, (kinds & _UPPER_BIT) > 0)
    n_symbols, n_mixed = per_piece(piece, (kinds & _SYMBOL_BIT) > 0), per_piece(piece, (kinds & _MIXED_BIT) > 0)
    n_separators = per_piece(piece_of(separators))
    # words per (piece, segment): runs of equal pairs, both never decreasing along the words
    word_piece, word_segment = piece[is_word & (piece >= 0)], np.searchsorted(boundaries, places[is_word & (piece >= 0)])
    run_starts = np.flatnonzero(np.r_[True, (np.diff(word_piece) != 0) | (np.diff(word_segment) != 0)]) \
        if len(word_piece) else np.zeros(0, dtype=np.int64)
    run_lengths = np.diff(np.r_[run_starts, len(word_piece)])
    short_words = per_piece(word_piece[run_starts], run_lengths * (run_lengths <= SHORT_SEGMENT_WORDS))
    # the words and numbers, lower-cased: the stop words (each text's own) and the vocabulary's measures read them
    counted_at = np.flatnonzero(((kinds & _COUNTED_BIT) > 0) & (piece >= 0))
    counted_ends = np.cumsum(np.bincount(piece[counted_at], minlength=count))
    counted = text_words.lowered[counted_at]
    n_stops = per_piece(piece[counted_at], text_words.stops[counted_at] & is_word[counted_at])
    ttr, duplication = _vocabulary_measures(counted, text_words.lowered_lengths[counted], counted_ends)
    found = []
    for stop_words, first_piece, last_piece in zip(stop_word_sets, first_pieces, first_pieces[1:]):
        sets = []
        for number in range(first_piece, last_piece):
            words_here, alpha = n_words[number], max(1, n_words[number])
            sets.append({
                "stop_share": n_stops[number] / alpha if stop_words else math.nan,
                "title_share": n_upper[number] / n_cased[number] if n_cased[number] >= max(3, 0.5 * words_here)
                else math.nan,
                "ttr": ttr[number],
                "separators": n_separators[number] / alpha,
                "short_segments": short_words[number] / max(1, words_here),
                "duplication": duplication[number],
                "symbols": n_symbols[number] / max(1, n_tokens[number]),
                "mixed_tokens": n_mixed[number] / alpha,
            })
        found.append(sets)
    return found


def chunk_features(text: str, lang: str | None, stop_words: frozenset[str]) -> dict[str, float]:
    """FEATURES of one piece of text (stop_share NaN without stop words, title_share NaN where under
    half of the words are written in a cased script)."""
    tokens = words(text, lang)
    vocabulary = Vocabulary.of([tokens])
    starts = _token_starts(text, tokens, vocabulary.lengths[vocabulary.ids])
    if starts is None:  # a segmenter that rewrote its input: every word at the start, in one segment
        starts = np.zeros(len(tokens), dtype=np.int64)
    return _feature_sets([text], _words(vocabulary, [0], [stop_words]), [starts], [stop_words],
                         [[[(0, len(text))]]])[0][0]


def document_features(text: str, lang: str | None, stop_words: frozenset[str],
                      text_words: list[str] | None = None) -> list[tuple[int, dict[str, float]]]:
    """(length, FEATURES) of each chunk of a document (chunk_spans): its words are segmented once
    (or are `text_words`), and each goes to the chunk its first character is in (none: to a table row)."""
    return document_feature_sets([text], [lang], [stop_words], [text_words])[0]


def document_feature_sets(texts: list[str], langs: list[str | None], stop_word_sets: list[frozenset[str]],
                          word_lists: list[list[str] | None], vocabulary: Vocabulary | None = None
                          ) -> list[list[tuple[int, dict[str, float]]]]:
    """document_features of each document of a batch (`word_lists`: each one's words, or None;
    `vocabulary`: their Vocabulary, where every one is given and the caller has it), the features of
    the chunks whose words are found in their text counted over the batch at once."""
    found: list = [[] for _ in texts]
    piece_lists = list(map(chunk_spans, texts))
    token_lists = [text_words if text_words is not None else words(text, lang) if pieces else []
                   for text, lang, text_words, pieces in zip(texts, langs, word_lists, piece_lists)]
    vocabulary = vocabulary or Vocabulary.of(token_lists)
    batch: list[tuple] = []  # (number, text, starts, stop words, pieces)
    for number, (text, lang, stop_words, tokens, pieces) in enumerate(zip(texts, langs, stop_word_sets, token_lists,
                                                                          piece_lists)):
        if not pieces:
            continue
        starts = _token_starts(text, tokens, vocabulary.lengths[vocabulary.document_ids(number)])
        if starts is None:
            found[number] = [(len(piece), chunk_features(piece, lang, stop_words))
                             for piece in (_joined(text, spans) for spans in pieces)]
        else:
            batch.append((number, text, starts, stop_words, pieces))
    if batch:
        numbers, batch_texts, start_lists, batch_stop_words, batch_pieces = map(list, zip(*batch))
        feature_sets = _feature_sets(batch_texts, _words(vocabulary, numbers, stop_word_sets), start_lists,
                                     batch_stop_words, batch_pieces)
        for number, pieces, sets in zip(numbers, batch_pieces, feature_sets):
            found[number] = list(zip(map(_joined_length, pieces), sets))
    return found


def model_inputs(features: dict[str, float], reference: dict[str, float]) -> np.ndarray:
    """The model's inputs: stop_share as the log of its ratio to the reference's, title_share and ttr
    as their difference from it (0 where either is not measured: None in the reference), the rest
    as measured."""
    def typical(name: str) -> float:
        value = reference.get(name)
        return math.nan if value is None else value

    def difference(name: str) -> float:
        value, usual = features[name], typical(name)
        return 0.0 if math.isnan(value) or math.isnan(usual) else value - usual
    stop, typical_stop = features["stop_share"], typical("stop_share")
    return np.array([
        0.0 if math.isnan(stop) or math.isnan(typical_stop)
        else math.log((stop + _STOP_SMOOTHING) / (typical_stop + _STOP_SMOOTHING)),
        difference("title_share"), difference("ttr"),
        *(features[name] for name in FEATURES[3:]),
    ])


@dataclass(frozen=True)
class Model:
    """A fitted model (model.json): standardisation and coefficients over model_inputs."""
    mean: tuple[float, ...]
    scale: tuple[float, ...]
    coefficients: tuple[float, ...]
    intercept: float
    path: str = ""
    sha256: str = ""

    def probability(self, inputs: np.ndarray) -> np.ndarray:
        """P(natural) of rows of model_inputs."""
        z = (np.atleast_2d(inputs) - np.asarray(self.mean)) / np.asarray(self.scale)
        return 1.0 / (1.0 + np.exp(-(z @ np.asarray(self.coefficients) + self.intercept)))


BUNDLED_MODEL = "data/models/naturalness/model.json"


class ModelError(ValueError):
    """The configured naturalness model is missing, altered or of other features (names the config key)."""


def resolve_model_path(path: str | None) -> Path:
    """The configured model, or the bundled one (tokenmill.io.repository_file)."""
    return repository_file(path, BUNDLED_MODEL)


@lru_cache(maxsize=4)
def load_model(path: str | None, expected_sha256: str | None = None) -> Model:
    """The model at `path` (quality.naturalness.model), its sha256 checked against the pin
    (quality.naturalness.sha256)."""
    resolved = resolve_model_path(path)
    actual = pinned_sha256(resolved, expected_sha256, "quality.naturalness",
                           "fit one with `python -m tokenmill train-naturalness`", ModelError)
    fitted = json.loads(resolved.read_text(encoding="utf-8"))
    if tuple(fitted.get("features", ())) != FEATURES:
        raise ModelError(f"config key quality.naturalness.model: {resolved} is fitted on features "
                         f"{fitted.get('features')}, this version computes {list(FEATURES)}; fit it again "
                         "(python -m tokenmill train-naturalness)")
    return Model(tuple(fitted["mean"]), tuple(fitted["scale"]), tuple(fitted["coefficients"]), fitted["intercept"],
                 str(resolved), actual)


def configured_model(section: dict) -> Model:
    """The model a `quality.naturalness` section (its model path and sha256 pin) names."""
    return load_model(section["model"], section["sha256"])


def naturalness_rows(docs: list[dict], langs: list[str], model: Model, table, read=None) -> pa.Table:
    """One row of SCHEMA per document, in order (`table`: tokenmill.languages.LanguageTable; `read`:
    the documents' tokenmill.quality.heuristics.read_documents, where the caller has them)."""
    read = documents_read(docs, langs, read)
    entries = [table.entry(lang) for lang in langs]
    features = document_feature_sets([document.text for document in read], langs,
                                     [entry.stop_words for entry in entries], [document.words for document in read],
                                     read.vocabulary)
    scores = [_naturalness(chunks_of, model, entry) for chunks_of, entry in zip(features, entries)]
    return pa.Table.from_pydict({"doc_id": [doc["doc_id"] for doc in docs],
                                 "quality_naturalness": [score for score, _ in scores],
                                 "chunks": [chunk_count for _, chunk_count in scores]}, schema=SCHEMA)


def naturalness_metadata(model: Model) -> dict[str, str]:
    return {"naturalness_model_sha256": model.sha256}


def naturalness(text: str, lang: str | None, model: Model, language, text_words: list[str] | None = None
                ) -> tuple[float, int]:
    """(how much of the text reads as natural, its chunks): the chunk probabilities averaged by the
    chunks' lengths, or the first chunk's where higher (module docstring). `language`: the
    language's entry (tokenmill.languages.Language). A text without a chunk (empty, or only table
    rows) scores 1.0: the heuristics judge it. `text_words`: the text's words, where the caller has them."""
    return _naturalness(document_features(text, lang, language.stop_words, text_words), model, language)


def _naturalness(features: list[tuple[int, dict[str, float]]], model: Model, language) -> tuple[float, int]:
    """naturalness() of a document of these chunks (document_features)."""
    if not features:
        return 1.0, 0
    probabilities = model.probability(np.array([model_inputs(values, language.reference) for _, values in features]))
    weights = np.array([length for length, _ in features], dtype=np.float64)
    return max(float(np.average(probabilities, weights=weights)), float(probabilities[0])), len(features)
