"""Holdout carving (done by the extract part job as it reads each file): write-once files, the
pinned manifest, and extraction skipping what was carved."""

from __future__ import annotations

import gzip
import json
import os
import stat

import pytest
from warcio.archiveiterator import ArchiveIterator

from tests.conftest import lingua_records, sample
from tests.unit.helpers import RESILIPARSE_SETTINGS
from tokenmill.extract.part import extract_part
from tokenmill.extract.records import PartInfo
from tokenmill.holdout import HoldoutError, HoldoutRules, build_manifest, write_once
from tokenmill.hashing import sha256_file
from tokenmill.io import read_json, read_jsonl_zst
from tokenmill.plan import part_name

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


def test_the_manifest_is_refused_when_it_differs_from_the_pin(tmp_path):
    manifest = tmp_path / "manifest.json"
    receipt = tmp_path / "receipt.json"
    receipt.write_text('{"files": [{"path": "web/a.warc.gz", "records": 1, "bytes": 3, "sha256": "00"}]}')
    settings = {"web": {"modulus": 10, "residue": 3}}
    actual = build_manifest([str(receipt)], settings, str(manifest), None)  # not pinned yet: written, to be pinned
    assert actual == sha256_file(manifest)
    assert build_manifest([str(receipt)], settings, str(manifest), actual) == actual
    with pytest.raises(HoldoutError, match=f"config key holdout.manifest_sha256 pins {'1' * 64}, but .* has sha256 "
                                           f"{actual} \\(1 carved files\\)"):
        build_manifest([str(receipt)], settings, str(manifest), "1" * 64)
    assert not manifest.exists(), "a manifest that fails the pin was left for something downstream to read"


def extract_carving(tmp_path, inputs, rules: HoldoutRules, kind="warc", name="part") -> tuple[list[dict], dict, dict]:
    """(documents, stats, carve receipt) of a part extracted with the holdout carved into tmp_path/holdout."""
    out = tmp_path / "out"
    settings = {**RESILIPARSE_SETTINGS, "holdout": vars(rules)}  # carving reads the raw records
    extract_part(inputs, kind, PartInfo("src", "snap", name, "crawl", "CC-BY-4.0"), settings,
                 str(out / f"{name}.jsonl.zst"), str(out / f"{name}.q.jsonl.zst"), str(out / f"{name}.stats.json"),
                 holdout_dir=str(tmp_path / "holdout"), carve_receipt=str(out / f"{name}.carve.json"))
    return (list(read_jsonl_zst(out / f"{name}.jsonl.zst")), read_json(out / f"{name}.stats.json"),
            read_json(out / f"{name}.carve.json"))


def responses(path) -> list[tuple[str, bytes]]:
    """(url, payload) of every response record of a WARC."""
    with open(path, "rb") as handle:
        return [(r.rec_headers.get_header("WARC-Target-URI"), r.content_stream().read())
                for r in ArchiveIterator(handle) if r.rec_type == "response"]


@pytest.mark.parametrize("warc, rules, reason", [
    (sample("warc", "aeb-articles", "aeb-articles-0001.warc.gz"), WEB_ONE_IN_TEN, "web"),
    (sample("warc", "common-crawl", "whirlwind.warc.gz"), AFTER_MAY_2024, "time_forward"),
])
def test_carved_records_are_exactly_the_ones_extract_skips(tmp_path, warc, rules, reason):
    docs, stats, receipt = extract_carving(tmp_path, warc, rules)
    relative = f"{reason}/src/snap/{part_name(warc)}.warc.gz"
    carved = tmp_path / "holdout" / relative
    held = responses(carved)  # the carved file is a valid WARC of the original records, payloads intact
    assert held and set(held) <= set(responses(warc))
    assert receipt["records"][reason] == len(held) == stats["skipped"][f"holdout_{reason}"]
    assert receipt["files"] == [{"path": relative, "records": len(held),
                                 "bytes": carved.stat().st_size, "sha256": sha256_file(carved)}]
    assert not {doc["url"] for doc in docs} & {url for url, _ in held}
    # extracting again is idempotent: the carved files are unchanged, the receipt the same bytes
    before = (tmp_path / "out/part.carve.json").read_bytes()
    extract_carving(tmp_path, warc, rules)
    assert (tmp_path / "out/part.carve.json").read_bytes() == before


def test_a_part_carves_one_file_per_input_file_and_refuses_to_overwrite(tmp_path):
    """Carved files are named after their input file, not the part, so that the holdout does not
    depend on how files are grouped into parts; carving other bytes to one of them fails the part."""
    inputs = [sample("warc", "aeb-articles", f"aeb-articles-000{n}.warc.gz") for n in (1, 2)]
    _, _, receipt = extract_carving(tmp_path, inputs, WEB_ONE_IN_TEN)
    assert [f["path"] for f in receipt["files"]] == ["web/src/snap/aeb-articles-0001.warc.gz",
                                                     "web/src/snap/aeb-articles-0002.warc.gz"]
    alone = tmp_path / "alone"
    _, _, second_alone = extract_carving(alone, inputs[1], WEB_ONE_IN_TEN, name="aeb-articles-0002")
    assert second_alone["files"] == receipt["files"][1:]
    other = HoldoutRules(modulus=10, residue=4, cutoff=None, time_forward_applies=False)
    with pytest.raises(HoldoutError, match="aeb-articles-0001.warc.gz is already carved with different content"):
        extract_carving(tmp_path, inputs, other)


def test_jsonl_lines_are_carved_as_stored(tmp_path):
    """Real lingua texts; the ids, urls and fetch times are generated here. A held-out line without a
    text is carved, and quarantined like any line without one; a url that is not a string is none."""
    lines = []
    for number, record in enumerate(lingua_records("fr")[:6]):
        created = "2024-06-01T00:00:00Z" if number % 2 else "2024-01-01T00:00:00Z"
        lines.append(json.dumps({"id": f"fr-{number}", "text": record["text"], "url": f"https://example.org/{number}",
                                 "created": created}, ensure_ascii=False).encode())
    lines.append(b'{"id": "no-text", "created": "2024-07-01T00:00:00Z"}')
    lines.insert(0, json.dumps({"id": "odd-url", "text": lingua_records("fr")[6]["text"], "url": 5}).encode())
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b"\n".join(lines))  # the last line has no newline
    docs, stats, receipt = extract_carving(tmp_path, str(path), AFTER_MAY_2024, kind="jsonl")
    carved = gzip.decompress((tmp_path / "holdout/time_forward/src/snap/corpus.jsonl.gz").read_bytes())
    assert carved == b"".join(line + b"\n" for line in (lines[2], lines[4], lines[6], lines[7]))
    assert [doc["record_id"] for doc in docs] == ["odd-url", "fr-0", "fr-2", "fr-4"] and docs[0]["url"] is None
    assert stats["skipped"]["holdout_time_forward"] == 3 and stats["quarantined"] == {"missing_text": 1}
    assert receipt["records"] == {"web": 0, "time_forward": 4}
