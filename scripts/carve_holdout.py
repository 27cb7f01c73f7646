"""carve_holdout: set evaluation data aside, write-once (the web and time-forward records are carved by extract).

  evalsets  copy the configured benchmark files
  manifest  list every carved file with its sha256, and refuse one that differs from the pin
"""

import argparse
import json
import sys

from tokenmill.holdout import HoldoutError, build_manifest, carve_evalsets


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    evalsets = commands.add_parser("evalsets")
    evalsets.add_argument("--benchmarks", required=True, help="decontamination.benchmarks, as JSON")
    evalsets.add_argument("--holdout-dir", required=True)
    evalsets.add_argument("--receipt", required=True)
    manifest = commands.add_parser("manifest")
    manifest.add_argument("--settings", required=True, help="the holdout predicate settings, as JSON")
    manifest.add_argument("--pin", default="", help="holdout.manifest_sha256 (empty: not pinned)")
    manifest.add_argument("--out", required=True)
    manifest.add_argument("receipts", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "evalsets":
        receipt = carve_evalsets(json.loads(args.benchmarks), args.holdout_dir, args.receipt)
        print(json.dumps(receipt, indent=1))
        return
    try:
        sha256 = build_manifest(args.receipts, json.loads(args.settings), args.out, args.pin or None)
    except HoldoutError as error:
        sys.exit(str(error))
    print(f"holdout manifest {args.out}: sha256 {sha256} (the value of holdout.manifest_sha256)")
    if not args.pin:
        print("holdout.manifest_sha256 is not set: review what was carved, then pin this value")


if __name__ == "__main__":
    main()
