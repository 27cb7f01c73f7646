"""select applies policy to stored values, and only there."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tokenmill.io import JsonlZstWriter, read_parquet, write_parquet
from tokenmill.langid import SCHEMA as LANGID_SCHEMA
from tokenmill.dedup.cluster import OUTPUT_SCHEMA as DEDUP_SCHEMA
from tokenmill.select import Policy, apply_line_removal, select_part

POLICY = {"languages": ["en", "de", "sw"], "min_lang_conf": 0.65, "lang_conf": {"sw": 0.5}, "min_chars": 10,
          "keep_truncated_records": False, "drop_exact_duplicates": True, "drop_near_duplicates": True,
          "drop_cross_snapshot_duplicates": False, "boilerplate_lines": {"min_count": 3, "rate": 0.01}}
PASSING = {"record_truncated": False, "lang": "en", "lang_conf": 0.9, "exact_canonical": True,
           "is_cluster_representative": True, "is_xsnap_representative": False, "chars": 100}


@pytest.mark.parametrize("changes, reason", [
    ({}, ""),
    ({"lang": "fr", "lang_conf": 0.99}, "lang_not_selected"),
    ({"lang_conf": 0.6}, "lang_conf_below_threshold"),
    ({"lang": "sw", "lang_conf": 0.55}, ""),  # per-language threshold
    ({"chars": 5}, "too_short"),
    ({"record_truncated": True, "lang": "fr"}, "record_truncated"),  # the first failing rule wins
    ({"exact_canonical": False, "is_cluster_representative": False}, "exact_duplicate"),
    ({"is_cluster_representative": False}, "near_duplicate"),
])
def test_policy_reasons(changes, reason):
    assert Policy.from_config(POLICY).reason({**PASSING, **changes}) == reason


def test_any_language_when_list_is_null_and_switches_turn_rules_off():
    policy = Policy.from_config({**POLICY, "languages": None, "drop_near_duplicates": False,
                                 "drop_cross_snapshot_duplicates": True})
    assert policy.reason({**PASSING, "lang": "yo", "is_cluster_representative": False,
                          "is_xsnap_representative": True}) == ""
    assert policy.reason({**PASSING, "is_xsnap_representative": False}) == "cross_snapshot_duplicate"
    assert policy.reason({**PASSING, "is_xsnap_representative": None}) == ""  # pass not run


def test_boilerplate_threshold_scales_with_the_snapshot():
    policy = Policy.from_config(POLICY)
    assert policy.boilerplate_threshold(10) == 3 and policy.boilerplate_threshold(1000) == 10
    assert policy.drop_lines([0, 4, 3, 11, 1], 1000) == [3]
    assert apply_line_removal("menu\nbody\nfooter", [0, 2]) == "body"


def dedup_attrs(doc_ids, canonical, line_counts, clusters=100):
    n = len(doc_ids)
    return pa.Table.from_pydict({
        "doc_id": doc_ids, "content_hash": [0] * n, "exact_canonical": canonical, "exact_dup_of": [None] * n,
        "exact_group_size": [1] * n, "dup_cluster_id": doc_ids, "dup_cluster_size": [1] * n,
        "is_cluster_representative": [True] * n, "line_doc_counts": line_counts, "scope_clusters": [clusters] * n,
        "xsnap_cluster_id": [None] * n, "xsnap_cluster_size": [None] * n, "is_xsnap_representative": [None] * n,
    }, schema=DEDUP_SCHEMA)


def test_select_part_keeps_every_row_with_its_reason_and_dropped_lines(tmp_path):
    docs = tmp_path / "docs.jsonl.zst"
    texts = ["short", "an English document that is long enough\nShare this", "ein deutsches Dokument, lang genug",
             "an English document that is long enough\nShare this"]
    ids = [f"{i:032x}" for i in range(4)]
    with JsonlZstWriter(docs) as writer:
        for doc_id, text in zip(ids, texts):
            writer.write({"doc_id": doc_id, "text": text, "extract_meta": {}})
    langid = tmp_path / "langid.parquet"
    write_parquet(langid, pa.Table.from_pydict({"doc_id": ids, "lang": ["en", "en", "de", "en"],
                                                "lang_conf": [0.9, 0.9, 0.3, 0.9]}, schema=LANGID_SCHEMA))
    dedup = tmp_path / "dedup.parquet"
    write_parquet(dedup, dedup_attrs(ids, [True, True, True, False], [[1], [1, 9], [1], [1, 9]]))
    out = tmp_path / "select.parquet"
    select_part(str(docs), str(langid), str(dedup), str(out), POLICY)
    table = read_parquet(out)
    assert table.column("selected").to_pylist() == [False, True, False, False]
    assert table.column("reason").to_pylist() == ["too_short", "", "lang_conf_below_threshold", "exact_duplicate"]
    assert table.column("drop_lines").to_pylist()[1] == [1]  # "Share this" is in 9 clusters > 3
    assert table.column("bytes").to_pylist()[1] == len("an English document that is long enough")
    assert table.column("raw_bytes").to_pylist()[1] == len(texts[1])


def test_misaligned_attributes_are_refused(tmp_path):
    docs = tmp_path / "docs.jsonl.zst"
    with JsonlZstWriter(docs) as writer:
        writer.write({"doc_id": "a" * 32, "text": "x" * 50, "extract_meta": {}})
    langid = tmp_path / "langid.parquet"
    write_parquet(langid, pa.Table.from_pydict({"doc_id": ["b" * 32], "lang": ["en"], "lang_conf": [0.9]}, schema=LANGID_SCHEMA))
    dedup = tmp_path / "dedup.parquet"
    write_parquet(dedup, dedup_attrs(["a" * 32], [True], [[0]]))
    with pytest.raises(ValueError, match="langid attributes are not aligned"):
        select_part(str(docs), str(langid), str(dedup), str(tmp_path / "out.parquet"), POLICY)
