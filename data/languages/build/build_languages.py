"""The language table (data/languages/languages.json) from real sentences in 75 languages.

Reference text: lingua-py's test sentences (pemistahl/lingua-py @ 754ce211,
language-testdata/sentences/*.txt, Apache-2.0; 1,000 sentences a language sampled from the Leipzig
web corpora, 412 in Japanese and 729 in Chinese), read by each language's own segmenter
(tokenmill.words). For each language, keyed by its lid.176 code (lingua's `nb` is lid.176's `no`):

- stop_words: the 30 words (lower-cased, with a letter) found in the most sentences, ties by the word;
- reference: the naturalness features of the reference text that a document is compared with
  (tokenmill.quality.naturalness.REFERENCED), medians over pieces of at least 1,000 characters made of
  consecutive sentences (joined by a space, by nothing in a language written without spaces);
- heuristics: the rules whose English values do not carry over, derived from the same pieces as
  FineWeb2 derives its per-language thresholds (language statistics against English's):
  * mean_word_length: English's bounds [3, 10] scaled by the language's median word length over
    English's (Chinese words are 1.8 characters, Finnish 7.8);
  * alpha_word_fraction: ALPHA_SHARE of the language's median share of alphabetic words (English's
    0.8 is 0.93 of English's median; FineWeb2's per-language values are 0.88-0.91 of ours): 0.75, a
    floor for pages of numbers and symbols, chosen on the development labels (data/train/naturalness:
    Russian, Persian, Asturian web excerpts), where 0.93 lost 10-25 % of the natural excerpts, 0.85
    about 5 % and 0.75 under 2 %; the naturalness score judges the rest;
  * the n-gram repetition rules (top_2..4gram, dup_5..10gram): English's values scaled by the length
    of text an n-gram spans in English over the same in the language (word length plus the space
    between words), at least 1 and at most 1.6: a Chinese 5-gram of jieba's words spans 9 characters
    where an English one spans 30, so the same text repeats more often by chance. 1.6 is the largest
    of FineWeb2's scale factors for the languages that jieba, Kiwi and SudachiPy read (cmn 1.32,
    kor 1.34, jpn 1.62 of English's dup_5gram);
  * fineweb_line_punct_ratio: off in a language whose sentences mostly end without terminal
    punctuation (Thai); FineWeb's 0.12 elsewhere;
  * FineWeb's duplicated-line characters: DUPLICATE_LINE_CHARS, between FineWeb's English 0.01 and
    FineWeb2's 0.1: of the repository's 95 non-English real article pages (trafilatura's evaluation set
    and the article-extraction benchmark, bench_languages.py) 0.01 rejects 3 and 0.02 one;
  * FineWeb2's method where it is a decision, not a number: no C4 sentence count (its sentence rules
    are English's) and no FineWeb short-line rule (FineWeb2 dropped it).
  English keeps the published values (the kind profiles of config.schema.yaml) and Gopher's stop words.
- scripts: for a language without reference text, its script's entry: the medians of the languages
  written in that script (no stop words, so no stop-word rule judges it); "*": of every language, for a
  script that none of the 75 is written in (Ethiopic, Khmer, ...).

usage: python data/languages/build/build_languages.py SHARED_DATA_DIR data/languages/languages.json
The output is the same bytes for the same sentences and segmenters.
"""

from __future__ import annotations

import collections
import json
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT))

from tokenmill.io import write_json  # noqa: E402
from tokenmill.languages import ANY_SCRIPT, script_of_language  # noqa: E402
from tokenmill.quality.heuristics import _TERMINAL_PUNCTUATION, DEFAULT_THRESHOLDS, StopWords, heuristic_scores  # noqa: E402
from tokenmill.quality.naturalness import REFERENCED, chunk_features  # noqa: E402
from tokenmill.words import SEGMENTER_OF, words  # noqa: E402

STOP_WORDS = 30
PIECE_CHARS = 1000
LINGUA_TO_LID = {"nb": "no"}
WRITTEN_WITHOUT_SPACES = {lang for lang, name in SEGMENTER_OF.items() if name != "kiwi"}
REPETITION = [*(f"top_{n}gram_char_fraction" for n in (2, 3, 4)), *(f"dup_{n}gram_char_fraction" for n in range(5, 11))]
MAX_REPETITION_SCALE = 1.6
ALPHA_SHARE = 0.75
DUPLICATE_LINE_CHARS = 0.02


def stop_words(sentences: list[str], lang: str) -> list[str]:
    counts = collections.Counter()
    for sentence in sentences:
        counts.update({word.lower() for word in words(sentence, lang) if any(c.isalpha() for c in word)})
    return [word for word, _ in sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:STOP_WORDS]]


