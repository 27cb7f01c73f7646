"""The extract part job on parts of several real input files: the same bytes with one worker or
two and whichever finishes first, and a job killed mid-part resuming file by file."""

from __future__ import annotations

import gzip
import io
import json
import os
import signal
import subprocess
import sys
import time
import zlib
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from tests.conftest import REPO, SAMPLE, demo_config, sample
from tests.unit.helpers import EXTRACT_SETTINGS
from tests.unit.test_adversarial import html, real_page, write_warc
from tokenmill.extract.part import FRAME_BYTES, extract_part
from tokenmill.config import validate
from tokenmill.extract.records import PartInfo, warc_spans
from tokenmill.extract.settings import extract_settings
from tokenmill.io import read_jsonl_zst

# one url in ten held out, so that every part also carves
SETTINGS = {**EXTRACT_SETTINGS, "holdout": {"modulus": 10, "residue": 3, "cutoff": None, "time_forward_applies": False}}
# the bookkeeping tests (units, resumes); the worker-count tests keep trafilatura and its slow page
RESILIPARSE = {**SETTINGS, "engine": "resiliparse"}
INFO = PartInfo("src", "snap", "part", "crawl", "CC-BY-4.0")
ARTICLES = [sample("warc", "aeb-articles", f"aeb-articles-000{n}.warc.gz") for n in range(4)]
LINGUA = sorted(str(path) for path in (SAMPLE / "jsonl" / "lingua-sentences").glob("*.jsonl.gz"))


def outputs(out: Path) -> dict[str, bytes]:
    """Every file a part job left under `out` (outputs and carved holdout), by relative path."""
    return {str(path.relative_to(out)): path.read_bytes() for path in sorted(out.rglob("*")) if path.is_file()}


def run_part(out: Path, inputs: list[str], kind: str = "warc", workers: int = 1, settings=SETTINGS,
             **unit_bytes) -> dict[str, bytes]:
    extract_part(inputs, kind, INFO, settings, str(out / "part.jsonl.zst"), str(out / "part.q.jsonl.zst"),
                 str(out / "part.stats.json"), workers=workers, holdout_dir=str(out / "holdout"),
                 carve_receipt=str(out / "part.carve.json"), **unit_bytes)
    return outputs(out)


def slow_page_warc(path: Path) -> str:
    """A WARC whose first page takes trafilatura about half a second: a real article's paragraphs
    a hundred times over (generated from real text), then the real article page itself."""
    url, page = real_page()
    body = page[page.index(b"<article>"):page.index(b"</article>") + len(b"</article>")]
    write_warc(path, [("http://slow.example/page", html((body * 100).decode()), []), (url, page, [])])
    return str(path)


def test_a_part_of_several_warcs_is_the_same_bytes_with_one_worker_or_two(tmp_path):
    """The first file's slow page keeps one worker busy while the other goes on into the next files;
    every output, carved holdout files included, is byte-identical, and the part's documents are
    its files' own, in file order."""
    others = [sample("warc", "common-crawl", "warcfile.warc.gz"), sample("warc", "common-crawl", "clipped.warc.gz"),
              sample("warc", "dolma", "sample-0000.warc.gz")]
    inputs = [slow_page_warc(tmp_path / "slow.warc.gz"), ARTICLES[1], *others]
    one = run_part(tmp_path / "one", inputs, workers=1)
    two = run_part(tmp_path / "two", inputs, workers=2)
    assert sorted(one) == sorted(two) and [name for name in one if one[name] != two[name]] == []
    assert [name for name in one if name.startswith("holdout/")] == [  # one per input file that holds any
        "holdout/web/src/snap/aeb-articles-0001.warc.gz", "holdout/web/src/snap/sample-0000.warc.gz",
        "holdout/web/src/snap/warcfile.warc.gz"]
    by_file = []
    for number, path in enumerate(inputs):
        alone = tmp_path / f"alone-{number}"
        extract_part(path, "warc", INFO, SETTINGS, str(alone / "docs.jsonl.zst"), str(alone / "q.jsonl.zst"),
                     str(alone / "stats.json"))
        by_file += list(read_jsonl_zst(alone / "docs.jsonl.zst"))
    assert list(read_jsonl_zst(tmp_path / "one" / "part.jsonl.zst")) == by_file
    stats = json.loads(one["part.stats.json"])
    assert [f["input"] for f in stats["files"]] == inputs and stats["docs"] == len(by_file) == 77
    assert stats["read_errors"] == [{"input": inputs[3], "offset": 0,
                                     "error": "record ends 13068 bytes before its Content-Length"}]
    assert not (tmp_path / "one" / "part.work").exists(), "the work folder outlived the part"


