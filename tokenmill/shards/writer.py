"""write_shards: shuffled Megatron shards per (source, snapshot), the files a dataset version lists.

Tokenized parts are already sorted by shuffle key; a k-way merge over a snapshot's parts
yields its documents in shuffled order in one streaming pass, and shards are cut whenever
they reach the target size (a document never straddles two shards). Each shard is
validated as it is closed (tokenmill.shards.validation); the manifest (tokenmill.shards.manifest)
lists only the shards that pass and names the others with their failing checks.

A large snapshot is written by several jobs, its shard groups: group g of G takes the
documents whose shuffle key falls in the g-th of G equal ranges of the 64-bit key space, so
that the groups' shards one after another hold the snapshot's documents in exactly the order
one job would write them, and no job handles more than about shards.parts_per_job parts'
worth (tokenmill.plan.shard_groups).
Tokenized parts keep the key's min and max per row group, so a group reads only the row
groups that can hold its keys.

Shards are immutable and content-addressed: written per snapshot, so that a new snapshot
writes only its own shards, and named `{source}-{snapshot}-{first 16 hex of the .bin
sha256}` with nothing version-specific in any of their files, so that a shard whose
documents did not change keeps its name and bytes in the next version (the training
cluster already holds it: see tokenmill.shards.versions).
"""

from __future__ import annotations

import heapq
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tokenmill.hashing import sha256_file
from tokenmill.io import atomic_output, read_json, write_json, write_parquet
from tokenmill.layout import SHARD_LISTING
from tokenmill.shards.megatron import DTYPE_CODES, MegatronReader, MegatronWriter, bin_path, idx_path
from tokenmill.shards.validation import ValidationLimits, validate_shard

MERGE_BATCH_ROWS = 1024
KEY_SPACE = 1 << 64  # shuffle keys are unsigned 64-bit hashes
NAME_HASH_HEX = 16  # 64 bits of the .bin sha256: a chance collision within one snapshot is negligible
LINEAGE_SCHEMA = pa.schema([
    ("doc_id", pa.string()),
    ("snapshot_id", pa.string()),
    ("part", pa.string()),
    ("row", pa.int64()),
    ("n_tokens", pa.int64()),
    ("group_id", pa.string()),  # the document's group (a code repository), null for none
    ("group_pos", pa.int32()),  # its place in the group
])


@dataclass(frozen=True)
class TokenizedPart:
    snapshot: str
    part: str
    path: str
    select: str  # the part's select table: which documents the snapshot holds, and their languages


def group_keys(group: int, groups: int) -> tuple[int, int]:
    """The shuffle keys of shard group `group` of `groups`: [first, last], both included."""
    if not 0 <= group < groups:
        raise ValueError(f"shard group {group} is not one of 0..{groups - 1}")
    return (group * KEY_SPACE + groups - 1) // groups, ((group + 1) * KEY_SPACE + groups - 1) // groups - 1


def _row_groups_holding(handle: pq.ParquetFile, first: int, last: int) -> list[int]:
    """The row groups of a tokenized part whose statistics say they may hold a key in [first, last]
    (all of them where a file has no statistics)."""
    column = handle.schema_arrow.get_field_index("shuffle_key")
    holding = []
    for index in range(handle.num_row_groups):
        stats = handle.metadata.row_group(index).column(column).statistics
        if stats is None or not stats.has_min_max or (stats.min <= last and stats.max >= first):
            holding.append(index)
    return holding


def _group_batches(path: str, first: int, last: int, columns: list[str]) -> Iterator[pa.RecordBatch]:
    """`columns` (shuffle_key first) of a tokenized part's documents whose key is in [first, last], in key order."""
    handle = pq.ParquetFile(path)
    whole = first == 0 and last == KEY_SPACE - 1
    for batch in handle.iter_batches(batch_size=MERGE_BATCH_ROWS, columns=columns,
                                     row_groups=_row_groups_holding(handle, first, last)):
        if not whole:
            keys = batch.column(0).to_numpy()
            batch = batch.filter(pa.array((keys >= np.uint64(first)) & (keys <= np.uint64(last))))
        if len(batch):
            yield batch


