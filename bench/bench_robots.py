"""robots.txt captures as robots_state and judge read them (tokenmill.robots), side by side with
bare protego and Python's urllib.robotparser, on the 140 real files of data/bench/robots (139
sites fetched in 2019 and ai.robots.txt's own file; see its SOURCES.md).

One core:
- agreement: root access of the 6 agents of ground_truth_root_access.tsv, per parser, against
  the truth (the table's protego column, with RFC 9309's verdict where SOURCES.md checked by hand
  that they differ: hand_checked_root_access.tsv);
- speed: captures per CPU-second, each parsed and asked for `/` for the 6 agents: tokenmill
  (outcome, BOM, RFC 9309's groups and whole-token choice, its own matcher), bare protego on the
  decoded body, and urllib.robotparser; then tokenmill's judge question (is a URL disallowed for any of the 63
  default training agents?) per capture.

usage: python bench/bench_robots.py [--tiny]   (--tiny: one round over eleven files; its figures mean nothing)
"""

from __future__ import annotations

import argparse
import csv
import time
import urllib.robotparser

from protego import Protego

from common import REPO, add_tiny_option, pin_to_one_cpu  # puts the repository on the import path

from tokenmill.robots import RULES, Capture, Rules, capture_allows, capture_outcome, training_agents  # noqa: E402

DATA = REPO / "data" / "bench" / "robots"
AGENT_DIR = REPO / "data" / "robots" / "ai-robots-txt"


def load_captures(names: list[str]) -> dict[str, Capture]:
    paths = {name: (AGENT_DIR.parent / name if name.startswith("ai-robots-txt/") else DATA / name) for name in names}
    return {name: Capture(path.name, "2019-07-20T00:00:00Z", 200, path.read_bytes(), name)
            for name, path in paths.items()}


def tokenmill_verdicts(capture: Capture, agents: list[str]) -> list[bool]:
    outcome, text = capture_outcome(capture)
    rules = Rules(text) if outcome == RULES else None  # no cache: every capture parsed afresh
    url = f"https://{capture.host}/"
    return [capture_allows(outcome, "", agent, url) if rules is None else rules.allowed(agent, url) for agent in agents]


def protego_verdicts(capture: Capture, agents: list[str]) -> list[bool]:
    parsed = Protego.parse(capture.body.decode("utf-8", "replace"))
    return [parsed.can_fetch(f"https://{capture.host}/", agent) for agent in agents]


def urllib_verdicts(capture: Capture, agents: list[str]) -> list[bool]:
    parser = urllib.robotparser.RobotFileParser()
    parser.parse(capture.body.decode("utf-8", "replace").splitlines())
    return [parser.can_fetch(agent, f"https://{capture.host}/") for agent in agents]


def per_cpu_second(function, captures: list[Capture], agents: list[str], rounds: int) -> float:
    start = time.process_time()
    for _ in range(rounds):
        for capture in captures:
            function(capture, agents)
    return rounds * len(captures) / (time.process_time() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_tiny_option(parser)
    tiny = parser.parse_args().tiny
    cpu = pin_to_one_cpu()
    with open(DATA / "ground_truth_root_access.tsv", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    with open(DATA / "hand_checked_root_access.tsv", encoding="utf-8") as handle:
        hand_checked = {(row["file"], row["agent"]): row["rfc_9309"] for row in csv.DictReader(handle, delimiter="\t")}
    names = sorted({row["file"] for row in rows})
    if tiny:
        names = names[:9] + ["protego-2019/www.smugmug.com", "protego-2019/www.eventbrite.com"]
        rows = [row for row in rows if row["file"] in names]
    captures = load_captures(names)
    six = sorted({row["agent"] for row in rows})
    parsers = {"tokenmill (robots_state + judge)": tokenmill_verdicts, "bare protego 0.7.0": protego_verdicts,
               "urllib.robotparser": urllib_verdicts}
    print(f"{len(captures)} robots.txt files, {len(six)} agents, {len(rows)} rows of root access; CPU {cpu}")
    print(f"{'parser':34} {'rows right':>11} {'wrong':>6} {'captures/CPU-s':>15}")
    rounds = 1 if tiny else 20
    speeds = {}
    for label, function in parsers.items():
        verdicts = {name: dict(zip(six, function(capture, six))) for name, capture in captures.items()}
        wrong = [(row["file"], row["agent"]) for row in rows
                 if ("allow" if verdicts[row["file"]][row["agent"]] else "disallow")
                 != hand_checked.get((row["file"], row["agent"]), row["protego_0.4.0"])]
        speeds[label] = per_cpu_second(function, list(captures.values()), six, rounds)
        shown = ", ".join(f"{name.split('/')[-1]} {agent}" for name, agent in wrong[:4])
        print(f"{label:34} {len(rows) - len(wrong):>11} {len(wrong):>6} {speeds[label]:>15,.0f}"
              + (f"   wrong: {shown}" if wrong else ""))
    ours, bare = speeds["tokenmill (robots_state + judge)"], speeds["bare protego 0.7.0"]
    print(f"tokenmill / bare protego: {ours / bare:.2f}x the captures per CPU-second")
    agents = training_agents(str(AGENT_DIR / "robots.json"))
    parsed = [Rules(capture_outcome(c)[1]) for c in captures.values() if capture_outcome(c)[0] == RULES]
    start = time.process_time()
    for _ in range(rounds):
        for rules in parsed:
            rules.disallows_any(agents, "https://example.org/wiki/Special:Random")
    print(f"judge's question, any of the {len(agents)} default agents disallowed for one URL: "
          f"{rounds * len(parsed) / (time.process_time() - start):,.0f} URLs/CPU-s on parsed rules")


if __name__ == "__main__":
    main()
