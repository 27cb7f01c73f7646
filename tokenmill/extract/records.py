"""extract: input files to documents, quarantine records and stats; held-out records set aside.

A part always completes: unreadable bytes are counted with their offsets, and a
document that breaks the extractor goes to quarantine with its reason. This module reads
records and makes documents; the part job (many files, a pool of sandboxes, completion
records) is tokenmill.extract.part.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
import zlib
from collections import Counter
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator
from urllib.parse import urlsplit

import ftfy
from ftfy.badness import is_bad
import zstandard
from isal import isal_zlib
from warcio.archiveiterator import ArchiveIterator

from tokenmill.code.documents import MadeRepository, code_documents
from tokenmill.extract.ocr import with_ocr_text
from tokenmill.extract.pdf import PDF_ENGINE, join_pages, pdf_text
from tokenmill.extract.pdf_settings import PdfSettings
from tokenmill.extract.quarantine import Quarantine
from tokenmill.extract.sandbox import SandboxFailure
from tokenmill.extract.html import INVISIBLE, decode_html, extract_main_text, looks_binary, looks_like_html
from tokenmill.holdout import HoldoutRules
from tokenmill.hashing import doc_id_for, url_hash
from tokenmill.io import input_bytes, read_jsonl_zst, zst_reader
from tokenmill.synth.quality import EMPTY_GENERATION, document_checks
from tokenmill.timestamps import normalize_timestamp

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
PDF_TYPE = "application/pdf"
CODE_TYPE = "text/x-repository"  # a document of a code repository (tokenmill.code.documents)
SYNTHETIC_TYPE = "text/x-synthetic"  # a generator's rewrite of a document (tokenmill.synth.rephrase)
# what a synthetic document keeps of its generation record in extract_meta.synthetic (with its checks)
SYNTHETIC_META = ("derived_from", "origin", "prompt_template_id", "generator_model_id", "generator_sha256", "engine",
                  "finish", "prompt_tokens", "new_tokens", "source_chars")
REPOSITORY_TYPE = "inode/x-repository"  # a repository not read yet: one candidate per code input
QUARANTINE_CONTENT_CHARS = 2048
MAX_INVISIBLE_SHARE = 0.05  # more invisible characters than this: text hidden from readers (quarantine)
MAX_REPLACEMENT_SHARE = 0.02  # more U+FFFD than this after repair: undecodable (quarantine)
# mojibake marks per non-ASCII character after repair above this: quarantine (a whole text misread: 0.1-0.5;
# the bundled sentences that hold a little mojibake of their own: up to 0.021)
MAX_MOJIBAKE_SHARE = 0.05
MIN_MOJIBAKE_MARKS = 3  # fewer marks are not a broken text (a page may quote one example of mojibake)


@dataclass(frozen=True)
class PartInfo:
    source: str
    snapshot: str
    part: str
    tier: str
    license_id: str


@dataclass
class FileStats:
    """Everything one input file held, so the yield report can account for every record."""

    records: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)
    quarantined: Counter = field(default_factory=Counter)
    candidates: int = 0
    candidate_bytes: int = 0
    docs: int = 0
    doc_bytes: int = 0
    no_text: int = 0
    truncated: int = 0
    sandbox_restarts: int = 0
    read_errors: list = field(default_factory=list)
    engines: Counter = field(default_factory=Counter)  # documents by the engine whose text they have
    math_docs: int = 0  # documents with a formula written as TeX
    formulas: int = 0
    pdf_pages: int = 0  # pages of the PDFs read
    pages_needing_ocr: int = 0  # of which pages without a usable text layer
    ocr_pages: int = 0  # of which pages whose text came from OCR
    code_rejected: Counter = field(default_factory=Counter)  # files of repositories left out, by reason
    code_languages: Counter = field(default_factory=Counter)  # kept files of repositories, by language
    code_license_classes: Counter = field(default_factory=Counter)  # repositories, by licence class

    def as_dict(self, input_path: str) -> dict:
        return {
            "input": input_path,
            "input_bytes": input_bytes(input_path),
            "records": dict(sorted(self.records.items())),
            "skipped": dict(sorted(self.skipped.items())),
            "candidates": self.candidates,
            "candidate_bytes": self.candidate_bytes,
            "docs": self.docs,
            "doc_bytes": self.doc_bytes,
            "no_text": self.no_text,
            "truncated": self.truncated,
            "quarantined": dict(sorted(self.quarantined.items())),
            "sandbox_restarts": self.sandbox_restarts,
            "read_errors": self.read_errors,
            "engines": dict(sorted(self.engines.items())),
            "math_docs": self.math_docs,
            "formulas": self.formulas,
            "pdf_pages": self.pdf_pages,
            "pages_needing_ocr": self.pages_needing_ocr,
            "ocr_pages": self.ocr_pages,
            "code_rejected": dict(sorted(self.code_rejected.items())),
            "code_languages": dict(sorted(self.code_languages.items())),
            "code_license_classes": dict(sorted(self.code_license_classes.items())),
        }


def _summed(stats: list[dict], key: str):
    values = [entry[key] for entry in stats]
    if isinstance(values[0], dict):
        return dict(sorted(sum(map(Counter, values), Counter()).items()))
    if isinstance(values[0], list):
        return [item for value in values for item in value]
    return sum(values)


def file_stats(units: list[dict]) -> dict:
    """One file's stats (FileStats.as_dict) from those of the units it was read in, in order."""
    return {key: units[0][key] if key in ("input", "input_bytes") else _summed(units, key) for key in units[0]}


