"""The cost plan: core-hours, GPU-hours, bytes, jobs and sbatch calls of a config, before any job.

A finished run (the calibration) is read once into a rates file: for each stage, a line
`cost = fixed + per_unit × driver` fitted by least squares over that stage's jobs, where the
driver is what the stage's work grows with: extract grows with its input bytes (fitted per
source kind: parsing WARC HTML and reading JSONL cost very differently per byte), every later
per-part or per-chunk stage with the documents it reads, a per-snapshot stage with the
documents of its snapshot, and a global stage (training, manifest, report) is a fixed cost.
Costs are the Snakemake benchmark's cpu_time (core-seconds) and s (wall seconds), the bytes of
the job's outputs on disk and its max_rss; documents per input byte (per kind) turn a planned
part's bytes into documents.

Planning a config then needs only its listing (tokenmill.plan: the snapshot's files and sizes,
globbed once) and the rates: no Snakemake, no input file opened, so a 100,000-file snapshot is
costed in seconds. Job counts follow the rule graph (rules/*.smk), sbatch calls the SLURM
profile (array rules: one call per `array limit` jobs; bundled groups: one per
`group-components` jobs; other rules one per job; local rules none).
"""

from __future__ import annotations

import csv
import glob
import json
import math
import os
import re
import socket
from dataclasses import dataclass
from datetime import datetime, timezone
from itertools import groupby

from tokenmill.io import atomic_output
from tokenmill.config import generator_settings, synthetic_sources, used_generators
from tokenmill.chains import sample_per_part
from tokenmill.engine_rules import (CHAIN_RULES, ENGINE_RULES, STAGE_OF_RULE, chained, makes_annotate_job,
                                    makes_part_job)
from tokenmill.langid import languages_of
from tokenmill.ablate.candidates import budget_tokens, candidate_names
from tokenmill.layout import GENERATION_MEASURED, OUTPUTS, SHARD_LISTING, STAGES, Stage
from tokenmill.machine import add_device_time, cpu_model
from tokenmill.plan import LISTING_MARK, Plan, SnapshotListing, read_plan, shard_groups
from tokenmill.select.thresholds import largest_file_bytes, thresholds_policy

MEASURES = ("core_seconds", "wall_seconds", "bytes_written", "max_rss_mb")


STAGE = {stage.name: stage for stage in STAGES}
DRIVERS = {"part": "documents of the part", "chunk": "documents of the chunk", "snapshot": "documents of the snapshot",
           "shard_group": "documents of the shard group", "global": "none (a fixed cost per job)"}
EXTRACT_DRIVER = "input bytes of the part"
# The scopes whose benchmark files are named {prefix}{wildcard of the scope's name}
FILE_PREFIX = {"chunk": "chunk-", "shard_group": "group-"}
GENERATION_STAGES = tuple(ENGINE_RULES["generate"].values())
SYNTHETIC_SNAPSHOT_STAGES = ("synthetic_inputs", "synthetic_quality")


# --- calibration ---------------------------------------------------------------------------

def fit_line(points: list[tuple[float, float]]) -> dict:
    """`fixed + per_unit × driver` by least squares over (driver, cost) points, both terms ≥ 0:
    a negative fixed cost or rate is the noise of a small calibration and would predict negative
    seconds for small jobs, so it is clamped (a negative rate: the mean as a fixed cost; a negative
    fixed cost: the line through the origin and the points' centroid). Either clamp keeps the
    calibration's total: its jobs priced again sum to what they took. One job, or jobs of equal
    drivers: all fixed."""
    count = len(points)
    mean_x = sum(x for x, _ in points) / count
    mean_y = sum(y for _, y in points) / count
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    if count < 2 or spread == 0:
        return _rounded(mean_y, 0.0)
    rate = sum((x - mean_x) * (y - mean_y) for x, y in points) / spread
    if rate <= 0:
        return _rounded(max(mean_y, 0.0), 0.0)
    fixed = mean_y - rate * mean_x
    if fixed < 0:
        return _rounded(0.0, mean_y / mean_x)
    return _rounded(fixed, rate)


def _rounded(fixed: float, per_unit: float) -> dict:
    """Six significant digits: the calibration's noise is far larger, and the file diffs cleanly."""
    return {"fixed": float(f"{fixed:.6g}"), "per_unit": float(f"{per_unit:.6g}")}


def predict(line: dict, driver: float) -> float:
    return line["fixed"] + line["per_unit"] * driver


def read_benchmark(path: str) -> dict[str, float]:
    """A Snakemake benchmark TSV as core-seconds, wall seconds and max RSS (MB), the mean of its
    repeats, and whether cpu_time was sampled. Snakemake samples the job's processes at its start
    and then every second: a job that ends within the second has cpu_time NA, or 0 from the one
    sample taken before its program started. Its wall seconds stand in (a job that short ran on
    one core); a 0 would price the stage's fixed cost (the interpreter's start) at nothing."""
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    if not rows:
        raise ValueError(f"{path}: an empty benchmark file")

    def number(row: dict, column: str, default: float) -> float:
        try:
            return float(row[column])
        except (KeyError, TypeError, ValueError):
            return default

    wall = [number(row, "s", 0.0) for row in rows]
    cpu = [number(row, "cpu_time", 0.0) for row in rows]
    return {"wall_seconds": sum(wall) / len(rows),
            "core_seconds": sum(c if c > 0 else w for c, w in zip(cpu, wall)) / len(rows),
            "max_rss_mb": sum(number(row, "max_rss", 0.0) for row in rows) / len(rows),
            "cpu_time_sampled": all(c > 0 for c in cpu)}


def path_bytes(path: str) -> int:
    """A file's size, or everything under a directory; 0 when absent."""
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(folder, name)) for folder, _, names in os.walk(path) for name in names)
    return os.path.getsize(path) if os.path.exists(path) else 0


def _job_wildcards(stage: Stage, components: list[str]) -> dict[str, str] | None:
    """The wildcards of a benchmark file (its path under benchmarks/{rule}/, read from the end:
    a versioned rule has the version first); None when the path does not fit the stage's scope."""
    size = {"part": 3, "chunk": 3, "shard_group": 3, "snapshot": 2, "global": 0}[stage.scope]
    if len(components) not in (size, size + 1):
        return None
    named = dict(zip(("source", "snapshot", "part")[:size], components[len(components) - size:]))
    prefix = FILE_PREFIX.get(stage.scope)
    if prefix:  # the last component is {prefix}{wildcard}: chunk-0000, group-0000
        name = named.pop("part")
        if not name.startswith(prefix):
            return None
        named[stage.scope] = name[len(prefix):]
    if len(components) > size:
        named["version"] = components[0]
    return named


def _fill(template: str, wildcards: dict[str, str]) -> str | None:
    """A path template with the job's wildcards; None when it needs one the job lacks."""
    try:
        return template.format(**wildcards)
    except KeyError:
        return None


