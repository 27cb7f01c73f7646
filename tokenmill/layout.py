"""Where every rule writes: the one owner of the paths under the results folder.

A rule's outputs live in `results/<rule>/` (a rule with several kinds of output: one folder per
kind, `results/score/langid/`), its log in `results/logs/<rule>/` and its benchmark in
`results/benchmarks/<rule>/`. Three folders are named for what they hold rather than for one
rule: `plan/` (plan and plan_snapshot), `shards/{version}/` (write_shards and manifest: the
published dataset a trainer reads) and `report/{version}/` (rulegraph and report).

The workflow (rules/common.smk) and the cost plan (tokenmill.cost) both read these templates;
`{source}`, `{snapshot}`, `{part}`, `{chunk}` and `{version}` are filled by whoever uses them.
"""

from __future__ import annotations

from dataclasses import dataclass

PART = "{source}/{snapshot}/{part}"
SNAPSHOT = "{source}/{snapshot}"


@dataclass(frozen=True)
class Stage:
    """A rule of the graph: how many jobs it makes (scope: one per part, per encoder chunk, per
    snapshot, per shard group of a snapshot, or one), whether it runs on the head node (local:
    no sbatch, no benchmark), and the names of its outputs in OUTPUTS (a directory counts with
    everything inside)."""
    name: str
    scope: str  # part, chunk, snapshot, shard_group, global
    outputs: tuple[str, ...] = ()
    local: bool = False


