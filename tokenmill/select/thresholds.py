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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tokenmill.io import json_text, read_parquet, read_part_rows, write_json

SKETCH_POINTS = 1001
SCORES = ("fasttext", "encoder", "ensemble")
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


def document_values(entry: dict, fasttext: np.ndarray, encoder: np.ndarray, score: str) -> np.ndarray:
    if score == "fasttext":
        return np.asarray(fasttext, dtype=np.float64)
    if score == "encoder":
        return np.asarray(encoder, dtype=np.float64)
    return (percentile(entry["sketches"]["fasttext"], fasttext) + percentile(entry["sketches"]["encoder"], encoder)) / 2


def score_files(plan_rows: list[dict]) -> list[tuple[str, str, str, str]]:
    """(part, langid, quality_fasttext, quality_encoder chunk) files of every part of plan rows."""
    return [(row["part"], row["langid"], row["quality_fasttext"], row["quality_encoder"]) for row in plan_rows]


def part_scores(row: tuple[str, str, str, str]) -> tuple[np.ndarray, list[str], np.ndarray, np.ndarray]:
    """(language code, languages, fastText score, encoder score) of each of one part's documents:
    a document's language is languages[code] (row: part, langid, quality_fasttext, quality_encoder
    chunk)."""
    part, langid_path, quality_path, encoder_path = row
    coded = pc.dictionary_encode(read_parquet(langid_path, ["lang"]).column("lang").combine_chunks())
    codes = coded.indices.to_numpy(zero_copy_only=False)
    fasttext = read_parquet(quality_path, ["quality_fasttext"]).column("quality_fasttext").to_numpy()
    encoder = read_part_rows(encoder_path, part, ["quality_encoder"]).column("quality_encoder").to_numpy()
    if not len(codes) == len(fasttext) == len(encoder):
        raise ValueError(f"part {part}: {len(codes)} languages, {len(fasttext)} fastText and {len(encoder)} encoder "
                         "scores; score the part again (snakemake --forcerun score)")
    for name, scores in (("fastText", fasttext), ("encoder", encoder)):
        bad = np.flatnonzero(~((scores >= 0) & (scores <= 1)))
        if len(bad):
            raise ValueError(f"part {part}: the {name} score of row {bad[0]} is {scores[bad[0]]}, not a number in "
                             "[0, 1]; score the part again (snakemake --forcerun score)")
    return codes, coded.dictionary.to_pylist(), fasttext, encoder


def language_rows(codes: np.ndarray, names: list[str]) -> dict[str, np.ndarray]:
    """The rows of each language present, ascending."""
    by_code = np.argsort(codes, kind="stable")
    ends = np.cumsum(np.bincount(codes, minlength=len(names)))
    return {name: by_code[end - count:end] for name, end, count in zip(names, ends, np.diff(ends, prepend=0)) if count}


def _part_values(row: tuple[str, str, str, str], languages: dict | None, score: str | None
                 ) -> list[tuple[str, str, np.ndarray]]:
    """(measure, group, values) of one part's documents: without `languages`, its fastText and
    encoder scores under each document's language and under "*"; with them, `score`'s values
    under "*" and under each of `languages` (each by its own entry's sketches)."""
    codes, names, fasttext, encoder = part_scores(row)
    by_language = language_rows(codes, names)
    if languages is None:
        return [(measure, group, values if rows is None else values[rows])
                for measure, values in (("fasttext", fasttext), ("encoder", encoder))
                for group, rows in ((ALL_LANGUAGES, None), *by_language.items())]
    return [(score, ALL_LANGUAGES, document_values(languages[ALL_LANGUAGES], fasttext, encoder, score)),
            *((score, lang, document_values(languages[lang], fasttext[rows], encoder[rows], score))
              for lang, rows in by_language.items() if lang in languages)]


def _count(rows: list[tuple[str, str, str, str]], languages: dict | None, score: str | None
           ) -> dict[str, ValueCounts]:
    """Each measure's values of `rows`' parts (_part_values), counted per group."""
    counts: dict[str, ValueCounts] = {}
    for row in rows:
        for measure, group, values in _part_values(row, languages, score):
            counts.setdefault(measure, ValueCounts()).add(group, values)
    return {measure: measured.merged() for measure, measured in counts.items()}


def _collect(rows: list[tuple[str, str, str, str]], languages: dict | None, score: str | None,
             wanted: dict[tuple[str, str], np.ndarray]) -> dict[tuple[str, str], list[np.ndarray]]:
    """The values of `rows`' parts in each (measure, group)'s wanted steps."""
    collected: dict[tuple[str, str], list[np.ndarray]] = {}
    for row in rows:
        for measure, group, values in _part_values(row, languages, score):
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


def _over_parts(workers: _Workers, task, rows: list[tuple[str, str, str, str]],
                *arguments) -> list:
    """`task(parts, *arguments)` on shares of `rows`, each in one of the workers (every n-th part
    to each), or on all of them here without a pool: what each share gave."""
    pool, shares = workers
    if pool is None:
        return [task(rows, *arguments)]
    return list(pool.map(task, [rows[start::shares] for start in range(shares)],
                         *([argument] * shares for argument in arguments)))


def _counted(workers: _Workers, rows: list[tuple[str, str, str, str]], languages: dict | None, score: str | None
             ) -> dict[str, ValueCounts]:
    """Each measure's values of every part (_part_values), counted per group in one read of the
    parts. Counts add up the same in any order: the same for any number of workers."""
    counts: dict[str, ValueCounts] = {}
    for share in _over_parts(workers, _count, rows, languages, score):
        for measure, measured in share.items():
            counts.setdefault(measure, ValueCounts()).absorb(measured)
    return counts


