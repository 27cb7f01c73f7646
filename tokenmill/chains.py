"""Chains of related documents for long-context training (In-Context Pretraining, Shi et al. 2023:
a nearest-neighbour graph and a greedy walk through it), built at snapshot scale in three steps,
none of which is one process over a snapshot:

1. `fit` (once per snapshot, on a sample: the first documents of each part, chains.sample_documents in all)
   learns the model every other step shares: the document frequency of the sample's most common
   words (their IDF) and `centroids` coarse topic centroids (seeded spherical k-means). A small
   file (a few MB), read by every job.
2. `part` (one job per part, like score) reads the part's documents, the language of each (the
   langid side-car), its MinHash signatures (the signatures side-car: nothing is shingled again)
   and, when given, select's table (only selected documents are chained). For each kept
   document it writes its routing key (the nearest centroid), its estimated tokens, a compact
   topic vector (hashed TF-IDF of its words, `dims` int8 values) and the first `permutations`
   MinHash values (low 32 bits) for the near-duplicate check, rows sorted by key with row-group
   statistics on the key.
3. `bucket` (K jobs, job b takes the keys [b*C/K, (b+1)*C/K) of the C centroids; or one MPI
   job whose ranks swap rows by `bucket_of`, as minhash_cluster does) reads its key range from
   every part's file. Within the range, a centroid's documents are split by seeded k-means
   until a leaf holds at most `leaf_size` of them; each leaf's exact k-nearest-neighbour graph
   (cosine of the topic vectors) is walked greedily: from a start (in seeded order) to its most
   similar unvisited neighbour, and on, while the chain's tokens fit `token_budget`; a neighbour
   whose estimated Jaccard with the chain's last document exceeds `near_duplicate`, or whose
   similarity is below `min_similarity`, is passed over. A chain of two or more documents is a
   group: rows (doc_id, group_id, group_pos), sorted by group_id (a hash of its first doc_id),
   so that consecutive groups in the file are unrelated. A document no chain takes has no row.

A snapshot's bucket step runs as one MPI job (chain_snapshot, given a communicator: its ranks
swap rows by bucket_of as minhash_cluster does, and the groups go back to the ranks that read the
parts, which write one file per part for tokenize); bucket_file is the same step as a job per key
range, for a benchmark.

Words are read by each language's segmenter (tokenmill.words), so Chinese, Thai or Japanese
documents have words too; the weights (IDF) come from the data, not a word list of one
language. Every output is deterministic: topic vectors and centroids are int8, so their dot
products are integers that float32 holds exactly (dims x 127^2 < 2^24) in any summation order,
and every choice breaks ties by index or hash. Nothing here imports Snakemake, and mpi4py only
where chain_snapshot runs.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from typing import Iterable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tokenmill.hashing import fmix64, hash64
from tokenmill.io import read_lines_zst, write_parquet
from tokenmill.sidecar import parse_document
from tokenmill.words import words

_SIGN_BIT = np.uint64(1 << 63)


@dataclass(frozen=True)
class ChainParams:
    # the config's `chains` section (schema defaults: tokenmill.config.schema_settings)
    token_budget: int               # estimated tokens of a chain at most
    centroids: int                  # routing keys: the key space the bucket jobs divide
    min_similarity: float           # cosine below which a document is no neighbour
    near_duplicate: float           # estimated Jaccard above which two documents are never adjacent
    # constants of the method, and the run's seed and minhash.permutations (chain_params)
    dims: int = 256                 # topic vector length (int8 values); dims * 127^2 must stay below 2^24
    vocabulary: int = 1 << 17       # the most common words of the sample whose IDF the model keeps
    fit_iterations: int = 8
    max_chars: int = 20_000         # a document's topic is read from its first characters
    bytes_per_token: float = 4.0    # tokens are estimated, as UTF-8 bytes / bytes_per_token
    permutations: int = 112         # MinHash values kept per document (low 32 bits) for the near-duplicate
                                    # check: minhash.permutations, so that it sees what dedup sees
    leaf_size: int = 4096           # documents whose neighbour graph is computed exactly, together
    neighbours: int = 16
    seed: int = 0

    def __post_init__(self):
        if self.dims * 127 * 127 >= 1 << 24:
            raise ValueError(f"chains: dims {self.dims} too large for exact float32 dot products")

    def as_metadata(self) -> dict[str, str]:
        return {f"chains.{key}": str(value) for key, value in asdict(self).items()}


@dataclass
class ChainModel:
    """The IDF of the sample's common words (sorted word hashes) and the int8 centroids."""
    word_keys: np.ndarray     # uint64, sorted
    word_idf: np.ndarray      # float32
    default_idf: float        # a word the table does not hold
    centroids: np.ndarray     # int8 (centroids, dims)


