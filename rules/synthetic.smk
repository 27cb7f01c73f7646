# Generation: synthetic sources rewrite the documents of another source (docs/synthetic.md),
# and annotate scores sampled documents with a rubric. A generator is a local model directory
# (synthetic.generators), or the demo model train_generator makes. Generation jobs keep their
# finished batches in a cache folder (layout: generate_cache), so a killed job resumes and a rerun
# with the same requests generates nothing again.


rule train_generator:
    input:
        docs=lambda wildcards: part_files("docs", PLANNED.parts_of(GENERATION.trained_on())),
    output:
        directory(PATHS["generator_model"]),
    params:
        settings=json.dumps({k: v for k, v in config["synthetic"]["train"].items() if k != "sources"}, sort_keys=True),
    log:
        f"{LOGS}/train_generator.log",
    benchmark:
        f"{BENCH}/train_generator.tsv"
    threads: config["synthetic"]["train"]["threads"]
    resources:
        mem_mb=grow(4000),
    shell:
        "{PYTHON} {SCRIPTS}/train_generator.py --docs {input.docs} --settings {params.settings:q} --out {output}"
        " > {log} 2>&1"


# Per snapshot rewritten: the band's quality quantiles per language (select's quality cut, computed
# alike), which every part's generate job applies to its own documents.
rule synthetic_inputs:
    input:
        plan=origin_snapshot(SNAPSHOT_PLAN),
        langid=origin_snapshot_files("langid"),
        heuristics=origin_snapshot_files("heuristics"),
        quality_fasttext=origin_snapshot_files("quality_fasttext"),
        quality_naturalness=origin_snapshot_files("quality_naturalness"),
        quality_encoder=origin_snapshot_files("quality_encoder"),
    output:
        PATHS["synthetic_inputs"],
    params:
        band=lambda wildcards: json.dumps(config["sources"][wildcards.source]["synthetic"]["quality_band"], sort_keys=True),
    log:
        f"{LOGS}/synthetic_inputs/{{source}}/{{snapshot}}.log",
    benchmark:
        f"{BENCH}/synthetic_inputs/{{source}}/{{snapshot}}.tsv"
    threads: 1
    resources:
        mem_mb=grow(2000),
    shell:
        "{PYTHON} {SCRIPTS}/synthetic_inputs.py --plan {input.plan} --band {params.band:q} --out {output} > {log} 2>&1"


def generation_inputs(wildcards):
    origin = origin_part(wildcards)
    return {"docs": part_path("docs", origin), "langid": part_path("langid", origin),
            "quality_fasttext": part_path("quality_fasttext", origin),
            "quality_encoder": part_path("quality_encoder", origin),
            "minhash_cluster_dir": DEDUP_DIR.format(source=origin.source, snapshot=origin.snapshot),
            "thresholds": PATHS["synthetic_inputs"].format(**wildcards),
            "model": GENERATION.generator_model(GENERATION.generator_of(wildcards.source))}


GENERATE_ARGS = (
    " --part {wildcards.source}/{wildcards.snapshot}/{wildcards.part} --docs {input.docs} --origin {params.origin:q} --langid {input.langid}"
    " --quality-fasttext {input.quality_fasttext} --quality-encoder {input.quality_encoder}"
    " --minhash-cluster {params.minhash_cluster} --thresholds {input.thresholds} --model {input.model:q}"
    " --settings {params.settings:q} --seed {params.seed} --out {output.records} --stats {output.stats}"
    " --cache {params.cache} --measured {params.measured} > {log} 2>&1")


def generation_params(rule_name):
    return {
        "origin": lambda wildcards: json.dumps({"source": GENERATION.origin_source(wildcards.source),
                                                "snapshot": wildcards.snapshot, "part": wildcards.part}),
        "minhash_cluster": lambda wildcards: part_path("minhash_cluster", origin_part(wildcards)),
        "settings": lambda wildcards: GENERATION.generation_settings(wildcards.source),
        "model_state": lambda wildcards: GENERATION.generator_state(GENERATION.generator_of(wildcards.source)),
        "seed": config["seed"],
        "cache": lambda wildcards: PATHS[f"{rule_name}_cache"].format(**wildcards),
        "measured": lambda wildcards: measured_file(part_bench(rule_name)).format(**wildcards),
    }


