"""select: keep the best copy of every exact group and near-duplicate cluster of one snapshot and
write the final selection of each of its parts."""

import argparse
import json
import os
from collections import Counter

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.io import atomic_output, read_parquet, write_json
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
    rows = read_plan(args.plan, version=args.version)
    for row in rows:
        if os.path.dirname(row["select"]) != args.out_dir.rstrip("/"):
            raise ValueError(f"{args.plan}: part {row['part']} belongs in {os.path.dirname(row['select'])}, "
                             f"not in {args.out_dir}")
    with atomic_output(args.out_dir, directory=True) as temp:
        outputs = [str(temp / os.path.basename(row["select"])) for row in rows]
        counts = select_snapshot([(row["judge"], out) for row, out in zip(rows, outputs)], json.loads(args.policy))
        reasons = Counter(reason or "selected" for out in outputs
                          for reason in read_parquet(out, ["reason"]).column("reason").to_pylist())
    (source, snapshot), = {(row["source"], row["snapshot"]) for row in rows}
    write_json(args.summary, {"source": source, "snapshot": snapshot, **counts})
    print(f"select: {len(rows)} parts: {dict(sorted(reasons.items()))}; {counts}")


if __name__ == "__main__":
    main()
