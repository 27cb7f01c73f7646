"""chain_groups: one MPI job over the parts of one snapshot: its selected documents joined into
chains (tokenmill.chains.chain_snapshot), a file per part of its chained documents' groups. Launch
with `mpiexec -n N` (or `srun --mpi=pmi2 -n N`)."""

import argparse
import logging
import os

from mpi4py import MPI

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.chains import ChainPart, add_chain_arguments, chain_arguments, chain_snapshot
from tokenmill.dedup.mpi import folder_of_all_ranks
from tokenmill.plan import snapshot_plan_rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True, help="the snapshot's plan (its parts, in order)")
    parser.add_argument("--version", required=True)
    add_chain_arguments(parser)
    parser.add_argument("--out-dir", required=True, help="one file per part, named as the plan's chain_groups column")
    args = parser.parse_args(argv)
    comm = MPI.COMM_WORLD
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s rank {comm.Get_rank()} %(message)s")
    rows = snapshot_plan_rows(args.plan, "chain_groups", args.out_dir, version=args.version)
    _, params = chain_arguments(args)
    with folder_of_all_ranks(comm, args.out_dir) as temp:
        parts = [ChainPart(row["part"], row["chain_vectors"], row["select"],
                           os.path.join(temp, os.path.basename(row["chain_groups"]))) for row in rows]
        chained = comm.allreduce(chain_snapshot(comm, parts, params))
    if comm.Get_rank() == 0:
        print(f"chain_groups: {len(rows)} parts on {comm.Get_size()} ranks; {chained} documents in chains")


if __name__ == "__main__":
    main()
