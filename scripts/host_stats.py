"""host_stats: urls and distinct-content share of every host of one snapshot."""

import argparse

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.select.host_stats import host_stats


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--signatures", nargs="+", required=True, help="the snapshot's signatures files (score)")
    parser.add_argument("--minhash-cluster", nargs="+", required=True, help="their minhash_cluster attributes, in the same order")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    if len(args.signatures) != len(args.minhash_cluster):
        parser.error("--signatures and --minhash-cluster need one file per part each")
    table = host_stats(list(zip(args.signatures, args.minhash_cluster)), args.out)
    print(f"host_stats: {table.num_rows} hosts -> {args.out}")


if __name__ == "__main__":
    main()
