"""robots.txt as data (tokenmill.robots): real robots.txt files of 139 sites (data/bench/robots,
fetched in 2019) against a ground truth of root access per agent, the bad inputs among them, the
cases of Google's reference parser (google/robotstxt, robots_test.cc) on how RFC 9309 groups and
matches, the real robots.txt responses of the demo's WARC files, and the host state over time."""

import csv
import io
import json
from pathlib import Path

import pytest
from protego import Protego
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests.conftest import REPO
from tokenmill.robots import (CLIENT_ERROR, EMPTY, HTML, REDIRECT, RULES, SERVER_ERROR, TRAINING_AGENT, Capture,
                              Rules, RobotsState, capture_allows, capture_outcome, file_capture, product_token,
                              state_table, training_agents, warc_captures)

ROBOTS = REPO / "data" / "bench" / "robots"
AGENTS = REPO / "data" / "robots" / "ai-robots-txt"  # the list, its ready-made robots.txt, its licence
AGENT_LIST = AGENTS / "robots.json"
FETCHED = "2019-07-20T00:00:00Z"  # when the protego authors fetched the files (data/bench/robots/SOURCES.md)


def ground_truth() -> list[dict]:
    """The table's rows, each with its `truth`: the protego column, or RFC 9309's verdict where
    SOURCES.md checked by hand that the two differ (hand_checked_root_access.tsv)."""
    def rows(name: str) -> list[dict]:
        with open(ROBOTS / name, encoding="utf-8") as handle:
            return list(csv.DictReader(handle, delimiter="\t"))
    hand_checked = {(row["file"], row["agent"]): row["rfc_9309"] for row in rows("hand_checked_root_access.tsv")}
    return [{**row, "truth": hand_checked.get((row["file"], row["agent"]), row["protego_0.4.0"])}
            for row in rows("ground_truth_root_access.tsv")]


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
             if root_verdict(capture_of(row["file"]), row["agent"]) != row["truth"]]
    assert wrong == []
    # both cases where urllib.robotparser is wrong come out as RFC 9309 says
    assert [root_verdict(capture_of(f"protego-2019/{host}"), "GPTBot") for host in ("www.google.com", "www.inc.com")] \
        == ["allow", "disallow"]
    # the prefix match that the exact group choice exists for: bare protego lets Google-Extended in
    smugmug = capture_of("protego-2019/www.smugmug.com")
    assert Protego.parse(smugmug.body.decode()).can_fetch("https://www.smugmug.com/", "Google-Extended")
    assert root_verdict(smugmug, "Google-Extended") == "disallow" and root_verdict(smugmug, "Googlebot") == "allow"
    # `User-agent: CCBot` between two `crawl-delay` lines and `User-agent: Balihoo` / `Disallow: /` is
    # one group by RFC 9309; protego ends it at `crawl-delay` and leaves CCBot everything
    eventbrite = capture_of("protego-2019/www.eventbrite.com")
    assert Protego.parse(eventbrite.body.decode()).can_fetch("https://www.eventbrite.com/", "CCBot")
    assert root_verdict(eventbrite, "CCBot") == "disallow" and root_verdict(eventbrite, "GPTBot") == "allow"


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


def robots_warc(path: Path, responses: list[tuple[str, str, bytes]]) -> str:
    """A WARC file of robots.txt responses (host, Content-Type, body), as a crawler writes them."""
    with open(path, "wb") as handle:
        writer = WARCWriter(handle, gzip=True)
        for host, content_type, body in responses:
            http = StatusAndHeaders("200 OK", [("Content-Type", content_type)], protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(f"https://{host}/robots.txt", "response",
                                                          payload=io.BytesIO(body), http_headers=http,
                                                          warc_headers_dict={"WARC-Date": FETCHED}))
    return str(path)


