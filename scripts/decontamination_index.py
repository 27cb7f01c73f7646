"""decontamination_index: the Bloom filter and exact n-gram set of the carved benchmarks."""

import argparse
import json
from pathlib import Path

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.decontaminate import Benchmark, DecontaminationSettings, build_index
from tokenmill.io import read_json


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--evalsets", required=True, help="carve_evalsets receipt")
    parser.add_argument("--holdout-dir", required=True)
    parser.add_argument("--settings", required=True, help="the `decontamination` config section without benchmarks, as JSON")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    receipt = read_json(args.evalsets)
    benchmarks = [Benchmark(b["name"], str(Path(args.holdout_dir) / b["path"]), b["format"], b["fields"])
                  for b in receipt["benchmarks"]]
    meta = build_index(benchmarks, DecontaminationSettings(**json.loads(args.settings)), args.out)
    print(json.dumps({k: v for k, v in meta.items() if k != "settings"}, indent=1))


if __name__ == "__main__":
    main()
