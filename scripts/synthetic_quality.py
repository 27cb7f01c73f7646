"""synthetic_quality: one snapshot of a synthetic source measured against its sources, per prompt
template: failures, grounding, diversity and the real-vs-synthetic distinguisher's AUC."""

import argparse
import json

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.plan import read_plan
from tokenmill.synth.quality import snapshot_quality


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True, help="the plan of the synthetic snapshot")
    parser.add_argument("--origin-plan", required=True, help="the plan of the snapshot it rewrites")
    parser.add_argument("--settings", required=True, help="the synthetic.quality config section, as JSON")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    origin = {row["part"]: row["docs"] for row in read_plan(args.origin_plan)}
    rows = read_plan(args.plan)
    parts = [(row["docs"], row["quarantine"], origin[row["part"]]) for row in rows]
    summary = snapshot_quality(rows[0]["source"], rows[0]["snapshot"], parts, json.loads(args.settings), args.out)
    for name, row in summary["templates"].items():
        print(f"{name}: {row['outputs']} outputs, failures {row['failures']}, grounding {row['mean_grounding']}, "
              f"distinguisher AUC {row['distinguisher']['auc']}")


if __name__ == "__main__":
    main()
