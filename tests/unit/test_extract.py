"""extract on the real sample WARCs and on JSONL, including broken input."""

from __future__ import annotations

import collections
import json
import re

import pytest

from warcio.archiveiterator import ArchiveIterator

from tests.conftest import SAMPLE, gold_articles, lingua_records, sample
from tests.sample_data import bag_of_words_f1
from tests.unit.helpers import EXTRACT_SETTINGS
from tokenmill.extract.part import extract_part
from tokenmill.extract.records import PartInfo, reads_as_mojibake
from tokenmill.timestamps import normalize_timestamp
from tokenmill.extract.html import decode_html, needs_second_pass
from tokenmill.io import read_json, read_jsonl_zst
from tokenmill.hashing import doc_id_for

SETTINGS = EXTRACT_SETTINGS
PROVENANCE = ["doc_id", "record_id", "url", "url_hash", "host", "fetch_ts", "snapshot_id", "source", "tier",
              "license_id", "content_type", "derived_from", "extract_meta", "text"]


def run_extract(tmp_path, path, kind="warc", settings=SETTINGS, name="p"):
    info = PartInfo("src", "snap", name, "crawl", "Apache-2.0")
    out = {k: str(tmp_path / f"{name}.{k}") for k in ("docs", "quarantine", "stats")}
    extract_part(str(path), kind, info, settings, out["docs"], out["quarantine"], out["stats"])
    return (list(read_jsonl_zst(out["docs"])), list(read_jsonl_zst(out["quarantine"])), read_json(out["stats"]))


def test_common_crawl_warc_keeps_html_responses_with_provenance(tmp_path):
    docs, quarantine, stats = run_extract(tmp_path, sample("warc", "common-crawl", "warcfile.warc.gz"))
    assert stats["records"] == {"metadata": 16, "request": 17, "response": 16, "warcinfo": 1}
    assert stats["skipped"] == {"metadata": 16, "request": 17, "warcinfo": 1}
    assert stats["candidates"] == 16 and stats["docs"] + stats["no_text"] == 16
    assert stats["docs"] >= 14 and not quarantine and not stats["read_errors"]
    for doc in docs:
        assert list(doc) == PROVENANCE
        assert doc["doc_id"] == doc_id_for(doc["text"]) and re.fullmatch(r"[0-9a-f]{32}", doc["doc_id"])
        assert doc["record_id"].startswith("<urn:uuid:") and doc["url"].startswith("http")
        assert doc["fetch_ts"].startswith("2020-08-08T") and doc["fetch_ts"].endswith("Z")
        assert doc["snapshot_id"] == "snap" and doc["derived_from"] is None
        assert doc["extract_meta"]["extractor"] == f"blockml-{SETTINGS['blockml']['sha256'][:12]}"  # the default
    # several languages and scripts come through decoding intact
    assert any(re.search(r"[\u4e00-\u9fff]", doc["text"]) for doc in docs)
    assert any(re.search(r"[\u0400-\u04ff]", doc["text"]) for doc in docs)


def test_revisit_records_are_skipped_and_counted(tmp_path):
    path = sample("warc", "ukwa-govuk", "BL-20140325122341434-00000-32090~opera~8443.warc.gz")
    docs, _, stats = run_extract(tmp_path, path)
    assert stats["records"]["revisit"] == 55 and stats["skipped"]["revisit"] == 55
    assert docs and all(doc["host"].endswith("gov.uk") for doc in docs)


def test_chunked_transfer_encoding_is_decoded(tmp_path):
    docs, _, _ = run_extract(tmp_path, sample("warc", "warcio", "example-iana.org-chunked.warc"))
    assert len(docs) == 1 and "DNS Root Zone" in docs[0]["text"]
    assert not docs[0]["extract_meta"]["record_truncated"]


