"""select_thresholds: per-language quality cut-offs ("keep the top 35 % of each language").

A cut-off needs the score distribution of many documents, so it is computed per dataset version
and snapshot from the scores of every part of the snapshot (so that a new snapshot moves no cut
of an older one) and written as JSON that each part's `judge` reads.
Scores are summarised per language as quantile sketches; the ensemble score of a document
is the mean of its percentile ranks under the fastText and encoder sketches of its
language. Languages with fewer than `min_language_docs` documents use the cut-offs of all
languages together ("*").

The parts are read one at a time, never held together (a Common Crawl snapshot's billions of
scores fit no process as arrays): each score is counted per step of 1e-7, then the values in the
few steps that hold the order statistics a quantile needs are collected in a second read, which
gives np.quantile's result to the last bit. Memory is bounded by the distinct steps a language
holds (at most 10^7 per score), not by the snapshot's documents. The ensemble's cut needs the
sketches first, so its values are counted and collected in two more reads. Worker processes
share the parts; counts add up the same in any order, so any number of them writes the same bytes.
"""

from __future__ import annotations

import contextlib
import multiprocessing
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tokenmill.io import json_text, read_parquet, read_part_rows, write_json

SKETCH_POINTS = 1001
SCORES = ("naturalness", "fasttext", "encoder", "ensemble")
# what each part's documents are counted by: the scores select may cut on, and the language confidence
MEASURES = ("fasttext", "encoder", "naturalness", "lang_conf")
ALL_LANGUAGES = "*"
STEPS_PER_UNIT = 10**7
_GRID = np.linspace(0.0, 1.0, SKETCH_POINTS)
# pending counts are merged once they outgrow the merged ones (or this many), so that merging
# stays a small multiple of the values read
_MERGE_ROWS = 1 << 20


def _steps(values: np.ndarray) -> np.ndarray:
    """Each value's step, taken down."""
    return np.floor(np.asarray(values, dtype=np.float64) * STEPS_PER_UNIT).astype(np.int64)


def _lerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """numpy's quantile interpolation (numpy.lib._function_base_impl._lerp), so that a quantile of
    counted values is the one np.quantile gives over the same values spelled out."""
    diff = b - a
    return np.where(t >= 0.5, b - diff * (1 - t), a + diff * t)


