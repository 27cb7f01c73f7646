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
import pyarrow as pa
import pyarrow.compute as pc

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
    entry = score_entry(fasttext, encoder)
    if policy["keep_top"] is None:
        return entry
    values = document_values(entry, fasttext, encoder, policy["score"])
    keep = float(policy["keep_top"])
    entry["cut"] = float(np.quantile(values, 1 - keep)) if len(values) else 0.0
    entry["mid_floor"] = float(np.quantile(values, max(0.0, 1 - keep - policy["mid_band"]))) if len(values) else 0.0
    return entry


def score_entry(fasttext: np.ndarray, encoder: np.ndarray) -> dict:
    """A language's documents and its score sketches (what document_values needs)."""
    return {"documents": int(len(fasttext)), "sketches": {"fasttext": sketch(fasttext), "encoder": sketch(encoder)}}


def score_files(plan_rows: list[dict]) -> list[tuple[str, str, str, str]]:
    """(part, langid, quality_fasttext, quality_encoder chunk) files of every part of plan rows."""
    return [(row["part"], row["langid"], row["quality_fasttext"], row["quality_encoder"]) for row in plan_rows]


def read_scores(rows: list[tuple[str, str, str, str]]) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
    """(language code, languages, fastText score, encoder score) of every document of `rows`:
    (part, langid, quality_fasttext, quality_encoder chunk) files of every part, in order. A
    document's language is languages[code]: an integer per document, where a Python string each
    is tens of bytes and compares slowly (a Common Crawl snapshot has billions of documents)."""
    langs, fasttext, encoder = [], [], []
    for part, langid_path, quality_path, encoder_path in rows:
        langs.extend(read_parquet(langid_path, ["lang"]).column("lang").chunks)
        fasttext.append(read_parquet(quality_path, ["quality_fasttext"]).column("quality_fasttext").to_numpy())
        encoder.append(read_part_rows(encoder_path, part, ["quality_encoder"]).column("quality_encoder").to_numpy())
    coded = pc.dictionary_encode(pa.chunked_array(langs, pa.string())).combine_chunks()
    return (coded.indices.to_numpy(zero_copy_only=False), coded.dictionary.to_pylist(),
            np.concatenate(fasttext) if fasttext else np.zeros(0), np.concatenate(encoder) if encoder else np.zeros(0))


def by_language(rows: list[tuple[str, str, str, str]], min_language_docs: int, make_entry) -> dict:
    """`make_entry(fasttext, encoder)` over all of `rows`' documents ("*") and over each language
    with at least `min_language_docs` of them (its documents in their order)."""
    codes, names, fasttext, encoder = read_scores(rows)
    languages = {ALL_LANGUAGES: make_entry(fasttext, encoder)}
    by_code = np.argsort(codes, kind="stable")  # the rows of language 0, ascending, then of 1, ...
    counts = np.bincount(codes, minlength=len(names))
    ends = np.cumsum(counts)
    starts = ends - counts
    for code in sorted(range(len(names)), key=names.__getitem__):
        chosen = by_code[starts[code]:ends[code]]
        if len(chosen) >= min_language_docs:
            languages[names[code]] = make_entry(fasttext[chosen], encoder[chosen])
    return languages


def build_thresholds(rows: list[tuple[str, str, str, str]], policy: dict, out_path: str) -> dict:
    """rows: (part, langid, score_quality, score_quality_encoder chunk) files of every part."""
    languages = by_language(rows, policy["min_language_docs"], lambda ft, enc: _entry(ft, enc, policy))
    thresholds = {"score": policy["score"], "keep_top": policy["keep_top"], "mid_band": policy["mid_band"],
                  "mid_keep": policy["mid_keep"], "languages": languages}
    write_json(out_path, thresholds)
    return thresholds


def language_entry(thresholds: dict, lang: str) -> dict:
    return thresholds["languages"].get(lang) or thresholds["languages"][ALL_LANGUAGES]


def language_values(thresholds: dict, langs: list[str], fasttext: np.ndarray, encoder: np.ndarray) -> np.ndarray:
    """Each document's value of the thresholds' score, under the entry of its language."""
    values = np.zeros(len(langs))
    for lang in sorted(set(langs)):
        rows = [i for i, value in enumerate(langs) if value == lang]
        values[rows] = document_values(language_entry(thresholds, lang), fasttext[rows], encoder[rows],
                                       thresholds["score"])
    return values