def test_a_capture_is_judged_by_its_body_not_the_type_it_was_served_as(tmp_path):
    """RFC 9309 2.3.1.1: the rules of a robots.txt that was downloaded are followed, whatever its
    Content-Type. gutenberg's real rules served as text/html disallow CCBot; alight.com's real HTML
    page served as text/plain is a soft 404 that allows everything."""
    responses = [("www.gutenberg.org", "text/html; charset=UTF-8", capture_of("protego-2019/www.gutenberg.org").body),
                 ("alight.com", "text/plain", capture_of("protego-2019/alight.com").body)]
    captures = {capture.host: capture for capture in warc_captures(robots_warc(tmp_path / "robots.warc.gz", responses))}
    assert [capture_outcome(captures[host])[0] for host in ("www.gutenberg.org", "alight.com")] == [RULES, HTML]
    assert [root_verdict(captures[host], "CCBot") for host in ("www.gutenberg.org", "alight.com")] == ["disallow", "allow"]


def google_case(robots_txt: str, *checks: tuple[str, str, bool]):
    return pytest.param(robots_txt, checks)


# Cases of google/robotstxt's robots_test.cc (Apache-2.0; the test named before each), as
# (agent, URL, allowed). Where that parser and RFC 9309's examples differ, the RFC's are taken:
# a URL's non-ASCII octets are encoded before matching and escapes of unreserved characters
# decoded (RFC 9309 2.2.2), which robots_test.cc leaves to the caller.
GOOGLE_CASES = [
    # ID_LineSyntax_Groups: a blank line or a rule before any group ends nothing; user-agent
    # lines with only blank lines between them are one group; groups of one agent are merged
    google_case("allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\ndisallow: /\n"
                "allow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\nallow: /z/\ndisallow: /\n",
                ("FooBot", "http://foo.bar/x/b", True), ("FooBot", "http://foo.bar/z/d", True),
                ("FooBot", "http://foo.bar/y/c", False), ("BarBot", "http://foo.bar/y/c", True),
                ("BarBot", "http://foo.bar/w/a", True), ("BarBot", "http://foo.bar/z/d", False),
                ("BazBot", "http://foo.bar/z/d", True), ("FooBot", "http://foo.bar/foo/bar/", False),
                ("BarBot", "http://foo.bar/foo/bar/", False), ("BazBot", "http://foo.bar/foo/bar/", False)),
    # ID_LineSyntax_Groups_OtherRules: a record that is not a rule does not close a group
    google_case("User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n",
                ("FooBot", "http://foo.bar/", False), ("BarBot", "http://foo.bar/", False)),
    google_case("User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n",
                ("FooBot", "http://foo.bar/", False), ("BarBot", "http://foo.bar/", False)),
    # issue 32: a crawl delay between user-agent lines (www.eventbrite.com's 2019 file has it)
    google_case("User-agent: CCBot\ncrawl-delay: 0.7\nUser-agent: X\nUser-agent: Y\nDisallow: /\n",
                ("CCBot", "https://example.org/", False), ("Y", "https://example.org/a", False),
                ("GPTBot", "https://example.org/", True)),
    # ID_LineSyntax_Line: the colon may be missing; unknown keys are no rules
    google_case("user-agent FooBot\ndisallow /\n", ("FooBot", "http://foo.bar/x/y", False)),
    google_case("foo: FooBot\nbar: /\n", ("FooBot", "http://foo.bar/x/y", True)),
    # ID_REPLineNamesCaseInsensitive
    google_case("uSeR-aGeNt: FooBot\nAlLoW: /x/\ndIsAlLoW: /\n",
                ("FooBot", "http://foo.bar/x/y", True), ("FooBot", "http://foo.bar/a/b", False)),
    # ID_UserAgentValueCaseInsensitive, GoogleOnly_AcceptUserAgentUpToFirstSpace: a value is read
    # up to its first space, so `FOO BAR` names the product token foo
    google_case("User-Agent: FoO bAr\nAllow: /x/\nDisallow: /\n",
                ("Foo", "http://foo.bar/x/y", True), ("foo", "http://foo.bar/a/b", False)),
    google_case("User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n",
                ("Foo", "http://foo.bar/x/y", True)),
    # ID_GlobalGroups_Secondary: `*` only when no group names the agent; no `*`, no rules
    google_case("user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n",
                ("FooBot", "http://foo.bar/x/y", False), ("BarBot", "http://foo.bar/x/y", True)),
    google_case("user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\nuser-agent: BazBot\ndisallow: /\n",
                ("QuxBot", "http://foo.bar/x/y", True)),
    # ID_AllowDisallow_Value_CaseSensitive
    google_case("user-agent: FooBot\ndisallow: /X/\n", ("FooBot", "http://foo.bar/x/y", True)),
    # ID_LongestMatch: the longest pattern wins, Allow on a tie, the agent's own group over `*`
    google_case("user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/\n", ("FooBot", "http://foo.bar/x/page.html", False)),
    google_case("user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/\n",
                ("FooBot", "http://foo.bar/x/page.html", True), ("FooBot", "http://foo.bar/x/", False)),
    google_case("user-agent: FooBot\ndisallow: \nallow: \n", ("FooBot", "http://foo.bar/x/page.html", True)),
    google_case("user-agent: FooBot\ndisallow: /\nallow: /\n", ("FooBot", "http://foo.bar/x/page.html", True)),
    google_case("user-agent: FooBot\ndisallow: /x\nallow: /x/\n",
                ("FooBot", "http://foo.bar/x", False), ("FooBot", "http://foo.bar/x/", True)),
    google_case("user-agent: FooBot\nallow: /page\ndisallow: /*.html\n",
                ("FooBot", "http://foo.bar/page.html", False), ("FooBot", "http://foo.bar/page", True)),
    google_case("user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n",
                ("FooBot", "http://foo.bar/x/page.html", True), ("FooBot", "http://foo.bar/x/y.html", False)),
    google_case("User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n",
                ("FooBot", "http://foo.bar/x/page", True), ("FooBot", "http://foo.bar/y/page", False)),
    # ID_Encoding, with RFC 9309 2.2.2's table where the two differ
    google_case("User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n",
                ("FooBot", "http://foo.bar/foo/bar?qux=taz&baz=http://foo.bar?tar&par", True)),
    google_case("User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/\u30c4\n",
                ("FooBot", "http://foo.bar/foo/bar/%E3%83%84", True), ("FooBot", "http://foo.bar/foo/bar/\u30c4", True)),
    google_case("User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%e3%83%84\n", ("FooBot", "http://foo.bar/foo/bar/%E3%83%84", True)),
    google_case("User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n", ("FooBot", "http://foo.bar/foo/bar/baz", True)),
    # RFC 9309 2.2.3: an escaped `*` or `$` is an octet, an unescaped one keeps its meaning
    google_case("User-agent: FooBot\nDisallow: /path/file-with-a-%2A.html\nDisallow: /path/foo-%24\n",
                ("FooBot", "http://foo.bar/path/file-with-a-*.html", False), ("FooBot", "http://foo.bar/path/file-with-a-x.html", True),
                ("FooBot", "http://foo.bar/path/foo-$", False), ("FooBot", "http://foo.bar/path/foo-x", True)),
    # TestGetPathParamsQuery: the path with params and query, an empty query's `?` kept
    google_case("User-agent: *\nDisallow: /?\nAllow: /?hl=\nDisallow: /a;b\n",
                ("FooBot", "https://www.google.com/", True), ("FooBot", "https://www.google.com/?", False),
                ("FooBot", "https://www.google.com?q=x", False), ("FooBot", "https://www.google.com/?hl=de#q", True),
                ("FooBot", "https://www.google.com/a;b?c", False)),
    # ID_SpecialCharacters
    google_case("User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n",
                ("FooBot", "http://foo.bar/foo/bar/quz", False), ("FooBot", "http://foo.bar/foo/quz", True),
                ("FooBot", "http://foo.bar/foo//quz", True), ("FooBot", "http://foo.bar/foo/bax/quz", True)),
    google_case("User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n",
                ("FooBot", "http://foo.bar/foo/bar", False), ("FooBot", "http://foo.bar/foo/bar/qux", True),
                ("FooBot", "http://foo.bar/foo/bar/", True), ("FooBot", "http://foo.bar/foo/bar/baz", True)),
    google_case("User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n",
                ("FooBot", "http://foo.bar/foo/bar", True), ("FooBot", "http://foo.bar/foo/quz", False)),
    # GoogleOnly_DocumentationChecks
    google_case("user-agent: FooBot\ndisallow: /\nallow: /fish*\n",
                ("FooBot", "http://foo.bar/bar", False), ("FooBot", "http://foo.bar/fish", True),
                ("FooBot", "http://foo.bar/fishheads/yummy.html", True), ("FooBot", "http://foo.bar/fish.html?id=anything", True),
                ("FooBot", "http://foo.bar/Fish.bar", False), ("FooBot", "http://foo.bar/catfish", False),
                ("FooBot", "http://foo.bar/?id=fish", False)),
    google_case("user-agent: FooBot\ndisallow: /\nallow: /fish/\n",
                ("FooBot", "http://foo.bar/fish/?salmon", True), ("FooBot", "http://foo.bar/fish", False)),
    google_case("user-agent: FooBot\ndisallow: /\nallow: /*.php\n",
                ("FooBot", "http://foo.bar/folder/filename.php?parameters", True),
                ("FooBot", "http://foo.bar//folder/any.php.file.html", True),
                ("FooBot", "http://foo.bar/index?f=filename.php/", True), ("FooBot", "http://foo.bar/php/", False),
                ("FooBot", "http://foo.bar/index?php", False), ("FooBot", "http://foo.bar/windows.PHP", False)),
    google_case("user-agent: FooBot\ndisallow: /\nallow: /*.php$\n",
                ("FooBot", "http://foo.bar/folder/filename.php", True), ("FooBot", "http://foo.bar/filename.php?parameters", False),
                ("FooBot", "http://foo.bar/filename.php/", False), ("FooBot", "http://foo.bar/filename.php5", False),
                ("FooBot", "http://foo.bar/aaaphpaaa", False)),
    google_case("user-agent: FooBot\ndisallow: /\nallow: /fish*.php\n",
                ("FooBot", "http://foo.bar/fish.php", True), ("FooBot", "http://foo.bar/fishheads/catfish.php?parameters", True),
                ("FooBot", "http://foo.bar/Fish.PHP", False)),
    google_case("user-agent: FooBot\nallow: /folder\ndisallow: /folder\n", ("FooBot", "http://example.com/folder/page", True)),
    google_case("user-agent: FooBot\nallow: /$\ndisallow: /\n",
                ("FooBot", "http://example.com/", True), ("FooBot", "http://example.com/page.html", False)),
]