# Mean F1 of each engine on the 181 pages as bench/bench_extract.py measured it (0.965, 0.930,
# 0.955), with room for a library update.
@pytest.mark.parametrize("engine, floor", [("trafilatura", 0.93), ("resiliparse", 0.91), ("two_pass", 0.93)])
def test_article_text_matches_gold_bodies(tmp_path, engine, floor):
    """Each engine, inside the part job, on the 181 real article pages against their gold text; every
    document names the engine whose text it has, and the part counts them."""
    gold = {entry["url"]: entry["articleBody"] for entry in gold_articles().values()}
    scores, engines = [], collections.Counter()
    for path in sorted((SAMPLE / "warc" / "aeb-articles").glob("*.warc.gz")):
        docs, _, stats = run_extract(tmp_path, path, settings={**SETTINGS, "engine": engine}, name=path.stem)
        assert stats["docs"] == stats["candidates"] and sum(stats["engines"].values()) == stats["docs"]
        engines.update(stats["engines"])
        for doc in docs:
            scores.append(bag_of_words_f1(gold[doc["url"]], doc["text"]))
            assert doc["extract_meta"]["extractor"] in stats["engines"]
    assert len(scores) == 181
    assert sum(scores) / len(scores) > floor
    used = {name.split("-")[0] for name in engines}
    assert used == ({"resiliparse", "trafilatura"} if engine == "two_pass" else {engine})


def test_the_second_pass_is_a_function_of_the_cheap_text():
    rule = {"two_pass": {"min_words": 5, "min_short_line_share": 0.3}}
    prose = "A sentence of several words ends here.\nAnother sentence of several words follows it."
    assert not needs_second_pass(prose, rule)  # clean prose keeps resiliparse's text
    menu = prose + "\nHome\nNews\nContact us"
    assert needs_second_pass(menu, rule)  # boilerplate left in: trafilatura
    assert not needs_second_pass("Home\nNews", rule)  # too short to survive select anyway
    assert needs_second_pass(prose, {"two_pass": {"min_words": 5, "min_short_line_share": 0.0}})


def test_two_pass_gives_the_same_bytes_twice(tmp_path):
    path = SAMPLE / "warc" / "aeb-articles" / "aeb-articles-0000.warc.gz"
    settings = {**SETTINGS, "engine": "two_pass"}
    outputs = []
    for name in ("first", "second"):
        run_extract(tmp_path, path, settings=settings, name=name)
        outputs.append((tmp_path / f"{name}.docs").read_bytes())
    assert outputs[0] == outputs[1]


