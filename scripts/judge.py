"""judge: every selection rule but the choice among duplicates, for one part's documents."""

import argparse
import json
from collections import Counter

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.select.judge import judge_part


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", required=True)
    parser.add_argument("--part", required=True, help="the part's name (its rows in shared chunk files)")
    attribute_names = ["langid", "signatures", "minhash_cluster", "heuristics", "pii", "toxicity", "quality_fasttext",
                       "quality_naturalness", "quality_encoder", "decontaminate", "host_stats", "robots_state"]
    for name in attribute_names:
        parser.add_argument(f"--{name.replace('_', '-')}", required=True, help=f"the part's {name} attributes")
    parser.add_argument("--cross-snapshot-dedup", nargs="?", default=None,
                        help="the part's probe of the older snapshots (none for a source's first snapshot)")
    parser.add_argument("--later-cross-snapshot-dedup", nargs="*", default=[],
                        help="cross_snapshot_dedup of the later snapshots (when the newer copy is preferred)")
    parser.add_argument("--thresholds", required=True, help="select_thresholds output")
    parser.add_argument("--language-table", required=True, help="quality.language_table: per-language thresholds")
    parser.add_argument("--policy", required=True, help="the validated `select` config section, as JSON")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    attributes = {name: getattr(args, name) for name in attribute_names}
    attributes["cross_snapshot_dedup"] = args.cross_snapshot_dedup
    attributes["later_cross_snapshot_dedup"] = args.later_cross_snapshot_dedup
    table = judge_part(args.docs, args.part, attributes, args.thresholds, args.out, json.loads(args.policy), args.seed,
                       args.language_table)
    reasons = Counter(reason or "passes" for reason in table.column("reason").to_pylist())
    print(f"judge: {table.num_rows} documents, first rule failed (duplicates aside): {dict(sorted(reasons.items()))}")


if __name__ == "__main__":
    main()
