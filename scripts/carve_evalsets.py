"""carve_evalsets: copy the configured benchmark files into the holdout, write-once (the web and
time-forward records are carved by extract)."""

import argparse
import json

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.holdout import carve_evalsets


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--benchmarks", required=True, help="decontamination.benchmarks, as JSON")
    parser.add_argument("--holdout-dir", required=True)
    parser.add_argument("--receipt", required=True)
    args = parser.parse_args(argv)
    receipt = carve_evalsets(json.loads(args.benchmarks), args.holdout_dir, args.receipt)
    print(json.dumps(receipt, indent=1))


if __name__ == "__main__":
    main()
