"""minhash_cluster: one MPI job over the parts of one snapshot: exact groups, near-duplicate
clusters, line counts and the snapshot's host stats. Launch with `mpiexec -n N` (or `srun --mpi=pmi2 -n N`)."""

import argparse
import logging
import os

from mpi4py import MPI

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.dedup.minhash_cluster import ClusterPart, ClusterSettings, run
from tokenmill.dedup.mpi import folder_of_all_ranks
from tokenmill.plan import snapshot_plan_rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True, help="the snapshot's plan (its parts, in order)")
    parser.add_argument("--bucket-cap", type=int, required=True, help="minhash.bucket_cap")
    parser.add_argument("--out-dir", required=True, help="one file per part, named as the plan's dedup column")
    parser.add_argument("--host-stats", required=True, help="the per-host counts of all the plan's parts (one file, by rank 0)")
    args = parser.parse_args(argv)
    comm = MPI.COMM_WORLD
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s rank {comm.Get_rank()} %(message)s")
    rows = snapshot_plan_rows(args.plan, "minhash_cluster", args.out_dir)
    with folder_of_all_ranks(comm, args.out_dir) as temp:
        parts = [ClusterPart(row["source"], row["snapshot"], row["part"], row["signatures"],
                             os.path.join(temp, os.path.basename(row["minhash_cluster"]))) for row in rows]
        run(comm, parts, ClusterSettings(args.bucket_cap), args.host_stats)


if __name__ == "__main__":
    main()
