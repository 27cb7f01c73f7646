"""The extract part job: a part's input files, each read once, to the part's documents,
quarantine records and stats, with the files' held-out records carved on the way.

Records are read in the job's own process, file after file (cheap, sequential); HTML is
parsed by a pool of sandboxed child processes (tokenmill.extract.sandbox), and results are
taken back in input order (file order, then record order), so the outputs are the same bytes
for any number of workers and whatever order the workers finish in.

Each input file, once done, leaves a completion record in the part's work folder (beside its
stats): the file's documents, quarantine records and stats, and what it carved, under a
digest of the file (path, size, modification time) and of everything that shapes the result.
A job killed mid-part and started again redoes only the files without a matching record; a
record that does not match is redone, never trusted. The part's outputs are then assembled
from the records in file order and the work folder is removed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import shutil
from collections import Counter
from pathlib import Path

from tokenmill.extract.html import ENGINE_VERSIONS
from tokenmill.extract.ocr_part import read_ocr_rows
from tokenmill.extract.records import (PDF_TYPE, QUARANTINE_CONTENT_CHARS, REPOSITORY_TYPE, Candidate, FileStats,
                                       PartInfo, Quarantine, Unreadable, document, file_candidates, part_stats,
                                       quarantine_record, read_origins, read_repository, repository_records)
from tokenmill.extract.sandbox import Outcome, SandboxFailure, SandboxPool
from tokenmill.holdout import REASONS, HoldoutRules, carve_file
from tokenmill.hashing import sha256_bytes, sha256_file
from tokenmill.io import (JsonlZstWriter, canonical_json, folder_state, publish_directory, read_json, read_jsonl_zst,
                          temp_directory_for, write_json, write_jsonl_zst)
from tokenmill.plan import part_name
from tokenmill.progress import Progress

RECORD_FORMAT = "tokenmill-extract-record/3"
RECORD = "record.json"  # written last, before the record's folder is renamed into place
RECORD_ZSTD_LEVEL = 1  # records are read once more, to be recompressed at the configured level


@dataclasses.dataclass
class _File:
    """One input file of the part and where its completion record goes."""

    path: str
    name: str  # unique in its snapshot (as planning names parts): the name of what it carves
    digest: str
    record_dir: Path
    stats: FileStats = dataclasses.field(default_factory=FileStats)
    held: dict[str, list[bytes]] = dataclasses.field(default_factory=lambda: {reason: [] for reason in REASONS})


def _digest(path: str, kind: str, info: PartInfo, settings: dict, holdout_dir: str | None,
            side_files: dict[str, str]) -> str:
    """What a completion record must have been made from to be reused (not the worker count,
    which changes no byte); `side_files`: the digests of the OCR output and the url side file."""
    stat = os.stat(path)
    state = {"tree": folder_state(path)} if os.path.isdir(path) else {"bytes": stat.st_size,
                                                                      "mtime_ns": stat.st_mtime_ns}
    made_from = {"format": RECORD_FORMAT, "input": path, **state, "kind": kind, "part": dataclasses.asdict(info),
                 "settings": settings, "holdout_dir": holdout_dir, "engines": ENGINE_VERSIONS, "side_files": side_files}
    return sha256_bytes(canonical_json(made_from).encode())


def _has_record(file: _File) -> bool:
    path = file.record_dir / RECORD
    if not path.exists():
        return False
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):  # unreadable: not trusted either
        if read_json(path)["digest"] == file.digest:
            print(f"{file.path}: done by an earlier attempt (completion record kept)")
            return True
    print(f"{file.path}: completion record made from another file or settings, ignored")
    return False


class _RecordWriter:
    """Writes one file's completion record while its results come in, then publishes it."""

    def __init__(self, file: _File, info: PartInfo):
        self.file, self.info = file, info
        self._temp = temp_directory_for(file.record_dir)
        self._writers = contextlib.ExitStack()
        self.docs = self._writers.enter_context(JsonlZstWriter(self._temp / "docs.jsonl.zst", RECORD_ZSTD_LEVEL))
        self._quarantine = self._writers.enter_context(JsonlZstWriter(self._temp / "quarantine.jsonl.zst",
                                                                      RECORD_ZSTD_LEVEL))

    def quarantine(self, offset: int, record_id: str | None, url: str | None, problem: Quarantine) -> None:
        self.file.stats.quarantined[problem.reason] += 1
        self._quarantine.write(quarantine_record(self.info, self.file.path, offset, record_id, url, problem))

    def take(self, candidate: Candidate, outcome: Outcome | None, work) -> None:
        """A candidate's result: computed by a sandbox (`outcome`), or here by `work`."""
        stats = self.file.stats
        stats.candidates += 1
        raw = candidate.payload if candidate.payload is not None else candidate.text.encode("utf-8")
        stats.candidate_bytes += len(raw)
        where = (candidate.offset, candidate.record_id, candidate.url)
        try:
            doc, meta = outcome.get() if outcome is not None else work(candidate)
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
        self.docs.write(doc)
        stats.docs += 1
        stats.doc_bytes += len(doc["text"].encode("utf-8"))
        stats.engines[meta["extractor"]] += 1
        stats.math_docs += int(meta.get("math_count", 0) > 0)
        stats.formulas += meta.get("math_count", 0)

    def take_repository(self, candidate: Candidate, outcome: Outcome | None, work, holdout: HoldoutRules | None,
                        carving: bool) -> None:
        """A repository read by a sandbox (`outcome`), or here by `work`: its documents, made here."""
        read = outcome.get if outcome is not None else functools.partial(work, candidate)
        for record in repository_records(candidate.input, read, self.file.stats, holdout,
                                         self.file.held if carving else None):
            if isinstance(record, Unreadable):
                self.quarantine(record.offset, record.record_id, None, record.problem)
            else:
                self.take(record, None, work)

    def publish(self, kind: str, holdout_dir: str | None) -> None:
        """The file is read through and every result taken: carve, then publish the record."""
        self._writers.close()
        file = self.file
        carved = []
        if holdout_dir is not None:
            carved = carve_file(file.held, kind, holdout_dir, f"{self.info.source}/{self.info.snapshot}/{file.name}")
        record = {"format": RECORD_FORMAT, "digest": file.digest, "stats": file.stats.as_dict(file.path),
                  "carved": carved, "held": {reason: len(file.held[reason]) for reason in REASONS}}
        write_json(self._temp / RECORD, record)
        publish_directory(self._temp, file.record_dir)
        quarantined = sum(file.stats.quarantined.values())
        print(f"{file.path}: extracted, {file.stats.docs} documents, {quarantined} quarantined, "
              f"{sum(record['held'].values())} held out")


