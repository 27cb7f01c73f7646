"""Hostile input, generated here (labelled as such: none of it is real crawl data; the
mis-encoded pages are real pages and real sentences, put together or mis-encoded here).

Every case goes through the real extract_part in one WARC per case, beside a real article
page, with one sandboxed worker and with two, and must end with the part complete, the real
page extracted, and the hostile record accounted for with the right reason.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import subprocess
import sys
import time

import ftfy
import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests.conftest import SAMPLE, gold_articles, lingua_records
from tokenmill.config import schema_defaults
from tokenmill.extract.part import extract_part
from tokenmill.extract.records import PartInfo
from tokenmill.extract.sandbox import SandboxFailure, SandboxPool
from tokenmill.io import read_json, read_jsonl_zst

SETTINGS = {**schema_defaults("extract"), "fields": {}, "timeout_s": 20.0, "memory_mb": 1024}


def real_page() -> tuple[str, bytes]:
    article = sorted(gold_articles().values(), key=lambda a: a["url"])[5]
    paragraphs = "".join(f"<p>{p}</p>" for p in article["articleBody"].split("\n") if p.strip())
    return article["url"], f"<html><head><title>t</title></head><body><article>{paragraphs}</article></body></html>".encode()


def write_warc(path, responses: list[tuple[str, bytes, list[tuple[str, str]]]], raw_tail: bytes = b""):
    """A gzipped WARC of (url, payload, extra HTTP headers) responses, text/html unless the extra headers give
    another Content-Type, then raw bytes."""
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True)
    for target, payload, extra in responses:
        content_type = [] if any(name == "Content-Type" for name, _ in extra) else [("Content-Type", "text/html")]
        http = StatusAndHeaders("200 OK", [*content_type, *extra], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(target, "response", payload=io.BytesIO(payload),
                                                      http_headers=http, length=len(payload)))
    path.write_bytes(buffer.getvalue() + raw_tail)
    return path


def warc_with(tmp_path, hostile: bytes, headers: list[tuple[str, str]] | None = None, raw_tail: bytes = b""):
    """A WARC of one real page and one generated hostile response (and optional raw bytes after)."""
    url, page = real_page()
    return write_warc(tmp_path / "hostile.warc.gz", [(url, page, []), ("http://hostile.example/page", hostile,
                                                                        headers or [])], raw_tail)


@pytest.fixture(params=[1, 2], ids=["1-worker", "2-workers"])
def workers(request) -> int:
    """Every case with one sandboxed worker and with two, which parse the real page and the hostile one at once."""
    return request.param


def extract(tmp_path, workers, path, **settings):
    out = {k: str(tmp_path / f"out.{k}") for k in ("docs", "quarantine", "stats")}
    extract_part(str(path), "warc", PartInfo("adversarial", "s", "p", "crawl", "none"), {**SETTINGS, **settings},
                 out["docs"], out["quarantine"], out["stats"], workers=workers)
    docs = list(read_jsonl_zst(out["docs"]))
    real_url = real_page()[0]
    assert any(doc["url"] == real_url for doc in docs), "the real page next to the hostile one was lost"
    return ([d for d in docs if d["url"] != real_url], list(read_jsonl_zst(out["quarantine"])),
            read_json(out["stats"]))


def html(body: str) -> bytes:
    return f"<html><head><title>x</title></head><body>{body}</body></html>".encode()


def test_gzip_bomb_is_capped_before_parsing(tmp_path, workers):
    bomb = gzip.compress(b"\0" * (200 << 20), compresslevel=9)  # 200 MB of zeros in ~200 KB
    docs, quarantine, stats = extract(tmp_path, workers, warc_with(tmp_path, bomb, [("Content-Encoding", "gzip")]))
    assert [q["reason"] for q in quarantine] == ["binary"] and not docs


def test_fifty_megabyte_page_is_truncated_and_tagged(tmp_path, workers):
    paragraph = "<p>" + "An ordinary sentence of a very long page, repeated many times over. " * 20 + "</p>\n"
    page = html(paragraph * (50 * (1 << 20) // len(paragraph)))
    assert len(page) > 49 << 20
    docs, quarantine, stats = extract(tmp_path, workers, warc_with(tmp_path, page), max_bytes=1 << 20)
    assert stats["truncated"] == 1 and not quarantine
    assert docs[0]["extract_meta"]["truncated"] and docs[0]["extract_meta"]["html_bytes"] == 1 << 20


def test_hundred_thousand_nested_elements_do_not_take_the_part_down(tmp_path, workers):
    page = html("<div>" * 100_000 + "deep text" + "</div>" * 100_000)
    docs, quarantine, stats = extract(tmp_path, workers, warc_with(tmp_path, page))
    assert stats["candidates"] == 2 and stats["docs"] + stats["no_text"] + len(quarantine) == 2
    assert not docs or "deep text" in docs[0]["text"]


def test_invalid_utf8_is_decoded_by_detection(tmp_path, workers):
    page = html("<p>" + "Ordinary words in a paragraph of text. " * 30 + "</p>").replace(b"paragraph", b"para\xffgraph", 3)
    docs, quarantine, stats = extract(tmp_path, workers, warc_with(tmp_path, page,
                                                                   [("Content-Type", "text/html; charset=utf-8")]))
    assert not quarantine and docs[0]["extract_meta"]["charset_source"] in ("detected", "fallback")
    assert "Ordinary words" in docs[0]["text"]


GERMAN_PAGE = "https://blog.comwrap.com/die-elektronische-patientenakte-der-lange-marsch-ins-digitale-gesundheitswesen"
GERMAN_PARAGRAPH = "Im Bereich der Gesundheitsversorgung in Krankenhäusern ist dieser Aspekt ein besonders wichtiger."
ENGLISH_PAGE = "https://www.thespacereview.com/article/3834/1"  # UTF-8, no <meta charset>
ENGLISH_PARAGRAPH = ("“If NASA focuses on the investment in the ongoing SLS with the EUS, Orion, and ground system "
                     "developments, there is a better chance of making an earlier date,” Cooke said.")
UTF8_META = b'<meta charset="utf-8">'


def sample_article_page(url: str) -> bytes:
    """The HTML bytes of one of the 181 real article pages in the bundled WARCs."""
    for path in sorted((SAMPLE / "warc" / "aeb-articles").glob("*.warc.gz")):
        with open(path, "rb") as handle:
            for record in ArchiveIterator(handle):
                if record.rec_type == "response" and record.rec_headers.get_header("WARC-Target-URI") == url:
                    return record.content_stream().read()
    raise LookupError(url)


def non_ascii_bytes(data: bytes) -> int:
    return len(re.findall(rb"[\x80-\xff]", data))


def french_sentences_in_cp1252(non_ascii: int) -> list[str]:
    """Real French sentences (lingua), in order, until their windows-1252 bytes hold `non_ascii` non-ASCII bytes;
    passed over: sentences windows-1252 cannot encode or that ftfy would change (the source holds a little
    mojibake of its own), and those that would read as markup."""
    chosen, total = [], 0
    for record in lingua_records("fr"):
        for sentence in record["text"].split("\n"):
            try:
                encoded = sentence.encode("cp1252")
            except UnicodeEncodeError:
                continue
            if total >= non_ascii:
                return chosen
            if re.search(r"[<>&]", sentence) or not non_ascii_bytes(encoded) or ftfy.fix_encoding(sentence) != sentence:
                continue
            chosen.append(sentence)
            total += non_ascii_bytes(encoded)
    raise AssertionError("not enough French sentences")


def with_pasted_paragraph(page: bytes, sentences: list[str], before: str) -> bytes:
    """The page with the sentences pasted in windows-1252 as a paragraph before the one that starts `before`."""
    at = page.rindex(b"<p", 0, page.index(before[:40].encode()))
    return page[:at] + b"<p>" + " ".join(sentences).encode("cp1252") + b"</p>" + page[at:]


def pasted_page(url: str, before: str, pasted_share: float) -> tuple[bytes, list[str]]:
    """A real UTF-8 article page with real French sentences pasted in windows-1252, making `pasted_share` of its
    non-ASCII bytes, and those sentences."""
    page = sample_article_page(url)
    utf8 = non_ascii_bytes(page)
    sentences = french_sentences_in_cp1252(round(utf8 * pasted_share / (1 - pasted_share)))
    mixed = with_pasted_paragraph(page, sentences, before)
    assert abs((non_ascii_bytes(mixed) - utf8) / non_ascii_bytes(mixed) - pasted_share) < 0.01
    return mixed, sentences


def assert_decoded_per_stretch(doc: dict, paragraph: str, sentences: list[str]) -> None:
    text = " ".join(doc["text"].split())
    assert paragraph in text
    assert [sentence for sentence in sentences if " ".join(sentence.split()) not in text] == []
    assert doc["extract_meta"]["charset_source"] == "utf-8+cp1252"


@pytest.mark.parametrize("declared", [True, False], ids=["charset-utf-8", "undeclared"])
@pytest.mark.parametrize("pasted_share", [0.1, 0.3, 0.6])
def test_utf8_page_with_a_windows_1252_paste_decodes_per_stretch(tmp_path, workers, pasted_share, declared):
    """The real German UTF-8 article with real French sentences pasted in windows-1252 (issue 14): whatever share
    of its non-ASCII bytes the paste makes, the German paragraph and every French sentence come out letter for
    letter. Undeclared: no header charset and the page's own <meta charset> removed, so only its valid UTF-8 tells."""
    mixed, sentences = pasted_page(GERMAN_PAGE, GERMAN_PARAGRAPH, pasted_share)
    headers = [("Content-Type", "text/html; charset=utf-8")] if declared else []
    if not declared:
        mixed = mixed.replace(UTF8_META, b"")
    docs, quarantine, stats = extract(tmp_path, workers, warc_with(tmp_path, mixed, headers))
    assert not quarantine
    assert_decoded_per_stretch(docs[0], GERMAN_PARAGRAPH, sentences)


