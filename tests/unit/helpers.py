"""Small real inputs for the tokenize and shard tests, built from the bundled sample."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from tests.conftest import lingua_records
from tokenmill.config import schema_defaults, schema_settings
from tokenmill.extract.part import extract_part
from tokenmill.extract.records import PartInfo
from tokenmill.io import read_jsonl_zst, write_parquet
from tokenmill.select.judge import SCHEMA as SELECT_SCHEMA
from tokenmill.shards.validation import ValidationLimits
from tokenmill.shards.writer import TokenizedPart
from tokenmill.tokenize import selected_texts, tokenize_part, train_bpe

# the `extract` section and a JSONL source's `fields`, as the schema's defaults make them
EXTRACT_SETTINGS = {**schema_defaults("extract"), "fields": schema_defaults("sources.source.fields")}

SHARD_LIMITS = schema_settings(ValidationLimits, "shards.validation")


def write_selection(out_path: Path, doc_ids: list[str], texts: list[str], lang: str) -> None:
    """A select table (select's own schema) that keeps every document unchanged, so that
    tokenize and write_shards are tested on their own."""
    n = len(texts)
    columns = {"row": list(range(n)), "doc_id": doc_ids,
               "selected": [True] * n, "reason": [""] * n, "lang": [lang] * n, "lang_conf": [1.0] * n,
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
