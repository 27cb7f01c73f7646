"""Fitting the naturalness model (tokenmill.quality.naturalness) on labelled excerpts, deterministically.

The labels (data/train/naturalness/hplt-dev.jsonl.gz, SOURCES.md there): HPLT v2 excerpts that native
speakers marked natural or unnatural ("mostly SEO word lists or boilerplate"). Each excerpt is two
500-character pieces of one document joined by a line of ten dots, which is read as a paragraph
break. Its language is the one langid gives it, as in the graph, so that each excerpt is measured
against the reference of the language the pipeline would judge it in.

The model: an L2-regularised logistic regression over model_inputs (standardised), fitted by full-batch
gradient descent for a fixed number of steps, each coefficient held to the sign naturalness.SIGNS
gives it. The same labels give the same model.json bytes. It records its validation:
leave-one-language-out AUC (fitted on the other labelled languages, scored on the one left out),
the transfer a language the model was not fitted on can expect.
"""

from __future__ import annotations

import gzip
import json
import os
from typing import NamedTuple

import numpy as np

from tokenmill.hashing import sha256_file
from tokenmill.io import write_json
from tokenmill.langid import bundled_model_path, model_sha256, predict
from tokenmill.languages import LanguageTable
from tokenmill.quality.naturalness import FEATURES, SIGNS, chunk_features, document_features, model_inputs

JOIN_LINE = "\n..........\n"
STEPS = 4000
LEARNING_RATE = 0.5
L2 = 1.0


def read_labels(path: str) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    for number, row in enumerate(rows, start=1):
        if not isinstance(row.get("unnatural"), bool) or not isinstance(row.get("text"), str):
            raise ValueError(f"{path}:{number}: needs `unnatural` (true or false) and `text`")
    return rows


class LabelledInputs(NamedTuple):
    """One row per chunk of each excerpt: its model_inputs, natural (1) or not (0), its weight (its
    share of its excerpt: each excerpt weighs one), its excerpt's labelled language and number."""
    inputs: np.ndarray
    natural: np.ndarray
    weights: np.ndarray
    languages: list[str]
    excerpts: np.ndarray


def labelled_inputs(rows: list[dict], table: LanguageTable) -> LabelledInputs:
    texts = [row["text"].replace(JOIN_LINE, "\n\n") for row in rows]
    langs, _ = predict(texts, bundled_model_path(), 2000)
    inputs, natural, weights, labelled, excerpts = [], [], [], [], []
    for number, (row, text, lang) in enumerate(zip(rows, texts, langs)):
        entry = table.entry(lang)
        features = document_features(text, lang, entry.stop_words) or [(len(text), chunk_features(text, lang, entry.stop_words))]
        total = max(1, sum(length for length, _ in features))
        for length, values in features:
            inputs.append(model_inputs(values, entry.reference))
            natural.append(0.0 if row["unnatural"] else 1.0)
            weights.append(length / total)
            labelled.append(row.get("lang", ""))
            excerpts.append(number)
    return LabelledInputs(np.array(inputs), np.array(natural), np.array(weights), labelled, np.array(excerpts))


def excerpt_scores(probabilities: np.ndarray, labelled: LabelledInputs) -> np.ndarray:
    """Each excerpt's naturalness from its chunks' probabilities, as naturalness() makes a document's:
    their mean by length, or its first chunk's where higher."""
    count = int(labelled.excerpts.max()) + 1 if len(labelled.excerpts) else 0
    mean = np.zeros(count)
    np.add.at(mean, labelled.excerpts, probabilities * labelled.weights)
    first = np.full(count, -1.0)
    starts = np.flatnonzero(np.r_[True, labelled.excerpts[1:] != labelled.excerpts[:-1]])
    first[labelled.excerpts[starts]] = probabilities[starts]
    return np.maximum(mean, first)


def fit(inputs: np.ndarray, natural: np.ndarray, weights: np.ndarray) -> dict:
    """Sign-constrained L2 logistic regression: mean, scale, coefficients, intercept."""
    mean = inputs.mean(axis=0)
    scale = inputs.std(axis=0)
    scale[scale == 0] = 1.0
    z = (inputs - mean) / scale
    signs = np.array([SIGNS[name] for name in FEATURES])
    coefficients, intercept = np.zeros(z.shape[1]), 0.0
    total = weights.sum()
    for _ in range(STEPS):
        error = (1.0 / (1.0 + np.exp(-(z @ coefficients + intercept))) - natural) * weights
        coefficients -= LEARNING_RATE * (z.T @ error / total + L2 * coefficients / len(natural))
        intercept -= LEARNING_RATE * error.sum() / total
        coefficients = np.where(signs > 0, np.maximum(coefficients, 0.0), np.minimum(coefficients, 0.0))
    return {"mean": [round(float(v), 9) for v in mean], "scale": [round(float(v), 9) for v in scale],
            "coefficients": [round(float(v), 9) for v in coefficients], "intercept": round(float(intercept), 9)}


def auc(scores: np.ndarray, positive: np.ndarray) -> float:
    """Area under the ROC curve: the chance a positive scores above a negative (ties half)."""
    order = np.argsort(scores, kind="stable")
    ranks = np.empty(len(scores))
    ranks[order] = np.arange(1, len(scores) + 1)
    for value in np.unique(scores):  # ties share their mean rank
        tied = scores == value
        ranks[tied] = ranks[tied].mean()
    positives = positive.astype(bool)
    n_pos, n_neg = positives.sum(), (~positives).sum()
    return float((ranks[positives].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)) if n_pos and n_neg else float("nan")


def fitted_probability(fitted: dict, inputs: np.ndarray) -> np.ndarray:
    z = (inputs - np.array(fitted["mean"])) / np.array(fitted["scale"])
    return 1.0 / (1.0 + np.exp(-(z @ np.array(fitted["coefficients"]) + fitted["intercept"])))


def train_naturalness(labels_path: str, table: LanguageTable, out_path: str) -> dict:
    rows = read_labels(labels_path)
    inputs, natural, weights, labelled, _ = labelled_inputs(rows, table)
    labelled = np.array(labelled)
    validation = {}
    for lang in sorted(set(labelled)):
        held_out = labelled == lang
        fitted = fit(inputs[~held_out], natural[~held_out], weights[~held_out])
        validation[str(lang)] = round(auc(fitted_probability(fitted, inputs[held_out]), natural[held_out]), 4)
    model = {
        "features": list(FEATURES),
        **fit(inputs, natural, weights),
        "trained_on": {"labels": os.path.basename(labels_path), "labels_sha256": sha256_file(labels_path),
                       "excerpts": len(rows), "unnatural": sum(row["unnatural"] for row in rows),
                       "languages": sorted(set(labelled.tolist())), "language_table_sha256": table.sha256,
                       "langid_sha256": model_sha256(bundled_model_path())},
        "validation": {"leave_one_language_out_auc": validation},
    }
    write_json(out_path, model)
    return model