def read_listings(plan_dir: str) -> dict[tuple[str, str, str], tuple[int, int]]:
    """(source, snapshot, part) -> (input bytes, input files), from every listing in `plan_dir`."""
    parts = {}
    for path in sorted(glob.glob(os.path.join(plan_dir, "*", "*.inputs.tsv"))):
        source, snapshot = os.path.basename(os.path.dirname(path)), os.path.basename(path)[:-len(".inputs.tsv")]
        with open(path, encoding="utf-8", newline="") as handle:
            if not handle.readline().startswith(LISTING_MARK):
                raise ValueError(f"{path} is not a tokenmill input listing")
            for part, rows in groupby(csv.DictReader(handle, delimiter="\t"), key=lambda row: row["part"]):
                sizes = [int(row["bytes"]) for row in rows]
                parts[(source, snapshot, part)] = (sum(sizes), len(sizes))
    return parts


def _encoder_device(results: str, wildcards: dict[str, str]) -> str | None:
    """What the encoder job's log says it ran on ("cpu", or "cuda (GPU name)"); None if it says nothing."""
    log = os.path.join(results, "logs", "score_quality_encoder", wildcards["source"], wildcards["snapshot"],
                       f"chunk-{wildcards['chunk']}.log")
    if not os.path.exists(log):
        return None
    with open(log, encoding="utf-8", errors="replace") as handle:
        for line in reversed(handle.read().splitlines()):
            if line.startswith("{") and '"device"' in line:
                said = json.loads(line)
                return f"{said['device']} ({said['gpu']})" if said.get("gpu") else said["device"]
    return None


@dataclass
class MeasuredRun:
    """What a finished run's files say: per part its kind, input bytes and files and documents;
    per stage and fit key (extract: the source kind; else "all") each job's (driver, measures)."""
    kinds: dict[tuple[str, str, str], str]
    input_bytes: dict[tuple[str, str, str], int]
    input_files: dict[tuple[str, str, str], int]
    documents: dict[tuple[str, str, str], int]
    jobs: dict[str, dict[str, list[tuple[float, dict]]]]
    skipped: list[str]
    devices: set[str]
    newest: float  # the newest benchmark file's mtime: when the run ended


def measure_run(results: str = "results") -> MeasuredRun:
    """Read a finished run in `results`: its plan (parts and kinds), listings (input bytes), the
    parts' stats (documents), every benchmark file and the outputs of its job. A benchmark file
    of a rule or a path that is not a stage of the graph is listed as skipped."""

    plan_path = os.path.join(results, "plan", "parts.tsv")
    if not os.path.exists(plan_path):
        raise ValueError(f"{plan_path} does not exist: calibrate reads a finished run's results folder")
    kinds = {(row["source"], row["snapshot"], row["part"]): row["kind"] for row in read_plan(plan_path)}
    listed = read_listings(os.path.join(results, "plan"))
    documents = {}
    for key in kinds:
        if key not in listed:
            raise ValueError(f"part {'/'.join(key)} of {plan_path} is in no listing of {results}/plan")
        stats = OUTPUTS["stats"].format(source=key[0], snapshot=key[1], part=key[2])
        with open(os.path.join(results, stats), encoding="utf-8") as handle:
            documents[key] = json.load(handle)["docs"]
    snapshot_documents: dict[tuple[str, str], int] = {}
    for (source, snapshot, _), count in documents.items():
        snapshot_documents[(source, snapshot)] = snapshot_documents.get((source, snapshot), 0) + count
    run = MeasuredRun(kinds, {key: listed[key][0] for key in kinds}, {key: listed[key][1] for key in kinds},
                      documents, {}, [], set(), 0.0)

    bench_root = os.path.join(results, "benchmarks")
    # a rule's files: benchmarks/{rule}.tsv (a global rule) or under benchmarks/{rule}/
    entries = os.listdir(bench_root) if os.path.isdir(bench_root) else []
    names = sorted({entry.removesuffix(".tsv") for entry in entries})
    for name in names:
        files = sorted(glob.glob(os.path.join(bench_root, name, "**", "*.tsv"), recursive=True))
        files += [path for path in [os.path.join(bench_root, f"{name}.tsv")] if os.path.isfile(path)]
        stage = STAGE.get(name)
        for path in files:
            relative = os.path.relpath(path, os.path.join(bench_root, name))
            components = [] if relative.startswith("..") else relative[:-len(".tsv")].split(os.sep)
            wildcards = _job_wildcards(stage, components) if stage and not stage.local else None
            key = wildcards and (wildcards.get("source"), wildcards.get("snapshot"), wildcards.get("part"))
            if wildcards is None or (stage.scope == "part" and key not in documents):
                run.skipped.append(os.path.relpath(path, results))
                continue
            run.newest = max(run.newest, os.path.getmtime(path))
            measured = read_benchmark(path)
            outputs = [_fill(OUTPUTS[name], wildcards) for name in stage.outputs]
            measured["bytes_written"] = sum(path_bytes(os.path.join(results, out)) for out in outputs if out)
            kind, driver = "all", 0.0
            if stage.scope == "part":
                kind, driver = (kinds[key], run.input_bytes[key]) if name == "extract" else ("all", documents[key])
            elif stage.scope == "snapshot":
                driver = snapshot_documents.get(key[:2], 0)
            elif stage.scope == "shard_group":  # an equal share of the snapshot's shuffle keys
                with open(os.path.join(results, outputs[0], SHARD_LISTING), encoding="utf-8") as handle:
                    groups = json.load(handle).get("groups", 1)
                driver = snapshot_documents.get(key[:2], 0) / groups
            elif stage.scope == "chunk":  # the encoder's output holds one row per document it scored
                import pyarrow.parquet as pq

                driver = pq.read_metadata(os.path.join(results, outputs[0])).num_rows
                run.devices.add(_encoder_device(results, wildcards) or "cpu")
            run.jobs.setdefault(name, {}).setdefault(kind, []).append((float(driver), measured))
    return run


def measured_totals(run: MeasuredRun) -> dict[str, dict]:
    """Per stage of a measured run: jobs, the documents it handled (extract: those it wrote; a
    global stage: none) and its summed core-seconds, wall seconds and bytes written."""
    totals = {}
    for name, by_kind in run.jobs.items():
        jobs = [job for entries in by_kind.values() for job in entries]
        totals[name] = {"jobs": len(jobs), **{measure: sum(m[measure] for _, m in jobs)
                                              for measure in ("core_seconds", "wall_seconds", "bytes_written")},
                        "documents": sum(run.documents.values()) if name == "extract" else
                        None if STAGE[name].scope == "global" else sum(driver for driver, _ in jobs)}
    return totals


