"""Continuous operation: a second snapshot of the same site (the real gov.uk re-crawl) is
added to a processed first one. Only the new snapshot's jobs and the cross-snapshot and
manifest steps run, nothing of the first snapshot changes, and the re-crawl's copies of
first-crawl pages are tagged and kept on disk, not deleted. It runs as a user does: from the
root of a checkout (the demo's config/config.yaml beside it) with its own --configfile."""

from __future__ import annotations

import hashlib
import json
import re
import shutil

import pyarrow.parquet as pq
import yaml

from tests.conftest import (demo_config, repository_copy, result_hashes, run_snakemake, with_one_encoder_epoch,
                            with_sources, write_config)
from tokenmill.__main__ import main as tokenmill_main
from tokenmill.io import read_jsonl_zst

FIRST, SECOND = "BL-20140325121225", "BL-20140325122341"
# Rules that see every snapshot: they may run again when one is added.
GLOBAL_STEPS = {"plan", "holdout_manifest", "manifest", "report", "all"}
TEXT_OUTPUTS = (".tsv", ".json", ".md", ".html", ".svg", ".log", ".txt")


def govuk_config(reference_run, snapshots: list[str], holdout_pin: str | None) -> dict:
    """The demo's gov.uk source with the given snapshots, the reference run's tokenizer pinned
    (a trained tokenizer would change with every snapshot), the holdout pinned as carved. Its
    encoder trains one epoch: the duplicate reasons asserted here come before quality's in
    pipeline order (tokenmill.select.judge.final_reason), so no model can change them."""
    config = demo_config()
    with_one_encoder_epoch(config)
    govuk = config["sources"]["govuk"]
    govuk["snapshots"] = {name: govuk["snapshots"][name] for name in snapshots}
    with_sources(config, {"govuk": govuk})
    config["holdout"]["manifest_sha256"] = holdout_pin
    tokenizer = reference_run / "results" / "train_tokenizer" / "demo-v0" / "tokenizer.json"
    config["tokenizer"] = {**config.get("tokenizer", {}), "path": str(tokenizer),
                           "sha256": hashlib.sha256(tokenizer.read_bytes()).hexdigest()}
    return config


def pinned(workdir, config: dict) -> dict:
    write_config(workdir, config)
    run_snakemake(workdir, "--cores", "2", "holdout/manifest.json")
    config["holdout"]["manifest_sha256"] = hashlib.sha256((workdir / "holdout/manifest.json").read_bytes()).hexdigest()
    write_config(workdir, config)
    return config


def select_reasons(work, snapshot: str) -> dict[str, str]:
    """doc_id -> the reason select gave (empty: selected), over the snapshot's select folder."""
    folder = work / f"results/select/demo-v0/tables/govuk/{snapshot}"
    return {row["doc_id"]: row["reason"] for path in folder.glob("*.parquet") for row in pq.read_table(path).to_pylist()}


def planned_jobs(dry_run: str) -> list[tuple[str, str]]:
    """(rule, wildcards) of every job a dry run lists."""
    jobs = re.findall(r"^(?:local)?rule (\w+):\n((?:    .*\n)+)", dry_run, flags=re.MULTILINE)
    return [(rule, next(iter(re.findall(r"wildcards: (.*)", body)), "")) for rule, body in jobs]


def outputs_naming_unconfigured_sources(root, configured: set[str]) -> list[str]:
    """Every output file whose path or text names a demo source that the run's config lacks."""
    others = set(demo_config()["sources"]) - configured
    found = []
    for path in sorted([*(root / "results").rglob("*"), *(root / "holdout").rglob("*")]):
        named = set(path.relative_to(root).parts) & others
        if path.is_file() and path.suffix in TEXT_OUTPUTS:
            text = path.read_text(encoding="utf-8", errors="replace")
            named |= {source for source in others if source in text}
        if named:
            found.append(f"{path.relative_to(root)}: {sorted(named)}")
    return found


