"""Side-by-side: heuristic quality metrics against datatrove's four heuristic filters.

On the same documents, the gold article bodies of the bundled sample
(data/sample/gold/aeb-ground-truth.json.gz, 181 real pages, cycled to --docs documents), one
core (the process, and the datatrove subprocess it starts, pinned to one CPU):
- tokenmill: `heuristic_scores(text)`, every metric of every document;
- datatrove: GopherQualityFilter, GopherRepetitionFilter, C4QualityFilter and
  FineWebQualityFilter with their defaults, `.filter(Document(text=..., id=...))` called directly
  on every document, in datatrove's own virtualenv (--datatrove-python). A filter stops at its
  first failing rule, so datatrove does less than all of its work on documents it drops.

Also prints how often the pass/fail decision of each family (`failed_rule` with that family of
DEFAULT_THRESHOLDS) agrees with the corresponding datatrove filter on the 181 distinct documents.

usage: python bench/bench_heuristics.py [--docs N] [--datatrove-python PATH] [--tiny]
(--tiny: the 181 bodies once)
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

from common import (DATATROVE_SKIPPED, add_datatrove_option, add_tiny_option, pin_to_one_cpu,  # puts the repository
                    run_peer, skipped)  # on the import path
from tests.sample_data import gold_articles
from tokenmill.quality.heuristics import DEFAULT_THRESHOLDS, HEURISTIC_COLUMNS, failed_rule, heuristic_scores

FAMILIES = {  # datatrove filter -> our threshold family
    "GopherQualityFilter": "gopher_quality",
    "GopherRepetitionFilter": "gopher_repetition",
    "C4QualityFilter": "c4",
    "FineWebQualityFilter": "fineweb",
}

DATATROVE = r"""
import json, sys, time
from importlib.metadata import version
from datatrove.data import Document
from datatrove.pipeline.filters import (C4QualityFilter, FineWebQualityFilter, GopherQualityFilter,
                                       GopherRepetitionFilter)
texts = json.load(open(sys.argv[1]))
distinct = int(sys.argv[2])
filters = [GopherQualityFilter(), GopherRepetitionFilter(), C4QualityFilter(), FineWebQualityFilter()]
for f in filters:  # load spaCy and its tokenizer before timing
    f.filter(Document(text="The warm up sentence is here. " * 20, id="warm-up"))
seconds = [0.0] * len(filters)
passed = [[None] * distinct for _ in filters]
clock = time.perf_counter
start = clock()
for i, text in enumerate(texts):
    for k, f in enumerate(filters):
        t = clock()
        result = f.filter(Document(text=text, id=str(i)))
        seconds[k] += clock() - t
        if i < distinct:
            passed[k][i] = result is True
total = clock() - start
print(json.dumps({"version": version("datatrove"), "spacy": version("spacy"),
                  "filters": [type(f).__name__ for f in filters], "seconds": seconds, "total": total,
                  "passed": passed}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=1000, help="documents to time (the gold bodies, cycled)")
    add_datatrove_option(parser)
    add_tiny_option(parser)
    args = parser.parse_args()

    gold = gold_articles()
    distinct = [gold[key]["articleBody"] for key in sorted(gold)]
    docs = len(distinct) if args.tiny else max(args.docs, len(distinct))  # the agreement needs each body once
    texts = [distinct[i % len(distinct)] for i in range(docs)]
    cpu = pin_to_one_cpu()
    for text in distinct[:20]:  # warm up
        heuristic_scores(text)
    start = time.perf_counter()
    scores = [heuristic_scores(text) for text in texts]
    ours = time.perf_counter() - start

    chars = sum(map(len, texts))
    print(f"heuristics: {len(texts)} documents ({len(distinct)} distinct gold article bodies, cycled; "
          f"{chars / len(texts):.0f} characters on average), one core (CPU {cpu}), Python {platform.python_version()}")
    print(f"{'method':<52} {'docs/s/core':>12} {'tokenmill x':>12}")
    label = f"tokenmill heuristic_scores ({len(HEURISTIC_COLUMNS)} metrics)"
    print(f"{label:<52} {len(texts) / ours:>12.1f} {1.0:>12.1f}")
    if not args.datatrove_python:
        skipped("datatrove's four heuristic filters", DATATROVE_SKIPPED)
        return

    with tempfile.TemporaryDirectory() as tmp:
        texts_path = Path(tmp) / "texts.json"
        texts_path.write_text(json.dumps(texts, ensure_ascii=False), encoding="utf-8")
        figures = json.loads(run_peer(args.datatrove_python, DATATROVE, str(texts_path), str(len(distinct))))
    for name, seconds in zip(figures["filters"], figures["seconds"]):
        label = f"datatrove {figures['version']} {name}"
        print(f"{label:<52} {len(texts) / seconds:>12.1f} {seconds / ours:>12.1f}")
    together = sum(figures["seconds"])
    label = f"datatrove {figures['version']} four filters together"
    print(f"{label:<52} {len(texts) / together:>12.1f} {together / ours:>12.1f}")
    print(f"(spaCy {figures['spacy']}. datatrove caches the last 5 tokenizations: Gopher repetition reuses Gopher "
          "quality's words; FineWeb tokenizes again, C4's per-line sentence splitting having pushed them out)")

    agreement = []
    for name, passed in zip(figures["filters"], figures["passed"]):
        family = FAMILIES[name]
        ours_pass = [failed_rule(s, {family: DEFAULT_THRESHOLDS[family]}) == "" for s in scores[: len(distinct)]]
        same = sum(a == b for a, b in zip(ours_pass, passed))
        agreement.append(f"{family} {same}/{len(distinct)} (datatrove keeps {sum(passed)}, tokenmill {sum(ours_pass)})")
    print("pass/fail agreement with datatrove, distinct documents: " + "; ".join(agreement))


if __name__ == "__main__":
    main()
