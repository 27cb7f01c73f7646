"""Same inputs and config, same bytes: a second run of the small cut (one part of each kind of
source: WARC, JSONL, PDF with OCR, code, synthetic), killed at several points and resumed each
time, ends with exactly the files of the first (uninterrupted) run, conftest's small_run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from tests.conftest import (assert_same_outputs, built_hashes, repository_copy, result_hashes, run_snakemake,
                            small_cut_config, snakemake_command, write_config)


# Where a dying node cuts the run: (rule, what appears once it is under way, seconds to let it
# work on, an output that cannot exist yet if the kill landed before the rule finished; {0} is
# the path that appeared, split at "/", without its suffix). Only a path this run creates counts
# as under way: an earlier run may have finished other snapshots' jobs of the same rule.
# extract is cut mid-part: the first file of aeb_articles' two-file part has its fragment (tokenmill.extract.part;
# a fragment's folder is named for the unit's first byte, and its temporary one, .<name>.tmp-<pid>, is not done).
EXTRACT_PART = "results/extract/docs/aeb_articles/built-2026-11-29/aeb-articles-0000"
EXTRACT_STATS = "results/extract/stats/aeb_articles/built-2026-11-29/aeb-articles-0000.json"
# generate is cut mid-part too: once its first batch is in the part's cache, which the resumed job reads.
GENERATE_CACHE = "results/generate/cache/aeb_rephrased/built-2026-11-29"
KILL_POINTS = [
    ("extract (mid-part)", f"{EXTRACT_STATS.removesuffix('.json')}.work/00000-*/[0-9]*/unit.json", 0.0, EXTRACT_STATS),
    ("minhash_cluster (MPI ranks)", "results/logs/minhash_cluster/*/*.log", 0.5,
     "results/select/demo-v0/tables/{0[3]}/{0[4]}/*.parquet"),
    ("generate (mid-part)", f"{GENERATE_CACHE}/*/*.batch.json", 0.0, "results/generate/outputs/{0[3]}/{0[4]}/{0[5]}.jsonl.zst"),
    ("train_tokenizer", "results/logs/train_tokenizer/demo-v0.log", 0.5, "results/train_tokenizer/demo-v0/tokenizer.json"),
    ("write_shards", "results/logs/write_shards/demo-v0/*/*/*.log", 0.5, "results/shards/demo-v0/manifest.json"),
]


def processes_in(workdir: Path) -> list[str]:
    """Command lines of live processes that run in `workdir` or name it (a killed run must leave none)."""
    alive = []
    for process in Path("/proc").glob("[0-9]*"):
        try:
            command = (process / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            inside = Path(os.readlink(process / "cwd")).is_relative_to(workdir)
        except OSError:
            continue
        if (inside or str(workdir) in command) and "pytest" not in command:
            alive.append(command)
    return alive


def test_run_killed_at_several_points_resumes_to_the_same_bytes(small_run, tmp_path):
    """SIGKILL the whole run (as a dying node would) while each of several rules is running,
    resume with --rerun-incomplete each time, and end with the uninterrupted run's bytes."""
    repository_copy(tmp_path)  # from the root with the small cut's --configfile, as small_run runs
    write_config(tmp_path, small_cut_config())
    # One core for the first run: the extract part's workers are its cores, and two workers finish
    # its two files together, leaving no time in which the first file's fragment exists and the
    # part has not finished. With one worker the files go in order and the second's extraction is
    # that window.
    args = ["--cores", "1"]
    for rule_name, started, settle_s, unfinished in KILL_POINTS:
        earlier = set(tmp_path.glob(started))
        run = subprocess.Popen(snakemake_command(tmp_path, *args), cwd=tmp_path, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 600
        while not (new := sorted(set(tmp_path.glob(started)) - earlier)):
            assert run.poll() is None, f"the run ended before {rule_name} started"
            assert time.monotonic() < deadline, f"{rule_name} never started"
            time.sleep(0.05)
        unfinished = unfinished.format(new[0].relative_to(tmp_path).with_suffix("").parts)
        time.sleep(settle_s)
        os.killpg(run.pid, signal.SIGKILL)
        run.wait()
        deadline = time.monotonic() + 10
        while processes_in(tmp_path):  # the kernel reaps the group asynchronously
            assert time.monotonic() < deadline, f"killed run left processes behind: {processes_in(tmp_path)[:3]}"
            time.sleep(0.1)
        assert not list(tmp_path.glob(unfinished)), f"the kill was meant to land while {rule_name} ran"
        run_snakemake(tmp_path, "--unlock")  # the killed run could not release its lock
        args = ["--cores", "2", "--rerun-incomplete"]
    run_snakemake(tmp_path, *args)
    resumed_log = (tmp_path / EXTRACT_PART.replace("results/extract/docs", "results/logs/extract")).with_suffix(".log")
    assert "aeb-articles-0000.warc.gz: done by an earlier attempt" in resumed_log.read_text(), \
        "the killed part did not resume from its first file's fragment"
    generated = [json.loads(path.read_text().splitlines()[-1])
                 for path in (tmp_path / GENERATE_CACHE.replace("results/generate/cache", "results/logs/generate")).glob("*.log")]
    assert any(stats["cached_batches"] >= 1 for stats in generated), "the killed generation did not resume from its cache"
    assert_same_outputs(built_hashes(small_run()), result_hashes(tmp_path))
    leftovers = [p for p in (tmp_path / "results").rglob("*.tmp-*")]
    assert not leftovers, f"temporary files survived the resumed run: {leftovers[:5]}"
