"""Words per language: one registry from a document's language to the word segmenter that reads it.

Every word-based signal (the heuristics and their per-language stop words, the toxicity word lists,
MinHash shingles) reads a document's words through `words(text, lang)`, `lang` being the document's
lid.176 code from langid. The registry follows FineWeb2's tokenizer assignment (datatrove 0.10's
`tokenizer_assignment.csv`) for the languages written without spaces between words, with the
segmenters whose wheel carries its own dictionary or model (nothing downloads at run time):

| languages | segmenter | what FineWeb2 uses |
|---|---|---|
| zh, wuu, yue, lzh | jieba (rjieba: jieba-rs, its dictionary compiled in) | spaCy zh with jieba |
| ja | SudachiPy, the core dictionary, split mode A | spaCy ja (SudachiPy, core, A) |
| ko | Kiwi (kiwipiepy + kiwipiepy_model), morphemes' surface spans | Kiwi |
| th | PyThaiNLP newmm-safe | the same |
| lo | LaoNLP | the same |
| km | khmer-nltk | the same |
| my | pyidaungsu | the same |
| bo, dz | syllables (split at the tsheg) | botok, which downloads its dictionary at first use |
| every other language | `unicode`, below | spaCy's rule-based tokenizers |

`unicode`: one regular expression with spaCy's rules for the common cases (punctuation split off,
hyphens split, decimals, times, abbreviations with periods, URLs and @handles whole, combining marks
inside words); a Han, kana or Hangul character in a document of another language is one word.
The differences from datatrove's spaCy English tokenizer, measured, are in `unicode_words`.

A dictionary segmenter reads a long text in pieces of at most SEGMENT_CHARS characters cut at line
ends (or at spaces, in a longer line): SudachiPy refuses inputs of more than 49,149 bytes, and a
piece bounds what one call holds. The segmenters are loaded on first use in each process, so a part
without Korean never loads Kiwi (0.8 CPU-s, 230 MB). A segmenter that raises on a document never
fails its part: that document's words come from `unicode`, and `segmented` names which one read it.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import re
import sys
import unicodedata
import warnings
from collections.abc import Callable, Iterator

import numpy as np

SEGMENTERS: dict[str, tuple[str, ...]] = {
    "jieba": ("zh", "wuu", "yue", "lzh"),
    "sudachi": ("ja",),
    "kiwi": ("ko",),
    "pythainlp": ("th",),
    "laonlp": ("lo",),
    "khmernltk": ("km",),
    "pyidaungsu": ("my",),
    "tibetan_syllables": ("bo", "dz"),
}
UNICODE = "unicode"
SEGMENTER_OF: dict[str, str] = {lang: name for name, langs in SEGMENTERS.items() for lang in langs}
# the wheel whose version a segmenter's output depends on (its dictionary's, where that is a wheel of its own)
SEGMENTER_PACKAGES: dict[str, tuple[str, ...]] = {
    "jieba": ("rjieba",), "sudachi": ("SudachiPy", "SudachiDict-core"), "kiwi": ("kiwipiepy", "kiwipiepy_model"),
    "pythainlp": ("pythainlp",), "laonlp": ("LaoNLP",), "khmernltk": ("khmer-nltk",),
    "pyidaungsu": ("pyidaungsu-numpy2",), "tibetan_syllables": (), UNICODE: (),
}
SEGMENT_CHARS = 16_000
FAILED_SUFFIX = "-failed"


# --- unicode: the regular expression tokenizer --------------------------------------------------

# Han (with the iteration marks 々〆〇), kana and Hangul: in a document of a language without a
# segmenter of its own, each such character is one word.
CJK_CLASS = (
    "\u1100-\u11ff\u3005-\u3007\u3040-\u309f\u30a0-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f\uffa0-\uffdc\U00020000-\U0003134f"
)


def character_class(codepoints: list[int]) -> str:
    """The inside of a regular expression's [...] that matches the sorted, distinct `codepoints`, as ranges."""
    parts, start, prev = [], codepoints[0], codepoints[0]
    for cp in codepoints[1:] + [-1]:
        if cp == prev + 1:
            prev = cp
            continue
        parts.append(re.escape(chr(start)) if start == prev else f"{re.escape(chr(start))}-{re.escape(chr(prev))}")
        start = prev = cp
    return "".join(parts)


# Combining marks (Unicode category M: Devanagari vowel signs, Thai tone marks, decomposed
# accents...). Python's \w excludes them, which would cut Indic words apart; they are word
# characters here. Derived from this interpreter's Unicode database (planes 0-1 and the
# variation selectors of plane 14), so deterministic for a given Python version.
_MARK_CODEPOINTS = [cp for cp in [*range(0x300, 0x20000), *range(0xE0100, 0xE01F0)]
                    if unicodedata.category(chr(cp))[0] == "M"]