class ValueCounts:
    """How many documents have each value, in steps of 1/STEPS_PER_UNIT, per group (a language)."""

    def __init__(self):
        self._merged: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._pending: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
        self._pending_rows: Counter = Counter()

    def add(self, group: str, values: np.ndarray) -> None:
        steps, counts = np.unique(_steps(values), return_counts=True)
        self._append(group, steps, counts)

    def _append(self, group: str, steps: np.ndarray, counts: np.ndarray) -> None:
        if not len(steps):
            return
        self._pending.setdefault(group, []).append((steps, counts))
        self._pending_rows[group] += len(steps)
        merged = len(self._merged.get(group, ((),))[0])
        if self._pending_rows[group] > max(merged, _MERGE_ROWS):
            self._merge(group)

    def _merge(self, group: str) -> tuple[np.ndarray, np.ndarray]:
        if not self._pending.get(group) and group in self._merged:
            return self._merged[group]
        pieces = [*([self._merged[group]] if group in self._merged else []), *self._pending.pop(group, [])]
        self._pending_rows[group] = 0
        if not pieces:
            return np.zeros(0, np.int64), np.zeros(0, np.int64)
        steps = np.concatenate([piece[0] for piece in pieces])
        counts = np.concatenate([piece[1] for piece in pieces])
        order = np.argsort(steps, kind="stable")
        steps, counts = steps[order], counts[order]
        starts = np.flatnonzero(np.concatenate([[True], steps[1:] != steps[:-1]]))
        self._merged[group] = (steps[starts], np.add.reduceat(counts, starts))
        return self._merged[group]

    def documents(self, group: str) -> int:
        return int(self._merge(group)[1].sum())

    def _order(self, group: str, points: np.ndarray):
        """The group's steps, their counts, the documents up to each, and the order statistics
        (below, above) that np.quantile interpolates between at `points`, with its weight."""
        steps, counts = self._merge(group)
        ends = np.cumsum(counts)
        last = int(ends[-1]) - 1
        virtual = last * np.asarray(points, dtype=np.float64)
        below = np.minimum(np.floor(virtual), last).astype(np.int64)
        return steps, counts, ends, below, np.minimum(below + 1, last), virtual - below

    def wanted_steps(self, group: str, points: np.ndarray) -> np.ndarray:
        """The steps that hold the values the quantiles at `points` need (few: a sketch's 1001 points
        need at most 2002 of a language's up to 10^7 steps)."""
        if not self.documents(group):
            return np.zeros(0, np.int64)
        steps, _, ends, below, above, _ = self._order(group, points)
        return np.unique(steps[np.searchsorted(ends, np.concatenate([below, above]), side="right")])

    def quantiles(self, group: str, points: np.ndarray, collected: np.ndarray) -> np.ndarray:
        """np.quantile (linear) of the group's values at `points`, to the last bit: the order
        statistics it needs are found among `collected`, every value of the group in its
        wanted_steps (in any order, of the dtype np.quantile would see); zeros for no values."""
        if not self.documents(group):
            return np.zeros(len(points))
        steps, counts, ends, below, above, weight = self._order(group, points)
        values = np.sort(collected)
        value_steps = _steps(values)

        def order_statistic(rank: np.ndarray) -> np.ndarray:
            index = np.searchsorted(ends, rank, side="right")  # the step that holds the rank-th value
            first = np.searchsorted(value_steps, steps[index])
            if np.any(np.searchsorted(value_steps, steps[index], side="right") - first != counts[index]):
                raise RuntimeError(f"language {group!r}: the scores changed between two reads of the parts")
            return values[first + rank - (ends[index] - counts[index])]

        return _lerp(order_statistic(below), order_statistic(above), weight)

    def absorb(self, other: "ValueCounts") -> None:
        """Add `other`'s counts (another process's parts) to these."""
        for group in other.groups():
            self._append(group, *other._merge(group))

    def merged(self) -> "ValueCounts":
        """These counts with nothing pending (what a worker process hands back)."""
        for group in self.groups():
            self._merge(group)
        return self

    def groups(self) -> list[str]:
        return sorted({*self._merged, *self._pending})


def percentile(sketch_values: list[float], values: np.ndarray) -> np.ndarray:
    """Percentile rank (0..1) of each value under a sketch."""
    points = np.asarray(sketch_values, dtype=np.float64)
    # ties in the sketch (many equal scores) would make interp pick an arbitrary point of the tie
    unique, first = np.unique(points, return_index=True)
    last = np.concatenate([first[1:] - 1, [len(points) - 1]])
    ranks = (_GRID[first] + _GRID[last]) / 2
    return np.interp(np.asarray(values, dtype=np.float64), unique, ranks) if len(unique) > 1 else np.full(len(values), 0.5)


def document_values(entry: dict, scores: dict[str, np.ndarray], score: str) -> np.ndarray:
    """Documents' values of `score` (fasttext, encoder, naturalness, or ensemble: the mean of the
    fastText and encoder percentile ranks under `entry`'s sketches); `scores`: name -> values."""
    if score != "ensemble":
        return np.asarray(scores[score], dtype=np.float64)
    return (percentile(entry["sketches"]["fasttext"], scores["fasttext"])
            + percentile(entry["sketches"]["encoder"], scores["encoder"])) / 2


class ScoreFiles(NamedTuple):
    """The files of one part that select_thresholds reads."""
    part: str
    langid: str
    quality_fasttext: str
    quality_encoder: str  # the chunk file of several parts
    quality_naturalness: str
    heuristics: str


def score_files(plan_rows: list[dict]) -> list[ScoreFiles]:
    """The ScoreFiles of every part of plan rows."""
    return [ScoreFiles(*(row[name] for name in ScoreFiles._fields)) for row in plan_rows]


class PartScores(NamedTuple):
    codes: np.ndarray  # a document's language is names[code]
    names: list[str]
    scores: dict[str, np.ndarray]  # MEASURES -> one value per document
    words: np.ndarray  # the heuristics' word_count: what a language's tokens are estimated from