def test_truncated_container_completes_with_counted_error(tmp_path):
    """A real WARC cut in the middle of a record: earlier documents survive, the break is logged."""
    data = open(sample("warc", "dolma", "sample-0000.warc.gz"), "rb").read()
    broken = tmp_path / "cut.warc.gz"
    broken.write_bytes(data[: len(data) // 2])
    docs, _, stats = run_extract(tmp_path, broken)
    whole, _, _ = run_extract(tmp_path, sample("warc", "dolma", "sample-0000.warc.gz"), name="whole")
    assert 0 < len(docs) < len(whole)
    intact, damaged = docs[:-1], docs[-1]
    assert [d["doc_id"] for d in intact] == [d["doc_id"] for d in whole[: len(intact)]]
    assert not any(d["extract_meta"]["record_truncated"] for d in intact)
    assert damaged["extract_meta"]["record_truncated"] and damaged["record_id"] == whole[len(intact)]["record_id"]
    assert stats["read_errors"] and stats["read_errors"][0]["offset"] == damaged["extract_meta"]["offset"] > 0
    assert "Content-Length" in stats["read_errors"][0]["error"]


def test_clipped_common_crawl_record_is_tagged(tmp_path):
    """resiliparse's clipped.warc.gz: a real record whose Content-Length promises more than it has."""
    path = sample("warc", "common-crawl", "clipped.warc.gz")
    docs, _, stats = run_extract(tmp_path, path)
    assert len(docs) == 1 and docs[0]["extract_meta"]["record_truncated"]
    assert stats["read_errors"] == [{"input": path, "offset": 0,
                                     "error": "record ends 13068 bytes before its Content-Length"}]


@pytest.mark.parametrize("content", [b"", b"this is not a WARC file at all\n" * 10])
def test_non_warc_input_completes_empty(tmp_path, content):
    path = tmp_path / "bad.warc.gz"
    path.write_bytes(content)
    docs, _, stats = run_extract(tmp_path, path)
    assert docs == [] and stats["candidates"] == 0 and stats["records"] == {}
    assert stats["read_errors"] == ([{"input": str(path), "offset": 0, "error": "not a WARC or ARC file"}] if content
                                    else [])


def test_size_cap_truncates_and_tags(tmp_path):
    settings = {**SETTINGS, "max_bytes": 30000}
    docs, _, stats = run_extract(tmp_path, sample("warc", "dolma", "sample-0001.warc.gz"), settings=settings)
    assert stats["truncated"] > 0
    assert all(doc["extract_meta"]["html_bytes"] <= 30000 for doc in docs)
    assert any(doc["extract_meta"]["truncated"] for doc in docs)


def test_jsonl_bad_lines_go_to_quarantine_with_reasons(tmp_path):
    """Generated input (not real data): one good line and one of each malformed kind."""
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"\n".join([
        json.dumps({"id": "good", "text": "A real sentence or two of text.", "created": "2024-05-01T10:00:00"}).encode(),
        b"{not json",
        json.dumps({"id": "no-text", "body": "x"}).encode(),
        b'{"id": "latin1", "text": "caf\xe9"}',
        b"",
        json.dumps({"id": "empty", "text": "   "}).encode(),
    ]) + b"\n")
    docs, quarantine, stats = run_extract(tmp_path, path, kind="jsonl")
    assert [d["record_id"] for d in docs] == ["good"]
    assert docs[0]["fetch_ts"] == "2024-05-01T10:00:00Z" and docs[0]["content_type"] == "text/plain"
    assert sorted(q["reason"] for q in quarantine) == ["bad_json", "bad_utf8", "missing_text"]
    assert stats["quarantined"] == {"bad_json": 1, "bad_utf8": 1, "missing_text": 1}
    assert stats["no_text"] == 1 and stats["skipped"] == {"blank_line": 1}
    assert {q["offset"] for q in quarantine} == {2, 3, 4}


def test_jsonl_gzip_sample_part(tmp_path):
    docs, quarantine, stats = run_extract(tmp_path, sample("jsonl", "lingua-sentences", "lingua-ar-de-en-es.jsonl.gz"),
                                          kind="jsonl")
    assert stats["docs"] == 160 and not quarantine
    assert docs[40]["record_id"] == "lingua-de-0000" and docs[40]["text"].count("\n") == 24


def test_decode_prefers_header_then_meta_then_detection():
    text = "Señor Müller's café — «naïve» façade"
    html = f"<html><head><title>t</title></head><body><p>{text}</p></body></html>"
    assert decode_html(html.encode("cp1252"), "windows-1252").text.count("café") == 1
    meta = f'<html><head><meta charset="iso-8859-1"></head><body><p>{text}</p></body></html>'
    decoded = decode_html(meta.encode("cp1252"), None)
    assert decoded.charset_source == "meta" and "façade" in decoded.text
    lying_header = decode_html(html.encode("utf-8"), "shift_jis")  # UTF-8 bytes that are not valid Shift-JIS
    assert lying_header.charset_source == "utf-8" and text in lying_header.text
    japanese = "<html><body><p>" + "日本語のテキストです。" * 40 + "</p></body></html>"
    sniffed = decode_html(japanese.encode("shift_jis"), None)
    assert sniffed.charset_source == "detected" and "日本語" in sniffed.text


def legacy_pages_without_declaration() -> list[tuple[str, bytes, str]]:
    """(url, bytes with their <meta charset> taken out, the charset it declared) of the real Common Crawl pages
    in a non-Latin legacy encoding."""
    pages = []
    with open(sample("warc", "common-crawl", "warcfile.warc.gz"), "rb") as handle:
        for record in ArchiveIterator(handle):
            if record.rec_type != "response":
                continue
            payload = record.content_stream().read()
            meta = re.search(rb"""<meta[^>]*charset\s*=\s*["']?([\w-]+)[^>]*>""", payload, re.I)
            if meta and meta.group(1).lower() not in (b"utf-8", b"iso-8859-1"):
                pages.append((record.rec_headers.get_header("WARC-Target-URI"), payload.replace(meta.group(), b""),
                              meta.group(1).decode()))
    return pages


def test_undeclared_legacy_pages_are_not_read_as_utf8():
    """The real windows-1251, GB2312 and GBK pages of the Common Crawl sample without their declaration, and with
    a wrong charset=utf-8 header: the Chinese pages' bytes hold 52 to 688 accidental UTF-8 sequences (about a third
    of their non-ASCII bytes), yet detection reads every page as its own codec does, never as UTF-8 with
    windows-1252 stretches."""
    pages = legacy_pages_without_declaration()
    assert sorted(codec.lower() for _, _, codec in pages) == ["gb2312", "gb2312", "gb2312", "gbk", "gbk", "gbk",
                                                              "windows-1251"]
    for url, payload, codec in pages:
        # browsers read GB2312 and GBK labels with a GBK decoder; GB18030 is its superset, and one page needs it
        expected = payload.decode("gb18030" if codec.lower().startswith("gb") else codec)
        for header in (None, "utf-8"):
            decoded = decode_html(payload, header)
            assert decoded.charset_source == "detected" and decoded.text == expected, (url, header)


@pytest.mark.parametrize(("lang", "codec"), [("ja", "shift_jis"), ("ja", "euc_jp"), ("zh", "big5"), ("ru", "cp1251"),
                                             ("ru", "koi8_r"), ("ar", "cp1256")])
def test_legacy_encoded_sentences_are_not_read_as_utf8(lang, codec):
    """Real lingua sentences encoded here in a legacy codec (characters it lacks dropped), undeclared and behind a
    wrong charset=utf-8 header: Shift_JIS, EUC-JP and Big5 bytes hold accidental UTF-8 sequences too."""
    text = lingua_records(lang)[0]["text"].encode(codec, "ignore").decode(codec)
    page = f"<html><body><p>{text}</p></body></html>".encode(codec)
    for header in (None, "utf-8"):
        decoded = decode_html(page, header)
        assert decoded.charset_source == "detected" and text in decoded.text


def test_no_sample_document_reads_as_mojibake(tmp_path):
    """No false alarm: every document extracted from the bundled WARCs and JSONL parts, and the 181 gold article
    bodies, pass the mojibake check. Extracted with resiliparse: the page is decoded before any engine runs, and
    resiliparse keeps more of each page's text than trafilatura, at a tenth of its time."""
    extracted = quarantined = 0
    parts = [(path, "warc") for path in sorted((SAMPLE / "warc").rglob("*.warc*"))]
    parts += [(path, "jsonl") for path in sorted((SAMPLE / "jsonl").rglob("*.jsonl.gz"))]
    for number, (path, kind) in enumerate(parts):
        docs, quarantine, _ = run_extract(tmp_path, path, kind=kind, settings={**SETTINGS, "engine": "resiliparse"},
                                          name=f"part{number}")
        extracted += len(docs)
        quarantined += sum(q["reason"] == "mojibake" for q in quarantine)
    assert extracted > 800 and quarantined == 0
    assert [entry["url"] for entry in gold_articles().values() if reads_as_mojibake(entry["articleBody"])] == []


def test_timestamps_normalize_to_utc_seconds():
    assert normalize_timestamp("2020-08-08T17:04:21Z") == "2020-08-08T17:04:21Z"
    assert normalize_timestamp("20080430204825") == "2008-04-30T20:48:25Z"
    assert normalize_timestamp("2024-05-18T01:02:03.123+02:00") == "2024-05-17T23:02:03Z"
    assert normalize_timestamp("yesterday") is None and normalize_timestamp(None) is None
    # a JSONL field can hold anything: out of datetime's range is no time, not a failed part
    assert normalize_timestamp(1e20) is None and normalize_timestamp("0001-01-01T00:00:00+01:00") is None


def test_cut_jsonl_gzip_completes_with_counted_error(tmp_path):
    """A real lingua part cut in the middle of its gzip stream: the lines before the cut are
    documents, the break is a read error at the line where it happens."""
    data = open(sample("jsonl", "lingua-sentences", "lingua-ar-de-en-es.jsonl.gz"), "rb").read()
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(data[: len(data) // 2])
    docs, quarantine, stats = run_extract(tmp_path, cut, kind="jsonl")
    assert 0 < len(docs) < 160 and not quarantine
    [error] = stats["read_errors"]
    assert error["input"] == str(cut) and error["offset"] == stats["records"]["jsonl_line"] + 1
    assert error["error"].startswith("EOFError")
