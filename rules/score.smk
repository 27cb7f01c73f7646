# Quality and safety signals, stored as values per document; select applies the policy.


# Text heuristics in one pass over a part: quality metrics, PII spans, word-list toxicity.
rule score_heuristics:
    input:
        docs=PATHS["docs"],
        wordlist=WORDLIST,
    output:
        heuristics=PATHS["heuristics"],
        pii=PATHS["pii"],
        toxicity=PATHS["toxicity"],
    log:
        part_log("score_heuristics"),
    benchmark:
        part_bench("score_heuristics")
    threads: 1
    resources:
        mem_mb=grow(1000),
        runtime=60,
    shell:
        "{PYTHON} {SCRIPTS}/score_heuristics.py --docs {input.docs} --wordlist {input.wordlist:q}"
        " --heuristics {output.heuristics} --pii {output.pii} --toxicity {output.toxicity} > {log} 2>&1"


rule train_quality_fasttext:
    input:
        labels=QUALITY_LABELS,
    output:
        model=FASTTEXT_MODEL,
        metrics=f"{RESULTS}/train_quality_fasttext/metrics.json",
    params:
        settings=json.dumps(config["quality"]["fasttext"], sort_keys=True),
    log:
        f"{LOGS}/train_quality_fasttext.log",
    threads: 1
    resources:
        mem_mb=grow(4000),
        runtime=60,
    shell:
        "{PYTHON} {SCRIPTS}/train_quality_fasttext.py --labels {input.labels:q} --settings {params.settings:q}"
        " --model {output.model} --metrics {output.metrics} > {log} 2>&1"


rule score_quality:
    input:
        docs=PATHS["docs"],
        model=FASTTEXT_MODEL,
    output:
        PATHS["quality"],
    log:
        part_log("score_quality"),
    benchmark:
        part_bench("score_quality")
    threads: 1
    resources:
        mem_mb=grow(2000),
        runtime=60,
    shell:
        "{PYTHON} {SCRIPTS}/score_quality.py --docs {input.docs} --model {input.model} --out {output} > {log} 2>&1"


rule train_quality_encoder:
    input:
        labels=QUALITY_LABELS,
    output:
        model=ENCODER_MODEL,
        metrics=f"{RESULTS}/train_quality_encoder/metrics.json",
    params:
        settings=json.dumps({k: v for k, v in config["quality"]["encoder"].items() if k != "parts_per_job"},
                            sort_keys=True),
    log:
        f"{LOGS}/train_quality_encoder.log",
    threads: config["quality"]["encoder"]["threads"]
    resources:
        mem_mb=grow(4000),
        runtime=120,
    shell:
        "{PYTHON} {SCRIPTS}/train_quality_encoder.py --labels {input.labels:q} --settings {params.settings:q}"
        " --model {output.model} --metrics {output.metrics} > {log} 2>&1"


# GPU partition under profiles/slurm; on a machine without CUDA it scores on the CPU.
# One job scores a chunk of parts of a snapshot, so a GPU allocation does real work.
rule score_quality_encoder:
    input:
        docs=lambda wildcards: part_files("docs", encoder_chunk_parts(wildcards)),
        model=ENCODER_MODEL,
    output:
        PATHS["encoder"],
    params:
        parts=lambda wildcards: " ".join(p.part for p in encoder_chunk_parts(wildcards)),
    log:
        f"{LOGS}/score_quality_encoder/{{source}}/{{snapshot}}/chunk-{{chunk}}.log",
    benchmark:
        f"{BENCH}/score_quality_encoder/{{source}}/{{snapshot}}/chunk-{{chunk}}.tsv"
    threads: config["quality"]["encoder"]["threads"]
    resources:
        mem_mb=grow(4000),
        runtime=120,
    shell:
        "{PYTHON} {SCRIPTS}/score_quality_encoder.py --model {input.model} --out {output}"
        " --parts {params.parts} --docs {input.docs} > {log} 2>&1"
