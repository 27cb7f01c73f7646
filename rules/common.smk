import json
import os
import shlex
import sys

from snakemake.exceptions import WorkflowError

import tokenmill
from tokenmill.config import check_files, config_sha256, generator_settings, validate
from tokenmill import layout
from tokenmill.chains import step_settings as chain_step_settings
from tokenmill.engine_rules import chained, ocr_rule
from tokenmill.cost import BUNDLED_AT_SCALE, BUNDLED_RATES, mpi_ranks, planned_documents, read_at_scale
from tokenmill.io import REPOSITORY, folder_state, read_json
from tokenmill.extract.settings import (check_models, extract_settings as source_extract_settings,
                                       ocr_settings as source_ocr_settings)
from tokenmill.plan import Plan, list_inputs, shard_groups, text_from as source_text_from
from tokenmill.quality.naturalness import resolve_model_path as resolve_naturalness_model
from tokenmill.quality.toxicity import configured_wordlists
from tokenmill.score import scoring_packages
from tokenmill.select.thresholds import thresholds_policy
from tokenmill.report.alerts import closing_lines
from tokenmill.system import advice, missing, requirements
from tokenmill.robots import capture_paths, judged_agents
from tokenmill.synth.sources import ANNOTATE as ANNOTATE_JOB, Generation
from tokenmill.ablate.candidates import (ablate_problems, candidate_kind, candidate_names, candidate_settings,
                                         decide_settings, is_pool)
from tokenmill.ablate.evalset import evalset_settings

validate(config)
check_files(config)
check_models(config)

VERSION = config["version"]
SOURCES = sorted(config["sources"])
# -P keeps scripts/ off the import path: scripts/select.py and scripts/tokenize.py share
# their names with standard-library modules (run them by hand as `python -P scripts/...`).
PYTHON = f"{sys.executable} -P"
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")  # from the mpich wheel
SCRIPTS = f"{workflow.basedir}/scripts"
RESULTS = "results"
LOGS = f"{RESULTS}/logs"
BENCH = f"{RESULTS}/benchmarks"
NAME = "[A-Za-z0-9][A-Za-z0-9._-]*"

wildcard_constraints:
    source="[A-Za-z0-9][A-Za-z0-9_-]*",
    snapshot=NAME,
    part=NAME,
    version=NAME,
    chunk="[0-9]{4}",
    shard_group="[0-9]{4}",
    candidate=NAME,
    seed="[0-9]+",

PART_PATH = layout.PART
# Every output template (tokenmill.layout owns them); the per-part ones keep a literal {version}
# in the plan (see tokenmill.plan).
PATHS = layout.results_paths(RESULTS)
PLAN_DIR = os.path.dirname(PATHS["plan"])
PLAN = PATHS["plan"]
# One snapshot's rows: the per-snapshot rules read this, so a new snapshot reruns none of them.
SNAPSHOT_PLAN = PATHS["snapshot_plan"]
DEDUP_DIR = PATHS["minhash_cluster_dir"]
SELECT_DIR = PATHS["select_dir"]
SHARD_DIR = PATHS["shard_dir"]
MANIFEST = PATHS["manifest"]
REPORT = PATHS["report"]
TRAINED_TOKENIZER = PATHS["train_tokenizer"]
HOLDOUT = config["holdout"]["dir"]
HOLDOUT_MANIFEST = f"{HOLDOUT}/manifest.json"
HOLDOUT_PIN = config["holdout"]["manifest_sha256"] or ""
SNAKEFILE = workflow.main_snakefile
CONFIGFILES = " ".join(shlex.quote(os.path.abspath(path)) for path in workflow.configfiles)

# Each snapshot's files are globbed once and listed in PLAN_DIR/{source}/{snapshot}.inputs.tsv,
# which every later parse reads. Only the main process checks that the listed files still
# exist: every job parses this file too, and a whole snapshot's stat calls per job would load
# a parallel filesystem's metadata server.
PLANNED = Plan(list_inputs(config, PLAN_DIR, verify=workflow.is_main_process),
               config["quality"]["encoder"]["parts_per_job"], {kind: PATHS[kind] for kind in layout.PART_OUTPUTS})
