"""minhash_cluster: the one MPI job that turns per-part hashes into duplicate structure.

Every rank reads a contiguous share of the signature files (by document count) and then,
with record shuffles (Alltoallv) to the rank that owns each key:

1. exact groups: documents with the same content hash within a scope (source/snapshot);
   the canonical copy is the first by (fetch time, url, doc_id, record);
2. near-duplicate clusters: documents sharing any (band, band hash) LSH bucket within a
   scope; a bucket is capped (an oversized one is split by a secondary hash, counted),
   becomes chain edges over its sorted members, and the components of all edges are
   found by `DistributedForest`; the representative is the first member by the same key;
3. line counts: for every line, the number of near-duplicate clusters of the scope that
   contain it (so that a page copied a hundred times does not make its own lines look
   like boilerplate);
4. host stats (the workflow's, per snapshot): per host, its distinct urls, documents and
   near-duplicate clusters, counted by the rank that owns the host and gathered on rank 0,
   which writes the table (tokenmill.select.host_stats: select's crawler-trap rule reads it).
   A snapshot's hosts are counted where its documents already are, instead of by one job
   that reads every part again.

The workflow runs it once per snapshot (a new snapshot reclusters nothing older); across
snapshots, tokenmill.dedup.cross_snapshot probes a persistent index instead.

Each result depends only on the documents, never on the number of ranks or on how the
input is split into parts; `gid` (the document's position in the canonical part order)
serves only as an internal vertex id.
"""

from __future__ import annotations

import hashlib
import logging
import resource
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from mpi4py import MPI

from tokenmill.dedup.components import DistributedForest
from tokenmill.hashing import fmix64
from tokenmill.dedup.mpi import Exchange, assign_parts
from tokenmill.hashing import owner_of
from tokenmill.hashing import hash64
from tokenmill.io import write_parquet
from tokenmill.select.host_stats import HOST_COLUMNS, check_host_columns, host_table

log = logging.getLogger("tokenmill.minhash_cluster")

# The order that decides which copy is canonical / representative: earliest fetch, then url,
# then content address, then record; gid last (ties only between byte-identical records).
_KEY_FIELDS = [("fetch_ts", np.int64), ("url_key", np.uint64), ("id_hi", np.uint64), ("id_lo", np.uint64),
               ("record_key", np.uint64), ("gid", np.uint64)]
_KEYED = np.dtype([("group", np.uint64), *_KEY_FIELDS])
_ANSWER = np.dtype([("id_hi", np.uint64), ("id_lo", np.uint64), ("gid", np.uint64), ("size", np.int64)])
_BUCKET = np.dtype([("band", np.uint64), ("hash", np.uint64), ("split", np.uint64), ("gid", np.uint64)])
_LINE = np.dtype([("scope", np.uint64), ("line", np.uint64), ("label", np.uint64)])
_HOST_PAIR = np.dtype([("host_hi", np.uint64), ("host_lo", np.uint64), ("value_hi", np.uint64), ("value_lo", np.uint64)])

OUTPUT_SCHEMA = pa.schema([
    ("doc_id", pa.string()),
    ("content_hash", pa.uint64()),
    ("exact_canonical", pa.bool_()),
    ("exact_dup_of", pa.string()),
    ("exact_group_size", pa.int64()),
    ("dup_cluster_id", pa.string()),
    ("dup_cluster_size", pa.int64()),
    ("is_cluster_representative", pa.bool_()),
    ("line_doc_counts", pa.list_(pa.int32())),
    ("scope_clusters", pa.int64()),
])


@dataclass(frozen=True)
class ClusterPart:
    source: str
    snapshot: str
    part: str
    signatures: str
    output: str

    @property
    def scope(self) -> int:
        return hash64(f"{self.source}/{self.snapshot}")


@dataclass(frozen=True)
class ClusterSettings:
    """minhash.bucket_cap (the schema holds its default)."""

    bucket_cap: int


@dataclass
class Documents:
    """This rank's documents, concatenated over its parts in canonical order."""

    parts: list
    counts: list
    gid: np.ndarray
    scope: np.ndarray
    keys: np.ndarray  # _KEY_FIELDS
    doc_ids: list
    content_hash: np.ndarray
    bands: np.ndarray  # (documents, bands)
    line_offsets: np.ndarray
    lines: np.ndarray
    hosts: pa.ChunkedArray  # the url's host, "" without one
    url_hash: np.ndarray