def _extract(candidate: Candidate, info: PartInfo, settings: dict):
    """What a sandbox computes: a repository read, else a candidate's document."""
    if candidate.content_type == REPOSITORY_TYPE:
        return read_repository(candidate, settings)
    return document(candidate, info, settings)


def _read(files: list[_File], kind: str, settings: dict, holdout: HoldoutRules | None, carving: bool,
          ocr: dict[tuple[str, int], dict] | None):
    """(file, record) for every record of the files, in order, then (file, None) once a file is
    read through; a PDF carries its OCR rows where `ocr` (the part's OCR output) is given."""
    origins = read_origins(settings["urls"]) if settings.get("urls") else {}
    for file in files:
        for record in file_candidates(file.path, kind, settings, file.stats, holdout, file.held if carving else None,
                                      file.name, origins):
            if ocr is not None and isinstance(record, Candidate) and record.content_type == PDF_TYPE:
                record = dataclasses.replace(record, ocr=ocr.get((record.input, record.offset), {}))
            yield file, record
        yield file, None


def _outcomes(entries, work, kind: str, settings: dict, workers: int):
    """Each (file, record) with its Outcome where `workers` sandboxes compute it (HTML and PDF
    payloads, repositories, with extract.sandbox on), else None (the record passes through). A
    kind whose settings have no `sandbox` (jsonl, synthetic: text records) runs none."""
    if not settings.get("sandbox"):
        yield from ((entry, None) for entry in entries)
        return

    def sandboxed(entry):
        record = entry[1]
        if not isinstance(record, Candidate):
            return None
        return record if record.payload is not None or record.content_type == REPOSITORY_TYPE else None

    # a code part's sandboxed records are its repositories, each read under extract.code.timeout_s
    deadline_s = settings["code"]["timeout_s"] if kind == "code" else settings["timeout_s"]
    with SandboxPool(work, workers, deadline_s, settings["memory_mb"]) as pool:
        yield from pool.imap(entries, sandboxed)


