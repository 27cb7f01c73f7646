"""robots.txt as data: captures (host, fetch time, status, body) read from WARC files or from
plain files named by host, parsed by RFC 9309, kept as a host table of every capture, and the
state a capture gives our training agents for a URL.

The table holds, per capture, what RFC 9309 makes of it (`outcome`) and its rules as text, not
verdicts: a document is judged by its own URL path, for the agents select names, at the policy
date select names, so neither the agents nor the date is baked into the table, and a new
capture adds a row without changing any other.

What a capture says is read from its status and its body, never its Content-Type (RFC 9309
2.3.1.1: the parseable rules of a robots.txt that was downloaded are followed): a body with
robots records is `rules` whatever type it was served as; an HTML document without any (a soft
404) allows everything, as an empty body does.

Parsing is RFC 9309 2.2, as Google's reference parser (google/robotstxt) reads it: a group is one
or more `User-agent:` lines and the `Allow:`/`Disallow:` lines after them; only a user-agent line
that follows a rule line starts a new group, so a `Crawl-delay:`, `Sitemap:`, unknown line, blank
line or comment between user-agent lines does not end the group. Rules before any user-agent
line belong to no group. The groups naming an agent are merged, and an agent no group names
follows the merged `*` groups (none: everything allowed). Within them the longest pattern that
matches the URL's path and query wins and `Allow` wins a tie; `*` matches any characters and a
final `$` the end; both sides are compared percent-encoded (non-ASCII octets encoded, escapes of
unreserved characters decoded, other escapes upper-cased; 2.2.2).

An agent is matched by its product token, case-insensitively and whole (2.2.1), so a
`User-agent: Google` group does not govern Google-Extended. The product token of a name, be it
a `User-agent:` value or an agent we judge, is its leading run of letters, digits, `-` and `_`:
`GPTBot/1.1` -> gptbot, `Kangaroo Bot` -> kangaroo, `Brightbot 1.0` -> brightbot,
`panscient.com` -> panscient. RFC 9309's token is `[a-zA-Z_-]+`, and Google's parser reads a
`User-agent:` value up to its first character outside that set (`Foo Bar` names foo); we add
digits, since listed agents (AI2Bot, img2dataset, Crawl4AI) and the sites that name them write
them whole. Reading the judged agents' names the same way lets ai.robots.txt's several-word
names meet the one-word tokens sites write: of the 2019 files in data/bench/robots,
www.chrono24.com writes `User-agent: Linguee` where the list says `Linguee Bot`, four sites
write `Panscient` where it says `panscient.com`, and ballotpedia.org `netEstate` besides
`netEstate NE Crawler`; the list's own robots.txt, which writes the names whole, names the same
tokens. A joined form (`KangarooBot`) is another token and is not matched.
"""

from __future__ import annotations

import glob
import json
import os
import re
import string
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Iterator
from urllib.parse import quote, urlsplit

import pyarrow as pa

from tokenmill.hashing import sha256_bytes
from tokenmill.io import write_json, write_parquet
from tokenmill.timestamps import utc_timestamp

# The product token of tokenmill's own training use (docs/robots.md).
TRAINING_AGENT = "TokenmillBot"
# robots.json entries whose stated function or description is collecting data to train models
_TRAINING_USE = re.compile(r"\btrain|\bdatasets?\b|data scrap|scrapes data|\bLLM\b|machine learning", re.I)

# What a capture says, by RFC 9309 2.3.1: rules when a 2xx body has them; a 4xx, an empty body or a
# page of HTML (a soft 404) allow everything; a 5xx (or no usable response) disallows everything.
RULES, EMPTY, HTML, CLIENT_ERROR, SERVER_ERROR, REDIRECT = ("rules", "empty", "html", "client_error", "server_error",
                                                            "redirect")
DISALLOW_ALL = frozenset({SERVER_ERROR})
_DIRECTIVE = re.compile(r"^\s*(user[- ]?agent|allow|disallow)\s*[:\s]", re.I | re.M)
_HTML_DOCUMENT = re.compile(r"\A\s*(?:<!doctype\s+html|<html)|<(?:head|body)[\s>]", re.I)
_USER_AGENT_KEYS = frozenset({"user-agent", "useragent", "user agent"})
# RFC 9309 2.2.2 keys, with the misspellings Google's parser accepts
_ALLOW_KEYS = frozenset({"allow"})
_DISALLOW_KEYS = frozenset({"disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"})
_PRODUCT_TOKEN = re.compile(r"[A-Za-z0-9_-]*")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
_KEPT = "!#$%&'()*+,/:;=?@[]"  # reserved characters and the escape sign, left as they are
_AUTHORITY = re.compile(r"\A(?:[A-Za-z][A-Za-z0-9+.-]*:)?//[^/?#]*")
_PLAIN = re.compile(r"[A-Za-z0-9\-._~!#$&'()*+,/:;=?@\[\]]*")

