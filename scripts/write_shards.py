"""write_shards: merge one shard group of a snapshot's tokenized parts into shuffled, content-named Megatron
.bin/.idx shards."""

import argparse
import json

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.plan import read_plan
from tokenmill.shards.validation import ValidationLimits, failed_checks
from tokenmill.shards.writer import TokenizedPart, write_shards
from tokenmill.tokenize import load_tokenizer, token_dtype


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True, help="the snapshot's plan")
    parser.add_argument("--source", required=True)
    parser.add_argument("--snapshot", required=True)
    parser.add_argument("--group", type=int, required=True, help="the shard group this job writes (0-based)")
    parser.add_argument("--groups", type=int, required=True, help="the snapshot's shard groups")
    parser.add_argument("--version", required=True, help="fills in the plan's versioned paths")
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--tier", required=True)
    parser.add_argument("--license-id", required=True)
    parser.add_argument("--target-tokens", type=int, required=True)
    parser.add_argument("--validation", required=True, help="the shards.validation config section, as JSON")
    parser.add_argument("--out", required=True, help="shard directory (written atomically)")
    args = parser.parse_args(argv)
    tokenizer, _ = load_tokenizer(args.tokenizer)
    parts = [TokenizedPart(row["snapshot"], row["part"], row["tokenize"], row["select"])
             for row in read_plan(args.plan, args.source, args.version)]
    metas = write_shards(args.source, args.snapshot, parts, args.out, args.target_tokens, args.license_id, args.tier,
                         token_dtype(tokenizer.get_vocab_size()), ValidationLimits(**json.loads(args.validation)),
                         args.group, args.groups)
    for meta in metas:
        verdict = "passed" if meta["validation"]["passed"] else "FAILED " + "; ".join(failed_checks(meta["validation"]))
        print(f"write_shards: {meta['name']}: {meta['n_docs']} documents, {meta['n_tokens']} tokens, "
              f"validation {verdict}")


if __name__ == "__main__":
    main()
