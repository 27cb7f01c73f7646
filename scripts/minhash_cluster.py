"""minhash_cluster: one MPI job over every part of the plan: exact groups, near-duplicate
clusters and line counts. Launch with `mpiexec -n N` (or `srun --mpi=pmi2 -n N`)."""

import argparse
import logging

from mpi4py import MPI

from tokenmill.dedup.cluster import ClusterPart, ClusterSettings, run
from tokenmill.plan import read_plan


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True)
    parser.add_argument("--bucket-cap", type=int, default=10_000)
    parser.add_argument("--cross-snapshot", action="store_true")
    parser.add_argument("--cross-bands", type=int, default=8)
    parser.add_argument("--cross-rows", type=int, default=14)
    args = parser.parse_args(argv)
    comm = MPI.COMM_WORLD
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s rank {comm.Get_rank()} %(message)s")
    parts = [ClusterPart(row["source"], row["snapshot"], row["part"], row["signatures"], row["dedup"])
             for row in read_plan(args.plan)]
    settings = ClusterSettings(args.bucket_cap, args.cross_snapshot, args.cross_bands, args.cross_rows)
    run(comm, parts, settings)


if __name__ == "__main__":
    main()