_MARKS = character_class(_MARK_CODEPOINTS)
_IS_MARK = np.zeros(0x110000, dtype=bool)  # by code point: a text is checked for marks in one array lookup
_IS_MARK[_MARK_CODEPOINTS] = True


@functools.lru_cache(maxsize=1)
def space_table() -> np.ndarray:
    """By code point: whether it is whitespace (str.isspace: where str.split splits and `\\s` matches),
    so that a text's spaces are found in one array lookup of its code points; built on first use (0.04 s)."""
    table = np.zeros(sys.maxunicode + 1, dtype=bool)
    table[[code for code in range(sys.maxunicode + 1) if chr(code).isspace()]] = True
    return table


def code_points(text: str) -> np.ndarray:
    """The code points of `text`, one per character (lone surrogates too)."""
    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)


# One token per match, in this order: a Han/kana/Hangul character; a URL (http(s):// or www.,
# without trailing punctuation); letters with periods ("U.S.", "a.m.", the initial "J."); an
# @handle; a run of word characters, digit groups kept whole ("3.5", "1,000", "2:55"); an
# apostrophe suffix after a word ("'s", "’t"); "..." and longer dot runs; any other non-space
# character on its own. The token is the pattern's group: a run of whitespace before it is skipped by
# one \s* (every character but whitespace starts a token), rather than by every alternative failing at
# each of its characters; an @handle's "@" comes before its lookbehind, so that the alternative fails
# at once elsewhere.
_HEAD = (f"[{CJK_CLASS}]"
         r"|(?:https?://|www\.)\S*[^\s.,;:!?)\]}'\"’”]"
         r"|(?:[^\W\d_]\.)+(?![^\W\d_])"
         r"|@(?<!\w@)\w+")
_TAIL = r"|(?<=\w)['’]{W}+|\.{{2,}}|[^\w\s]"
_WORD = f"[^\\W{CJK_CLASS}]"
_TOKEN = re.compile(r"\s*(" + _HEAD + f"|{_WORD}+(?:[.,:]\\d+)*" + _TAIL.format(W=_WORD) + ")")
_WORD_WITH_MARKS = f"(?:{_WORD}|[{_MARKS}])"
_TOKEN_WITH_MARKS = re.compile(
    r"\s*(" + _HEAD + f"|{_WORD_WITH_MARKS}{_WORD}*(?:[{_MARKS}]+{_WORD}*)*(?:[.,:]\\d+)*" + _TAIL.format(W=_WORD) + ")"
)


def unicode_words(text: str) -> list[str]:
    """Words of `text` by one regular expression, no spaCy.

    datatrove tokenizes English with spaCy's rule-based tokenizer (`spacy.blank("en")`). The
    same here: punctuation is split off words as separate tokens ("end." -> "end", "."), hyphens
    are split ("e-mail" -> "e", "-", "mail"), "..." is one token, decimals, digit groups and
    times ("3.5", "1,000", "2:55"), letters with periods ("U.S.", "a.m.", "J."), URLs and
    @handles are single tokens. Different:
    - contractions split before the apostrophe ("don't" -> "don", "'t"; spaCy: "do", "n't"):
      the same number of words and the same total length;
    - spaCy's exception lists (abbreviations such as "Mr." and "vs.", e-mail addresses,
      emoticons, "pic.twitter.com/..." links) are not known: these split at punctuation;
      letter-hyphen-digit compounds ("top-20", which spaCy keeps) are split at the hyphen;
    - Han, kana and Hangul characters are one word each (spaCy "en" keeps a run of them as one
      token; a document in Chinese, Japanese or Korean is read by its own segmenter instead);
    - combining marks are word characters, so Indic and other abugida words stay whole.
    On the 181 gold article bodies of the sample (bench/bench_heuristics.py's documents), the
    Gopher quality, Gopher repetition and FineWeb pass/fail decisions differ from datatrove's
    for 5 document-family pairs out of 543, 4 of them on the two Japanese documents.
    """
    if text[-1:].isspace():  # no token ends there, and a search that skips it would try again from each of its characters
        text = text.rstrip()
    marks = not text.isascii() and _IS_MARK[np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)].any()
    return (_TOKEN_WITH_MARKS if marks else _TOKEN).findall(text)


# --- the dictionary segmenters --------------------------------------------------------------------

_TSHEG = re.compile("[\u0f0b\u0f0c]")


