"""chain_model: the topics of one snapshot's documents (IDF of its common words, seeded k-means
centroids), learnt on the first documents of each of its parts (chains.sample_documents in all),
which its chain_vectors jobs read."""

import argparse
import logging

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.chains import add_chain_arguments, chain_arguments, fit_files, sample_per_part
from tokenmill.plan import read_plan


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True, help="the snapshot's plan (its parts, in order)")
    add_chain_arguments(parser)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    settings, params = chain_arguments(args)
    rows = read_plan(args.plan)
    model = fit_files([row["docs"] for row in rows], [row["langid"] for row in rows], args.out, params,
                      sample_per_part(settings, len(rows)))
    print(f"chain_model: {len(rows)} parts, {len(model.word_keys)} words, {len(model.centroids)} topics")


if __name__ == "__main__":
    main()