def part_stats(info: PartInfo, files: list[dict]) -> dict:
    """A part's stats: its files' counts summed (read errors listed with their file), then
    each file's own stats (FileStats.as_dict) in file order."""
    totals: dict = {"source": info.source, "snapshot": info.snapshot, "part": info.part}
    for key in files[0]:
        if key == "read_errors":
            totals[key] = [{"input": stats["input"], **error} for stats in files for error in stats[key]]
        elif key != "input":
            totals[key] = _summed(files, key)
    return {**totals, "files": files}


@dataclass(frozen=True)
class Candidate:
    """A record that should yield a document, before extraction."""

    input: str  # the file it is in
    offset: int
    record_id: str
    url: str | None
    fetch_ts: str | None
    content_type: str
    payload: bytes | None = None  # HTML bytes (WARC)
    header_charset: str | None = None
    text: str | None = None  # already-plain text (JSONL)
    truncated: bool = False  # cut at the configured size cap, or by the crawler (WARC-Truncated)
    record_truncated: bool = False  # the record itself is shorter than its Content-Length
    ocr: dict | None = None  # a PDF's OCR rows by page number (tokenmill.extract.ocr), where OCR ran
    meta: dict | None = None  # a repository document's extract_meta.code (tokenmill.code.documents)


@dataclass(frozen=True)
class Unreadable:
    """A record that fails before extraction (a JSONL line that is not UTF-8, not JSON or has
    no text), or that is not to be read (a WARC's PDF response where its source reads none):
    quarantined where it stands."""

    offset: int
    record_id: str
    problem: "Quarantine"
    url: str | None = None


# Single-byte codecs UTF-8 gets misread as, by a wrong declaration or by detection (ISO-8859-10 in issue 14).
# ftfy repairs windows-1252 mojibake, but not ISO-8859-10 or -15, nor every text misread twice.
_MISREADING_CODECS = ("cp1252", "latin-1", "iso8859-15", "cp1250", "iso8859-2", "iso8859-9", "iso8859-10",
                      "iso8859-13", "cp1257")


def _as_read_by(codec: str, byte_values) -> str:
    return re.escape("".join(sorted({bytes([value]).decode(codec, "ignore") for value in byte_values} - {""})))


def _mojibake_pattern() -> re.Pattern:
    """UTF-8 read as a single-byte codec, as that codec shows it: the lead byte of Latin-1, Latin Extended-A
    (C2-C5) or Cyrillic (D0-D1) letters followed by a continuation byte ("Ã©", "ÃĐ", "Ä™", "Ð¿"), the lead of
    general punctuation ("â€™", "â€œ", "â„¢"), and C1 control characters, which no text contains."""
    pairs = set()
    for codec in _MISREADING_CODECS:
        continuation = _as_read_by(codec, range(0x80, 0xC0))
        pairs.add(f"[{_as_read_by(codec, (0xC2, 0xC3, 0xC4, 0xC5, 0xD0, 0xD1))}][{continuation}]")
        pairs.add(f"{_as_read_by(codec, (0xE2,))}[{_as_read_by(codec, range(0x80, 0x85))}]")
    return re.compile("|".join(sorted(pairs)) + r"|[\x80-\x9f]")


_MOJIBAKE_MARK = _mojibake_pattern()


_LONG_ASCII_RUN = re.compile(r"[\x00-\x7f]{13,}")


def non_ascii_context(text: str) -> str:
    """The text with every run of more than 12 ASCII characters cut to its first and last six
    around a NUL. A mojibake pattern (ours and ftfy's) holds a non-ASCII character and reaches
    at most five characters from it, and none matches a NUL after an ASCII character, so a
    pattern matches here exactly where it matches the text: a prose page shrinks to its accents
    and quotes, which the patterns then scan in a tenth of the time."""
    return _LONG_ASCII_RUN.sub(lambda run: f"{run.group()[:6]}\x00{run.group()[-6:]}", text)