def _pieces(text: str) -> Iterator[str]:
    """`text` in pieces of at most SEGMENT_CHARS characters, cut after a newline where one falls in
    the window, else after a space, else anywhere."""
    start = 0
    while len(text) - start > SEGMENT_CHARS:
        window = text[start:start + SEGMENT_CHARS]
        cut = window.rfind("\n") + 1 or window.rfind(" ") + 1 or SEGMENT_CHARS
        yield window[:cut]
        start += cut
    yield text[start:]


def _stripped(tokens) -> list[str]:
    return [token for token in (t.strip() for t in tokens) if token]


def _surfaces(text: str, spans) -> Iterator[str]:
    """The text of each span, less what an earlier span already covered: Kiwi gives a contracted
    form's morphemes overlapping spans ("나눕니다" is 나누 + ㅂ니다 over "나눕" and "눕니다")."""
    covered = 0
    for start, end in spans:
        start = max(start, covered)
        if end > start:
            yield text[start:end]
            covered = end


def _load(name: str) -> Callable[[str], list[str]]:
    """The segmenter `name` as a function of one piece of text (its imports are deferred: each loads
    a dictionary or model)."""
    if name == "jieba":
        import rjieba
        return lambda piece: _stripped(rjieba.cut(piece))
    if name == "sudachi":
        from sudachipy import Dictionary, SplitMode
        tokenizer = Dictionary(dict="core").tokenizer(mode=SplitMode.A)
        return lambda piece: _stripped(m.surface() for m in tokenizer.tokenize(piece))
    if name == "kiwi":
        from kiwipiepy import Kiwi
        # one thread (the part's workers are the parallelism: 0 is one since kiwipiepy 0.21, which it
        # warns of); the typo and multi-word dictionaries change no split of ordinary text here and
        # hold half of its memory
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            kiwi = Kiwi(num_workers=0, load_typo_dict=False, load_multi_dict=False)
        return lambda piece: _stripped(_surfaces(piece, ((t.start, t.end) for t in kiwi.tokenize(piece))))
    if name == "pythainlp":
        from pythainlp.tokenize import word_tokenize as thai_words
        return lambda piece: _stripped(thai_words(piece, engine="newmm-safe", keep_whitespace=False))
    if name == "laonlp":
        from laonlp.tokenize import word_tokenize as lao_words
        return lambda piece: _stripped(lao_words(piece))
    if name == "khmernltk":
        import logging
        from khmernltk.utils.log_utils import logger
        logger.setLevel(logging.WARNING)  # it logs its model's path to stderr as it loads it
        from khmernltk import word_tokenize as khmer_words
        return lambda piece: _stripped(khmer_words(piece, return_tokens=True))
    if name == "pyidaungsu":
        import pyidaungsu
        return lambda piece: _stripped(pyidaungsu.tokenize(piece, form="word"))
    if name == "tibetan_syllables":
        return lambda piece: unicode_words(_TSHEG.sub(" ", piece))
    raise ValueError(f"unknown word segmenter {name!r}; expected one of {sorted(SEGMENTERS)}")


@functools.lru_cache(maxsize=None)
def _segmenter(name: str) -> Callable[[str], list[str]]:
    return _load(name)


def segmenter_of(lang: str | None) -> str:
    """The name of the segmenter that reads a document of language `lang`."""
    return SEGMENTER_OF.get(lang or "", UNICODE)


def segmented(text: str, lang: str | None) -> tuple[list[str], str]:
    """(the words of `text`, the segmenter that read them): `unicode` for a language without a
    segmenter of its own, and `<name>-failed` (words by `unicode`) where the segmenter raised."""
    name = segmenter_of(lang)
    if name == UNICODE or not text:
        return unicode_words(text), name
    try:
        split = _segmenter(name)
        return [word for piece in _pieces(text) for word in split(piece)], name
    except Exception:  # a poison document: its words from the fallback, never a failed part
        return unicode_words(text), name + FAILED_SUFFIX


def words(text: str, lang: str | None) -> list[str]:
    return segmented(text, lang)[0]


def segmenter_metadata() -> dict[str, str]:
    """What a side-car file of word-based signals records of the segmenters that read its words."""
    return {"segmenters": json.dumps(segmenter_versions(), sort_keys=True)}


def segmenter_versions() -> dict[str, str]:
    """The package versions each segmenter's words depend on, for the side-car files' metadata."""
    return {name: " ".join(f"{package}=={importlib.metadata.version(package)}" for package in packages)
            for name, packages in sorted(SEGMENTER_PACKAGES.items())}
