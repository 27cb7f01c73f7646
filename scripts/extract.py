"""extract: one WARC or JSONL part to documents, quarantine and part stats."""

import argparse
import json

from tokenmill.extract import PartInfo, extract_part
from tokenmill.holdout import check_pin
from tokenmill.progress import log_progress_to_stderr


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--input", required=True, help="the part's input file")
    parser.add_argument("--kind", required=True, choices=["warc", "jsonl"])
    parser.add_argument("--source", required=True)
    parser.add_argument("--snapshot", required=True)
    parser.add_argument("--part", required=True)
    parser.add_argument("--tier", required=True)
    parser.add_argument("--license-id", required=True)
    parser.add_argument("--settings", required=True, help="the validated `extract` config section, as JSON")
    parser.add_argument("--holdout-manifest", required=True, help="holdout/manifest.json of carve_holdout")
    parser.add_argument("--holdout-pin", default="", help="its sha256 as config pins it (holdout.manifest_sha256)")
    parser.add_argument("--docs", required=True)
    parser.add_argument("--quarantine", required=True)
    parser.add_argument("--stats", required=True)
    args = parser.parse_args(argv)
    log_progress_to_stderr()
    check_pin(args.holdout_manifest, args.holdout_pin or None)
    info = PartInfo(args.source, args.snapshot, args.part, args.tier, args.license_id)
    stats = extract_part(args.input, args.kind, info, json.loads(args.settings),
                         args.docs, args.quarantine, args.stats)
    print(json.dumps(stats.as_dict(info, args.input), indent=1))


if __name__ == "__main__":
    main()
