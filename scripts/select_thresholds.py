"""select_thresholds: per-language quality cut-offs from every part's classifier scores."""

import argparse
import json

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.plan import read_plan
from tokenmill.select.thresholds import build_thresholds, score_files


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True)
    parser.add_argument("--policy", required=True, help="the `select.quality` config section, as JSON")
    parser.add_argument("--out", required=True)
    parser.add_argument("--workers", type=int, default=1, help="processes that read the parts")
    args = parser.parse_args(argv)
    thresholds = build_thresholds(score_files(read_plan(args.plan)), json.loads(args.policy), args.out,
                                  args.workers)
    for lang, entry in thresholds["languages"].items():
        print(f"{lang}: {entry['documents']} documents, cut {entry.get('cut')}")


if __name__ == "__main__":
    main()
