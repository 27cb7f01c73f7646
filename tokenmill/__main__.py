"""python -m tokenmill where [CONFIG]: where a finished run put its manifest, shards and report."""

from __future__ import annotations

import argparse
import os

import yaml

from tokenmill.config import validate
from tokenmill.io import read_json


def where(config_path: str, results: str = "results") -> int:
    with open(config_path, encoding="utf-8") as handle:
        config = validate(yaml.safe_load(handle))
    version = config["version"]
    manifest_path = os.path.join(results, "shards", version, "manifest.json")
    if not os.path.exists(manifest_path):
        print(f"no manifest yet for version {version} ({manifest_path}); run snakemake first")
        return 1
    manifest = read_json(manifest_path)
    print(f"version {version}: {manifest['n_docs']} documents, {manifest['n_tokens']} tokens "
          f"in {len(manifest['shards'])} shards (tokenizer sha256 {manifest['tokenizer']['sha256'][:12]}...)")
    for source, totals in manifest["sources"].items():
        print(f"  {source:<20} {totals['n_docs']:>8} docs {totals['n_tokens']:>12} tokens {totals['shards']:>4} shards")
    print(f"manifest: {manifest_path}")
    print(f"shards:   {os.path.join(results, 'shards', version)}/<source>/")
    print(f"yield:    {os.path.join(results, 'report', version, 'yield.tsv')}")
    print(f"reasons:  {os.path.join(results, 'report', version, 'reasons.tsv')}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tokenmill", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    where_parser = commands.add_parser("where", help="print the paths of a finished run")
    where_parser.add_argument("config", nargs="?", default="config/config.yaml")
    args = parser.parse_args(argv)
    return where(args.config)


if __name__ == "__main__":
    raise SystemExit(main())