def mojibake_marks(text: str, context: str | None = None) -> tuple[int, int]:
    """(mojibake marks, non-ASCII characters) of a text (`context`: its non_ascii_context)."""
    marks = len(_MOJIBAKE_MARK.findall(context if context is not None else non_ascii_context(text)))
    return marks, len(text) - len(text.encode("ascii", "ignore"))


def reads_as_mojibake(text: str, context: str | None = None) -> bool:
    marks, non_ascii = mojibake_marks(text, context)
    return marks >= MIN_MOJIBAKE_MARKS and marks > MAX_MOJIBAKE_SHARE * non_ascii


def clean_text(text: str, invisible_chars: int, visible_chars: int) -> str:
    """Invisible formatting characters out, mojibake repaired (ftfy); a text hidden in
    invisible characters (more than MAX_INVISIBLE_SHARE of the `visible_chars` that hold the
    `invisible_chars`), still full of replacement characters or still reading as mojibake is
    quarantined."""
    if invisible_chars > MAX_INVISIBLE_SHARE * max(visible_chars, 1):
        raise Quarantine("hidden_text", f"{invisible_chars} of {visible_chars} visible characters are invisible",
                         text[:QUARANTINE_CONTENT_CHARS])
    text = INVISIBLE.sub("", text)
    if text.isascii():
        return text
    context = non_ascii_context(text)
    if is_bad(context):  # ftfy changes only a text that its badness pattern matches
        text = ftfy.fix_encoding(text)
        context = non_ascii_context(text)
    replacement = text.count("\ufffd")
    if replacement > MAX_REPLACEMENT_SHARE * max(len(text), 1):
        raise Quarantine("bad_encoding", f"{replacement} of {len(text)} characters are U+FFFD after repair",
                         text[:QUARANTINE_CONTENT_CHARS])
    if reads_as_mojibake(text, context):
        marks, non_ascii = mojibake_marks(text, context)
        raise Quarantine("mojibake", f"{marks} mojibake marks in {non_ascii} non-ASCII characters after repair",
                         text[:QUARANTINE_CONTENT_CHARS])
    return text


def _mime_and_charset(content_type: str | None) -> tuple[str, str | None]:
    if not content_type:
        return "", None
    pieces = [piece.strip() for piece in content_type.split(";")]
    charset = None
    for piece in pieces[1:]:
        key, _, value = piece.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip("\"'") or None
    return pieces[0].lower(), charset


def _container_kind(path: str) -> str | None:
    """'warc' or 'arc' from the first bytes (gzip or not); None for anything else."""
    with open(path, "rb") as handle:
        head = handle.read(4096)
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(wbits=31).decompress(head, 64)
        except zlib.error:
            return None
    head = head.lstrip(b"\r\n")
    if head.startswith(b"WARC/"):
        return "warc"
    if head.startswith(b"filedesc://"):
        return "arc"
    return None


@dataclass
class Span:
    """The records of a file that one unit of work reads: those that begin in [start, end) (end
    None: on to the file's end). Once read: `first`, where its first record began, and `stop`,
    where the record after its last one begins (None: at the file's end; both None: no record
    begins in the span); `broken` when the file could not be read on from `stop`."""

    start: int = 0
    end: int | None = None
    first: int | None = None
    stop: int | None = None
    broken: bool = False


GZIP_MEMBER = b"\x1f\x8b\x08"
SCAN_BYTES = 1 << 20


def _opens_warc_record(head: bytes) -> bool:
    try:
        return zlib.decompressobj(wbits=31).decompress(head, 16).startswith(b"WARC/")
    except zlib.error:
        return False


def next_record_start(handle, position: int) -> int | None:
    """The offset of the first gzip member at or after `position` of a per-record-gzip WARC file
    that opens a WARC record; None if there is none. A false find (those bytes inside a record's
    compressed data) is caught by the part job, which checks that each span begins where the one
    before it stopped."""
    while True:
        handle.seek(position)
        chunk = handle.read(SCAN_BYTES)
        if len(chunk) < len(GZIP_MEMBER):
            return None
        at = chunk.find(GZIP_MEMBER)
        while at != -1:
            handle.seek(position + at)
            if _opens_warc_record(handle.read(512)):
                return position + at
            at = chunk.find(GZIP_MEMBER, at + 1)
        position += len(chunk) - len(GZIP_MEMBER) + 1  # a member header cut by the chunk's end is found next time


def warc_spans(path: str, unit_bytes: int) -> list[Span]:
    """A WARC file cut into spans of `unit_bytes` for workers to read apart: only a file of one
    gzip member per record (Common Crawl's), the only kind where a record start can be found
    from any byte; any other file is one span."""
    size = os.path.getsize(path)
    if size <= unit_bytes or _container_kind(path) != "warc":
        return [Span()]
    member = zlib.decompressobj(wbits=31)
    with open(path, "rb") as handle:  # the first record's member, through
        while not member.eof and handle.tell() < unit_bytes:
            try:
                member.decompress(handle.read(1 << 16))
            except zlib.error:
                return [Span()]
        if not (member.eof and (member.unused_data + handle.read(len(GZIP_MEMBER))).startswith(GZIP_MEMBER)):
            return [Span()]
    cuts = list(range(0, size, unit_bytes))
    return [Span(start, end) for start, end in zip(cuts, [*cuts[1:], None])]


