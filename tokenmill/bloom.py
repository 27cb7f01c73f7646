"""A Bloom filter over 64-bit keys, as numpy words: built in one vectorised pass, probed one
hash function at a time over the keys still in the running (most absent keys fail the first
probe or two, so a probe costs little more than one random memory read per key)."""

from __future__ import annotations

import math

import numpy as np

from tokenmill.hashing import fmix64


def bloom_size(count: int, rate: float) -> tuple[int, int]:
    """(bits, hash functions) for `count` keys at false-positive rate at most `rate`: the
    optimal size rounded up to a power of two (a mask instead of a modulo on every probe)."""
    optimal = max(64, int(math.ceil(-count * math.log(rate) / (math.log(2) ** 2))))
    return 1 << (optimal - 1).bit_length(), max(1, math.ceil(-math.log2(rate)))


def _base_hashes(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two base hashes of double hashing: probe i is first + i * second."""
    return fmix64(keys ^ np.uint64(0x5BD1E995)), fmix64(keys ^ np.uint64(0x27D4EB2F)) | np.uint64(1)


def build_bloom(keys: np.ndarray, rate: float) -> tuple[np.ndarray, int]:
    """(words, hash functions) of a filter holding `keys` (distinct or not)."""
    bits, hashes = bloom_size(max(len(keys), 1), rate)
    words = np.zeros(bits // 64, dtype=np.uint64)
    if len(keys):
        # one byte per bit, set one hash function at a time and packed into the words after: an
        # unbuffered scatter (np.bitwise_or.at) over all probes at once took ~10x the CPU, and the
        # (hashes x keys) probe array first-touched ~0.3 GB for the benchmarks' ~10^6 n-grams.
        # Bit b of word w is bit b % 8 of byte 8w + b // 8: packbits' 'little' order, read as
        # little-endian words.
        first, second = _base_hashes(keys)
        set_bits = np.zeros(bits, dtype=np.uint8)
        for step in range(hashes):
            set_bits[(first + np.uint64(step) * second) & np.uint64(bits - 1)] = 1
        words = np.packbits(set_bits, bitorder="little").view("<u8").astype(np.uint64)
    return words, hashes


def bloom_contains(words: np.ndarray, hashes: int, keys: np.ndarray) -> np.ndarray:
    """Membership of each key (false positives at the filter's rate, no false negatives)."""
    first, second = _base_hashes(keys)
    mask, alive = np.uint64(len(words) * 64 - 1), np.arange(len(keys))
    for step in range(hashes):
        if not len(alive):
            break
        positions = (first[alive] + np.uint64(step) * second[alive]) & mask
        alive = alive[(words[positions >> np.uint64(6)] >> (positions & np.uint64(63))) & np.uint64(1) == 1]
    member = np.zeros(len(keys), dtype=bool)
    member[alive] = True
    return member
