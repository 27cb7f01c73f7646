"""Small real inputs for the tokenize and shard tests, built from the bundled sample, and each
scorer's side-car file written on its own."""

from __future__ import annotations

import json
from pathlib import Path

import fasttext
import pyarrow as pa

from tests.conftest import lingua_records
from tokenmill.config import schema_defaults, schema_settings
from tokenmill.decontaminate import SCHEMA as DECONTAMINATION_SCHEMA, Index, contamination_summary, decontamination_rows
from tokenmill.dedup.minhash import MinHashParams, Shingler, permutation_coefficients, signature_rows, signature_schema
from tokenmill.extract.part import extract_part
from tokenmill.extract.records import PartInfo
from tokenmill.io import read_jsonl_zst, write_parquet
from tokenmill.langid import SCHEMA as LANGID_SCHEMA, bundled_model_path, langid_metadata, langid_rows
from tokenmill.languages import load_language_table
from tokenmill.quality.fasttext import MAX_CHARS as QUALITY_MAX_CHARS, SCHEMA as QUALITY_SCHEMA, quality_rows
from tokenmill.quality.heuristics import SCHEMA as HEURISTICS_SCHEMA, heuristics_rows
from tokenmill.quality.pii import PII_SCHEMA, pii_rows
from tokenmill.quality.naturalness import SCHEMA as NATURALNESS_SCHEMA, load_model as load_naturalness_model, \
    naturalness_metadata, naturalness_rows
from tokenmill.quality.toxicity import TOXICITY_SCHEMA, all_wordlists, load_wordlists, toxicity_metadata, toxicity_rows
from tokenmill.select.judge import SCHEMA as SELECT_SCHEMA
from tokenmill.sidecar import DOCUMENTS_PER_BATCH, joined, numbered_batches, parse_document
from tokenmill.shards.validation import ValidationLimits
from tokenmill.shards.writer import TokenizedPart
from tokenmill.tokenize import selected_texts, tokenize_part, train_bpe
from tokenmill.words import segmenter_metadata

# the `extract` section and a JSONL source's `fields`, as the schema's defaults make them
EXTRACT_SETTINGS = {**schema_defaults("extract"), "fields": schema_defaults("sources.source.fields")}
# the same with resiliparse, for tests that need real text but assert nothing of the engine's (MinHash,
# clustering, carving, a part's bookkeeping): a fifth of trafilatura's CPU on the sample's pages
RESILIPARSE_SETTINGS = {**EXTRACT_SETTINGS, "engine": "resiliparse"}
TRAFILATURA_SETTINGS = {**EXTRACT_SETTINGS, "engine": "trafilatura"}

SHARD_LIMITS = schema_settings(ValidationLimits, "shards.validation")


def write_selection(out_path: Path, doc_ids: list[str], texts: list[str], lang: str) -> None:
    """A select table (select's own schema) that keeps every document unchanged, so that
    tokenize and write_shards are tested on their own."""
    n = len(texts)
    columns = {"row": list(range(n)), "doc_id": doc_ids,
               "selected": [True] * n, "reason": [""] * n, "lang": [lang] * n, "lang_conf": [1.0] * n, "lang_tier": ["high"] * n,
               "quality": [None] * n, "quality_mid_kept": [False] * n, "drop_lines": [[]] * n, "scrub_spans": [[]] * n,
               "raw_bytes": [len(t.encode()) for t in texts], "chars": [len(t) for t in texts],
               "bytes": [len(t.encode()) for t in texts], "math_count": [0] * n, "kind": ["web"] * n}
    write_parquet(out_path, pa.Table.from_pydict(columns, schema=SELECT_SCHEMA))


def prepared_part(tmp: Path, lang: str) -> tuple[str, str]:
    """(docs, select) paths of one language's lingua documents, extracted, all selected."""
    docs, select = tmp / f"{lang}.docs.jsonl.zst", tmp / f"{lang}.select.parquet"
    source = tmp / f"lingua-{lang}.jsonl"
    source.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in lingua_records(lang)))
    extract_part(str(source), "jsonl", PartInfo("lingua", "s1", lang, "academic", "Apache-2.0"), EXTRACT_SETTINGS,
                 str(docs), str(tmp / f"{lang}.q.jsonl.zst"), str(tmp / f"{lang}.stats.json"))
    documents = list(read_jsonl_zst(docs))
    write_selection(select, [d["doc_id"] for d in documents], [d["text"] for d in documents], lang)
    return str(docs), str(select)


