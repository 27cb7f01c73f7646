"""select: apply the selection policy to one part's stored attributes."""

import argparse
import json
from collections import Counter

from tokenmill.select import select_part


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", required=True)
    parser.add_argument("--part", required=True, help="the part's name (its rows in shared chunk files)")
    for name in ("langid", "dedup", "heuristics", "pii", "toxicity", "quality", "encoder", "decontaminate"):
        parser.add_argument(f"--{name}", required=True, help=f"the part's {name} attributes")
    parser.add_argument("--host-stats", required=True, help="host_stats of the part's snapshot")
    parser.add_argument("--thresholds", required=True, help="select_thresholds output")
    parser.add_argument("--policy", required=True, help="the validated `select` config section, as JSON")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    attributes = {name: getattr(args, name) for name in ("langid", "dedup", "heuristics", "pii", "toxicity",
                                                          "quality", "encoder", "decontaminate")}
    attributes["host_stats"] = args.host_stats
    table = select_part(args.docs, args.part, attributes, args.thresholds, args.out, json.loads(args.policy), args.seed)
    reasons = Counter(reason or "selected" for reason in table.column("reason").to_pylist())
    print(f"select: {table.num_rows} documents: {dict(sorted(reasons.items()))}")


if __name__ == "__main__":
    main()
