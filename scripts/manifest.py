"""manifest: list every shard of a dataset version with its sha256, counts and pins."""

import argparse
import os
import shutil

from tokenmill.io import atomic_output
from tokenmill.shards.writer import build_manifest
from tokenmill.tokenize import EOD_TOKEN, load_tokenizer


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--version", required=True)
    parser.add_argument("--tokenizer", required=True)
    parser.add_argument("--config-sha256", required=True)
    parser.add_argument("--code-version", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--validation-table", required=True, help="TSV of every shard's validation checks")
    parser.add_argument("--tokenizer-copy", required=True, help="where the version keeps its own tokenizer.json")
    parser.add_argument("shard_dirs", nargs="+")
    args = parser.parse_args(argv)
    tokenizer, sha256 = load_tokenizer(args.tokenizer)
    with atomic_output(args.tokenizer_copy) as temp:
        shutil.copyfile(args.tokenizer, temp)
    load_tokenizer(args.tokenizer_copy, sha256)
    relative = os.path.relpath(args.tokenizer_copy, os.path.dirname(os.path.abspath(args.out)))
    pins = {"path": relative, "sha256": sha256, "vocab_size": tokenizer.get_vocab_size(),
            "eod_token": EOD_TOKEN, "eod_id": tokenizer.token_to_id(EOD_TOKEN)}
    manifest = build_manifest(args.version, args.shard_dirs, args.out, args.validation_table, pins,
                              args.config_sha256, args.code_version)
    print(f"manifest: {len(manifest['shards'])} shards, {manifest['n_docs']} documents, "
          f"{manifest['n_tokens']} tokens -> {args.out}")
    for shard in manifest["excluded_shards"]:
        print(f"manifest: left out {shard['path']} ({shard['n_docs']} documents): {'; '.join(shard['reasons'])}")
    print(f"shard validation: {args.validation_table}")


if __name__ == "__main__":
    main()
