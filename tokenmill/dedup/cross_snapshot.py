"""Near-duplicates across snapshots, incrementally: a persistent band index per source.

After a snapshot's own clustering (minhash_cluster), `build_generation` writes the band
keys of its surviving documents (cluster representatives) as one immutable generation: per
band a sorted run of (key, document) and a Bloom filter in front of it. A later snapshot
`probe`s the generations of the snapshots before it: the Bloom filters first, the sorted
runs only on a Bloom hit. A generation depends on its own snapshot only, so adding a
snapshot never rewrites an earlier one. `compact` merges generations into one when a
source has accumulated too many.

Policy is keep-first, tag-new: a document of the new snapshot that shares a band with an
older survivor is stored, tagged with the earliest such document (`xsnap_dup_of`,
`xsnap_dup_snapshot`) and the latest (`xsnap_latest_of`, the copy it supersedes); select
decides what to keep: the oldest copy by default, or the newest. The bands are stricter than within a snapshot (8 x 14 by
default, threshold about 0.86): across snapshots a page that changed a little is news.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from tokenmill.bloom import bloom_contains, build_bloom
from tokenmill.dedup.minhash import band_hashes
from tokenmill.io import atomic_output, read_json, read_parquet, write_json, write_parquet, write_part_rows

log = logging.getLogger("tokenmill.cross_snapshot")

PROBE_SCHEMA = pa.schema([
    ("part", pa.string()),
    ("row", pa.int64()),
    ("doc_id", pa.string()),
    ("xsnap_dup_of", pa.string()),  # the earliest older survivor this document repeats, or null
    ("xsnap_dup_snapshot", pa.string()),
    ("xsnap_latest_of", pa.string()),  # the latest one: the copy this document supersedes
    ("xsnap_latest_snapshot", pa.string()),
])


@dataclass(frozen=True)
class SnapshotPart:
    part: str
    signatures: str  # the part's MinHash signatures (written by score)
    dedup: str  # minhash_cluster output


@dataclass
class Generation:
    """One snapshot's survivors: per band, sorted keys with the document of each key."""

    snapshot: str
    doc_ids: np.ndarray  # str
    keys: list[np.ndarray]  # per band, sorted uint64
    docs: list[np.ndarray]  # per band, uint32 index into doc_ids, aligned with keys
    blooms: list[np.ndarray]
    bloom_hashes: int

    @property
    def size(self) -> int:
        return int(sum(len(k) for k in self.keys))


def _cross_bands(signatures_path: str, bands: int, rows: int) -> tuple[list[str], np.ndarray]:
    table = read_parquet(signatures_path, columns=["doc_id", "signature"])
    flat = table.column("signature").combine_chunks()
    width = flat.type.list_size
    signature = flat.values.to_numpy().reshape(-1, width) if table.num_rows else np.zeros((0, width), np.uint64)
    if bands * rows > width:
        raise ValueError(f"minhash.cross_snapshot: bands x rows = {bands * rows} exceeds the {width} permutations "
                         f"of {signatures_path}")
    return table.column("doc_id").to_pylist(), band_hashes(signature, bands, rows)


def _sorted_runs(doc_ids: list[str], band_keys: np.ndarray, snapshot: str, rate: float) -> Generation:
    keys, docs, blooms, hashes = [], [], [], 1
    for band in range(band_keys.shape[1]):
        column = band_keys[:, band]
        order = np.lexsort([np.arange(len(column)), column])  # by key, then document: deterministic
        keys.append(column[order])
        docs.append(order.astype(np.uint32))
        bloom, hashes = build_bloom(np.unique(column), rate)
        blooms.append(bloom)
    return Generation(snapshot, np.array(doc_ids, dtype=object), keys, docs, blooms, hashes)


def build_generation(snapshot: str, parts: list[SnapshotPart], bands: int, rows: int, rate: float,
                     out_dir: str) -> Generation:
    """The band index of one snapshot's near-duplicate cluster representatives."""
    doc_ids, blocks = [], []
    for part in parts:
        ids, keys = _cross_bands(part.signatures, bands, rows)
        dedup = read_parquet(part.dedup, columns=["doc_id", "is_cluster_representative"])
        if dedup.column("doc_id").to_pylist() != ids:
            raise ValueError(f"{part.dedup} is not aligned with {part.signatures}; rerun minhash_cluster")
        keep = np.asarray(dedup.column("is_cluster_representative").to_numpy(zero_copy_only=False), dtype=bool)
        doc_ids += [doc_id for doc_id, kept in zip(ids, keep) if kept]
        blocks.append(keys[keep])
    band_keys = np.concatenate(blocks) if blocks else np.zeros((0, bands), np.uint64)
    generation = _sorted_runs(doc_ids, band_keys, snapshot, rate)
    save_generation(generation, out_dir)
    return generation


def save_generation(generation: Generation, out_dir: str) -> None:
    with atomic_output(out_dir, directory=True) as temp:
        np.save(temp / "keys.npy", np.stack(generation.keys) if generation.keys else np.zeros((0, 0), np.uint64))
        np.save(temp / "docs.npy", np.stack(generation.docs) if generation.docs else np.zeros((0, 0), np.uint32))
        np.save(temp / "bloom.npy", np.stack(generation.blooms))
        write_parquet(temp / "doc_ids.parquet", pa.table({"doc_id": pa.array(generation.doc_ids.tolist(), pa.string())}))
        write_json(temp / "meta.json", {"snapshot": generation.snapshot, "bands": len(generation.keys),
                                        "survivors": len(generation.doc_ids), "bloom_hashes": generation.bloom_hashes,
                                        "bloom_bits": int(generation.blooms[0].size * 64) if generation.blooms else 0})