# name -> path relative to the results folder
OUTPUTS = {
    "plan": "plan/parts.tsv",
    "snapshot_plan": f"plan/{SNAPSHOT}.tsv",
    "evalsets_receipt": "carve_evalsets/evalsets.json",
    "decontamination_index": "decontamination_index",
    "fasttext_model": "train_quality_fasttext/model.bin",
    "fasttext_metrics": "train_quality_fasttext/metrics.json",
    "encoder_model": "train_quality_encoder/model.pt",
    "encoder_metrics": "train_quality_encoder/metrics.json",
    # one row per PDF page read by OCR, which the part's extract reads (sources with an OCR engine)
    "ocr": f"ocr/pages/{PART}.jsonl.zst",
    "ocr_stats": f"ocr/stats/{PART}.json",
    "ocr_vllm": f"ocr_vllm/pages/{PART}.jsonl.zst",
    "ocr_vllm_stats": f"ocr_vllm/stats/{PART}.json",
    # the demo generator (a model directory), for the generators configured without a path
    "generator_model": "train_generator/model",
    # rubric annotation of sampled documents: labels for the encoder, every annotation, counts
    "annotate_labels": "annotate/labels.jsonl.gz",
    "annotate_table": "annotate/annotations.parquet",
    "annotate_summary": "annotate/summary.json",
    "annotate_vllm_labels": "annotate_vllm/labels.jsonl.gz",
    "annotate_vllm_table": "annotate_vllm/annotations.parquet",
    "annotate_vllm_summary": "annotate_vllm/summary.json",
    # per snapshot of a synthetic source: the quality quantiles of the band it rewrites
    "synthetic_inputs": f"synthetic_inputs/{SNAPSHOT}.json",
    # per part of a synthetic source: generation records, the input of its extract
    "generate": f"generate/outputs/{PART}.jsonl.zst",
    "generate_stats": f"generate/stats/{PART}.json",
    "generate_vllm": f"generate_vllm/outputs/{PART}.jsonl.zst",
    "generate_vllm_stats": f"generate_vllm/stats/{PART}.json",
    # not outputs: the batches a generation job has finished, kept across its reruns (Snakemake
    # removes a job's outputs before it runs it again, never these), so that a killed or rerun job
    # generates only what changed; each job leaves the batches of its current outputs only
    "generate_cache": f"generate/cache/{PART}",
    "generate_vllm_cache": f"generate_vllm/cache/{PART}",
    "annotate_cache": "annotate/cache",
    "annotate_vllm_cache": "annotate_vllm/cache",
    "docs": f"extract/docs/{PART}.jsonl.zst",
    "stats": f"extract/stats/{PART}.json",
    "quarantine": f"extract/quarantine/{PART}.jsonl.zst",
    "carve": f"extract/carve/{PART}.json",
    "langid": f"score/langid/{PART}.parquet",
    "signatures": f"score/signatures/{PART}.parquet",
    "heuristics": f"score/heuristics/{PART}.parquet",
    "pii": f"score/pii/{PART}.parquet",
    "toxicity": f"score/toxicity/{PART}.parquet",
    "quality_fasttext": f"score/quality_fasttext/{PART}.parquet",
    "quality_naturalness": f"score/quality_naturalness/{PART}.parquet",
    "decontaminate": f"score/decontaminate/{PART}.parquet",
    # one file per chunk of parts_per_job parts of a snapshot (GPU jobs score many parts at once)
    "quality_encoder": f"score_quality_encoder/{SNAPSHOT}/chunk-{{chunk}}.parquet",
    # one MPI job per snapshot writes the per-part files of its snapshot as one folder
    "minhash_cluster_dir": f"minhash_cluster/{SNAPSHOT}",
    "minhash_cluster": f"minhash_cluster/{PART}.parquet",
    "cross_snapshot_index": f"cross_snapshot_index/{SNAPSHOT}",
    # per part: its probe of the older snapshots' generations
    "cross_snapshot_dedup": f"cross_snapshot_dedup/{PART}.parquet",
    # one file per snapshot of a synthetic source: its quality per template, the distinguisher's AUC
    "synthetic_quality": f"synthetic_quality/{SNAPSHOT}.json",
    # one file per snapshot (by minhash_cluster): hosts are judged over everything the snapshot fetched from them
    "host_stats": f"host_stats/{SNAPSHOT}.parquet",
    # one table of every robots.txt capture the config names, whatever the sources
    "robots_state": "robots_state/state.parquet",
    "robots_state_summary": "robots_state/summary.json",
    # per snapshot, so that a new snapshot moves no cut of an older one
    "select_thresholds": f"select_thresholds/{{version}}/{SNAPSHOT}.json",
    "judge": f"judge/{{version}}/{PART}.parquet",
    # select writes the per-part files of one snapshot as one folder: which copy of a cluster is
    # kept depends on members in other parts
    "select_dir": f"select/{{version}}/tables/{SNAPSHOT}",
    "select": f"select/{{version}}/tables/{PART}.parquet",
    "select_summary": f"select/{{version}}/representatives/{SNAPSHOT}.json",
    # long-context chains (tokenmill.chains) of the sources chains.sources names: a snapshot's topics,
    # each part's topic vectors, and per version the MPI job's folder of each part's chained documents
    "chain_model": f"chain_model/{SNAPSHOT}.parquet",
    "chain_vectors": f"chain_vectors/{PART}.parquet",
    "chain_groups_dir": f"chain_groups/{{version}}/{SNAPSHOT}",
    "chain_groups": f"chain_groups/{{version}}/{PART}.parquet",
    "train_tokenizer": "train_tokenizer/{version}/tokenizer.json",
    "tokenize": f"tokenize/{{version}}/{PART}.parquet",
    # one directory per shard group of a snapshot (tokenmill.shards.writer): a new snapshot adds
    # directories and changes none of the others
    "shard_dir": f"shards/{{version}}/{SNAPSHOT}/group-{{shard_group}}",
    "manifest": "shards/{version}/manifest.json",
    "shard_validation": "shards/{version}/validation.tsv",
    "manifest_tokenizer": "shards/{version}/tokenizer.json",
    "rulegraph": "report/{version}/rulegraph.svg",
    "report": "report/{version}",
    # across versions: reporting a version again replaces its rows
    "report_history": "report/history.parquet",
    # the ablation of a version (rules/ablate.smk): its evaluation set, each candidate's pool and
    # recipe, each proxy's run (metrics) and weights, and the decision
    "ablate_evalset_texts": "ablate_evalset/{version}/texts.jsonl.zst",
    "ablate_evalset_choices": "ablate_evalset/{version}/choices.json",
    "ablate_candidate": "ablate_candidate/{version}/{candidate}",
    "ablate_train": "ablate_train/{version}/{candidate}/seed-{seed}.json",
    "ablate_train_model": "ablate_train/{version}/{candidate}/seed-{seed}.safetensors",
    "ablate_decide": "ablate_decide/{version}",
}

# Beside a generation job's benchmark (benchmarks/{rule}/...tsv): what it measured of its generation (batches
# from the cache, tokens per second by device), which, like the benchmark, is no output (its seconds are its run's).
GENERATION_MEASURED = ".generation.json"

# In each shard directory: its shard group's shards in order (tokenmill.shards.writer).
SHARD_LISTING = "shards.json"

