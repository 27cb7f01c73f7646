"""score_quality_encoder: the encoder's quality probability for every document of a chunk of
parts, one file for the chunk (on the GPU when there is one)."""

import argparse
import json

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.quality.encoder import score_encoder_parts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--parts", nargs="+", required=True, help="part names, in the order of --docs")
    parser.add_argument("--docs", nargs="+", required=True)
    args = parser.parse_args(argv)
    if len(args.parts) != len(args.docs):
        parser.error("--parts and --docs must list the same number of parts")
    print(json.dumps(score_encoder_parts(list(zip(args.parts, args.docs)), args.model, args.out)))


if __name__ == "__main__":
    main()