# Per part of a synthetic source whose generator runs on transformers (cpu partition).
rule generate:
    input:
        unpack(generation_inputs),
    output:
        records=PATHS["generate"],
        stats=PATHS["generate_stats"],
    params:
        **generation_params("generate"),
    log:
        part_log("generate"),
    benchmark:
        part_bench("generate")
    threads: lambda wildcards: generator_settings(config, GENERATION.generator_of(wildcards.source))["threads"]
    resources:
        mem_mb=grow(4000),
    shell:
        "{PYTHON} {SCRIPTS}/generate.py" + GENERATE_ARGS


# ... on vLLM (gpu partition under profiles/slurm).
rule generate_vllm:
    input:
        unpack(generation_inputs),
    output:
        records=PATHS["generate_vllm"],
        stats=PATHS["generate_vllm_stats"],
    params:
        **generation_params("generate_vllm"),
    log:
        part_log("generate_vllm"),
    benchmark:
        part_bench("generate_vllm")
    threads: 4
    resources:
        mem_mb=grow(32000),
    shell:
        "{PYTHON} {SCRIPTS}/generate_vllm.py" + GENERATE_ARGS


# Per synthetic snapshot: its quality per template against the sources, and how identifiable it is.
rule synthetic_quality:
    input:
        plan=SNAPSHOT_PLAN,
        origin_plan=origin_snapshot(SNAPSHOT_PLAN),
        docs=snapshot_files("docs"),
        quarantine=snapshot_files("quarantine"),
        origin_docs=origin_snapshot_files("docs"),
    output:
        PATHS["synthetic_quality"],
    params:
        settings=json.dumps({key: config["synthetic"]["quality"][key] for key in ("distinguisher_docs", "seed")}),
    log:
        f"{LOGS}/synthetic_quality/{{source}}/{{snapshot}}.log",
    benchmark:
        f"{BENCH}/synthetic_quality/{{source}}/{{snapshot}}.tsv"
    threads: 1
    resources:
        mem_mb=grow(4000),
    shell:
        "{PYTHON} {SCRIPTS}/synthetic_quality.py --plan {input.plan} --origin-plan {input.origin_plan}"
        " --settings {params.settings:q} --out {output} > {log} 2>&1"


ANNOTATE_ARGS = (
    " --plan {input.plan} --sources {params.sources} --model {input.model:q}"
    " --settings {params.settings:q} --seed {params.seed} --labels {output.labels} --table {output.table}"
    " --summary {output.summary} --cache {params.cache} --measured {params.measured} > {log} 2>&1")
ANNOTATE_INPUTS = {
    "plan": PLAN,
    "docs": part_files("docs", PLANNED.parts_of(GENERATION.annotated_sources())),
    "model": GENERATION.generator_model(ANNOTATE["generator"]),
}
ANNOTATE_PARAMS = {
    "sources": " ".join(GENERATION.annotated_sources()),
    "settings": GENERATION.generation_settings(ANNOTATE_JOB),
    "model_state": GENERATION.generator_state(ANNOTATE["generator"]),
    "seed": config["seed"],
}


# One job (synthetic.annotate): a rubric score for sampled documents, on transformers ...
rule annotate:
    input:
        **ANNOTATE_INPUTS,
    output:
        labels=PATHS["annotate_labels"],
        table=PATHS["annotate_table"],
        summary=PATHS["annotate_summary"],
    params:
        **ANNOTATE_PARAMS,
        cache=PATHS["annotate_cache"],
        measured=measured_file(f"{BENCH}/annotate.tsv"),
    log:
        f"{LOGS}/annotate.log",
    benchmark:
        f"{BENCH}/annotate.tsv"
    threads: generator_settings(config, ANNOTATE["generator"])["threads"]
    resources:
        mem_mb=grow(4000),
    shell:
        "{PYTHON} {SCRIPTS}/annotate.py" + ANNOTATE_ARGS


# ... or on vLLM (gpu partition under profiles/slurm).
rule annotate_vllm:
    input:
        **ANNOTATE_INPUTS,
    output:
        labels=PATHS["annotate_vllm_labels"],
        table=PATHS["annotate_vllm_table"],
        summary=PATHS["annotate_vllm_summary"],
    params:
        **ANNOTATE_PARAMS,
        cache=PATHS["annotate_vllm_cache"],
        measured=measured_file(f"{BENCH}/annotate_vllm.tsv"),
    log:
        f"{LOGS}/annotate_vllm.log",
    benchmark:
        f"{BENCH}/annotate_vllm.tsv"
    threads: 4
    resources:
        mem_mb=grow(32000),
    shell:
        "{PYTHON} {SCRIPTS}/annotate_vllm.py" + ANNOTATE_ARGS