def _extract_files(files: list[_File], kind: str, info: PartInfo, settings: dict, holdout: HoldoutRules | None,
                   holdout_dir: str | None, workers: int, ocr: dict | None) -> None:
    """Each file's completion record, reading the files in order while `workers` sandboxes parse
    HTML and PDFs and read repositories."""
    work = functools.partial(_extract, info=info, settings=settings)
    progress = Progress("extract", unit="records")
    writer = None
    for (file, record), outcome in _outcomes(_read(files, kind, settings, holdout, holdout_dir is not None, ocr),
                                             work, kind, settings, workers):
        if writer is None:
            writer = _RecordWriter(file, info)
        if record is None:
            writer.publish(kind, holdout_dir)
            writer = None
        elif isinstance(record, Unreadable):
            writer.quarantine(record.offset, record.record_id, None, record.problem)
        elif record.content_type == REPOSITORY_TYPE:
            writer.take_repository(record, outcome, work, holdout, holdout_dir is not None)
        else:
            progress.tick()
            writer.take(record, outcome, work)
    progress.finish()


def extract_part(inputs: str | list[str], kind: str, info: PartInfo, settings: dict, docs_path: str,
                 quarantine_path: str, stats_path: str, workers: int = 1, holdout_dir: str | None = None,
                 carve_receipt: str | None = None, ocr_path: str | None = None, origin_docs: str | None = None) -> dict:
    """Extract a part: `inputs` are its files in order (one path: a part of one file).
    `settings` is what its kind reads (tokenmill.extract.settings.extract_settings: the keys of
    the `extract` config section, the source's `fields` or `urls`, the `holdout` predicate as
    HoldoutRules' fields). With
    `holdout_dir`, held-out records are carved there (write-once) and listed in `carve_receipt`.
    With `ocr_path` (the part's OCR rows, tokenmill.extract.ocr_part), PDF pages without a usable
    text layer get their OCR text. A synthetic part's `origin_docs` are the documents of the part
    it rewrites, which its checks compare with. Returns the part's stats."""
    inputs = [inputs] if isinstance(inputs, str) else list(inputs)
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
    files = [_File(path, part_name(path), _digest(path, kind, info, settings, carve_to, side_files),
                   work_dir / f"{index:05d}-{part_name(path)}") for index, path in enumerate(inputs)]
    print(f"part {info.source}/{info.snapshot}/{info.part}: {len(files)} input files, {workers} workers")
    todo = [file for file in files if not _has_record(file)]
    if todo:
        _extract_files(todo, kind, info, settings, holdout, carve_to, workers,
                       read_ocr_rows(ocr_path) if ocr_path else None)
    records = [read_json(file.record_dir / RECORD) for file in files]
    level = settings["zstd_level"]
    for name, path in (("docs", docs_path), ("quarantine", quarantine_path)):
        in_file_order = (entry for file in files for entry in read_jsonl_zst(file.record_dir / f"{name}.jsonl.zst"))
        write_jsonl_zst(path, in_file_order, level)
    if carve_receipt is not None:
        held = sum((Counter(record["held"]) for record in records), Counter())
        write_json(carve_receipt, {"files": [entry for record in records for entry in record["carved"]],
                                   "records": {reason: held[reason] for reason in REASONS}})
    stats = part_stats(info, [record["stats"] for record in records])
    write_json(stats_path, stats)
    shutil.rmtree(work_dir)
    return stats