def pieces(sentences: list[str], lang: str) -> list[str]:
    joiner = "" if lang in WRITTEN_WITHOUT_SPACES else " "
    out, current = [], []
    for sentence in sentences:
        current.append(sentence)
        if len(joiner.join(current)) >= PIECE_CHARS:
            out.append(joiner.join(current))
            current = []
    return out


def median(values) -> float | None:
    """The median of the values measured (None where none was: title_share in an uncased script)."""
    values = [value for value in values if value is not None and not math.isnan(value)]
    return round(statistics.median(values), 6) if values else None


def measure(sentences: list[str], lang: str) -> dict:
    """Stop words, the reference features and the statistics the thresholds are derived from."""
    stops = stop_words(sentences, lang)
    texts = pieces(sentences, lang)
    features = [chunk_features(text, lang, frozenset(stops)) for text in texts]
    scores = [heuristic_scores(text, lang, StopWords(frozenset(stops))) for text in texts]
    spaces = [sum(text.count(" ") for text in texts) / max(1, sum(s["word_count"] for s in scores))]
    return {
        "stop_words": stops,
        "reference": {name: median(f[name] for f in features) for name in REFERENCED},
        "word_length": median(s["mean_word_length"] for s in scores),
        "alpha": median(s["alpha_word_fraction"] for s in scores),
        "spaces_per_word": round(spaces[0], 6),
        "terminal": round(sum(s.rstrip()[-1:] in _TERMINAL_PUNCTUATION for s in sentences) / len(sentences), 6),
    }


def derived_heuristics(stats: dict, english: dict) -> dict:
    span = stats["word_length"] + min(1.0, stats["spaces_per_word"])
    english_span = english["word_length"] + min(1.0, english["spaces_per_word"])
    scale = min(MAX_REPETITION_SCALE, max(1.0, english_span / span))
    ratio = stats["word_length"] / english["word_length"]
    return {
        "gopher_quality": {
            "mean_word_length": {"min": round(3 * ratio, 3), "max": round(10 * ratio, 3)},
            "alpha_word_fraction": {"min": round(ALPHA_SHARE * stats["alpha"], 3)},
        },
        "gopher_repetition": {name: {"max": round(DEFAULT_THRESHOLDS["gopher_repetition"][name]["max"] * scale, 3)}
                              for name in REPETITION},
        "c4": {"c4_kept_sentence_count": None},
        "fineweb": {"fineweb_line_punct_ratio": {"min": 0.12} if stats["terminal"] >= 0.5 else None,
                    "fineweb_short_line_ratio": None,
                    "fineweb_dup_line_char_ratio": {"max": DUPLICATE_LINE_CHARS}},
    }


def script_default(entries: list[dict]) -> dict:
    """The median entry of a script's languages (rules on and off by the majority)."""
    def merged(values: list):
        present = [value for value in values if value is not None]
        if len(present) * 2 < len(values):
            return None
        if isinstance(present[0], dict):
            return {key: merged([value.get(key) for value in present]) for key in present[0]}
        return round(statistics.median(present), 6)
    return {"reference": {name: median(entry["reference"][name] for entry in entries) for name in REFERENCED},
            "heuristics": merged([entry["heuristics"] for entry in entries])}


def build(shared: Path) -> dict:
    sentences = {}
    for path in sorted((shared / "lid-lingua-sentences" / "sentences").glob("*.txt")):
        lang = LINGUA_TO_LID.get(path.stem, path.stem)
        sentences[lang] = [line.strip() for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]
    stats = {lang: measure(lines, lang) for lang, lines in sentences.items()}
    languages = {}
    for lang, measured in stats.items():
        languages[lang] = {"stop_words": measured["stop_words"], "reference": measured["reference"],
                           "heuristics": {} if lang == "en" else derived_heuristics(measured, stats["en"]),
                           "statistics": {key: measured[key] for key in ("word_length", "alpha", "spaces_per_word",
                                                                          "terminal")}}
    by_script = collections.defaultdict(list)
    for lang, entry in languages.items():
        if lang != "en":
            by_script[script_of_language(lang)].append(entry)
    scripts = {script: script_default(entries) for script, entries in sorted(by_script.items())}
    scripts[ANY_SCRIPT] = script_default([entry for entries in by_script.values() for entry in entries])
    return {"source": "pemistahl/lingua-py @ 754ce21122c083a7200763015fdaf7cda8d85453, "
                      "language-testdata/sentences (Apache-2.0); data/languages/build/build_languages.py",
            "languages": dict(sorted(languages.items())), "scripts": scripts}


def main() -> None:
    shared, out = Path(sys.argv[1]), sys.argv[2]
    write_json(out, build(shared))
    print(f"{out}: {len(json.load(open(out, encoding='utf-8'))['languages'])} languages")


if __name__ == "__main__":
    main()
