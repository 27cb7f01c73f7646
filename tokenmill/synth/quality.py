"""Quality control of generated text, measured against the documents it was generated from:
lexical diversity (moving-average type-token ratio, word n-gram entropy), grounding (the share
of the output's content words that its source holds), generation failures by reason, and a
real-vs-synthetic distinguisher whose AUC says how identifiable the synthetic text is."""

from __future__ import annotations

import heapq
import math
import re
import tempfile
from collections import Counter
from pathlib import Path

import fasttext
import numpy as np

from tokenmill.hashing import hash64, keyed_hash64, seed_key
from tokenmill.io import read_jsonl_zst, write_json
from tokenmill.quality.fasttext import prepare

WORD = re.compile(r"\w+", re.UNICODE)
# Function words carry no fact: a rewrite may use any of them without inventing anything.
STOPWORDS = frozenset("""a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just may me might more most must
my myself no nor not now of off on once only or other our ours ourselves out over own same she should so some such
than that the their theirs them themselves then there these they this those through to too under until up upon us
very was we were what when where which while who whom why will with would you your yours yourself yourselves""".split())
REFUSAL = re.compile(r"^\W*(i'?m sorry|i am sorry|i cannot|i can'?t|as an ai\b|i'?m unable|i am unable|"
                     r"i won'?t be able|sorry, but)", re.IGNORECASE)
FAILURE_REASONS = ("empty", "refused", "repeated_loop", "truncated")


def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def type_token_ratio(text: str, window: int = 100) -> float | None:
    """Distinct words over words, averaged over every window of `window` words (MATTR), so that
    long and short texts compare; a text shorter than the window is one window."""
    tokens = words(text)
    if not tokens:
        return None
    if len(tokens) <= window:
        return len(set(tokens)) / len(tokens)
    counts = Counter(tokens[:window])
    distinct = [len(counts)]
    for leaving, entering in zip(tokens, tokens[window:]):
        counts[entering] += 1
        counts[leaving] -= 1
        if not counts[leaving]:
            del counts[leaving]
        distinct.append(len(counts))
    return sum(distinct) / (len(distinct) * window)


def ngram_entropy(text: str, n: int = 2) -> float | None:
    """Shannon entropy, in bits, of the text's word n-grams."""
    tokens = words(text)
    grams = Counter(zip(*(tokens[i:] for i in range(n))))
    total = sum(grams.values())
    if not total:
        return None
    return -sum(count / total * math.log2(count / total) for count in grams.values())


def content_words(text: str) -> list[str]:
    """Words that can carry a fact: all but STOPWORDS (numbers count: an invented one is an error)."""
    return [word for word in words(text) if word not in STOPWORDS]


def grounding(output: str, source: str) -> float | None:
    """Share of the output's content words (stopwords left out) that occur in the source: 1.0
    for a rewrite that says nothing the source does not, low for invented or unrelated text."""
    said = content_words(output)
    if not said:
        return None
    known = set(content_words(source))
    return sum(word in known for word in said) / len(said)


def repeated_share(text: str, n: int = 4) -> float:
    """Share of the text's word n-grams that repeat one before them (0: none repeats)."""
    grams = list(zip(*(words(text)[i:] for i in range(n))))
    return 1 - len(set(grams)) / len(grams) if grams else 0.0


def failure_reason(text: str, finish: str, max_repeated_share: float = 0.3) -> str:
    """The first of FAILURE_REASONS an output has, or "": no words; a refusal at its start; more
    than `max_repeated_share` of its word 4-grams repeated (a decoding loop); cut at
    max_new_tokens (finish "length") before the model ended it."""
    if not words(text):
        return "empty"
    if REFUSAL.match(text):
        return "refused"
    if repeated_share(text) > max_repeated_share:
        return "repeated_loop"
    if finish == "length":
        return "truncated"
    return ""


def auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """Area under the ROC curve: the chance that a positive outscores a negative (ties half)."""
    order = np.argsort(scores, kind="stable")
    ranks = np.empty(len(scores))
    sorted_scores = scores[order]
    start = 0
    for end in range(1, len(scores) + 1):  # average ranks over ties
        if end == len(scores) or sorted_scores[end] != sorted_scores[start]:
            ranks[order[start:end]] = (start + end + 1) / 2
            start = end
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if not n_pos or not n_neg:
        raise ValueError("auc: needs positives and negatives")
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def distinguisher_auc(real: list[str], synthetic: list[str], seed: int = 0, max_chars: int = 20_000,
                      epoch: int = 25) -> dict:
    """Train a fastText classifier on one half of the real and synthetic texts (halves by a hash of
    each text, so the split needs no order) and score the other half; then the other way round.
    Each real text is first cut to the median length in words of the synthetic ones, so that
    length alone tells nothing. Returns the AUC of each fold and their mean: 0.5 when the two are
    indistinguishable, near 1.0 when every synthetic text is recognised; None when a half lacks
    either kind."""
    median_words = int(np.median([len(text.split()) for text in synthetic])) if synthetic else 0
    real = sorted({" ".join(text.split()[:max(median_words, 1)]) for text in real})
    labelled = [(text, False) for text in real] + [(text, True) for text in synthetic]
    halves = [[item for item in labelled if hash64(item[0]) % 2 == side] for side in (0, 1)]
    summary = {"real": len(real), "synthetic": len(synthetic), "real_words": median_words}
    if any(len({is_synthetic for _, is_synthetic in half}) < 2 for half in halves):
        return {**summary, "folds": [], "auc": None}
    folds = []
    with tempfile.TemporaryDirectory() as tmp:
        for train, test in ((halves[0], halves[1]), (halves[1], halves[0])):
            path = Path(tmp) / "train.txt"
            path.write_text("".join(f"__label__{'synthetic' if is_synthetic else 'real'} {prepare(text, max_chars)}\n"
                                    for text, is_synthetic in train), encoding="utf-8")
            model = fasttext.train_supervised(input=str(path), epoch=epoch, lr=0.5, wordNgrams=2, dim=32,
                                              minCount=1, thread=1, seed=seed, verbose=0)
            labels, probs = model.predict([prepare(text, max_chars) for text, _ in test], k=2)
            scores = np.array([dict(zip(names, values)).get("__label__synthetic", 0.0)
                               for names, values in zip(labels, probs)])
            folds.append(round(auc(scores, np.array([is_synthetic for _, is_synthetic in test])), 6))
    return {**summary, "folds": folds, "auc": round(sum(folds) / len(folds), 6)}


def source_overlap(output: str, source: str, n: int) -> float | None:
    """Share of the output's word n-grams found verbatim in the source: near 1.0 for a copy."""
    said = words(output)
    grams = list(zip(*(said[i:] for i in range(n))))
    if not grams:
        return None
    known = set(zip(*(words(source)[i:] for i in range(n))))
    return sum(gram in known for gram in grams) / len(grams)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def document_checks(text: str, finish: str, source: str, settings: dict) -> dict:
    """The quality columns of one generated text against the source text it was given
    (`settings`: the synthetic.quality config section)."""
    return {"failure": failure_reason(text, finish, settings["max_repeated_share"]),
            "words": len(words(text)), "grounding": _rounded(grounding(text, source)),
            "source_overlap": _rounded(source_overlap(text, source, settings["overlap_ngram"])),
            "type_token_ratio": _rounded(type_token_ratio(text)),
            "source_type_token_ratio": _rounded(type_token_ratio(source)),
            "ngram_entropy": _rounded(ngram_entropy(text)), "source_ngram_entropy": _rounded(ngram_entropy(source))}


ALL_TEMPLATES = "ALL"
EMPTY_GENERATION = "empty_generation"  # extract's quarantine reason for an output without text
_MEANS = ("grounding", "source_overlap", "type_token_ratio", "source_type_token_ratio", "ngram_entropy",
          "source_ngram_entropy")


