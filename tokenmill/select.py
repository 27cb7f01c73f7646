"""select: the one place where policy turns stored scores into keep/drop decisions.

Upstream stages store values (language and confidence, duplicate structure, line counts,
lengths, ...); this stage reads them with the policy from config and writes, for every
document of a part, whether it is selected, the first rule that excluded it, and which
lines are removed as boilerplate. Changing policy reruns this stage and what follows it,
never extraction, language identification or deduplication.

The checks run in pipeline order, and the yield report attributes each exclusion to the
stage of its reason (REASON_STAGE).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pyarrow as pa

from tokenmill.io import canonical_json, read_jsonl_zst, read_parquet, write_parquet

SCHEMA = pa.schema([
    ("row", pa.int64()),
    ("doc_id", pa.string()),
    ("selected", pa.bool_()),
    ("reason", pa.string()),
    ("drop_lines", pa.list_(pa.int32())),
    ("raw_bytes", pa.int64()),  # before boilerplate lines are removed
    ("chars", pa.int64()),
    ("bytes", pa.int64()),
])

# reason -> the stage whose policy it applies, in pipeline order
REASON_STAGE = {
    "record_truncated": "damaged",
    "lang_not_selected": "langid",
    "lang_conf_below_threshold": "langid",
    "exact_duplicate": "exact_dedup",
    "near_duplicate": "near_dedup",
    "cross_snapshot_duplicate": "near_dedup",
    "too_short": "length",
}
FILTER_STAGES = ["damaged", "langid", "exact_dedup", "near_dedup", "line_dedup", "length"]


@dataclass(frozen=True)
class Policy:
    languages: frozenset[str] | None  # None: every language
    min_lang_conf: float
    lang_conf: dict  # per-language override of min_lang_conf
    min_chars: int
    keep_truncated_records: bool
    drop_exact_duplicates: bool
    drop_near_duplicates: bool
    drop_cross_snapshot_duplicates: bool
    line_min_count: int
    line_rate: float

    @classmethod
    def from_config(cls, section: dict) -> "Policy":
        languages = section.get("languages")
        return cls(
            languages=frozenset(languages) if languages is not None else None,
            min_lang_conf=float(section["min_lang_conf"]),
            lang_conf={lang: float(value) for lang, value in section.get("lang_conf", {}).items()},
            min_chars=int(section["min_chars"]),
            keep_truncated_records=bool(section["keep_truncated_records"]),
            drop_exact_duplicates=bool(section["drop_exact_duplicates"]),
            drop_near_duplicates=bool(section["drop_near_duplicates"]),
            drop_cross_snapshot_duplicates=bool(section["drop_cross_snapshot_duplicates"]),
            line_min_count=int(section["boilerplate_lines"]["min_count"]),
            line_rate=float(section["boilerplate_lines"]["rate"]),
        )

    def boilerplate_threshold(self, scope_clusters: int) -> int:
        """A line counted in more clusters than this is boilerplate: it scales with the
        size of the snapshot (rate per cluster) and never falls below min_count."""
        return max(self.line_min_count, math.ceil(self.line_rate * scope_clusters))

    def drop_lines(self, line_counts: list[int], scope_clusters: int) -> list[int]:
        limit = self.boilerplate_threshold(scope_clusters)
        return [i for i, count in enumerate(line_counts) if count > limit]

    def reason(self, doc: dict) -> str:
        """Empty string when the document passes; else the first rule it fails, in pipeline order.
        `doc` holds the stored values: record_truncated, lang, lang_conf, exact_canonical,
        is_cluster_representative, is_xsnap_representative, chars (after line removal)."""
        if doc["record_truncated"] and not self.keep_truncated_records:
            return "record_truncated"
        if self.languages is not None and doc["lang"] not in self.languages:
            return "lang_not_selected"
        if doc["lang_conf"] < self.lang_conf.get(doc["lang"], self.min_lang_conf):
            return "lang_conf_below_threshold"
        if self.drop_exact_duplicates and not doc["exact_canonical"]:
            return "exact_duplicate"
        if self.drop_near_duplicates and not doc["is_cluster_representative"]:
            return "near_duplicate"
        if self.drop_cross_snapshot_duplicates and doc.get("is_xsnap_representative") is False:
            return "cross_snapshot_duplicate"
        if doc["chars"] < self.min_chars:
            return "too_short"
        return ""


def apply_line_removal(text: str, drop_lines: list[int]) -> str:
    """The text that goes into the shards: `text` without the lines select dropped."""
    if not drop_lines:
        return text
    dropped = set(drop_lines)
    return "\n".join(line for i, line in enumerate(text.split("\n")) if i not in dropped)


def check_aligned(doc_ids: list[str], attrs: pa.Table, stage: str) -> None:
    """Side-car attribute files are row-aligned with their documents; refuse a mismatch."""
    attr_ids = attrs.column("doc_id").to_pylist()
    if attr_ids != doc_ids:
        raise ValueError(f"{stage} attributes are not aligned with the documents "
                         f"({len(attr_ids)} rows vs {len(doc_ids)} documents); rerun {stage}")


def select_part(docs_path: str, langid_path: str, dedup_path: str, out_path: str, policy_section: dict) -> pa.Table:
    policy = Policy.from_config(policy_section)
    docs = list(read_jsonl_zst(docs_path))
    doc_ids = [doc["doc_id"] for doc in docs]
    langid = read_parquet(langid_path)
    dedup = read_parquet(dedup_path)
    check_aligned(doc_ids, langid, "langid")
    check_aligned(doc_ids, dedup, "minhash_cluster")
    values = {name: langid.column(name).to_pylist() for name in ("lang", "lang_conf")}
    values.update({name: dedup.column(name).to_pylist() for name in (
        "exact_canonical", "is_cluster_representative", "is_xsnap_representative", "line_doc_counts", "scope_clusters")})
    columns: dict[str, list] = {name: [] for name in SCHEMA.names}
    for row, doc in enumerate(docs):
        stored = {name: column[row] for name, column in values.items()}
        drop = policy.drop_lines(stored["line_doc_counts"], stored["scope_clusters"])
        text = apply_line_removal(doc["text"], drop)
        stored.update(record_truncated=bool(doc["extract_meta"].get("record_truncated")), chars=len(text.strip()))
        reason = policy.reason(stored)
        for name, value in (("row", row), ("doc_id", doc["doc_id"]), ("selected", not reason), ("reason", reason),
                            ("drop_lines", drop), ("raw_bytes", len(doc["text"].encode("utf-8"))),
                            ("chars", len(text)), ("bytes", len(text.encode("utf-8")))):
            columns[name].append(value)
    table = pa.Table.from_pydict(columns, schema=SCHEMA).replace_schema_metadata(
        {"policy": canonical_json(policy_section)})
    write_parquet(out_path, table)
    return table
