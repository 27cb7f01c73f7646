"""tokenize: encode one part's selected documents, EOD-terminated, sorted by shuffle key."""

import argparse

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.tokenize import tokenize_part
from tokenmill.progress import log_progress_to_stderr


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", required=True)
    parser.add_argument("--select", required=True)
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--tokenizer-sha256", required=True,
                        help="tokenizer.sha256, the pin; empty (--tokenizer-sha256=) accepts the file as it is")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--chains", help="the part's chained documents (chain_groups), for a source chains.sources names")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    log_progress_to_stderr()
    count = tokenize_part(args.docs, args.select, args.tokenizer, args.tokenizer_sha256 or None, args.seed, args.out,
                          chains_path=args.chains)
    print(f"tokenize: {count} documents -> {args.out}")


if __name__ == "__main__":
    main()