class _Languages:
    """The languages of a shard group's documents, as small integer codes per part in merge order
    (a snapshot can hold 10^9 documents: no Python string per document, and only the group's
    rows are kept), and the language counts of the snapshot's whole selection."""

    def __init__(self, parts: list[TokenizedPart], first: int, last: int):
        codes: dict[str, int] = {}
        self.in_order: dict[tuple[str, str], np.ndarray] = {}
        selected_counts = Counter()
        for part in parts:
            table = pq.read_table(part.select, columns=["row", "selected", "lang"])
            rows = table.column("row").to_numpy()
            encoded = pc.dictionary_encode(pc.fill_null(table.column("lang").combine_chunks(), "und"))
            mapping = np.array([codes.setdefault(name, len(codes)) for name in encoded.dictionary.to_pylist()],
                               dtype=np.int32)
            by_row = np.full(len(table), -1, dtype=np.int32)
            by_row[rows] = mapping[encoded.indices.to_numpy()]
            selected = by_row[rows[table.column("selected").to_numpy()]]
            selected_counts.update(dict(enumerate(np.bincount(selected, minlength=len(codes)).tolist())))
            group_rows = [batch.column(1).to_numpy() for batch in _group_batches(part.path, first, last,
                                                                                  ["shuffle_key", "row"])]
            self.in_order[part.snapshot, part.part] = by_row[np.concatenate(group_rows)] if group_rows else by_row[:0]
        self.names = list(codes)
        self.selected = Counter({self.names[code]: count for code, count in selected_counts.items() if count})


def _part_documents(part: TokenizedPart, first: int, last: int, languages: _Languages) -> Iterator[tuple]:
    """(merge key, doc_id, tokens, language, group_id, group_pos) of one tokenized part's documents
    with a shuffle key in [first, last], in its stored (sorted) order."""
    codes = iter(languages.in_order[part.snapshot, part.part].tolist())
    # a part tokenized before documents had groups has no group columns: its documents are of none
    grouped = "group_id" in pq.read_schema(part.path).names
    columns = ["shuffle_key", "row", "doc_id", "tokens", *(["group_id", "group_pos"] if grouped else [])]
    for batch in _group_batches(part.path, first, last, columns):
        keys = batch.column("shuffle_key").to_numpy()
        rows = batch.column("row").to_numpy()
        doc_ids = batch.column("doc_id").to_pylist()
        group_ids, group_positions = ((batch.column("group_id").to_pylist(), batch.column("group_pos").to_pylist())
                                      if grouped else ([None] * len(batch), [None] * len(batch)))
        tokens = batch.column("tokens")
        offsets = tokens.offsets.to_numpy()
        values = tokens.values.to_numpy(zero_copy_only=False)
        for i in range(len(batch)):
            yield ((int(keys[i]), part.snapshot, part.part, int(rows[i])), doc_ids[i],
                   values[offsets[i]:offsets[i + 1]], languages.names[next(codes)], group_ids[i], group_positions[i])


def _part_metadata(parts: list[TokenizedPart]) -> dict:
    """The tokenizer hash, seed and EOD id every part of a snapshot must agree on."""
    seen = {}
    for part in parts:
        meta = {key.decode(): value.decode() for key, value in pq.read_schema(part.path).metadata.items()}
        for key in ("tokenizer_sha256", "seed", "eod_id"):
            if seen.setdefault(key, meta[key]) != meta[key]:
                raise ValueError(f"{part.path}: {key}={meta[key]} differs from the other parts "
                                 f"({seen[key]}); rerun tokenize for this snapshot")
    return seen


class _ShardBuilder:
    """One shard, written under a provisional name and renamed after its content once closed."""

    def __init__(self, directory: Path, provisional: str, dtype: np.dtype):
        self.directory, self.provisional = directory, provisional
        self.writer = MegatronWriter(directory / provisional, dtype)
        self.lineage: dict[str, list] = {field: [] for field in LINEAGE_SCHEMA.names}
        self.langs: Counter = Counter()

    def add(self, key: tuple, doc_id: str, tokens: np.ndarray, lang: str, group_id: str | None,
            group_pos: int | None) -> None:
        self.writer.add(tokens)
        self.langs[lang] += 1
        _, snapshot, part, row = key
        for field, value in zip(LINEAGE_SCHEMA.names, (doc_id, snapshot, part, row, len(tokens), group_id, group_pos)):
            self.lineage[field].append(value)

    def finish(self, name_prefix: str, common: dict, selection_langs: Counter, limits: ValidationLimits) -> dict:
        self.writer.close()
        bin_sha256 = sha256_file(bin_path(self.directory / self.provisional))
        name = f"{name_prefix}-{bin_sha256[:NAME_HASH_HEX]}"
        prefix = self.directory / name
        if bin_path(prefix).exists():
            raise ValueError(f"{prefix}: two shards of this snapshot hold the same tokens; "
                             "look for duplicated documents in its selection")
        for path in (bin_path, idx_path):
            os.replace(path(self.directory / self.provisional), path(prefix))
        docs_file = f"{name}.docs.parquet"
        write_parquet(self.directory / docs_file, pa.Table.from_pydict(self.lineage, schema=LINEAGE_SCHEMA))
        check = MegatronReader(prefix)
        if len(check) != len(self.writer.lengths) or int(check.lengths.sum()) != self.writer.n_tokens:
            raise RuntimeError(f"{prefix}: index does not match what was written")
        meta = {
            "name": name,
            **common,
            "n_docs": len(self.writer.lengths),
            "n_tokens": self.writer.n_tokens,
            "dtype": self.writer.dtype.name,
            "dtype_code": DTYPE_CODES[self.writer.dtype],
            "bin": {"path": bin_path(name).name, "bytes": bin_path(prefix).stat().st_size, "sha256": bin_sha256},
            "idx": {"path": idx_path(name).name, "bytes": idx_path(prefix).stat().st_size,
                    "sha256": sha256_file(idx_path(prefix))},
            "docs": {"path": docs_file, "sha256": sha256_file(self.directory / docs_file)},
            "validation": validate_shard(prefix, self.langs, selection_langs, limits),
        }
        write_json(self.directory / f"{name}.meta.json", meta)
        return meta