def _isal_gzip_member():
    return isal_zlib.decompressobj(16 + isal_zlib.MAX_WBITS)


def _inflated_by_isal(records: ArchiveIterator) -> ArchiveIterator:
    """`records` (not read yet) with each gzip member inflated by ISA-L instead of zlib: the same
    bytes in 40 % of the time (0.2 ms of an average page's 0.5). warcio picks its decompressor
    from its reader's DECOMPRESSORS, which this reader alone now holds its own copy of."""
    reader = records.reader
    reader.DECOMPRESSORS = {**reader.DECOMPRESSORS, "gzip": _isal_gzip_member}
    reader.set_decomp("gzip")
    return records


def warc_candidates(path: str, max_bytes: int, stats: FileStats, holdout: HoldoutRules | None = None,
                    held: dict[str, list[bytes]] | None = None, pdf_max_bytes: int = 0,
                    span: Span | None = None, pdf_off: str | None = None) -> Iterator[Candidate | Unreadable]:
    """HTTP 200 HTML responses of a WARC (or ARC) file, and PDF ones where `pdf_max_bytes` (the
    PDF size cap) is given; every other record is counted and skipped. A PDF that the crawler
    cut (`WARC-Truncated`, Common Crawl's 1 MiB limit) or that is over the cap is `truncated`.
    With `pdf_off` (why: the source's setting that turns them off), a PDF response is not read
    but yielded Unreadable, to be quarantined `pdf_response_off` with its url.

    A response record that `holdout` holds out is skipped, and with `held` its bytes exactly as
    stored (a gzip member in a per-record-gzip file) are appended to `held[reason]`, in file
    order, for the holdout to keep. A broken record or container is counted in
    `stats.read_errors` with the byte offset of the record, and the part goes on with what can
    be read (a record broken off mid-way is not held). With `span`, only the records that
    begin in it are read, and the span says where they began and stopped (Span)."""
    span = span if span is not None else Span()
    if span.start == 0 and Path(path).stat().st_size == 0:
        return
    if span.start == 0 and _container_kind(path) is None:
        stats.read_errors.append({"offset": 0, "error": "not a WARC or ARC file"})
        return
    with open(path, "rb") as handle, open(path, "rb") as stored:
        span.first = next_offset = 0 if span.start == 0 else next_record_start(handle, span.start)
        if next_offset is None:
            return
        handle.seek(next_offset)
        records = _inflated_by_isal(ArchiveIterator(handle, arc2warc=True))

        def consume(record) -> int:
            # warcio knows a record's offset only once the record has been read through.
            nonlocal next_offset
            start = records.get_record_offset()
            next_offset = start + records.get_record_length()
            missing = getattr(record.raw_stream, "limit", 0)
            if missing:
                stats.read_errors.append({"offset": start, "error": f"record ends {missing} bytes before "
                                                                       f"its Content-Length"})
            return start

        try:
            for record in records:
                if span.end is not None and next_offset >= span.end:  # the next span's
                    span.stop = next_offset
                    return
                # a record without a WARC-Type header is counted and skipped by a name that sorts with the others
                rec_type = record.rec_type or "untyped"
                stats.records[rec_type] += 1
                url = record.rec_headers.get_header("WARC-Target-URI")
                fetch_ts = normalize_timestamp(record.rec_headers.get_header("WARC-Date"))
                # every response is held out by its url and time, whatever its status (the holdout keeps records)
                held_out = holdout.reason(url, fetch_ts) if holdout and rec_type == "response" else None
                http = record.http_headers
                payload = mime = charset = None
                pdf_response_off = False
                if rec_type != "response":
                    stats.skipped[rec_type] += 1
                elif http is None or http.get_statuscode() != "200":
                    stats.skipped["not_http" if http is None else "http_status_not_200"] += 1
                elif held_out:  # it must never reach training output
                    stats.skipped[f"holdout_{held_out}"] += 1
                else:
                    mime, charset = _mime_and_charset(http.get_header("Content-Type"))
                    pdf_response_off = mime == PDF_TYPE and pdf_off is not None
                    limit = pdf_max_bytes if mime == PDF_TYPE and pdf_max_bytes else max_bytes
                    if not pdf_response_off:
                        payload = record.content_stream().read(limit + 1)
                errors_before = len(stats.read_errors)
                offset = consume(record)
                if held_out and held is not None:
                    stored.seek(offset)
                    held[held_out].append(stored.read(next_offset - offset))
                if pdf_response_off:  # quarantined unread: its file and offset say where it is
                    stats.records["pdf_response"] += 1
                    yield Unreadable(offset, record.rec_headers.get_header("WARC-Record-ID") or f"offset:{offset}",
                                     Quarantine("pdf_response_off", f"a PDF response, not read: {pdf_off}"), url)
                    continue
                if payload is None:
                    continue
                if mime == PDF_TYPE and pdf_max_bytes:
                    stats.records["pdf_response"] += 1
                    cut_by_crawler = bool(record.rec_headers.get_header("WARC-Truncated"))
                    yield Candidate(input=path, offset=offset, url=url, fetch_ts=fetch_ts, content_type=PDF_TYPE,
                                    record_id=record.rec_headers.get_header("WARC-Record-ID") or f"offset:{offset}",
                                    payload=payload[:limit], truncated=cut_by_crawler or len(payload) > limit,
                                    record_truncated=len(stats.read_errors) > errors_before)
                    continue
                if mime not in HTML_TYPES and not (mime in ("", "text/plain") and looks_like_html(payload)):
                    stats.skipped["not_html"] += 1
                    continue
                yield Candidate(
                    input=path,
                    offset=offset,
                    record_id=record.rec_headers.get_header("WARC-Record-ID") or f"offset:{offset}",
                    url=url,
                    fetch_ts=fetch_ts,
                    content_type=mime or "text/html",
                    payload=payload[:max_bytes],
                    header_charset=charset,
                    truncated=len(payload) > max_bytes,
                    record_truncated=len(stats.read_errors) > errors_before,
                )
        except Exception as error:  # the container is unreadable from here on
            stats.read_errors.append({"offset": next_offset, "error": f"{type(error).__name__}: {error}"})
            span.stop, span.broken = next_offset, True


