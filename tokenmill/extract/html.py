"""HTML bytes to main text: charset decoding, formulas as TeX, hidden content out, then an engine
(trafilatura, resiliparse, resiliparse with trafilatura as a second pass, or blockml: the page's
text blocks, read from lexbor's DOM, kept or dropped by a model trained here)."""

from __future__ import annotations

import codecs
import re
from importlib import metadata
from dataclasses import dataclass

import charset_normalizer
import trafilatura
from lxml import etree
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree

from tokenmill.extract.blockml import configured_model, extract_blockml
from tokenmill.extract.math import recover_math, recover_math_in_tree

ENGINES = ("trafilatura", "resiliparse", "two_pass", "blockml")
ENGINE_VERSIONS = {"trafilatura": f"trafilatura-{trafilatura.__version__}",
                   "resiliparse": f"resiliparse-{metadata.version('resiliparse')}",
                   # the model's sha256 is extract.blockml.sha256, in the job's settings
                   "blockml": f"blockml-selectolax-{metadata.version('selectolax')}"}

_META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([A-Za-z0-9_:.\-]+)""", re.I)
_HTML_SNIFF = re.compile(rb"^\s*(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body|meta|title|div|p)\b", re.I | re.S)
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
# WHATWG: these labels mean windows-1252 on the web, and these UTF-8 (Python knows them under other names).
_WEB_ALIASES = {"iso-8859-1": "cp1252", "latin-1": "cp1252", "latin1": "cp1252", "us-ascii": "cp1252",
                "ascii": "cp1252", "unicode-1-1-utf-8": "utf-8", "unicode11utf8": "utf-8", "unicode20utf8": "utf-8",
                "x-unicode20utf8": "utf-8"}


@dataclass(frozen=True)
class Decoded:
    text: str
    charset: str
    charset_source: str  # bom | header | meta | utf-8 | utf-8+cp1252 | detected | fallback
    replacement_chars: int
    utf8: bytes | None = None  # the payload where it is text's UTF-8 (text.encode() would make it again)


def _cp1252_for_invalid_utf8(error: UnicodeDecodeError) -> tuple[str, int]:
    return error.object[error.start:error.end].decode("cp1252", errors="replace"), error.end


codecs.register_error("tokenmill-cp1252", _cp1252_for_invalid_utf8)
_UTF8_SEQUENCE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|[\xf0-\xf4][\x80-\xbf]{3}")
_NON_ASCII_RUN = re.compile(rb"[\x80-\xff]+")
# Measured on the lingua sentences of 75 languages in their legacy encodings (1000 sentences, and stretches of 50):
# legacy CJK and Thai bytes make accidental UTF-8 sequences of up to 45 % of their non-ASCII bytes, so past this
# share the page can only be UTF-8, whatever the rest is.
UTF8_CERTAIN_SHARE = 0.8
# An undeclared page needs this much UTF-8: Latin-script legacy text has under 2 % (Luganda and Romanian reach 16
# and 25 % only because those sentences already hold UTF-8 of their own).
UTF8_UNDECLARED_SHARE = 0.2
# windows-1252 letters of Latin text stand in runs of one or two non-ASCII bytes ("é", "ção"): at least 93 % of
# the bytes of every Latin legacy encoding measured, at most 25 % of the others, whose runs are as long as words.
CP1252_SHORT_RUN_SHARE = 0.6


def utf8_with_cp1252_stretches(payload: bytes, declared_utf8: bool) -> bool:
    """UTF-8 with windows-1252 pasted in, at any share, when the page is declared UTF-8 or enough of its non-ASCII
    bytes are UTF-8, and the bytes that are not UTF-8 read as Latin letters; a legacy page whose bytes hold
    UTF-8 sequences by accident (GB2312, Shift_JIS, windows-1251, ...) is left to detection."""
    utf8 = non_ascii = short_run_bytes = 0
    for run in _NON_ASCII_RUN.finditer(payload):
        run_utf8 = sum(len(sequence) for sequence in _UTF8_SEQUENCE.findall(run.group()))
        utf8 += run_utf8
        non_ascii += len(run.group())
        if len(run.group()) <= 2:
            short_run_bytes += len(run.group()) - run_utf8
    if not utf8:
        return False
    if utf8 >= UTF8_CERTAIN_SHARE * non_ascii:
        return True
    if not declared_utf8 and utf8 < UTF8_UNDECLARED_SHARE * non_ascii:
        return False
    return short_run_bytes >= CP1252_SHORT_RUN_SHARE * (non_ascii - utf8)


def _codec(label: str | None) -> str | None:
    if not label:
        return None
    label = label.strip().strip("\"'").lower()
    label = _WEB_ALIASES.get(label, label)
    try:
        return codecs.lookup(label).name
    except LookupError:
        return None


def _strict(payload: bytes, codec: str) -> str | None:
    try:
        return payload.decode(codec)
    except (UnicodeDecodeError, LookupError):
        return None


_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 12, 13))


def looks_binary(payload: bytes) -> bool:
    """NUL bytes, or more than 10 % control bytes, in the first 4 KiB (a BOM means text)."""
    head = payload[:4096]
    if not head or any(head.startswith(bom) for bom, _ in _BOMS):
        return False
    controls = len(head) - len(head.translate(None, _CONTROL_BYTES))
    return b"\x00" in head or controls > 0.1 * len(head)


def looks_like_html(payload: bytes) -> bool:
    return bool(_HTML_SNIFF.match(payload[:1024]))


def _utf8_bytes(payload: bytes, codec: str) -> bytes | None:
    """The payload where `codec` decoded it strictly to a text whose UTF-8 it is."""
    return payload if codec == "utf-8" or payload.isascii() else None


def decode_html(payload: bytes, header_charset: str | None) -> Decoded:
    """Decode with the first charset that decodes cleanly, in WHATWG order: BOM, HTTP
    header, <meta>, UTF-8; then UTF-8 with invalid bytes read as windows-1252 when the page
    is UTF-8 with windows-1252 pasted in (utf8_with_cp1252_stretches); then statistical
    detection; else windows-1252 with replacement characters (counted, so that an
    undecodable page is quarantined)."""
    for bom, codec in _BOMS:
        if payload.startswith(bom):
            text = payload[len(bom):].decode(codec, errors="replace")
            return Decoded(text, codec, "bom", text.count("\ufffd"))
    meta = _META_CHARSET.search(payload[:4096])
    declared = [_codec(header_charset), _codec(meta.group(1).decode("ascii", "ignore")) if meta else None]
    for codec, source in zip([*declared, "utf-8"], ["header", "meta", "utf-8"]):
        if codec and (text := _strict(payload, codec)) is not None:
            return Decoded(text, codec, source, 0, _utf8_bytes(payload, codec))
    if utf8_with_cp1252_stretches(payload, declared_utf8="utf-8" in declared):
        text = payload.decode("utf-8", errors="tokenmill-cp1252")
        return Decoded(text, "utf-8", "utf-8+cp1252", text.count("\ufffd"))
    best = charset_normalizer.from_bytes(payload[:65536]).best()
    if best is not None and (codec := _codec(best.encoding)) and (text := _strict(payload, codec)) is not None:
        return Decoded(text, codec, "detected", 0, _utf8_bytes(payload, codec))
    text = payload.decode("cp1252", errors="replace")
    return Decoded(text, "cp1252", "fallback", text.count("\ufffd"))


# invisible formatting characters that carry no text (ZWJ/ZWNJ are kept: scripts and emoji need them)
INVISIBLE = re.compile("[\u00ad\u180e\u200b\u2060-\u2064\ufeff]")
_LOWER = "translate(@style, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ ', 'abcdefghijklmnopqrstuvwxyz')"
_HIDDEN = etree.XPath(f"//*[@hidden or @aria-hidden='true' or contains({_LOWER}, 'display:none')"
                      f" or contains({_LOWER}, 'visibility:hidden')]")


def visible_tree(html: str):
    """The parsed page (lxml) without elements a reader never sees (hidden, display:none,
    visibility:hidden, aria-hidden); their tail text stays. None when it does not parse."""
    tree = trafilatura.load_html(html)
    if tree is None:
        return None
    for element in _HIDDEN(tree):
        if element.getparent() is not None:
            element.drop_tree()
    return tree


@dataclass(frozen=True)
class Extracted:
    text: str  # the main text; empty when nothing qualifies
    # the invisible formatting characters (INVISIBLE) among the characters they are a share of: the
    # whole visible page for trafilatura, whose main text drops them, the main text for resiliparse
    invisible_chars: int
    visible_chars: int
    math_count: int  # formulas written as TeX (tokenmill.extract.math)
    engine: str  # the engine whose text this is, with its version


def trafilatura_text(tree, url: str | None, settings: dict) -> str:
    return trafilatura.extract(
        tree,
        url=url,
        fast=settings["fast"],
        favor_precision=settings["favor_precision"],
        include_comments=False,
        include_tables=settings["include_tables"],
        deduplicate=False,
        output_format="txt",
        with_metadata=False,
    ) or ""


SHORT_LINE_WORDS = 5  # a line of fewer words is a menu item, a caption or a link, not prose


def needs_second_pass(text: str, settings: dict) -> bool:
    """two_pass: whether resiliparse's text is worth trafilatura (`extract.two_pass`). Its misses
    are boilerplate left in, which shows as short lines among the prose; a page with enough words
    and a large enough share of short lines gets trafilatura, short pages (which select's length
    rules drop) and clean prose keep resiliparse's text. A pure function of the text."""
    rule = settings["two_pass"]
    if len(text.split()) < rule["min_words"]:
        return False
    lines = [line for line in text.split("\n") if line.strip()]
    short = sum(len(line.split()) < SHORT_LINE_WORDS for line in lines)
    return short >= rule["min_short_line_share"] * len(lines)