@pytest.mark.parametrize("robots_txt, checks", GOOGLE_CASES)
def test_groups_and_matching_follow_rfc_9309_as_googles_reference_parser_tests_them(robots_txt, checks):
    rules = Rules(robots_txt)
    assert [(agent, url, rules.allowed(agent, url)) for agent, url, _ in checks] == list(checks)


def test_a_listed_agent_of_several_words_is_judged_by_the_product_token_sites_write():
    """ai.robots.txt names agents as `Linguee Bot`, `Brightbot 1.0` or `panscient.com`; a site names
    a product token. Both are read the same way, so the real 2019 files that disallow `Linguee`
    (www.chrono24.com) and `Panscient` (www.who.int) disallow those two training agents, and the
    list's own robots.txt, which writes the names whole, still disallows every agent of the list."""
    assert [product_token(name) for name in ("Linguee Bot", "Brightbot 1.0", "Kangaroo Bot", "panscient.com",
                                             "iaskspider/2.0", "Ai2Bot-Dolma", "img2dataset")] \
        == ["linguee", "brightbot", "kangaroo", "panscient", "iaskspider", "ai2bot-dolma", "img2dataset"]
    assert {"Linguee Bot", "panscient.com", "Brightbot 1.0", "Kangaroo Bot"} <= set(training_agents(str(AGENT_LIST)))
    for host, agent in (("www.chrono24.com", "Linguee Bot"), ("www.who.int", "panscient.com")):
        capture = capture_of(f"protego-2019/{host}")
        assert (root_verdict(capture, agent), root_verdict(capture, "GPTBot")) == ("disallow", "allow"), host
    assert not Rules("User-agent: Brightbot\nDisallow: /\n").allowed("Brightbot 1.0", "https://example.org/")
    listed = json.loads(AGENT_LIST.read_text(encoding="utf-8"))
    own = capture_of("ai-robots-txt/robots.txt")
    assert [name for name in listed if root_verdict(own, name) == "allow"] == []
    assert root_verdict(own, "Googlebot") == "allow"


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
