"""score_heuristics: quality metrics (Gopher, C4, FineWeb), PII spans and word-list toxicity
for every document of a part, one side-car file each."""

import argparse

from tokenmill.quality.heuristics import score_heuristics_part
from tokenmill.quality.pii import pii_part
from tokenmill.quality.toxicity import toxicity_part
from tokenmill.progress import log_progress_to_stderr


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", required=True)
    parser.add_argument("--wordlist", required=True)
    parser.add_argument("--heuristics", required=True, help="output: Gopher, C4 and FineWeb metrics")
    parser.add_argument("--pii", required=True, help="output: PII spans and counts")
    parser.add_argument("--toxicity", required=True, help="output: toxicity score")
    args = parser.parse_args(argv)
    log_progress_to_stderr()
    count = score_heuristics_part(args.docs, args.heuristics)
    pii_part(args.docs, args.pii)
    toxicity_part(args.docs, args.toxicity, args.wordlist)
    print(f"score_heuristics: {count} documents")


if __name__ == "__main__":
    main()
