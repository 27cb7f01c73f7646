"""minhash_signatures: content hash, line hashes and banded MinHash signature of every document of a part."""

import argparse

from tokenmill.dedup.minhash import MinHashParams, signatures_part


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--permutations", type=int, default=112)
    parser.add_argument("--bands", type=int, default=14)
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--ngram", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    params = MinHashParams(args.permutations, args.bands, args.rows, args.ngram, args.seed)
    count = signatures_part(args.docs, args.out, params)
    print(f"minhash_signatures: {count} documents, K={params.permutations}, b={params.bands}, r={params.rows} "
          f"(threshold ~{params.threshold:.3f})")


if __name__ == "__main__":
    main()
