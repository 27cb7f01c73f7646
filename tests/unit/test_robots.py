"""robots.txt as data (tokenmill.robots): real robots.txt files of 139 sites (data/bench/robots,
fetched in 2019) against a ground truth of root access per agent, the bad inputs among them, the
real robots.txt responses of the demo's WARC files, and the host state over time."""

import csv
from pathlib import Path

import pyarrow as pa
import pytest
from protego import Protego

from tests.conftest import REPO
from tokenmill.robots import (CLIENT_ERROR, EMPTY, HTML, REDIRECT, RULES, SERVER_ERROR, TRAINING_AGENT, Capture,
                              RobotsState, capture_allows, capture_outcome, file_capture, state_table, training_agents,
                              warc_captures)

ROBOTS = REPO / "data" / "bench" / "robots"
AGENTS = REPO / "data" / "robots" / "ai-robots-txt"  # the list, its ready-made robots.txt, its licence
AGENT_LIST = AGENTS / "robots.json"
FETCHED = "2019-07-20T00:00:00Z"  # when the protego authors fetched the files (data/bench/robots/SOURCES.md)
# SOURCES.md's hand-checked rows where the table's protego column is wrong: protego matches the
# `User-agent: Google` group by prefix; RFC 9309 compares the whole token, so `*` (Disallow: /) governs
HAND_CHECKED = {("protego-2019/www.smugmug.com", "Google-Extended"): "disallow"}


def ground_truth() -> list[dict]:
    with open(ROBOTS / "ground_truth_root_access.tsv", encoding="utf-8") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def capture_of(name: str, status: int = 200) -> Capture:
    """A file of the truth table: `protego-2019/<host>` or `ai-robots-txt/robots.txt`."""
    path = AGENTS.parent / name if name.startswith("ai-robots-txt/") else ROBOTS / name
    return Capture(path.name, FETCHED, status, path.read_bytes(), str(path))


def root_verdict(capture: Capture, agent: str) -> str:
    outcome, rules = capture_outcome(capture)
    return "allow" if capture_allows(outcome, rules, agent, f"https://{capture.host}/") else "disallow"


def test_root_access_of_six_agents_on_139_real_files_matches_the_hand_checked_truth():
    rows = ground_truth()
    assert len(rows) == 840 and len({row["file"] for row in rows}) == 140
    wrong = [(row["file"], row["agent"]) for row in rows
             if root_verdict(capture_of(row["file"]), row["agent"])
             != HAND_CHECKED.get((row["file"], row["agent"]), row["protego_0.4.0"])]
    assert wrong == []
    # both cases where urllib.robotparser is wrong come out as RFC 9309 says
    assert [root_verdict(capture_of(f"protego-2019/{host}"), "GPTBot") for host in ("www.google.com", "www.inc.com")] \
        == ["allow", "disallow"]
    # the prefix match that the exact group choice exists for: bare protego lets Google-Extended in
    smugmug = capture_of("protego-2019/www.smugmug.com")
    assert Protego.parse(smugmug.body.decode()).can_fetch("https://www.smugmug.com/", "Google-Extended")
    assert root_verdict(smugmug, "Google-Extended") == "disallow" and root_verdict(smugmug, "Googlebot") == "allow"


@pytest.mark.parametrize("host, outcome", [
    ("avaaz.org", EMPTY), ("caniuse.com", EMPTY),
    ("alight.com", HTML), ("catholic.net", HTML), ("calendar.yahoo.com", HTML),
    ("www.europarl.europa.eu", RULES), ("www.koreanair.com", RULES),  # not UTF-8
])
def test_empty_html_and_undecodable_files_get_an_outcome_not_a_crash(host, outcome):
    capture = capture_of(f"protego-2019/{host}")
    assert capture_outcome(capture)[0] == outcome
    if outcome != RULES:  # no rules: everything allowed, for every agent
        assert root_verdict(capture, "GPTBot") == root_verdict(capture, "CCBot") == "allow"


def test_a_bom_before_the_first_group_is_skipped():
    """ai.robots.txt's own file, saved with a UTF-8 BOM: its first line is still `User-agent:`."""
    body = (AGENTS / "robots.txt").read_bytes()
    assert body.startswith(b"User-agent:")
    with_bom = Capture("example.org", FETCHED, 200, b"\xef\xbb\xbf" + body, "bom")
    assert [root_verdict(with_bom, agent) for agent in ("GPTBot", "AI2Bot", "Googlebot")] \
        == ["disallow", "disallow", "allow"]


