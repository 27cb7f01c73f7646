"""The extract part job: a part's input files to the part's documents, quarantine records and
stats, with the files' held-out records carved on the way.

The work is cut into units: a file, or a byte range of a large per-record-gzip WARC file
(UNIT_BYTES, cut where a record begins, so one large file still spreads over a node). Each unit
is done by a worker process (tokenmill.extract.workers) from reading its input to writing its
fragment: documents and quarantine records as zstd frames, one per FRAME_BYTES of input, its
stats and its held-out records. The job's own process hands out units and joins fragments; it
never reads, decodes or writes a document. The part's outputs are the fragments concatenated
in input order, so they are the same bytes for any number of workers and however a file is cut.

A unit's fragment is published only once complete, under a digest of the file (path, size,
modification time) and of everything that shapes the result. A job killed mid-part and started
again redoes only the units without a matching fragment; one that does not match is redone,
never trusted. Fragments are joined only where each unit of a file began where the one before
it stopped (else the file is read again as one unit), and the work folder is then removed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import shutil
from collections import Counter
from pathlib import Path

import zstandard

from tokenmill.extract.html import ENGINE_VERSIONS, load_engine
from tokenmill.extract.ocr_part import read_ocr_rows
from tokenmill.extract.records import (PDF_TYPE, QUARANTINE_CONTENT_CHARS, REPOSITORY_TYPE, Candidate, FileStats,
                                       PartInfo, Quarantine, Span, Unreadable, document, file_candidates, file_stats,
                                       part_stats, quarantine_record, read_origins, read_repository,
                                       repository_records, warc_spans)
from tokenmill.extract.sandbox import SandboxFailure
from tokenmill.extract.workers import Guard, WorkerPool
from tokenmill.holdout import REASONS, HoldoutRules, carve_file
from tokenmill.hashing import sha256_bytes, sha256_file
from tokenmill.io import (JsonlZstFrames, atomic_output, canonical_json, folder_state, publish_directory, read_json,
                          temp_directory_for, write_json)
from tokenmill.plan import part_name
from tokenmill.progress import Progress

RECORD_FORMAT = "tokenmill-extract-unit/1"
RECORD = "unit.json"  # written last, before the fragment's folder is renamed into place
FRAME_BYTES = 1 << 20  # input bytes whose documents share one zstd frame
UNIT_BYTES = 8 << 20  # a large WARC file's bytes per unit of work: a multiple of FRAME_BYTES
OUTPUTS = ("docs", "quarantine")


@dataclasses.dataclass(frozen=True)
class Unit:
    """One unit of work: the records of `path` that begin in [start, end), and where its fragment goes."""

    path: str
    name: str  # the file's name, unique in its snapshot (as planning names parts): the name of what it carves
    digest: str
    start: int
    end: int | None
    folder: Path

    def __str__(self) -> str:
        return self.path if (self.start, self.end) == (0, None) else f"{self.path} bytes {self.start}-{self.end or ''}"


def _digest(path: str, kind: str, info: PartInfo, settings: dict, holdout_dir: str | None,
            side_files: dict[str, str]) -> str:
    """What a fragment must have been made from to be reused (not the worker count, which
    changes no byte); `side_files`: the digests of the OCR output and the url side file."""
    stat = os.stat(path)
    state = {"tree": folder_state(path)} if os.path.isdir(path) else {"bytes": stat.st_size,
                                                                      "mtime_ns": stat.st_mtime_ns}
    made_from = {"format": RECORD_FORMAT, "input": path, **state, "kind": kind, "part": dataclasses.asdict(info),
                 "settings": settings, "holdout_dir": holdout_dir, "engines": ENGINE_VERSIONS, "side_files": side_files}
    return sha256_bytes(canonical_json(made_from).encode())


def _fragment(unit: Unit) -> dict | None:
    """The unit's published fragment record if it was made from what the unit is now made from."""
    path = unit.folder / RECORD
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):  # unreadable: not trusted either
        record = read_json(path)
        if (record["digest"], record["start"], record["end"]) == (unit.digest, unit.start, unit.end):
            return record
    return None


@functools.cache
def _ocr_rows(path: str) -> dict:
    return read_ocr_rows(path)