def test_a_new_snapshot_runs_only_its_own_jobs_and_tags_copies_of_the_old_one(reference_run, tmp_path, capsys):
    work = repository_copy(tmp_path / "work")
    pinned(work, govuk_config(reference_run, [FIRST], None))
    run_snakemake(work, "--cores", "2")
    assert outputs_naming_unconfigured_sources(work, {"govuk"}) == []
    before = {name: digest for name, digest in result_hashes(work).items() if FIRST in name}
    assert any("shards" in name for name in before) and any("select" in name for name in before)
    first_manifest = tmp_path / "first-manifest.json"
    shutil.copy(work / "results/shards/demo-v0/manifest.json", first_manifest)

    pinned(work, govuk_config(reference_run, [FIRST, SECOND], None))
    dry_run = run_snakemake(work, "-n", "-p")
    jobs = planned_jobs(dry_run.stdout)
    assert jobs, dry_run.stdout[-3000:]
    touching_first = [(rule, wildcards) for rule, wildcards in jobs if FIRST in wildcards]
    # the first snapshot's index generation is built once a later snapshot needs it; nothing else of it
    assert touching_first == [("cross_snapshot_index", f"source=govuk, snapshot={FIRST}")], touching_first
    per_snapshot = {rule for rule, wildcards in jobs if SECOND in wildcards}
    # its extraction ran already: pinning the holdout needs what extract carved from it
    assert {"score", "minhash_cluster", "cross_snapshot_dedup", "select", "tokenize", "write_shards"} <= per_snapshot
    assert {rule for rule, wildcards in jobs if not wildcards or "snapshot=" not in wildcards} <= GLOBAL_STEPS | {
        "rulegraph"}

    run_snakemake(work, "--cores", "2")
    after = result_hashes(work)
    assert {name: after.get(name) for name in before} == before, "an output of the first snapshot changed"

    probe = [row for path in sorted((work / f"results/cross_snapshot_dedup/govuk/{SECOND}").glob("*.parquet"))
             for row in pq.read_table(path).to_pylist()]  # a file per part
    tagged = [row for row in probe if row["xsnap_dup_of"]]
    assert len(tagged) >= 3 and {row["xsnap_dup_snapshot"] for row in tagged} == {FIRST}
    first_ids = {doc["doc_id"] for path in (work / f"results/extract/docs/govuk/{FIRST}").glob("*.jsonl.zst")
                 for doc in read_jsonl_zst(path)}
    assert {row["xsnap_dup_of"] for row in tagged} <= first_ids
    second_docs = {doc["doc_id"] for path in (work / f"results/extract/docs/govuk/{SECOND}").glob("*.jsonl.zst")
                   for doc in read_jsonl_zst(path)}
    assert {row["doc_id"] for row in tagged} <= second_docs  # stored, not deleted
    reasons = select_reasons(work, SECOND)
    # a copy that fails a rule of its own says so first (data.gov.uk's sign-up page: its host's robots.txt)
    assert {reasons[row["doc_id"]] for row in tagged} <= {"cross_snapshot_duplicate", "exact_duplicate",
                                                          "near_duplicate", "too_short", "langid_unclaimed",
                                                          "robots_disallowed"}
    assert "cross_snapshot_duplicate" in {reasons[row["doc_id"]] for row in tagged}

    # a freshness-weighted mix keeps the newer copies instead; only then do older selections depend on newer snapshots
    newer = tmp_path / "newer.yaml"
    config = yaml.safe_load((work / "config.yaml").read_text())
    config["select"]["cross_snapshot_prefer"] = "newer"
    newer.write_text(yaml.safe_dump(config))
    replanned = {(rule, wildcards) for rule, wildcards in planned_jobs(
        run_snakemake(work, "-n", "-p", "--configfile", str(newer)).stdout)}
    assert any(rule == "select" and FIRST in wildcards for rule, wildcards in replanned)
    targets = [f"results/select/demo-v0/tables/govuk/{snapshot}" for snapshot in (FIRST, SECOND)]  # one folder per snapshot
    # "--cores 2" ends the list of the base command's --configfile, which would take the targets as config files
    run_snakemake(work, "--cores", "2", *targets, "--configfile", str(newer))
    first_reasons = select_reasons(work, FIRST)
    superseded = {row["xsnap_latest_of"] for row in tagged}
    assert {first_reasons[doc_id] for doc_id in superseded} & {"cross_snapshot_duplicate"}
    second_reasons = select_reasons(work, SECOND)
    assert "cross_snapshot_duplicate" not in {second_reasons[row["doc_id"]] for row in tagged}

    capsys.readouterr()
    assert tokenmill_main(["manifest-diff", str(first_manifest), str(work / "results/shards/demo-v0/manifest.json"),
                           "--json"]) == 0
    diff = json.loads(capsys.readouterr().out)
    first_shards = [shard["path"] for shard in json.loads(first_manifest.read_text())["shards"]]
    assert diff["removed"] == [] and sorted(e["path"] for e in diff["unchanged"]) == sorted(first_shards)
    # only the delta ships (the demo policy may leave the re-crawl nothing new to add)
    assert all(SECOND in entry["path"] for entry in diff["added"])
