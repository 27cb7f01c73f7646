"""Progress lines: at the configured interval and at the end, in the log only, never in an output."""

from __future__ import annotations

import logging

import pytest

from tests.unit.helpers import prepared_part
from tokenmill.progress import DEFAULT_INTERVAL_S, INTERVAL_ENV, Progress, interval_from_env
from tokenmill.tokenize import selected_texts, tokenize_part, train_bpe


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def progress_lines(caplog) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.name == "tokenmill.progress"]


def test_lines_come_at_the_interval_and_the_last_one_has_the_total(caplog):
    caplog.set_level(logging.INFO, logger="tokenmill.progress")
    clock = FakeClock()
    progress = Progress("langid", interval_s=30, clock=clock)
    for _ in range(400):  # 4 documents a second for 100 s
        clock.now += 0.25
        progress.tick()
    progress.finish()
    assert progress_lines(caplog) == ["langid: 120 documents, 4.0 documents/s, 30.0 s elapsed",
                                      "langid: 240 documents, 4.0 documents/s, 60.0 s elapsed",
                                      "langid: 360 documents, 4.0 documents/s, 90.0 s elapsed",
                                      "langid done: 400 documents, 4.0 documents/s, 100.0 s elapsed"]


def test_the_interval_comes_from_the_environment(monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="tokenmill.progress")
    monkeypatch.delenv(INTERVAL_ENV, raising=False)
    assert interval_from_env() == DEFAULT_INTERVAL_S == 30
    monkeypatch.setenv(INTERVAL_ENV, "0")
    progress = Progress("extract", unit="records")
    for _ in range(3):
        progress.tick(2)
    progress.finish()
    counts = [line.split(": ")[1].split(" records")[0] for line in progress_lines(caplog)]
    assert counts == ["2", "4", "6", "6"] and progress_lines(caplog)[-1].startswith("extract done: 6 records")
    monkeypatch.setenv(INTERVAL_ENV, "soon")
    with pytest.raises(ValueError, match=f"{INTERVAL_ENV}='soon': expected a number of seconds"):
        Progress("extract")


def test_a_stage_logs_progress_without_changing_its_output(tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="tokenmill.progress")
    docs, select = prepared_part(tmp_path, "de")
    tokenizer = tmp_path / "tokenizer.json"
    train_bpe([d["text"] for _, d in selected_texts(docs, select)], 500, 2, str(tokenizer))
    outputs = {}
    for interval in ("0", "3600"):
        monkeypatch.setenv(INTERVAL_ENV, interval)
        caplog.clear()
        out = tmp_path / f"tokens-{interval}.parquet"
        count = tokenize_part(docs, select, str(tokenizer), None, 1, str(out), batch_size=8)
        outputs[interval] = out.read_bytes()
        lines = progress_lines(caplog)
        assert lines[-1].startswith(f"tokenize done: {count} documents, ")
        if interval == "0":
            assert len(lines) == -(-count // 8) + 1  # one line per batch of 8, then the total
        else:
            assert len(lines) == 1
    assert outputs["0"] == outputs["3600"]
