"""select: the copy kept of each exact group and near-duplicate cluster of a snapshot, and every
document's final decision (see tokenmill.select).

One MPI job per snapshot, so that no process holds the snapshot: every rank reads a contiguous
share of the parts' judged rows; the members of each exact group, then of each near-duplicate
cluster, meet at the rank that owns the group (a record shuffle, as in minhash_cluster), which
picks the best by the order below and answers each member; every rank then writes the final
tables of its own parts. The decisions depend only on the documents, never on the number of ranks.
"""

from __future__ import annotations

import logging

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from mpi4py import MPI

from tokenmill.dedup.mpi import Exchange, assign_parts
from tokenmill.hashing import owner_of
from tokenmill.hashing import fmix64
from tokenmill.io import read_parquet, write_parquet
from tokenmill.select.judge import JUDGE_SCHEMA, REASON_STAGES, SCHEMA, final_reasons

log = logging.getLogger("tokenmill.select")

_CHOICE_COLUMNS = ["doc_id", "reason", "exact_group", "exact_canonical", "dup_cluster_id",
                   "is_cluster_representative", "quality", "fetch_ts", "url_key", "record_key", "copy_unit"]
_POLICY_REASONS = pa.array(sorted(reason for reason, stage in REASON_STAGES.items() if stage == "policy"))
# What a group's answer says of each member: the best candidate of the group, the group's first
# member (one per group, candidate or not), the group's size and whether any member passes every rule.
_ANSWER = np.dtype([("winner", np.bool_), ("first", np.bool_), ("size", np.int64), ("any_pass", np.bool_)])