STATE_SCHEMA = pa.schema([
    ("host", pa.string()),
    ("fetch_ts", pa.string()),  # YYYY-MM-DDTHH:MM:SSZ
    ("status", pa.int32()),
    ("outcome", pa.string()),
    ("rules", pa.string()),  # the body as text (BOM dropped); "" for every outcome but `rules`
    ("body_sha256", pa.string()),
    ("capture", pa.string()),  # where it was read: a file, or a WARC file and the record's offset
])


@dataclass(frozen=True)
class Capture:
    host: str
    fetch_ts: str
    status: int
    body: bytes
    capture: str


@lru_cache(maxsize=65536)
def product_token(name: str) -> str:
    """The product token a name is matched by (module docstring): "GPTBot/1.1" -> "gptbot",
    "Kangaroo Bot" -> "kangaroo"; "*" for the `*` of a `User-agent: *` line."""
    name = name.strip()
    if name == "*" or name.startswith(("* ", "*\t")):
        return "*"
    return _PRODUCT_TOKEN.match(name).group(0).lower()


def capture_outcome(capture: Capture) -> tuple[str, str]:
    """(outcome, rules text) of a capture."""
    if 300 <= capture.status < 400:  # the redirect's target is a capture of its own, if it was fetched
        return REDIRECT, ""
    if 400 <= capture.status < 500:
        return CLIENT_ERROR, ""
    if capture.status >= 500 or capture.status < 200:
        return SERVER_ERROR, ""
    text = capture.body.decode("utf-8", "replace").lstrip("\ufeff")
    if _DIRECTIVE.search(text):
        return RULES, text
    return (HTML if _HTML_DOCUMENT.search(text) else EMPTY), ""


def _normalised(path: str) -> str:
    """A path pattern or a URL's path and query, percent-encoded as RFC 9309 2.2.2 compares them."""
    if _PLAIN.fullmatch(path):  # nearly all of them: nothing to encode or decode
        return path

    def escape(match: re.Match) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else "%" + match.group(1).upper()
    return quote(_ESCAPE.sub(escape, path), safe=_KEPT)


def _url_path(url: str) -> str:
    """A URL's path, params and query (its `?` kept when the query is empty, as Google's parser
    keeps it) as patterns are matched against: a `*` or `$` in it is an octet, as `%2A` or `%24` in
    a pattern is (RFC 9309 2.2.3)."""
    path = _AUTHORITY.sub("", url.split("#", 1)[0], count=1)
    path = _normalised(path if path.startswith("/") else "/" + path)
    return path.replace("*", "%2A").replace("$", "%24")


class _Rule:
    """An `Allow:` or `Disallow:` pattern, percent-encoded as paths are compared. `*` matches any
    characters and a final `$` the end: the pieces between the `*`s are found left to right, each
    as early as it can be (which leaves the most room for the rest), in time linear in the path."""

    __slots__ = ("allow", "priority", "prefix", "anchored", "rest")

    def __init__(self, allow: bool, value: str):
        value = _normalised(value)
        self.allow = allow
        self.priority = len(value)  # the longest match wins
        self.anchored = value.endswith("$")
        self.prefix, *rest = (value[:-1] if self.anchored else value).split("*")
        self.rest = tuple(rest)  # the pieces after each `*`

    def matches(self, path: str) -> bool:
        if not path.startswith(self.prefix):
            return False
        if not self.rest:
            return not self.anchored or len(path) == len(self.prefix)
        at = len(self.prefix)
        for piece in self.rest[:-1]:
            at = path.find(piece, at)
            if at < 0:
                return False
            at += len(piece)
        last = self.rest[-1]
        return path.endswith(last) and len(path) - len(last) >= at if self.anchored else path.find(last, at) >= 0


def _records(text: str) -> Iterator[tuple[str, str]]:
    """(key, value) of each line that has one: key lower-cased, comment and blanks dropped, and the
    colon optional when a key and a value are all the line holds (as Google's parser reads it)."""
    for line in text.splitlines():
        line = line.partition("#")[0]
        if ":" in line:
            key, _, value = line.partition(":")
        elif len(words := line.split()) == 2:
            key, value = words
        else:
            continue
        yield key.strip().lower(), value.strip()