@functools.cache
def _origins(path: str) -> dict:
    return read_origins(path)


def _extract(candidate: Candidate, info: PartInfo, settings: dict):
    """A repository read, else a candidate's document."""
    if candidate.content_type == REPOSITORY_TYPE:
        return read_repository(candidate, settings)
    return document(candidate, info, settings)


class _UnitWriter:
    """In a worker: one unit's documents and quarantine records, as they come."""

    def __init__(self, unit: Unit, info: PartInfo, settings: dict, guard: Guard, stats: FileStats, docs, quarantine):
        self.unit, self.info, self.settings, self.guard, self.stats = unit, info, settings, guard, stats
        self.docs, self._quarantine = docs, quarantine

    def quarantine(self, offset: int, record_id: str | None, url: str | None, problem: Quarantine) -> None:
        self.stats.quarantined[problem.reason] += 1
        self._quarantine.write(quarantine_record(self.info, self.unit.path, offset, record_id, url, problem), offset)

    def _compute(self, candidate: Candidate):
        """The candidate's result: under the guard where the per-document sandbox would run it
        (HTML and PDF payloads, repositories, with extract.sandbox on), else directly."""
        compute = functools.partial(_extract, candidate, self.info, self.settings)
        sandboxed = candidate.payload is not None or candidate.content_type == REPOSITORY_TYPE
        return self.guard.run(candidate.offset, compute) if sandboxed and self.settings.get("sandbox") else compute()

    def take(self, candidate: Candidate) -> None:
        stats = self.stats
        stats.candidates += 1
        raw = candidate.payload if candidate.payload is not None else candidate.text.encode("utf-8")
        stats.candidate_bytes += len(raw)
        where = (candidate.offset, candidate.record_id, candidate.url)
        try:
            doc, meta = self._compute(candidate)
        except Quarantine as problem:
            self.quarantine(*where, problem)
            return
        except SandboxFailure as failure:
            stats.sandbox_restarts += failure.restarted
            self.quarantine(*where, Quarantine(failure.reason, failure.detail,
                                               raw[:QUARANTINE_CONTENT_CHARS].decode("utf-8", "replace")))
            return
        except Exception as error:  # a poison document never fails the part
            self.quarantine(*where, Quarantine("extract_error", f"{type(error).__name__}: {error}",
                                               raw[:QUARANTINE_CONTENT_CHARS].decode("utf-8", "replace")))
            return
        stats.truncated += int(bool(meta.get("truncated")))
        stats.pdf_pages += meta.get("pages", 0)
        stats.pages_needing_ocr += len(meta.get("needs_ocr", {})) + len(meta.get("ocr_pages", {}))
        stats.ocr_pages += len(meta.get("ocr_pages", {}))
        if doc is None:
            stats.no_text += 1
            return
        self.docs.write(doc, candidate.offset)
        stats.docs += 1
        stats.doc_bytes += len(doc["text"].encode("utf-8"))
        stats.engines[meta["extractor"]] += 1
        stats.math_docs += int(meta.get("math_count", 0) > 0)
        stats.formulas += meta.get("math_count", 0)

    def take_repository(self, candidate: Candidate, holdout: HoldoutRules | None,
                        held: dict[str, list[bytes]] | None) -> None:
        """A repository read (under the guard), and its documents made from what was read."""
        for record in repository_records(candidate.input, functools.partial(self._compute, candidate), self.stats,
                                         holdout, held):
            if isinstance(record, Unreadable):
                self.quarantine(record.offset, record.record_id, record.url, record.problem)
            else:
                self.take(record)


