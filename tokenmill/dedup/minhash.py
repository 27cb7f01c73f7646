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
import re
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa
from packaging.version import InvalidVersion, Version

from tokenmill.dedup.normalize import line_hashes, normalize_for_dedup, normalized_lines, tokens
from tokenmill.hashing import fmix64, hash64, seeded_pair64
from tokenmill.select.host_stats import host_of
from tokenmill.words import UNICODE, segmenter_of, words

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


@dataclass(frozen=True)
class CodeBands:
    """minhash.code: the bands a repository's documents fill, of how many rows (the schema holds
    the defaults); the other bands of their signatures stay empty."""
    bands: int
    rows: int


def permutation_coefficients(params: MinHashParams) -> tuple[np.ndarray, np.ndarray]:
    a = np.empty(params.permutations, dtype=np.uint64)
    b = np.empty(params.permutations, dtype=np.uint64)
    for k in range(params.permutations):
        first, second = seeded_pair64(params.seed, k)
        a[k] = first | 1  # odd: multiplication by it is a bijection mod 2^64
        b[k] = second
    return a, b


def shingle_tokens(normalized: str, lang: str | None) -> list[str]:
    """The words MinHash shingles: in a language with a segmenter of its own (tokenmill.words:
    Chinese, Japanese, Korean, Thai, ...) its words with a letter or digit, as FineWeb2 shingles each
    language's words; elsewhere runs of word characters, each Han, kana or Hangul character one token."""
    if segmenter_of(lang) == UNICODE:
        return tokens(normalized)
    return [word for word in words(normalized, lang) if any(char.isalnum() for char in word)]


class Shingler:
    """Word n-gram shingle hashes of one document at a time (word hashes are cached)."""

    def __init__(self, ngram: int, cache_limit: int = 1 << 20):
        self.ngram = ngram
        self._cache: dict[str, int] = {}
        self._cache_limit = cache_limit

    def word_hashes(self, words: list[str]) -> np.ndarray:
        """hash64 of each word: the words not cached yet are hashed once each (and cached while the
        cache has room), then every word is looked up, with no Python call per word."""
        cache = self._cache
        new = set(words).difference(cache)
        uncached = {}
        for word in new:
            if len(cache) < self._cache_limit:
                cache[word] = hash64(word)
            else:
                uncached[word] = hash64(word)
        if uncached:  # the cache is full
            return np.fromiter((cache[word] if word in cache else uncached[word] for word in words), dtype=np.uint64,
                               count=len(words))
        return np.fromiter(map(cache.__getitem__, words), dtype=np.uint64, count=len(words))

    def shingles(self, normalized: str, lang: str | None = None) -> np.ndarray:
        """Hashes of the word n-grams, words by `lang`'s segmenter (shingle_tokens); a document
        shorter than one n-gram is one shingle, the hash of its whole normalized text (so it still
        has a defined signature)."""
        return self.shingle_sets([normalized], [lang])[0]

    def shingle_sets(self, texts: list[str], langs: list[str | None]) -> list[np.ndarray]:
        """`shingles` of each normalized text of a batch, the n-grams of all of them hashed at once
        (numpy's cost per call is paid once a batch, not once a text): an n-gram's hash is of its own
        words alone, so those that run from one text into the next are computed and left out."""
        word_sets = [self.word_hashes(shingle_tokens(text, lang)) for text, lang in zip(texts, langs)]
        words = np.concatenate(word_sets) if word_sets else np.zeros(0, dtype=np.uint64)
        count = len(words) - self.ngram + 1
        shingles = words[:max(count, 0)].copy()
        for offset in range(1, self.ngram):
            shingles = fmix64(shingles * _PRIME + words[offset:offset + len(shingles)])
        found, start = [], 0
        for text, text_words in zip(texts, word_sets):
            own = len(text_words) - self.ngram + 1
            found.append(shingles[start:start + own] if own > 0 else np.array([hash64(text)], dtype=np.uint64))
            start += len(text_words)
        return found


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


_TIMESTAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)Z")


def _epoch_seconds(timestamp: str | None) -> int:
    if not timestamp:
        return int(MISSING_TIME)
    # the form extract writes, read without strptime (a tenth of its CPU); any other, as strptime reads it
    fields = _TIMESTAMP.fullmatch(timestamp) if timestamp.isascii() else None
    if fields:
        moment = dt.datetime(*map(int, fields.groups()), tzinfo=dt.timezone.utc)
    else:
        moment = dt.datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
    return int(moment.timestamp())


def signature_schema(params: MinHashParams) -> pa.Schema:
    return pa.schema(
        [("row", pa.int64()), ("doc_id", pa.string()), ("fetch_ts", pa.int64()), ("url_key", pa.uint64()),
         ("record_key", pa.uint64()), ("content_hash", pa.uint64()), ("host", pa.string()), ("url_hash", pa.uint64()),
         ("signature", pa.list_(pa.uint64(), params.permutations)), ("line_hashes", pa.list_(pa.uint64()))]
        + [(f"band_{j:02d}", pa.uint64()) for j in range(params.bands)])


def version_rank(version: str | None) -> int:
    """A release's place among the versions of its project, larger for newer: the first four
    numbers of its PEP 440 release, 15 bits each (pre-releases and local parts are not told
    apart); 0 when it is not a version."""
    try:
        release = Version(version or "").release
    except InvalidVersion:
        return 0
    rank = 0
    for number in (release + (0, 0, 0, 0))[:4]:
        rank = (rank << 15) | min(number, 2**15 - 1)
    return rank