def part_scores(row: ScoreFiles) -> PartScores:
    """The languages, scores and words of one part's documents."""
    langid = read_parquet(row.langid, ["lang", "lang_conf"])
    coded = pc.dictionary_encode(langid.column("lang").combine_chunks())
    codes = coded.indices.to_numpy(zero_copy_only=False)
    scores = {"fasttext": read_parquet(row.quality_fasttext, ["quality_fasttext"]).column("quality_fasttext").to_numpy(),
              "encoder": read_part_rows(row.quality_encoder, row.part, ["quality_encoder"]).column(
                  "quality_encoder").to_numpy(),
              "naturalness": read_parquet(row.quality_naturalness, ["quality_naturalness"]).column(
                  "quality_naturalness").to_numpy(),
              "lang_conf": langid.column("lang_conf").to_numpy()}
    words = read_parquet(row.heuristics, ["word_count"]).column("word_count").to_numpy()
    for name, values in {**scores, "heuristics": words}.items():
        if len(values) != len(codes):
            raise ValueError(f"part {row.part}: {len(codes)} languages and {len(values)} {name} values; score the "
                             "part again (snakemake --forcerun score)")
    for name, values in scores.items():
        bad = np.flatnonzero(~((values >= 0) & (values <= 1)))
        if len(bad):
            raise ValueError(f"part {row.part}: the {name} score of row {bad[0]} is {values[bad[0]]}, not a number "
                             "in [0, 1]; score the part again (snakemake --forcerun score)")
    return PartScores(codes, coded.dictionary.to_pylist(), scores, words)


def language_rows(codes: np.ndarray, names: list[str]) -> dict[str, np.ndarray]:
    """The rows of each language present, ascending."""
    by_code = np.argsort(codes, kind="stable")
    ends = np.cumsum(np.bincount(codes, minlength=len(names)))
    return {name: by_code[end - count:end] for name, end, count in zip(names, ends, np.diff(ends, prepend=0)) if count}


def valid_for(valid: dict, measure: str, lang: str) -> bool:
    """Whether `measure` may judge `lang` (`valid`: measure -> its languages, None for every one;
    the ensemble where both classifiers may)."""
    if measure == "ensemble":
        return valid_for(valid, "fasttext", lang) and valid_for(valid, "encoder", lang)
    languages = valid.get(measure)
    return languages is None or lang in languages


def _all_rows(by_language: dict[str, np.ndarray], valid: dict, measure: str) -> np.ndarray:
    """The rows of the languages `measure` may judge: what "*" holds for it."""
    rows = [rows for lang, rows in by_language.items() if valid_for(valid, measure, lang)]
    return np.sort(np.concatenate(rows)) if rows else np.zeros(0, np.int64)


def _part_values(scores: PartScores, languages: dict | None, score: str | None, valid: dict
                 ) -> list[tuple[str, str, np.ndarray]]:
    """(measure, group, values) of one part's documents (its part_scores): without `languages`, each
    of MEASURES under each document's language and under "*" (of the languages the measure may
    judge); with them, `score`'s values under "*" and under each of `languages` it may judge (each
    by its own entry's sketches)."""
    by_language = language_rows(scores.codes, scores.names)
    if languages is None:
        return [(measure, group, values if rows is None else values[rows])
                for measure, values in scores.scores.items()
                for group, rows in ((ALL_LANGUAGES, _all_rows(by_language, valid, measure)), *by_language.items())]
    everywhere = _all_rows(by_language, valid, score)
    chosen = {name: values[everywhere] for name, values in scores.scores.items()}
    return [(score, ALL_LANGUAGES, document_values(languages[ALL_LANGUAGES], chosen, score)),
            *((score, lang, document_values(languages[lang], {name: values[rows] for name, values in
                                                              scores.scores.items()}, score))
              for lang, rows in by_language.items()
              if "sketches" in languages.get(lang, {}) and valid_for(valid, score, lang))]


def _count(rows: list[ScoreFiles], languages: dict | None, score: str | None, valid: dict
           ) -> tuple[dict[str, ValueCounts], Counter]:
    """Each measure's values of `rows`' parts (_part_values), counted per group, and the words of
    each language (on the first read only)."""
    counts: dict[str, ValueCounts] = {}
    words: Counter = Counter()
    for row in rows:
        scores = part_scores(row)
        for measure, group, values in _part_values(scores, languages, score, valid):
            counts.setdefault(measure, ValueCounts()).add(group, values)
        if languages is None:
            for lang, lang_rows in language_rows(scores.codes, scores.names).items():
                words[lang] += int(scores.words[lang_rows].sum())
    return {measure: measured.merged() for measure, measured in counts.items()}, words


