"""select_thresholds: per-language quality cut-offs from every part's classifier scores."""

import argparse
import json

from tokenmill.plan import read_plan
from tokenmill.select.thresholds import build_thresholds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True)
    parser.add_argument("--policy", required=True, help="the `select.quality` config section, as JSON")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    rows = [(row["part"], row["langid"], row["quality_fasttext"], row["quality_encoder"]) for row in read_plan(args.plan)]
    thresholds = build_thresholds(rows, json.loads(args.policy), args.out)
    for lang, entry in thresholds["languages"].items():
        print(f"{lang}: {entry['documents']} documents, cut {entry.get('cut')}")


if __name__ == "__main__":
    main()
