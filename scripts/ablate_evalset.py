"""ablate_evalset: the text and multiple-choice items every proxy of the ablation is measured on,
from the holdout (tokenmill.ablate.evalset)."""

import argparse
import json

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.ablate.evalset import build_evalset


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--holdout", required=True, help="the holdout folder (holdout.dir)")
    parser.add_argument("--settings", required=True, help="tokenmill.ablate.evalset.evalset_settings, as JSON")
    parser.add_argument("--texts", nargs="*", default=[], help="ablate.eval.texts: JSONL files with a text field")
    parser.add_argument("--items", type=int, required=True, help="multiple-choice items (ablate.eval.choice_items)")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out-texts", required=True)
    parser.add_argument("--out-choices", required=True)
    args = parser.parse_args(argv)
    settings = json.loads(args.settings)
    counts = build_evalset(args.holdout, settings["extract"], settings["sources"], args.texts, args.items, args.seed,
                           args.out_texts, args.out_choices)
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
