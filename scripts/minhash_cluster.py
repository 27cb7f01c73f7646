"""minhash_cluster: one MPI job over the parts of one snapshot: exact groups, near-duplicate
clusters, line counts and the snapshot's host stats. Launch with `mpiexec -n N` (or `srun --mpi=pmi2 -n N`)."""

import argparse
import logging
import os
from pathlib import Path

from mpi4py import MPI

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.dedup.minhash_cluster import ClusterPart, ClusterSettings, run
from tokenmill.io import publish_directory, temp_directory_for
from tokenmill.plan import read_plan


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True, help="the snapshot's plan (its parts, in order)")
    parser.add_argument("--bucket-cap", type=int, required=True, help="minhash.bucket_cap")
    parser.add_argument("--out-dir", required=True, help="one file per part, named as the plan's dedup column")
    parser.add_argument("--host-stats", required=True, help="the per-host counts of all the plan's parts (one file, by rank 0)")
    args = parser.parse_args(argv)
    comm = MPI.COMM_WORLD
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s rank {comm.Get_rank()} %(message)s")
    # Every rank writes its parts into one temporary folder that rank 0 renames when all
    # are done: a killed job never leaves a folder that looks complete.
    temp = comm.bcast(str(temp_directory_for(args.out_dir)) if comm.Get_rank() == 0 else None)
    parts = []
    for row in read_plan(args.plan):
        if os.path.dirname(row["minhash_cluster"]) != args.out_dir.rstrip("/"):
            raise ValueError(f"{args.plan}: part {row['part']} belongs in {os.path.dirname(row['dedup'])}, "
                             f"not in {args.out_dir}")
        parts.append(ClusterPart(row["source"], row["snapshot"], row["part"], row["signatures"],
                                 os.path.join(temp, os.path.basename(row["minhash_cluster"]))))
    run(comm, parts, ClusterSettings(args.bucket_cap), args.host_stats)
    if comm.Get_rank() == 0:
        publish_directory(Path(temp), args.out_dir)


if __name__ == "__main__":
    main()