def _groups(text: str) -> list[tuple[set[str], list[_Rule]]]:
    """The groups of a robots.txt (RFC 9309 2.2): each the product tokens of its user-agent lines and
    its rules in file order."""
    groups: list[tuple[set[str], list[_Rule]]] = []
    in_rules = True  # a user-agent line after a rule line (or the first one) starts a group
    for key, value in _records(text):
        if key in _USER_AGENT_KEYS:
            if in_rules:
                groups.append((set(), []))
                in_rules = False
            groups[-1][0].add(product_token(value))
        elif (key in _ALLOW_KEYS or key in _DISALLOW_KEYS) and groups:
            in_rules = True
            if value:  # an empty `Disallow:` ends the agents' lines and matches nothing
                groups[-1][1].append(_Rule(key in _ALLOW_KEYS, value))
    return groups


class Rules:
    """A capture's rules for product tokens: the groups as RFC 9309 reads them (module docstring),
    merged per token, each kept longest pattern first and `Allow` first among equals."""

    def __init__(self, text: str):
        merged: dict[str, list[_Rule]] = {}
        for tokens, rules in _groups(text):
            for token in tokens - {""}:
                merged.setdefault(token, []).extend(rules)
        self._rules = {token: sorted(rules, key=lambda rule: (-rule.priority, not rule.allow))
                       for token, rules in merged.items()}
        self._groups_of: dict[tuple[str, ...], list[str]] = {}  # judge asks for the same agents every time

    def group_of(self, agent: str) -> str:
        """The group that governs an agent: the one its product token names, else `*`."""
        token = product_token(agent)
        return token if token in self._rules and token != "*" else "*"

    def _allows(self, group: str, path: str) -> bool:
        return next((rule.allow for rule in self._rules.get(group, ()) if rule.matches(path)), True)

    def allowed(self, agent: str, url: str) -> bool:
        return self._allows(self.group_of(agent), _url_path(url))

    def disallows_any(self, agents: Iterable[str], url: str) -> bool:
        """Whether the rules disallow `url` for one of `agents`: each group is asked once (most
        agents are named nowhere and share `*`)."""
        agents = tuple(agents)
        if agents not in self._groups_of:
            self._groups_of[agents] = sorted({self.group_of(agent) for agent in agents})
        path = _url_path(url)
        return any(not self._allows(group, path) for group in self._groups_of[agents])


def capture_allows(outcome: str, rules: str, agent: str, url: str) -> bool:
    """What a capture (its outcome and rules text, as in the host table) says of `url` for one
    agent."""
    if outcome in DISALLOW_ALL:
        return False
    return outcome != RULES or parsed_rules(rules).allowed(agent, url)


def training_agents(robots_json: str) -> list[str]:
    """TRAINING_AGENT and the agents of ai.robots.txt's robots.json that collect training data,
    by their stated function or description."""
    with open(robots_json, encoding="utf-8") as handle:
        agents = json.load(handle)
    chosen = [name for name, entry in agents.items()
              if _TRAINING_USE.search(f"{entry.get('function', '')} {entry.get('description', '')}")]
    return [TRAINING_AGENT, *sorted(chosen, key=str.lower)]


def judged_agents(robots_policy: dict, agent_list: str) -> list[str]:
    """The agents a `select.robots` section judges: none without a policy date, else its
    `agents`, else ours and the training agents of the list at `agent_list`."""
    if robots_policy["as_of"] is None:
        return []
    return list(robots_policy["agents"]) if robots_policy["agents"] is not None else training_agents(agent_list)


def warc_captures(path: str, errors: list[str] | None = None) -> Iterator[Capture]:
    """The robots.txt responses of a WARC file: records whose URL path is /robots.txt. A file cut
    short or damaged ends there, with what was read kept and the error appended to `errors`."""
    # imported here: warcio brings fsspec and asyncio (~0.08 CPU-s), and the jobs that import this
    # module for its policy (judge, select, write_shards, a few hundred a snapshot) never read a WARC
    from warcio.archiveiterator import ArchiveIterator

    with open(path, "rb") as handle:
        records = ArchiveIterator(handle, arc2warc=True)
        try:
            for record in records:
                url = record.rec_headers.get_header("WARC-Target-URI") or ""
                parts = urlsplit(url)
                if record.rec_type != "response" or parts.path != "/robots.txt" or not parts.hostname:
                    continue
                http = record.http_headers
                code = http.get_statuscode() if http is not None else ""
                body = record.content_stream().read()
                yield Capture(parts.hostname.lower().rstrip("."), utc_timestamp(record.rec_headers.get_header("WARC-Date")),
                              int(code) if code.isdigit() else 0, body, f"{path}#{records.get_record_offset()}")
        except Exception as error:  # a damaged file never fails the job: its captures up to there count
            if errors is None:
                raise
            errors.append(f"{path}: {type(error).__name__}: {error}")