def test_declared_utf8_decodes_per_stretch_however_little_utf8_there_is(tmp_path, workers):
    """A real English UTF-8 article whose curly quotes are 15 % of the non-ASCII bytes once a long French text is
    pasted in windows-1252; the header declares UTF-8 by a WHATWG alias, the only declaration."""
    mixed, sentences = pasted_page(ENGLISH_PAGE, ENGLISH_PARAGRAPH, 0.85)
    docs, quarantine, stats = extract(tmp_path, workers, warc_with(tmp_path, mixed, [
        ("Content-Type", "text/html; charset=unicode-1-1-utf-8")]))
    assert not quarantine
    assert_decoded_per_stretch(docs[0], ENGLISH_PARAGRAPH, sentences)


@pytest.mark.parametrize("misreadings", [["iso8859-10"], ["iso8859-15"], ["latin-1", "iso8859-10"]], ids="+".join)
def test_page_stored_as_mojibake_is_quarantined(tmp_path, workers, misreadings):
    """The real German article as a CMS would store it after reading its UTF-8 as ISO-8859-10
    ("KrankenhÃĪusern", the artefact of issue 14), as ISO-8859-15, or twice (Latin-1, then ISO-8859-10): valid
    UTF-8, served as such, and beyond ftfy's repair."""
    stored = sample_article_page(GERMAN_PAGE)
    for codec in misreadings:
        stored = stored.decode(codec).encode("utf-8")
    headers = [("Content-Type", "text/html; charset=utf-8")]
    docs, quarantine, stats = extract(tmp_path, workers, warc_with(tmp_path, stored, headers))
    assert not docs and [q["reason"] for q in quarantine] == ["mojibake"]
    assert stats["quarantined"] == {"mojibake": 1} and quarantine[0]["url"] == "http://hostile.example/page"


