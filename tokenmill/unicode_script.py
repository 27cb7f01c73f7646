"""Script consistency: the share of a document's letters written in the script its
detected language is expected to use (a check for low-resource languages, where language
identification confuses scripts and mixed junk most)."""

from __future__ import annotations

import functools
import unicodedata

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


def script_share(text: str, lang: str) -> float:
    """Share of the (first SAMPLE_LETTERS) letters of `text` in `lang`'s expected script;
    1.0 for a text without letters."""
    expected = EXPECTED_SCRIPTS.get(lang, LATIN)
    letters = matching = 0
    for char in text:
        if char.isalpha():
            letters += 1
            matching += script_of(char) in expected
            if letters >= SAMPLE_LETTERS:
                break
    return matching / letters if letters else 1.0
