"""score: every per-document signal of a part, from one read of its documents.

Language (fastText lid.176), MinHash signature, the Gopher, C4 and FineWeb heuristics, PII
spans, word-list toxicity, the fastText quality score and benchmark contamination, each to its
own side-car file. The main process reads the docs file once and hands batches of raw lines to
`workers` processes, each of which loads every scorer once; the batches' rows are joined in
document order, so every file has the same bytes for any number of workers and batch sizes.
"""

from __future__ import annotations

import collections
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Iterator

import fasttext
import pyarrow as pa

from tokenmill.decontaminate import (SCHEMA as DECONTAMINATION_SCHEMA, Index, contaminated_documents,
                                     contamination_summary, decontamination_rows)
from tokenmill.dedup.minhash import CodeBands, MinHashParams, Shingler, permutation_coefficients, signature_rows, signature_schema
from tokenmill.io import write_parquet
from tokenmill.langid import SCHEMA as LANGID_SCHEMA, langid_metadata, langid_rows, load_model as load_langid_model
from tokenmill.progress import Progress
from tokenmill.quality.fasttext import MAX_CHARS as QUALITY_MAX_CHARS, SCHEMA as QUALITY_SCHEMA, quality_rows
from tokenmill.quality.heuristics import SCHEMA as HEURISTICS_SCHEMA, heuristics_rows
from tokenmill.quality.pii import PII_SCHEMA, pii_rows
from tokenmill.quality.toxicity import TOXICITY_SCHEMA, load_wordlist, toxicity_metadata, toxicity_rows
from tokenmill.sidecar import DOCUMENTS_PER_BATCH, joined, numbered_batches, parse_document

# The side-car files of a part, by the names of their PATHS keys in rules/common.smk.
SIGNALS = ("langid", "signatures", "heuristics", "pii", "toxicity", "quality_fasttext", "decontaminate")
# Batches in flight per worker: enough that no worker waits for the reader, few enough that the
# text held at once is a few batches, not the part.
BATCHES_IN_FLIGHT = 2


@dataclass(frozen=True)
class ScoreSettings:
    langid_model: str
    langid_max_chars: int
    minhash: MinHashParams
    code_bands: CodeBands
    wordlist: str
    quality_model: str
    decontamination_index: str
    # a synthetic part: the decontamination table of the part it rewrites (contamination is inherited)
    derived_decontaminate: str | None

    def schemas(self) -> dict[str, pa.Schema]:
        return {"langid": LANGID_SCHEMA, "signatures": signature_schema(self.minhash),
                "heuristics": HEURISTICS_SCHEMA, "pii": PII_SCHEMA, "toxicity": TOXICITY_SCHEMA,
                "quality_fasttext": QUALITY_SCHEMA, "decontaminate": DECONTAMINATION_SCHEMA}

    def metadata(self) -> dict[str, dict[str, str]]:
        """The schema metadata of the files that record what produced them (the model, the word
        list, the MinHash parameters)."""
        return {"langid": langid_metadata(self.langid_model), "signatures": self.minhash.as_metadata(),
                "toxicity": toxicity_metadata(self.wordlist)}


class Scorers:
    """Every scorer, loaded once."""

    def __init__(self, settings: ScoreSettings):
        self.settings = settings
        load_langid_model(settings.langid_model)  # into the cache that langid.predict reads
        self.shingler = Shingler(settings.minhash.ngram)
        self.coefficients = permutation_coefficients(settings.minhash)
        self.words = load_wordlist(settings.wordlist)
        self.quality_model = fasttext.load_model(settings.quality_model)
        self.index = Index(settings.decontamination_index)
        self.inherited = contaminated_documents(settings.derived_decontaminate) \
            if settings.derived_decontaminate else None

    def rows(self, lines: list[str], first_row: int) -> dict[str, pa.Table]:
        """Every signal's rows for a batch of docs-file lines whose first is row `first_row` of its part."""
        docs = [parse_document(line) for line in lines]
        settings = self.settings
        return {
            "langid": langid_rows(docs, settings.langid_model, settings.langid_max_chars),
            "signatures": signature_rows(docs, settings.minhash, first_row, self.shingler, self.coefficients,
                                         settings.code_bands),
            "heuristics": heuristics_rows(docs),
            "pii": pii_rows(docs),
            "toxicity": toxicity_rows(docs, self.words),
            "quality_fasttext": quality_rows(docs, self.quality_model, QUALITY_MAX_CHARS),
            "decontaminate": decontamination_rows(docs, self.index, self.inherited),
        }


_worker_scorers: Scorers | None = None


def _use_scorers(scorers: Scorers) -> None:
    global _worker_scorers
    _worker_scorers = scorers


def _score_in_worker(lines: list[str], first_row: int) -> dict[str, pa.Table]:
    return _worker_scorers.rows(lines, first_row)


def scored_batches(docs_path: str, settings: ScoreSettings, workers: int,
                   batch_size: int = DOCUMENTS_PER_BATCH) -> Iterator[dict[str, pa.Table]]:
    """Every signal's rows, batch by batch in document order, scored by `workers` processes (one:
    in this process). A worker that dies or raises fails the part: that is not the input's fault."""
    scorers = Scorers(settings)
    batches = numbered_batches(docs_path, batch_size)
    if workers == 1:
        for lines, first_row in batches:
            yield scorers.rows(lines, first_row)
        return
    # Forked workers inherit the loaded scorers (never pickled): the models and the index are
    # loaded once, and their pages are shared by every worker until written, which they never are.
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork"), initializer=_use_scorers,
                             initargs=(scorers,)) as pool:
        pending = collections.deque()
        for lines, first_row in batches:
            pending.append(pool.submit(_score_in_worker, lines, first_row))
            if len(pending) >= BATCHES_IN_FLIGHT * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


def score_part(docs_path: str, outputs: dict[str, str], settings: ScoreSettings, workers: int = 1,
               batch_size: int = DOCUMENTS_PER_BATCH) -> dict:
    """Write every signal's file (`outputs`: a path per name in SIGNALS) for the documents of
    `docs_path`; return the documents scored and the contaminated ones."""
    if sorted(outputs) != sorted(SIGNALS):
        raise ValueError(f"score: outputs {sorted(outputs)}, expected one for each of {sorted(SIGNALS)}")
    if workers < 1:
        raise ValueError(f"score: workers must be at least 1, got {workers}")
    tables: dict[str, list[pa.Table]] = {signal: [] for signal in SIGNALS}
    progress = Progress("score")
    for batch in scored_batches(docs_path, settings, workers, batch_size):
        for signal in SIGNALS:
            tables[signal].append(batch[signal])
        progress.tick(batch["langid"].num_rows)
    progress.finish()
    schemas, metadata = settings.schemas(), settings.metadata()
    parts = {signal: joined(tables[signal], schemas[signal], metadata.get(signal)) for signal in SIGNALS}
    for signal in SIGNALS:
        write_parquet(outputs[signal], parts[signal])
    return contamination_summary(parts["decontaminate"])
