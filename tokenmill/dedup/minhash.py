"""MinHash: vectorised 64-bit MinHash signatures and LSH band hashes.

Shingles are word n-grams of the normalized text, hashed to well-mixed 64-bit values
(fmix64); permutation k is the bijection h_k(x) = a_k * x + b_k mod 2^64 with odd a_k,
(a_k, b_k) derived from the seed by blake2b, so signatures are identical on every machine
and NumPy version. Because the shingle hashes are already mixed, the affine map suffices
for min-wise hashing (the Jaccard estimate is tested against exact Jaccard) and costs two
vector operations per permutation. All arithmetic is NumPy uint64 (wrapping), over
cache-sized batches of shingles.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa

from tokenmill.dedup.normalize import content_hash, line_hashes, normalize_for_dedup, tokens
from tokenmill.hashing import fmix64, hash64, seeded_pair64
from tokenmill.sidecar import DOCUMENTS_PER_BATCH, write_sidecar

_PRIME = np.uint64(0x9E3779B97F4A7C15)  # odd: multiplication by it is a bijection mod 2^64
BATCH_SHINGLES = 1 << 18
MISSING_TIME = np.iinfo(np.int64).max  # documents without a fetch time sort last


@dataclass(frozen=True)
class MinHashParams:
    """The signature keys of the `minhash` config section (the schema holds their defaults)."""

    permutations: int
    bands: int
    rows: int
    ngram: int
    seed: int

    def __post_init__(self):
        if self.bands * self.rows > self.permutations:
            raise ValueError(f"minhash: bands x rows = {self.bands * self.rows} exceeds permutations "
                             f"({self.permutations})")

    @property
    def threshold(self) -> float:
        """The similarity at which a pair becomes a candidate with probability ~1/2."""
        return (1 / self.bands) ** (1 / self.rows)

    def as_metadata(self) -> dict[str, str]:
        return {f"minhash.{key}": str(value) for key, value in asdict(self).items()}


def permutation_coefficients(params: MinHashParams) -> tuple[np.ndarray, np.ndarray]:
    a = np.empty(params.permutations, dtype=np.uint64)
    b = np.empty(params.permutations, dtype=np.uint64)
    for k in range(params.permutations):
        first, second = seeded_pair64(params.seed, k)
        a[k] = first | 1  # odd: multiplication by it is a bijection mod 2^64
        b[k] = second
    return a, b


class Shingler:
    """Word n-gram shingle hashes of one document at a time (word hashes are cached)."""

    def __init__(self, ngram: int, cache_limit: int = 1 << 20):
        self.ngram = ngram
        self._cache: dict[str, int] = {}
        self._cache_limit = cache_limit

    def _word_hash(self, word: str) -> int:
        value = self._cache.get(word)
        if value is None:
            value = hash64(word)
            if len(self._cache) < self._cache_limit:
                self._cache[word] = value
        return value

    def shingles(self, normalized: str) -> np.ndarray:
        """Hashes of the word n-grams; a document shorter than one n-gram is one shingle,
        the hash of its whole normalized text (so it still has a defined signature)."""
        words = np.fromiter((self._word_hash(w) for w in tokens(normalized)), dtype=np.uint64)
        count = len(words) - self.ngram + 1
        if count <= 0:
            return np.array([hash64(normalized)], dtype=np.uint64)
        shingles = words[:count].copy()
        for offset in range(1, self.ngram):
            shingles = fmix64(shingles * _PRIME + words[offset:offset + count])
        return shingles


def signatures(shingle_sets: list[np.ndarray], params: MinHashParams,
               coefficients: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
    """(documents, permutations) uint64 MinHash signatures; each shingle set must be non-empty."""
    a, b = coefficients or permutation_coefficients(params)
    out = np.empty((len(shingle_sets), params.permutations), dtype=np.uint64)
    start = 0
    while start < len(shingle_sets):
        stop, total = start, 0
        while stop < len(shingle_sets) and (stop == start or total + len(shingle_sets[stop]) <= BATCH_SHINGLES):
            total += len(shingle_sets[stop])
            stop += 1
        flat = np.concatenate(shingle_sets[start:stop])
        offsets = np.zeros(stop - start, dtype=np.int64)
        np.cumsum([len(s) for s in shingle_sets[start:stop - 1]], out=offsets[1:])
        permuted = np.empty_like(flat)
        for k in range(params.permutations):
            np.multiply(flat, a[k], out=permuted)
            np.add(permuted, b[k], out=permuted)
            out[start:stop, k] = np.minimum.reduceat(permuted, offsets)
        start = stop
    return out


def band_hashes(signature: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """(documents, bands) uint64: band j hashes signature rows j*rows .. (j+1)*rows-1."""
    blocks = signature[:, : bands * rows].reshape(len(signature), bands, rows)
    hashes = np.full((len(signature), bands), np.uint64(rows), dtype=np.uint64)
    for i in range(rows):
        hashes = fmix64(hashes * _PRIME + blocks[:, :, i])
    return hashes


def estimated_jaccard(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(a == b))


def candidate_probability(similarity: float, bands: int, rows: int) -> float:
    return 1.0 - (1.0 - similarity**rows) ** bands


def _epoch_seconds(timestamp: str | None) -> int:
    if not timestamp:
        return int(MISSING_TIME)
    moment = dt.datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
    return int(moment.timestamp())


def signature_schema(params: MinHashParams) -> pa.Schema:
    return pa.schema(
        [("row", pa.int64()), ("doc_id", pa.string()), ("fetch_ts", pa.int64()), ("url_key", pa.uint64()),
         ("record_key", pa.uint64()), ("content_hash", pa.uint64()),
         ("signature", pa.list_(pa.uint64(), params.permutations)), ("line_hashes", pa.list_(pa.uint64()))]
        + [(f"band_{j:02d}", pa.uint64()) for j in range(params.bands)])


def signature_rows(docs: list[dict], params: MinHashParams, first_row: int, shingler: Shingler,
                   coefficients: tuple[np.ndarray, np.ndarray]) -> pa.Table:
    """Hash every document of a batch whose first document is row `first_row` of its part:
    content hash, line hashes, MinHash signature and bands, plus the keys that order copies
    (fetch time, url, record). Bands are separate columns, so one band can be read without the
    others."""
    columns: dict[str, list] = {name: [] for name in ("doc_id", "fetch_ts", "url_key", "record_key", "content_hash")}
    shingle_sets, lines = [], []
    for doc in docs:
        normalized = normalize_for_dedup(doc["text"])
        shingle_sets.append(shingler.shingles(normalized))
        lines.append(line_hashes(doc["text"]))
        columns["doc_id"].append(doc["doc_id"])
        columns["fetch_ts"].append(_epoch_seconds(doc.get("fetch_ts")))
        columns["url_key"].append(hash64(doc.get("url") or ""))
        columns["record_key"].append(hash64(doc.get("record_id") or ""))
        columns["content_hash"].append(content_hash(doc["text"]))
    count = len(shingle_sets)
    signature = signatures(shingle_sets, params, coefficients) if count else np.zeros((0, params.permutations), np.uint64)
    bands = band_hashes(signature, params.bands, params.rows)
    arrays = [
        pa.array(np.arange(first_row, first_row + count, dtype=np.int64)),
        pa.array(columns["doc_id"], pa.string()),
        pa.array(np.array(columns["fetch_ts"], dtype=np.int64)),
        *(pa.array(np.array(columns[name], dtype=np.uint64)) for name in ("url_key", "record_key", "content_hash")),
        pa.FixedSizeListArray.from_arrays(pa.array(signature.reshape(-1)), params.permutations),
        pa.ListArray.from_arrays(pa.array(np.concatenate([[0], np.cumsum([len(x) for x in lines])]).astype(np.int32)),
                                 pa.array(np.concatenate(lines) if lines else np.zeros(0, np.uint64), pa.uint64())),
        *(pa.array(bands[:, j]) for j in range(params.bands)),
    ]
    return pa.Table.from_arrays(arrays, schema=signature_schema(params))


def signatures_part(docs_path: str, out_path: str, params: MinHashParams,
                    batch_size: int = DOCUMENTS_PER_BATCH) -> int:
    """signature_rows of every document of a part, with the parameters as file metadata."""
    shingler, coefficients = Shingler(params.ngram), permutation_coefficients(params)
    done = 0

    def rows(docs: list[dict]) -> pa.Table:
        nonlocal done
        table = signature_rows(docs, params, done, shingler, coefficients)
        done += len(docs)
        return table

    table = write_sidecar(docs_path, out_path, rows, signature_schema(params), batch_size, "signatures",
                          params.as_metadata())
    return table.num_rows
