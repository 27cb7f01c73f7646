"""Holdout carving: write-once files, the pinned manifest, and extraction skipping what was carved."""

from __future__ import annotations

import os
import stat

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.conftest import sample
from tests.unit.helpers import EXTRACT_SETTINGS
from tokenmill.extract import PartInfo, extract_part
from tokenmill.holdout import HoldoutError, HoldoutRules, build_manifest, carve_part, check_pin, write_once
from tokenmill.io import read_json, read_jsonl_zst, sha256_file

WEB_ONE_IN_TEN = HoldoutRules(modulus=10, residue=3, cutoff=None, time_forward_applies=False)
AFTER_MAY_2024 = HoldoutRules(modulus=1000, residue=999_999, cutoff="2024-05-01T00:00:00Z", time_forward_applies=True)


def test_carved_files_are_write_once(tmp_path):
    path = tmp_path / "web" / "part.warc.gz"
    assert write_once(path, b"records") == "written"
    assert not os.stat(path).st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    assert write_once(path, b"records") == "unchanged"
    with pytest.raises(HoldoutError, match="already carved with different content"):
        write_once(path, b"other records")
    assert path.read_bytes() == b"records"


def test_extract_refuses_a_missing_or_unpinned_or_different_holdout(tmp_path):
    manifest = tmp_path / "manifest.json"
    with pytest.raises(HoldoutError, match="is missing: run carve_holdout first"):
        check_pin(str(manifest), "0" * 64)
    receipt = tmp_path / "receipt.json"
    receipt.write_text('{"files": [{"path": "web/a.warc.gz", "records": 1, "bytes": 3, "sha256": "00"}]}')
    actual = build_manifest([str(receipt)], {"web": {"modulus": 10, "residue": 3}}, str(manifest))
    assert actual == sha256_file(manifest)
    check_pin(str(manifest), actual)
    with pytest.raises(HoldoutError, match=f"holdout.manifest_sha256 is not set.*sha256 {actual}"):
        check_pin(str(manifest), None)
    with pytest.raises(HoldoutError, match=f"holdout.manifest_sha256 pins {'1' * 64}, but .* has sha256 {actual}"):
        check_pin(str(manifest), "1" * 64)


def urls_of_warc(path) -> list[str]:
    with open(path, "rb") as handle:
        return [r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(handle) if r.rec_type == "response"]


@pytest.mark.parametrize("warc, rules, reason", [
    (sample("warc", "aeb-articles", "aeb-articles-0001.warc.gz"), WEB_ONE_IN_TEN, "web"),
    (sample("warc", "common-crawl", "whirlwind.warc.gz"), AFTER_MAY_2024, "time_forward"),
])
def test_carved_records_are_exactly_the_ones_extract_skips(tmp_path, warc, rules, reason):
    holdout = tmp_path / "holdout"
    receipt = carve_part(warc, "warc", rules, {}, str(holdout), "src/snap/part", str(tmp_path / "receipt.json"))
    carved = holdout / reason / "src/snap/part.warc.gz"
    held = urls_of_warc(carved)  # the carved file is a valid WARC of the original records
    assert held and receipt["records"][reason] == len(held)
    assert set(held) <= set(urls_of_warc(warc))
    settings = {**EXTRACT_SETTINGS, "holdout": vars(rules)}
    extract_part(warc, "warc", PartInfo("src", "snap", "part", "crawl", "CC-BY-4.0"), settings,
                         str(tmp_path / "docs.jsonl.zst"), str(tmp_path / "q.jsonl.zst"), str(tmp_path / "stats.json"))
    docs = list(read_jsonl_zst(tmp_path / "docs.jsonl.zst"))
    assert not {doc["url"] for doc in docs} & set(held)
    assert read_json(tmp_path / "stats.json")["skipped"][f"holdout_{reason}"] == len(held)
    # carving again is idempotent; the receipt does not change
    before = (tmp_path / "receipt.json").read_bytes()
    carve_part(warc, "warc", rules, {}, str(holdout), "src/snap/part", str(tmp_path / "receipt.json"))
    assert (tmp_path / "receipt.json").read_bytes() == before
