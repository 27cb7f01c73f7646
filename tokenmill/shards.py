"""write_shards and manifest: shuffled Megatron shards per source, and the dataset version.

Tokenized parts are already sorted by shuffle key; a k-way merge over them yields the
source's documents in the global shuffled order in one streaming pass, and shards are
cut whenever they reach the target size (a document never straddles two shards).
"""

from __future__ import annotations

import heapq
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tokenmill.io import atomic_output, read_json, sha256_file, write_json, write_parquet
from tokenmill.megatron import DTYPE_CODES, MegatronReader, MegatronWriter, bin_path, idx_path

MERGE_BATCH_ROWS = 1024
LINEAGE_SCHEMA = pa.schema([
    ("doc_id", pa.string()),
    ("snapshot_id", pa.string()),
    ("part", pa.string()),
    ("row", pa.int64()),
    ("n_tokens", pa.int64()),
])


@dataclass(frozen=True)
class TokenizedPart:
    snapshot: str
    part: str
    path: str


def _part_documents(part: TokenizedPart) -> Iterator[tuple]:
    """(merge key, doc_id, tokens) of one tokenized part, in its stored (sorted) order."""
    handle = pq.ParquetFile(part.path)
    for batch in handle.iter_batches(batch_size=MERGE_BATCH_ROWS,
                                     columns=["shuffle_key", "row", "doc_id", "tokens"]):
        keys = batch.column("shuffle_key").to_numpy()
        rows = batch.column("row").to_numpy()
        doc_ids = batch.column("doc_id").to_pylist()
        tokens = batch.column("tokens")
        offsets = tokens.offsets.to_numpy()
        values = tokens.values.to_numpy(zero_copy_only=False)
        for i in range(len(batch)):
            yield ((int(keys[i]), part.snapshot, part.part, int(rows[i])), doc_ids[i],
                   values[offsets[i]:offsets[i + 1]])


def _part_metadata(parts: list[TokenizedPart]) -> dict:
    """The tokenizer hash, seed and EOD id every part of a source must agree on."""
    seen = {}
    for part in parts:
        meta = {key.decode(): value.decode() for key, value in pq.read_schema(part.path).metadata.items()}
        for key in ("tokenizer_sha256", "seed", "eod_id"):
            if seen.setdefault(key, meta[key]) != meta[key]:
                raise ValueError(f"{part.path}: {key}={meta[key]} differs from the other parts "
                                 f"({seen[key]}); rerun tokenize for this source")
    return seen


class _ShardBuilder:
    def __init__(self, directory: Path, name: str, dtype: np.dtype):
        self.directory, self.name = directory, name
        self.writer = MegatronWriter(directory / name, dtype)
        self.lineage: dict[str, list] = {field: [] for field in LINEAGE_SCHEMA.names}

    def add(self, key: tuple, doc_id: str, tokens: np.ndarray) -> None:
        self.writer.add(tokens)
        _, snapshot, part, row = key
        for field, value in zip(LINEAGE_SCHEMA.names, (doc_id, snapshot, part, row, len(tokens))):
            self.lineage[field].append(value)

    def finish(self, common: dict) -> dict:
        self.writer.close()
        prefix = self.directory / self.name
        docs_file = f"{self.name}.docs.parquet"
        write_parquet(self.directory / docs_file, pa.Table.from_pydict(self.lineage, schema=LINEAGE_SCHEMA))
        check = MegatronReader(prefix)
        if len(check) != len(self.writer.lengths) or int(check.lengths.sum()) != self.writer.n_tokens:
            raise RuntimeError(f"{prefix}: index does not match what was written")
        meta = {
            "name": self.name,
            **common,
            "n_docs": len(self.writer.lengths),
            "n_tokens": self.writer.n_tokens,
            "dtype": self.writer.dtype.name,
            "dtype_code": DTYPE_CODES[self.writer.dtype],
            "bin": {"path": bin_path(self.name).name, "bytes": bin_path(prefix).stat().st_size,
                    "sha256": sha256_file(bin_path(prefix))},
            "idx": {"path": idx_path(self.name).name, "bytes": idx_path(prefix).stat().st_size,
                    "sha256": sha256_file(idx_path(prefix))},
            "docs": {"path": docs_file, "sha256": sha256_file(self.directory / docs_file)},
        }
        write_json(self.directory / f"{self.name}.meta.json", meta)
        return meta


