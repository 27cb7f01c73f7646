"""reader: the shards of the manifest a recipe pins, as token arrays.

- The manifest and its tokenizer must be the ones the recipe pins by sha256.
- A source with a tombstoned (deleted) shard is refused, naming the tombstone.
- Shards are memory-mapped and their .bin/.idx sha256 checked against the manifest the first
  time they are opened (when the loader is built); a failing shard is replaced by the next
  healthy shard of its source and recorded in the skip set.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from tokenmill.hashing import sha256_file
from tokenmill.io import read_json
from tokenmill.shards.megatron import MegatronReader
from tokenmill.shards.versions import TOMBSTONES, read_tombstones
from tokenmill.trainer.recipe import RecipeError
from tokenmill.trainer.schedule import Stream

_SHA_CACHE: dict[tuple, str] = {}  # (path, size, mtime_ns) -> sha256, for every loader of the process


class LoaderError(RuntimeError):
    pass


def _cached_sha256(path: Path) -> str:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _SHA_CACHE:
        _SHA_CACHE[key] = sha256_file(path)
    return _SHA_CACHE[key]


class ShardReader:
    def __init__(self, recipe: dict, manifest_path: str | os.PathLike, skip: tuple | list = ()):
        """`skip`: shard paths never to read (a checkpoint's skip set)."""
        self.recipe = recipe
        self.manifest_path = Path(manifest_path)
        actual = sha256_file(self.manifest_path)
        if actual != recipe["manifest_sha256"]:
            raise RecipeError(f"recipe field manifest_sha256: pins {recipe['manifest_sha256']}, but "
                              f"{self.manifest_path} has sha256 {actual}")
        self.manifest = read_json(self.manifest_path)
        if self.manifest["tokenizer"]["sha256"] != recipe["tokenizer_sha256"]:
            raise RecipeError(f"recipe field tokenizer_sha256: pins {recipe['tokenizer_sha256']}, but the manifest's "
                              f"tokenizer has {self.manifest['tokenizer']['sha256']}")
        self.root = self.manifest_path.parent
        self.shards = self.manifest["shards"]
        self.tombstones = read_tombstones(self.manifest_path)
        self.skip_set = set(skip)
        self._healthy: dict[int, bool] = {}
        self._megatron: dict[int, MegatronReader] = {}

    def prefix(self, number: int) -> Path:
        """The .bin/.idx path prefix of a shard (by its number in the manifest)."""
        return self.root / self.shards[number]["path"]

    def _shard_ok(self, number: int) -> bool:
        """sha256 of the shard's .bin and .idx against the manifest, once per process."""
        shard = self.shards[number]
        if shard["path"] in self.skip_set:
            return False
        if number not in self._healthy:
            prefix = self.prefix(number)
            try:
                ok = (_cached_sha256(Path(f"{prefix}.bin")) == shard["bin_sha256"]
                      and _cached_sha256(Path(f"{prefix}.idx")) == shard["idx_sha256"])
            except OSError:
                ok = False
            self._healthy[number] = ok
            if not ok:
                self.skip_set.add(shard["path"])
        return self._healthy[number]

    def _open(self, number: int) -> MegatronReader:
        if number not in self._megatron:
            self._megatron[number] = MegatronReader(self.prefix(number))
        return self._megatron[number]

    def _source_shards(self, source: str, where: str) -> list[int]:
        """The source's shards in manifest order, a failing one replaced by the next healthy one."""
        numbers = [i for i, shard in enumerate(self.shards) if shard["source"] == source]
        if not numbers and source in self.manifest["sources"]:
            reasons = [f"{shard['path']}: {'; '.join(shard['reasons'])}"
                       for shard in self.manifest.get("excluded_shards", []) if shard["source"] == source]
            raise RecipeError(f"recipe field {where}: every shard of {source!r} failed validation and was left "
                              f"out of the manifest ({', '.join(reasons)})")
        if not numbers:
            raise RecipeError(f"recipe field {where}: the manifest has no source {source!r} "
                              f"(it has {', '.join(sorted(self.manifest['sources']))})")
        deleted = [self.tombstones[self.shards[i]["path"]] for i in numbers if self.shards[i]["path"] in self.tombstones]
        if deleted:
            first = deleted[0]
            raise LoaderError(f"{len(deleted)} of {len(numbers)} shards of {source} were deleted on {first['date']} "
                              f"({first['reason']}); tombstone of {first['path']} (sha256 {first['bin_sha256'][:12]}..., "
                              f"{first['bin_bytes']} bytes) in {self.root / TOMBSTONES}")
        healthy = [self._shard_ok(i) for i in numbers]
        failed_share = healthy.count(False) / len(healthy)
        if failed_share > self.recipe["max_skipped_share"] or not any(healthy):
            bad = [self.shards[i]["path"] for i, ok in zip(numbers, healthy) if not ok]
            raise LoaderError(f"{len(bad)} of {len(numbers)} shards of {source} fail their sha256 check "
                              f"(max_skipped_share {self.recipe['max_skipped_share']}): {', '.join(bad)}")
        layout = []
        for position, number in enumerate(numbers):
            step = 0
            while not healthy[(position + step) % len(numbers)]:
                step += 1
            layout.append(numbers[(position + step) % len(numbers)])
        return layout

    def source_documents(self, source: str, where: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per document of the source's shards, in manifest order: its shard's number, its number
        in that shard and its length in tokens. `where` is the recipe field that names the source."""
        shard_numbers, documents, lengths = [], [], []
        for shard in self._source_shards(source, where):
            shard_lengths = np.asarray(self._open(shard).lengths, dtype=np.int64)
            shard_numbers.append(np.full(len(shard_lengths), shard, dtype=np.int32))
            documents.append(np.arange(len(shard_lengths), dtype=np.int64))
            lengths.append(shard_lengths)
        return tuple(map(np.concatenate, (shard_numbers, documents, lengths)))

    def document_tokens(self, shard: int, document: int) -> np.ndarray:
        """The tokens of one document (by its shard's number and its number in the shard)."""
        return self._open(shard)[document]

    def source_groups(self, source: str, where: str) -> tuple[list[str], np.ndarray]:
        """Per document of the source's shards, in source_documents' order: its group's id and its
        place in the group, from the shards' lineage files; a document of no group is a group of
        its own, named after its doc_id."""
        group_ids, positions = [], []
        for shard in self._source_shards(source, where):
            lineage = pq.read_table(f"{self.prefix(shard)}.docs.parquet")
            doc_ids = lineage.column("doc_id").to_pylist()
            # a shard written before documents had groups has no group columns: its documents are of none
            none = [None] * len(doc_ids)
            groups, places = (lineage.column(name).to_pylist() if name in lineage.column_names else none
                              for name in ("group_id", "group_pos"))
            group_ids += [group if group is not None else f"doc-{doc_id}" for group, doc_id in zip(groups, doc_ids)]
            positions += [place or 0 for place in places]
        return group_ids, np.asarray(positions, dtype=np.int64)

    def packed(self, stream: Stream, start: int, stop: int) -> tuple[np.ndarray, np.ndarray]:
        """Tokens [start, stop) of a stream (int64), packed across document boundaries, and the
        cu_seqlens that mark where its documents start in them (int32, then the length)."""
        first = int(np.searchsorted(stream.starts, start, side="right")) - 1
        last = int(np.searchsorted(stream.starts, stop - 1, side="right")) - 1
        tokens = self._contiguous(stream, first, last, start - int(stream.starts[first]), stop - start)
        if tokens is None:  # the span crosses shards (or a length bucket's gaps): document by document
            pieces = []
            for document in range(first, last + 1):
                begin = int(stream.starts[document])
                tokens = self._open(int(stream.shards[document]))[int(stream.documents[document])]
                pieces.append(tokens[max(start - begin, 0):stop - begin])
            tokens = np.concatenate(pieces)
        tokens = tokens.astype(np.int64)
        if stream.mask_groups:  # the groups that start inside the span
            marks = stream.group_starts
            inner = marks[np.searchsorted(marks, start, side="right"):np.searchsorted(marks, stop - 1, side="right")]
        else:
            inner = stream.starts[first + 1:last + 1]
        cu_seqlens = np.concatenate([[0], inner - start, [len(tokens)]]).astype(np.int32)
        return tokens, cu_seqlens

    def _contiguous(self, stream: Stream, first: int, last: int, skip: int, count: int) -> np.ndarray | None:
        """One slice of a shard's tokens when documents first..last lie back to back in it."""
        shard = int(stream.shards[first])
        if int(stream.shards[last]) != shard:
            return None
        reader = self._open(shard)
        begin, end = int(stream.documents[first]), int(stream.documents[last])
        size = reader.dtype.itemsize
        if (int(reader.pointers[end]) - int(reader.pointers[begin])) // size != int(stream.starts[last] - stream.starts[first]):
            return None
        offset = int(reader.pointers[begin]) // size + skip
        return reader.array[offset:offset + count]