def _collect(rows: list[ScoreFiles], languages: dict | None, score: str | None, valid: dict,
             wanted: dict[tuple[str, str], np.ndarray]) -> dict[tuple[str, str], list[np.ndarray]]:
    """The values of `rows`' parts in each (measure, group)'s wanted steps."""
    collected: dict[tuple[str, str], list[np.ndarray]] = {}
    for row in rows:
        for measure, group, values in _part_values(part_scores(row), languages, score, valid):
            steps = wanted.get((measure, group))
            if steps is not None and len(steps):
                own = _steps(values)
                at = np.minimum(np.searchsorted(steps, own), len(steps) - 1)  # steps: ascending
                collected.setdefault((measure, group), []).append(values[steps[at] == own])
    return collected


_Workers = tuple[ProcessPoolExecutor | None, int]  # a pool and the shares of the parts it gets


@contextlib.contextmanager
def _workers(workers: int, rows: list):
    """Up to `workers` processes for the parts of `rows`: (pool, shares), or (None, 1) for one."""
    shares = max(1, min(workers, len(rows)))
    if shares == 1:
        yield None, 1
        return
    # each worker one CPU: pyarrow's own thread pool in every worker would oversubscribe the job's CPUs
    with ProcessPoolExecutor(shares, mp_context=multiprocessing.get_context("fork"),
                             initializer=pa.set_cpu_count, initargs=(1,)) as pool:
        yield pool, shares


def _over_parts(workers: _Workers, task, rows: list[ScoreFiles], *arguments) -> list:
    """`task(parts, *arguments)` on shares of `rows`, each in one of the workers (every n-th part
    to each), or on all of them here without a pool: what each share gave."""
    pool, shares = workers
    if pool is None:
        return [task(rows, *arguments)]
    return list(pool.map(task, [rows[start::shares] for start in range(shares)],
                         *([argument] * shares for argument in arguments)))


def _counted(workers: _Workers, rows: list[ScoreFiles], languages: dict | None, score: str | None, valid: dict
             ) -> tuple[dict[str, ValueCounts], Counter]:
    """Each measure's values of every part (_part_values), counted per group in one read of the
    parts, and each language's words. Counts add up the same in any order: the same for any number
    of workers."""
    counts: dict[str, ValueCounts] = {}
    words: Counter = Counter()
    for share, share_words in _over_parts(workers, _count, rows, languages, score, valid):
        for measure, measured in share.items():
            counts.setdefault(measure, ValueCounts()).absorb(measured)
        words.update(share_words)
    return counts, words


def _collected(workers: _Workers, rows: list[ScoreFiles], languages: dict | None, score: str | None, valid: dict,
               counts: dict[str, ValueCounts], points: dict[tuple[str, str], np.ndarray]
               ) -> dict[tuple[str, str], np.ndarray]:
    """Each (measure, group)'s values that its quantiles at `points` need (ValueCounts.quantiles),
    in a second read of the parts."""
    wanted = {key: counts[key[0]].wanted_steps(key[1], at) for key, at in points.items() if key[0] in counts}
    pieces: dict[tuple[str, str], list[np.ndarray]] = {}
    for share in _over_parts(workers, _collect, rows, languages, score, valid, wanted):
        for key, found in share.items():
            pieces.setdefault(key, []).extend(found)
    return {key: np.concatenate(pieces[key]) if key in pieces else np.zeros(0) for key in points}


def by_language(rows: list[ScoreFiles], min_language_docs: int, score: str, points: list[float], workers: int = 1,
                valid: dict | None = None, lang_conf_point: float | None = None) -> dict:
    """Per language of the snapshot: its documents and words; per language with at least
    `min_language_docs` documents, and for all languages together ("*", of the languages each
    measure may judge): its fastText and encoder sketches, `points`' quantiles of its values of
    `score` ("values", where `score` may judge it, `valid`: measure -> languages, None every one),
    and the `lang_conf_point` quantile of its language confidence ("lang_conf_quantile"), each
    np.quantile's over the snapshot's documents to the last bit. rows: ScoreFiles of every part,
    read by up to `workers` processes, one part at a time."""
    with _workers(workers, rows) as processes:
        return _by_language(processes, rows, min_language_docs, score, points, valid or {}, lang_conf_point)