def tokenized_parts(tmp: Path, langs: list[str], seed: int) -> tuple[Path, list[TokenizedPart], dict]:
    """(tokenizer, one tokenized part per language, {lang: (docs, select)}): real lingua
    text, a BPE tokenizer of 3,000 tokens trained on it, tokenized with `seed`."""
    prepared = {lang: prepared_part(tmp, lang) for lang in langs}
    tokenizer = tmp / "tokenizer.json"
    train_bpe([d["text"] for docs, sel in prepared.values() for _, d in selected_texts(docs, sel)], 3000, 2,
              str(tokenizer))
    parts = []
    for lang, (docs, select) in prepared.items():
        out = tmp / f"{lang}.tokens.parquet"
        tokenize_part(docs, select, str(tokenizer), None, seed, str(out))
        parts.append(TokenizedPart("s1", lang, str(out), select))
    return tokenizer, parts, prepared


def flip_byte(path, offset: int) -> None:
    with open(path, "r+b") as handle:
        handle.seek(offset)
        value = handle.read(1)[0]
        handle.seek(offset)
        handle.write(bytes([value ^ 0xFF]))


# One signal's side-car file of a part, as the score job writes it among the others: the tests of
# each scorer write its file alone, and the score job's tests compare its files with these.

def write_signal(docs_path: str, out_path: str, rows, schema: pa.Schema, metadata: dict[str, str] | None = None,
                 batch_size: int = DOCUMENTS_PER_BATCH) -> pa.Table:
    """`rows(docs, first_row)` of every batch of documents of `docs_path`, joined and written."""
    tables = [rows([parse_document(line) for line in lines], first_row)
              for lines, first_row in numbered_batches(docs_path, batch_size)]
    table = joined(tables, schema, metadata)
    write_parquet(out_path, table)
    return table


def langid_part(docs_path: str, out_path: str, model_path: str, batch_size: int, max_chars: int) -> int:
    return write_signal(docs_path, out_path, lambda docs, _: langid_rows(docs, model_path, max_chars), LANGID_SCHEMA,
                        langid_metadata(model_path), batch_size).num_rows


def document_langs(docs: list[dict]) -> list[str]:
    """Each document's language as the score job gives it (the bundled lid.176, the schema's max_chars)."""
    return langid_rows(docs, bundled_model_path(), schema_defaults("langid")["max_chars"]).column("lang").to_pylist()


def signatures_part(docs_path: str, out_path: str, params: MinHashParams, batch_size: int = DOCUMENTS_PER_BATCH) -> int:
    shingler, coefficients = Shingler(params.ngram), permutation_coefficients(params)
    return write_signal(docs_path, out_path,
                        lambda docs, first_row: signature_rows(docs, params, first_row, shingler, coefficients,
                                                               langs=document_langs(docs)),
                        signature_schema(params), {**params.as_metadata(), **segmenter_metadata()}, batch_size).num_rows


def score_heuristics_part(docs_path: str, out_path: str) -> int:
    table = load_language_table()
    return write_signal(docs_path, out_path, lambda docs, _: heuristics_rows(docs, document_langs(docs), table),
                        HEURISTICS_SCHEMA, {**segmenter_metadata(), **table.metadata()}).num_rows


def naturalness_part(docs_path: str, out_path: str) -> int:
    model, table = load_naturalness_model(None), load_language_table()
    return write_signal(docs_path, out_path, lambda docs, _: naturalness_rows(docs, document_langs(docs), model, table),
                        NATURALNESS_SCHEMA, {**naturalness_metadata(model), **segmenter_metadata(),
                                             **table.metadata()}).num_rows


def pii_part(docs_path: str, out_path: str) -> int:
    return write_signal(docs_path, out_path, lambda docs, _: pii_rows(docs), PII_SCHEMA).num_rows


def toxicity_part(docs_path: str, out_path: str, wordlists: dict[str, str]) -> int:
    wordlists = all_wordlists(wordlists)  # the configured lists (configured_wordlists) and the bundled ones
    lists = load_wordlists(wordlists)
    return write_signal(docs_path, out_path, lambda docs, _: toxicity_rows(docs, document_langs(docs), lists),
                        TOXICITY_SCHEMA, {**toxicity_metadata(wordlists), **segmenter_metadata()}).num_rows


def score_quality_part(docs_path: str, model_path: str, out_path: str, max_chars: int = QUALITY_MAX_CHARS) -> int:
    model = fasttext.load_model(model_path)
    return write_signal(docs_path, out_path, lambda docs, _: quality_rows(docs, model, max_chars),
                        QUALITY_SCHEMA).num_rows


def decontaminate_part(docs_path: str, index_dir: str, out_path: str, batch: int = DOCUMENTS_PER_BATCH) -> dict:
    index = Index(index_dir)
    return contamination_summary(write_signal(docs_path, out_path, lambda docs, _: decontamination_rows(docs, index),
                                              DECONTAMINATION_SCHEMA, batch_size=batch))