# -------------------------------------------------------------------------------------------- vectors

class WordHasher:
    """hash64 of a document's words (case-folded, those with a letter or digit), cached."""

    def __init__(self, cache_limit: int = 1 << 20):
        self._cache: dict[str, int] = {}
        self._limit = cache_limit

    def __call__(self, text: str, lang: str | None, max_chars: int) -> np.ndarray:
        cache = self._cache
        found = []
        for word in words(text[:max_chars], lang):
            value = cache.get(word)
            if value is None:
                if not any(char.isalnum() for char in word):
                    value = 0
                else:
                    value = hash64(word.casefold())
                if len(cache) < self._limit:
                    cache[word] = value
            if value:
                found.append(value)
        return np.array(found, dtype=np.uint64)


def _quantized(rows: np.ndarray) -> np.ndarray:
    """float rows -> int8 rows of the same direction, the largest value of each row +-127."""
    scale = np.abs(rows).max(axis=1, keepdims=True)
    scale[scale == 0] = 1
    return np.rint(rows * (127.0 / scale)).astype(np.int8)


def topic_vectors(word_sets: list[np.ndarray], model: ChainModel | None, dims: int) -> np.ndarray:
    """(documents, dims) int8: each document's words weighted (1 + log tf) * idf, hashed to a
    dimension with a sign (feature hashing), scaled to int8. `model` None: idf 1 (the fit step's
    first pass has no IDF yet)."""
    out = np.zeros((len(word_sets), dims), dtype=np.float64)
    for row, hashes in enumerate(word_sets):
        if not len(hashes):
            continue
        keys, counts = np.unique(hashes, return_counts=True)
        weights = 1.0 + np.log(counts)
        if model is not None:
            at = np.searchsorted(model.word_keys, keys)
            at[at == len(model.word_keys)] = 0
            known = model.word_keys[at] == keys if len(model.word_keys) else np.zeros(len(keys), bool)
            weights *= np.where(known, model.word_idf[at] if len(model.word_idf) else 0, model.default_idf)
        mixed = fmix64(keys ^ np.uint64(0x5BD1E9955BD1E995))
        signs = np.where(mixed & _SIGN_BIT, -1.0, 1.0)
        np.add.at(out[row], (mixed % np.uint64(dims)).astype(np.int64), signs * weights)
    return _quantized(out)


def _unit(vectors: np.ndarray) -> np.ndarray:
    """float32 rows scaled to length 1 (a zero row stays zero)."""
    as_float = vectors.astype(np.float32)
    norms = np.sqrt(np.einsum("ij,ij->i", as_float, as_float, dtype=np.float64)).astype(np.float32)
    norms[norms == 0] = 1
    return as_float, norms


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Cosine similarity of int8 rows a[i] and b[i] (exact dot products)."""
    fa, na = _unit(a)
    fb, nb = _unit(b)
    return np.einsum("ij,ij->i", fa, fb) / (na * nb)


def nearest(vectors: np.ndarray, centroids: np.ndarray, block: int = 8192) -> np.ndarray:
    """Each int8 row's most similar int8 centroid (cosine; the first on a tie)."""
    fc, nc = _unit(centroids)
    out = np.empty(len(vectors), dtype=np.int64)
    for start in range(0, len(vectors), block):
        dots = vectors[start:start + block].astype(np.float32) @ fc.T  # integers, exact
        out[start:start + block] = np.argmax(dots / nc, axis=1)
    return out