def test_a_part_of_several_jsonl_files_is_the_same_bytes_with_one_worker_or_two(tmp_path):
    one = run_part(tmp_path / "one", LINGUA, kind="jsonl", workers=1)
    two = run_part(tmp_path / "two", LINGUA, kind="jsonl", workers=2)
    assert one == two
    assert [f["docs"] for f in json.loads(one["part.stats.json"])["files"]] == [160, 136, 160, 149]


def test_a_large_warc_read_in_units_by_one_to_three_workers_is_the_same_bytes_as_read_in_one_go(tmp_path):
    """The four article WARCs as one 6 MB file (records gzipped one by one, as Common Crawl's),
    read in units of 1 MiB that start wherever a record begins after each cut, by 1, 2 and 3
    workers: every output and carved file is the same bytes as the file read by one worker in one
    unit, and the documents are those of the four files read apart."""
    joined = tmp_path / "articles.warc.gz"
    joined.write_bytes(b"".join(Path(path).read_bytes() for path in ARTICLES))
    assert len(warc_spans(str(joined), FRAME_BYTES)) == 6
    whole = run_part(tmp_path / "whole", [str(joined)], settings=RESILIPARSE)
    for workers in (1, 2, 3):
        cut = run_part(tmp_path / f"cut-{workers}", [str(joined)], workers=workers, settings=RESILIPARSE, unit_bytes=FRAME_BYTES)
        assert [name for name in whole if whole[name] != cut.get(name)] == [] and sorted(cut) == sorted(whole)
    apart = run_part(tmp_path / "apart", ARTICLES, settings=RESILIPARSE)
    def documents(out):  # the inputs' names aside
        return [(doc["record_id"], doc["text"]) for doc in read_jsonl_zst(tmp_path / out / "part.jsonl.zst")]

    assert documents("whole") == documents("apart")
    stats = json.loads(whole["part.stats.json"])
    assert stats["docs"] == json.loads(apart["part.stats.json"])["docs"] and stats["read_errors"] == []


def test_a_record_holding_a_warc_of_its_own_where_a_unit_begins_is_read_right(tmp_path, capsys):
    """A response that is itself a gzipped WARC record, stored in a gzip member without
    compression (level 0), so its bytes look like a record start to a unit that begins inside
    it: the units do not meet, the file is read again in one go, and the outputs are those of
    the file read in one unit."""
    lead = Path(sample("warc", "common-crawl", "warcfile.warc.gz")).read_bytes()
    first_member = zlib.decompressobj(wbits=31)
    first_member.decompress(lead)
    inner_record = lead[:len(lead) - len(first_member.unused_data)]  # a real WARC record, one gzip member
    carrier = tmp_path / "carrier.warc"
    write_warc_uncompressed(carrier, "http://archive.example/crawl.warc.gz",
                            inner_record * (FRAME_BYTES // len(inner_record) + 1))
    stored = gzip.compress(carrier.read_bytes(), compresslevel=0, mtime=0)
    path = tmp_path / "nested.warc.gz"
    path.write_bytes(lead + stored + Path(ARTICLES[2]).read_bytes())
    assert len(lead) < FRAME_BYTES < len(lead) + len(stored)  # the cut falls inside the stored record
    whole = run_part(tmp_path / "whole", [str(path)], settings=RESILIPARSE)
    capsys.readouterr()
    cut = run_part(tmp_path / "cut", [str(path)], workers=2, settings=RESILIPARSE, unit_bytes=FRAME_BYTES)
    assert "did not meet at a record start; read again as one unit" in capsys.readouterr().out
    assert cut == whole


def write_warc_uncompressed(path: Path, url: str, payload: bytes) -> None:
    """One uncompressed WARC response record of `payload`, served as a WARC file."""
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=False)
    http = StatusAndHeaders("200 OK", [("Content-Type", "application/warc")], protocol="HTTP/1.1")
    writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(payload), http_headers=http,
                                                  length=len(payload)))
    path.write_bytes(buffer.getvalue())


def extract_command(out: Path, inputs: list[str], workers: int, settings: dict) -> list[str]:
    return [sys.executable, "-P", str(REPO / "scripts" / "extract.py"), "--inputs", *inputs, "--workers", str(workers),
            "--kind", "warc", "--source", INFO.source, "--snapshot", INFO.snapshot, "--part", INFO.part,
            "--tier", INFO.tier, "--license-id", INFO.license_id, "--settings", json.dumps(settings),
            "--holdout-dir", str(out / "holdout"), "--carve-receipt", str(out / "part.carve.json"),
            "--docs", str(out / "part.jsonl.zst"), "--quarantine", str(out / "part.q.jsonl.zst"),
            "--stats", str(out / "part.stats.json")]


