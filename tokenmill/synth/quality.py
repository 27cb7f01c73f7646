"""Quality control of generated text, measured against the documents it was generated from:
lexical diversity (moving-average type-token ratio, word n-gram entropy), grounding (the share
of the output's content words that its source holds), generation failures by reason, and a
real-vs-synthetic distinguisher whose AUC says how identifiable the synthetic text is."""

from __future__ import annotations

import math
import re
import tempfile
from collections import Counter
from pathlib import Path

import fasttext
import numpy as np

from tokenmill.hashing import hash64
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
    Returns the AUC of each fold and their mean: 0.5 when the two are indistinguishable, near
    1.0 when every synthetic text is recognised."""
    labelled = [(text, False) for text in real] + [(text, True) for text in synthetic]
    halves = [[item for item in labelled if hash64(item[0]) % 2 == side] for side in (0, 1)]
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
            folds.append(auc(scores, np.array([is_synthetic for _, is_synthetic in test])))
    return {"folds": folds, "auc": sum(folds) / len(folds), "real": len(real), "synthetic": len(synthetic)}