def open_lines(path: str):
    if path.endswith(".gz"):
        return gzip.open(path, "rb")
    if path.endswith(".zst"):
        return io.BufferedReader(zst_reader(open(path, "rb")))
    return open(path, "rb")


def jsonl_candidates(path: str, fields: dict, name: str, stats: FileStats, holdout: HoldoutRules | None = None,
                     held: dict[str, list[bytes]] | None = None) -> Iterator[Candidate | Unreadable]:
    """One candidate per JSON line holding a text, an Unreadable per malformed line. A record
    without an id is `{name}:{line number}`. Held-out lines are skipped, and with `held`
    appended to `held[reason]` as stored. A broken container (a cut gzip or zstd stream) is
    counted in `stats.read_errors` at the line where it breaks, and the part goes on with the
    lines before it."""
    line_no = 0
    try:
        with open_lines(path) as lines:
            for line_no, line in enumerate(lines, start=1):
                stats.records["jsonl_line"] += 1
                if line.strip():
                    yield from _jsonl_record(path, line_no, line, fields, name, stats, holdout, held)
                else:
                    stats.skipped["blank_line"] += 1
    except (OSError, EOFError, zlib.error, zstandard.ZstdError) as error:
        stats.read_errors.append({"offset": line_no + 1, "error": f"{type(error).__name__}: {error}"})


def _jsonl_record(path: str, line_no: int, line: bytes, fields: dict, name: str, stats: FileStats,
                  holdout: HoldoutRules | None, held: dict[str, list[bytes]] | None
                  ) -> Iterator[Candidate | Unreadable]:
    """What one non-blank line yields: a candidate, an Unreadable, or nothing (held out)."""
    fallback_id = f"{name}:{line_no}"
    content = line[:QUARANTINE_CONTENT_CHARS].decode("utf-8", "replace")
    try:
        record = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as error:
        yield Unreadable(line_no, fallback_id, Quarantine("bad_utf8", str(error), content))
        return
    except json.JSONDecodeError as error:
        yield Unreadable(line_no, fallback_id, Quarantine("bad_json", str(error), content))
        return
    if not isinstance(record, dict):
        record = {}
    url = record.get(fields["url"]) if isinstance(record.get(fields["url"]), str) else None
    fetch_ts = normalize_timestamp(record.get(fields["fetch_ts"]))
    held_out = holdout.reason(url, fetch_ts) if holdout else None
    if held_out and held is not None:  # whether or not it has a text: the holdout keeps records
        held[held_out].append(line if line.endswith(b"\n") else line + b"\n")
    text = record.get(fields["text"])
    if not isinstance(text, str):
        problem = Quarantine("missing_text", f"no string field {fields['text']!r}", content)
        yield Unreadable(line_no, fallback_id, problem)
        return
    if held_out:
        stats.skipped[f"holdout_{held_out}"] += 1
        return
    record_id = record.get(fields["id"])
    yield Candidate(
        input=path,
        offset=line_no,
        record_id=str(record_id) if record_id is not None else fallback_id,
        url=url,
        fetch_ts=fetch_ts,
        content_type="text/plain",
        text=text,
    )


