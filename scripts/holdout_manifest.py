"""holdout_manifest: list every carved file of the holdout with its sha256, and refuse a holdout
that differs from the pin."""

import argparse
import json
import sys

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.holdout import HoldoutError, build_manifest


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--settings", required=True, help="the holdout predicate settings, as JSON")
    parser.add_argument("--pin", required=True, help="holdout.manifest_sha256 (empty: not pinned)")
    parser.add_argument("--out", required=True)
    parser.add_argument("receipts", nargs="+")
    args = parser.parse_args(argv)
    try:
        sha256 = build_manifest(args.receipts, json.loads(args.settings), args.out, args.pin or None)
    except HoldoutError as error:
        sys.exit(str(error))
    print(f"holdout manifest {args.out}: sha256 {sha256} (the value of holdout.manifest_sha256)")
    if not args.pin:
        print("holdout.manifest_sha256 is not set: review what was carved, then pin this value")


if __name__ == "__main__":
    main()
