"""HTML bytes to main text: charset decoding, then trafilatura."""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

import charset_normalizer
import trafilatura

TRAFILATURA_VERSION = trafilatura.__version__

_META_CHARSET = re.compile(rb"""<meta[^>]{0,200}?charset\s*=\s*["']?\s*([A-Za-z0-9_:.\-]+)""", re.I)
_HTML_SNIFF = re.compile(rb"^\s*(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body|meta|title|div|p)\b", re.I | re.S)
_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))
# WHATWG: these labels mean windows-1252 on the web.
_WEB_ALIASES = {"iso-8859-1": "cp1252", "latin-1": "cp1252", "latin1": "cp1252", "us-ascii": "cp1252", "ascii": "cp1252"}


@dataclass(frozen=True)
class Decoded:
    text: str
    charset: str
    charset_source: str  # bom | header | meta | utf-8 | detected | fallback
    replacement_chars: int


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


def looks_like_html(payload: bytes) -> bool:
    return bool(_HTML_SNIFF.match(payload[:1024]))


def decode_html(payload: bytes, header_charset: str | None) -> Decoded:
    """Decode with the first charset that decodes cleanly, in WHATWG order:
    BOM, HTTP header, <meta>, UTF-8, statistical detection; else windows-1252 with
    replacement characters (counted, so a later stage can quarantine mojibake)."""
    for bom, codec in _BOMS:
        if payload.startswith(bom):
            text = payload[len(bom):].decode(codec, errors="replace")
            return Decoded(text, codec, "bom", text.count("\ufffd"))
    candidates = [(_codec(header_charset), "header")]
    meta = _META_CHARSET.search(payload[:4096])
    candidates.append((_codec(meta.group(1).decode("ascii", "ignore")) if meta else None, "meta"))
    candidates.append(("utf-8", "utf-8"))
    for codec, source in candidates:
        if codec and (text := _strict(payload, codec)) is not None:
            return Decoded(text, codec, source, 0)
    best = charset_normalizer.from_bytes(payload[:65536]).best()
    if best is not None and (codec := _codec(best.encoding)) and (text := _strict(payload, codec)) is not None:
        return Decoded(text, codec, "detected", 0)
    text = payload.decode("cp1252", errors="replace")
    return Decoded(text, "cp1252", "fallback", text.count("\ufffd"))


def extract_main_text(html: str, url: str | None, fast: bool, favor_precision: bool,
                      include_tables: bool) -> str:
    """Main text of a page, comments excluded; empty string when nothing qualifies."""
    text = trafilatura.extract(
        html,
        url=url,
        fast=fast,
        favor_precision=favor_precision,
        include_comments=False,
        include_tables=include_tables,
        deduplicate=False,
        output_format="txt",
        with_metadata=False,
    )
    return text or ""