PARTS = PLANNED.parts
if workflow.is_main_process:
    print(PLANNED.summary(), file=sys.stderr)


def bundled(configured, relative):
    """A configured path, or the file bundled with the workflow when the config says null."""
    return configured or f"{workflow.basedir}/{relative}"


QUALITY_LABELS = bundled(config["quality"]["labels"], "data/sample/quality/aeb-quality-labels.jsonl.gz")
WORDLIST = bundled(config["safety"]["wordlist"], "data/wordlists/ldnoobw-en.txt")
WORDLISTS = configured_wordlists(config["safety"], WORDLIST)
LANGUAGE_TABLE = bundled(config["quality"]["language_table"], "data/languages/languages.json")
NATURALNESS_MODEL = str(resolve_naturalness_model(config["quality"]["naturalness"]["model"]))

try:
    ROBOTS_WARCS, ROBOTS_FILES = capture_paths(config["robots"])
except ValueError as error:
    raise WorkflowError(str(error)) from None


# What judge and select apply, with the robots agents resolved: a new agent list reruns them as a
# changed select.robots.agents would.
ROBOTS_AGENTS = judged_agents(config["select"]["robots"],
                              bundled(config["robots"]["agent_list"], "data/robots/ai-robots-txt/robots.json"))
SELECT_POLICY = json.dumps({**config["select"], "robots": {**config["select"]["robots"], "agents": ROBOTS_AGENTS}},
                           sort_keys=True)
THRESHOLDS_POLICY = json.dumps(thresholds_policy(config["select"]), sort_keys=True)


def run_cores():
    """--cores of this run: what a per-part job's worker pool takes locally. 1 where Snakemake
    runs without it (--rulegraph, --report, --unlock), which start no job."""
    try:
        return workflow.cores
    except WorkflowError:
        return 1


def grow(mem_mb):
    """Memory that grows with the attempt: a job killed for memory is retried with more
    (profiles set `retries`)."""
    return lambda wildcards, attempt: mem_mb * attempt


DOCUMENTS_PER_BYTE = read_json(REPOSITORY / BUNDLED_RATES)["documents_per_byte"]
MPI_AT_SCALE = read_at_scale(REPOSITORY / BUNDLED_AT_SCALE)


def snapshot_ranks(wildcards):
    """The ranks of the snapshot's MPI jobs: minhash.tasks, or those its documents need (auto)."""
    parts = snapshot_parts(wildcards.source, wildcards.snapshot)
    return mpi_ranks("minhash_cluster", config, planned_documents(parts, DOCUMENTS_PER_BYTE), MPI_AT_SCALE)


# The resources of a snapshot's MPI jobs (minhash_cluster, cross_snapshot_index, select): its ranks, which the shell
# launches itself (`{resources.mpi} -n {resources.tasks}`: mpiexec here, srun in profiles/slurm),
# and memory per rank, as SLURM's --mem-per-cpu (one CPU a rank): a job's ranks spread over nodes,
# which --mem (per node) would not follow.
MPI_JOB_RESOURCES = dict(mpi=MPIEXEC, tasks=snapshot_ranks, mem_mb_per_cpu=grow(round(config["minhash"]["rank_memory_gb"] * 1000)))


def part_log(rule_name, versioned=False):
    return f"{LOGS}/{rule_name}/{'{version}/' if versioned else ''}{PART_PATH}.log"


def part_bench(rule_name, versioned=False):
    return f"{BENCH}/{rule_name}/{'{version}/' if versioned else ''}{PART_PATH}.tsv"


def measured_file(benchmark):
    """Where a generation job writes what it measured, beside its benchmark file."""
    return benchmark.removesuffix(".tsv") + layout.GENERATION_MEASURED


def part_path(kind, part, version=None):
    """The `kind` file (a PATHS key) of a part; versioned paths keep {version} unless given."""
    return PLANNED.path(kind, part, version)


def part_files(kind, parts=PARTS, version=VERSION):
    """The `kind` file of each part, once each (parts can share one chunk file)."""
    return PLANNED.files(kind, parts, version)


