"""score_quality: probability of the positive (high-quality) class for every document of a part."""

import argparse

from tokenmill.quality.classifier import score_quality_part
from tokenmill.progress import log_progress_to_stderr


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    log_progress_to_stderr()
    print(f"score_quality: {score_quality_part(args.docs, args.model, args.out)} documents")


if __name__ == "__main__":
    main()
