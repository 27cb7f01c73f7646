"""robots.txt as data: captures (host, fetch time, status, body) read from WARC files or from
plain files named by host, parsed by RFC 9309, kept as a host table of every capture, and the
state a capture gives our training agents for a URL.

The table holds, per capture, what RFC 9309 makes of it (`outcome`) and its rules as text, not
verdicts: a document is judged by its own URL path, for the agents select names, at the policy
date select names, so neither the agents nor the date is baked into the table, and a new
capture adds a row without changing any other.

Parsing is protego's (longest match, Allow on ties, `*` and `$`, groups of one agent merged),
with the group chosen here: RFC 9309 matches a product token whole (case-insensitively), while
protego also takes a group whose name is a prefix of the token, so `User-agent: Google` would
govern Google-Extended. Asking protego for `*` when no group names the token exactly leaves
only the `*` group. protego is pinned: this relies on how it scores groups.
"""

from __future__ import annotations

import datetime as dt
import glob
import json
import os
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, Iterator
from urllib.parse import urlsplit

import pyarrow as pa
from protego import Protego
from warcio.archiveiterator import ArchiveIterator

from tokenmill.hashing import sha256_bytes
from tokenmill.io import write_json, write_parquet

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
_USER_AGENT = re.compile(r"(\s*user[- ]?agent\s*(?::|\s)\s*)([^#]*)", re.I)

STATE_SCHEMA = pa.schema([
    ("host", pa.string()),
    ("fetch_ts", pa.string()),  # YYYY-MM-DDTHH:MM:SSZ
    ("status", pa.int32()),
    ("outcome", pa.string()),
    ("rules", pa.string()),  # the body as protego reads it (BOM dropped); "" for every outcome but `rules`
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
    content_type: str | None = None


def _token(agent: str) -> str:
    """A `User-agent:` value or a product token, as compared: "GPTBot/1.1" -> "gptbot"."""
    return agent.split("/", 1)[0].strip().lower()


def capture_outcome(capture: Capture) -> tuple[str, str]:
    """(outcome, rules text) of a capture."""
    if 300 <= capture.status < 400:  # the redirect's target is a capture of its own, if it was fetched
        return REDIRECT, ""
    if 400 <= capture.status < 500:
        return CLIENT_ERROR, ""
    if capture.status >= 500 or capture.status < 200:
        return SERVER_ERROR, ""
    text = capture.body.decode("utf-8", "replace").lstrip("\ufeff")
    head = text.lstrip()[:256].lower()
    if (capture.content_type or "").split(";")[0].strip().lower() == "text/html" or head.startswith(("<!doctype", "<html")):
        return HTML, ""
    if not _DIRECTIVE.search(text):
        return EMPTY, ""
    return RULES, text


class Rules:
    """A capture's rules for product tokens (protego, with the group chosen by RFC 9309)."""

    def __init__(self, text: str):
        self.named, lines = set(), []
        for line in text.splitlines():
            match = _USER_AGENT.match(line)
            if match and (token := _token(match.group(2))):
                self.named |= {token, token.replace("*", "")}  # protego also keys "a*" as "a"
                line = match.group(1) + token  # a version after the token is not part of the name
            lines.append(line)
        self._parsed = Protego.parse("\n".join(lines))

    def group_of(self, token: str) -> str:
        """The group that governs a product token: its own when a `User-agent:` line names it
        whole, else `*`."""
        token = _token(token)
        return token if token in self.named else "*"

    def allowed(self, token: str, url: str) -> bool:
        return self._parsed.can_fetch(url, self.group_of(token))

    def disallows_any(self, tokens: Iterable[str], url: str) -> bool:
        """Whether the rules disallow `url` for one of `tokens`: each group is asked once (most
        tokens are named nowhere and share `*`)."""
        return any(not self._parsed.can_fetch(url, group) for group in sorted({self.group_of(t) for t in tokens}))


def capture_allows(outcome: str, rules: str, token: str, url: str) -> bool:
    """What a capture (its outcome and rules text, as in the host table) says of `url` for one
    product token."""
    if outcome in DISALLOW_ALL:
        return False
    return outcome != RULES or parsed_rules(rules).allowed(token, url)


def training_agents(robots_json: str) -> list[str]:
    """TRAINING_AGENT and the agents of ai.robots.txt's robots.json that collect training data,
    by their stated function or description."""
    with open(robots_json, encoding="utf-8") as handle:
        agents = json.load(handle)
    chosen = [name for name, entry in agents.items()
              if _TRAINING_USE.search(f"{entry.get('function', '')} {entry.get('description', '')}")]
    return [TRAINING_AGENT, *sorted(chosen, key=str.lower)]


def judged_agents(robots_policy: dict, agent_list: str) -> list[str]:
    """The product tokens a `select.robots` section judges: none without a policy date, else its
    `agents`, else ours and the training agents of the list at `agent_list`."""
    if robots_policy["as_of"] is None:
        return []
    return list(robots_policy["agents"]) if robots_policy["agents"] is not None else training_agents(agent_list)


def _timestamp(value: str) -> str:
    parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.timezone.utc)
    return parsed.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def warc_captures(path: str, errors: list[str] | None = None) -> Iterator[Capture]:
    """The robots.txt responses of a WARC file: records whose URL path is /robots.txt. A file cut
    short or damaged ends there, with what was read kept and the error appended to `errors`."""
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
                yield Capture(parts.hostname.lower().rstrip("."), _timestamp(record.rec_headers.get_header("WARC-Date")),
                              int(code) if code.isdigit() else 0, body, f"{path}#{records.get_record_offset()}",
                              http.get_header("Content-Type") if http is not None else None)
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
        return Capture(host.lower().rstrip("."), _timestamp(fetch_ts), 200, handle.read(), path)


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