def write_shards(source: str, parts: list[TokenizedPart], out_dir: str, target_tokens: int,
                 license_id: str, tier: str, version: str, token_dtype: np.dtype) -> list[dict]:
    """Merge a source's tokenized parts into shards under `out_dir` (a directory written atomically)."""
    common_meta = _part_metadata(parts) if parts else {}
    common = {
        "source": source,
        "version": version,
        "tier": tier,
        "license_ids": [license_id],
        "tokenizer_sha256": common_meta.get("tokenizer_sha256"),
        "seed": int(common_meta["seed"]) if "seed" in common_meta else None,
        "eod_id": int(common_meta["eod_id"]) if "eod_id" in common_meta else None,
    }
    metas: list[dict] = []
    with atomic_output(out_dir, directory=True) as temp:
        builder = None
        merged = heapq.merge(*(_part_documents(part) for part in parts), key=lambda item: item[0])
        for key, doc_id, tokens in merged:
            if builder is None:
                builder = _ShardBuilder(temp, f"{source}-{len(metas):05d}", token_dtype)
            builder.add(key, doc_id, tokens)
            if builder.writer.n_tokens >= target_tokens:
                metas.append(builder.finish(common))
                builder = None
        if builder is not None:
            metas.append(builder.finish(common))
        write_json(temp / "shards.json", {"source": source, "shards": [meta["name"] for meta in metas]})
    return metas


def build_manifest(version: str, shard_dirs: list[str], manifest_path: str, tokenizer: dict,
                   config_sha256: str, code_version: str) -> dict:
    """List every shard with its path (relative to the manifest), counts and sha256,
    re-hashing each file so that the manifest never vouches for bytes it did not see."""
    root = Path(manifest_path).parent
    shards, sources = [], {}
    for shard_dir in shard_dirs:
        listing = read_json(Path(shard_dir) / "shards.json")
        for name in listing["shards"]:
            meta = read_json(Path(shard_dir) / f"{name}.meta.json")
            for kind in ("bin", "idx", "docs"):
                actual = sha256_file(Path(shard_dir) / meta[kind]["path"])
                if actual != meta[kind]["sha256"]:
                    raise ValueError(f"{shard_dir}/{meta[kind]['path']}: sha256 {actual} "
                                     f"differs from its meta.json ({meta[kind]['sha256']})")
            if meta["tokenizer_sha256"] != tokenizer["sha256"]:
                raise ValueError(f"{shard_dir}/{name}: tokenized with {meta['tokenizer_sha256']}, "
                                 f"manifest pins {tokenizer['sha256']}")
            prefix = os.path.relpath(Path(shard_dir) / name, root)
            shards.append({
                "path": prefix,
                "source": meta["source"],
                "n_docs": meta["n_docs"],
                "n_tokens": meta["n_tokens"],
                "dtype_code": meta["dtype_code"],
                "bin_sha256": meta["bin"]["sha256"],
                "bin_bytes": meta["bin"]["bytes"],
                "idx_sha256": meta["idx"]["sha256"],
                "license_ids": meta["license_ids"],
            })
            totals = sources.setdefault(meta["source"], {"shards": 0, "n_docs": 0, "n_tokens": 0})
            totals["shards"] += 1
            totals["n_docs"] += meta["n_docs"]
            totals["n_tokens"] += meta["n_tokens"]
    manifest = {
        "format": "tokenmill-manifest/1",
        "version": version,
        "tokenizer": tokenizer,
        "config_sha256": config_sha256,
        "code_version": code_version,
        "sources": dict(sorted(sources.items())),
        "n_docs": sum(s["n_docs"] for s in shards),
        "n_tokens": sum(s["n_tokens"] for s in shards),
        "shards": shards,
    }
    write_json(manifest_path, manifest)
    return manifest