def _extract_unit(unit: Unit, guard: Guard, kind: str, info: PartInfo, settings: dict, holdout: HoldoutRules | None,
                  carving: bool, ocr_path: str | None) -> dict:
    """In a worker: the unit read, extracted and written to its fragment; the fragment's record."""
    stats = FileStats()
    held = {reason: [] for reason in REASONS}
    span = Span(unit.start, unit.end)
    origins = _origins(settings["urls"]) if settings.get("urls") else {}
    ocr = _ocr_rows(ocr_path) if ocr_path else None
    kept_held = held if carving else None
    temp = temp_directory_for(unit.folder)
    with contextlib.ExitStack() as files:
        frames = {output: JsonlZstFrames(files.enter_context(open(temp / f"{output}.jsonl.zst", "wb")),
                                         settings["zstd_level"], FRAME_BYTES) for output in OUTPUTS}
        writer = _UnitWriter(unit, info, settings, guard, stats, frames["docs"], frames["quarantine"])
        for record in file_candidates(unit.path, kind, settings, stats, holdout, kept_held, unit.name, origins, span,
                                      info.source):
            if isinstance(record, Unreadable):
                writer.quarantine(record.offset, record.record_id, record.url, record.problem)
            elif record.content_type == REPOSITORY_TYPE:
                writer.take_repository(record, holdout, kept_held)
            else:
                if ocr is not None and record.content_type == PDF_TYPE:
                    record = dataclasses.replace(record, ocr=ocr.get((record.input, record.offset), {}))
                writer.take(record)
        for output in frames.values():
            output.end_frame()
    for reason in REASONS:
        (temp / f"held-{reason}").write_bytes(b"".join(held[reason]))
    record = {"format": RECORD_FORMAT, "digest": unit.digest, "start": unit.start, "end": unit.end,
              "first": span.first, "stop": span.stop, "broken": span.broken, "stats": stats.as_dict(unit.path),
              "held": {reason: [len(piece) for piece in held[reason]] for reason in REASONS}}
    write_json(temp / RECORD, record)
    publish_directory(temp, unit.folder)
    return record


def _joined(records: list[dict]) -> list[dict] | None:
    """A file's unit records that make it up: each unit must begin where the one before it
    stopped (None if one does not: a record start was found where there was none), and none
    after a unit that could not read on (as if the file had been read in one go)."""
    kept = records[:1]
    for before, after in zip(records, records[1:]):
        if before["broken"]:
            break
        if before["stop"] != after["first"]:
            return None
        kept.append(after)
    return kept


def _held(unit: Unit, record: dict) -> dict[str, list[bytes]]:
    held = {}
    for reason in REASONS:
        data, pieces, at = (unit.folder / f"held-{reason}").read_bytes(), [], 0
        for length in record["held"][reason]:
            pieces.append(data[at:at + length])
            at += length
        held[reason] = pieces
    return held


def _concatenate(path: str, fragments: list[Path], level: int) -> None:
    with atomic_output(path) as temp, open(temp, "wb") as out:
        for fragment in fragments:
            with open(fragment, "rb") as part:
                shutil.copyfileobj(part, out, 1 << 20)
        if out.tell() == 0:  # no record at all: still a zstd file
            out.write(zstandard.ZstdCompressor(level=level).compress(b""))


