"""`python -m tokenmill similar`: a snapshot's near-duplicates of one document or text, seen through datasketch.

Signatures stay ours (much faster to compute than datasketch's MinHash: bench/bench_dedup.py), but users
inspect dedup decisions with the tools they know: the stored signatures of a snapshot become
datasketch `LeanMinHash` objects and go into a `MinHashLSH` with our bands and rows, so its
candidates are exactly the pairs that share a band under our banding (tested). For each
candidate it reports the estimated Jaccard (datasketch's, over all permutations), the exact
Jaccard of the two shingle sets, the bands whose values are equal, the cluster
minhash_cluster put it in, and what select made of the cluster: which copy was kept and why.

It reads a finished run's files through the snapshot's plan (results/plan/{source}/{snapshot}.tsv),
never re-derives paths, and runs no rule. The whole snapshot's signatures are loaded into
memory, and datasketch indexes them in Python: meant for a snapshot, not a whole corpus.
"""

from __future__ import annotations

import glob
import os
from collections import Counter
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow.parquet as pq
from datasketch import LeanMinHash, MinHashLSH
from datasketch import __version__ as datasketch_version

from tokenmill.dedup.minhash import MinHashParams, Shingler, permutation_coefficients, signatures
from tokenmill.dedup.normalize import normalize_for_dedup
from tokenmill.io import read_jsonl_zst, read_parquet
from tokenmill.plan import read_plan

# Our permutations are a_k * h + b_k mod 2^64 over fmix64-mixed shingle hashes: datasketch's
# "affine64" scheme. The coefficients come from our seed, not datasketch's, so these values must
# only be compared with each other (never with a datasketch.MinHash built from text).
DATASKETCH_SCHEME = "affine64"
DUPLICATE_REASONS = ("exact_duplicate", "near_duplicate")


def stored_params(signature_path: str) -> MinHashParams:
    """The MinHash parameters a signature file was written with (MinHashParams.as_metadata)."""
    metadata = pq.read_schema(signature_path).metadata or {}
    values = {key.decode().removeprefix("minhash."): int(value) for key, value in metadata.items()
              if key.startswith(b"minhash.")}
    return MinHashParams(**values)


def lean_minhash(signature: np.ndarray, params: MinHashParams) -> LeanMinHash:
    return LeanMinHash(seed=params.seed, hashvalues=signature, scheme=DATASKETCH_SCHEME)


def datasketch_index(keys: list, signature_rows: np.ndarray,
                     params: MinHashParams) -> tuple[MinHashLSH, list[LeanMinHash]]:
    """A datasketch MinHashLSH with our bands and rows over our signatures, and the LeanMinHash of each key."""
    lsh = MinHashLSH(num_perm=params.permutations, params=(params.bands, params.rows))
    minhashes = [lean_minhash(row, params) for row in signature_rows]
    with lsh.insertion_session() as session:
        for key, minhash in zip(keys, minhashes):
            session.insert(key, minhash, check_duplication=False)
    return lsh, minhashes


def matching_bands(a: np.ndarray, b: np.ndarray, params: MinHashParams) -> list[int]:
    """The bands whose rows are all equal: the buckets the two documents share."""
    width = params.bands * params.rows
    equal = (a[:width] == b[:width]).reshape(params.bands, params.rows).all(axis=1)
    return np.flatnonzero(equal).tolist()


def shingle_set(text: str, params: MinHashParams) -> set[int]:
    return set(Shingler(params.ngram).shingles(normalize_for_dedup(text)).tolist())


