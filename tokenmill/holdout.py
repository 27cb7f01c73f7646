"""The holdout: evaluation data set aside before anything touches the training data.

Three things are carved, write-once (a carved file is read-only, and carving it again with
different content is an error, never an overwrite):
- the benchmark sets named in config, copied into `evalsets/`;
- a perpetual web holdout: every record whose url hash falls in a fixed residue class
  (hash(url) % modulus == residue), copied byte for byte into `web/`;
- a time-forward slice: records fetched after a cutoff, copied into `time_forward/`.

Extraction carves the web and time-forward records of each input file as it reads the file
(one carved file per input file and reason, named after the file, so that the holdout does not
depend on how files are grouped into parts) and skips them itself, so no holdout record can
reach training output. `manifest.json` lists the sha256 of every carved file, and is refused
when its hash differs from the one pinned in config.
"""

from __future__ import annotations

import gzip
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from tokenmill.hashing import sha256_bytes, sha256_file
from tokenmill.io import atomic_output, read_json, write_json
from tokenmill.hashing import url_hash

REASONS = ("web", "time_forward")


class HoldoutError(RuntimeError):
    pass


@dataclass(frozen=True)
class HoldoutRules:
    modulus: int
    residue: int
    cutoff: str | None  # "YYYY-MM-DDTHH:MM:SSZ"; records fetched after it are held out
    time_forward_applies: bool  # the cutoff applies to this source

    @classmethod
    def from_config(cls, section: dict, source: str) -> "HoldoutRules":
        forward = section["time_forward"]
        applies = forward["cutoff"] is not None and (forward["sources"] is None or source in forward["sources"])
        return cls(section["web"]["modulus"], section["web"]["residue"], forward["cutoff"], applies)

    def reason(self, url: str | None, fetch_ts: str | None) -> str | None:
        """'web', 'time_forward' or None for a record with this url and (normalized) fetch time."""
        if url and int(url_hash(url), 16) % self.modulus == self.residue:
            return "web"
        if self.time_forward_applies and fetch_ts and fetch_ts > self.cutoff:
            return "time_forward"
        return None


def write_once(path: Path, data: bytes) -> str:
    """Write `data` to `path` read-only; 'written', or 'unchanged' if identical bytes are
    already there. Different bytes at an existing path are refused."""
    if path.exists():
        existing = sha256_file(path)
        if existing == sha256_bytes(data):
            return "unchanged"
        raise HoldoutError(f"{path} is already carved with different content (sha256 {existing}); the holdout "
                           f"is write-once: move it away deliberately before carving again")
    with atomic_output(path) as temp:
        temp.write_bytes(data)
    os.chmod(path, stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    return "written"


def carve_file(held: dict[str, list[bytes]], kind: str, holdout_dir: str, relative_name: str) -> list[dict]:
    """One input file's held-out records (`held[reason]`: records as stored, in file order) into
    `{holdout_dir}/{reason}/{relative_name}.warc.gz` (or `.jsonl.gz`, or `.pdf.gz`: a PDF is one
    record; a repository archive `.repository.gz`), write-once; the receipt entry of each file written."""
    suffix = {"warc": ".warc.gz", "jsonl": ".jsonl.gz", "pdf": ".pdf.gz", "code": ".repository.gz",
              "synthetic": ".jsonl.gz"}[kind]
    files = []
    for reason in REASONS:
        pieces = held.get(reason)
        if not pieces:
            continue
        data = b"".join(pieces)
        if kind != "warc" or not data.startswith(b"\x1f\x8b"):  # an uncompressed WARC is carved gzipped
            data = gzip.compress(data, compresslevel=6, mtime=0)
        relative = f"{reason}/{relative_name}{suffix}"
        status = write_once(Path(holdout_dir) / relative, data)
        print(f"{relative}: {len(pieces)} records, {status}")
        files.append({"path": relative, "records": len(pieces), "bytes": len(data), "sha256": sha256_bytes(data)})
    return files


def carve_evalsets(benchmarks: list[dict], holdout_dir: str, receipt_path: str) -> dict:
    """Copy every benchmark file into `{holdout_dir}/evalsets/{name}/`, write-once."""
    files = []
    for benchmark in benchmarks:
        source = Path(benchmark["path"])
        members = sorted(p for p in source.iterdir() if p.is_file()) if source.is_dir() else [source]
        for member in members:
            data = member.read_bytes()
            relative = f"evalsets/{benchmark['name']}/{member.name}"
            status = write_once(Path(holdout_dir) / relative, data)
            print(f"{relative}: {status}")
            files.append({"path": relative, "bytes": len(data), "sha256": sha256_bytes(data)})
    receipt = {"files": files, "benchmarks": [{**b, "path": f"evalsets/{b['name']}" + ("" if Path(b["path"]).is_dir()
                                                                                      else f"/{Path(b['path']).name}")}
                                              for b in benchmarks]}
    write_json(receipt_path, receipt)
    return receipt


def build_manifest(receipt_paths: list[str], settings: dict, manifest_path: str, pinned: str | None) -> str:
    """holdout/manifest.json from the carving receipts; returns its sha256 (the value to pin).
    A manifest whose sha256 differs from `pinned` (holdout.manifest_sha256) is removed and
    refused, so that nothing downstream runs on a holdout nobody reviewed; None pins nothing."""
    files = []
    for path in receipt_paths:
        files.extend(read_json(path)["files"])
    manifest = {"format": "tokenmill-holdout/1", "settings": settings,
                "files": sorted(files, key=lambda f: f["path"])}
    write_json(manifest_path, manifest)
    actual = sha256_file(manifest_path)
    if pinned is not None and actual != pinned:
        os.remove(manifest_path)
        raise HoldoutError(f"config key holdout.manifest_sha256 pins {pinned}, but {manifest_path} has sha256 "
                           f"{actual} ({len(files)} carved files): the holdout changed (new snapshot or benchmark?); "
                           f"review what was carved, then re-pin")
    return actual