def extract_part(inputs: str | list[str], kind: str, info: PartInfo, settings: dict, docs_path: str,
                 quarantine_path: str, stats_path: str, workers: int = 1, holdout_dir: str | None = None,
                 carve_receipt: str | None = None, ocr_path: str | None = None, origin_docs: str | None = None,
                 unit_bytes: int = UNIT_BYTES) -> dict:
    """Extract a part: `inputs` are its files in order (one path: a part of one file).
    `settings` is what its kind reads (tokenmill.extract.settings.extract_settings: the keys of
    the `extract` config section, the source's `fields` or `urls`, the `holdout` predicate as
    HoldoutRules' fields). With
    `holdout_dir`, held-out records are carved there (write-once) and listed in `carve_receipt`.
    With `ocr_path` (the part's OCR rows, tokenmill.extract.ocr_part), PDF pages without a usable
    text layer get their OCR text. A synthetic part's `origin_docs` are the documents of the part
    it rewrites, which its checks compare with. `unit_bytes` (a multiple of FRAME_BYTES) cuts
    large WARC files into units; it changes no byte of the outputs. Returns the part's stats."""
    inputs = [inputs] if isinstance(inputs, str) else list(inputs)
    if unit_bytes <= 0 or unit_bytes % FRAME_BYTES:
        raise ValueError(f"unit_bytes must be a positive multiple of {FRAME_BYTES}, not {unit_bytes}")
    if kind == "synthetic":
        if origin_docs is None:
            raise ValueError(f"part {info.source}/{info.snapshot}/{info.part}: a synthetic part needs the documents "
                             "it rewrites (origin_docs)")
        settings = {**settings, "origin_docs": origin_docs}
    holdout = HoldoutRules(**settings["holdout"]) if settings.get("holdout") else None
    carve_to = holdout_dir if holdout is not None else None
    work_dir = Path(stats_path).with_name(f"{info.part}.work")
    side_files = {name: sha256_file(path) for name, path in (("ocr", ocr_path), ("urls", settings.get("urls")),
                                                             ("origin_docs", origin_docs)) if path}
    print(f"part {info.source}/{info.snapshot}/{info.part}: {len(inputs)} input files, {workers} workers")
    if kind == "warc":
        load_engine(settings)

    def units_of(index: int, path: str, spans: list[Span]) -> list[Unit]:
        digest = _digest(path, kind, info, settings, carve_to, side_files)
        folder = work_dir / f"{index:05d}-{part_name(path)}"
        return [Unit(path, part_name(path), digest, span.start, span.end, folder / f"{span.start:015d}")
                for span in spans]

    files = [units_of(index, path, warc_spans(path, unit_bytes) if kind == "warc" else [Span()])
             for index, path in enumerate(inputs)]
    records = {unit: record for units in files for unit in units if (record := _fragment(unit)) is not None}
    for units in files:
        kept = sum(unit in records for unit in units)
        if kept == len(units):
            print(f"{units[0].path}: done by an earlier attempt (completion record kept)")
        elif kept:
            print(f"{units[0].path}: {kept} of its {len(units)} units done by an earlier attempt (their records kept)")
        if any(unit not in records and (unit.folder / RECORD).exists() for unit in units):
            print(f"{units[0].path}: completion record made from another file or settings, ignored")
    sandboxed = bool(settings.get("sandbox"))
    deadline_s = (settings["code"]["timeout_s"] if kind == "code" else settings["timeout_s"]) if sandboxed else math.inf
    work = functools.partial(_extract_unit, kind=kind, info=info, settings=settings, holdout=holdout,
                             carving=carve_to is not None, ocr_path=ocr_path)
    redone = set()
    progress = Progress("extract", unit="records")
    with WorkerPool(work, workers, deadline_s, settings["memory_mb"] if sandboxed else 0) as pool:
        while True:
            for unit, record in pool.run([unit for units in files for unit in units if unit not in records]):
                records[unit] = record
                progress.tick(sum(record["stats"]["records"].values()))
                redone.add(unit.path)
            joined = [_joined([records[unit] for unit in units]) for units in files]
            broken = [index for index, kept in enumerate(joined) if kept is None]
            if not broken:
                break
            for index in broken:  # read again in one go
                print(f"{inputs[index]}: its units did not meet at a record start; read again as one unit")
                shutil.rmtree(files[index][0].folder.parent)
                files[index] = units_of(index, inputs[index], [Span()])
    progress.finish()

    carved, held_counts, file_records, fragments = [], Counter(), [], {output: [] for output in OUTPUTS}
    for units, kept in zip(files, joined):
        units = units[:len(kept)]
        stats = file_stats([record["stats"] for record in kept])
        held = {reason: [] for reason in REASONS}
        for unit, record in zip(units, kept):
            for reason, pieces in _held(unit, record).items():
                held[reason] += pieces
            for output in OUTPUTS:
                fragments[output].append(unit.folder / f"{output}.jsonl.zst")
        if carve_to is not None:
            carved += carve_file(held, kind, carve_to, f"{info.source}/{info.snapshot}/{units[0].name}")
        held_counts.update({reason: len(held[reason]) for reason in REASONS})
        file_records.append(stats)
        if units[0].path in redone:
            print(f"{units[0].path}: extracted, {stats['docs']} documents, {sum(stats['quarantined'].values())} "
                  f"quarantined, {sum(len(pieces) for pieces in held.values())} held out")
    level = settings["zstd_level"]
    _concatenate(docs_path, fragments["docs"], level)
    _concatenate(quarantine_path, fragments["quarantine"], level)
    if carve_receipt is not None:
        write_json(carve_receipt, {"files": carved, "records": {reason: held_counts[reason] for reason in REASONS}})
    stats = part_stats(info, file_records)
    write_json(stats_path, stats)
    shutil.rmtree(work_dir, ignore_errors=True)
    return stats
