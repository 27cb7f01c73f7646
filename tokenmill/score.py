"""score: every per-document signal of a part, from one read of its documents.

Language (fastText lid.176), MinHash signature, the Gopher, C4, FineWeb and spam heuristics, PII
spans, word-list toxicity, the naturalness and fastText quality scores and benchmark contamination,
each to its own side-car file. The language comes first: every word-based signal reads a document's
words by its language's segmenter (tokenmill.words), and its stop words, reference text and word list
are its language's (tokenmill.languages). The main process reads the docs file once and hands batches of raw lines to
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
from tokenmill.languages import load_language_table
from tokenmill.quality.heuristics import SCHEMA as HEURISTICS_SCHEMA, heuristics_rows, read_documents
from tokenmill.quality.naturalness import SCHEMA as NATURALNESS_SCHEMA, load_model as load_naturalness_model, \
    naturalness_metadata, naturalness_rows
from tokenmill.quality.pii import PII_SCHEMA, pii_rows
from tokenmill.quality.toxicity import (TOXICITY_SCHEMA, all_wordlists, bundled_wordlists_version, load_wordlists,
                                       toxicity_metadata, toxicity_rows)
from tokenmill.sidecar import DOCUMENTS_PER_BATCH, joined, numbered_batches, parse_document
from tokenmill.words import segmenter_metadata, segmenter_versions

# The side-car files of a part, by the names of their PATHS keys in rules/common.smk.
SIGNALS = ("langid", "signatures", "heuristics", "pii", "toxicity", "quality_fasttext", "quality_naturalness",
           "decontaminate")
# Batches in flight per worker: enough that no worker waits for the reader, few enough that the
# text held at once is a few batches, not the part.
BATCHES_IN_FLIGHT = 2


def scoring_packages() -> dict[str, str]:
    """The installed packages whose data decides the scores besides the config's files: each word
    segmenter's and the bundled word lists' (the score rule's params: a new version reruns score)."""
    return {**segmenter_versions(), "wordlists": bundled_wordlists_version()}


@dataclass(frozen=True)
class ScoreSettings:
    langid_model: str
    langid_max_chars: int
    minhash: MinHashParams
    code_bands: CodeBands
    wordlists: dict[str, str]  # lid.176 code -> toxicity word list the config names (besides the bundled ones)
    language_table: str
    naturalness_model: str
    naturalness_sha256: str | None
    quality_model: str
    decontamination_index: str
    # a synthetic part: the decontamination table of the part it rewrites (contamination is inherited)
    derived_decontaminate: str | None

    def schemas(self) -> dict[str, pa.Schema]:
        return {"langid": LANGID_SCHEMA, "signatures": signature_schema(self.minhash),
                "heuristics": HEURISTICS_SCHEMA, "pii": PII_SCHEMA, "toxicity": TOXICITY_SCHEMA,
                "quality_fasttext": QUALITY_SCHEMA, "quality_naturalness": NATURALNESS_SCHEMA,
                "decontaminate": DECONTAMINATION_SCHEMA}

    def metadata(self) -> dict[str, dict[str, str]]:
        """The schema metadata of the files that record what produced them (the models, the word
        lists, the language table and segmenters, the MinHash parameters)."""
        segmenters, table = segmenter_metadata(), load_language_table(self.language_table).metadata()
        return {"langid": langid_metadata(self.langid_model),
                "signatures": {**self.minhash.as_metadata(), **segmenters},
                "heuristics": {**segmenters, **table},
                "toxicity": {**toxicity_metadata(all_wordlists(self.wordlists)), **segmenters},
                "quality_naturalness": {**naturalness_metadata(load_naturalness_model(self.naturalness_model,
                                                                                         self.naturalness_sha256)),
                                        **segmenters, **table}}


class Scorers:
    """Every scorer, loaded once."""

    def __init__(self, settings: ScoreSettings):
        self.settings = settings
        load_langid_model(settings.langid_model)  # into the cache that langid.predict reads
        self.shingler = Shingler(settings.minhash.ngram)
        self.coefficients = permutation_coefficients(settings.minhash)
        self.wordlists = load_wordlists(all_wordlists(settings.wordlists))
        self.languages = load_language_table(settings.language_table)
        self.naturalness = load_naturalness_model(settings.naturalness_model, settings.naturalness_sha256)
        self.quality_model = fasttext.load_model(settings.quality_model)
        self.index = Index(settings.decontamination_index)
        self.inherited = contaminated_documents(settings.derived_decontaminate) \
            if settings.derived_decontaminate else None

    def rows(self, lines: list[str], first_row: int) -> dict[str, pa.Table]:
        """Every signal's rows for a batch of docs-file lines whose first is row `first_row` of its part."""
        docs = [parse_document(line) for line in lines]
        settings = self.settings
        langid = langid_rows(docs, settings.langid_model, settings.langid_max_chars)
        langs = langid.column("lang").to_pylist()
        read = read_documents(docs, langs)
        return {
            "langid": langid,
            "signatures": signature_rows(docs, settings.minhash, first_row, self.shingler, self.coefficients,
                                         settings.code_bands, langs),
            "heuristics": heuristics_rows(docs, langs, self.languages, read),
            "pii": pii_rows(docs),
            "toxicity": toxicity_rows(docs, langs, self.wordlists, read),
            "quality_fasttext": quality_rows(docs, self.quality_model, QUALITY_MAX_CHARS),
            "quality_naturalness": naturalness_rows(docs, langs, self.naturalness, self.languages, read),
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
