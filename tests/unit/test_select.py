"""select applies policy to stored values, and only there."""

from __future__ import annotations

import pyarrow as pa
import pytest

from tokenmill.io import JsonlZstWriter, read_parquet, write_parquet
from tokenmill.langid import SCHEMA as LANGID_SCHEMA
from tokenmill.select import Policy, select_part

POLICY = {"languages": ["en", "de", "sw"], "min_lang_conf": 0.65, "lang_conf": {"sw": 0.5}, "min_chars": 10,
          "keep_truncated_records": False}


@pytest.mark.parametrize("lang, conf, chars, truncated, reason", [
    ("en", 0.9, 100, False, ""),
    ("fr", 0.99, 100, False, "lang_not_selected"),
    ("en", 0.6, 100, False, "lang_conf_below_threshold"),
    ("sw", 0.55, 100, False, ""),  # per-language threshold
    ("de", 0.9, 5, False, "too_short"),
    ("en", 0.9, 100, True, "record_truncated"),
])
def test_policy_reasons(lang, conf, chars, truncated, reason):
    assert Policy.from_config(POLICY).reason(lang, conf, chars, truncated) == reason


def test_any_language_when_list_is_null():
    policy = Policy.from_config({**POLICY, "languages": None})
    assert policy.reason("yo", 0.9, 100) == ""


def test_select_part_keeps_every_row_with_its_reason(tmp_path):
    docs = tmp_path / "docs.jsonl.zst"
    texts = ["short", "an English document that is long enough", "ein deutsches Dokument, lang genug"]
    with JsonlZstWriter(docs) as writer:
        for i, text in enumerate(texts):
            writer.write({"doc_id": f"{i:032x}", "text": text, "extract_meta": {}})
    langid = tmp_path / "langid.parquet"
    write_parquet(langid, pa.table({"doc_id": [f"{i:032x}" for i in range(3)], "lang": ["en", "en", "de"],
                                    "lang_conf": [0.9, 0.9, 0.3]}, schema=LANGID_SCHEMA))
    out = tmp_path / "select.parquet"
    select_part(str(docs), str(langid), str(out), POLICY)
    table = read_parquet(out)
    assert table.column("selected").to_pylist() == [False, True, False]
    assert table.column("reason").to_pylist() == ["too_short", "", "lang_conf_below_threshold"]
    assert table.column("bytes").to_pylist() == [len(t.encode()) for t in texts]


def test_misaligned_attributes_are_refused(tmp_path):
    docs = tmp_path / "docs.jsonl.zst"
    with JsonlZstWriter(docs) as writer:
        writer.write({"doc_id": "a" * 32, "text": "x" * 50, "extract_meta": {}})
    langid = tmp_path / "langid.parquet"
    write_parquet(langid, pa.table({"doc_id": ["b" * 32], "lang": ["en"], "lang_conf": [0.9]}, schema=LANGID_SCHEMA))
    with pytest.raises(ValueError, match="langid attributes are not aligned"):
        select_part(str(docs), str(langid), str(tmp_path / "out.parquet"), POLICY)
