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
from typing import Iterable, Iterator

import pyarrow as pa

from tokenmill.io import read_lines_zst

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


def numbered_batches(docs_path: str, size: int) -> Iterator[tuple[list[str], int]]:
    """The raw lines of a docs file, `size` at a time (parsed by whoever scores them), each batch
    with the part's row number of its first line."""
    first_row = 0
    for lines in batches(read_lines_zst(docs_path), size):
        yield lines, first_row
        first_row += len(lines)


def joined(tables: list[pa.Table], schema: pa.Schema, metadata: dict[str, str] | None = None) -> pa.Table:
    """The batches' tables as one table of one chunk, in order, with the file's metadata."""
    table = pa.concat_tables(tables).combine_chunks() if tables else schema.empty_table()
    return table.replace_schema_metadata(metadata) if metadata else table