def _trafilatura(html: str, url: str | None, settings: dict, formulas: int) -> Extracted:
    tree = visible_tree(html)
    if tree is None:
        return Extracted("", 0, 0, formulas, ENGINE_VERSIONS["trafilatura"])
    visible = tree.text_content()
    return Extracted(trafilatura_text(tree, url, settings), len(INVISIBLE.findall(visible)), len(visible), formulas,
                     ENGINE_VERSIONS["trafilatura"])


# paragraphs kept; image alt texts left out (a formula's fallback image would repeat it); comments,
# and a post's date and byline lines, are not main content
RESILIPARSE_OPTIONS = {"preserve_formatting": True, "main_content": True, "list_bullets": True, "alt_texts": False,
                       "comments": False, "post_meta": False, "noscript": False, "form_fields": False, "links": False}


def load_engine(settings: dict) -> None:
    """Load what the settings' engine reads beside the page (blockml's model) in this process: a
    job does it before its workers fork, so they share one copy, and a model that is missing or
    does not match its pin fails the job, naming the key, instead of quarantining every page."""
    if settings.get("engine") == "blockml":
        configured_model(settings["blockml"])


def extract_main_text(html: str, url: str | None, settings: dict, utf8: bytes | None = None) -> Extracted:
    """Main text of a page's visible content, comments excluded, with its formulas as TeX
    (tokenmill.extract.math), by the `extract.engine` of the settings: trafilatura, resiliparse
    (which leaves hidden elements out itself), two_pass (resiliparse, then trafilatura on the
    same formulas where needs_second_pass says so) or blockml (the model of `extract.blockml`).
    `utf8`: html's UTF-8 bytes where they are at hand (Decoded.utf8), which blockml parses
    instead of encoding html again."""
    engine = settings["engine"]
    if engine == "blockml":
        model = configured_model(settings["blockml"])
        text, formulas = extract_blockml(html, model, utf8)
        return Extracted(text, len(INVISIBLE.findall(text)), len(text), formulas, f"blockml-{model.sha256[:12]}")
    if engine == "trafilatura":
        html, formulas = recover_math(html)
        return _trafilatura(html, url, settings, formulas)
    tree = HTMLTree.parse(html)
    formulas, changed = recover_math_in_tree(tree)
    text = extract_plain_text(tree, **RESILIPARSE_OPTIONS).strip()
    cheap = Extracted(text, len(INVISIBLE.findall(text)), len(text), formulas, ENGINE_VERSIONS["resiliparse"])
    if engine == "resiliparse" or not needs_second_pass(cheap.text, settings):
        return cheap
    return _trafilatura(tree.document.html if changed else html, url, settings, formulas)
