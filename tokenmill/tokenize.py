"""train_tokenizer and tokenize: byte-level BPE with HF tokenizers, hash-pinned.

Tokenized parts are Parquet tables sorted by each document's shuffle key, a keyed hash
of (seed, doc_id), so that write_shards can merge the parts of a snapshot in one pass. Each
row carries the document's group (group_id, group_pos: a code repository's documents in
order, or a chain of related documents; null for a document of no group), which the shards'
lineage files keep for the loader.
"""

from __future__ import annotations

import functools
from typing import Iterable, Iterator

import numpy as np
import pyarrow as pa
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from tokenmill.code.documents import repository_group
from tokenmill.hashing import sha256_file
from tokenmill.io import atomic_output, read_jsonl_zst, read_parquet, write_parquet
from tokenmill.progress import Progress
from tokenmill.select.judge import emitted_text
from tokenmill.hashing import keyed_hash64, seed_key

EOD_TOKEN = "<|endoftext|>"
# Rows per row group of a tokenized part; each row group records its shuffle keys' min and max, so
# that a write_shards job of one shard group (tokenmill.shards.writer) reads only the row groups
# its key range overlaps: of each part, at most two it does not fully use.
SHARD_GROUP_READ_ROWS = 16384
# megatron-core picks uint16 below this vocabulary size (DType.optimal_dtype).
UINT16_VOCAB_LIMIT = 65500


def token_dtype(vocab_size: int) -> np.dtype:
    return np.dtype(np.uint16) if vocab_size < UINT16_VOCAB_LIMIT else np.dtype(np.int32)


class capped_texts:
    """Iterate texts until `max_chars` characters have been given; counts what it gave."""

    def __init__(self, texts: Iterable[str], max_chars: int):
        self._texts, self._max_chars = texts, max_chars
        self.documents = self.chars = 0

    def __iter__(self) -> Iterator[str]:
        for text in self._texts:
            if self.chars >= self._max_chars:
                return
            text = text[: self._max_chars - self.chars]
            self.documents += 1
            self.chars += len(text)
            yield text


def train_bpe(texts: Iterable[str], vocab_size: int, min_frequency: int, out_path: str) -> str:
    """Train a byte-level BPE (exact round trip for any Unicode text); returns its sha256."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=[EOD_TOKEN],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    with atomic_output(out_path) as temp:
        temp.write_text(tokenizer.to_str(pretty=True), encoding="utf-8")
    return sha256_file(out_path)


@functools.lru_cache(maxsize=4)
def _load(path: str, sha256: str) -> Tokenizer:
    return Tokenizer.from_file(path)


def load_tokenizer(path: str, expected_sha256: str | None = None) -> tuple[Tokenizer, str]:
    """The tokenizer and its sha256; a pinned hash that does not match is an error."""
    actual = sha256_file(path)
    if expected_sha256 and actual != expected_sha256:
        raise ValueError(f"tokenizer.sha256: {path} has sha256 {actual}, config pins {expected_sha256}")
    tokenizer = _load(path, actual)
    if tokenizer.token_to_id(EOD_TOKEN) is None:
        raise ValueError(f"tokenizer.path: {path} has no {EOD_TOKEN!r} token to end documents with")
    return tokenizer, actual


def selected_texts(docs_path: str, select_path: str) -> Iterator[tuple[int, dict]]:
    """(row, document) for every selected document of a part, in document order, with its
    text as select emits it (PII replaced, boilerplate lines removed)."""
    selection = read_parquet(select_path, columns=["row", "selected", "drop_lines", "scrub_spans"])
    keep = selection.column("selected").to_pylist()
    drop = selection.column("drop_lines").to_pylist()
    spans = selection.column("scrub_spans").to_pylist()
    for row, doc in enumerate(read_jsonl_zst(docs_path)):
        if row >= len(keep):
            raise ValueError(f"{select_path} has fewer rows than {docs_path}; rerun select")
        if keep[row]:
            yield row, {**doc, "text": emitted_text(doc["text"], spans[row], drop[row])}


def chained_documents(chains_path: str | None) -> dict[str, tuple[str, int]]:
    """doc_id -> (group_id, group_pos) of a part's chained documents (tokenmill.chains); none without a file."""
    if not chains_path:
        return {}
    table = read_parquet(chains_path, columns=["doc_id", "group_id", "group_pos"])
    return {doc_id: (group, position) for doc_id, group, position in
            zip(table["doc_id"].to_pylist(), table["group_id"].to_pylist(), table["group_pos"].to_pylist())}


def tokenize_part(docs_path: str, select_path: str, tokenizer_path: str, tokenizer_sha256: str | None,
                  seed: int, out_path: str, batch_size: int = 256, chains_path: str | None = None) -> int:
    """Tokenize a part's selected documents into `out_path`; each keeps its repository's group (a code
    document) or its chain's (`chains_path`: the part's chain_groups file)."""
    tokenizer, sha = load_tokenizer(tokenizer_path, tokenizer_sha256)
    chains = chained_documents(chains_path)
    eod = tokenizer.token_to_id(EOD_TOKEN)
    dtype = token_dtype(tokenizer.get_vocab_size())
    key = seed_key(seed)
    rows, doc_ids, token_lists, groups = [], [], [], []
    batch: list[tuple[int, dict]] = []
    progress = Progress("tokenize")

    def flush() -> None:
        encodings = tokenizer.encode_batch([doc["text"] for _, doc in batch], add_special_tokens=False)
        for (row, doc), encoding in zip(batch, encodings):
            rows.append(row)
            doc_ids.append(doc["doc_id"])
            groups.append(repository_group(doc) or chains.get(doc["doc_id"], (None, None)))
            token_lists.append(np.append(np.asarray(encoding.ids, dtype=dtype), dtype.type(eod)))
        progress.tick(len(batch))
        batch.clear()

    for item in selected_texts(docs_path, select_path):
        batch.append(item)
        if len(batch) == batch_size:
            flush()
    if batch:
        flush()
    progress.finish()

    shuffle_keys = np.array([keyed_hash64(key, doc_id) for doc_id in doc_ids], dtype=np.uint64)
    order = np.lexsort((np.asarray(rows, dtype=np.int64), shuffle_keys)) if rows else np.zeros(0, dtype=np.int64)
    value_type = pa.uint16() if dtype == np.uint16 else pa.int32()
    offsets = np.zeros(len(order) + 1, dtype=np.int64)
    if len(order):
        np.cumsum([len(token_lists[i]) for i in order], out=offsets[1:])
    flat = np.concatenate([token_lists[i] for i in order]) if len(order) else np.zeros(0, dtype=dtype)
    tokens = pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), pa.array(flat, value_type))
    table = pa.Table.from_pydict({
        "shuffle_key": pa.array(shuffle_keys[order], pa.uint64()),
        "row": pa.array(np.asarray(rows, dtype=np.int64)[order] if rows else [], pa.int64()),
        "doc_id": pa.array([doc_ids[i] for i in order], pa.string()),
        "n_tokens": pa.array(np.diff(offsets), pa.int64()),
        "group_id": pa.array([groups[i][0] for i in order], pa.string()),
        "group_pos": pa.array([groups[i][1] for i in order], pa.int32()),
        "tokens": tokens,
    }).replace_schema_metadata({"tokenizer_sha256": sha, "seed": str(seed), "eod_id": str(eod)})
    write_parquet(out_path, table, statistics=["shuffle_key"], row_group_rows=SHARD_GROUP_READ_ROWS)
    return len(order)
