"""carve_holdout: set evaluation data aside, write-once.

  part      copy one part's held-out records (web residue class, time-forward slice)
  evalsets  copy the configured benchmark files
  manifest  list every carved file with its sha256 (the hash config pins)
"""

import argparse
import json

from tokenmill.holdout import HoldoutRules, build_manifest, carve_evalsets, carve_part


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    part = commands.add_parser("part")
    part.add_argument("--input", required=True)
    part.add_argument("--kind", required=True, choices=["warc", "jsonl"])
    part.add_argument("--rules", required=True, help="the holdout predicate, as JSON")
    part.add_argument("--fields", default="{}", help="JSONL field names, as JSON")
    part.add_argument("--holdout-dir", required=True)
    part.add_argument("--name", required=True, help="source/snapshot/part: where the carved records go")
    part.add_argument("--receipt", required=True)
    evalsets = commands.add_parser("evalsets")
    evalsets.add_argument("--benchmarks", required=True, help="decontamination.benchmarks, as JSON")
    evalsets.add_argument("--holdout-dir", required=True)
    evalsets.add_argument("--receipt", required=True)
    manifest = commands.add_parser("manifest")
    manifest.add_argument("--settings", required=True, help="the holdout predicate settings, as JSON")
    manifest.add_argument("--out", required=True)
    manifest.add_argument("receipts", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "part":
        fields = {"url": "url", "fetch_ts": "created", **json.loads(args.fields)}
        receipt = carve_part(args.input, args.kind, HoldoutRules(**json.loads(args.rules)), fields,
                             args.holdout_dir, args.name, args.receipt)
        print(json.dumps(receipt, indent=1))
    elif args.command == "evalsets":
        receipt = carve_evalsets(json.loads(args.benchmarks), args.holdout_dir, args.receipt)
        print(json.dumps(receipt, indent=1))
    else:
        sha256 = build_manifest(args.receipts, json.loads(args.settings), args.out)
        print(f"holdout manifest {args.out}: sha256 {sha256} (the value of holdout.manifest_sha256)")


if __name__ == "__main__":
    main()
