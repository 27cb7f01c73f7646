"""Hostile input, generated here (labelled as such: none of it is real crawl data).

Every case goes through the real extract_part in one WARC per case, beside a real article
page, and must end with the part complete, the real page extracted, and the hostile record
accounted for with the right reason.
"""

from __future__ import annotations

import gzip
import io
import os
import time

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests.conftest import gold_articles
from tokenmill.extract import PartInfo, extract_part
from tokenmill.extract.sandbox import Sandbox, SandboxFailure
from tokenmill.io import read_json, read_jsonl_zst

SETTINGS = {"max_bytes": 8 << 20, "fast": False, "favor_precision": True, "include_tables": True, "zstd_level": 6,
            "fields": {}, "sandbox": True, "timeout_s": 20.0, "memory_mb": 1024}


def real_page() -> tuple[str, bytes]:
    article = sorted(gold_articles().values(), key=lambda a: a["url"])[5]
    paragraphs = "".join(f"<p>{p}</p>" for p in article["articleBody"].split("\n") if p.strip())
    return article["url"], f"<html><head><title>t</title></head><body><article>{paragraphs}</article></body></html>".encode()


def write_warc(path, responses: list[tuple[str, bytes, list[tuple[str, str]]]], raw_tail: bytes = b""):
    """A gzipped WARC of (url, payload, extra HTTP headers) text/html responses, then raw bytes."""
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True)
    for target, payload, extra in responses:
        http = StatusAndHeaders("200 OK", [("Content-Type", "text/html"), *extra], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(target, "response", payload=io.BytesIO(payload),
                                                      http_headers=http, length=len(payload)))
    path.write_bytes(buffer.getvalue() + raw_tail)
    return path


def warc_with(tmp_path, hostile: bytes, headers: list[tuple[str, str]] | None = None, raw_tail: bytes = b""):
    """A WARC of one real page and one generated hostile response (and optional raw bytes after)."""
    url, page = real_page()
    return write_warc(tmp_path / "hostile.warc.gz", [(url, page, []), ("http://hostile.example/page", hostile,
                                                                        headers or [])], raw_tail)


def extract(tmp_path, path, **settings):
    out = {k: str(tmp_path / f"out.{k}") for k in ("docs", "quarantine", "stats")}
    extract_part(str(path), "warc", PartInfo("adversarial", "s", "p", "crawl", "none"), {**SETTINGS, **settings},
                 out["docs"], out["quarantine"], out["stats"])
    docs = list(read_jsonl_zst(out["docs"]))
    real_url = real_page()[0]
    assert any(doc["url"] == real_url for doc in docs), "the real page next to the hostile one was lost"
    return ([d for d in docs if d["url"] != real_url], list(read_jsonl_zst(out["quarantine"])),
            read_json(out["stats"]))


def html(body: str) -> bytes:
    return f"<html><head><title>x</title></head><body>{body}</body></html>".encode()


def test_gzip_bomb_is_capped_before_parsing(tmp_path):
    bomb = gzip.compress(b"\0" * (200 << 20), compresslevel=9)  # 200 MB of zeros in ~200 KB
    docs, quarantine, stats = extract(tmp_path, warc_with(tmp_path, bomb, [("Content-Encoding", "gzip")]))
    assert [q["reason"] for q in quarantine] == ["binary"] and not docs


