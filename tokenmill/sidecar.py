"""Side-car tables: one row per document of a part, in document order, built batch by batch.

Every per-document signal is computed on a batch of documents at a time, and a part's file is
its batches' tables joined in document order: the same bytes whatever the batch size, and
whichever process scored which batch (`tokenmill.score` scores the batches of one part in
several processes).
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Callable, Iterable, Iterator

import pyarrow as pa

from tokenmill.io import read_lines_zst, write_parquet
from tokenmill.progress import Progress

# Documents scored at a time: the decontamination scan is vectorised over a batch, and a few
# batches per worker in flight keep every worker busy without holding a part's text in memory.
DOCUMENTS_PER_BATCH = 256

_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def parse_document(line: str) -> dict:
    """One line of a docs file. A lone surrogate (a JSON escape that extract never writes, but
    another writer may) becomes U+FFFD, one character for one, so that character offsets still
    hold: the scorers encode text as UTF-8, which has no lone surrogates."""
    doc = json.loads(line)
    if _ESCAPED_SURROGATE.search(line):
        doc = {key: _LONE_SURROGATE.sub("\ufffd", value) if isinstance(value, str) else value
               for key, value in doc.items()}
    return doc


def batches(items: Iterable, size: int) -> Iterator[list]:
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


def line_batches(docs_path: str, size: int) -> Iterator[list[str]]:
    """The raw lines of a docs file, `size` at a time (parsed by whoever scores them)."""
    return batches(read_lines_zst(docs_path), size)


def joined(tables: list[pa.Table], schema: pa.Schema, metadata: dict[str, str] | None = None) -> pa.Table:
    """The batches' tables as one table of one chunk, in order, with the file's metadata."""
    table = pa.concat_tables(tables).combine_chunks() if tables else schema.empty_table()
    return table.replace_schema_metadata(metadata) if metadata else table


def write_sidecar(docs_path: str, out_path: str, rows: Callable[[list[dict]], pa.Table], schema: pa.Schema,
                  batch_size: int, stage: str, metadata: dict[str, str] | None = None) -> pa.Table:
    """Write `rows(batch)` for every batch of documents of `docs_path`, joined; return the table."""
    tables = []
    progress = Progress(stage)
    for lines in line_batches(docs_path, batch_size):
        tables.append(rows([parse_document(line) for line in lines]))
        progress.tick(len(lines))
    progress.finish()
    table = joined(tables, schema, metadata)
    write_parquet(out_path, table)
    return table
