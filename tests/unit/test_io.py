"""Atomic writes: nothing half-written is ever visible under the final name."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tokenmill.io import atomic_output, read_jsonl_zst, write_jsonl_zst


def test_failed_write_leaves_nothing(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError):
        with atomic_output(target) as temp:
            temp.write_text("partial")
            raise RuntimeError("boom")
    assert not target.exists() and list(tmp_path.iterdir()) == []


def test_killed_writer_leaves_only_a_temp_that_the_next_write_clears(tmp_path):
    target = tmp_path / "out.bin"
    code = (f"from tokenmill.io import atomic_output\nimport time\n"
            f"with atomic_output({str(target)!r}) as temp:\n"
            f"    handle = open(temp, 'wb'); handle.write(b'x' * 1000); handle.flush()\n"
            f"    print('writing', flush=True); time.sleep(60)\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "writing"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    leftovers = list(tmp_path.iterdir())
    assert not target.exists() and len(leftovers) == 1 and ".tmp-" in leftovers[0].name
    with atomic_output(target) as temp:
        temp.write_bytes(b"complete")
    assert [p.name for p in tmp_path.iterdir()] == ["out.bin"] and target.read_bytes() == b"complete"


def test_directory_output_replaces_atomically(tmp_path):
    target = tmp_path / "shards"
    with atomic_output(target, directory=True) as temp:
        (temp / "a").write_text("1")
    with atomic_output(target, directory=True) as temp:
        (temp / "b").write_text("2")
    assert sorted(p.name for p in target.iterdir()) == ["b"]


def test_jsonl_zst_round_trip_is_deterministic(tmp_path):
    records = [{"doc_id": str(i), "text": "naïve café 日本語 " * i} for i in range(100)]
    write_jsonl_zst(tmp_path / "a.jsonl.zst", records)
    write_jsonl_zst(tmp_path / "b.jsonl.zst", records)
    assert (tmp_path / "a.jsonl.zst").read_bytes() == (tmp_path / "b.jsonl.zst").read_bytes()
    assert list(read_jsonl_zst(tmp_path / "a.jsonl.zst")) == records