def write_shards(source: str, snapshot: str, parts: list[TokenizedPart], out_dir: str, target_tokens: int,
                 license_id: str, tier: str, token_dtype: np.dtype,
                 limits: ValidationLimits, group: int = 0, groups: int = 1) -> list[dict]:
    """Merge one snapshot's tokenized parts into shards under `out_dir` (a directory written
    atomically), each validated against `limits`: the documents of shard group `group` of
    `groups` (group_keys), by default the whole snapshot. Nothing written depends on the
    dataset version, so the same parts give the same files in every version."""
    strays = sorted({part.snapshot for part in parts} - {snapshot})
    if strays:
        raise ValueError(f"write_shards of {source}/{snapshot} was given parts of snapshots {strays}")
    first, last = group_keys(group, groups)
    common_meta = _part_metadata(parts) if parts else {}
    languages = _Languages(parts, first, last)
    common = {
        "source": source,
        "snapshot": snapshot,
        "tier": tier,
        "license_ids": [license_id],
        "tokenizer_sha256": common_meta.get("tokenizer_sha256"),
        "seed": int(common_meta["seed"]) if "seed" in common_meta else None,
        "eod_id": int(common_meta["eod_id"]) if "eod_id" in common_meta else None,
    }
    metas: list[dict] = []
    with atomic_output(out_dir, directory=True) as temp:
        builder = None
        name_prefix = f"{source}-{snapshot}"
        merged = heapq.merge(*(_part_documents(part, first, last, languages) for part in parts),
                             key=lambda item: item[0])
        for key, *document in merged:
            if builder is None:
                builder = _ShardBuilder(temp, f"unnamed-{len(metas):05d}", token_dtype)
            builder.add(key, *document)
            if builder.writer.n_tokens >= target_tokens:
                metas.append(builder.finish(name_prefix, common, languages.selected, limits))
                builder = None
        if builder is not None:
            metas.append(builder.finish(name_prefix, common, languages.selected, limits))
        # the shards in the order they were cut: the order of the group's documents
        write_json(temp / SHARD_LISTING, {"source": source, "snapshot": snapshot, "group": group, "groups": groups,
                                          "documents": sum(meta["n_docs"] for meta in metas),
                                          "shards": [meta["name"] for meta in metas]})
    return metas


def _listing_key(listing: dict) -> tuple[str, str, int]:
    return listing["source"], listing["snapshot"], listing.get("group", 0)


def read_listings(shard_dirs: list[str]) -> list[tuple[Path, dict]]:
    """(directory, shards.json) of each shard directory, sorted by source, snapshot and shard
    group: the one order in which the manifest, the report and the validation table list shards
    (a snapshot's groups in key order, so its shards in the order of its documents)."""
    listings = sorted(((Path(shard_dir), read_json(Path(shard_dir) / SHARD_LISTING)) for shard_dir in shard_dirs),
                      key=lambda item: _listing_key(item[1]))
    for (first, a), (second, b) in zip(listings, listings[1:]):
        if _listing_key(a) == _listing_key(b):
            raise ValueError(f"{first} and {second} both hold the shards of {a['source']}/{a['snapshot']}"
                             f" (shard group {_listing_key(a)[2]})")
    return listings
