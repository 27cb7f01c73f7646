"""select: one MPI job over the parts of one snapshot: keep the best copy of every exact group and
near-duplicate cluster and write the final selection of each part. Launch with `mpiexec -n N`
(or `srun --mpi=pmi2 -n N`)."""

import argparse
import json
import logging
import os
from pathlib import Path

from mpi4py import MPI

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.io import publish_directory, temp_directory_for, write_json
from tokenmill.plan import read_plan
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
    rows = read_plan(args.plan, version=args.version)
    for row in rows:
        if os.path.dirname(row["select"]) != args.out_dir.rstrip("/"):
            raise ValueError(f"{args.plan}: part {row['part']} belongs in {os.path.dirname(row['select'])}, "
                             f"not in {args.out_dir}")
    # Every rank writes its parts into one temporary folder that rank 0 renames when all are done.
    temp = comm.bcast(str(temp_directory_for(args.out_dir)) if comm.Get_rank() == 0 else None)
    outputs = [os.path.join(temp, os.path.basename(row["select"])) for row in rows]
    counts = select_snapshot([(row["judge"], out) for row, out in zip(rows, outputs)], json.loads(args.policy), comm)
    comm.Barrier()
    if comm.Get_rank() == 0:
        publish_directory(Path(temp), args.out_dir)
        (source, snapshot), = {(row["source"], row["snapshot"]) for row in rows}
        write_json(args.summary, {"source": source, "snapshot": snapshot, **counts})
        print(f"select: {len(rows)} parts on {comm.Get_size()} ranks; {counts}")


if __name__ == "__main__":
    main()
