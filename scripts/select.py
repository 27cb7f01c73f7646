"""select: one MPI job over the parts of one snapshot: keep the best copy of every exact group and
near-duplicate cluster and write the final selection of each part. Launch with `mpiexec -n N`
(or `srun --mpi=pmi2 -n N`)."""

import argparse
import json
import logging
import os

from mpi4py import MPI

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.dedup.mpi import folder_of_all_ranks
from tokenmill.io import write_json
from tokenmill.plan import snapshot_plan_rows
from tokenmill.select.select import select_snapshot


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True, help="the snapshot's plan (its parts, in order)")
    parser.add_argument("--version", required=True)
    parser.add_argument("--policy", required=True, help="the validated `select` config section, as JSON")
    parser.add_argument("--out-dir", required=True, help="one file per part, named as the plan's select column")
    parser.add_argument("--summary", required=True, help="the snapshot's counts of groups and clusters (JSON)")
    args = parser.parse_args(argv)
    comm = MPI.COMM_WORLD
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s rank {comm.Get_rank()} %(message)s")
    rows = snapshot_plan_rows(args.plan, "select", args.out_dir, version=args.version)
    with folder_of_all_ranks(comm, args.out_dir) as temp:
        outputs = [os.path.join(temp, os.path.basename(row["select"])) for row in rows]
        counts = select_snapshot([(row["judge"], out) for row, out in zip(rows, outputs)], json.loads(args.policy), comm)
    if comm.Get_rank() == 0:
        (source, snapshot), = {(row["source"], row["snapshot"]) for row in rows}
        write_json(args.summary, {"source": source, "snapshot": snapshot, **counts})
        print(f"select: {len(rows)} parts on {comm.Get_size()} ranks; {counts}")


if __name__ == "__main__":
    main()