def pdf_candidates(path: str, max_bytes: int, stats: FileStats, holdout: HoldoutRules | None = None,
                   held: dict[str, list[bytes]] | None = None, origin: dict | None = None
                   ) -> Iterator[Candidate | Unreadable]:
    """A PDF file as one candidate, its path as record id; its url and fetch time are those of
    `origin` (its row in the source's `urls` side file), else the path and none. One larger than
    `max_bytes` is quarantined `too_large` unread, and a held-out one is skipped (with `held`,
    its bytes appended to `held[reason]`)."""
    stats.records["pdf_file"] += 1
    size = Path(path).stat().st_size
    url, fetch_ts = (origin["url"], origin["fetch_ts"]) if origin else (path, None)
    held_out = holdout.reason(url, fetch_ts) if holdout else None
    if held_out:
        stats.skipped[f"holdout_{held_out}"] += 1
        if held is not None:
            held[held_out].append(Path(path).read_bytes())
        return
    if size > max_bytes:
        yield Unreadable(0, path, Quarantine("too_large", f"{size} bytes, more than extract.pdf.max_bytes {max_bytes}"))
        return
    yield Candidate(input=path, offset=0, record_id=path, url=url, fetch_ts=fetch_ts, content_type=PDF_TYPE,
                    payload=Path(path).read_bytes())


def synthetic_candidates(path: str, origin_docs: str, settings: dict, stats: FileStats,
                         holdout: HoldoutRules | None = None, held: dict[str, list[bytes]] | None = None
                         ) -> Iterator[Candidate | Unreadable]:
    """One candidate per generation record of a synthetic part (rule generate), with its lineage
    and its quality checks against the source text it was given (`origin_docs`: the documents of
    the part it rewrites, read alongside: the records follow their rows). An output without text
    is quarantined (empty_generation), and a held-out one skipped (with `held`, appended there)."""
    sources = enumerate(read_jsonl_zst(origin_docs))
    row, source = -1, None
    with open_lines(path) as lines:
        for line_no, line in enumerate(lines, start=1):
            record = json.loads(line)
            stats.records["generation"] += 1
            while row < record["origin"]["row"]:
                row, source = next(sources)
            held_out = holdout.reason(record["url"], record["fetch_ts"]) if holdout else None
            if held_out:
                stats.skipped[f"holdout_{held_out}"] += 1
                if held is not None:
                    held[held_out].append(line)
                continue
            if not record["text"].strip():
                yield Unreadable(line_no, record["id"], Quarantine(
                    EMPTY_GENERATION, f"no text for {record['derived_from']} under {record['prompt_template_id']} "
                                      f"({record['finish']} after {record['new_tokens']} tokens)"))
                continue
            checks = document_checks(record["text"], record["finish"], source["text"][:record["source_chars"]],
                                     settings["synthetic_quality"])
            yield Candidate(input=path, offset=line_no, record_id=record["id"], url=record["url"],
                            fetch_ts=record["fetch_ts"], content_type=SYNTHETIC_TYPE, text=record["text"],
                            meta={**{key: record[key] for key in SYNTHETIC_META}, "checks": checks})


URL_FILE_COLUMNS = ("path", "url", "fetch_ts")


def read_origins(path: str) -> dict[str, dict]:
    """A `pdf` source's `urls` side file: a TSV with a header `path  url  [fetch_ts]`, one row
    per PDF (its path absolute or relative to the side file's folder, so that the file travels
    with the PDFs it lists) -> {url, fetch_ts}, keyed by the PDF's absolute path."""
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    header = rows[0] if rows else []
    if header[:2] != ["path", "url"] or not set(header) <= set(URL_FILE_COLUMNS):
        raise ValueError(f"{path}: the urls side file needs a header of columns {URL_FILE_COLUMNS} (fetch_ts "
                         f"optional), not {header}")
    origins = {}
    for line, row in enumerate(rows[1:], start=2):
        if len(row) != len(header):
            raise ValueError(f"{path}:{line}: {len(row)} columns, the header has {len(header)}")
        values = dict(zip(header, row))
        pdf = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(path)), values["path"]))
        if pdf in origins:
            raise ValueError(f"{path}:{line}: {values['path']} is listed twice")
        fetch_ts = values.get("fetch_ts") or None
        if fetch_ts is not None and normalize_timestamp(fetch_ts) is None:
            raise ValueError(f"{path}:{line}: fetch_ts {fetch_ts!r} is not an ISO 8601 time")
        origins[pdf] = {"url": values["url"] or values["path"], "fetch_ts": normalize_timestamp(fetch_ts)}
    return origins