def encoder_chunk_parts(wildcards):
    return PLANNED.chunks[(wildcards.source, wildcards.snapshot, wildcards.chunk)]


def snapshot_parts(source, snapshot):
    return PLANNED.by_snapshot[(source, snapshot)]


def snapshot_files(kind):
    """The `kind` file of every part of the wildcards' snapshot (once each: parts can share one)."""
    return lambda wildcards: part_files(kind, snapshot_parts(wildcards.source, wildcards.snapshot))


def part_of(wildcards):
    return PLANNED.part(wildcards.source, wildcards.snapshot, wildcards.part)


def part_inputs(wildcards):
    """The part's input files, in listing order."""
    return list(part_of(wildcards).inputs)


def folder_states(wildcards):
    """The trees of the part's folder inputs (code checkouts): Snakemake sees only a folder's own
    modification time, so a file changed deeper down reruns the part through this param."""
    return {path: folder_state(path) for path in part_inputs(wildcards) if os.path.isdir(path)}


def source_urls_file(wildcards):
    """A pdf source's `urls` side file, as an input (a changed file reruns its parts)."""
    return [config["sources"][wildcards.source]["urls"]] if config["sources"][wildcards.source].get("urls") else []


def part_ocr(wildcards):
    """The OCR rows extract reads for the part: the ocr (tesseract) or ocr_vllm job's, or none."""
    ocr = ocr_rule(config, wildcards.source)
    if ocr is None:
        return []
    return [PATHS[ocr].format(**wildcards)]


def text_from(source):
    """What made a source's text, for the dataset card: its extraction engine, or its JSONL field."""
    return source_text_from(config, source)


def source_setting(key):
    return lambda wildcards: config["sources"][wildcards.source][key]


def extract_settings(wildcards):
    """What the part's extract job reads: only settings that can change its output (per kind)."""
    return source_extract_settings(config, wildcards.source)


def ocr_settings(wildcards):
    """What the part's OCR job reads: the routing PDF settings and its engine's OCR settings."""
    return source_ocr_settings(config, wildcards.source)


def older_generations(wildcards):
    return PLANNED.older_generations(config, wildcards.source, wildcards.snapshot, PATHS["cross_snapshot_index"])


def part_probe(wildcards):
    """The part's probe of its source's older snapshots: none for a snapshot with none before it."""
    return part_path("cross_snapshot_dedup", part_of(wildcards)) if older_generations(wildcards) else []


def later_probes(wildcards):
    return PLANNED.later_probes(config, wildcards.source, wildcards.snapshot)


def every_snapshot(pattern, sources=None):
    """`pattern` ({source}, {snapshot}) for every snapshot of the config (of `sources`, if given), in plan order."""
    return [pattern.format(source=source, snapshot=snapshot) for source, snapshot in PLANNED.by_snapshot
            if sources is None or source in sources]


def tokenizer_file(wildcards=None):
    """The configured tokenizer.json, or the one train_tokenizer makes for this version."""
    return config["tokenizer"]["path"] or TRAINED_TOKENIZER.format(version=VERSION)


def chain_groups_dir(wildcards):
    """The folder of the part's snapshot's chains, for a source chains.sources names (else none)."""
    if not chained(config, wildcards.source):
        return []
    return PATHS["chain_groups_dir"].format(version=wildcards.version, source=wildcards.source,
                                            snapshot=wildcards.snapshot)


def chains_option(wildcards):
    """tokenize's --chains: the part's file in its snapshot's chains folder, for a source chains.sources names."""
    if not chained(config, wildcards.source):
        return ""
    return " --chains " + PATHS["chain_groups"].format(version=wildcards.version, source=wildcards.source,
                                                       snapshot=wildcards.snapshot, part=wildcards.part)


def snapshot_shard_groups(source, snapshot):
    """The shard groups of a snapshot: one write_shards job each (tokenmill.plan.shard_groups)."""
    return shard_groups(len(PLANNED.by_snapshot[source, snapshot]), config["shards"]["parts_per_job"])


def shard_dirs(version=VERSION):
    """The shard directory of every shard group of every (source, snapshot) of the config."""
    return [SHARD_DIR.format(version=version, source=source, snapshot=snapshot, shard_group=group)
            for source, snapshot in PLANNED.by_snapshot for group in snapshot_shard_groups(source, snapshot)]