def test_fifty_megabyte_page_is_truncated_and_tagged(tmp_path):
    paragraph = "<p>" + "An ordinary sentence of a very long page, repeated many times over. " * 20 + "</p>\n"
    page = html(paragraph * (50 * (1 << 20) // len(paragraph)))
    assert len(page) > 49 << 20
    docs, quarantine, stats = extract(tmp_path, warc_with(tmp_path, page), max_bytes=1 << 20)
    assert stats["truncated"] == 1 and not quarantine
    assert docs[0]["extract_meta"]["truncated"] and docs[0]["extract_meta"]["html_bytes"] == 1 << 20


def test_hundred_thousand_nested_elements_do_not_take_the_part_down(tmp_path):
    page = html("<div>" * 100_000 + "deep text" + "</div>" * 100_000)
    docs, quarantine, stats = extract(tmp_path, warc_with(tmp_path, page))
    assert stats["candidates"] == 2 and stats["docs"] + stats["no_text"] + len(quarantine) == 2
    assert not docs or "deep text" in docs[0]["text"]


def test_invalid_utf8_is_decoded_by_detection(tmp_path):
    page = html("<p>" + "Ordinary words in a paragraph of text. " * 30 + "</p>").replace(b"paragraph", b"para\xffgraph", 3)
    docs, quarantine, stats = extract(tmp_path, warc_with(tmp_path, page, [("Content-Type", "text/html; charset=utf-8")]))
    assert not quarantine and docs[0]["extract_meta"]["charset_source"] in ("detected", "fallback")
    assert "Ordinary words" in docs[0]["text"]


def test_mixed_encodings_are_repaired(tmp_path):
    utf8 = "<p>" + "Le café du coin sert un thé très apprécié par les habitués du quartier. " * 8 + "</p>"
    page = html(utf8).replace(b"<body>", b"<body><p>" + "Déjà vu à Zürich, naïve façade. ".encode("cp1252") * 2 + b"</p>")
    docs, quarantine, stats = extract(tmp_path, warc_with(tmp_path, page))
    assert not quarantine
    assert "café" in docs[0]["text"] and "Ã" not in docs[0]["text"]


def test_a_page_of_zero_width_characters_is_hidden_text(tmp_path):
    page = html("<p>" + "\u200b" * 5000 + "</p><p>" + "Buy cheap pills now\u2060" * 3 + "</p>")
    docs, quarantine, stats = extract(tmp_path, warc_with(tmp_path, page))
    assert [q["reason"] for q in quarantine] == ["hidden_text"] and not docs


def test_display_none_spam_is_not_extracted(tmp_path):
    visible = "<p>" + "A visible paragraph about the history of the town and its river. " * 6 + "</p>"
    spam = ('<div style="display: none">casino bonus viagra casino bonus</div>'
            '<p style="VISIBILITY:hidden">hidden keyword stuffing</p><span hidden>more spam</span>')
    docs, quarantine, stats = extract(tmp_path, warc_with(tmp_path, html(f"<article>{visible}{spam}</article>")))
    assert not quarantine and "history of the town" in docs[0]["text"]
    assert not any(word in docs[0]["text"] for word in ("casino", "keyword stuffing", "more spam"))


def test_an_empty_html_response_has_no_text(tmp_path):
    docs, quarantine, stats = extract(tmp_path, warc_with(tmp_path, b""))
    assert not docs and not quarantine and stats["no_text"] == 1


def test_binary_payload_served_as_html_is_quarantined(tmp_path):
    payload = bytes(range(256)) * 64 + b"\x89PNG\r\n\x1a\n" * 100
    docs, quarantine, stats = extract(tmp_path, warc_with(tmp_path, payload))
    assert [q["reason"] for q in quarantine] == ["binary"] and quarantine[0]["url"] == "http://hostile.example/page"


def test_truncated_warc_keeps_what_it_can_read(tmp_path):
    path = warc_with(tmp_path, html("<p>" + "Second page with enough words to be extracted as text. " * 10 + "</p>"))
    data = path.read_bytes()
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(data + data[: len(data) // 3])  # a third copy, cut mid-member
    out = {k: str(tmp_path / f"cut.{k}") for k in ("docs", "quarantine", "stats")}
    extract_part(str(cut), "warc", PartInfo("adversarial", "s", "cut", "crawl", "none"), SETTINGS, out["docs"],
                 out["quarantine"], out["stats"])
    stats = read_json(out["stats"])
    assert stats["docs"] >= 2 and stats["read_errors"] and stats["read_errors"][0]["offset"] >= len(data)


def test_sandbox_reports_timeouts_crashes_and_memory_and_keeps_going():
    def work(item):
        if item == "hang":
            time.sleep(60)
        if item == "crash":
            os._exit(3)
        if item == "hog":
            return bytearray(2 << 30)
        return item.upper()

    with Sandbox(work, deadline_s=1.0, memory_mb=256) as sandbox:
        outcomes = []
        for item in ("a", "hang", "b", "crash", "c", "hog", "d"):
            try:
                outcomes.append(sandbox.run(item))
            except SandboxFailure as failure:
                outcomes.append(failure.reason)
        assert outcomes == ["A", "timeout", "B", "crash", "C", "memory", "D"]
        assert sandbox.restarts == 2


def test_pages_over_their_deadline_are_quarantined_as_timeout(tmp_path):
    path = warc_with(tmp_path, html("<p>" + "A paragraph of words that takes a moment to parse. " * 20 + "</p>") * 200)
    out = {k: str(tmp_path / f"late.{k}") for k in ("docs", "quarantine", "stats")}
    extract_part(str(path), "warc", PartInfo("adversarial", "s", "late", "crawl", "none"),
                 {**SETTINGS, "timeout_s": 0.001}, out["docs"], out["quarantine"], out["stats"])
    stats = read_json(out["stats"])
    assert stats["quarantined"] == {"timeout": 2} and stats["sandbox_restarts"] == 2 and stats["docs"] == 0
    assert {q["url"] for q in read_jsonl_zst(out["quarantine"])} == {real_page()[0], "http://hostile.example/page"}