def kmeans(vectors: np.ndarray, count: int, seed: int, iterations: int) -> np.ndarray:
    """Seeded spherical k-means of int8 rows into `count` int8 centroids: the first centroids are
    the rows first in seeded hash order, each later one the mean direction of its members."""
    count = max(1, min(count, len(vectors)))
    order = np.argsort(fmix64(np.arange(len(vectors), dtype=np.uint64) ^ np.uint64(hash64(f"kmeans:{seed}"))),
                       kind="stable")
    centroids = vectors[order[:count]].copy()
    fv, nv = _unit(vectors)
    directions = fv.astype(np.float64) / nv[:, None].astype(np.float64)
    for _ in range(iterations):
        members = nearest(vectors, centroids)
        sums = np.zeros((count, vectors.shape[1]), dtype=np.float64)
        np.add.at(sums, members, directions)
        filled = np.bincount(members, minlength=count) > 0
        updated = _quantized(sums[filled])
        if np.array_equal(updated, centroids[filled]):
            break
        centroids[filled] = updated
    return centroids


# ---------------------------------------------------------------------------------------- step 1: fit

def fit(word_sets: list[np.ndarray], params: ChainParams) -> ChainModel:
    """The model of a sample: IDF of its `vocabulary` most common words and its centroids."""
    documents = len(word_sets)
    uniques = [np.unique(hashes) for hashes in word_sets]
    flat = np.concatenate(uniques) if uniques else np.zeros(0, np.uint64)
    keys, df = np.unique(flat, return_counts=True)
    if len(keys) > params.vocabulary:  # the most common, ties by hash
        keep = np.lexsort((keys, -df))[:params.vocabulary]
        keep.sort()
        keys, df = keys[keep], df[keep]
    idf = np.log((documents + 1) / (df + 1)).astype(np.float32) + np.float32(1)
    model = ChainModel(keys, idf, float(math.log(documents + 1) + 1), np.zeros((0, params.dims), np.int8))
    vectors = topic_vectors(word_sets, model, params.dims)
    if not np.abs(vectors).sum():
        model.centroids = np.zeros((1, params.dims), np.int8)
        return model
    model.centroids = kmeans(vectors[np.abs(vectors).sum(axis=1) > 0], params.centroids, params.seed,
                             params.fit_iterations)
    return model


def write_model(path: str, model: ChainModel, params: ChainParams) -> None:
    """One parquet file: the word rows (word_hash, idf) then the centroid rows (centroid, vector)."""
    words_table = pa.table({"word_hash": pa.array(model.word_keys, pa.uint64()),
                            "idf": pa.array(model.word_idf, pa.float32())})
    metadata = {**params.as_metadata(), "chains.default_idf": repr(model.default_idf),
                "chains.centroids_int8": model.centroids.tobytes().hex(),
                "chains.centroid_rows": str(len(model.centroids))}
    write_parquet(path, words_table.replace_schema_metadata(metadata))


def read_model(path: str) -> ChainModel:
    table = pq.read_table(path)
    metadata = {key.decode(): value.decode() for key, value in (table.schema.metadata or {}).items()}
    dims = int(metadata["chains.dims"])
    centroids = np.frombuffer(bytes.fromhex(metadata["chains.centroids_int8"]), dtype=np.int8)
    return ChainModel(table["word_hash"].to_numpy(), table["idf"].to_numpy(), float(metadata["chains.default_idf"]),
                      centroids.reshape(int(metadata["chains.centroid_rows"]), dims).copy())


def fit_files(docs_paths: list[str], langid_paths: list[str | None], out: str, params: ChainParams,
              per_part: int = 2000) -> ChainModel:
    """The fit step: the first `per_part` documents of each part (in the order given)."""
    hasher, word_sets = WordHasher(), []
    for docs_path, langid_path in zip(docs_paths, langid_paths):
        langs = _langs(langid_path)
        for row, line in enumerate(read_lines_zst(docs_path)):
            if row >= per_part:
                break
            doc = parse_document(line)
            word_sets.append(hasher(doc["text"], langs.get(doc["doc_id"]), params.max_chars))
    model = fit(word_sets, params)
    write_model(out, model, params)
    return model


# --------------------------------------------------------------------------------------- step 2: part

def part_schema(params: ChainParams) -> pa.Schema:
    return pa.schema([("key", pa.uint32()), ("doc_id", pa.string()), ("tokens", pa.int32()),
                      ("vector", pa.list_(pa.int8(), params.dims)),
                      ("minhash", pa.list_(pa.uint32(), params.permutations))])