def jaccard(a: set[int], b: set[int]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


@dataclass
class Snapshot:
    """A snapshot's documents as dedup, judge and select saw them, in plan order."""

    root: str
    source: str
    snapshot: str
    params: MinHashParams
    plan: list[dict]
    doc_ids: list[str]
    part_of: np.ndarray  # the document's part: index into plan
    row_of: np.ndarray  # its row within the part
    signatures: np.ndarray  # (documents, permutations) uint64
    columns: dict[str, list]  # per document: minhash_cluster's, judge's and select's columns

    def path(self, part: int, column: str) -> str:
        return os.path.join(self.root, self.plan[part][column])  # the plan's paths are relative to the run's root

    def cluster_members(self, cluster_id: str) -> list[int]:
        return [index for index, value in enumerate(self.columns["dup_cluster_id"]) if value == cluster_id]


# (plan column, columns read, the names they get in Snapshot.columns)
_PER_DOCUMENT = (
    ("minhash_cluster", ["dup_cluster_id", "is_cluster_representative", "exact_dup_of"], None),
    ("judge", ["reason", "quality"], ["failed_rule", "quality"]),  # failed_rule: the first, leaving out duplicates
    ("select", ["selected", "reason"], None),
)


def plan_path(root: str, snapshot: str, source: str | None) -> tuple[str, str]:
    """(source, plan file) of a snapshot; the source may be left out where only one source has the snapshot."""
    if source:
        return source, os.path.join(root, "results", "plan", source, f"{snapshot}.tsv")
    found = sorted(glob.glob(os.path.join(root, "results", "plan", "*", f"{snapshot}.tsv")))
    if len(found) != 1:
        sources = [os.path.basename(os.path.dirname(path)) for path in found]
        raise ValueError(f"snapshot {snapshot} is in {f'the sources {sources}' if found else 'no plan of this run'}; "
                         f"give --source")
    return os.path.basename(os.path.dirname(found[0])), found[0]


def load_snapshot(root: str, snapshot: str, version: str, source: str | None = None) -> Snapshot:
    source, path = plan_path(root, snapshot, source)
    if not os.path.exists(path):
        raise ValueError(f"{path}: no plan for {source}/{snapshot} in this run")
    plan = [row for row in read_plan(path, version=version) if row["snapshot"] == snapshot]
    at = lambda index, column: os.path.join(root, plan[index][column])  # noqa: E731 (relative to the run's root)
    params = stored_params(at(0, "signatures"))
    doc_ids, parts, rows, blocks = [], [], [], []
    columns: dict[str, list] = {}
    for index in range(len(plan)):
        if stored_params(at(index, "signatures")) != params:
            raise ValueError(f"{at(index, 'signatures')}: MinHash parameters differ from the snapshot's first part's")
        table = pq.read_table(at(index, "signatures"), columns=["doc_id", "signature"])
        ids = table.column("doc_id").to_pylist()
        doc_ids += ids
        parts.append(np.full(len(ids), index, dtype=np.int64))
        rows.append(np.arange(len(ids), dtype=np.int64))
        blocks.append(table.column("signature").combine_chunks().flatten().to_numpy().reshape(len(ids), -1))
        for column, names, renamed in _PER_DOCUMENT:
            stored = read_parquet(at(index, column), ["doc_id", *names])
            if stored.column("doc_id").to_pylist() != ids:
                raise ValueError(f"{at(index, column)}: rows are not those of {at(index, 'signatures')}")
            for name, key in zip(names, renamed or names):
                columns.setdefault(key, []).extend(stored.column(name).to_pylist())
    return Snapshot(root, source, snapshot, params, plan, doc_ids, np.concatenate(parts), np.concatenate(rows),
                    np.concatenate(blocks), columns)


def documents(snapshot: Snapshot, indices: set[int]) -> dict[int, dict]:
    """The documents (text, url, ...) at these positions, read from their parts' docs files."""
    wanted: dict[int, dict[int, int]] = {}
    for index in indices:
        wanted.setdefault(int(snapshot.part_of[index]), {})[int(snapshot.row_of[index])] = index
    found: dict[int, dict] = {}
    for part, rows in wanted.items():
        last = max(rows)
        for row, doc in enumerate(read_jsonl_zst(snapshot.path(part, "docs"))):
            if row in rows:
                found[rows[row]] = doc
            if row == last:
                break
    return found


def why_kept(snapshot: Snapshot, members: list[int]) -> tuple[int | None, str]:
    """The member of a cluster select kept, and why, from judge (the first other rule each member
    fails) and select (the final reason): select keeps the best member that passes every other
    rule, by quality and then by minhash_cluster's order, so the representative stays unless it
    fails a rule or another copy scores higher."""
    column = snapshot.columns
    representative = next(index for index in members if column["is_cluster_representative"][index])
    passing = [index for index in members if not column["failed_rule"][index]]
    if not passing:
        failures = Counter(column["failed_rule"][index] for index in members)
        return None, ("none: the cluster is lost, every member fails another rule ("
                      + ", ".join(f"{reason} x{count}" for reason, count in sorted(failures.items())) + ")")
    kept = [index for index in passing if column["reason"][index] not in DUPLICATE_REASONS]
    if len(kept) != 1:
        if snapshot.plan[int(snapshot.part_of[members[0]])]["kind"] == "code":  # a snapshot is of one source
            return None, (f"{len(kept)} members kept: files of the repository of the cluster's best member, which "
                          f"select keeps whole; the others: {_reasons_of_others(snapshot, members, kept) or 'none'}")
        return None, f"{len(kept)} members kept: near-duplicates are not dropped (select.drop_near_duplicates)"
    (chosen,) = kept
    if chosen == representative:
        because = ("the representative (first copy by fetch time, url, doc_id) passes every other rule"
                   + (" and no member that does scores higher on quality" if len(passing) > 1 else ""))
    elif column["failed_rule"][representative]:
        because = (f"the representative fails {column['failed_rule'][representative]}; this is the best member "
                   "that passes every other rule" + (" (by quality, then first copy)" if len(passing) > 1 else ""))
    else:
        because = (f"higher quality ({column['quality'][chosen]}) than the representative "
                   f"({column['quality'][representative]}); both pass every other rule")
    if column["reason"][chosen]:
        because += f"; it is itself excluded as {column['reason'][chosen]}"
    return chosen, f"{because}; the others: {_reasons_of_others(snapshot, members, [chosen])}"


def _reasons_of_others(snapshot: Snapshot, members: list[int], kept: list[int]) -> str:
    others = Counter(snapshot.columns["reason"][index] or "selected" for index in members if index not in kept)
    return ", ".join(f"{reason} x{count}" for reason, count in sorted(others.items()))


def _record(snapshot: Snapshot, index: int, doc: dict) -> dict:
    """What tells apart the copies of one text (a doc_id is the address of the text, shared by exact copies)."""
    return {"doc_id": snapshot.doc_ids[index], "part": snapshot.plan[int(snapshot.part_of[index])]["part"],
            "row": int(snapshot.row_of[index]), "record_id": doc.get("record_id"), "url": doc.get("url"),
            "fetch_ts": doc.get("fetch_ts")}


def find_similar(root: str, snapshot: str, version: str, doc_id: str | None = None, text: str | None = None,
                 source: str | None = None) -> dict:
    """A document's (or a text's) near-duplicates in a snapshot: datasketch's LSH candidates over the
    stored signatures and, for a stored document, the rest of its cluster (members joined through
    others); each with the clusters they are in and the copy select kept of each."""
    if (doc_id is None) == (text is None):
        raise ValueError("give one of a doc_id, --text or --text-file")
    snap = load_snapshot(root, snapshot, version, source)
    params, column = snap.params, snap.columns
    lsh, minhashes = datasketch_index(list(range(len(snap.doc_ids))), snap.signatures, params)
    listed: set[int] = set()
    if doc_id is not None:
        copies = [index for index, value in enumerate(snap.doc_ids) if value == doc_id]
        if not copies:
            raise ValueError(f"{doc_id} is not a document of {snap.source}/{snapshot}")
        # exact copies share the doc_id and the signature: the one minhash_cluster put first asks
        query_index = min(copies, key=lambda index: (not column["is_cluster_representative"][index],
                                                     column["exact_dup_of"][index] is not None))
        query_signature, query_minhash = snap.signatures[query_index], minhashes[query_index]
        listed.update(snap.cluster_members(column["dup_cluster_id"][query_index]))
    else:
        query_index, copies = None, []
        query_signature = signatures([Shingler(params.ngram).shingles(normalize_for_dedup(text))], params,
                                     permutation_coefficients(params))[0]
        query_minhash = lean_minhash(query_signature, params)
    candidates = set(lsh.query(query_minhash))
    listed = (listed | candidates) - {query_index}
    cluster_ids = [column["dup_cluster_id"][query_index]] if query_index is not None else []
    cluster_ids += sorted({column["dup_cluster_id"][index] for index in listed} - set(cluster_ids))
    members = {cluster_id: snap.cluster_members(cluster_id) for cluster_id in cluster_ids}
    docs = documents(snap, listed.union(*members.values(), {query_index} - {None}))
    query_shingles = shingle_set(docs[query_index]["text"] if query_index is not None else text, params)
    rows = []
    for index in listed:
        rows.append({
            **_record(snap, index, docs[index]),
            "estimated_jaccard": float(query_minhash.jaccard(minhashes[index])),
            "exact_jaccard": jaccard(query_shingles, shingle_set(docs[index]["text"], params)),
            "matching_bands": matching_bands(query_signature, snap.signatures[index], params),
            "lsh_candidate": index in candidates,
            **{name: column[name][index] for name in ("dup_cluster_id", "is_cluster_representative", "exact_dup_of",
                                                      "failed_rule", "quality", "selected", "reason")},
        })
    rows.sort(key=lambda row: (-row["exact_jaccard"], -row["estimated_jaccard"], row["fetch_ts"] or "",
                               row["doc_id"]))
    clusters = []
    for cluster_id, indices in members.items():
        kept, because = why_kept(snap, indices)
        clusters.append({"dup_cluster_id": cluster_id, "size": len(indices),
                         "kept": None if kept is None else _record(snap, kept, docs[kept]), "why": because})
    if query_index is not None:
        query = {**_record(snap, query_index, docs[query_index]), "copies": len(copies),
                 **{name: column[name][query_index] for name in ("dup_cluster_id", "is_cluster_representative",
                                                                 "failed_rule", "selected", "reason")}}
    else:
        query = {"text": text if len(text) <= 200 else text[:200] + "...", "shingles": len(query_shingles)}
    return {"source": snap.source, "snapshot": snapshot, "version": version, "documents": len(snap.doc_ids),
            "datasketch": datasketch_version, "minhash": {**asdict(params), "threshold": params.threshold},
            "query": query, "near_duplicates": rows, "clusters": clusters}


def _bands(found: list[int], params: MinHashParams) -> str:
    return f"all {params.bands}" if len(found) == params.bands else ",".join(map(str, found)) or "none"


def format_similar(report: dict) -> str:
    """The report as a user reads it: one line per near-duplicate, then each cluster's kept copy."""
    params = MinHashParams(**{key: value for key, value in report["minhash"].items() if key != "threshold"})
    query = report["query"]
    lines = [f"{report['source']}/{report['snapshot']} (version {report['version']}): {report['documents']} documents "
             f"in a datasketch {report['datasketch']} MinHashLSH, {params.bands} bands x {params.rows} rows of the "
             f"stored {params.permutations}-permutation signatures (threshold {params.threshold:.2f})"]
    if "doc_id" in query:
        role = "its representative" if query["is_cluster_representative"] else "not its representative"
        copies = f"; {query['copies']} records have this doc_id" if query["copies"] > 1 else ""
        lines.append(f"query {query['doc_id']} (part {query['part']} row {query['row']}, {query['url']}, "
                     f"{query['fetch_ts']}{copies})")
        lines.append(f"  cluster {query['dup_cluster_id']} ({role}); select: "
                     f"{'selected' if query['selected'] else query['reason']}")
    else:
        lines.append(f"query text ({query['shingles']} shingles): {query['text'][:80]!r}")
    rows = report["near_duplicates"]
    lines.append(f"{len(rows)} near-duplicates (found: lsh = a datasketch candidate, cluster = only joined through "
                 "other members)")
    if rows:
        table = {
            "doc_id": [row["doc_id"] for row in rows],
            "est.J": [f"{row['estimated_jaccard']:.3f}" for row in rows],
            "exact.J": [f"{row['exact_jaccard']:.3f}" for row in rows],
            "bands": [_bands(row["matching_bands"], params) for row in rows],
            "found": ["lsh" if row["lsh_candidate"] else "cluster" for row in rows],
            "cluster": [row["dup_cluster_id"][:12] for row in rows],
            "rep": ["yes" if row["is_cluster_representative"] else "" for row in rows],
            "select": ["selected" if row["selected"] else row["reason"] for row in rows],
            "fetched": [row["fetch_ts"] or "" for row in rows],
            "url": [row["url"] or "" for row in rows],
        }
        widths = {name: max(map(len, [name, *values])) for name, values in table.items()}
        for line in [list(table), *zip(*table.values())]:
            lines.append("  " + "  ".join(value.ljust(widths[name]) for name, value in zip(table, line)).rstrip())
    for cluster in report["clusters"]:
        kept = cluster["kept"]
        where = f"{kept['doc_id']} ({kept['fetch_ts']}, {kept['url']}): " if kept else ""
        lines.append(f"cluster {cluster['dup_cluster_id']} ({cluster['size']} documents): kept {where}{cluster['why']}")
    return "\n".join(lines)
