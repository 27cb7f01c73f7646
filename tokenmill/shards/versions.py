"""Dataset versions are manifests: what changed between two of them, and what was deleted.

A shard is identified by its content (the sha256 of its .bin and .idx), not by its name or
version folder, so `diff_manifests` says which shards a training cluster already holds and
which it must fetch. A legal takedown deletes data physically; `tombstone_source` records,
next to every manifest that listed the deleted shards, what they were and why they are
gone, so that loading an old manifest fails naming the tombstone instead of a missing file.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

from tokenmill.hashing import sha256_file
from tokenmill.io import read_json, write_json

TOMBSTONES = "tombstones.json"
SHARD_SUFFIXES = (".bin", ".idx", ".meta.json", ".docs.parquet")


def _content(shard: dict) -> tuple[str, str]:
    return shard["bin_sha256"], shard["idx_sha256"]


def diff_manifests(old: dict, new: dict) -> dict:
    """Shards added, removed and unchanged from `old` to `new`, by content, with bytes."""
    old_by, new_by = {_content(s): s for s in old["shards"]}, {_content(s): s for s in new["shards"]}

    def entries(keys, side):
        return [{"path": side[k]["path"], "source": side[k]["source"], "bin_bytes": side[k]["bin_bytes"],
                 "n_tokens": side[k]["n_tokens"]} for k in sorted(keys, key=lambda k: side[k]["path"])]

    diff = {"old": old["version"], "new": new["version"],
            "added": entries(new_by.keys() - old_by.keys(), new_by),
            "removed": entries(old_by.keys() - new_by.keys(), old_by),
            "unchanged": entries(new_by.keys() & old_by.keys(), new_by)}
    diff["bytes"] = {kind: sum(e["bin_bytes"] for e in diff[kind]) for kind in ("added", "removed", "unchanged")}
    return diff


def read_tombstones(manifest_path: str | os.PathLike) -> dict[str, dict]:
    """The tombstones recorded beside a manifest, by shard path."""
    path = Path(manifest_path).parent / TOMBSTONES
    return {t["path"]: t for t in read_json(path)["tombstones"]} if path.exists() else {}


def tombstone_source(manifest_paths: list[str], source: str, reason: str, raw_files: list[str],
                     date: str | None = None) -> list[dict]:
    """Delete `raw_files` and every shard of `source` listed by the manifests; record a
    tombstone for each deleted shard beside its manifest (merged with earlier ones). The
    manifests themselves are left as they were: they are the record of what a version was."""
    date = date or datetime.date.today().isoformat()
    raw = [{"path": path, "sha256": sha256_file(path), "bytes": os.path.getsize(path)} for path in raw_files]
    recorded = []
    for manifest_path in manifest_paths:
        root = Path(manifest_path).parent
        tombstones = read_tombstones(manifest_path)
        for shard in read_json(manifest_path)["shards"]:
            if shard["source"] != source or shard["path"] in tombstones:
                continue
            tombstones[shard["path"]] = {"path": shard["path"], "source": source, "bin_sha256": shard["bin_sha256"],
                                         "idx_sha256": shard["idx_sha256"], "bin_bytes": shard["bin_bytes"],
                                         "n_tokens": shard["n_tokens"], "reason": reason, "date": date,
                                         "raw_files": raw}
            recorded.append({"manifest": str(manifest_path), **tombstones[shard["path"]]})
        write_json(root / TOMBSTONES, {"tombstones": [tombstones[p] for p in sorted(tombstones)]})
        for path in tombstones:
            for suffix in SHARD_SUFFIXES:
                (root / f"{path}{suffix}").unlink(missing_ok=True)
    for path in raw_files:
        Path(path).unlink()
    return recorded