def _id_words(doc_ids: list[str]) -> tuple[np.ndarray, np.ndarray]:
    raw = np.frombuffer(bytes.fromhex("".join(doc_ids)), dtype=">u8").astype(np.uint64) if doc_ids else np.zeros(0, np.uint64)
    return raw[0::2].copy(), raw[1::2].copy()


def _hex_ids(hi: np.ndarray, lo: np.ndarray) -> list[str]:
    words = np.empty(2 * len(hi), dtype=">u8")
    words[0::2], words[1::2] = hi, lo
    data = words.tobytes().hex()
    return [data[i:i + 32] for i in range(0, len(data), 32)]


def _load(parts: list[ClusterPart], offsets: list[int], band_names: list[str]) -> Documents:
    columns = ["row", "doc_id", "fetch_ts", "url_key", "record_key", "content_hash", "line_hashes", *HOST_COLUMNS]
    tables, bands_list, counts = [], [], []
    for part, offset in zip(parts, offsets):
        table = pq.read_table(part.signatures, columns=columns + band_names)
        tables.append((part, offset, table))
        counts.append(table.num_rows)
        bands_list.append(np.stack([table.column(name).to_numpy() for name in band_names], axis=1)
                          if table.num_rows else np.zeros((0, len(band_names)), np.uint64))
    n = sum(counts)
    keys = np.empty(n, dtype=np.dtype(_KEY_FIELDS))
    gid, scope = np.empty(n, np.uint64), np.empty(n, np.uint64)
    doc_ids, content, line_arrays, line_counts = [], np.empty(n, np.uint64), [], []
    position = 0
    for part, offset, table in tables:
        rows = table.num_rows
        chunk = slice(position, position + rows)
        gid[chunk] = offset + table.column("row").to_numpy().astype(np.uint64)
        scope[chunk] = part.scope
        ids = table.column("doc_id").to_pylist()
        doc_ids.extend(ids)
        keys["id_hi"][chunk], keys["id_lo"][chunk] = _id_words(ids)
        for name in ("fetch_ts", "url_key", "record_key"):
            keys[name][chunk] = table.column(name).to_numpy()
        keys["gid"][chunk] = gid[chunk]
        content[chunk] = table.column("content_hash").to_numpy()
        lines = table.column("line_hashes").combine_chunks()
        line_arrays.append(lines.values.to_numpy(zero_copy_only=False).astype(np.uint64))
        line_counts.append(np.diff(lines.offsets.to_numpy()))
        position += rows
    line_offsets = np.zeros(n + 1, dtype=np.int64)
    if n:
        np.cumsum(np.concatenate(line_counts), out=line_offsets[1:])
    width = len(band_names)
    return Documents(
        parts=parts, counts=counts, gid=gid, scope=scope, keys=keys, doc_ids=doc_ids, content_hash=content,
        bands=np.concatenate(bands_list) if bands_list else np.zeros((0, width), np.uint64),
        line_offsets=line_offsets,
        lines=np.concatenate(line_arrays) if line_arrays else np.zeros(0, np.uint64),
        hosts=pa.chunked_array([table.column("host") for _, _, table in tables], pa.string()),
        url_hash=np.concatenate([table.column("url_hash").to_numpy() for _, _, table in tables])
        if tables else np.zeros(0, np.uint64),
    )


