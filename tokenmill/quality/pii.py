"""PII detection and scrubbing: e-mail addresses, phone numbers, public IP addresses,
US SSN-like numbers and Luhn-valid payment card numbers.

Detection is rule based and tuned for precision on web text: dates, times, version numbers,
prices, years, ZIP codes and other ordinary numbers must not match. Every pattern is compiled
once, and each is skipped outright when the text cannot contain it (no "@", too few digits,
...), because this runs on every document. Names are not detected.

`find_pii` returns sorted, non-overlapping spans; `scrub` replaces them with stable
placeholders; `pii_rows` (the score job) store the spans and per-kind counts of each document, so that
`select` can decide later what to drop or scrub.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

import pyarrow as pa


KINDS = ("email", "phone", "ip", "ssn", "credit_card")

PLACEHOLDERS = {
    "email": "<EMAIL>",
    "phone": "<PHONE>",
    "ip": "<IP_ADDRESS>",
    "ssn": "<SSN>",
    "credit_card": "<CREDIT_CARD>",
}

PII_SPAN_TYPE = pa.struct([("start", pa.int32()), ("end", pa.int32()), ("kind", pa.string())])

PII_SCHEMA = pa.schema([
    ("doc_id", pa.string()),
    ("pii_spans", pa.list_(PII_SPAN_TYPE)),
    *((f"pii_{kind}", pa.int64()) for kind in KINDS),
])


@dataclass(frozen=True)
class PiiSpan:
    start: int
    end: int
    kind: str


# --- patterns ------------------------------------------------------------------------------
# Digits are spelled [0-9]: `\d` would also accept other scripts' digits. `\w` stays Unicode so
# that a letter of any script glued to a number blocks a match.

_EMAIL = re.compile(
    r"(?<![\w.%+-])"
    r"[A-Za-z0-9](?:[A-Za-z0-9._%+-]{0,63}[A-Za-z0-9_%+-])?"
    r"@"
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
    r"[A-Za-z]{2,24}"
    r"(?![\w@-]|\.[A-Za-z0-9])"
)

# A number may not continue into more digits, a decimal/thousands separator or a letter.
_NUM_END = r"(?![\w%]|[.,/:-][0-9])"
_NUM_START = r"(?<![\w.,/:+$£€¥#-])(?<![0-9][ -])"

# International: +CC then groups separated by single spaces, dots or dashes, with an optional
# bracketed area code or trunk "(0)": +44 20 7946 0958, +49 30 901820, +1-555-123-4567,
# +44 (0)20 7946 0958. The digit count (8-15, E.164) is checked after matching.
_PHONE_INTL = re.compile(
    r"(?<![\w+])\+[1-9][0-9]{0,2}"
    r"(?:[ .-]?\(?[0-9]{1,4}\)?){2,7}"
    + _NUM_END
)
# North American: (555) 123-4567, 555-123-4567, 555.123.4567, 1-800-555-0199, +1 is above.
_PHONE_NANP = re.compile(
    _NUM_START
    + r"(?:1[ .-]?)?"
    r"(?:\([2-9][0-9]{2}\)[ .-]?[0-9]{3}[ .-]|[2-9][0-9]{2}(?P<sep>[.-])[0-9]{3}(?P=sep))"
    r"[0-9]{4}"
    + _NUM_END
)
# National numbers with a trunk 0 and at least one separator: 020 7946 0958, 030/901820-12,
# (0171) 123 4567, 01 23 45 67 89. Dots are not accepted (dates: 03.05.2024); 10-12 digits
# (a US ZIP+4, 02134-1234, has 9).
_PHONE_TRUNK = re.compile(
    _NUM_START
    + r"(?:\(0[1-9][0-9]{0,3}\)|0[1-9][0-9]{0,3})"
    r"[ /-]?[0-9]{2,8}(?:[ -][0-9]{2,4}){0,4}"
    + _NUM_END
)

_IPV4 = re.compile(r"(?<![\w.:-])(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?![\w:-]|\.[0-9A-Za-z])")
# Candidates only; ipaddress decides. At least two colons, hex groups, optional dotted tail.
_IPV6 = re.compile(
    r"(?<![\w:.])"
    r"(?:[0-9A-Fa-f]{1,4}:|::?)(?:[0-9A-Fa-f]{0,4}:){1,7}"
    r"(?:[0-9]{1,3}(?:\.[0-9]{1,3}){3}|[0-9A-Fa-f]{1,4})?"
    r"(?![\w:]|\.[0-9A-Za-z])"
)

# AAA-GG-SSSS; area 000, 666 and 900-999, group 00 and serial 0000 were never issued.
_SSN = re.compile(
    r"(?<![\w.,/:$#-])(?<![0-9] )"
    r"(?!000|666|9[0-9]{2})[0-9]{3}-(?!00)[0-9]{2}-(?!0000)[0-9]{4}"
    r"(?![\w-]|[.,/:][0-9])"
)

# 13-19 digits, either contiguous or in groups split by one kind of separator (space or dash).
_CARD = re.compile(_NUM_START + r"[0-9](?:[ -]?[0-9]){12,18}" + r"(?![\w%]|[.,/:]?[0-9]|[ -][0-9])")

# What every match (of the card pattern: every match _card_ok accepts) holds, found by a search that
# skips to its first character quickly (the patterns above begin with lookbehinds, which make the
# engine try them at every position of the text): a text without one is not searched with the pattern.
# The IPv4 pattern's ".d.d." run; IPv6's two colons at most four hex digits apart; "+" and a country
# code's first digit; NANP's last two groups; a trunk prefix and what follows it; SSN's middle group;
# a card's first group of four and the next group, or 13 digits in a row.
_MAY_IPV4 = re.compile(r"\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]")
_MAY_IPV6 = re.compile(r":[0-9A-Fa-f]{0,4}:")
_MAY_PHONE_INTL = re.compile(r"\+[1-9]")
_MAY_PHONE_NANP = re.compile(r"[0-9][0-9]{2}[ .-][0-9]{4}")
_MAY_PHONE_TRUNK = re.compile(r"0[1-9][0-9]{0,3}\)?[ /-]?[0-9]{2}")
_MAY_SSN = re.compile(r"-[0-9]{2}-[0-9]")
_MAY_CARD = re.compile(r"[0-9][0-9]{3}(?:[ -][0-9]{3}|[0-9]{9})")

_DIGITS = "0123456789"
# "name@2x.png" is an image file name, not an address; none of these is a top-level domain.
_FILE_SUFFIXES = frozenset({"png", "jpg", "jpeg", "gif", "webp", "svg", "bmp", "tif", "tiff", "ico",
                            "css", "js", "json", "html", "htm", "php", "txt", "pdf", "gz"})


def _digit_count(text: str) -> int:
    return sum(map(text.count, _DIGITS))


def _only_digits(candidate: str) -> str:
    return "".join(ch for ch in candidate if "0" <= ch <= "9")


def luhn_valid(digits: str) -> bool:
    total = 0
    for position, ch in enumerate(reversed(digits)):
        value = ord(ch) - 48
        if position % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _is_public(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return (address.is_global and not address.is_multicast and not address.is_reserved
            and not address.is_private and not address.is_loopback and not address.is_link_local
            and not address.is_unspecified)


def _card_ok(candidate: str) -> bool:
    digits = _only_digits(candidate)
    if not 13 <= len(digits) <= 19 or digits[0] not in "23456":
        # Issuer prefixes of the card networks: 2 (Mastercard 2-series), 3 (Amex, Diners,
        # JCB), 4 (Visa), 5 (Mastercard, Maestro), 6 (Discover, UnionPay, Maestro).
        return False
    separators = {ch for ch in candidate if ch in " -"}
    if len(separators) > 1:
        return False
    if separators:
        groups = re.split(r"[ -]", candidate)
        if len(groups[0]) != 4 or any(not 3 <= len(group) <= 6 for group in groups[1:]):
            return False
    if len(set(digits)) == 1:
        return False
    return luhn_valid(digits)


def _candidates(text: str) -> list[tuple[int, int, str]]:
    found: list[tuple[int, int, str]] = []
    if "@" in text:
        found.extend((m.start(), m.end(), "email") for m in _EMAIL.finditer(text)
                     if m.group().rsplit(".", 1)[1].lower() not in _FILE_SUFFIXES)
    digits = _digit_count(text)
    if digits >= 4 and "." in text and _MAY_IPV4.search(text):
        for m in _IPV4.finditer(text):
            try:
                address = ipaddress.IPv4Address(m.group())
            except ValueError:
                continue
            # Four one-digit parts (1.1.2.1) are outline or version numbers far more often
            # than hosts; the few such public hosts (1.1.1.1) are not personal data.
            if len(m.group()) > 7 and _is_public(address):
                found.append((m.start(), m.end(), "ip"))
    if text.count(":") >= 2 and _MAY_IPV6.search(text):
        for m in _IPV6.finditer(text):
            candidate = m.group()
            if candidate.count(":") < 2:
                continue
            try:
                address = ipaddress.IPv6Address(candidate)
            except ValueError:
                continue
            if _is_public(address):
                found.append((m.start(), m.end(), "ip"))
    if digits >= 7:
        if "+" in text and _MAY_PHONE_INTL.search(text):
            for m in _PHONE_INTL.finditer(text):
                candidate = m.group()
                if candidate.count("(") != candidate.count(")"):
                    continue
                # With dots as separators one-digit groups mean decimals: "+2.5 3.1 4.2".
                if "." in candidate and any(len(g) < 2 for g in re.split(r"[ .-]", candidate)[1:]):
                    continue
                if 8 <= len(_only_digits(candidate)) <= 15:
                    found.append((m.start(), m.end(), "phone"))
        if _MAY_PHONE_NANP.search(text):
            found.extend((m.start(), m.end(), "phone") for m in _PHONE_NANP.finditer(text))
        for m in (_PHONE_TRUNK.finditer(text) if _MAY_PHONE_TRUNK.search(text) else ()):
            candidate = m.group()
            if (10 <= len(_only_digits(candidate)) <= 12
                    and any(ch in candidate for ch in " /-(")):
                found.append((m.start(), m.end(), "phone"))
    if digits >= 9 and "-" in text and _MAY_SSN.search(text):
        found.extend((m.start(), m.end(), "ssn") for m in _SSN.finditer(text))
    if digits >= 13 and _MAY_CARD.search(text):
        found.extend((m.start(), m.end(), "credit_card") for m in _CARD.finditer(text)
                     if _card_ok(m.group()))
    return found


def find_pii(text: str) -> list[PiiSpan]:
    """PII spans of `text`, sorted by start and non-overlapping: of overlapping candidates the
    earliest-starting, then the longest, wins."""
    spans: list[PiiSpan] = []
    end = 0
    for start, stop, kind in sorted(_candidates(text), key=lambda c: (c[0], -c[1], KINDS.index(c[2]))):
        if start >= end:
            spans.append(PiiSpan(start, stop, kind))
            end = stop
    return spans


def scrub(text: str, spans: list[PiiSpan] | None = None) -> str:
    """`text` with each PII span replaced by its kind's placeholder."""
    if spans is None:
        spans = find_pii(text)
    pieces: list[str] = []
    position = 0
    for span in sorted(spans, key=lambda s: s.start):
        if span.start < position:
            continue
        pieces.append(text[position:span.start])
        pieces.append(PLACEHOLDERS[span.kind])
        position = span.end
    pieces.append(text[position:])
    return "".join(pieces)


def pii_rows(docs: list[dict]) -> pa.Table:
    """One row per document, in order: its PII spans and the number of spans of each kind."""
    columns: dict[str, list] = {name: [] for name in PII_SCHEMA.names}
    for doc in docs:
        spans = find_pii(doc["text"])
        columns["doc_id"].append(doc["doc_id"])
        columns["pii_spans"].append([{"start": s.start, "end": s.end, "kind": s.kind} for s in spans])
        counts = dict.fromkeys(KINDS, 0)
        for span in spans:
            counts[span.kind] += 1
        for kind in KINDS:
            columns[f"pii_{kind}"].append(counts[kind])
    return pa.Table.from_pydict(columns, schema=PII_SCHEMA)
