"""select: the copy kept of each exact group and near-duplicate cluster of a snapshot, and every
document's final decision (see tokenmill.select)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tokenmill.io import read_parquet, write_parquet
from tokenmill.select.judge import JUDGE_SCHEMA, REASON_STAGES, SCHEMA, final_reasons


_CHOICE_COLUMNS = ["doc_id", "reason", "exact_group", "exact_canonical", "dup_cluster_id",
                   "is_cluster_representative", "quality", "fetch_ts", "url_key", "record_key", "copy_unit"]


_POLICY_REASONS = pa.array(sorted(reason for reason, stage in REASON_STAGES.items() if stage == "policy"))


def _ranks(judged: pa.Table, fails: np.ndarray, part_index: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Each document's position in the order select keeps copies by: passing every other rule
    first, then allowed by the provenance policy, then the higher quality score (documents
    without one after those with one), then minhash_cluster's order (fetch time, url, doc_id,
    record, position in the snapshot), so that with nothing to tell copies apart the copy
    minhash_cluster chose is kept."""
    disallowed = pc.is_in(judged.column("reason"), value_set=_POLICY_REASONS).to_numpy(zero_copy_only=False)
    quality = judged.column("quality").to_numpy(zero_copy_only=False).astype(np.float64)  # null -> NaN
    higher_first = np.where(np.isnan(quality), np.inf, -quality)
    keys = pa.table({"fails": fails, "disallowed": disallowed, "higher_first": higher_first,
                     "fetch_ts": judged.column("fetch_ts"), "url_key": judged.column("url_key"),
                     "doc_id": judged.column("doc_id"), "record_key": judged.column("record_key"),
                     "part": part_index, "row": rows})
    order = pc.sort_indices(keys, sort_keys=[(name, "ascending") for name in keys.column_names]).to_numpy()
    ranks = np.empty(len(order), dtype=np.int64)
    ranks[order] = np.arange(len(order))
    return ranks


def _codes(column: pa.ChunkedArray) -> np.ndarray:
    """Equal values get equal numbers, in no particular order (null is a value of its own)."""
    return pc.dictionary_encode(column.combine_chunks(), null_encoding="encode").indices.to_numpy()


def _grouping(numbers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each document's group number (small non-negative integers, equal within a group; some
    numbers may belong to no document) and the size of the group of each number."""
    return numbers, np.bincount(numbers)


def _first_of_each_group(grouping: tuple[np.ndarray, np.ndarray], ranks: np.ndarray, candidates: np.ndarray
                         ) -> np.ndarray:
    """True for the candidate of lowest rank in each group (a group without candidates keeps none)."""
    group, sizes = grouping
    best = np.full(len(sizes), len(ranks), dtype=np.int64)
    np.minimum.at(best, group[candidates], ranks[candidates])
    return candidates & (ranks == best[group])


def _groups_where(grouping: tuple[np.ndarray, np.ndarray], members: np.ndarray) -> int:
    """How many groups of more than one document have a member in `members`."""
    group, sizes = grouping
    return int(np.count_nonzero(np.bincount(group[members & (sizes[group] > 1)], minlength=len(sizes))))


def select_snapshot(parts: list[tuple[str, str]], policy_section: dict) -> dict:
    """Keep the best member of every exact group and near-duplicate cluster of a snapshot and
    write every part's final table (SCHEMA). `parts`: (judge output, select output) of each
    part, in the snapshot's plan order. Returns the snapshot's counts of exact groups and
    near-duplicate clusters of more than one document, of those whose kept member (one that
    passes every other rule) is not the copy minhash_cluster chose (`*_changed`), and of
    clusters lost because every member fails another rule (`clusters_lost`)."""
    tables = [read_parquet(judged, _CHOICE_COLUMNS) for judged, _ in parts]
    judged = pa.concat_tables(tables)
    fails = pc.not_equal(judged.column("reason"), "").to_numpy(zero_copy_only=False)
    part_index = np.repeat(np.arange(len(tables)), [table.num_rows for table in tables])
    rows = np.concatenate([np.arange(table.num_rows) for table in tables])
    ranks = _ranks(judged, fails, part_index, rows)
    # A repository's document is deduplicated with its repository only (near-duplicate clusters of
    # whole repositories): it is in no exact group, so that no repository loses one document to a copy
    # in another, and its unit is the repository, kept whole. A prose document is its own unit.
    in_repository = pc.is_valid(judged.column("copy_unit")).to_numpy(zero_copy_only=False)
    own = len(ranks) + np.arange(len(ranks))
    groups = _grouping(np.where(in_repository, own, _codes(judged.column("exact_group"))))
    units = np.where(in_repository, _codes(judged.column("copy_unit")), own)
    clusters = _grouping(_codes(judged.column("dup_cluster_id")))
    everyone = np.ones(len(ranks), dtype=bool)
    drop_exact, drop_near = policy_section["drop_exact_duplicates"], policy_section["drop_near_duplicates"]
    kept_in_group = _first_of_each_group(groups, ranks, everyone) if drop_exact else everyone
    kept_units = units[_first_of_each_group(clusters, ranks, kept_in_group)]
    kept_in_cluster = kept_in_group & np.isin(units, kept_units) if drop_near else kept_in_group
    exact_duplicate, near_duplicate = ~kept_in_group, kept_in_group & ~kept_in_cluster
    canonical = judged.column("exact_canonical").to_numpy(zero_copy_only=False)
    representative = judged.column("is_cluster_representative").to_numpy(zero_copy_only=False)
    summary = {
        "exact_groups": _groups_where(groups, everyone),
        "exact_groups_changed": _groups_where(groups, kept_in_group & ~fails & ~canonical) if drop_exact else 0,
        "clusters": _groups_where(clusters, everyone),
        "clusters_changed": _groups_where(clusters, kept_in_cluster & ~fails & ~representative) if drop_near else 0,
        "clusters_lost": _groups_where(clusters, everyone) - _groups_where(clusters, ~fails),
    }
    start = 0
    for (judged_path, out_path), table in zip(parts, tables):
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
        start = span.stop
    return summary