def _first_by_key(ex: Exchange, groups: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """For each document, the first document (by key) of its group and the group's size."""
    records = np.empty(len(groups), dtype=_KEYED)
    records["group"] = groups
    for name, _ in _KEY_FIELDS:
        records[name] = keys[name]
    received, route = ex.shuffle(owner_of(groups, ex.size), records)
    order = np.lexsort([received[name] for name, _ in reversed(_KEY_FIELDS)] + [received["group"]])
    ordered = received[order]
    starts = np.flatnonzero(np.concatenate([[True], ordered["group"][1:] != ordered["group"][:-1]])) if len(ordered) else np.zeros(0, np.int64)
    sizes = np.diff(np.concatenate([starts, [len(ordered)]]))
    group_of = np.repeat(np.arange(len(starts)), sizes)
    first = ordered[starts]
    answers_sorted = np.empty(len(ordered), dtype=_ANSWER)
    answers_sorted["id_hi"] = first["id_hi"][group_of]
    answers_sorted["id_lo"] = first["id_lo"][group_of]
    answers_sorted["gid"] = first["gid"][group_of]
    answers_sorted["size"] = sizes[group_of]
    answers = np.empty_like(answers_sorted)
    answers[order] = answers_sorted
    return ex.reply(route, answers)


def _scope_band_keys(scope: np.ndarray, band: int) -> np.ndarray:
    return fmix64(scope ^ np.uint64(0x9E3779B97F4A7C15 * (band + 1) % (1 << 64)))


def _bucket_edges(ex: Exchange, scope: np.ndarray, bands: np.ndarray, keys: np.ndarray, cap: int) -> tuple[np.ndarray, np.ndarray, dict]:
    """Chain edges of every LSH bucket (band by band, to bound memory)."""
    stats = {"buckets": 0, "candidate_docs": 0, "split_buckets": 0, "largest_bucket": 0}
    us, vs = [], []
    split_key = fmix64(keys["record_key"] ^ keys["url_key"])
    for band in range(bands.shape[1]):
        records = np.empty(len(scope), dtype=_BUCKET)
        records["band"] = _scope_band_keys(scope, band)
        records["hash"] = bands[:, band]
        records["split"] = split_key
        records["gid"] = keys["gid"]
        received, _ = ex.shuffle(owner_of(records["band"] ^ records["hash"], ex.size), records)
        if not len(received):
            continue
        order = np.lexsort([received["gid"], received["hash"], received["band"]])
        ordered = received[order]
        new_bucket = np.concatenate([[True], (ordered["band"][1:] != ordered["band"][:-1])
                                     | (ordered["hash"][1:] != ordered["hash"][:-1])])
        bucket = np.cumsum(new_bucket) - 1
        sizes = np.bincount(bucket)
        shared = sizes[bucket] > 1
        ordered, bucket = ordered[shared], bucket[shared]
        if not len(ordered):
            continue
        sizes_shared = sizes[sizes > 1]
        stats["buckets"] += len(sizes_shared)
        stats["candidate_docs"] += int(sizes_shared.sum())
        stats["largest_bucket"] = max(stats["largest_bucket"], int(sizes_shared.max()))
        pieces = np.ceil(sizes[bucket] / cap).astype(np.uint64)
        sub = np.where(pieces > 1, ordered["split"] % np.maximum(pieces, 1), 0)
        stats["split_buckets"] += int(np.count_nonzero(sizes > cap))
        order = np.lexsort([ordered["gid"], sub, bucket])
        ordered, bucket, sub = ordered[order], bucket[order], sub[order]
        same = (bucket[1:] == bucket[:-1]) & (sub[1:] == sub[:-1])
        us.append(ordered["gid"][:-1][same])
        vs.append(ordered["gid"][1:][same])
    u = np.concatenate(us) if us else np.zeros(0, np.uint64)
    v = np.concatenate(vs) if vs else np.zeros(0, np.uint64)
    return u, v, stats


def _near_duplicates(ex: Exchange, scope: np.ndarray, bands: np.ndarray, keys: np.ndarray, cap: int,
                     label: str) -> tuple[np.ndarray, np.ndarray]:
    """(component label, answer with representative and size) for every local document."""
    u, v, stats = _bucket_edges(ex, scope, bands, keys, cap)
    forest = DistributedForest(ex, u, v).solve()
    components = forest.find(keys["gid"])
    answers = _first_by_key(ex, components, keys)
    totals = {name: ex.comm.allreduce(value) for name, value in stats.items() if name != "largest_bucket"}
    totals["largest_bucket"] = ex.comm.allreduce(stats["largest_bucket"], op=MPI.MAX)
    totals["edges"] = ex.comm.allreduce(len(u))
    if ex.rank == 0:
        log.info("%s: %s, %d union-find rounds", label, totals, forest.rounds)
        if totals["split_buckets"]:
            log.warning("%s: %d buckets exceeded the cap of %d members and were split", label,
                        totals["split_buckets"], cap)
    return components, answers


def _line_counts(ex: Exchange, docs: Documents, labels: np.ndarray) -> np.ndarray:
    """For every line of every local document: in how many near-duplicate clusters of the
    document's scope the line occurs (0 for blank lines)."""
    n = len(docs.gid)
    per_doc = np.diff(docs.line_offsets)
    doc_of_line = np.repeat(np.arange(n), per_doc)
    records = np.empty(len(docs.lines), dtype=_LINE)
    records["scope"] = docs.scope[doc_of_line]
    records["line"] = docs.lines
    records["label"] = labels[doc_of_line]
    counts = np.zeros(len(docs.lines), dtype=np.int32)
    real = docs.lines != 0
    query = records[real]
    received, route = ex.shuffle(owner_of(query["scope"] ^ query["line"], ex.size), query)
    if len(received):
        distinct, inverse = np.unique(received, return_inverse=True)
        line_key = np.stack([distinct["scope"], distinct["line"]], axis=1)
        new_line = np.concatenate([[True], np.any(line_key[1:] != line_key[:-1], axis=1)])
        line_id = np.cumsum(new_line) - 1
        clusters_per_line = np.bincount(line_id)
        answers = clusters_per_line[line_id[inverse.reshape(-1)]].astype(np.int32)
    else:
        answers = np.zeros(0, dtype=np.int32)
    counts[real] = ex.reply(route, answers)
    return counts


def _scope_clusters(ex: Exchange, scope: np.ndarray, is_representative: np.ndarray) -> np.ndarray:
    local: dict[int, int] = {}
    for value in scope[is_representative].tolist():
        local[value] = local.get(value, 0) + 1
    totals: dict[int, int] = {}
    for counts in ex.comm.allgather(local):
        for key, value in counts.items():
            totals[key] = totals.get(key, 0) + value
    return np.array([totals.get(value, 0) for value in scope.tolist()], dtype=np.int64)


def _host_digests(names: list[str]) -> np.ndarray:
    """(hi, lo) 128-bit words of each host name: a collision would merge two hosts' counts."""
    raw = b"".join(hashlib.blake2b(name.encode("utf-8"), digest_size=16).digest() for name in names)
    return np.frombuffer(raw, dtype=">u8").astype(np.uint64).reshape(-1, 2)


def _distinct_per_host(ex: Exchange, host: np.ndarray, values: np.ndarray, low: np.ndarray | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """The hosts this rank owns (their (hi, lo) words, sorted) and how many distinct values (a
    64-bit word each, or with `low` 128 bits) each has over every rank's documents; `host` is
    (documents, 2)."""
    pairs = np.zeros(len(values), dtype=_HOST_PAIR)
    pairs["host_hi"], pairs["host_lo"], pairs["value_hi"] = host[:, 0], host[:, 1], values
    if low is not None:
        pairs["value_lo"] = low

    def distinct(records: np.ndarray) -> np.ndarray:
        ordered = records[np.lexsort([records["value_lo"], records["value_hi"], records["host_lo"], records["host_hi"]])]
        if not len(ordered):
            return ordered
        new = np.concatenate([[True], (ordered[1:] != ordered[:-1])])
        return ordered[new]

    local = distinct(pairs)  # fewer records to send where a rank holds repeats
    received, _ = ex.shuffle(owner_of(local["host_hi"], ex.size), local)
    owned = distinct(received)
    words = np.stack([owned["host_hi"], owned["host_lo"]], axis=1)
    if not len(words):
        return words, np.zeros(0, np.int64)
    starts = np.flatnonzero(np.concatenate([[True], np.any(words[1:] != words[:-1], axis=1)]))
    return words[starts], np.diff(np.concatenate([starts, [len(words)]]))


def host_stats(ex: Exchange, hosts: pa.ChunkedArray, url_hash: np.ndarray, gid: np.ndarray, cluster: np.ndarray
               ) -> pa.Table | None:
    """Per host of every rank's documents (those with a host): distinct url hashes, documents
    (distinct gids) and distinct near-duplicate cluster ids (`cluster`: _ANSWER records, the id is
    the representative's doc id, as dup_cluster_id stores it), each counted by the rank that owns
    the host; the table (tokenmill.select.host_stats.SCHEMA) on rank 0, None on the others."""
    coded = pc.dictionary_encode(hosts.combine_chunks() if hosts.num_chunks else pa.array([], pa.string()))
    names = coded.dictionary.to_pylist()
    codes = coded.indices.to_numpy(zero_copy_only=False)
    named = np.array([name != "" for name in names], dtype=bool)[codes] if names else np.zeros(0, bool)
    digests = _host_digests(names) if names else np.zeros((0, 2), np.uint64)
    host = digests[codes[named]]
    owners = owner_of(digests[:, 0], ex.size)
    outgoing = [[] for _ in range(ex.size)]
    for name, (hi, lo), owner in zip(names, digests.tolist(), owners.tolist()):
        if name:
            outgoing[owner].append((hi, lo, name))
    name_of = {(hi, lo): name for batch in ex.comm.alltoall(outgoing) for hi, lo, name in batch}
    owned, urls = _distinct_per_host(ex, host, url_hash[named])
    _, docs = _distinct_per_host(ex, host, gid[named])
    _, clusters = _distinct_per_host(ex, host, cluster["id_hi"][named], cluster["id_lo"][named])
    mine = ([name_of[(hi, lo)] for hi, lo in owned.tolist()], urls, docs, clusters)
    gathered = ex.comm.gather(mine, root=0)
    if ex.rank != 0:
        return None
    return host_table([name for part in gathered for name in part[0]],
                      *(np.concatenate([part[index] for part in gathered]) for index in (1, 2, 3)))


def _write_outputs(docs: Documents, exact: np.ndarray, near: np.ndarray, line_counts: np.ndarray,
                   scope_clusters: np.ndarray) -> None:
    exact_ids = _hex_ids(exact["id_hi"], exact["id_lo"])
    near_ids = _hex_ids(near["id_hi"], near["id_lo"])
    position = 0
    for part, count in zip(docs.parts, docs.counts):
        rows = slice(position, position + count)
        gid = docs.gid[rows]
        canonical = exact["gid"][rows] == gid
        line_slice = slice(docs.line_offsets[position], docs.line_offsets[position + count])
        local_offsets = (docs.line_offsets[position:position + count + 1] - docs.line_offsets[position]).astype(np.int32)
        columns = {
            "doc_id": pa.array(docs.doc_ids[rows], pa.string()),
            "content_hash": pa.array(docs.content_hash[rows]),
            "exact_canonical": pa.array(canonical),
            "exact_dup_of": pa.array([None if c else i for c, i in zip(canonical.tolist(), exact_ids[rows])], pa.string()),
            "exact_group_size": pa.array(exact["size"][rows]),
            "dup_cluster_id": pa.array(near_ids[rows], pa.string()),
            "dup_cluster_size": pa.array(near["size"][rows]),
            "is_cluster_representative": pa.array(near["gid"][rows] == gid),
            "line_doc_counts": pa.ListArray.from_arrays(pa.array(local_offsets), pa.array(line_counts[line_slice])),
            "scope_clusters": pa.array(scope_clusters[rows]),
        }
        write_parquet(part.output, pa.Table.from_pydict(columns, schema=OUTPUT_SCHEMA))
        position += count


def run(comm, parts: list[ClusterPart], settings: ClusterSettings, host_stats_path: str) -> None:
    """Cluster `parts` (every rank is given all of them), write each part's output and the
    per-host counts of all of them (host_stats)."""
    ex = Exchange(comm)
    footers = [pq.ParquetFile(part.signatures).metadata for part in parts]
    columns = [footer.schema.to_arrow_schema().names for footer in footers]
    for part, names in zip(parts, columns):  # on every rank, before any collective: a rank that raised alone
        check_host_columns(part.signatures, names)  # would leave the others waiting
    counts = [footer.num_rows for footer in footers]
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64).tolist() if parts else []
    owners = assign_parts(counts, ex.size)
    mine = [i for i, owner in enumerate(owners) if owner == ex.rank]
    # Every rank must run the same collectives, also a rank without parts: the band count
    # comes from the first part, the same for all.
    band_names = [name for name in columns[0] if name.startswith("band_")] if parts else []
    docs = _load([parts[i] for i in mine], [offsets[i] for i in mine], band_names)
    log.info("rank %d/%d: %d parts, %d documents", ex.rank, ex.size, len(mine), len(docs.gid))

    exact = _first_by_key(ex, fmix64(docs.scope ^ docs.content_hash), docs.keys)
    labels, near = _near_duplicates(ex, docs.scope, docs.bands, docs.keys, settings.bucket_cap, "per-snapshot")
    line_counts = _line_counts(ex, docs, labels)
    scope_clusters = _scope_clusters(ex, docs.scope, near["gid"] == docs.gid)
    _write_outputs(docs, exact, near, line_counts, scope_clusters)
    start = time.process_time()
    table = host_stats(ex, docs.hosts, docs.url_hash, docs.gid, near)
    log.info("rank %d: host stats in %.2f CPU-s", ex.rank, time.process_time() - start)
    if table is not None:
        write_parquet(host_stats_path, table)
        log.info("host stats: %d hosts -> %s", table.num_rows, host_stats_path)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    log.info("rank %d wrote %d parts; peak memory %.0f MB", ex.rank, len(mine), peak_mb)
    comm.Barrier()
