"""Word-list toxicity score: the share of a document's word tokens that belong to a listed
entry (a word or a multi-word phrase), C4-style but stored as a value instead of a drop.

The default list is LDNOOBW English at the revision C4 used (data/wordlists/ldnoobw-en.txt,
see data/wordlists/SOURCES.md); any list with one entry per line works.

Text and entries are split by the same tokenizer: lowercased runs of letters and digits,
joined across "&", "'" and "’" (s&m, fuckin'), split at hyphens and everything else, so that
"g-spot" matches "g-spot" and "g spot", and "class" never matches "ass". Pictographs (🖕) are
one token each. Matching is greedy from left to right, longest entry first; a phrase counts all
of its tokens and one match.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

import pyarrow as pa

from tokenmill.hashing import sha256_file

TOXICITY_SCHEMA = pa.schema([
    ("doc_id", pa.string()),
    ("toxicity", pa.float64()),
    ("toxic_matches", pa.int64()),
])

_TOKEN = re.compile(
    r"[^\W_]+(?:[&'’][^\W_]+)*"
    r"|[\u2600-\u27bf\U0001f300-\U0001faff]"
)


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def load_wordlist(path: str) -> frozenset[str]:
    """Entries of a word list: one per line, lowercased and stripped; blank lines skipped."""
    with open(path, encoding="utf-8") as handle:
        return frozenset(entry for line in handle if (entry := line.strip().lower()))


@dataclass(frozen=True)
class _Matcher:
    words: frozenset[str]
    phrases: dict[str, frozenset[tuple[str, ...]]]  # first token -> phrases (all tokens)
    phrase_lengths: dict[str, tuple[int, ...]]      # first token -> phrase lengths, longest first


@functools.lru_cache(maxsize=8)
def _matcher(entries: frozenset[str]) -> _Matcher:
    words: set[str] = set()
    phrases: dict[str, set[tuple[str, ...]]] = {}
    for entry in entries:
        tokens = tuple(tokenize(entry))
        if len(tokens) == 1:
            words.add(tokens[0])
        elif len(tokens) > 1:
            phrases.setdefault(tokens[0], set()).add(tokens)
    return _Matcher(
        words=frozenset(words),
        phrases={first: frozenset(group) for first, group in phrases.items()},
        phrase_lengths={first: tuple(sorted({len(p) for p in group}, reverse=True))
                        for first, group in phrases.items()},
    )


def toxicity_score(text: str, words: frozenset[str]) -> tuple[float, int]:
    """(share of word tokens inside a listed entry, number of matched entries)."""
    tokens = tokenize(text)
    if not tokens:
        return 0.0, 0
    matcher = _matcher(words)
    single, phrases, lengths = matcher.words, matcher.phrases, matcher.phrase_lengths
    covered = matches = 0
    position, count = 0, len(tokens)
    while position < count:
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
            position += step
        else:
            position += 1
    return covered / count, matches


def toxicity_rows(docs: list[dict], words: frozenset[str]) -> pa.Table:
    """One row of TOXICITY_SCHEMA per document, in order."""
    results = [toxicity_score(doc["text"], words) for doc in docs]
    return pa.Table.from_pydict({"doc_id": [doc["doc_id"] for doc in docs], "toxicity": [score for score, _ in results],
                                 "toxic_matches": [matches for _, matches in results]}, schema=TOXICITY_SCHEMA)


def toxicity_metadata(wordlist_path: str) -> dict[str, str]:
    return {"wordlist_sha256": sha256_file(wordlist_path)}
