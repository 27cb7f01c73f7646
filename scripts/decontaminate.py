"""decontaminate: benchmark n-gram index, and the scan of one part against it.

  index  build the Bloom filter and exact n-gram set of the carved benchmarks
  part   flag the documents of a part that contain benchmark items
"""

import argparse
import json
from pathlib import Path

from tokenmill.decontam import Benchmark, DecontaminationSettings, build_index, decontaminate_part
from tokenmill.io import read_json
from tokenmill.progress import log_progress_to_stderr


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    index = commands.add_parser("index")
    index.add_argument("--evalsets", required=True, help="carve_evalsets receipt")
    index.add_argument("--holdout-dir", required=True)
    index.add_argument("--settings", default="{}", help="decontamination settings (without benchmarks), as JSON")
    index.add_argument("--out", required=True)
    part = commands.add_parser("part")
    part.add_argument("--docs", required=True)
    part.add_argument("--index", required=True)
    part.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    log_progress_to_stderr()
    if args.command == "index":
        receipt = read_json(args.evalsets)
        benchmarks = [Benchmark(b["name"], str(Path(args.holdout_dir) / b["path"]), b["format"], b["fields"])
                      for b in receipt["benchmarks"]]
        meta = build_index(benchmarks, DecontaminationSettings(**json.loads(args.settings)), args.out)
        print(json.dumps({k: v for k, v in meta.items() if k != "settings"}, indent=1))
    else:
        print(json.dumps(decontaminate_part(args.docs, args.index, args.out)))


if __name__ == "__main__":
    main()