class _TemplateSummary:
    def __init__(self):
        self.documents = 0
        self.failures = Counter()
        self.new_tokens = 0
        self.sums = {name: [0.0, 0] for name in _MEANS}

    def add(self, checks: dict, new_tokens: int) -> None:
        self.documents += 1
        self.failures[checks["failure"] or "ok"] += 1
        self.new_tokens += new_tokens
        for name in _MEANS:
            if checks[name] is not None:
                self.sums[name][0] += checks[name]
                self.sums[name][1] += 1

    def row(self, distinguisher: dict) -> dict:
        return {"documents": self.documents, "outputs": sum(self.failures.values()),
                "failures": dict(sorted(self.failures.items())), "new_tokens": self.new_tokens,
                **{f"mean_{name}": round(total / count, 6) if count else None for name, (total, count) in self.sums.items()},
                "distinguisher": distinguisher}


def snapshot_quality(source: str, snapshot: str, parts: list[tuple[str, str, str]], settings: dict,
                     out_path: str) -> dict:
    """The quality of a synthetic snapshot, per prompt template and over all ("ALL"): outputs and
    documents, failures by reason (an output extract quarantined counts under its reason: empty for
    one without text, bad_encoding for one of broken characters),
    mean grounding, source overlap, type-token ratio and bigram entropy beside the sources',
    new tokens, and the real-vs-synthetic distinguisher, trained on the documents of lowest keyed
    hash (settings["distinguisher_docs"] at most) against the source texts they were written
    from. `parts`: (docs, quarantine, source docs) of each synthetic part."""
    summaries: dict[str, _TemplateSummary] = {}
    key = seed_key(settings["seed"])
    sample: list[tuple[int, str, str, tuple[str, int]]] = []  # a max-heap by negated hash: the lowest kept
    for docs_path, quarantine_path, source_docs in parts:
        for doc in read_jsonl_zst(docs_path):
            made = doc["extract_meta"]["synthetic"]
            for name in (doc["prompt_template_id"], ALL_TEMPLATES):
                summaries.setdefault(name, _TemplateSummary()).add(made["checks"], made["new_tokens"])
            entry = (-keyed_hash64(key, doc["doc_id"]), doc["prompt_template_id"], doc["text"],
                     (source_docs, made["origin"]["row"], made["source_chars"]))
            if len(sample) < settings["distinguisher_docs"]:
                heapq.heappush(sample, entry)
            else:
                heapq.heappushpop(sample, entry)
        for record in read_jsonl_zst(quarantine_path):  # an output without text, or one extract refused
            reason = "empty" if record["reason"] == EMPTY_GENERATION else record["reason"]
            for name in (record["record_id"].split(":", 1)[1], ALL_TEMPLATES):
                summaries.setdefault(name, _TemplateSummary()).failures[reason] += 1
    sources = _source_texts([where for *_, where in sample])
    templates = {}
    for name in sorted(summaries, key=lambda name: (name == ALL_TEMPLATES, name)):
        chosen = [entry for entry in sample if name in (entry[1], ALL_TEMPLATES)]
        real = sorted({sources[entry[3]] for entry in chosen})
        distinguisher = distinguisher_auc(real, sorted(entry[2] for entry in chosen), seed=settings["seed"])
        templates[name] = summaries[name].row(distinguisher)
    result = {"source": source, "snapshot": snapshot, "templates": templates}
    write_json(out_path, result)
    return result


def _source_texts(wanted: list[tuple[str, int, int]]) -> dict[tuple[str, int, int], str]:
    """The source text each (source docs file, row, characters given to the generator) names."""
    by_file: dict[str, dict[int, list[tuple[str, int, int]]]] = {}
    for where in wanted:
        by_file.setdefault(where[0], {}).setdefault(where[1], []).append(where)
    texts = {}
    for path, rows in by_file.items():
        for row, doc in enumerate(read_jsonl_zst(path)):
            for where in rows.get(row, []):
                texts[where] = doc["text"][:where[2]]
    return texts
