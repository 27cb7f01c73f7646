"""write_shards: merge a source's tokenized parts into shuffled Megatron .bin/.idx shards."""

import argparse

from tokenmill.plan import read_plan
from tokenmill.shards import TokenizedPart, write_shards
from tokenmill.tokenize import load_tokenizer, token_dtype


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True)
    parser.add_argument("--source", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--tier", required=True)
    parser.add_argument("--license-id", required=True)
    parser.add_argument("--target-tokens", type=int, required=True)
    parser.add_argument("--out", required=True, help="shard directory (written atomically)")
    args = parser.parse_args(argv)
    tokenizer, _ = load_tokenizer(args.tokenizer)
    parts = [TokenizedPart(row["snapshot"], row["part"], row["tokenize"]) for row in read_plan(args.plan, args.source, args.version)]
    metas = write_shards(args.source, parts, args.out, args.target_tokens, args.license_id, args.tier,
                         args.version, token_dtype(tokenizer.get_vocab_size()))
    for meta in metas:
        print(f"write_shards: {meta['name']}: {meta['n_docs']} documents, {meta['n_tokens']} tokens")


if __name__ == "__main__":
    main()