def test_a_page_of_zero_width_characters_is_hidden_text(tmp_path, workers):
    page = html("<p>" + "\u200b" * 5000 + "</p><p>" + "Buy cheap pills now\u2060" * 3 + "</p>")
    docs, quarantine, stats = extract(tmp_path, workers, warc_with(tmp_path, page))
    assert [q["reason"] for q in quarantine] == ["hidden_text"] and not docs


def test_display_none_spam_is_not_extracted(tmp_path, workers):
    visible = "<p>" + "A visible paragraph about the history of the town and its river. " * 6 + "</p>"
    spam = ('<div style="display: none">casino bonus viagra casino bonus</div>'
            '<p style="VISIBILITY:hidden">hidden keyword stuffing</p><span hidden>more spam</span>')
    page = html(f"<article>{visible}{spam}</article>")
    docs, quarantine, stats = extract(tmp_path, workers, warc_with(tmp_path, page))
    assert not quarantine and "history of the town" in docs[0]["text"]
    assert not any(word in docs[0]["text"] for word in ("casino", "keyword stuffing", "more spam"))


def test_an_empty_html_response_has_no_text(tmp_path, workers):
    docs, quarantine, stats = extract(tmp_path, workers, warc_with(tmp_path, b""))
    assert not docs and not quarantine and stats["no_text"] == 1