@pytest.mark.parametrize("status, outcome, verdict", [
    (404, CLIENT_ERROR, "allow"), (410, CLIENT_ERROR, "allow"),  # RFC 9309 2.3.1.3: unavailable, crawl anything
    (500, SERVER_ERROR, "disallow"), (503, SERVER_ERROR, "disallow"),  # 2.3.1.4: unreachable, crawl nothing
])
def test_status_codes_follow_rfc_9309(status, outcome, verdict):
    capture = capture_of("protego-2019/www.gutenberg.org", status)  # rules that disallow CCBot at /
    assert capture_outcome(capture)[0] == outcome
    assert root_verdict(capture, "CCBot") == verdict


def test_training_agents_come_from_the_list_by_stated_use():
    agents = training_agents(str(AGENT_LIST))
    assert agents[0] == TRAINING_AGENT
    assert {"GPTBot", "CCBot", "ClaudeBot", "Google-Extended", "anthropic-ai", "Applebot-Extended", "Bytespider"} \
        <= set(agents)
    # fetchers for a user's prompt and search crawlers are not training agents
    assert not {"ChatGPT-User", "Claude-User", "OAI-SearchBot", "PerplexityBot", "Googlebot"} & set(agents)


def demo_captures():
    return [capture for path in sorted((REPO / "data" / "sample" / "warc").rglob("*.warc*"))
            for capture in warc_captures(str(path))]


def test_the_robots_responses_of_real_warc_files_are_captures_with_their_status():
    captures = {(c.host, c.fetch_ts): (c.status, capture_outcome(c)[0]) for c in demo_captures()}
    assert captures == {
        ("data.gov.uk", "2014-03-25T12:12:28Z"): (200, RULES),
        ("ajax.googleapis.com", "2014-03-25T12:12:41Z"): (200, RULES),
        ("html5shiv.googlecode.com", "2014-03-25T12:12:41Z"): (404, CLIENT_ERROR),
        ("www.archive.org", "2008-04-30T20:48:25Z"): (200, RULES),
        ("www.archive.org", "2013-10-21T21:53:06Z"): (302, REDIRECT),
        ("archive.org", "2013-10-21T21:53:07Z"): (200, RULES),
        ("bits.wikimedia.org", "2012-01-19T10:01:56Z"): (200, EMPTY),
        ("en.wikipedia.org", "2012-01-19T10:02:04Z"): (200, RULES),
    }


def test_state_over_time_judges_a_url_by_the_latest_capture_at_the_policy_date():
    """en.wikipedia.org captured in 2012 (a demo WARC) and in 2019 (a saved file): the state
    as of a date is the latest capture on or before it, a path is judged by its own rules, and a
    new capture adds a row without changing the others."""
    from_warcs = demo_captures()
    table, counts = state_table(from_warcs)
    assert counts == {"captures": 8, "hosts": 7, "outcomes": {CLIENT_ERROR: 1, EMPTY: 1, REDIRECT: 1, RULES: 5}}
    wikipedia_2019 = file_capture(str(ROBOTS / "protego-2019" / "en.wikipedia.org"), FETCHED)
    later, _ = state_table([wikipedia_2019, *from_warcs])
    assert later.num_rows == table.num_rows + 1
    assert [row for row in later.to_pylist() if row["capture"] != wikipedia_2019.capture] == table.to_pylist()

    agents = training_agents(str(AGENT_LIST))
    special = "https://en.wikipedia.org/wiki/Special:Random"
    article = "https://en.wikipedia.org/wiki/Main_Page"
    assert RobotsState(later, "2011-12-31", agents).capture_of("en.wikipedia.org") is None
    for as_of, fetched in (("2012-01-19", "2012-01-19T10:02:04Z"), ("2019-07-20", FETCHED)):
        state = RobotsState(later, as_of, agents)
        assert state.capture_of("en.wikipedia.org")["fetch_ts"] == fetched
        assert state.disallowed(special, "en.wikipedia.org") and not state.disallowed(article, "en.wikipedia.org")
    # the redirect is no capture of its own: the 2008 rules stay www.archive.org's state in 2014
    assert RobotsState(later, "2014-01-01", agents).capture_of("www.archive.org")["fetch_ts"] == "2008-04-30T20:48:25Z"
    # a host that served 5xx in its latest capture: nothing of it, for anyone
    outage = Capture("en.wikipedia.org", "2020-01-01T00:00:00Z", 503, b"", "outage")
    state = RobotsState(state_table([outage, wikipedia_2019])[0], "2020-06-30", [TRAINING_AGENT])
    assert state.disallowed(article, "en.wikipedia.org")


def test_file_captures_are_named_by_host():
    capture = file_capture(str(ROBOTS / "protego-2019" / "github.com"), "2019-07-20")
    assert (capture.host, capture.fetch_ts, capture.status) == ("github.com", FETCHED, 200)
    assert file_capture(str(ROBOTS / "protego-2019" / "www.opticsplanet.com_443"), FETCHED).host == "www.opticsplanet.com"
