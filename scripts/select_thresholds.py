"""select_thresholds: per language of a snapshot, its tier, language-confidence threshold and quality cut-off,
from every part's scores."""

import argparse
import json

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.io import read_json
from tokenmill.plan import read_plan
from tokenmill.select.thresholds import build_thresholds, score_files


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True)
    parser.add_argument("--policy", required=True,
                        help="the `select.quality` config section with select's min_lang_conf, lang_conf_per_language "
                             "and tiers, as JSON")
    parser.add_argument("--fasttext-metrics", required=True, help="train_quality_fasttext's metrics: its languages")
    parser.add_argument("--encoder-metrics", required=True, help="train_quality_encoder's metrics: its languages")
    parser.add_argument("--out", required=True)
    parser.add_argument("--workers", type=int, default=1, help="processes that read the parts")
    args = parser.parse_args(argv)
    valid = {"fasttext": read_json(args.fasttext_metrics)["languages"],
             "encoder": read_json(args.encoder_metrics)["languages"], "naturalness": None}
    thresholds = build_thresholds(score_files(read_plan(args.plan)), {**json.loads(args.policy), "valid": valid},
                                  args.out, args.workers)
    for lang, entry in thresholds["languages"].items():
        print(f"{lang}: {entry['documents']} documents, {entry['tokens']} tokens (estimated), tier {entry.get('tier')}, "
              f"language confidence from {entry.get('lang_conf')}, cut {entry.get('cut')}")


if __name__ == "__main__":
    main()
