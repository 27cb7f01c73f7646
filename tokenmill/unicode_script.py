"""Script consistency: the share of a document's letters written in the script its
detected language is expected to use (a check for low-resource languages, where language
identification confuses scripts and mixed junk most)."""

from __future__ import annotations

import functools
import unicodedata

import numpy as np

# lid.176 codes -> the Unicode script(s) their text is written in; languages not listed
# are expected in Latin script.
EXPECTED_SCRIPTS: dict[str, frozenset[str]] = {}
for _scripts, _languages in [
    ({"CYRILLIC"}, "ru uk be bg mk sr kk ky mn tg ba tt cv ce os sah mhr mrj udm kv myv xal bxr krc av lez"),
    ({"ARABIC"}, "ar fa ur ps ckb ug sd arz azb mzn glk"),
    ({"DEVANAGARI"}, "hi mr ne sa mai bh new gom"),
    ({"BENGALI"}, "bn as bpy"),
    ({"CJK", "IDEOGRAPHIC"}, "zh wuu yue"),
    ({"CJK", "IDEOGRAPHIC", "HIRAGANA", "KATAKANA", "KATAKANA-HIRAGANA"}, "ja"),
    ({"HANGUL"}, "ko"),
    ({"GREEK"}, "el"),
    ({"HEBREW"}, "he yi"),
    ({"THAI"}, "th"),
    ({"LAO"}, "lo"),
    ({"KHMER"}, "km"),
    ({"MYANMAR"}, "my"),
    ({"GEORGIAN"}, "ka xmf"),
    ({"ARMENIAN"}, "hy"),
    ({"ETHIOPIC"}, "am"),
    ({"TAMIL"}, "ta"),
    ({"TELUGU"}, "te"),
    ({"KANNADA"}, "kn"),
    ({"MALAYALAM"}, "ml"),
    ({"GUJARATI"}, "gu"),
    ({"GURMUKHI"}, "pa"),
    ({"ORIYA"}, "or"),
    ({"SINHALA"}, "si"),
    ({"TIBETAN"}, "bo"),
    ({"THAANA"}, "dv"),
]:
    for _language in _languages.split():
        EXPECTED_SCRIPTS[_language] = frozenset(_scripts)
LATIN = frozenset({"LATIN"})
SAMPLE_LETTERS = 4000


@functools.lru_cache(maxsize=65536)
def script_of(char: str) -> str:
    """The script of a letter, from the first word of its Unicode name ("CJK" for ideographs)."""
    name = unicodedata.name(char, "")
    return name.split(" ", 1)[0] if name else ""


@functools.lru_cache(maxsize=1)
def _plane_zero() -> tuple[np.ndarray, np.ndarray, list[str]]:
    """For every code point below U+10000: whether it is a letter, its script's number (for letters),
    and the scripts by number; built on first use (about 0.1 s)."""
    is_letter = np.zeros(0x10000, dtype=bool)
    script_number = np.zeros(0x10000, dtype=np.uint16)
    numbers: dict[str, int] = {}
    for code in range(0x10000):
        char = chr(code)
        if char.isalpha():
            is_letter[code] = True
            script_number[code] = numbers.setdefault(script_of(char), len(numbers))
    return is_letter, script_number, list(numbers)


@functools.lru_cache(maxsize=None)
def _expected_numbers(expected: frozenset[str]) -> np.ndarray:
    """By script number (_plane_zero): whether the script is one of `expected`."""
    return np.array([script in expected for script in _plane_zero()[2]], dtype=bool)


def _letters(text: str, expected: frozenset[str]) -> tuple[np.ndarray, np.ndarray]:
    """For each character of `text`: whether it is a letter, and whether it is a letter of an `expected` script."""
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    is_letter, script_number, _ = _plane_zero()
    in_plane = codes < 0x10000
    plane_codes = np.where(in_plane, codes, 0)
    letter = np.where(in_plane, is_letter[plane_codes], False)
    matches = letter & _expected_numbers(expected)[script_number[plane_codes]]
    if not in_plane.all():  # letters beyond U+FFFF (rare ideographs, historic scripts), one by one
        for position in np.flatnonzero(~in_plane).tolist():
            char = text[position]  # one UTF-32 unit per character of a str, lone surrogates too
            if char.isalpha():
                letter[position] = True
                matches[position] = script_of(char) in expected
    return letter, matches


def script_share(text: str, lang: str) -> float:
    """Share of the (first SAMPLE_LETTERS) letters of `text` in `lang`'s expected script;
    1.0 for a text without letters."""
    expected = EXPECTED_SCRIPTS.get(lang, LATIN)
    # the sample lies in the text's first 2 * SAMPLE_LETTERS characters unless under half of them are
    # letters: those are read first, and the whole text only then
    letter, matches = _letters(text[:2 * SAMPLE_LETTERS], expected)
    if len(text) > 2 * SAMPLE_LETTERS and np.count_nonzero(letter) < SAMPLE_LETTERS:
        letter, matches = _letters(text, expected)
    positions = np.flatnonzero(letter)
    if not len(positions):
        return 1.0
    sample = positions[:SAMPLE_LETTERS]
    return int(matches[sample].sum()) / len(sample)