def killed_after_its_first_file(out: Path, inputs: list[str], workers: int, settings: dict) -> list[str]:
    """Run the extract script and SIGKILL it (and its workers) as soon as the first file's
    unit's fragment appears; the inputs that have a completed fragment when it dies."""
    job = subprocess.Popen(extract_command(out, inputs, workers, settings), start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    work = out / "part.work"
    deadline = time.monotonic() + 120
    # a unit's folder is named for its first byte; its temporary one (.<name>.tmp-<pid>) holds a
    # unit.json before it is renamed into place, and is not done
    while not list(work.glob("00000-*/[0-9]*/unit.json")):
        assert job.poll() is None, "the job ended before its first file was done"
        assert time.monotonic() < deadline, "the first file was never done"
        time.sleep(0.01)
    os.killpg(job.pid, signal.SIGKILL)
    job.wait()
    assert not (out / "part.stats.json").exists(), "the kill landed after the part was done"
    return [json.loads(record.read_text())["stats"]["input"] for record in sorted(work.glob("*/[0-9]*/unit.json"))]


def resumed(out: Path, inputs: list[str], workers: int, settings: dict) -> str:
    """The extract script run to the end; what it printed."""
    result = subprocess.run(extract_command(out, inputs, workers, settings), capture_output=True, text=True,
                            timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def test_a_part_killed_mid_way_resumes_file_by_file_to_the_same_bytes(tmp_path):
    """Killed with two workers after its first file, resumed with one: only the files without a
    completion record are extracted again, and the outputs are an uninterrupted run's bytes."""
    done = killed_after_its_first_file(tmp_path / "killed", ARTICLES, 2, RESILIPARSE)
    assert done[0] == ARTICLES[0] and len(done) < len(ARTICLES)
    printed = resumed(tmp_path / "killed", ARTICLES, 1, RESILIPARSE)
    kept = [path for path in ARTICLES if f"{path}: done by an earlier attempt" in printed]
    redone = [path for path in ARTICLES if f"{path}: extracted" in printed]
    assert kept == done and redone == [path for path in ARTICLES if path not in done]
    assert outputs(tmp_path / "killed") == run_part(tmp_path / "whole", ARTICLES, settings=RESILIPARSE)


def children_of(pid: int) -> set[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as handle:
        return {int(child) for child in handle.read().split()}


def test_the_workers_die_with_a_job_killed_alone(tmp_path):
    """SIGKILL to the job's own process only (not its process group, as a user's `kill -9` of the
    pid): its workers die with it instead of going on to write fragments beside a rerun's."""
    out = tmp_path / "killed"
    job = subprocess.Popen(extract_command(out, ARTICLES, 2, SETTINGS), stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while len(workers := children_of(job.pid)) < 2:
        assert job.poll() is None and time.monotonic() < deadline, "the job never started its two workers"
        time.sleep(0.01)
    job.kill()
    job.wait()
    deadline = time.monotonic() + 10
    while alive := [pid for pid in workers if Path(f"/proc/{pid}").exists()
                    and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"]:
        assert time.monotonic() < deadline, f"workers {alive} outlived their job"
        time.sleep(0.05)


def test_a_completion_record_made_with_other_settings_is_not_trusted(tmp_path):
    """Killed mid-part, then run again with another size cap: the first file's record is ignored
    and every file extracted anew, to the bytes of an uninterrupted run with the new setting."""
    capped = {**RESILIPARSE, "max_bytes": 20000}
    done = killed_after_its_first_file(tmp_path / "killed", ARTICLES, 1, RESILIPARSE)
    assert done and len(done) < len(ARTICLES)
    printed = resumed(tmp_path / "killed", ARTICLES, 2, capped)
    assert f"{ARTICLES[0]}: completion record made from another file or settings, ignored" in printed
    assert [path for path in ARTICLES if f"{path}: extracted" in printed] == ARTICLES
    assert outputs(tmp_path / "killed") == run_part(tmp_path / "whole", ARTICLES, settings=capped)


def test_a_completion_record_is_kept_when_only_another_kinds_setting_changed(tmp_path):
    """Killed mid-part, then run again after a code and an OCR setting changed, which a WARC
    part reads neither of: the first file's record is kept and only the others are extracted."""
    def on_resiliparse(config: dict) -> dict:
        config["sources"]["aeb_articles"]["engine"] = "resiliparse"
        return validate(config)

    before = json.loads(extract_settings(on_resiliparse(demo_config()), "aeb_articles"))
    changed = demo_config(extract={"code": {"timeout_s": 900}, "ocr": {"dpi": 300}})
    after = json.loads(extract_settings(on_resiliparse(changed), "aeb_articles"))
    assert before["engine"] == "resiliparse"
    done = killed_after_its_first_file(tmp_path / "killed", ARTICLES, 1, before)
    assert done and len(done) < len(ARTICLES)
    printed = resumed(tmp_path / "killed", ARTICLES, 1, after)
    assert [path for path in ARTICLES if f"{path}: done by an earlier attempt" in printed] == done
    assert outputs(tmp_path / "killed") == run_part(tmp_path / "whole", ARTICLES, settings=after)
