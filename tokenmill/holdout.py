"""carve_holdout: evaluation data set aside before anything touches the training data.

Three things are carved, write-once (a carved file is read-only, and carving it again with
different content is an error, never an overwrite):
- the benchmark sets named in config, copied into `evalsets/`;
- a perpetual web holdout: every record whose url hash falls in a fixed residue class
  (hash(url) % modulus == residue), copied byte for byte into `web/`;
- a time-forward slice: records fetched after a cutoff, copied into `time_forward/`.

`manifest.json` lists the sha256 of every carved file; extraction refuses to start unless
that file's hash equals the one pinned in config, and skips the same records itself, so
no holdout record can reach training output.
"""

from __future__ import annotations

import gzip
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from tokenmill.io import atomic_output, read_json, sha256_bytes, sha256_file, write_json
from tokenmill.text import url_hash


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


def _warc_records(path: str, rules: HoldoutRules):
    """(reason, raw bytes) of every held-out response record of a WARC, in file order: the
    record's bytes exactly as stored (a gzip member in a per-record-gzip file)."""
    from tokenmill.extract import normalize_timestamp

    held = []
    with open(path, "rb") as handle:
        records = ArchiveIterator(handle, arc2warc=True)
        try:
            for record in records:
                reason = None
                if record.rec_type == "response":
                    reason = rules.reason(record.rec_headers.get_header("WARC-Target-URI"),
                                          normalize_timestamp(record.rec_headers.get_header("WARC-Date")))
                records.read_to_end()
                if reason:
                    held.append((reason, records.get_record_offset(), records.get_record_length()))
        except Exception:  # a damaged container: extract reports it; what was read is carved
            pass
    with open(path, "rb") as raw:
        for reason, start, length in held:
            raw.seek(start)
            yield reason, raw.read(length)


def _jsonl_records(path: str, rules: HoldoutRules, fields: dict):
    from tokenmill.extract import open_lines, normalize_timestamp

    with open_lines(path) as lines:
        for line in lines:
            try:
                record = json.loads(line)
            except (ValueError, UnicodeDecodeError):
                continue
            if isinstance(record, dict):
                reason = rules.reason(record.get(fields["url"]), normalize_timestamp(record.get(fields["fetch_ts"])))
                if reason:
                    yield reason, line if line.endswith(b"\n") else line + b"\n"


def carve_part(input_path: str, kind: str, rules: HoldoutRules, fields: dict, holdout_dir: str,
               relative_name: str, receipt_path: str) -> dict:
    """Copy a part's held-out records into `{holdout_dir}/{web,time_forward}/{relative_name}`."""
    chunks: dict[str, list[bytes]] = {"web": [], "time_forward": []}
    records = _warc_records(input_path, rules) if kind == "warc" else _jsonl_records(input_path, rules, fields)
    for reason, raw in records:
        chunks[reason].append(raw)
    suffix = ".warc.gz" if kind == "warc" else ".jsonl.gz"
    files = []
    for reason, pieces in chunks.items():
        if not pieces:
            continue
        data = b"".join(pieces)
        if kind == "warc" and not data.startswith(b"\x1f\x8b"):
            data = gzip.compress(data, compresslevel=6, mtime=0)
        elif kind != "warc":
            data = gzip.compress(data, compresslevel=6, mtime=0)
        relative = f"{reason}/{relative_name}{suffix}"
        status = write_once(Path(holdout_dir) / relative, data)
        print(f"{relative}: {len(pieces)} records, {status}")
        files.append({"path": relative, "records": len(pieces), "bytes": len(data), "sha256": sha256_bytes(data)})
    receipt = {"files": files, "records": {reason: len(pieces) for reason, pieces in chunks.items()}}
    write_json(receipt_path, receipt)
    return receipt


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


def build_manifest(receipt_paths: list[str], settings: dict, manifest_path: str) -> str:
    """holdout/manifest.json from the carving receipts; returns its sha256 (the value to pin)."""
    files = []
    for path in receipt_paths:
        files.extend(read_json(path)["files"])
    manifest = {"format": "tokenmill-holdout/1", "settings": settings,
                "files": sorted(files, key=lambda f: f["path"])}
    write_json(manifest_path, manifest)
    return sha256_file(manifest_path)


def check_pin(manifest_path: str, pinned: str | None) -> None:
    """Refuse to extract unless the carved holdout is exactly the one config pins."""
    if not os.path.exists(manifest_path):
        raise HoldoutError(f"holdout manifest {manifest_path} is missing: run carve_holdout first")
    actual = sha256_file(manifest_path)
    if pinned is None:
        raise HoldoutError(f"config key holdout.manifest_sha256 is not set; the carved holdout {manifest_path} has "
                           f"sha256 {actual}: check what was carved, then pin that value")
    if actual != pinned:
        raise HoldoutError(f"config key holdout.manifest_sha256 pins {pinned}, but {manifest_path} has sha256 "
                           f"{actual}: the holdout changed (new snapshot or benchmark?); review it and re-pin")
