"""select_thresholds: per-language quality cut-offs ("keep the top 35 % of each language").

A cut-off needs the score distribution of many documents, so it is computed per dataset version
and snapshot from the scores of every part of the snapshot (so that a new snapshot moves no cut
of an older one) and written as JSON that each part's `judge` reads.
Scores are summarised per language as quantile sketches; the ensemble score of a document
is the mean of its percentile ranks under the fastText and encoder sketches of its
language. Languages with fewer than `min_language_docs` documents use the cut-offs of all
languages together ("*").
"""

from __future__ import annotations

import numpy as np

from tokenmill.io import read_parquet, read_part_rows, write_json

SKETCH_POINTS = 1001
SCORES = ("fasttext", "encoder", "ensemble")
ALL_LANGUAGES = "*"
_GRID = np.linspace(0.0, 1.0, SKETCH_POINTS)


def sketch(values: np.ndarray) -> list[float]:
    return [round(float(v), 7) for v in np.quantile(values, _GRID)] if len(values) else [0.0] * SKETCH_POINTS


def percentile(sketch_values: list[float], values: np.ndarray) -> np.ndarray:
    """Percentile rank (0..1) of each value under a sketch."""
    points = np.asarray(sketch_values, dtype=np.float64)
    # ties in the sketch (many equal scores) would make interp pick an arbitrary point of the tie
    unique, first = np.unique(points, return_index=True)
    last = np.concatenate([first[1:] - 1, [len(points) - 1]])
    ranks = (_GRID[first] + _GRID[last]) / 2
    return np.interp(np.asarray(values, dtype=np.float64), unique, ranks) if len(unique) > 1 else np.full(len(values), 0.5)


def document_values(entry: dict, fasttext: np.ndarray, encoder: np.ndarray, score: str) -> np.ndarray:
    if score == "fasttext":
        return np.asarray(fasttext, dtype=np.float64)
    if score == "encoder":
        return np.asarray(encoder, dtype=np.float64)
    return (percentile(entry["sketches"]["fasttext"], fasttext) + percentile(entry["sketches"]["encoder"], encoder)) / 2


def _entry(fasttext: np.ndarray, encoder: np.ndarray, policy: dict) -> dict:
    entry = {"documents": int(len(fasttext)), "sketches": {"fasttext": sketch(fasttext), "encoder": sketch(encoder)}}
    if policy["keep_top"] is None:
        return entry
    values = document_values(entry, fasttext, encoder, policy["score"])
    keep = float(policy["keep_top"])
    entry["cut"] = float(np.quantile(values, 1 - keep)) if len(values) else 0.0
    entry["mid_floor"] = float(np.quantile(values, max(0.0, 1 - keep - policy["mid_band"]))) if len(values) else 0.0
    return entry


def build_thresholds(rows: list[tuple[str, str, str, str]], policy: dict, out_path: str) -> dict:
    """rows: (part, langid, score_quality, score_quality_encoder chunk) files of every part."""
    langs, fasttext, encoder = [], [], []
    for part, langid_path, quality_path, encoder_path in rows:
        langs.extend(read_parquet(langid_path, ["lang"]).column("lang").to_pylist())
        fasttext.append(read_parquet(quality_path, ["quality_fasttext"]).column("quality_fasttext").to_numpy())
        encoder.append(read_part_rows(encoder_path, part, ["quality_encoder"]).column("quality_encoder").to_numpy())
    lang_array = np.asarray(langs, dtype=object)
    fasttext_all = np.concatenate(fasttext) if fasttext else np.zeros(0)
    encoder_all = np.concatenate(encoder) if encoder else np.zeros(0)
    languages = {ALL_LANGUAGES: _entry(fasttext_all, encoder_all, policy)}
    for lang in sorted(set(langs)):
        chosen = lang_array == lang
        if chosen.sum() >= policy["min_language_docs"]:
            languages[lang] = _entry(fasttext_all[chosen], encoder_all[chosen], policy)
    thresholds = {"score": policy["score"], "keep_top": policy["keep_top"], "mid_band": policy["mid_band"],
                  "mid_keep": policy["mid_keep"], "languages": languages}
    write_json(out_path, thresholds)
    return thresholds


def language_entry(thresholds: dict, lang: str) -> dict:
    return thresholds["languages"].get(lang) or thresholds["languages"][ALL_LANGUAGES]
