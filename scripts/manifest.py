"""manifest: list every shard of a dataset version with its sha256, counts and pins."""

import argparse

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.shards.manifest import publish_manifest


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
    manifest = publish_manifest(args.version, args.tokenizer, args.tokenizer_copy, args.shard_dirs, args.out,
                                args.validation_table, args.config_sha256, args.code_version)
    print(f"manifest: {len(manifest['shards'])} shards, {manifest['n_docs']} documents, "
          f"{manifest['n_tokens']} tokens -> {args.out}")
    for shard in manifest["excluded_shards"]:
        print(f"manifest: left out {shard['path']} ({shard['n_docs']} documents): {'; '.join(shard['reasons'])}")
    print(f"shard validation: {args.validation_table}")


if __name__ == "__main__":
    main()
