"""report: the yield table of a dataset version (documents, bytes, tokens per stage)."""

import argparse

from tokenmill.io import read_json
from tokenmill.plan import read_plan
from tokenmill.report import PartOutputs, write_report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--yield-table", required=True)
    parser.add_argument("--reasons", required=True)
    parser.add_argument("--unclaimed", required=True, help="listing of the documents no language claimed")
    parser.add_argument("shard_dirs", nargs="+")
    args = parser.parse_args(argv)
    parts = [PartOutputs(row["source"], row["snapshot"], row["part"], row["stats"], row["select"], row["tokenize"])
             for row in read_plan(args.plan, version=args.version)]
    shard_dirs = {read_json(f"{path}/shards.json")["source"]: path for path in args.shard_dirs}
    write_report(parts, shard_dirs, args.yield_table, args.reasons, args.unclaimed)
    with open(args.yield_table, encoding="utf-8") as handle:
        print(handle.read())


if __name__ == "__main__":
    main()
