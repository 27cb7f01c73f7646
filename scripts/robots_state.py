"""robots_state: every robots.txt capture the config names, as the host table select judges by."""

import argparse
import json

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.robots import write_state


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--captures", required=True, help="the robots config section (warc, files), as JSON")
    parser.add_argument("--out", required=True)
    parser.add_argument("--summary", required=True)
    args = parser.parse_args(argv)
    summary = write_state(json.loads(args.captures), args.out, args.summary)
    print(f"robots_state: {summary['captures']} captures of {summary['hosts']} hosts {summary['outcomes']} -> {args.out}")
    for error in summary["read_errors"]:
        print(f"read error (the captures before it are kept): {error}")


if __name__ == "__main__":
    main()