def _collected(workers: _Workers, rows: list[tuple[str, str, str, str]], languages: dict | None, score: str | None,
               counts: dict[str, ValueCounts], points: dict[tuple[str, str], np.ndarray]
               ) -> dict[tuple[str, str], np.ndarray]:
    """Each (measure, group)'s values that its quantiles at `points` need (ValueCounts.quantiles),
    in a second read of the parts."""
    wanted = {key: counts[key[0]].wanted_steps(key[1], at) for key, at in points.items() if key[0] in counts}
    pieces: dict[tuple[str, str], list[np.ndarray]] = {}
    for share in _over_parts(workers, _collect, rows, languages, score, wanted):
        for key, found in share.items():
            pieces.setdefault(key, []).extend(found)
    return {key: np.concatenate(pieces[key]) if key in pieces else np.zeros(0) for key in points}


def by_language(rows: list[tuple[str, str, str, str]], min_language_docs: int, score: str,
                points: list[float], workers: int = 1) -> dict:
    """Per language with at least `min_language_docs` documents, and for all languages together
    ("*"): its documents, its fastText and encoder sketches, and `points`' quantiles of its
    values of `score` ("values"), each np.quantile's over the snapshot's documents to the last
    bit. rows: (part, langid, quality_fasttext, quality_encoder chunk) files of every part, read
    by up to `workers` processes, one part at a time."""
    with _workers(workers, rows) as processes:
        return _by_language(processes, rows, min_language_docs, score, points)


def _by_language(workers: _Workers, rows: list[tuple[str, str, str, str]], min_language_docs: int,
                 score: str, points: list[float]) -> dict:
    counts = _counted(workers, rows, None, None)
    scores = counts.get("fasttext", ValueCounts())
    chosen = [ALL_LANGUAGES, *(lang for lang in scores.groups()
                               if lang != ALL_LANGUAGES and scores.documents(lang) >= min_language_docs)]
    cut_points = np.asarray(points, dtype=np.float64)
    sketch_points = {(measure, lang): np.concatenate([_GRID, cut_points if score == measure else []])
                     for measure in ("fasttext", "encoder") for lang in chosen}
    collected = _collected(workers, rows, None, None, counts, sketch_points)

    def quantiles(measure: str, lang: str, at: np.ndarray, values: np.ndarray) -> list[float]:
        return [float(v) for v in (counts[measure].quantiles(lang, at, values) if measure in counts
                                   else np.zeros(len(at)))]

    languages = {lang: {"documents": scores.documents(lang), "sketches": {
        measure: [round(v, 7) for v in quantiles(measure, lang, _GRID, collected[measure, lang])]
        for measure in ("fasttext", "encoder")}} for lang in chosen}
    if score == "ensemble" and len(cut_points):
        counts = _counted(workers, rows, languages, score)
        collected = _collected(workers, rows, languages, score, counts,
                               {(score, lang): cut_points for lang in chosen})
    for lang, entry in languages.items():
        # a cut over the values as float64 (document_values), a sketch over the scores as read
        entry["values"] = quantiles(score, lang, cut_points, collected[score, lang].astype(np.float64)) \
            if len(cut_points) else []
    return languages


def build_thresholds(rows: list[tuple[str, str, str, str]], policy: dict, out_path: str, workers: int = 1) -> dict:
    """rows: (part, langid, score_quality, score_quality_encoder chunk) files of every part, read
    by up to `workers` processes (the same thresholds for any number)."""
    keep = policy["keep_top"]
    points = [] if keep is None else [1 - keep, max(0.0, 1 - keep - policy["mid_band"])]
    languages = by_language(rows, policy["min_language_docs"], policy["score"], points, workers)
    for entry in languages.values():
        values = entry.pop("values")
        if values:
            entry["cut"], entry["mid_floor"] = values
    thresholds = _thresholds_file(policy, languages)
    write_json(out_path, thresholds)
    return thresholds


def _thresholds_file(policy: dict, languages: dict) -> dict:
    return {"score": policy["score"], "keep_top": policy["keep_top"], "mid_band": policy["mid_band"],
            "mid_keep": policy["mid_keep"], "languages": languages}


def largest_file_bytes(languages: int, policy: dict) -> int:
    """The most bytes build_thresholds writes for a snapshot, however many its documents: an entry
    for each of `languages` and one for all of them, each two sketches of SKETCH_POINTS scores in
    [0, 1] at 7 decimals (written as the widest, 0.1234567) and its cut points as float64."""
    widest_sketch = [0.1234567] * SKETCH_POINTS
    entry = {"documents": 10**19, "sketches": {"fasttext": widest_sketch, "encoder": widest_sketch},
             "cut": 1.2345678901234567e-05, "mid_floor": 1.2345678901234567e-05}
    return len(json_text(_thresholds_file(policy, {f"{index:03d}": entry for index in range(languages + 1)})).encode())


def language_entry(thresholds: dict, lang: str) -> dict:
    return thresholds["languages"].get(lang) or thresholds["languages"][ALL_LANGUAGES]


def language_values(thresholds: dict, langs: list[str], fasttext: np.ndarray, encoder: np.ndarray) -> np.ndarray:
    """Each document's value of the thresholds' score, under the entry of its language."""
    values = np.zeros(len(langs))
    coded = pc.dictionary_encode(pa.array(langs, pa.string()))
    for lang, rows in language_rows(coded.indices.to_numpy(zero_copy_only=False), coded.dictionary.to_pylist()).items():
        values[rows] = document_values(language_entry(thresholds, lang), fasttext[rows], encoder[rows],
                                       thresholds["score"])
    return values
