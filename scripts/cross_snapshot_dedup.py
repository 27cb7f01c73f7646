"""cross_snapshot_dedup: tag the documents of one snapshot that repeat a survivor of an
older snapshot of the same source (probing the older snapshots' index generations)."""

import argparse
import logging

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.dedup.cross_snapshot import SnapshotPart, probe_snapshot
from tokenmill.plan import read_plan


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True, help="the snapshot's plan")
    parser.add_argument("--bands", type=int, required=True)
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("generations", nargs="*", help="index generations of the older snapshots, oldest first")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    parts = [SnapshotPart(row["part"], row["signatures"], row["minhash_cluster"]) for row in read_plan(args.plan)]
    probe_snapshot(parts, args.generations, args.bands, args.rows, args.out)


if __name__ == "__main__":
    main()