# Per-part outputs: the plan lists them for every part (versioned ones keep a literal {version}).
PART_OUTPUTS = ("docs", "stats", "quarantine", "carve", "langid", "signatures", "minhash_cluster", "heuristics",
                "pii", "toxicity", "quality_fasttext", "quality_naturalness", "quality_encoder", "decontaminate",
                "cross_snapshot_dedup", "judge", "select", "chain_vectors", "chain_groups", "tokenize")

# In pipeline order (the order of the cost plan's stage-barrier wall estimate).
STAGES = (
    Stage("plan", "global", ("plan",), local=True),
    Stage("plan_snapshot", "snapshot", ("snapshot_plan",), local=True),
    Stage("carve_evalsets", "global", ("evalsets_receipt",), local=True),
    Stage("decontamination_index", "global", ("decontamination_index",)),
    Stage("train_quality_fasttext", "global", ("fasttext_model", "fasttext_metrics")),
    Stage("train_quality_encoder", "global", ("encoder_model", "encoder_metrics")),
    Stage("ocr", "part", ("ocr", "ocr_stats")),  # the parts of sources whose OCR engine is tesseract
    Stage("ocr_vllm", "part", ("ocr_vllm", "ocr_vllm_stats")),  # ... is vllm
    Stage("extract", "part", ("docs", "stats", "quarantine", "carve")),
    Stage("holdout_manifest", "global", local=True),  # writes into holdout.dir, outside the results
    Stage("train_generator", "global", ("generator_model",)),  # when a generator in use has no path
    Stage("annotate", "global", ("annotate_labels", "annotate_table", "annotate_summary")),  # transformers
    Stage("annotate_vllm", "global", ("annotate_vllm_labels", "annotate_vllm_table", "annotate_vllm_summary")),
    Stage("score", "part", ("langid", "signatures", "heuristics", "pii", "toxicity", "quality_fasttext",
                            "quality_naturalness", "decontaminate")),
    Stage("score_quality_encoder", "chunk", ("quality_encoder",)),
    Stage("minhash_cluster", "snapshot", ("minhash_cluster_dir", "host_stats")),
    # the synthetic sources' snapshots and parts: their generation runs between the scoring of the
    # source they rewrite and their own extract, which the barrier estimate does not model
    Stage("synthetic_inputs", "snapshot", ("synthetic_inputs",)),
    Stage("generate", "part", ("generate", "generate_stats")),  # generators on transformers
    Stage("generate_vllm", "part", ("generate_vllm", "generate_vllm_stats")),  # ... on vllm
    Stage("cross_snapshot_index", "snapshot", ("cross_snapshot_index",)),
    Stage("cross_snapshot_dedup", "part", ("cross_snapshot_dedup",)),
    Stage("synthetic_quality", "snapshot", ("synthetic_quality",)),
    Stage("robots_state", "global", ("robots_state", "robots_state_summary")),
    Stage("select_thresholds", "snapshot", ("select_thresholds",)),
    Stage("judge", "part", ("judge",)),
    Stage("select", "snapshot", ("select_dir", "select_summary")),
    Stage("chain_model", "snapshot", ("chain_model",)),  # the snapshots of chains.sources
    Stage("chain_vectors", "part", ("chain_vectors",)),  # ... their parts
    Stage("chain_groups", "snapshot", ("chain_groups_dir",)),
    Stage("train_tokenizer", "global", ("train_tokenizer",)),
    Stage("tokenize", "part", ("tokenize",)),
    Stage("write_shards", "shard_group", ("shard_dir",)),
    Stage("manifest", "global", ("manifest", "shard_validation", "manifest_tokenizer")),
    Stage("rulegraph", "global", ("rulegraph",), local=True),
    Stage("report", "global", ("report", "report_history")),
)

# The ablation (`snakemake ablate`), after the manifest: not part of building a version, so not in
# the cost plan's graph of STAGES (plan-cost prices it apart, tokenmill.cost.ablation_cost).
ABLATION_STAGES = (
    Stage("ablate_evalset", "global", ("ablate_evalset_texts", "ablate_evalset_choices")),
    Stage("ablate_candidate", "candidate", ("ablate_candidate",)),
    Stage("ablate_train", "proxy", ("ablate_train", "ablate_train_model")),
    Stage("ablate_decide", "global", ("ablate_decide",)),
)


def results_paths(results: str) -> dict[str, str]:
    """Every output template under the `results` folder."""
    return {name: f"{results}/{path}" for name, path in OUTPUTS.items()}