def calibrate(results: str | list[str] = "results") -> dict:
    """The rates of one or several finished runs (measure_run), fitted over all their jobs
    together: a small run's jobs pin a stage's fixed cost, a large one's its rate per document.
    See the module's docstring. Deterministic for given runs: its date is the newest benchmark
    file's; the host, CPU and cores are this machine's (calibrate where the runs ran)."""
    folders = [results] if isinstance(results, str) else list(results)
    runs = [measure_run(folder) for folder in folders]
    points: dict[str, dict[str, list[tuple[float, dict]]]] = {}
    for run in runs:
        for name, by_kind in run.jobs.items():
            for kind, jobs in by_kind.items():
                points.setdefault(name, {}).setdefault(kind, []).extend(jobs)
    devices = set().union(*(run.devices for run in runs))
    stages = {}
    for name, by_kind in sorted(points.items()):
        stage = STAGE[name]
        stages[name] = {
            "scope": stage.scope, "driver": EXTRACT_DRIVER if name == "extract" else DRIVERS[stage.scope],
            "jobs": sum(len(jobs) for jobs in by_kind.values()),
            "fits": {kind: {"jobs": len(jobs), "driver_total": sum(x for x, _ in jobs),
                            "jobs_without_cpu_time": sum(not m["cpu_time_sampled"] for _, m in jobs),
                            **{measure: fit_line([(x, m[measure]) for x, m in jobs]) for measure in MEASURES}}
                     for kind, jobs in sorted(by_kind.items())}}
        if stage.scope == "chunk":
            stages[name]["device"] = " + ".join(sorted(devices))
    kind_bytes: dict[str, int] = {}
    kind_docs: dict[str, int] = {}
    for run in runs:
        for key, kind in run.kinds.items():
            kind_bytes[kind] = kind_bytes.get(kind, 0) + run.input_bytes[key]
            kind_docs[kind] = kind_docs.get(kind, 0) + run.documents[key]
    newest = max(run.newest for run in runs)
    return {
        "format": 1,
        "provenance": {
            "date": datetime.fromtimestamp(newest, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") if newest else None,
            "hostname": socket.gethostname(), "cpu": cpu_model(), "cores": os.cpu_count(),
            "encoder_device": stages.get("score_quality_encoder", {}).get("device"),
            "note": "core_seconds: Snakemake's cpu_time (user + system of the job's processes, sampled each "
                    "second, then every 30 s), or the wall seconds of a job that ended before a sample saw its "
                    "program; bytes_written: the job's outputs on disk; max_rss_mb: Snakemake's max_rss"},
        "run": {"runs": len(runs), "snapshots": sum(len({key[:2] for key in run.kinds}) for run in runs),
                "parts": sum(len(run.kinds) for run in runs),
                "input_files": sum(sum(run.input_files.values()) for run in runs),
                "input_bytes": dict(sorted(kind_bytes.items())), "documents": dict(sorted(kind_docs.items()))},
        "documents_per_byte": {kind: float(f"{kind_docs[kind] / kind_bytes[kind]:.6g}") if kind_bytes[kind] else 0.0
                               for kind in sorted(kind_bytes)},
        "stages": stages,
        "generation": generation_rates(list(zip(folders, runs))),
        "skipped_benchmarks": sorted(os.path.join(folder, path) if len(folders) > 1 else path
                                     for folder, run in zip(folders, runs) for path in run.skipped),
    }


def generation_rates(runs: list[tuple[str, MeasuredRun]]) -> dict:
    """New tokens per synthetic document (from the generate jobs' stats) and new tokens per
    second per device (from what those jobs measured beside their benchmark files, of the batches
    they generated: a batch read from the cache was timed by the run that made it), over the
    runs' (results folder, measured run)."""
    tokens, documents, devices = 0, 0, {}
    for results, run in runs:
        documents += sum(count for key, count in run.documents.items() if run.kinds[key] == "synthetic")
        for name in GENERATION_STAGES:
            for key in run.kinds:
                if run.kinds[key] != "synthetic":
                    continue
                where = {"source": key[0], "snapshot": key[1], "part": key[2]}
                stats = os.path.join(results, OUTPUTS[f"{name}_stats"].format(**where))
                measured = os.path.join(results, "benchmarks", name, *key[:2], f"{key[2]}{GENERATION_MEASURED}")
                if os.path.exists(stats):
                    with open(stats, encoding="utf-8") as handle:
                        tokens += json.load(handle)["new_tokens"]
                if os.path.exists(measured):
                    with open(measured, encoding="utf-8") as handle:
                        for label, entry in json.load(handle)["devices"].items():
                            add_device_time(devices, label, entry)
    return {"new_tokens_per_document": float(f"{tokens / documents:.6g}") if documents else None,
            "devices": {label: {"kind": entry["kind"], "units": entry["units"],
                                "tokens_per_second": float(f"{entry['new_tokens'] / entry['seconds']:.6g}")}
                        for label, entry in sorted(devices.items()) if entry["seconds"]}}


def write_rates(rates: dict, path: str) -> None:

    with atomic_output(path) as temp:
        temp.write_text(json.dumps(rates, indent=1, sort_keys=True) + "\n", encoding="utf-8")


# --- planning ------------------------------------------------------------------------------

def stage_jobs(stage: Stage, config: dict, plan: Plan, documents: dict[tuple[str, str, str], float]
               ) -> list[tuple[str, float]]:
    """(fit key, driver) of every job the graph runs for `stage` on the planned config, as the
    rules make them (rules/*.smk): cross_snapshot_index only for snapshots a later snapshot of
    the same source probes, cross_snapshot_dedup only for the parts of a snapshot that has an
    older one, the chain rules only for the sources chains.sources names (chain_model driven by the
    documents it samples: sample_per_part), train_tokenizer only when the config names no tokenizer."""
    if stage.scope == "part":
        parts = [part for part in plan.parts if makes_part_job(stage.name, config, part.source, part.kind)
                 and (stage.name != "cross_snapshot_dedup" or plan.older_generations(config, part.source,
                                                                                     part.snapshot, "{snapshot}"))]
        return [(part.kind, float(part.bytes)) if stage.name == "extract" else ("all", documents[part.key])
                for part in parts]
    if stage.scope == "chunk":
        return [("all", sum(documents[part.key] for part in parts)) for parts in plan.chunks.values()]
    if stage.scope == "shard_group":
        jobs = []
        for parts in plan.by_snapshot.values():
            groups = len(shard_groups(len(parts), config["shards"]["parts_per_job"]))
            jobs += [("all", sum(documents[part.key] for part in parts) / groups)] * groups
        return jobs
    if stage.scope == "snapshot":
        snapshots = list(plan.by_snapshot.items())
        if stage.name in SYNTHETIC_SNAPSHOT_STAGES:
            synthetic = set(synthetic_sources(config))
            snapshots = [(key, parts) for key, parts in snapshots if key[0] in synthetic]
        if stage.name in CHAIN_RULES:
            snapshots = [(key, parts) for key, parts in snapshots if chained(config, key[0])]
        if stage.name == "cross_snapshot_index":
            # the generations that the rules probe a later snapshot of the same source against
            probed = {tuple(generation.split("\0")) for source, snapshot in plan.by_snapshot
                      for generation in plan.older_generations(config, source, snapshot, "{source}\0{snapshot}")}
            snapshots = [(key, parts) for key, parts in snapshots if key in probed]
        if stage.name == "chain_model":  # it learns from the first documents of each part (chains.sample_documents)
            return [("all", sum(min(documents[part.key], sample_per_part(config["chains"], len(parts))) for part in parts))
                    for _, parts in snapshots]
        return [("all", sum(documents[part.key] for part in parts)) for _, parts in snapshots]
    if stage.name == "train_tokenizer" and config["tokenizer"]["path"]:
        return []
    if stage.name == "train_generator" and not any(generator_settings(config, name)["path"] is None
                                                   for name in used_generators(config)):
        return []
    if STAGE_OF_RULE.get(stage.name) == "annotate" and not makes_annotate_job(stage.name, config):
        return []
    return [("all", 0.0)]


# Of the CPUs a part job holds, how many its workers keep busy: its own process only hands out units
# (a file, a range of a WARC) and joins their fragments, so one such process feeds this many workers
# (bench_part.py, 2026-12-05, bench/README.md: extract with resiliparse 67-79 over three runs, the
# engine cheapest per page and so the hardest to feed, trafilatura 432-592; score > 100 from its
# 0.04 ms per page against its workers' 7.4 ms). A rule not named here is taken to use every CPU it holds: its threads, ranks or
# one worker per CPU (measured on up to 2 cores only).
FED_WORKERS = {"extract": 69, "score": 100}
# The rules' own threads (rules/*.smk) where no config key sets them; the profile's set-threads
# overrides both (tests/workflow/test_cost.py holds these to the threads Snakemake gives each job).
RULE_THREADS = {"tokenize": 2, "train_tokenizer": 2, "generate_vllm": 4, "annotate_vllm": 4, "select_thresholds": 2}


def largest_output_bytes(name: str, config: dict) -> int | None:
    """The most a job of `name` writes, however many its documents, where its output is a summary:
    select_thresholds' sketches per language, whose calibrated bytes per document are the sketches
    filling up on runs of a few hundred documents (395 GB for a Common Crawl snapshot)."""
    if name == "select_thresholds":
        return largest_file_bytes(languages_of(config["langid"]["model"]), thresholds_policy(config["select"]))
    return None


MPI_RULES = ("minhash_cluster", "cross_snapshot_index", "select", "chain_groups")
# A GPU's documents per second for a rule the profile puts on a GPU and that was calibrated on a CPU:
# the seed's figure for a 150M-parameter encoder at 512 tokens, until one is measured on a GPU.
GPU_DOCS_PER_SECOND = 2700.0
# The files the workflow sizes minhash.tasks: auto from (and plan-cost's defaults): a snapshot's
# documents from its input bytes, and the MPI jobs' memory per document measured at scale.
BUNDLED_RATES = "config/cost_rates.json"
BUNDLED_AT_SCALE = "config/cost_at_scale.json"


def planned_documents(parts, documents_per_byte: dict[str, float]) -> float:
    """The documents a calibration predicts for `parts` (their input bytes, by kind); a kind it
    has no calibration for counts at the densest calibrated kind's rate."""
    densest = max(documents_per_byte.values(), default=0.0)
    return sum(part.bytes * documents_per_byte.get(part.kind, densest) for part in parts)


def snapshot_mpi_rules(config: dict) -> tuple[str, ...]:
    """The MPI rules a snapshot's ranks are sized for: chain_groups only where chains.sources names
    a source (the workflow gives every MPI job of a snapshot the same ranks)."""
    return MPI_RULES if config["chains"]["sources"] else tuple(name for name in MPI_RULES if name not in CHAIN_RULES)


def ranks_for_memory(documents: float, at_scale: dict, rank_memory_mb: float, rules: tuple[str, ...]) -> int:
    """The fewest ranks (at least 2) over which each of `rules`' share of a snapshot's
    `documents` fits `rank_memory_mb` a rank, at the memory per document and per rank that
    bench_dedup.py, bench_snapshot_steps.py and bench_chains.py measured (at_scale_lines)."""
    ranks = 2
    for name in rules:
        entry = (at_scale.get("stages") or {}).get(name)
        if entry is None or "ranks" not in entry:
            continue
        lines = at_scale_lines(entry)
        room = rank_memory_mb - lines["base_rss_mb"]
        if room <= 0:
            raise ValueError(f"minhash.rank_memory_gb: {rank_memory_mb / 1000:g} GB is less than a {name} rank's "
                             f"{lines['base_rss_mb']:.0f} MB before its documents")
        ranks = max(ranks, math.ceil(lines["rss_per_rank"] * documents / room))
    return ranks


def mpi_ranks(name: str, config: dict, documents: float = 0.0, at_scale: dict | None = None) -> int:
    """The ranks one job of rule `name` runs on a snapshot of `documents` (1 for a rule that is no
    MPI job): minhash.tasks, or with `auto` the ranks its memory needs (ranks_for_memory)."""
    if name not in MPI_RULES:
        return 1
    tasks = config["minhash"]["tasks"]
    if tasks != "auto":
        return tasks
    return ranks_for_memory(documents, at_scale or {}, config["minhash"]["rank_memory_gb"] * 1000,
                            snapshot_mpi_rules(config))


def job_cores(name: str, config: dict, profile: dict, ranks: int | None = None) -> int:
    """The CPUs one job of rule `name` holds on the cluster: the profile's set-threads (times the
    ranks of an MPI rule, one CPU each: `ranks`, else mpi_ranks), else the rule's own threads."""
    ranks = mpi_ranks(name, config) if ranks is None else ranks
    threads = (profile.get("set-threads") or {}).get(name)
    if threads is not None:
        return int(threads) * ranks
    if name in ("extract", "ocr", "ocr_vllm", "score"):  # run_cores(): a local run's --cores
        return int(profile.get("cores") or 1)
    if name in ("score_quality_encoder", "train_quality_encoder"):
        return config["quality"]["encoder"]["threads"]
    if name == "train_generator":
        return config["synthetic"]["train"]["threads"]
    if name in ("generate", "annotate"):
        return max((generator_settings(config, generator)["threads"] for generator in used_generators(config)),
                   default=1)
    return RULE_THREADS.get(name, ranks)


def profile_runtimes(profile: dict) -> dict[str, float]:
    """Each rule's SLURM run time limit in seconds (set-resources runtime, else default-resources')."""
    default = (profile.get("default-resources") or {}).get("runtime")
    limits = {rule: resources.get("runtime") for rule, resources in (profile.get("set-resources") or {}).items()}
    return {stage.name: float(minutes) * 60 for stage in STAGES
            for minutes in [limits.get(stage.name) or default] if minutes}


def profile_settings(profile: dict) -> tuple[set[str], int | None, dict[str, str], dict[str, int], dict[str, int]]:
    """What a SLURM profile says about submission: the array rules (`slurm-array-jobs`: a comma
    list or "all"), its array limit, the bundled groups (rule -> group) and their
    `group-components`, and GPUs per job of each rule (set-resources gpu, or a gres gpu:N)."""
    arrays = {name.strip() for name in str(profile.get("slurm-array-jobs") or "").replace(";", ",").split(",")}
    limit = profile.get("slurm-array-limit")
    gpus = {}
    for rule, resources in (profile.get("set-resources") or {}).items():
        count = resources.get("gpu") or 0
        gres = re.search(r"gpu(?::[^:,]+)?:(\d+)", str(resources.get("gres") or ""))
        if count or gres:
            gpus[rule] = int(count or gres.group(1))
    return (arrays - {""}, int(limit) if limit else None, dict(profile.get("groups") or {}),
            {group: int(n) for group, n in (profile.get("group-components") or {}).items()}, gpus)


def group_components(group: set[str], jobs: dict[str, int]) -> int:
    """The connected components of a group's jobs (Snakemake makes one group job of each, and
    `group-components` bundles that many): the grouped rules' jobs read no output of each other."""
    return sum(jobs.get(name, 0) for name in group)


def sbatch_calls(jobs: dict[str, int], profile: dict, array_limit: int | None,
                 components=lambda group: 0) -> dict[str, tuple[int | None, str]]:
    """sbatch calls per stage and why: none for a local rule; an array rule, one per `array_limit`
    jobs (one job alone goes as a plain job); a group, one per `group-components` of its
    `components(group)` connected components, counted on its first stage in pipeline order (the
    plugin never arrays a group job); any other rule one per job. At least these: the plugin
    submits an array per batch of jobs ready together, so jobs that become ready apart take more."""
    arrays, profile_limit, groups, bundled, _ = profile_settings(profile)
    limit = array_limit or profile_limit or 1000
    calls: dict[str, tuple[int | None, str]] = {}
    counted: set[str] = set()
    for name, count in jobs.items():
        if STAGE[name].local:
            calls[name] = (None, "local")
        elif name in groups:
            group = groups[name]
            if group in counted or not count:
                calls[name] = (0, f"in group {group}")
                continue
            counted.add(group)
            per_call = bundled.get(group, 1)
            calls[name] = (math.ceil(components(group) / per_call), f"group {group}, {per_call} per sbatch")
        elif (name in arrays or "all" in arrays) and count > 1:
            calls[name] = (math.ceil(count / limit), f"array, {limit} per sbatch")
        else:
            calls[name] = (count, "one per job")
    return calls


def plan_cost(config: dict, listings: list[SnapshotListing], rates: dict, profile: dict, cores: int = 128,
              array_limit: int | None = None, at_scale: dict | None = None, node_memory_gb: float = 256.0,
              gpu_docs_per_second: float | None = GPU_DOCS_PER_SECOND) -> dict:
    """The cost plan of a validated config whose snapshots are `listings`: per stage in pipeline
    order, jobs, sbatch calls, documents, core-seconds, GPU-seconds, bytes written, the longest
    job and the largest max RSS (a linear extrapolation, rough), from `rates` (calibrate), with
    the per-document rates of the stages in `at_scale` (read_at_scale) taken from there instead;
    totals; and a stage-barrier wall time
    on `cores` cores (each stage starts when the one before has finished, and lasts its
    core-seconds over the cores or its longest job, whichever is longer). A job whose memory
    per node exceeds `node_memory_gb` (a node of the profile's `cores` CPUs) is marked, and so
    is one longer than its rule's runtime, each with the setting that fixes it (setting_advice).
    A rule the profile puts on a GPU whose calibration was measured on a CPU is priced at
    `gpu_docs_per_second` (None: the CPU rate)."""
    plan = Plan(listings, config["quality"]["encoder"]["parts_per_job"], {})
    per_byte = rates["documents_per_byte"]
    calibration_cores = rates["provenance"].get("cores") or 1
    missing = sorted({part.kind for part in plan.parts} - set(per_byte))
    if missing:
        raise ValueError(f"the rates file has no calibration for source kind {', '.join(missing)}: "
                         f"calibrate on a run with such a source")
    documents = {part.key: part.bytes * per_byte[part.kind] for part in plan.parts}
    jobs = {stage.name: stage_jobs(stage, config, plan, documents) for stage in STAGES}
    counts = {name: len(entries) for name, entries in jobs.items()}
    _, _, groups, _, gpus = profile_settings(profile)
    runtimes = profile_runtimes(profile)
    calls = sbatch_calls(counts, profile, array_limit, lambda group: group_components(
        {name for name, g in groups.items() if g == group}, counts))
    scaled = {name: at_scale_lines(entry) for name, entry in ((at_scale or {}).get("stages") or {}).items()}
    node_cores, node_memory_mb = int(profile.get("cores") or 1), node_memory_gb * 1000
    largest_part = max(documents.values(), default=0.0)
    rows, wall = [], 0.0
    for stage in STAGES:
        entries = jobs[stage.name]
        rated = rates["stages"].get(stage.name)
        row = {"stage": stage.name, "scope": stage.scope, "jobs": len(entries), "sbatch": calls[stage.name][0],
               "submission": calls[stage.name][1],
               "documents": None if stage.scope == "global" or stage.local else
               sum(documents.values()) if stage.name == "extract" else sum(driver for _, driver in entries),
               "core_seconds": None, "gpu_seconds": None, "bytes_written": None, "longest_job_seconds": None,
               "max_rss_mb": None, "note": "local rule: runs in the head job" if stage.local else ""}
        if stage.local or not entries:
            rows.append(row)
            continue
        if rated is None:
            row["note"] = "not calibrated"
            rows.append(row)
            continue
        fits = rated["fits"]
        unfitted = sorted({key for key, _ in entries} - set(fits))
        if unfitted:
            raise ValueError(f"the rates of {stage.name} have no fit for {', '.join(unfitted)} "
                             f"(calibrated: {', '.join(sorted(fits))}); calibrate on a run with such a source")
        job_ranks = [mpi_ranks(stage.name, config, driver, at_scale) for _, driver in entries]
        helds = [job_cores(stage.name, config, profile, ranks) for ranks in job_ranks]
        lines = scaled.get(stage.name) or {}
        measured_on = rated.get("device") or "cpu"
        gpu_rate = gpu_docs_per_second if gpus.get(stage.name) and gpu_docs_per_second and measured_on == "cpu" else None
        if lines:
            fits = {key: at_scale_fit(fit, lines) for key, fit in fits.items()}
            row["at_scale"] = {"documents": at_scale["stages"][stage.name]["documents"], **lines}
        elif gpu_rate:  # the calibration's rate is a CPU's: the GPU's seconds per document instead
            fits = {key: at_scale_fit(fit, {"core_seconds": 1.0 / gpu_rate}) for key, fit in fits.items()}

        def busy_of(held: int) -> float:
            if lines:  # ranks or worker processes, one CPU each, at their measured speed; else one CPU
                return max(held * lines["efficiency"], 1.0) if "efficiency" in lines else 1.0
            return 1.0 if gpu_rate else min(held, FED_WORKERS.get(stage.name, held))

        per_job = [{measure: max(predict(fits[key][measure], driver), 0.0) for measure in MEASURES}
                   for key, driver in entries]
        largest_output = largest_output_bytes(stage.name, config)
        if largest_output is not None:
            for job in per_job:
                job["bytes_written"] = min(job["bytes_written"], largest_output)
        for job, (key, driver), held, ranks in zip(per_job, entries, helds, job_ranks):
            job["wall_seconds"] = job_wall(job, fits[key]["wall_seconds"], busy_of(held), min(held, calibration_cores))
            if "rss_per_rank" in lines:  # the MPI job's documents are spread over its ranks
                job["max_rss_mb"] = lines["base_rss_mb"] + lines["rss_per_rank"] * driver / ranks
            elif "rss_per_part_document" in lines:  # its fit's start, and each worker's largest part
                job["max_rss_mb"] += lines["rss_per_part_document"] * largest_part * held
        row.update({measure: sum(job[measure] for job in per_job) for measure in ("core_seconds", "bytes_written")})
        largest = max(range(len(entries)), key=lambda index: entries[index][1])
        row["cores_per_job"], row["busy_cores_per_job"] = helds[largest], busy_of(helds[largest])
        row["ranks"] = job_ranks[largest] if stage.name in MPI_RULES else None
        row["billed_core_seconds"] = sum(job["wall_seconds"] * held for job, held in zip(per_job, helds))
        row["longest_job_seconds"] = max(job["wall_seconds"] for job in per_job)
        row["max_rss_mb"] = max(job["max_rss_mb"] for job in per_job)
        # memory measured at scale only: a calibrated max RSS is a line through jobs of a few megabytes
        if {"max_rss_mb", "rss_per_rank", "rss_per_part_document"} & lines.keys() and \
                max(job["max_rss_mb"] * min(ranks, node_cores) for job, ranks in zip(per_job, job_ranks)) > node_memory_mb:
            row["over_memory"] = node_memory_mb
        if "rss_per_rank" in lines:
            row["ranks_for_memory"] = ranks_for_memory(max(driver for _, driver in entries), at_scale,
                                                       node_memory_mb / node_cores, snapshot_mpi_rules(config))
        limit = runtimes.get(stage.name)
        if limit and row["longest_job_seconds"] > limit:
            row["over_runtime"] = limit
        if stage.name == "extract":
            row["note"] = f"rates per input byte, by kind: {', '.join(sorted(fits))}"
        if gpus.get(stage.name):
            row["gpu_seconds"] = sum(job["wall_seconds"] for job in per_job) * gpus[stage.name]
            row["note"] = f"on {gpus[stage.name]} GPU(s) per job; " + (
                f"at {gpu_rate:,.0f} documents/s a GPU (--gpu-docs-per-second, not measured), not the calibration's CPU rate"
                if gpu_rate else f"rate measured on {measured_on}"
                + (" (a CPU rate: --gpu-docs-per-second prices a GPU)" if measured_on == "cpu" else ""))
        elif rated.get("device"):
            row["note"] = f"on CPU (the profile asks no GPU); rate measured on {rated['device']}"
        row["advice"] = setting_advice(stage.name, row, config)
        wall += max(row["billed_core_seconds"] / cores, row["longest_job_seconds"])
        rows.append(row)
    summed = [row for row in rows if row["core_seconds"] is not None]
    totals = {"jobs": sum(row["jobs"] for row in rows), "sbatch": sum(row["sbatch"] or 0 for row in rows),
              **{measure: sum(row[measure] or 0.0 for row in summed)
                 for measure in ("core_seconds", "billed_core_seconds", "gpu_seconds", "bytes_written")}}
    return {
        "inputs": {"snapshots": len(plan.listings), "parts": len(plan.parts),
                   "files": sum(len(part.inputs) for part in plan.parts), "bytes": sum(p.bytes for p in plan.parts),
                   "documents": sum(documents.values())},
        "cores": cores, "node_memory_gb": node_memory_gb, "node_cores": node_cores,
        "stages": rows, "totals": totals, "wall_seconds": wall,
        "not_calibrated": [row["stage"] for row in rows if row["note"].startswith("not calibrated")],
        "generation": generation_cost(rows, documents, plan, rates, config["report"]["prices"]),
        "rates": {"provenance": rates["provenance"], "run": rates["run"]},
        "at_scale": {name: entry.get("measured") for name, entry in ((at_scale or {}).get("stages") or {}).items()},
    }


# --- rates measured at scale ---------------------------------------------------------------

AT_SCALE_FORMAT = 1


def read_at_scale(path: str) -> dict:
    """The per-document rates that benchmarks measured at scale (config/cost_at_scale.json): a
    stage whose jobs cost well under a second in any local run has its rate fitted on noise."""
    with open(path, encoding="utf-8") as handle:
        at_scale = json.load(handle)
    if at_scale.get("format") != AT_SCALE_FORMAT:
        raise ValueError(f"{path}: format {at_scale.get('format')!r}, expected {AT_SCALE_FORMAT}")
    unknown = sorted(set(at_scale["stages"]) - set(STAGE))
    if unknown:
        raise ValueError(f"{path}: {', '.join(unknown)} is no stage of the workflow")
    return at_scale


def _speed_per_unit(walls: dict) -> dict:
    """A rank's or worker's speed from the walls on 1 and 2 of them: 2 against 1, halved (measured),
    and no more than 1 (efficiency)."""
    measured = walls["1"]["wall_seconds"] / (2 * walls["2"]["wall_seconds"])
    return {"measured_efficiency": measured, "efficiency": min(measured, 1.0)}


def at_scale_lines(entry: dict) -> dict:
    """Per document, from one benchmark's run of `documents`: core-seconds and, where measured, max
    RSS MB (over the process's RSS before its input; per document of a part, `documents_per_part`,
    for a job each of whose workers reads one part at a time) and, for a job whose worker processes share its parts
    (`workers`: walls on 1 and 2), their speed per worker as `efficiency`; or for an MPI job measured on 1 and 2 ranks, its one-rank
    core-seconds, its speed-up per rank (`efficiency`: 2 ranks against 1, halved, and no more than 1:
    2 ranks on one machine can beat twice one rank through their caches, which more ranks across
    nodes need not repeat) and the memory of each rank, `base_rss_mb` + `rss_per_rank` x documents
    / ranks."""
    documents = entry["documents"]
    if "ranks" in entry:
        one, two = entry["ranks"]["1"], entry["ranks"]["2"]
        return {"core_seconds": one["wall_seconds"] / documents, **_speed_per_unit(entry["ranks"]),
                "rss_per_rank": 2 * (one["peak_rss_mb"] - two["peak_rss_mb"]) / documents,
                "base_rss_mb": max(2 * two["peak_rss_mb"] - one["peak_rss_mb"], 0.0)}
    lines = {"core_seconds": entry["core_seconds"] / documents}
    if "workers" in entry:  # a job whose parts are read by its worker processes, measured on 1 and 2
        lines.update(_speed_per_unit(entry["workers"]))
    if "peak_rss_mb" in entry:
        rss = max(entry["peak_rss_mb"] - entry["base_rss_mb"], 0.0)
        if "documents_per_part" in entry:  # a job that holds one part at a time
            lines["rss_per_part_document"] = rss / entry["documents_per_part"]
        else:
            lines["max_rss_mb"] = rss / documents
    return lines


def at_scale_fit(fit: dict, lines: dict) -> dict:
    """A calibrated fit with the per-document rates measured at scale: the local run keeps the
    fixed costs (start-up, a small job's reading); the wall keeps only its fixed start, its time
    per document following from the core-seconds and the CPUs the job keeps busy."""
    fitted = {measure: dict(fit[measure]) for measure in MEASURES}
    fitted["core_seconds"]["per_unit"] = lines["core_seconds"]
    fitted["wall_seconds"]["per_unit"] = 0.0
    if "max_rss_mb" in lines or "rss_per_part_document" in lines:
        fitted["max_rss_mb"]["per_unit"] = lines.get("max_rss_mb", 0.0)
    return {**fit, **fitted}


def setting_advice(name: str, row: dict, config: dict) -> str:
    """The setting that brings a job marked longer than its runtime or larger than a node back
    within them, with its value: '' for a job that fits."""
    over_memory, limit, longest = row.get("over_memory"), row.get("over_runtime"), row["longest_job_seconds"]
    if not (over_memory or limit):
        return ""
    tasks = config["minhash"]["tasks"]
    if name in MPI_RULES and over_memory:
        return f"set minhash.tasks: auto (at least {row['ranks_for_memory']:,} ranks)"
    if limit is None:
        return "give the job nodes of more memory (--node-memory-gb, the profile's cores)"
    share = 0.9 * limit / longest  # of the job's work, what fits its runtime with a tenth to spare
    if name in MPI_RULES and tasks != "auto":
        return f"set minhash.tasks: {math.ceil(tasks / share):,}"
    chunked = {"score_quality_encoder": ("quality.encoder.parts_per_job", config["quality"]["encoder"]["parts_per_job"]),
               "write_shards": ("shards.parts_per_job", config["shards"]["parts_per_job"])}
    if name in chunked:
        key, parts = chunked[name]
        if (fitting := math.floor(parts * share)) >= 1:
            return f"set {key}: {fitting}"
    if name in ("extract", "score", "ocr", "cross_snapshot_dedup", "judge", "tokenize"):
        return f"set parts.target_bytes: {math.floor(config['parts']['target_bytes'] * share):,}, or raise its runtime"
    return f"raise its runtime: set-resources: {{{name}: {{runtime: {math.ceil(longest / 0.9 / 60)}}}}} in the profile"


def job_wall(job: dict, wall_line: dict, busy: int, calibration_busy: int) -> float:
    """A job's wall seconds on the cluster: its core-seconds over the CPUs it keeps busy, and no
    less than its start (the fitted wall's fixed part). A job that keeps as many CPUs busy as it
    did in the calibration also keeps the calibration's wall time (what its CPU time does not
    show: reading, writing, waiting)."""
    floor = job["wall_seconds"] if busy <= calibration_busy else max(wall_line["fixed"], 0.0)
    return max(job["core_seconds"] / busy, floor)


def generation_cost(rows: list[dict], documents: dict, plan: Plan, rates: dict, prices: dict) -> dict | None:
    """The generated tokens the plan predicts (synthetic documents times the calibration's new
    tokens per document), the core- and GPU-hours of the generation stages, per million of those
    tokens and, with report.prices, their cost; None without synthetic parts."""
    synthetic = sum(documents[part.key] for part in plan.parts if part.kind == "synthetic")
    per_document = (rates.get("generation") or {}).get("new_tokens_per_document")
    if not synthetic:
        return None
    tokens = synthetic * per_document if per_document else None
    staged = [row for row in rows if row["stage"] in GENERATION_STAGES]
    hours = {"core": sum(row["core_seconds"] or 0.0 for row in staged if not row["gpu_seconds"]) / 3600,
             "gpu": sum(row["gpu_seconds"] or 0.0 for row in staged) / 3600}
    per_million = {kind: value / tokens * 1e6 if tokens else None for kind, value in hours.items()}
    cost = sum(per_million[kind] * prices[f"{kind}_hour"] for kind in hours
               if per_million[kind] and prices[f"{kind}_hour"] is not None) if tokens else None
    priced = any(prices[f"{kind}_hour"] is not None for kind in hours if hours[kind])
    return {"documents": synthetic, "new_tokens": tokens, "core_hours": hours["core"], "gpu_hours": hours["gpu"],
            "core_hours_per_million_tokens": per_million["core"], "gpu_hours_per_million_tokens": per_million["gpu"],
            "cost_per_million_tokens": cost if priced else None, "currency": prices["currency"],
            "tokens_per_second": {label: device["tokens_per_second"]
                                  for label, device in ((rates.get("generation") or {}).get("devices") or {}).items()}}


def _size(count: float | None) -> str:
    if count is None:
        return "-"
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if count < 1000 or unit == "PB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    return ""


def _hours(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / 3600:.3g}" if seconds < 360_000 else f"{seconds / 3600:,.0f}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min" if seconds < 7200 else \
        f"{seconds / 3600:.1f} h" if seconds < 172_800 else f"{seconds / 86400:.1f} d"


def _at_scale_note(row: dict, cost: dict) -> str:
    scale = row.get("at_scale")
    if not scale:
        return ""
    note = f"per-document rates measured on {scale['documents']:,} documents"
    if "rss_per_rank" in scale:
        ranks = row.get("ranks_for_memory")
        note += (f"; {scale['efficiency']:.2f} of a rank's speed per rank (measured {scale['measured_efficiency']:.2f}, "
                 f"2 ranks against 1; more ranks taken to scale alike, unmeasured); "
                 f"{row['max_rss_mb'] / 1000:.1f} GB per rank"
                 + (f", at least {ranks:,} ranks for memory ({cost['node_memory_gb']:.0f} GB per {cost['node_cores']}-core node)"
                    if ranks else ""))
    elif "efficiency" in scale:
        note += (f"; {scale['efficiency']:.2f} of a worker's speed per worker (measured "
                 f"{scale['measured_efficiency']:.2f}, 2 workers against 1; more taken to scale alike, unmeasured)")
    return note


def format_plan(cost: dict) -> str:
    """The cost plan as the table `python -m tokenmill plan-cost` prints."""
    inputs, run, made = cost["inputs"], cost["rates"]["run"], cost["rates"]["provenance"]
    lines = [f"inputs: {inputs['files']:,} files, {_size(inputs['bytes'])}, in {inputs['parts']:,} parts of "
             f"{inputs['snapshots']:,} snapshot{'s' if inputs['snapshots'] != 1 else ''}; predicted documents: {inputs['documents']:,.0f}",
             f"rates: calibrated {made['date']} on {made['hostname']} ({made['cpu']}, {made['cores']} cores) from "
             f"{f'{runs} runs, ' if (runs := run.get('runs', 1)) > 1 else ''}{run['parts']} parts, "
             f"{sum(run['documents'].values()):,} documents",
             "",
             f"{'stage':<23}{'jobs':>8}{'sbatch':>8}{'documents':>15}{'core-h':>10}{'billed':>10}{'cores':>7}"
             f"{'GPU-h':>9}{'written':>10}{'longest job':>12}  note"]
    for row in cost["stages"]:
        sbatch = "local" if row["sbatch"] is None else f"{row['sbatch']:,}"
        documents = "-" if row["documents"] is None else f"{row['documents']:,.0f}"
        over, memory = row.get("over_runtime"), row.get("over_memory")
        note = "; ".join(filter(None, [row["submission"] if row["sbatch"] is not None else "", row["note"],
                                       _at_scale_note(row, cost),
                                       over and f"LONGER than the profile's runtime ({over / 60:.0f} min)",
                                       memory and f"MORE memory than a node's {memory / 1000:.0f} GB",
                                       row.get("advice") and f"fix: {row['advice']}"]))
        cores = "-" if row.get("cores_per_job") is None else (
            f"{row['busy_cores_per_job']:.3g}/{row['cores_per_job']}" if row["busy_cores_per_job"] < row["cores_per_job"]
            else f"{row['cores_per_job']}")
        lines.append(f"{row['stage']:<23}{row['jobs']:>8,}{sbatch:>8}{documents:>15}{_hours(row['core_seconds']):>10}"
                     f"{_hours(row.get('billed_core_seconds')):>10}{cores:>7}"
                     f"{_hours(row['gpu_seconds']):>9}{_size(row['bytes_written']):>10}"
                     f"{_duration(row['longest_job_seconds']):>12}  {note}")
    totals = cost["totals"]
    lines.append(f"{'total':<23}{totals['jobs']:>8,}{totals['sbatch']:>8,}{'':>15}{_hours(totals['core_seconds']):>10}"
                 f"{_hours(totals['billed_core_seconds']):>10}{'':>7}"
                 f"{_hours(totals['gpu_seconds']):>9}{_size(totals['bytes_written']):>10}")
    lines.append("")
    billed = totals["billed_core_seconds"] / totals["core_seconds"] if totals["core_seconds"] else None
    lines.append(f"billed: the cores each job holds for its wall time (cores: busy/held per job where its workers "
                 f"cannot be fed on all of them); {billed:.2f}x the core-hours used" if billed else "billed: -")
    lines.append(f"wall time on {cost['cores']} cores: {_duration(cost['wall_seconds'])} (a stage-barrier estimate: "
                 f"the stages one after another, each lasting its billed core-hours over the cores or its longest "
                 f"job, whichever is longer; a job's wall is its core-hours over the cores it keeps busy)")
    if cost["not_calibrated"]:
        lines.append(f"not costed (no benchmark in the calibration run): {', '.join(cost['not_calibrated'])}")
    generation = cost.get("generation")
    if generation:
        if generation["new_tokens"] is None:
            lines.append(f"generation: {generation['documents']:,.0f} synthetic documents; the rates hold no tokens "
                         "per document (calibrate on a run with a synthetic source)")
        else:
            hours = "; ".join(f"{generation[f'{kind}_hours']:.3g} {label} ({generation[f'{kind}_hours_per_million_tokens']:.3g}"
                              " per million tokens)" for kind, label in (("core", "core-h"), ("gpu", "GPU-h"))
                              if generation[f"{kind}_hours"])
            money = (f"; {generation['cost_per_million_tokens']:.4g} {generation['currency']} per million tokens"
                     if generation["cost_per_million_tokens"] is not None else "; no price (report.prices)")
            speeds = ", ".join(f"{label} {value:,.0f} tokens/s" for label, value in generation["tokens_per_second"].items())
            lines.append(f"generation: {generation['documents']:,.0f} synthetic documents, {generation['new_tokens']:,.0f} "
                         f"new tokens predicted; {hours or 'no hours'}{money} (calibrated at {speeds or 'no rate'})")
    return "\n".join(lines)


# --- the ablation (snakemake ablate) -------------------------------------------------------

# An H100's dense bf16 peak and the share of it a small proxy reaches: the GPU rate of a proxy until
# one is measured (plan-cost --proxy-tokens-per-second); small models keep GPUs far from their peak.
GPU_PEAK_FLOPS = 989e12
PROXY_MODEL_FLOPS_UTILIZATION = 0.3


def proxy_parameters(proxy: dict, vocab_size: int) -> int:
    """Parameters of the proxy tokenmill.ablate.proxy builds (Llama, tied embeddings, as many
    key/value heads as heads, SwiGLU, RMSNorm weights): embedding, per layer attention 4·d², MLP
    3·d·intermediate and two norms, and the final norm."""
    hidden = proxy["hidden"]
    layer = 4 * hidden * hidden + 3 * hidden * proxy["intermediate"] + 2 * hidden
    return vocab_size * hidden + proxy["layers"] * layer + hidden


def proxy_flops_per_token(proxy: dict, vocab_size: int) -> float:
    """Training FLOPs per token: 6·N (forward and backward over the weights) and the attention's
    12·layers·hidden·seq_len (PaLM's accounting, causal attention not halved)."""
    return 6.0 * proxy_parameters(proxy, vocab_size) + 12.0 * proxy["layers"] * proxy["hidden"] * proxy["seq_len"]


def ablation_cost(config: dict, tokens_per_second: float | None = None) -> dict | None:
    """The bill of the config's ablation before it is submitted: its proxies (candidates × seeds),
    each proxy's parameters, FLOPs and GPU-seconds at `tokens_per_second` (None: an H100 at
    PROXY_MODEL_FLOPS_UTILIZATION of its peak), and the total GPU-hours. None without candidates."""
    ablate = config["ablate"]
    candidates = candidate_names(ablate)
    if not candidates:
        return None
    proxy, vocab = ablate["proxy"], config["tokenizer"]["vocab_size"]
    flops = proxy_flops_per_token(proxy, vocab)
    rate = tokens_per_second or GPU_PEAK_FLOPS * PROXY_MODEL_FLOPS_UTILIZATION / flops
    tokens = budget_tokens(proxy)
    proxies = len(candidates) * len(ablate["seeds"])
    return {"candidates": len(candidates), "seeds": len(ablate["seeds"]), "proxies": proxies,
            "parameters": proxy_parameters(proxy, vocab), "tokens_per_proxy": tokens,
            "flops_per_proxy": flops * tokens, "tokens_per_second": rate,
            "rate": "given" if tokens_per_second else
                    f"assumed: {PROXY_MODEL_FLOPS_UTILIZATION:.0%} of an H100's {GPU_PEAK_FLOPS / 1e12:.0f} TFLOP/s bf16",
            "gpu_seconds_per_proxy": tokens / rate, "gpu_seconds": proxies * tokens / rate}


def format_ablation(cost: dict) -> str:
    return (f"ablation (snakemake ablate): {cost['candidates']} candidates x {cost['seeds']} seeds = {cost['proxies']} "
            f"proxies of {cost['parameters'] / 1e6:.1f}M parameters on {cost['tokens_per_proxy']:,} tokens each "
            f"({cost['flops_per_proxy']:.3g} FLOP); {cost['tokens_per_second']:,.0f} tokens/s a GPU ({cost['rate']}): "
            f"{_hours(cost['gpu_seconds_per_proxy'])} GPU-h a proxy, {_hours(cost['gpu_seconds'])} GPU-h in all")