def test_binary_payload_served_as_html_is_quarantined(tmp_path, workers):
    payload = bytes(range(256)) * 64 + b"\x89PNG\r\n\x1a\n" * 100
    docs, quarantine, stats = extract(tmp_path, workers, warc_with(tmp_path, payload))
    assert [q["reason"] for q in quarantine] == ["binary"] and quarantine[0]["url"] == "http://hostile.example/page"


def test_truncated_warc_keeps_what_it_can_read(tmp_path, workers):
    path = warc_with(tmp_path, html("<p>" + "Second page with enough words to be extracted as text. " * 10 + "</p>"))
    data = path.read_bytes()
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(data + data[: len(data) // 3])  # a third copy, cut mid-member
    out = {k: str(tmp_path / f"cut.{k}") for k in ("docs", "quarantine", "stats")}
    extract_part(str(cut), "warc", PartInfo("adversarial", "s", "cut", "crawl", "none"), SETTINGS, out["docs"],
                 out["quarantine"], out["stats"], workers=workers)
    stats = read_json(out["stats"])
    assert stats["docs"] >= 2 and stats["read_errors"] and stats["read_errors"][0]["offset"] >= len(data)


def test_a_record_without_a_warc_type_is_counted_and_skipped_and_the_part_goes_on(tmp_path, workers):
    """warcio reads a record whose WARC-Type header is missing (seen in damaged files) with no type;
    the part counted it under None and then failed sorting its counts."""
    path = warc_with(tmp_path, html("<p>" + "The page after the untyped record has words enough to be kept. " * 10 + "</p>"))
    url, page = real_page()
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True)
    untyped = writer.create_warc_record("http://untyped.example/", "resource", payload=io.BytesIO(page),
                                        length=len(page))
    untyped.rec_headers.remove_header("WARC-Type")
    writer.write_record(untyped)
    path.write_bytes(buffer.getvalue() + path.read_bytes())
    docs, quarantine, stats = extract(tmp_path, workers, path)
    assert [doc["url"] for doc in docs] == ["http://hostile.example/page"] and not quarantine
    assert stats["records"]["untyped"] == 1 and stats["skipped"]["untyped"] == 1


def spin(seconds: float) -> None:
    """Use `seconds` of CPU time."""
    until = time.process_time() + seconds
    while time.process_time() < until:
        pass


def test_sandboxes_report_timeouts_crashes_and_memory_and_keep_going(workers):
    """A child that burns CPU past the deadline and one asleep (past WALL_LIMIT deadlines of wall
    clock) are timeouts; a crash and a runaway allocation are their own reasons; the part goes on."""
    def work(item):
        if item == "spin":
            spin(60)
        if item == "sleep":
            time.sleep(60)
        if item == "crash":
            os._exit(3)
        if item == "hog":
            return bytearray(2 << 30)
        return item.upper()

    started = time.monotonic()
    with SandboxPool(work, workers, deadline_s=0.5, memory_mb=256) as pool:
        outcomes = []
        for item, outcome in pool.imap(["a", "spin", "b", "sleep", "crash", "c", "hog", "d"], lambda item: item):
            try:
                outcomes.append(outcome.get())
            except SandboxFailure as failure:
                outcomes.append((failure.reason, failure.restarted))
        assert outcomes == ["A", ("timeout", True), "B", ("timeout", True), ("crash", True), "C", ("memory", False),
                            "D"]
        assert pool.restarts == 3
    assert time.monotonic() - started < 30, "a timed-out child was not killed"


def test_a_busy_machine_does_not_make_a_page_time_out():
    """The deadline is CPU time: an item that needs 0.6 CPU-s, on a core shared with two busy
    processes (~1.8 s of wall clock), is not a timeout under a 1 s deadline, and one that needs
    1.5 CPU-s is."""
    others = os.sched_getaffinity(0)
    hogs = []
    try:
        os.sched_setaffinity(0, {min(others)})  # the pool's children and the hogs share one core
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
        started = time.monotonic()
        with SandboxPool(spin, 1, deadline_s=1.0, memory_mb=0) as pool:
            outcomes = []
            for item, outcome in pool.imap([0.6, 1.5, 0.6], lambda item: item):
                try:
                    outcomes.append(outcome.get())
                except SandboxFailure as failure:
                    outcomes.append(failure.reason)
        waited = time.monotonic() - started
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
        os.sched_setaffinity(0, others)
    assert outcomes == [None, "timeout", None]
    assert waited > 3.0, f"the core was not shared: {waited:.1f} s for 1.2 CPU-s of items"


def test_results_come_back_in_input_order_whichever_worker_finishes_first(tmp_path):
    """The first item takes longest: the other worker finishes the ones after it first, and the
    items still come back in the order they went in; items without a task pass through in place."""
    finished = tmp_path / "finished"

    def work(item):
        number, seconds = item
        time.sleep(seconds)
        with open(finished, "a") as log:
            log.write(f"{number}\n")
        return number * 10

    items = [(0, 1.0), (1, 0.0), (2, None), (3, 0.0), (4, 0.0), (5, 0.2)]
    with SandboxPool(work, 2, deadline_s=30.0, memory_mb=0) as pool:
        came_back = [(item[0], outcome and outcome.get())
                     for item, outcome in pool.imap(items, lambda item: None if item[1] is None else item)]
    assert came_back == [(0, 0), (1, 10), (2, None), (3, 30), (4, 40), (5, 50)]
    order = [int(line) for line in finished.read_text().split()]
    assert sorted(order) == [0, 1, 3, 4, 5] and order[0] != 0, f"the slow item did not finish last: {order}"


def test_pages_over_their_deadline_are_quarantined_as_timeout(tmp_path, workers):
    path = warc_with(tmp_path, html("<p>" + "A paragraph of words that takes a moment to parse. " * 20 + "</p>") * 200)
    out = {k: str(tmp_path / f"late.{k}") for k in ("docs", "quarantine", "stats")}
    extract_part(str(path), "warc", PartInfo("adversarial", "s", "late", "crawl", "none"),
                 {**SETTINGS, "timeout_s": 0.001}, out["docs"], out["quarantine"], out["stats"], workers=workers)
    stats = read_json(out["stats"])
    assert stats["quarantined"] == {"timeout": 2} and stats["sandbox_restarts"] == 2 and stats["docs"] == 0
    assert {q["url"] for q in read_jsonl_zst(out["quarantine"])} == {real_page()[0], "http://hostile.example/page"}


HOSTILE_PAGES = {  # hostile page -> (the reason it is quarantined for, or None; text that must not come out)
    "zero_width": (html("<p>" + "\u200b" * 5000 + "</p><p>" + "Buy cheap pills now\u2060" * 3 + "</p>"),
                   "hidden_text", None),
    "display_none": (html("<article><p>" + "A visible paragraph about the history of the town and its river. " * 6
                          + '</p><div style="display: none">casino bonus viagra casino bonus</div>'
                          '<p style="VISIBILITY:hidden">hidden keyword stuffing</p><span hidden>more spam</span>'
                          "</article>"), None, ("casino", "keyword stuffing", "more spam")),
    # lexbor's parse (resiliparse's and blockml's DOM) runs past the deadline on this page: the sandbox quarantines it
    "nested": (html("<div>" * 100_000 + "deep text" + "</div>" * 100_000), "timeout", ()),
    "binary": (bytes(range(256)) * 64 + b"\x89PNG\r\n\x1a\n" * 100, "binary", ()),
}


@pytest.mark.parametrize("engine", ["resiliparse", "two_pass", "blockml"])
@pytest.mark.parametrize("case", sorted(HOSTILE_PAGES))
def test_the_other_engines_quarantine_and_hide_as_trafilatura_does(tmp_path, engine, case):
    page, reason, hidden = HOSTILE_PAGES[case]
    docs, quarantine, stats = extract(tmp_path, 1, warc_with(tmp_path, page), engine=engine, timeout_s=5.0)
    assert [q["reason"] for q in quarantine] == ([reason] if reason else [])
    assert not any(word in doc["text"] for doc in docs for word in hidden or ())
    assert stats["candidates"] == 2 and stats["docs"] + stats["no_text"] + len(quarantine) == 2
