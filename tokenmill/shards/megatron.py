"""Megatron `.bin/.idx` indexed datasets, byte-compatible with megatron-core's
`megatron/core/datasets/indexed_dataset.py` (version 1, one sequence per document)."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np

INDEX_HEADER = b"MMIDIDX\x00\x00"
INDEX_VERSION = 1
DTYPE_CODES = {np.dtype(np.uint8): 1, np.dtype(np.int8): 2, np.dtype(np.int16): 3, np.dtype(np.int32): 4,
               np.dtype(np.int64): 5, np.dtype(np.float64): 6, np.dtype(np.float32): 7, np.dtype(np.uint16): 8}
CODE_DTYPES = {code: dtype for dtype, code in DTYPE_CODES.items()}


def bin_path(prefix: str | Path) -> Path:
    return Path(f"{prefix}.bin")


def idx_path(prefix: str | Path) -> Path:
    return Path(f"{prefix}.idx")


class MegatronWriter:
    """Append documents to `{prefix}.bin`, then write `{prefix}.idx` on close."""

    def __init__(self, prefix: str | Path, dtype: np.dtype):
        self.prefix = Path(prefix)
        self.dtype = np.dtype(dtype)
        if self.dtype not in DTYPE_CODES:
            raise ValueError(f"dtype {self.dtype} has no Megatron code")
        self._bin = open(bin_path(self.prefix), "wb")
        self.lengths: list[int] = []

    def add(self, tokens: np.ndarray) -> None:
        array = np.ascontiguousarray(tokens, dtype=self.dtype)
        self._bin.write(array.tobytes(order="C"))
        self.lengths.append(len(array))

    @property
    def n_tokens(self) -> int:
        return int(sum(self.lengths))

    def close(self) -> None:
        self._bin.close()
        if not self.lengths:
            raise ValueError(f"{self.prefix}: a shard needs at least one document "
                             "(megatron-core cannot memory-map an empty .bin)")
        lengths = np.asarray(self.lengths, dtype=np.int32)
        pointers = np.zeros(len(lengths), dtype=np.int64)
        if len(lengths):
            np.cumsum(lengths[:-1].astype(np.int64) * self.dtype.itemsize, out=pointers[1:])
        document_indices = np.arange(len(lengths) + 1, dtype=np.int64)
        with open(idx_path(self.prefix), "wb") as idx:
            idx.write(INDEX_HEADER)
            idx.write(struct.pack("<Q", INDEX_VERSION))
            idx.write(struct.pack("<B", DTYPE_CODES[self.dtype]))
            idx.write(struct.pack("<Q", len(lengths)))
            idx.write(struct.pack("<Q", len(document_indices)))
            idx.write(lengths.tobytes(order="C"))
            idx.write(pointers.tobytes(order="C"))
            idx.write(document_indices.tobytes(order="C"))


class MegatronReader:
    """Memory-mapped reader of a `.bin/.idx` pair (used by validation and the loader)."""

    def __init__(self, prefix: str | Path):
        index = np.memmap(idx_path(prefix), mode="r", dtype=np.uint8)
        header = bytes(index[:9])
        if header != INDEX_HEADER:
            raise ValueError(f"{prefix}.idx: bad header {header!r}")
        version, = struct.unpack("<Q", bytes(index[9:17]))
        if version != INDEX_VERSION:
            raise ValueError(f"{prefix}.idx: unsupported version {version}")
        self.dtype = CODE_DTYPES[int(index[17])]
        sequences, documents = struct.unpack("<QQ", bytes(index[18:34]))
        offset = 34
        self.lengths = np.frombuffer(index, dtype=np.int32, count=sequences, offset=offset)
        offset += self.lengths.nbytes
        self.pointers = np.frombuffer(index, dtype=np.int64, count=sequences, offset=offset)
        offset += self.pointers.nbytes
        self.document_indices = np.frombuffer(index, dtype=np.int64, count=documents, offset=offset)
        self.tokens = np.memmap(bin_path(prefix), mode="r", dtype=self.dtype)
        self.array = self.tokens.view(np.ndarray)  # the same mapped bytes, without memmap's per-slice cost

    def __len__(self) -> int:
        return len(self.lengths)

    def __getitem__(self, index: int) -> np.ndarray:
        start = int(self.pointers[index]) // self.dtype.itemsize
        return self.tokens[start:start + int(self.lengths[index])]
