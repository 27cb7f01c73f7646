"""Every hash tokenmill stores or compares, in one place: content-addressed document ids, url
keys, the keyed 64-bit hash behind seeded orders, the 64-bit content and line hash of dedup,
MurmurHash3's finalizer (MinHash, MPI ownership, Bloom filters, the loader's shuffle) and the
sha256 that pins files. Nothing here imports the rest of tokenmill."""

from __future__ import annotations

import hashlib
import os
import unicodedata

import numpy as np

_C1 = np.uint64(0xFF51AFD7ED558CCD)
_C2 = np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)
FMIX64_MULTIPLIERS = (int(_C1), int(_C2))  # for code that mixes one Python int at a time


def normalize_for_id(text: str) -> str:
    """NFKC, whitespace runs collapsed inside lines, blank lines dropped.

    Two extractions of the same page that differ only in spacing or Unicode
    compatibility forms get the same id; case and punctuation still count.
    """
    text = unicodedata.normalize("NFKC", text)
    lines = (" ".join(line.split()) for line in text.splitlines())  # str.split splits on what re calls \s
    return "\n".join(line for line in lines if line)


def doc_id_for(text: str) -> str:
    """128-bit hex content address of a document's normalized text."""
    return hashlib.blake2b(normalize_for_id(text).encode("utf-8"), digest_size=16).hexdigest()


def url_hash(url: str) -> str:
    return hashlib.blake2b(url.encode("utf-8"), digest_size=8).hexdigest()


def keyed_hash64(key: bytes, value: str) -> int:
    """Unsigned 64-bit keyed hash: the shuffle order of documents for a given seed."""
    digest = hashlib.blake2b(value.encode("utf-8"), digest_size=8, key=key).digest()
    return int.from_bytes(digest, "big")


def seed_key(seed: int) -> bytes:
    return seed.to_bytes(8, "big", signed=False)


def seeded_pair64(seed: int, index: int) -> tuple[int, int]:
    """Two unsigned 64-bit words for (seed, index), the same on every machine: MinHash's
    permutation coefficients."""
    digest = hashlib.blake2b(f"{seed}:{index}".encode(), digest_size=16).digest()
    return int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:], "little")


def hash64(text: str) -> int:
    """Stable 64-bit hash (blake2b), never 0 (0 marks 'no line' in line hashes)."""
    value = int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
    return value or 1


def fmix64(values: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finalizer, vectorised: a bijection that mixes every bit."""
    z = values ^ (values >> _S33)
    z *= _C1
    z ^= z >> _S33
    z *= _C2
    z ^= z >> _S33
    return z


def owner_of(keys: np.ndarray, size: int) -> np.ndarray:
    """Which of `size` owners (MPI ranks, an index's buckets) holds each 64-bit key (keys are mixed
    first, so any key spreads evenly)."""
    return (fmix64(keys.astype(np.uint64, copy=True)) % np.uint64(size)).astype(np.int64)


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 22) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def pinned_sha256(path: str | os.PathLike, expected_sha256: str | None, key: str, make: str,
                  error: type[Exception] = ValueError) -> str:
    """The sha256 of the file `path` that config key `key` names (`key`.sha256 pins it to
    `expected_sha256`, None: no pin): `error`, naming the key, where it is missing (`make`: the
    command that makes one) or its bytes differ."""
    if not os.path.isfile(path):
        raise error(f"config key {key}.model: no model at {path} ({make})")
    actual = sha256_file(path)
    if expected_sha256 and actual != expected_sha256:
        raise error(f"config key {key}.sha256 pins {expected_sha256}, but {path} has sha256 {actual}")
    return actual


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_tree(path: str | os.PathLike) -> str:
    """sha256 of a directory's regular files: their relative paths and contents, in path order.
    Pins a model directory as sha256_file pins a tokenizer file."""
    digest = hashlib.sha256()
    root = os.fspath(path)
    files = sorted(os.path.relpath(os.path.join(folder, name), root)
                   for folder, _, names in os.walk(root) for name in names)
    for relative in files:
        digest.update(f"{relative}\0{sha256_file(os.path.join(root, relative))}\n".encode())
    return digest.hexdigest()