def file_capture(path: str, fetch_ts: str) -> Capture:
    """A robots.txt saved as a file named by its host (`_443` for `:443`, as Common Crawl's and
    protego's test data name them), fetched at `fetch_ts` with status 200."""
    host = os.path.basename(path).rsplit("_", 1)[0] if re.search(r"_\d+$", os.path.basename(path)) \
        else os.path.basename(path)
    with open(path, "rb") as handle:
        return Capture(host.lower().rstrip("."), utc_timestamp(fetch_ts), 200, handle.read(), path)


def capture_paths(section: dict) -> tuple[list[str], list[tuple[str, str]]]:
    """The files a `robots` config section names: its WARC files, and its saved files with their
    fetch times, each list sorted. A pattern that matches nothing is an error naming its key."""
    def expand(key: str, pattern: str) -> list[str]:
        paths = sorted(glob.glob(pattern))
        if not paths:
            raise ValueError(f"config key {key}: {pattern!r} matches no file")
        return paths

    warcs = sorted({path for n, pattern in enumerate(section["warc"]) for path in expand(f"robots.warc.{n}", pattern)})
    files = sorted({(path, entry["fetch_ts"]) for n, entry in enumerate(section["files"])
                    for m, pattern in enumerate(entry["paths"]) for path in expand(f"robots.files.{n}.paths.{m}", pattern)})
    return warcs, files


def configured_captures(section: dict, errors: list[str]) -> Iterator[Capture]:
    warcs, files = capture_paths(section)
    for path in warcs:
        yield from warc_captures(path, errors)
    for path, fetch_ts in files:
        yield file_capture(path, fetch_ts)


def state_table(captures: Iterable[Capture]) -> tuple[pa.Table, dict]:
    """The host table (STATE_SCHEMA), sorted by host, fetch time and capture, and the captures
    counted by outcome."""
    rows = []
    for capture in captures:
        outcome, rules = capture_outcome(capture)
        rows.append({"host": capture.host, "fetch_ts": capture.fetch_ts, "status": capture.status, "outcome": outcome,
                     "rules": rules, "body_sha256": sha256_bytes(capture.body), "capture": capture.capture})
    rows.sort(key=lambda row: (row["host"], row["fetch_ts"], row["capture"]))
    counts = Counter(row["outcome"] for row in rows)
    return pa.Table.from_pylist(rows, schema=STATE_SCHEMA), {"captures": len(rows),
                                                             "hosts": len({row["host"] for row in rows}),
                                                             "outcomes": dict(sorted(counts.items()))}


def write_state(section: dict, out_path: str, summary_path: str) -> dict:
    """The host table of every capture a `robots` config section names, and its summary (what
    was read, captures by outcome, the table's first and last fetch time)."""
    errors: list[str] = []
    table, counts = state_table(configured_captures(section, errors))
    write_parquet(out_path, table)
    times = table.column("fetch_ts").to_pylist()
    summary = {"warc": section["warc"], "files": section["files"], **counts, "read_errors": errors,
               "first_fetch": min(times, default=None), "last_fetch": max(times, default=None)}
    write_json(summary_path, summary)
    return summary


class RobotsState:
    """The host table as of a date, for some agents: a URL is disallowed when the latest capture
    of its host at or before `as_of` (a YYYY-MM-DD date, the whole day) disallows it for any of
    `agents`. A host without such a capture is not judged."""

    def __init__(self, table: pa.Table, as_of: str, agents: list[str]):
        self.agents = list(agents)
        latest: dict[str, dict] = {}
        for row in table.to_pylist():  # sorted by host and fetch time: the last one at or before as_of wins
            if row["fetch_ts"][:10] <= as_of and row["outcome"] != REDIRECT:
                latest[row["host"]] = row
        self._latest = latest

    def capture_of(self, host: str | None) -> dict | None:
        return self._latest.get(host.lower().rstrip(".")) if host else None

    def disallowed(self, url: str | None, host: str | None) -> bool:
        row = self.capture_of(host)
        if row is None or url is None:
            return False
        if row["outcome"] in DISALLOW_ALL:
            return True
        return row["outcome"] == RULES and parsed_rules(row["rules"]).disallows_any(self.agents, url)


@lru_cache(maxsize=4096)
def parsed_rules(text: str) -> Rules:
    return Rules(text)
