"""cross_snapshot_dedup: tag the documents of one part that repeat a survivor of an older
snapshot of the same source (probing the older snapshots' index generations)."""

import argparse
import logging

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.dedup.cross_snapshot import probe_part


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--part", required=True, help="the part's name")
    parser.add_argument("--signatures", required=True, help="the part's MinHash signatures (score)")
    parser.add_argument("--bands", type=int, required=True)
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("generations", nargs="*", help="index generations of the older snapshots, oldest first")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    probe_part(args.part, args.signatures, args.generations, args.bands, args.rows, args.out)


if __name__ == "__main__":
    main()