def _string_words(column: pa.ChunkedArray, width: int) -> np.ndarray:
    """A string column as (documents, width / 8) big-endian 64-bit words of its UTF-8 bytes,
    zero-padded (null as empty): the words compare in the order of the strings, and are equal
    exactly when the strings are (strings hold no NUL)."""
    array = column.combine_chunks().cast(pa.binary())
    count, padded_width = len(array), -(-max(width, 1) // 8) * 8
    lengths = pc.binary_length(array).to_numpy(zero_copy_only=False)
    if count and array.null_count == 0 and lengths.min() == lengths.max() == padded_width:  # ids of one length
        offsets = np.frombuffer(array.buffers()[1], np.int32, count + 1, array.offset * 4)
        data = np.frombuffer(array.buffers()[2], np.uint8, offsets[-1] - offsets[0], offsets[0])
    else:
        data = np.frombuffer(np.array([value or b"" for value in array.to_pylist()], dtype=f"S{padded_width}").tobytes(),
                             np.uint8)
    return data.view(">u8").reshape(count, padded_width // 8).astype(np.uint64)


def _rank_order(tables: list[pa.Table], first_part: int, doc_id_width: int) -> np.ndarray:
    """The order select keeps copies by, as fields compared first to last: passing every
    other rule first, then allowed by the provenance policy, then the higher quality score
    (documents without one after those with one), then minhash_cluster's order (fetch time, url,
    doc_id, record, position in the snapshot), so that with nothing to tell copies apart the
    copy minhash_cluster chose is kept."""
    words = -(-max(doc_id_width, 1) // 8)
    dtype = np.dtype([("fails", np.uint8), ("disallowed", np.uint8), ("higher_first", np.float64),
                      ("fetch_ts", np.int64), ("url_key", np.uint64),
                      *[(f"doc_id_{word}", np.uint64) for word in range(words)],
                      ("record_key", np.uint64), ("part", np.int64), ("row", np.int64)])
    order = np.empty(sum(table.num_rows for table in tables), dtype)
    start = 0
    for index, table in enumerate(tables):
        rows = slice(start, start + table.num_rows)
        reasons = table.column("reason")
        order["fails"][rows] = pc.not_equal(reasons, "").to_numpy(zero_copy_only=False)
        order["disallowed"][rows] = pc.is_in(reasons, value_set=_POLICY_REASONS).to_numpy(zero_copy_only=False)
        quality = table.column("quality").to_numpy(zero_copy_only=False).astype(np.float64)  # null -> NaN
        order["higher_first"][rows] = np.where(np.isnan(quality), np.inf, -quality)
        for name in ("fetch_ts", "url_key", "record_key", "doc_id"):
            if table.column(name).null_count:
                raise ValueError(f"part {first_part + index}: judge wrote a null {name}; run judge again")
        for name in ("fetch_ts", "url_key", "record_key"):
            order[name][rows] = table.column(name).to_numpy()
        doc_ids = _string_words(table.column("doc_id"), doc_id_width)
        for word in range(words):
            order[f"doc_id_{word}"][rows] = doc_ids[:, word]
        order["part"][rows] = first_part + index
        order["row"][rows] = np.arange(table.num_rows)
        start = rows.stop
    return order


def _largest(dtype: np.dtype):
    return np.inf if dtype.kind == "f" else np.iinfo(dtype).max


def _mixed(key: np.ndarray) -> np.ndarray:
    """A 64-bit mix of each row of 64-bit words."""
    mixed = np.zeros(len(key), np.uint64)
    for word in key.T:
        mixed = fmix64(mixed ^ word)
    return mixed


def _group_starts(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An order that puts equal keys (rows of 64-bit words) together, and where each run of
    equal keys starts in it: sorted by a 64-bit mix of the words, by the words themselves only
    where two keys share a mix."""
    mixed = _mixed(key)
    order = np.argsort(mixed, kind="stable")
    ordered = key[order]
    same_mix = mixed[order][1:] == mixed[order][:-1]
    if np.any(same_mix & np.any(ordered[1:] != ordered[:-1], axis=1)):
        order = np.lexsort(key.T[::-1])
        ordered = key[order]
    starts = np.flatnonzero(np.concatenate([[True], np.any(ordered[1:] != ordered[:-1], axis=1)])) if len(key) \
        else np.zeros(0, np.int64)
    return order, starts


def _best_of_groups(ranked: np.ndarray, grouped: np.ndarray, candidate: np.ndarray, starts: np.ndarray,
                    sizes: np.ndarray) -> np.ndarray:
    """The candidate of each group (`ranked[grouped]`'s consecutive runs from `starts`) that comes
    first by the fields of `ranked`: the candidates still tied keep to the least value of each
    field in turn (a field is gathered only while some group has a tie)."""
    best = candidate[grouped]
    for name in ranked.dtype.names:
        if not np.any(np.add.reduceat(best, starts, dtype=np.int64) > 1):  # (part, row) is unique: this ends
            break
        values = np.where(best, ranked[name][grouped], _largest(ranked.dtype[name]))
        best &= values == np.repeat(np.minimum.reduceat(values, starts), sizes)
    return best


def _choose(ex: Exchange, key: np.ndarray, candidate: np.ndarray, passes: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Per document, its group's answer (_ANSWER): the members of each group (equal rows of
    `key`, 64-bit words) meet at the rank that owns the key, which picks the best candidate by
    `order`."""
    words = key.shape[1]
    records = np.empty(len(key), np.dtype([("key", np.uint64, (words,)), ("order", order.dtype),
                                           ("candidate", np.bool_), ("passes", np.bool_)]))
    records["key"], records["order"], records["candidate"], records["passes"] = key, order, candidate, passes
    received, route = ex.shuffle(owner_of(_mixed(key), ex.size), records)
    answers = np.zeros(len(received), _ANSWER)
    if len(received):
        grouped, starts = _group_starts(received["key"].reshape(len(received), words))
        sizes = np.diff(np.concatenate([starts, [len(received)]]))
        in_groups = np.zeros(len(received), _ANSWER)
        in_groups["first"][starts] = True
        in_groups["winner"] = _best_of_groups(received["order"], grouped, received["candidate"], starts, sizes)
        in_groups["size"] = np.repeat(sizes, sizes)
        in_groups["any_pass"] = np.repeat(np.logical_or.reduceat(received["passes"][grouped], starts), sizes)
        answers[grouped] = in_groups
    return ex.reply(route, answers)


def _distinct_groups(ex: Exchange, key: np.ndarray, order: np.ndarray) -> int:
    """How many distinct groups (rows of `key`) the documents given on all ranks belong to."""
    everyone = np.ones(len(key), bool)
    return ex.comm.allreduce(int(_choose(ex, key, everyone, everyone, order)["first"].sum()))


def _null_and(values: pa.ChunkedArray, words: np.ndarray) -> np.ndarray:
    """Key words with a first word that tells null from every value."""
    return np.column_stack([pc.is_null(values).to_numpy(zero_copy_only=False).astype(np.uint64), words])


def select_snapshot(parts: list[tuple[str, str]], policy_section: dict, comm: MPI.Comm = MPI.COMM_SELF) -> dict:
    """Keep the best member of every exact group and near-duplicate cluster of a snapshot and
    write every part's final table (SCHEMA). `parts`: (judge output, select output) of each
    part, in the snapshot's plan order, the same on every rank of `comm`. Returns the snapshot's
    counts of exact groups and near-duplicate clusters of more than one document, of those whose
    kept member (one that passes every other rule) is not the copy minhash_cluster chose
    (`*_changed`), and of clusters lost because every member fails another rule (`clusters_lost`)."""
    ex = Exchange(comm)
    counts = [pq.ParquetFile(judged).metadata.num_rows for judged, _ in parts]
    mine = [index for index, owner in enumerate(assign_parts(counts, ex.size)) if owner == ex.rank]
    tables = [read_parquet(parts[index][0], _CHOICE_COLUMNS) for index in mine]
    judged = pa.concat_tables(tables) if tables else JUDGE_SCHEMA.empty_table().select(_CHOICE_COLUMNS)
    widths = {name: ex.comm.allreduce(int(pc.max(pc.binary_length(judged.column(name))).as_py() or 0), op=MPI.MAX)
              for name in ("doc_id", "dup_cluster_id")}
    order = _rank_order(tables, mine[0] if mine else 0, widths["doc_id"])
    passes = order["fails"] == 0
    canonical = judged.column("exact_canonical").to_numpy(zero_copy_only=False)
    representative = judged.column("is_cluster_representative").to_numpy(zero_copy_only=False)
    # A repository's document is deduplicated with its repository only (near-duplicate clusters of
    # whole repositories): it is in no exact group, so that no repository loses one document to a copy
    # in another, and its unit is the repository, kept whole. A prose document is its own unit.
    units = judged.column("copy_unit")
    prose = pc.is_null(units).to_numpy(zero_copy_only=False)
    exact_group = judged.column("exact_group")
    exact_key = _null_and(exact_group, pc.fill_null(exact_group, 0).to_numpy(zero_copy_only=False)[:, None])
    exact = _choose(ex, exact_key[prose], np.ones(int(prose.sum()), bool), passes[prose], order[prose])
    drop_exact, drop_near = policy_section["drop_exact_duplicates"], policy_section["drop_near_duplicates"]
    kept_in_group = np.ones(len(order), bool)
    if drop_exact:
        kept_in_group[prose] = exact["winner"]
    grouped = exact["winner"] & (exact["size"] > 1)  # every member is a candidate: one winner a group
    clusters = judged.column("dup_cluster_id")
    cluster_key = _null_and(clusters, _string_words(clusters, widths["dup_cluster_id"]))
    cluster = _choose(ex, cluster_key, kept_in_group, passes, order)
    clustered = cluster["first"] & (cluster["size"] > 1)
    kept_in_cluster = kept_in_group
    if drop_near:  # a cluster keeps its best member's unit: the document, or its whole repository
        chosen_units = {unit for batch in ex.comm.allgather(
            pc.unique(units.filter(pa.array(cluster["winner"] & ~prose))).to_pylist()) for unit in batch}
        unit_chosen = pc.is_in(units, value_set=pa.array(sorted(chosen_units), pa.string())).to_numpy(
            zero_copy_only=False)
        kept_in_cluster = kept_in_group & np.where(prose, cluster["winner"], unit_chosen)
    changed = kept_in_cluster & passes & ~representative & (cluster["size"] > 1)
    summary = {
        "exact_groups": ex.comm.allreduce(int(grouped.sum())),
        "exact_groups_changed": ex.comm.allreduce(int((grouped & passes[prose] & ~canonical[prose]).sum()))
        if drop_exact else 0,
        "clusters": ex.comm.allreduce(int(clustered.sum())),
        "clusters_changed": _distinct_groups(ex, cluster_key[changed], order[changed])
        if drop_near else 0,
        "clusters_lost": ex.comm.allreduce(int((clustered & ~cluster["any_pass"]).sum())),
    }
    exact_duplicate, near_duplicate = ~kept_in_group, kept_in_group & ~kept_in_cluster
    start, selected_count = 0, 0
    for index, table in zip(mine, tables):
        judged_path, out_path = parts[index]
        span = slice(start, start + table.num_rows)
        part = read_parquet(judged_path)
        reasons = final_reasons(part.column("reason"), exact_duplicate[span], near_duplicate[span],
                                part.column("cross_snapshot_duplicate"))
        selected = pc.equal(reasons, "")
        mid = pc.and_kleene(selected, part.column("quality_mid_kept"))
        final = pa.Table.from_pydict({
            **{name: part.column(name) for name in SCHEMA.names if name in JUDGE_SCHEMA.names},
            "selected": selected, "reason": reasons, "quality_mid_kept": mid,
        }, schema=SCHEMA).replace_schema_metadata(part.schema.metadata)
        write_parquet(out_path, final)
        selected_count += pc.sum(selected).as_py() or 0
        start = span.stop
    log.info("rank %d/%d: %d parts, %d documents, %d selected", ex.rank, ex.size, len(mine), len(order), selected_count)
    return summary
