"""chain_vectors: each document of one part as its snapshot's chains read it: its topic (the nearest
centroid of chain_model), its estimated tokens, its topic vector and its MinHash values."""

import argparse
import logging

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.chains import add_chain_arguments, chain_arguments, part_file, read_model


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", required=True)
    parser.add_argument("--signatures", required=True, help="the part's MinHash signatures (score)")
    parser.add_argument("--langid", required=True, help="the part's languages (score)")
    parser.add_argument("--model", required=True, help="the snapshot's chain_model")
    add_chain_arguments(parser)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    _, params = chain_arguments(args)
    written = part_file(args.docs, args.signatures, args.out, read_model(args.model), params, langid_path=args.langid)
    print(f"chain_vectors: {written} documents")


if __name__ == "__main__":
    main()
