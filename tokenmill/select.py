"""select: the one place where policy turns stored scores into keep/drop decisions.

Upstream stages store values (language and confidence, lengths, ...); this stage reads
them with the policy from config and writes, for every document of a part, whether it
is selected and, if not, the first rule that excluded it. Changing policy reruns this
stage and what follows it, never extraction or scoring.
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from tokenmill.io import canonical_json, read_jsonl_zst, read_parquet, write_parquet

SCHEMA = pa.schema([
    ("row", pa.int64()),
    ("doc_id", pa.string()),
    ("selected", pa.bool_()),
    ("reason", pa.string()),
    ("chars", pa.int64()),
    ("bytes", pa.int64()),
])


@dataclass(frozen=True)
class Policy:
    languages: frozenset[str] | None  # None: every language
    min_lang_conf: float
    lang_conf: dict  # per-language override of min_lang_conf
    min_chars: int
    keep_truncated_records: bool

    @classmethod
    def from_config(cls, section: dict) -> "Policy":
        languages = section.get("languages")
        return cls(
            languages=frozenset(languages) if languages is not None else None,
            min_lang_conf=float(section["min_lang_conf"]),
            lang_conf={lang: float(value) for lang, value in section.get("lang_conf", {}).items()},
            min_chars=int(section["min_chars"]),
            keep_truncated_records=bool(section["keep_truncated_records"]),
        )

    def reason(self, lang: str, conf: float, chars: int, record_truncated: bool = False) -> str:
        """Empty string when the document passes; else the first rule it fails."""
        if record_truncated and not self.keep_truncated_records:
            return "record_truncated"
        if self.languages is not None and lang not in self.languages:
            return "lang_not_selected"
        if conf < self.lang_conf.get(lang, self.min_lang_conf):
            return "lang_conf_below_threshold"
        if chars < self.min_chars:
            return "too_short"
        return ""


def check_aligned(doc_ids: list[str], attrs: pa.Table, stage: str) -> None:
    """Side-car attribute files are row-aligned with their documents; refuse a mismatch."""
    attr_ids = attrs.column("doc_id").to_pylist()
    if attr_ids != doc_ids:
        raise ValueError(f"{stage} attributes are not aligned with the documents "
                         f"({len(attr_ids)} rows vs {len(doc_ids)} documents); rerun {stage}")


def select_part(docs_path: str, langid_path: str, out_path: str, policy_section: dict) -> pa.Table:
    policy = Policy.from_config(policy_section)
    doc_ids, chars, sizes, broken = [], [], [], []
    for doc in read_jsonl_zst(docs_path):
        doc_ids.append(doc["doc_id"])
        broken.append(bool(doc["extract_meta"].get("record_truncated")))
        chars.append(len(doc["text"]))
        sizes.append(len(doc["text"].encode("utf-8")))
    langid = read_parquet(langid_path)
    check_aligned(doc_ids, langid, "langid")
    langs = langid.column("lang").to_pylist()
    confs = langid.column("lang_conf").to_pylist()
    reasons = [policy.reason(*values) for values in zip(langs, confs, chars, broken)]
    table = pa.Table.from_pydict({
        "row": list(range(len(doc_ids))),
        "doc_id": doc_ids,
        "selected": [not reason for reason in reasons],
        "reason": reasons,
        "chars": chars,
        "bytes": sizes,
    }, schema=SCHEMA).replace_schema_metadata({"policy": canonical_json(policy_section)})
    write_parquet(out_path, table)
    return table