def repository_candidate(path: str, stats: FileStats) -> Iterator[Candidate]:
    """A code source's input (an archive or a folder) as one candidate to read: the part job
    reads it (`read_repository`) in a sandbox under `extract.code.timeout_s`, then turns what it
    read into documents with `repository_records`."""
    stats.records["repository"] += 1
    yield Candidate(input=path, offset=0, record_id=path, url=None, fetch_ts=None, content_type=REPOSITORY_TYPE)


def read_repository(candidate: Candidate, settings: dict) -> MadeRepository:
    return code_documents(candidate.input, settings["code"])


def repository_records(path: str, read: Callable[[], MadeRepository], stats: FileStats,
                       holdout: HoldoutRules | None = None, held: dict[str, list[bytes]] | None = None
                       ) -> Iterator[Candidate | Unreadable]:
    """A repository's documents (tokenmill.code.documents), each a candidate whose `meta` says
    what the repository is, from `read()`; its files left out are counted by reason. An archive
    that cannot be opened, or a repository that breaks the reader or the parser, is quarantined
    `unreadable_repository` (or as the sandbox failed: timeout, memory, crash); one without a file
    worth keeping is quarantined `no_code`. A repository the holdout predicate holds out (by its
    url, else its path; it has no fetch time) is skipped, and with `held` an archive's bytes are
    appended to `held[reason]` (a folder stays where it is)."""
    try:
        made = read()
    except SandboxFailure as failure:
        stats.sandbox_restarts += failure.restarted
        yield Unreadable(0, path, Quarantine(failure.reason, f"reading the repository: {failure.detail}"))
        return
    except Exception as error:  # a poison repository never fails the part
        yield Unreadable(0, path, Quarantine("unreadable_repository", f"{type(error).__name__}: {error}"))
        return
    url = made.repository.url or path
    held_out = holdout.reason(url, None) if holdout else None
    if held_out:
        stats.skipped[f"holdout_{held_out}"] += 1
        if held is not None and os.path.isfile(path):
            held[held_out].append(Path(path).read_bytes())
        return
    stats.code_rejected.update(made.selection.rejections)
    stats.code_languages.update({language: entry["files"] for language, entry in made.features.languages.items()})
    stats.code_license_classes[made.license.license_class] += 1
    if not made.documents:
        yield Unreadable(0, path, Quarantine("no_code", f"no file kept of {made.features.members}: "
                                             f"{dict(made.selection.rejections)}"))
        return
    for doc in made.documents:
        yield Candidate(input=path, offset=doc.chunk, record_id=f"{path}#{doc.chunk}", url=url, fetch_ts=None,
                        content_type=CODE_TYPE, text=doc.text, meta=made.meta(doc))


def code_candidates(path: str, settings: dict, stats: FileStats, holdout: HoldoutRules | None = None,
                    held: dict[str, list[bytes]] | None = None) -> Iterator[Candidate | Unreadable]:
    """A repository's candidates read in this process, without the part job's sandbox."""
    for candidate in repository_candidate(path, stats):
        yield from repository_records(path, lambda: read_repository(candidate, settings), stats, holdout, held)


def file_candidates(path: str, kind: str, settings: dict, stats: FileStats, holdout: HoldoutRules | None,
                    held: dict[str, list[bytes]] | None, name: str, origins: dict[str, dict], span: Span | None = None,
                    source: str | None = None) -> Iterator[Candidate | Unreadable]:
    """The candidates of one input file of a `kind` source (PDF responses of a WARC included);
    of a WARC file, those of `span` only. A WARC source's settings without a `pdf` section
    (sources.<name>.pdf_responses false: tokenmill.extract.settings) read no PDF response: each
    is quarantined `pdf_response_off`, naming the setting of `source`."""
    if kind == "warc":
        if "pdf" not in settings:
            return warc_candidates(path, settings["max_bytes"], stats, holdout, held, span=span,
                                   pdf_off=f"sources.{source}.pdf_responses is false")
        return warc_candidates(path, settings["max_bytes"], stats, holdout, held, settings["pdf"]["max_bytes"], span)
    if kind == "pdf":
        origin = origins.get(os.path.abspath(path))
        if origins and origin is None:
            stats.records["pdf_file_without_url"] += 1
        return pdf_candidates(path, settings["pdf"]["max_bytes"], stats, holdout, held, origin)
    if kind == "code":
        return repository_candidate(path, stats)
    if kind == "synthetic":
        return synthetic_candidates(path, settings["origin_docs"], settings, stats, holdout, held)
    return jsonl_candidates(path, settings["fields"], name, stats, holdout, held)