def _repository_keys(code: dict) -> tuple[int, int]:
    """(fetch_ts, url_key) of a repository's documents: the order minhash_cluster and select keep
    the copy of a repository by, newest version first, then most files, then name (by hash)."""
    repository = code["repository"]
    files = min(code["features"]["file_count"], 2**32 - 1)
    return -version_rank(repository["version"]), ((2**32 - 1 - files) << 32) | (hash64(repository["name"]) >> 32)


def _code_bands(signature: np.ndarray, doc_ids: list[str], params: MinHashParams, code: CodeBands) -> np.ndarray:
    """Repository documents' bands: the first `code.bands` from their sketch's signature, the rest
    unique to the document, so that they join no bucket."""
    if code.bands > params.bands or code.bands * code.rows > params.permutations:
        raise ValueError(f"minhash.code: {code.bands} bands x {code.rows} rows exceed minhash.bands ({params.bands}) "
                         f"or minhash.permutations ({params.permutations})")
    bands = np.empty((len(signature), params.bands), dtype=np.uint64)
    bands[:, :code.bands] = band_hashes(signature, code.bands, code.rows)
    for j in range(code.bands, params.bands):
        bands[:, j] = [hash64(f"unbanded:{j}:{doc_id}") for doc_id in doc_ids]
    return bands


def signature_rows(docs: list[dict], params: MinHashParams, first_row: int, shingler: Shingler,
                   coefficients: tuple[np.ndarray, np.ndarray], code_bands: CodeBands | None = None,
                   langs: list[str] | None = None) -> pa.Table:
    """Hash every document of a batch whose first document is row `first_row` of its part:
    content hash, line hashes, MinHash signature and bands, plus the keys that order copies
    (fetch time, url, record) and the url's host and hash, which host_stats counts. Shingles are
    words of each document's language (`langs`, langid's; None: every document as `unicode`). Bands are
    separate columns, so one band can be read without the others. A repository's document
    (extract_meta.code) is signed by its repository's line sketch, not its own text: every
    document of a repository gets the repository's signature, so repositories cluster whole (`code_bands`, minhash.code, sets their threshold; None: the bands
    and rows of `params`)."""
    columns: dict[str, list] = {name: [] for name in ("doc_id", "fetch_ts", "url_key", "record_key", "content_hash",
                                                      "host", "url_hash")}
    shingle_sets, lines, code_rows, texts, text_rows = [], [], [], [], []
    for row, doc in enumerate(docs):
        code = doc["extract_meta"].get("code") if doc.get("extract_meta") else None
        normalized = normalized_lines(doc["text"])  # read once for the line hashes, content hash and shingles
        lines.append(line_hashes(doc["text"], normalized))
        columns["doc_id"].append(doc["doc_id"])
        columns["record_key"].append(hash64(doc.get("record_id") or ""))
        normalized_text = normalize_for_dedup(doc["text"], normalized)
        columns["content_hash"].append(hash64(normalized_text))
        url_hash = hash64(doc.get("url") or "")
        columns["host"].append(host_of(doc.get("url")))
        columns["url_hash"].append(url_hash)
        if code:
            code_rows.append(row)
            sketch = np.array([int(value, 16) for value in code["sketch"]], dtype=np.uint64)
            shingle_sets.append(sketch if len(sketch) else np.array([hash64(code["repository"]["name"])], np.uint64))
            fetch_ts, url_key = _repository_keys(code)
        else:
            text_rows.append(row)
            texts.append(normalized_text)
            shingle_sets.append(None)  # the batch's texts are shingled at once, below
            fetch_ts, url_key = _epoch_seconds(doc.get("fetch_ts")), url_hash
        columns["fetch_ts"].append(fetch_ts)
        columns["url_key"].append(url_key)
    for row, shingles in zip(text_rows, shingler.shingle_sets(texts, [langs[row] if langs else None
                                                                      for row in text_rows])):
        shingle_sets[row] = shingles
    count = len(shingle_sets)
    signature = signatures(shingle_sets, params, coefficients) if count else np.zeros((0, params.permutations), np.uint64)
    bands = band_hashes(signature, params.bands, params.rows)
    if code_rows:
        bands[code_rows] = _code_bands(signature[code_rows], [columns["doc_id"][row] for row in code_rows], params,
                                       code_bands or CodeBands(params.bands, params.rows))
    arrays = [
        pa.array(np.arange(first_row, first_row + count, dtype=np.int64)),
        pa.array(columns["doc_id"], pa.string()),
        pa.array(np.array(columns["fetch_ts"], dtype=np.int64)),
        *(pa.array(np.array(columns[name], dtype=np.uint64)) for name in ("url_key", "record_key", "content_hash")),
        pa.array(columns["host"], pa.string()),
        pa.array(np.array(columns["url_hash"], dtype=np.uint64)),
        pa.FixedSizeListArray.from_arrays(pa.array(signature.reshape(-1)), params.permutations),
        pa.ListArray.from_arrays(pa.array(np.concatenate([[0], np.cumsum([len(x) for x in lines])]).astype(np.int32)),
                                 pa.array(np.concatenate(lines) if lines else np.zeros(0, np.uint64), pa.uint64())),
        *(pa.array(bands[:, j]) for j in range(params.bands)),
    ]
    return pa.Table.from_arrays(arrays, schema=signature_schema(params))