def check_system(dag):
    """Before the first job: the programs the jobs about to run need (Tesseract for ocr), with the
    command that installs them, instead of a failure minutes into the run."""
    absent = missing(requirements(config, {job.rule.name for job in dag.needrun_jobs()}))
    if absent:
        raise WorkflowError(advice(absent))


def closing_summary(dag):
    """The end of a successful run: the version only when its manifest was among the targets."""
    built = sorted({str(path) for job in dag.targetjobs for path in job.output} or {job.rule.name for job in dag.targetjobs})
    return closing_lines(VERSION, MANIFEST.format(version=VERSION),
                         f"{RESULTS}/shards/{VERSION}/<source>/<snapshot>/group-<n>/", REPORT.format(version=VERSION),
                         built, any(job.rule.name == "manifest" for job in dag.jobs))


# Synthetic sources and annotate: tokenmill.synth.sources.Generation decides; the wrappers below
# turn its lookups into the wildcards-callables that rules take.
try:
    GENERATION = Generation(config, PLANNED, PATHS, QUALITY_LABELS)
except ValueError as error:
    raise WorkflowError(str(error)) from None
SYNTHETIC_SOURCES = GENERATION.sources
ANNOTATE = GENERATION.annotate


def origin_part(wildcards):
    return GENERATION.origin_part(wildcards.source, wildcards.snapshot, wildcards.part)


def origin_file(kind):
    return lambda wildcards: GENERATION.origin_files(kind, wildcards.source, wildcards.snapshot, wildcards.part)


def origin_snapshot(path_template):
    return lambda wildcards: GENERATION.origin_snapshot(path_template, wildcards.source, wildcards.snapshot)


def origin_snapshot_files(kind):
    return lambda wildcards: GENERATION.origin_snapshot_files(kind, wildcards.source, wildcards.snapshot)


# The ablation (rules/ablate.smk): its candidates, and what each of its jobs reads of the config.
ABLATE = config["ablate"]
ABLATE_CANDIDATES = candidate_names(ABLATE)
ABLATE_EVAL_SETTINGS = json.dumps(evalset_settings(config), sort_keys=True)
ABLATE_DECIDE_SETTINGS = json.dumps(decide_settings(config), sort_keys=True)


def ablate_candidate_inputs(wildcards):
    """A threshold or rule set candidate reads the version's judge tables and the score files its
    cut is computed from (a rule set also the language table); a mixture only the manifest."""
    inputs = {"manifest": MANIFEST.format(version=wildcards.version), "plan": PLAN,
              "fasttext_metrics": PATHS["fasttext_metrics"], "encoder_metrics": PATHS["encoder_metrics"]}
    if candidate_kind(wildcards.candidate) == "rules":
        inputs["language_table"] = LANGUAGE_TABLE
    if is_pool(wildcards.candidate):
        inputs.update(judge=part_files("judge", version=wildcards.version),
                      **{kind: part_files(kind) for kind in ("langid", "heuristics", "quality_fasttext",
                                                             "quality_naturalness", "quality_encoder")})
    return inputs


def ablate_candidate_settings(wildcards):
    return json.dumps(candidate_settings(config, wildcards.candidate), sort_keys=True)


def ablate_runs(wildcards):
    """Every proxy run of the ablation: each candidate, each seed. The ablation's config is checked
    here, where the ablation is asked for (a dry run too): a threshold candidate no longer drawable
    from the version (select.quality.keep_top changed) must not stop the version's own run."""
    problems = ablate_problems(config) if ABLATE_CANDIDATES else [
        "ablate: the config names no candidate (ablate.thresholds.keep_top and ablate.rules are empty and "
        "ablate.mixtures.count is 0); "
        "see docs/ablate.md"]
    if problems:
        raise WorkflowError("invalid config:\n  " + "\n  ".join(problems))
    return [PATHS["ablate_train"].format(version=wildcards.version, candidate=candidate, seed=seed)
            for candidate in ABLATE_CANDIDATES for seed in ABLATE["seeds"]]
