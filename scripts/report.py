"""report: the yield table of a dataset version (documents, bytes, tokens per stage) and its
contamination report."""

import argparse
import json

from tokenmill.io import read_json
from tokenmill.plan import read_plan
from tokenmill.report import PartOutputs, write_report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--benchmarks", required=True, help="decontamination benchmark names, as JSON")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("shard_dirs", nargs="+")
    args = parser.parse_args(argv)
    parts = [PartOutputs(row["source"], row["snapshot"], row["part"], row["stats"], row["select"], row["tokenize"],
                         row["decontaminate"])
             for row in read_plan(args.plan, version=args.version)]
    shard_dirs = {read_json(f"{path}/shards.json")["source"]: path for path in args.shard_dirs}
    write_report(parts, shard_dirs, json.loads(args.benchmarks), args.out_dir)
    for table in ("yield.tsv", "contamination.tsv"):
        with open(f"{args.out_dir}/{table}", encoding="utf-8") as handle:
            print(handle.read())


if __name__ == "__main__":
    main()
