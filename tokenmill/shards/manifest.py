"""manifest: the dataset version, listing every shard that passed validation with its sha256 and
counts, and pinning the tokenizer the shards were tokenized with.

The version keeps its own copy of tokenizer.json beside the manifest, which names it by a path
relative to itself (as it names the shards), so that the version directory is complete on its
own: copied elsewhere, it still holds the tokenizer that decodes its tokens.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tokenmill.hashing import sha256_file
from tokenmill.io import atomic_output, read_json, write_json, write_tsv
from tokenmill.shards.validation import CHECKS, failed_checks
from tokenmill.shards.writer import read_listings
from tokenmill.tokenize import EOD_TOKEN, load_tokenizer

VALIDATION_COLUMNS = ["source", "snapshot", "shard", "passed", "n_docs", "n_tokens",
                      *(column for check in CHECKS for column in (check, f"{check}_limit")), "failed"]


def _validation_row(meta: dict) -> dict:
    validation = meta["validation"]
    row = {"source": meta["source"], "snapshot": meta["snapshot"], "shard": meta["name"],
           "passed": validation["passed"], "n_docs": meta["n_docs"], "n_tokens": meta["n_tokens"],
           "failed": ",".join(name for name, check in validation["checks"].items() if not check["passed"])}
    for name in CHECKS:
        row[name], row[f"{name}_limit"] = validation["checks"][name]["value"], validation["checks"][name]["limit"]
    return row


def write_validation_table(path: str | os.PathLike, metas: list[dict]) -> None:
    """One row per shard with every check's value and limit (a person reads this, the manifest
    acts on it)."""
    write_tsv(path, VALIDATION_COLUMNS, [_validation_row(meta) for meta in metas])


def build_manifest(version: str, shard_dirs: list[str], manifest_path: str, validation_path: str, tokenizer: dict,
                   config_sha256: str, code_version: str) -> dict:
    """List every shard that passed validation with its path (relative to the manifest), source,
    snapshot, counts and sha256, re-hashing each file so that the manifest never vouches for
    bytes it did not see; name the failing shards under `excluded_shards` with their failing
    checks, and write every shard's check values to `validation_path`. Shards are listed by
    source, snapshot, then the order their snapshot cut them in, whatever the order of
    `shard_dirs`."""
    root = Path(manifest_path).parent
    shards, excluded, sources, metas = [], [], {}, []
    for shard_dir, listing in read_listings(shard_dirs):
        for name in listing["shards"]:
            meta = read_json(shard_dir / f"{name}.meta.json")
            if "validation" not in meta:
                raise ValueError(f"{shard_dir}/{name}.meta.json has no validation (written by an older "
                                 "tokenmill); rerun write_shards")
            metas.append(meta)
            prefix = os.path.relpath(shard_dir / name, root)
            totals = sources.setdefault(meta["source"], {"tier": meta["tier"], "shards": 0, "n_docs": 0, "n_tokens": 0,
                                                         "excluded_shards": 0})
            if not meta["validation"]["passed"]:
                excluded.append({"source": meta["source"], "snapshot": meta["snapshot"], "name": name, "path": prefix,
                                 "n_docs": meta["n_docs"], "n_tokens": meta["n_tokens"],
                                 "reasons": failed_checks(meta["validation"])})
                totals["excluded_shards"] += 1
                continue
            for kind in ("bin", "idx", "docs"):
                actual = sha256_file(shard_dir / meta[kind]["path"])
                if actual != meta[kind]["sha256"]:
                    raise ValueError(f"{shard_dir}/{meta[kind]['path']}: sha256 {actual} "
                                     f"differs from its meta.json ({meta[kind]['sha256']})")
            if meta["tokenizer_sha256"] != tokenizer["sha256"]:
                raise ValueError(f"{shard_dir}/{name}: tokenized with {meta['tokenizer_sha256']}, "
                                 f"manifest pins {tokenizer['sha256']}")
            shards.append({
                "path": prefix,
                "source": meta["source"],
                "snapshot": meta["snapshot"],
                "n_docs": meta["n_docs"],
                "n_tokens": meta["n_tokens"],
                "dtype_code": meta["dtype_code"],
                "bin_sha256": meta["bin"]["sha256"],
                "bin_bytes": meta["bin"]["bytes"],
                "idx_sha256": meta["idx"]["sha256"],
                "license_ids": meta["license_ids"],
            })
            totals["shards"] += 1
            totals["n_docs"] += meta["n_docs"]
            totals["n_tokens"] += meta["n_tokens"]
    manifest = {
        "format": "tokenmill-manifest/1",
        "version": version,
        "tokenizer": tokenizer,
        "config_sha256": config_sha256,
        "code_version": code_version,
        "sources": dict(sorted(sources.items())),
        "n_docs": sum(s["n_docs"] for s in shards),
        "n_tokens": sum(s["n_tokens"] for s in shards),
        "shards": shards,
        "excluded_shards": excluded,
    }
    write_validation_table(validation_path, metas)
    write_json(manifest_path, manifest)
    return manifest


def copy_tokenizer(tokenizer_path: str, sha256: str, tokenizer_copy: str) -> None:
    """Copy tokenizer.json to `tokenizer_copy`, refusing (and leaving nothing there) a copy
    whose sha256 is not `sha256`, the one the manifest pins."""
    with atomic_output(tokenizer_copy) as temp:
        shutil.copyfile(tokenizer_path, temp)
        actual = sha256_file(temp)
        if actual != sha256:
            raise ValueError(f"{tokenizer_copy}: the copy of {tokenizer_path} has sha256 {actual}, "
                             f"the manifest pins {sha256}")


def pin_tokenizer(tokenizer_path: str, tokenizer_copy: str, manifest_path: str) -> dict:
    """Copy the tokenizer to `tokenizer_copy` and return the manifest's `tokenizer` entry: the
    copy's path relative to the manifest, its sha256, vocabulary size and end-of-document token."""
    tokenizer, sha256 = load_tokenizer(tokenizer_path)
    copy_tokenizer(tokenizer_path, sha256, tokenizer_copy)
    return {"path": os.path.relpath(tokenizer_copy, os.path.dirname(os.path.abspath(manifest_path))),
            "sha256": sha256, "vocab_size": tokenizer.get_vocab_size(),
            "eod_token": EOD_TOKEN, "eod_id": tokenizer.token_to_id(EOD_TOKEN)}


def publish_manifest(version: str, tokenizer_path: str, tokenizer_copy: str, shard_dirs: list[str],
                     manifest_path: str, validation_path: str, config_sha256: str, code_version: str) -> dict:
    """The version's tokenizer copy, shard validation table and manifest (see build_manifest),
    which refuses shards tokenized with another tokenizer."""
    pins = pin_tokenizer(tokenizer_path, tokenizer_copy, manifest_path)
    return build_manifest(version, shard_dirs, manifest_path, validation_path, pins, config_sha256, code_version)
