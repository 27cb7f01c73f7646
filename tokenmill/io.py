"""File I/O shared by every stage: atomic writes, zstd JSONL, Parquet, hashes.

Every file tokenmill produces goes through `atomic_output`: it is written under a
temporary name in the destination directory and renamed only once complete, so a
killed job never leaves a file that looks finished.
"""

from __future__ import annotations

import contextlib
import csv
import glob
import hashlib
import io
import json
import os
import shutil
from pathlib import Path
from typing import Any, Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

TMP_MARK = ".tmp-"
REPOSITORY = Path(__file__).resolve().parents[1]


def repository_file(path: str | None, default: str) -> Path:
    """A configured file, or `default` (a bundled file's path in the repository): a relative path
    that does not exist from here is the repository's."""
    candidate = Path(path or default)
    return candidate if candidate.is_absolute() or candidate.exists() else REPOSITORY / candidate


def _temp_name(final: Path) -> Path:
    return final.with_name(f".{final.name}{TMP_MARK}{os.getpid()}")


def _remove_stale_temps(final: Path) -> None:
    """Temp files of a killed earlier attempt are never trusted; clear them."""
    for stale in glob.glob(str(final.with_name(f".{glob.escape(final.name)}{TMP_MARK}*"))):
        if os.path.isdir(stale):
            shutil.rmtree(stale, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.remove(stale)


def temp_directory_for(path: str | os.PathLike) -> Path:
    """A fresh temporary folder beside `path` (a killed attempt's are removed first), for a
    writer that cannot hold atomic_output open, such as the ranks of an MPI job; hand it to
    publish_directory once every writer is done."""
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(final)
    temp = _temp_name(final)
    temp.mkdir()
    return temp


def publish_directory(temp: Path, path: str | os.PathLike) -> None:
    final = Path(path)
    if final.exists():
        shutil.rmtree(final)
    os.replace(temp, final)


@contextlib.contextmanager
def atomic_output(path: str | os.PathLike, directory: bool = False) -> Iterator[Path]:
    """Yield a temporary path; on success rename it to `path` (file or directory)."""
    final = Path(path)
    final.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(final)
    temp = _temp_name(final)
    if directory:
        temp.mkdir()
    try:
        yield temp
        if not directory:
            with open(temp, "rb+") as handle:
                os.fsync(handle.fileno())
        if directory and final.exists():
            shutil.rmtree(final)
        os.replace(temp, final)
    except BaseException:
        if temp.is_dir():
            shutil.rmtree(temp, ignore_errors=True)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.remove(temp)
        raise


def write_tsv(path: str | os.PathLike, columns: list[str], rows: Iterable[dict], ignore_extra: bool = False) -> None:
    """A tab-separated table with a header row, written atomically; `ignore_extra` drops keys
    of a row that are not columns (otherwise they are an error)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, delimiter="\t", lineterminator="\n",
                            extrasaction="ignore" if ignore_extra else "raise")
    writer.writeheader()
    writer.writerows(rows)
    with atomic_output(path) as temp:
        temp.write_text(buffer.getvalue(), encoding="utf-8")


def dumps_line(record: dict) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(",", ":"))


def canonical_json(obj: Any) -> str:
    """Stable text for hashing: sorted keys, no whitespace variation."""
    return json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def json_text(obj: Any) -> str:
    """The text write_json writes."""
    return json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=False) + "\n"


def write_json(path: str | os.PathLike, obj: Any) -> None:
    with atomic_output(path) as temp:
        temp.write_text(json_text(obj))


def read_json(path: str | os.PathLike) -> Any:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


class JsonlZstWriter:
    """Stream records into `path` as zstd-compressed JSON lines, atomically."""

    def __init__(self, path: str | os.PathLike, level: int = 6):
        self._context = atomic_output(path)
        self._level = level
        self.count = 0

    def __enter__(self) -> "JsonlZstWriter":
        temp = self._context.__enter__()
        self._raw = open(temp, "wb")
        compressor = zstandard.ZstdCompressor(level=self._level)
        self._stream = compressor.stream_writer(self._raw, closefd=False)
        self._text = io.TextIOWrapper(self._stream, encoding="utf-8", newline="\n")
        return self

    def write(self, record: dict) -> None:
        self._text.write(dumps_line(record))
        self._text.write("\n")
        self.count += 1

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._text.flush()
        self._stream.close()
        self._raw.close()
        return bool(self._context.__exit__(exc_type, exc, tb))


def write_jsonl_zst(path: str | os.PathLike, records: Iterable[dict], level: int = 6) -> int:
    with JsonlZstWriter(path, level) as writer:
        for record in records:
            writer.write(record)
    return writer.count


class JsonlZstFrames:
    """JSON lines written as zstd frames into an open binary file, one frame per `block_size`
    block of the position each line is written at (a record's offset in its input file): so
    units of work that cut a file at block multiples write frames that concatenate to the same
    bytes however the file was cut. A block with no line writes no frame."""

    def __init__(self, raw, level: int, block_size: int):
        self._raw, self._block_size = raw, block_size
        self._compressor = zstandard.ZstdCompressor(level=level)
        self._lines: list[bytes] = []
        self._block = None
        self.count = 0

    def write(self, record: dict, position: int) -> None:
        block = position // self._block_size
        if block != self._block:
            self.end_frame()
            self._block = block
        self._lines.append(dumps_line(record).encode("utf-8") + b"\n")
        self.count += 1

    def end_frame(self) -> None:
        if self._lines:
            self._raw.write(self._compressor.compress(b"".join(self._lines)))
            self._lines = []


def zst_reader(raw, closefd: bool = True):
    """The decompressed stream of an open zstd file, every frame of it (the extract job's outputs
    are one frame per MiB of input: a reader that stops after the first frame loses documents)."""
    return zstandard.ZstdDecompressor().stream_reader(raw, closefd=closefd, read_across_frames=True)


def read_lines_zst(path: str | os.PathLike) -> Iterator[str]:
    with open(path, "rb") as raw:
        yield from io.TextIOWrapper(zst_reader(raw), encoding="utf-8", newline="\n")


def read_jsonl_zst(path: str | os.PathLike) -> Iterator[dict]:
    return map(json.loads, read_lines_zst(path))


def write_parquet(path: str | os.PathLike, table: pa.Table, statistics: list[str] | None = None,
                  row_group_rows: int | None = None) -> None:
    """`statistics`: the columns whose min and max each row group records (a reader skips the
    row groups that cannot hold what it looks for); `row_group_rows`: pyarrow's default when None."""
    with atomic_output(path) as temp:
        pq.write_table(table, temp, compression="zstd", write_statistics=statistics or False,
                       row_group_size=row_group_rows)


def read_parquet(path: str | os.PathLike, columns: list[str] | None = None) -> pa.Table:
    return pq.read_table(path, columns=columns)


PART_ROW_GROUP_ROWS = 1 << 16


def write_part_rows(path: str | os.PathLike, table: pa.Table) -> None:
    """A file that holds several parts' rows (columns part, row), each part's rows together: row
    groups record their parts, so that read_part_rows reads one part's row groups, not the whole
    file (a snapshot's file is read once per part)."""
    write_parquet(path, table, statistics=["part"], row_group_rows=PART_ROW_GROUP_ROWS)


def read_part_rows(path: str | os.PathLike, part: str, columns: list[str] | None = None) -> pa.Table:
    """One part's rows, in row order, from a file that holds several parts (columns part, row)."""
    table = pq.read_table(path, columns=None if columns is None else ["part", "row", *columns],
                          filters=[("part", "==", part)])
    return table.sort_by("row")


def folder_state(path: str | os.PathLike) -> str:
    """A digest of a folder's tree (every entry's path, type, size and modification time, links
    not followed): it changes when a file anywhere below changes, which the folder's own
    modification time (all that make sees of it) does not."""
    entries = []
    for folder, dirs, names in os.walk(path):
        dirs.sort()
        for name in sorted(names) + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            full = os.path.join(folder, name)
            info = os.lstat(full)
            entries.append([os.path.relpath(full, path), info.st_mode, info.st_size, info.st_mtime_ns])
    return hashlib.sha256(canonical_json(entries).encode()).hexdigest()


def input_bytes(path: str | os.PathLike) -> int:
    """A file's size; a folder's (a code source's repository checkout) is that of its files."""
    if not os.path.isdir(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(folder, name)) for folder, _, names in os.walk(path) for name in names
               if not os.path.islink(os.path.join(folder, name)))