def _by_language(workers: _Workers, rows: list[ScoreFiles], min_language_docs: int, score: str,
                 points: list[float], valid: dict, lang_conf_point: float | None) -> dict:
    counts, words = _counted(workers, rows, None, None, valid)
    confidence = counts.get("lang_conf", ValueCounts())
    present = [lang for lang in confidence.groups() if lang != ALL_LANGUAGES]
    chosen = [ALL_LANGUAGES, *(lang for lang in present if confidence.documents(lang) >= min_language_docs)]
    cut_points = np.asarray(points, dtype=np.float64)
    judged = {lang: (lang == ALL_LANGUAGES or valid_for(valid, score, lang)) and len(cut_points) for lang in chosen}
    wanted = {(measure, lang): np.concatenate([_GRID, cut_points if score == measure and judged[lang] else []])
              for measure in ("fasttext", "encoder") for lang in chosen}
    wanted.update({("naturalness", lang): cut_points for lang in chosen if score == "naturalness" and judged[lang]})
    if lang_conf_point is not None:
        wanted.update({("lang_conf", lang): np.array([lang_conf_point]) for lang in chosen if lang != ALL_LANGUAGES})
    collected = _collected(workers, rows, None, None, valid, counts, wanted)

    def quantiles(measure: str, lang: str, at: np.ndarray, values: np.ndarray) -> list[float]:
        return [float(v) for v in (counts[measure].quantiles(lang, at, values) if measure in counts
                                   and counts[measure].documents(lang) else np.zeros(len(at)))]

    languages = {lang: {"documents": confidence.documents(lang), "words": words[lang]} for lang in present}
    languages[ALL_LANGUAGES] = {"documents": confidence.documents(ALL_LANGUAGES), "words": sum(words.values())}
    for lang in chosen:
        languages[lang]["sketches"] = {measure: [round(v, 7) for v in quantiles(measure, lang, _GRID,
                                                                                collected[measure, lang])]
                                       for measure in ("fasttext", "encoder")}
        if lang_conf_point is not None and lang != ALL_LANGUAGES:
            languages[lang]["lang_conf_quantile"] = quantiles("lang_conf", lang, np.array([lang_conf_point]),
                                                              collected["lang_conf", lang])[0]
    if score == "ensemble" and len(cut_points):
        counts, _ = _counted(workers, rows, languages, score, valid)
        collected = _collected(workers, rows, languages, score, valid, counts,
                               {(score, lang): cut_points for lang in chosen if judged[lang]})
    for lang in chosen:
        # a cut over the values as float64 (document_values), a sketch over the scores as read
        languages[lang]["values"] = quantiles(score, lang, cut_points, collected[score, lang].astype(np.float64)) \
            if judged[lang] else []
    return {lang: languages[lang] for lang in sorted(languages, key=lambda lang: (lang != ALL_LANGUAGES, lang))}


# Estimated tokens of a word (of the language's segmenter): about 1.3 for byte-level BPE tokenizers
# of 32-64k vocabularies on English and Chinese web text alike (a jieba word is 1.8 characters)
TOKENS_PER_WORD = 1.3


def language_tier(tokens: float, tiers: dict) -> str:
    """high, medium or low by the language's estimated tokens in the snapshot (select.tiers.min_tokens)."""
    minimum = tiers["min_tokens"]
    return "high" if tokens >= minimum["high"] else "medium" if tokens >= minimum["medium"] else "low"


def lang_conf_threshold(quantile: float, policy: dict) -> float:
    """The confidence a language needs, from its quantile-th confidence in the snapshot
    (select.lang_conf_per_language): no higher than min_lang_conf, no lower than the floor."""
    return round(min(policy["min_lang_conf"], max(policy["lang_conf_per_language"]["floor"], quantile)), 7)


