"""cross_snapshot_index: one snapshot's near-duplicate survivors as a generation of the
source's persistent band index (sorted runs behind Bloom filters), built by the ranks of an MPI
job: each rank writes the bucket of band keys it owns."""

import argparse

import tokenmill.job  # noqa: F401  (first: see its docstring)
from mpi4py import MPI

from tokenmill.dedup.cross_snapshot import SnapshotPart, build_generation
from tokenmill.plan import read_plan


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True, help="the snapshot's plan")
    parser.add_argument("--bands", type=int, required=True)
    parser.add_argument("--rows", type=int, required=True)
    parser.add_argument("--false-positive-rate", type=float, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    rows = read_plan(args.plan)
    parts = [SnapshotPart(row["part"], row["signatures"], row["minhash_cluster"]) for row in rows]
    comm = MPI.COMM_WORLD
    bucket = build_generation(rows[0]["snapshot"], parts, args.bands, args.rows, args.false_positive_rate, args.out,
                              comm)
    print(f"cross_snapshot_index: rank {comm.Get_rank()} of {comm.Get_size()}: {len(bucket.doc_ids)} survivors of "
          f"{rows[0]['source']}/{rows[0]['snapshot']} in its bucket -> {args.out}")


if __name__ == "__main__":
    main()
