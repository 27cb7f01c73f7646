"""train_quality_fasttext: a fastText quality classifier from a labelled JSONL (one thread, seeded)."""

import argparse
import json

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.quality.fasttext import FastTextSettings, train_fasttext


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--labels", required=True)
    parser.add_argument("--settings", required=True, help="the `quality.fasttext` config section, as JSON")
    parser.add_argument("--model", required=True)
    parser.add_argument("--metrics", required=True)
    args = parser.parse_args(argv)
    metrics = train_fasttext(args.labels, args.model, args.metrics, FastTextSettings(**json.loads(args.settings)))
    print(json.dumps(metrics, indent=1))


if __name__ == "__main__":
    main()