def thresholds_policy(select: dict) -> dict:
    """What select_thresholds derives per language from the `select` section, and no more (a key
    judge alone reads, such as the tiers' policy, reruns judge, not select_thresholds): the quality
    cut (select.quality), the language-confidence thresholds, the tiers' sizes."""
    return {**select["quality"], "min_lang_conf": select["min_lang_conf"],
            "lang_conf_per_language": select["lang_conf_per_language"],
            "tiers": {"min_tokens": select["tiers"]["min_tokens"]}}


def build_thresholds(rows: list[ScoreFiles], policy: dict, out_path: str, workers: int = 1) -> dict:
    """The per-snapshot file judge reads: per language, its estimated tokens and tier
    (select.tiers), its language-confidence threshold (select.lang_conf_per_language) and its
    quality cut (select.quality, where its score may judge it: `policy["valid"]`). rows: ScoreFiles
    of every part, read by up to `workers` processes (the same thresholds for any number)."""
    keep = policy["keep_top"]
    points = [] if keep is None else [1 - keep, max(0.0, 1 - keep - policy["mid_band"])]
    per_language = policy["lang_conf_per_language"]
    languages = by_language(rows, policy["min_language_docs"], policy["score"], points, workers, policy["valid"],
                            per_language["quantile"])
    for lang, entry in languages.items():
        values = entry.pop("values", [])
        if values:
            entry["cut"], entry["mid_floor"] = values
        entry["tokens"] = round(entry["words"] * TOKENS_PER_WORD)
        if lang != ALL_LANGUAGES:
            entry["tier"] = language_tier(entry["tokens"], policy["tiers"])
        if "lang_conf_quantile" in entry:
            entry["lang_conf"] = lang_conf_threshold(entry.pop("lang_conf_quantile"), policy)
    thresholds = _thresholds_file(policy, languages)
    write_json(out_path, thresholds)
    return thresholds


def _thresholds_file(policy: dict, languages: dict) -> dict:
    return {"score": policy["score"], "keep_top": policy["keep_top"], "mid_band": policy["mid_band"],
            "mid_keep": policy["mid_keep"], "valid": policy["valid"], "languages": languages}


def largest_file_bytes(languages: int, policy: dict) -> int:
    """The most bytes build_thresholds writes for a snapshot, however many its documents: an entry
    for each of `languages` and one for all of them, each two sketches of SKETCH_POINTS scores in
    [0, 1] at 7 decimals (written as the widest, 0.1234567), its cut points as float64, its counts
    and language threshold."""
    widest_sketch = [0.1234567] * SKETCH_POINTS
    entry = {"documents": 10**19, "words": 10**19, "tokens": 10**19, "tier": "medium", "lang_conf": 0.1234567,
             "sketches": {"fasttext": widest_sketch, "encoder": widest_sketch},
             "cut": 1.2345678901234567e-05, "mid_floor": 1.2345678901234567e-05}
    widest_valid = {"fasttext": [f"{index:03d}" for index in range(languages)],
                    "encoder": [f"{index:03d}" for index in range(languages)], "naturalness": None}
    return len(json_text(_thresholds_file({**policy, "valid": widest_valid},
                                          {f"{index:03d}": entry for index in range(languages + 1)})).encode())


def language_entry(thresholds: dict, lang: str) -> dict:
    """The entry whose cut judges `lang`: its own where it has one, else that of all languages."""
    own = thresholds["languages"].get(lang)
    return own if own is not None and "sketches" in own else thresholds["languages"][ALL_LANGUAGES]


def language_values(thresholds: dict, langs: list[str], scores: dict[str, np.ndarray]) -> np.ndarray:
    """Each document's value of the thresholds' score, under the entry of its language (NaN where
    the score may not judge the language)."""
    values = np.full(len(langs), np.nan)
    coded = pc.dictionary_encode(pa.array(langs, pa.string()))
    for lang, rows in language_rows(coded.indices.to_numpy(zero_copy_only=False), coded.dictionary.to_pylist()).items():
        if valid_for(thresholds["valid"], thresholds["score"], lang):
            values[rows] = document_values(language_entry(thresholds, lang), {name: np.asarray(score)[rows] for name, score
                                                                             in scores.items()}, thresholds["score"])
    return values