def load_generation(directory: str) -> Generation:
    folder = Path(directory)
    meta = read_json(folder / "meta.json")
    keys, docs, blooms = (np.load(folder / name) for name in ("keys.npy", "docs.npy", "bloom.npy"))
    doc_ids = np.array(read_parquet(folder / "doc_ids.parquet").column("doc_id").to_pylist(), dtype=object)
    return Generation(meta["snapshot"], doc_ids, list(keys), list(docs), list(blooms), meta["bloom_hashes"])


def compact(generations: list[Generation], rate: float) -> Generation:
    """One generation holding the survivors of all, earliest first (a probe's first match
    stays the earliest snapshot's document); its snapshot names the range it covers."""
    doc_ids = np.concatenate([g.doc_ids for g in generations])
    offsets = np.cumsum([0] + [len(g.doc_ids) for g in generations[:-1]])
    bands = len(generations[0].keys)
    keys, docs, blooms, hashes = [], [], [], 1
    for band in range(bands):
        merged_keys = np.concatenate([g.keys[band] for g in generations])
        merged_docs = np.concatenate([g.docs[band].astype(np.int64) + o for g, o in zip(generations, offsets)])
        order = np.lexsort([merged_docs, merged_keys])
        keys.append(merged_keys[order])
        docs.append(merged_docs[order].astype(np.uint32))
        bloom, hashes = build_bloom(np.unique(merged_keys), rate)
        blooms.append(bloom)
    span = f"{generations[0].snapshot}..{generations[-1].snapshot}"
    return Generation(span, doc_ids, keys, docs, blooms, hashes)


@dataclass
class ProbeStats:
    probes: int = 0  # (document, band, generation) lookups
    bloom_hits: int = 0  # of those, how many passed the Bloom filter and reached a sorted run
    run_hits: int = 0  # of those, how many found the key in the run


def probe(band_keys: np.ndarray, generations: list[Generation], stats: ProbeStats
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For each document (row of `band_keys`): the generation number and survivor index of
    the earliest survivor it shares a band with (earliest generation, then first survivor),
    and of the latest (latest generation, then its first survivor); -1 where none. The
    earliest is the same whether or not the generations were compacted."""
    n = len(band_keys)
    earliest_generation, earliest_doc = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    latest_generation, latest_doc = np.full(n, -1, dtype=np.int64), np.full(n, -1, dtype=np.int64)
    unmatched = np.iinfo(np.int64).max
    for number, generation in enumerate(generations):
        best = np.full(n, unmatched, dtype=np.int64)
        for band in range(band_keys.shape[1]):
            keys = band_keys[:, band]
            stats.probes += n
            maybe = np.flatnonzero(bloom_contains(generation.blooms[band], generation.bloom_hashes, keys))
            stats.bloom_hits += len(maybe)
            run = generation.keys[band]
            at = np.searchsorted(run, keys[maybe])  # the first of equal keys: the earliest survivor
            hit = at < len(run)
            hit[hit] = run[at[hit]] == keys[maybe][hit]
            stats.run_hits += int(hit.sum())
            rows = maybe[hit]
            best[rows] = np.minimum(best[rows], generation.docs[band][at[hit]].astype(np.int64))
        matched = best != unmatched
        first = matched & (earliest_generation < 0)
        earliest_generation[first], earliest_doc[first] = number, best[first]
        latest_generation[matched], latest_doc[matched] = number, best[matched]
    return earliest_generation, earliest_doc, latest_generation, latest_doc


def probe_snapshot(parts: list[SnapshotPart], generation_dirs: list[str], bands: int, rows: int,
                   out_path: str) -> ProbeStats:
    """Tag every document of a snapshot that repeats a survivor of an older snapshot."""
    generations = [load_generation(directory) for directory in generation_dirs]
    stats = ProbeStats()
    columns: dict[str, list] = {name: [] for name in PROBE_SCHEMA.names}
    for part in parts:
        doc_ids, band_keys = _cross_bands(part.signatures, bands, rows)
        earliest, earliest_doc, latest, latest_doc = probe(band_keys, generations, stats)
        columns["part"] += [part.part] * len(doc_ids)
        columns["row"] += list(range(len(doc_ids)))
        columns["doc_id"] += doc_ids
        for prefix, number, survivor in (("xsnap_dup", earliest, earliest_doc), ("xsnap_latest", latest, latest_doc)):
            columns[f"{prefix}_of"] += [generations[g].doc_ids[d] if g >= 0 else None for g, d in zip(number, survivor)]
            columns[f"{prefix}_snapshot"] += [generations[g].snapshot if g >= 0 else None for g in number]
    write_part_rows(out_path, pa.Table.from_pydict(columns, schema=PROBE_SCHEMA))
    log.info("probed %d documents against %d generations: %d lookups, %d reached a sorted run, %d matched",
             len(columns["doc_id"]), len(generations), stats.probes, stats.bloom_hits, stats.run_hits)
    return stats


def superseded(probe_paths: list[str]) -> set[str]:
    """Documents that a later snapshot repeats (the latest older copy each later document
    matched): what a policy that prefers the newer copy excludes."""
    found: set[str] = set()
    for path in probe_paths:
        found.update(value for value in read_parquet(path, columns=["xsnap_latest_of"]).column(0).to_pylist() if value)
    return found
