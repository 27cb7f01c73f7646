"""select: apply the selection policy to one part's stored attributes."""

import argparse
import json
from collections import Counter

from tokenmill.select import select_part


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", required=True)
    parser.add_argument("--langid", required=True)
    parser.add_argument("--dedup", required=True, help="the part's minhash_cluster attributes")
    parser.add_argument("--policy", required=True, help="the validated `select` config section, as JSON")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    table = select_part(args.docs, args.langid, args.dedup, args.out, json.loads(args.policy))
    reasons = Counter(reason or "selected" for reason in table.column("reason").to_pylist())
    print(f"select: {table.num_rows} documents: {dict(sorted(reasons.items()))}")


if __name__ == "__main__":
    main()