def _pdf_document_text(candidate: Candidate, settings: dict, meta: dict) -> str:
    """The text of a PDF's pages: the text layer, or the OCR text of a page without a usable one
    where OCR read it. `meta` gets the pages still without text (`needs_ocr`: why, and what OCR
    made of it) and those read by OCR (`ocr_pages`; Tesseract's also in `ocr_redo`, for a later
    GPU pass). A PDF of no text at all is quarantined: `needs_ocr` where no OCR ran."""
    if candidate.truncated:
        raise Quarantine("truncated_pdf", f"cut at {len(candidate.payload)} bytes: the rest of the PDF is missing")
    extracted = pdf_text(candidate.payload, PdfSettings(**settings["pdf"]))
    page_texts, needs_ocr, ocr_pages = with_ocr_text(extracted, candidate.ocr or {})
    # each page cleaned on its own, so that page_starts point at the pages of the cleaned text
    text, page_starts = join_pages([clean_text(page, len(INVISIBLE.findall(page)), len(page)) for page in page_texts])
    extracted = dataclasses.replace(extracted, needs_ocr=needs_ocr)
    meta.update(pdf_bytes=len(candidate.payload), extractor=PDF_ENGINE, **{**extracted.meta(), "page_starts": page_starts},
                ocr_pages={str(page): engine for page, engine in ocr_pages.items()},
                ocr_redo=[page for page, engine in ocr_pages.items() if engine.startswith("tesseract")])
    if not text.strip() and needs_ocr:
        how = "OCR read nothing usable" if candidate.ocr is not None else "no OCR ran for this source"
        raise Quarantine("needs_ocr", f"{how}: " + "; ".join(f"page {page}: {why}" for page, why in needs_ocr.items()))
    return text


def quarantine_record(info: PartInfo, input_path: str, offset: int, record_id: str | None, url: str | None,
                      problem: Quarantine) -> dict:
    return {
        "source": info.source,
        "snapshot_id": info.snapshot,
        "part": info.part,
        "input": input_path,
        "offset": offset,
        "record_id": record_id,
        "url": url,
        "reason": problem.reason,
        "detail": problem.detail[:500],
        "content": problem.content[:QUARANTINE_CONTENT_CHARS],
    }


def document(candidate: Candidate, info: PartInfo, settings: dict) -> tuple[dict | None, dict]:
    """Build the document for a candidate; (None, meta) when there is no main text."""
    meta: dict = {"input": candidate.input, "offset": candidate.offset}
    if candidate.content_type == PDF_TYPE:
        text = _pdf_document_text(candidate, settings, meta)
    elif candidate.content_type == CODE_TYPE:  # the files' bytes as they are: code is not cleaned like prose
        meta.update(extractor="code", code=candidate.meta)
        text = candidate.text
    elif candidate.content_type == SYNTHETIC_TYPE:
        meta.update(extractor="generator", synthetic=candidate.meta)
        text = clean_text(candidate.text, len(INVISIBLE.findall(candidate.text)), len(candidate.text)).strip()
    elif candidate.payload is not None:
        if looks_binary(candidate.payload):
            raise Quarantine("binary", f"binary bytes served as {candidate.content_type}")
        decoded = decode_html(candidate.payload, candidate.header_charset)
        meta.update(
            html_bytes=len(candidate.payload),
            charset=decoded.charset,
            charset_source=decoded.charset_source,
            replacement_chars=decoded.replacement_chars,
            truncated=candidate.truncated,
            record_truncated=candidate.record_truncated,
        )
        extracted = extract_main_text(decoded.text, candidate.url, settings, decoded.utf8)
        meta.update(extractor=extracted.engine, math_count=extracted.math_count)
        text = clean_text(extracted.text, extracted.invisible_chars, extracted.visible_chars)
    else:
        meta["extractor"] = "jsonl"
        text = clean_text(candidate.text, len(INVISIBLE.findall(candidate.text)), len(candidate.text)).strip()
    if not text.strip():
        return None, meta
    host = urlsplit(candidate.url).hostname if candidate.url else None
    return {
        "doc_id": doc_id_for(text),
        "record_id": candidate.record_id,
        "url": candidate.url,
        "url_hash": url_hash(candidate.url) if candidate.url else None,
        "host": host.lower() if host else None,
        "fetch_ts": candidate.fetch_ts,
        "snapshot_id": info.snapshot,
        "source": info.source,
        "tier": info.tier,
        # a repository's own licence, as detected; else the source's
        "license_id": candidate.meta["license"] if candidate.content_type == CODE_TYPE else info.license_id,
        "content_type": candidate.content_type,
        # a repository's documents derive from the repository (its archive or folder), a rewrite from its source
        "derived_from": candidate.input if candidate.content_type == CODE_TYPE else
        candidate.meta["derived_from"] if candidate.content_type == SYNTHETIC_TYPE else None,
        **({key: candidate.meta[key] for key in ("generator_model_id", "prompt_template_id")}
           if candidate.content_type == SYNTHETIC_TYPE else {}),
        "extract_meta": meta,
        "text": text,
    }, meta