def part_rows(doc_ids: list[str], word_sets: list[np.ndarray], tokens: list[int], signatures: np.ndarray,
              model: ChainModel, params: ChainParams) -> pa.Table:
    """The part step's table for documents already read: rows sorted by (key, doc_id)."""
    vectors = topic_vectors(word_sets, model, params.dims)
    keys = nearest(vectors, model.centroids).astype(np.uint32) if len(vectors) else np.zeros(0, np.uint32)
    minhash = (signatures[:, :params.permutations] & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    order = sorted(range(len(doc_ids)), key=lambda i: (int(keys[i]), doc_ids[i]))
    table = pa.Table.from_arrays([
        pa.array(keys[order], pa.uint32()), pa.array([doc_ids[i] for i in order], pa.string()),
        pa.array(np.array(tokens, dtype=np.int32)[order] if order else np.zeros(0, np.int32), pa.int32()),
        pa.FixedSizeListArray.from_arrays(pa.array(vectors[order].reshape(-1), pa.int8()), params.dims),
        pa.FixedSizeListArray.from_arrays(pa.array(minhash[order].reshape(-1), pa.uint32()), params.permutations),
    ], schema=part_schema(params))
    return table


def _langs(langid_path: str | None) -> dict[str, str]:
    if not langid_path:
        return {}
    table = pq.read_table(langid_path, columns=["doc_id", "lang"])
    return dict(zip(table["doc_id"].to_pylist(), table["lang"].to_pylist()))


def _fixed_rows(column, dtype) -> np.ndarray:
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    width = array.type.list_size
    return array.flatten().to_numpy(zero_copy_only=False).astype(dtype, copy=False).reshape(len(array), width)


def part_file(docs_path: str, signatures_path: str, out: str, model: ChainModel, params: ChainParams,
              langid_path: str | None = None, select_path: str | None = None) -> int:
    """The part step on a part's files; returns the number of documents written."""
    signature_table = pq.read_table(signatures_path, columns=["doc_id", "signature"])
    signature_of = dict(zip(signature_table["doc_id"].to_pylist(), range(signature_table.num_rows)))
    all_signatures = _fixed_rows(signature_table["signature"], np.uint64)
    if all_signatures.shape[1] < params.permutations:
        raise ValueError(f"chains: {params.permutations} permutations asked, signatures have {all_signatures.shape[1]}")
    kept = None
    if select_path:
        selection = pq.read_table(select_path, columns=["doc_id", "selected"])
        kept = {doc_id for doc_id, selected in zip(selection["doc_id"].to_pylist(), selection["selected"].to_pylist())
                if selected}
    langs, hasher = _langs(langid_path), WordHasher()
    doc_ids, word_sets, tokens, rows = [], [], [], []
    for line in read_lines_zst(docs_path):
        doc = parse_document(line)
        doc_id = doc["doc_id"]
        if (kept is not None and doc_id not in kept) or doc_id not in signature_of:
            continue
        doc_ids.append(doc_id)
        word_sets.append(hasher(doc["text"], langs.get(doc_id), params.max_chars))
        tokens.append(estimated_tokens(doc["text"], params.bytes_per_token))
        rows.append(signature_of[doc_id])
    table = part_rows(doc_ids, word_sets, tokens, all_signatures[rows], model, params)
    write_parquet(out, table.replace_schema_metadata(params.as_metadata()), statistics=["key"],
                  row_group_rows=1 << 14)
    return table.num_rows


def estimated_tokens(text: str, bytes_per_token: float) -> int:
    return max(1, int(len(text.encode("utf-8")) / bytes_per_token + 0.999))


# ------------------------------------------------------------------------------------- step 3: bucket

def bucket_of(keys: np.ndarray, buckets: int, centroids: int) -> np.ndarray:
    """Which of `buckets` jobs (or MPI ranks) owns each key: contiguous ranges of the key space."""
    return (keys.astype(np.int64) * buckets) // centroids


def key_range(bucket: int, buckets: int, centroids: int) -> tuple[int, int]:
    """[first, last) keys of a bucket (the keys k with bucket_of(k) == bucket)."""
    return -(-bucket * centroids // buckets), -(-(bucket + 1) * centroids // buckets)


def read_bucket(part_paths: Iterable[str], bucket: int, buckets: int, centroids: int) -> pa.Table:
    """A bucket's rows from every part's file: only the row groups whose key statistics reach it."""
    first, last = key_range(bucket, buckets, centroids)
    tables = [pq.read_table(path, filters=[("key", ">=", first), ("key", "<", last)]) for path in part_paths]
    tables = [table.replace_schema_metadata(None) for table in tables]
    return pa.concat_tables(tables) if tables else None


def _leaves(vectors: np.ndarray, rows: np.ndarray, params: ChainParams, depth: int = 0) -> list[np.ndarray]:
    """`rows` split by seeded k-means until each part holds at most leaf_size documents."""
    if len(rows) <= params.leaf_size or depth > 8:
        return [rows]
    count = min(16, -(-2 * len(rows) // params.leaf_size))
    members = nearest(vectors[rows], kmeans(vectors[rows], count, params.seed + depth + 1, params.fit_iterations))
    if len(np.unique(members)) == 1:  # indistinguishable vectors: split in order
        return [rows[start:start + params.leaf_size] for start in range(0, len(rows), params.leaf_size)]
    return [leaf for m in np.unique(members) for leaf in _leaves(vectors, rows[members == m], params, depth + 1)]


def neighbour_lists(vectors: np.ndarray, k: int, block: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest neighbours of each int8 row among the others by cosine: (index, similarity)
    arrays of shape (n, k), most similar first, ties by index; -1 pads when n <= k."""
    n = len(vectors)
    k_used = min(k, n - 1)
    index = np.full((n, k), -1, dtype=np.int64)
    similarity = np.full((n, k), -np.inf, dtype=np.float32)
    if k_used <= 0:
        return index, similarity
    fv, norms = _unit(vectors)
    for start in range(0, n, block):
        stop = min(n, start + block)
        sims = (fv[start:stop] @ fv.T) / (norms[start:stop, None] * norms[None, :])
        sims[np.arange(stop - start), np.arange(start, stop)] = -np.inf
        # top k_used by (similarity desc, index asc): candidates by argpartition, then an exact sort
        part = np.argpartition(-sims, k_used - 1, axis=1)[:, :k_used]
        threshold = np.take_along_axis(sims, part, axis=1).min(axis=1, keepdims=True)
        for r in range(stop - start):
            candidates = np.flatnonzero(sims[r] >= threshold[r])
            best = candidates[np.lexsort((candidates, -sims[r, candidates]))][:k_used]
            index[start + r, :k_used] = best
            similarity[start + r, :k_used] = sims[r, best]
    return index, similarity


def estimated_jaccard_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a == b).mean(axis=-1)


def walk(index: np.ndarray, similarity: np.ndarray, tokens: np.ndarray, minhash: np.ndarray, starts: np.ndarray,
         params: ChainParams) -> list[list[int]]:
    """The greedy walk over a neighbour graph: chains (lists of row numbers) of two or more rows."""
    visited = np.zeros(len(index), dtype=bool)
    chains = []
    for start in starts.tolist():
        if visited[start]:
            continue
        visited[start] = True
        chain, total, current = [start], int(tokens[start]), start
        while True:
            step = -1
            for neighbour, sim in zip(index[current].tolist(), similarity[current].tolist()):
                if neighbour < 0 or sim < params.min_similarity:
                    break
                if visited[neighbour] or total + int(tokens[neighbour]) > params.token_budget:
                    continue
                if estimated_jaccard_rows(minhash[current], minhash[neighbour]) > params.near_duplicate:
                    continue  # never adjacent to its near-duplicate; another chain may take it
                step = neighbour
                break
            if step < 0:
                break
            visited[step] = True
            chain.append(step)
            total += int(tokens[step])
            current = step
        if len(chain) > 1:
            chains.append(chain)
    return chains


def group_id_of(first_doc_id: str) -> str:
    return f"{hash64('chain:' + first_doc_id):016x}"


GROUP_SCHEMA = pa.schema([("doc_id", pa.string()), ("group_id", pa.string()), ("group_pos", pa.int32())])


def build_chains(table: pa.Table, params: ChainParams) -> pa.Table:
    """One bucket's chains: (doc_id, group_id, group_pos) of every chained document, sorted by
    (group_id, group_pos). The result depends on the rows, not their order or the file they came from."""
    if table is None or table.num_rows == 0:
        return GROUP_SCHEMA.empty_table()
    doc_ids = table["doc_id"].to_pylist()
    keys = table["key"].to_numpy()
    order = np.array(sorted(range(len(doc_ids)), key=lambda i: (int(keys[i]), doc_ids[i])), dtype=np.int64)
    doc_ids = [doc_ids[i] for i in order]
    keys = keys[order]
    tokens = table["tokens"].to_numpy()[order]
    vectors = _fixed_rows(table["vector"], np.int8)[order]
    minhash = _fixed_rows(table["minhash"], np.uint32)[order]
    priority = fmix64(np.array([hash64(doc_id) for doc_id in doc_ids], dtype=np.uint64)
                      ^ np.uint64(hash64(f"walk:{params.seed}")))
    out_ids, out_groups, out_pos = [], [], []
    boundaries = np.flatnonzero(np.diff(keys)) + 1
    for rows in np.split(np.arange(len(doc_ids)), boundaries):
        for leaf in _leaves(vectors, rows, params):
            index, similarity = neighbour_lists(vectors[leaf], params.neighbours)
            starts = np.argsort(priority[leaf], kind="stable")
            for chain in walk(index, similarity, tokens[leaf], minhash[leaf], starts, params):
                group = group_id_of(doc_ids[leaf[chain[0]]])
                for position, row in enumerate(chain):
                    out_ids.append(doc_ids[leaf[row]])
                    out_groups.append(group)
                    out_pos.append(position)
    result = pa.table({"doc_id": pa.array(out_ids, pa.string()), "group_id": pa.array(out_groups, pa.string()),
                       "group_pos": pa.array(out_pos, pa.int32())}, schema=GROUP_SCHEMA)
    return result.sort_by([("group_id", "ascending"), ("group_pos", "ascending")])


@dataclass(frozen=True)
class ChainPart:
    """A part of the snapshot the MPI job chains: its part step's file, select's table of it (which
    documents the version keeps) and the file of its chained documents to write."""
    part: str
    vectors: str
    select: str
    out: str


def _selected_rows(part: ChainPart) -> pa.Table:
    """The part step's rows of the documents select keeps."""
    table = pq.read_table(part.vectors).replace_schema_metadata(None)
    selection = pq.read_table(part.select, columns=["doc_id", "selected"])
    kept = pa.array([doc_id for doc_id, selected in zip(selection["doc_id"].to_pylist(),
                                                        selection["selected"].to_pylist()) if selected], pa.string())
    return table.filter(pc.is_in(table["doc_id"], value_set=kept))


def chain_snapshot(comm, parts: list[ChainPart], params: ChainParams) -> int:
    """The bucket step of a snapshot as one MPI job on `comm` (mpi4py): each rank reads its share
    of the parts' selected rows, sends each row to the rank that owns its key (bucket_of over the
    ranks), chains what it owns (build_chains) and replies each row's group to the rank that read
    it, which writes its parts' files (doc_id, group_id, group_pos of the chained documents, by
    doc_id). A key's rows all meet on one rank, so any number of ranks gives the same files.
    Returns the chained documents of this rank's parts."""
    from mpi4py import MPI  # only here: the rest of this module runs without it

    from tokenmill.dedup.mpi import Exchange, assign_parts

    exchange = Exchange(comm)
    owners = assign_parts([pq.ParquetFile(part.vectors).metadata.num_rows for part in parts], exchange.size)
    mine = [number for number, owner in enumerate(owners) if owner == exchange.rank]
    tables = [_selected_rows(parts[number]) for number in mine]
    width = comm.allreduce(max((len(doc_id.encode()) for table in tables for doc_id in table["doc_id"].to_pylist()),
                               default=1), op=MPI.MAX)
    record = np.dtype([("key", np.uint32), ("tokens", np.int32), ("doc_id", f"S{width}"),
                       ("vector", np.int8, (params.dims,)), ("minhash", np.uint32, (params.permutations,))])
    records = np.zeros(sum(table.num_rows for table in tables), dtype=record)
    at = 0
    for table in tables:
        rows = slice(at, at + table.num_rows)
        records["key"][rows] = table["key"].to_numpy()
        records["tokens"][rows] = table["tokens"].to_numpy()
        records["doc_id"][rows] = [doc_id.encode() for doc_id in table["doc_id"].to_pylist()]
        if table.num_rows:
            records["vector"][rows] = _fixed_rows(table["vector"], np.int8)
            records["minhash"][rows] = _fixed_rows(table["minhash"], np.uint32)
        at += table.num_rows
    received, route = exchange.shuffle(bucket_of(records["key"], exchange.size, params.centroids).astype(np.int64),
                                       records)
    doc_ids = [doc_id.decode() for doc_id in received["doc_id"].tolist()]
    chains = build_chains(pa.table({
        "key": pa.array(received["key"], pa.uint32()), "doc_id": pa.array(doc_ids, pa.string()),
        "tokens": pa.array(received["tokens"], pa.int32()),
        "vector": pa.FixedSizeListArray.from_arrays(pa.array(received["vector"].reshape(-1), pa.int8()), params.dims),
        "minhash": pa.FixedSizeListArray.from_arrays(pa.array(received["minhash"].reshape(-1), pa.uint32()),
                                                     params.permutations)}), params)
    group_of = {doc_id: (group, position) for doc_id, group, position in
                zip(chains["doc_id"].to_pylist(), chains["group_id"].to_pylist(), chains["group_pos"].to_pylist())}
    answer = np.dtype([("group_id", "S16"), ("group_pos", np.int32)])
    answers = np.zeros(len(received), dtype=answer)
    for row, doc_id in enumerate(doc_ids):
        if doc_id in group_of:
            answers[row] = (group_of[doc_id][0].encode(), group_of[doc_id][1])
    replies = exchange.reply(route, answers)
    chained, at = 0, 0
    for number, table in zip(mine, tables):
        back = replies[at:at + table.num_rows]
        at += table.num_rows
        found = back["group_id"] != b""
        rows = pa.table({"doc_id": table["doc_id"].filter(pa.array(found)),
                         "group_id": pa.array([group.decode() for group in back["group_id"][found].tolist()], pa.string()),
                         "group_pos": pa.array(back["group_pos"][found], pa.int32())}, schema=GROUP_SCHEMA)
        write_parquet(parts[number].out, rows.sort_by("doc_id").replace_schema_metadata(params.as_metadata()))
        chained += rows.num_rows
    return chained


# The keys of the config's `chains` section each job's output depends on (chains.sources decides only
# which jobs there are): a changed key reruns those jobs and no others.
STEP_SETTINGS = {"chain_model": ("centroids", "sample_documents"), "chain_vectors": (),
                 "chain_groups": ("token_budget", "min_similarity", "near_duplicate")}


def step_settings(config: dict, step: str) -> dict:
    """What the output of chain job `step` depends on in the config, besides its inputs: its keys of
    the `chains` section, and the seed (the seeded k-means and walk)."""
    return {"seed": config["seed"], **{key: config["chains"][key] for key in STEP_SETTINGS[step]}}


def sample_per_part(settings: dict, parts: int) -> int:
    """Documents of each of a snapshot's `parts` that chain_model reads: the config's chains
    `sample_documents` shared equally (a snapshot's topics from a sample of fixed size, however large)."""
    return -(-settings["sample_documents"] // max(parts, 1))


def chain_params(settings: dict, seed: int, permutations: int) -> ChainParams:
    """ChainParams from the config's `chains` section, the run's seed and minhash.permutations."""
    return ChainParams(settings["token_budget"], settings["centroids"], settings["min_similarity"],
                       settings["near_duplicate"], permutations=permutations, seed=seed)


def add_chain_arguments(parser) -> None:
    """The options every chain job's script takes (rules/chains.smk's CHAIN_ARGUMENTS)."""
    parser.add_argument("--settings", required=True, help="the validated `chains` config section, as JSON")
    parser.add_argument("--seed", type=int, required=True, help="the run's seed")
    parser.add_argument("--permutations", type=int, required=True, help="minhash.permutations")


def chain_arguments(args) -> tuple[dict, ChainParams]:
    """The `chains` section and the ChainParams of a chain job's parsed options (add_chain_arguments)."""
    settings = json.loads(args.settings)
    return settings, chain_params(settings, args.seed, args.permutations)


def bucket_file(part_paths: list[str], bucket: int, buckets: int, out: str, params: ChainParams) -> int:
    """The bucket step on files: job `bucket` of `buckets` writes its chains; returns their rows."""
    chains = build_chains(read_bucket(part_paths, bucket, buckets, params.centroids), params)
    write_parquet(out, chains.replace_schema_metadata(params.as_metadata()))
    return chains.num_rows
