"""The language table: what the graph knows of each language, from real text of that language.

data/languages/languages.json (built by data/languages/build/build_languages.py from the sentences
in 75 languages that lingua-py tests on, data/languages/SOURCES.md) holds for each lid.176 code
that has reference text:

- `stop_words`: its 30 most frequent words (by the share of sentences they occur in), read by its
  own segmenter (tokenmill.words): the Gopher stop-word rule and the naturalness score count them;
- `reference`: the naturalness features (tokenmill.quality.naturalness) of its reference text,
  medians over pieces of about 1,000 characters, the values a document of the language is compared with;
- `heuristics`: its thresholds for the heuristic rules where the English values do not carry over
  (word length, alphabetic words, n-gram repetition, line punctuation), derived from the same text
  (the build script says how), as overrides of a kind's profile.

A language without reference text gets the entry of its script (`scripts`: the medians of the
languages written in it, no stop words; "*", every language's, for a script none is written in):
`Language.source` says which, and the yield table shows it.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass, field

from tokenmill.hashing import sha256_file
from tokenmill.unicode_script import EXPECTED_SCRIPTS, LATIN

ANY_SCRIPT = "*"  # the entry of a script no language of the table is written in: the medians of every language
BUNDLED = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "languages",
                       "languages.json")


def script_of_language(lang: str) -> str:
    """The script key of a lid.176 code ("LATIN", "CYRILLIC", "CJK/IDEOGRAPHIC", ...)."""
    return "/".join(sorted(EXPECTED_SCRIPTS.get(lang, LATIN)))


@dataclass(frozen=True)
class Language:
    code: str
    source: str  # "reference" (its own reference text) or "script:<key>" (its script's default)
    stop_words: frozenset[str] = field(default_factory=frozenset)
    reference: dict = field(default_factory=dict)
    heuristics: dict = field(default_factory=dict)


@dataclass(frozen=True, eq=False)  # hashed by identity: an entry is looked up once per language and process
class LanguageTable:
    path: str
    sha256: str
    languages: dict
    scripts: dict

    def entry(self, lang: str | None) -> Language:
        return _entry(self, lang or "und")

    def metadata(self) -> dict[str, str]:
        """What a side-car file records of the table its signals read."""
        return {"language_table_sha256": self.sha256}


@functools.lru_cache(maxsize=None)
def _entry(table: LanguageTable, lang: str) -> Language:
    own = table.languages.get(lang)
    if own is not None:
        return Language(lang, "reference", frozenset(own["stop_words"]), own["reference"], own["heuristics"])
    script = script_of_language(lang)
    if script not in table.scripts:  # no language of its script has reference text: every language's
        script = ANY_SCRIPT
    default = table.scripts[script]
    return Language(lang, f"script:{script}", frozenset(), default["reference"], default["heuristics"])


@functools.lru_cache(maxsize=4)
def load_language_table(path: str | None = None) -> LanguageTable:
    path = path or BUNDLED
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    return LanguageTable(path, sha256_file(path), data["languages"], data["scripts"])
