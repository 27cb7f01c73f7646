"""Text identity: the normalization behind content-addressed document ids."""

from __future__ import annotations

import hashlib
import re
import unicodedata

_SPACE_RUN = re.compile(r"\s+")


def normalize_for_id(text: str) -> str:
    """NFKC, whitespace runs collapsed inside lines, blank lines dropped.

    Two extractions of the same page that differ only in spacing or Unicode
    compatibility forms get the same id; case and punctuation still count.
    """
    text = unicodedata.normalize("NFKC", text)
    lines = (_SPACE_RUN.sub(" ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def doc_id_for(text: str) -> str:
    """128-bit hex content address of a document's normalized text."""
    return hashlib.blake2b(normalize_for_id(text).encode("utf-8"), digest_size=16).hexdigest()


def url_hash(url: str) -> str:
    return hashlib.blake2b(url.encode("utf-8"), digest_size=8).hexdigest()


def keyed_hash64(key: bytes, value: str) -> int:
    """Unsigned 64-bit keyed hash: the shuffle order of documents for a given seed."""
    digest = hashlib.blake2b(value.encode("utf-8"), digest_size=8, key=key).digest()
    return int.from_bytes(digest, "big")


def seed_key(seed: int) -> bytes:
    return seed.to_bytes(8, "big", signed=False)
