# Quality and safety signals, stored as values per document; select applies the policy.


# Every per-document signal of a part in one job, from one read of its documents: language,
# MinHash signature, heuristics, PII, toxicity, naturalness and fastText quality and benchmark
# contamination; the word-based ones by each document's language (segmenter, stop words, word list).
# `threads` worker processes score batches of documents; a worker
# holds every scorer, so memory grows with the threads.
rule score:
    input:
        docs=PATHS["docs"],
        langid_model=config["langid"]["model"] or [],
        quality_model=PATHS["fasttext_model"],
        wordlists=list(WORDLISTS.values()),
        language_table=LANGUAGE_TABLE,
        naturalness_model=NATURALNESS_MODEL,
        decontamination_index=PATHS["decontamination_index"],
        # a synthetic part inherits the contamination of the documents it rewrites
        derived_decontaminate=origin_file("decontaminate"),
    output:
        langid=PATHS["langid"],
        signatures=PATHS["signatures"],
        heuristics=PATHS["heuristics"],
        pii=PATHS["pii"],
        toxicity=PATHS["toxicity"],
        quality_fasttext=PATHS["quality_fasttext"],
        quality_naturalness=PATHS["quality_naturalness"],
        decontaminate=PATHS["decontaminate"],
    params:
        settings=json.dumps({
            "langid": {"max_chars": config["langid"]["max_chars"]},
            "minhash": {key: config["minhash"][key] for key in ("permutations", "bands", "rows", "ngram", "seed")},
            "minhash_code": config["minhash"]["code"],
        }, sort_keys=True),
        wordlists=json.dumps(WORDLISTS, sort_keys=True),
        packages=json.dumps(scoring_packages(), sort_keys=True),
        naturalness_sha256=config["quality"]["naturalness"]["sha256"] or "",
        derived=lambda wildcards, input: f"--derived-decontaminate {input.derived_decontaminate}"
        if input.derived_decontaminate else "",
    log:
        part_log("score"),
    benchmark:
        part_bench("score")
    # every core the run has (--cores); profiles/slurm sets a whole node. A profile's set-threads
    # here would also override the cluster's: the default profile is read under --profile too.
    threads: run_cores()
    resources:
        mem_mb=lambda wildcards, threads, attempt: (1000 + 500 * threads) * attempt,
    shell:
        "{PYTHON} {SCRIPTS}/score.py --docs {input.docs} --workers {threads} --langid-model={input.langid_model:q}"
        " --quality-model {input.quality_model} --wordlists {params.wordlists:q}"
        " --language-table {input.language_table:q} --naturalness-model {input.naturalness_model:q}"
        " --naturalness-sha256={params.naturalness_sha256}"
        " --decontamination-index {input.decontamination_index} --settings {params.settings:q}"
        " --langid {output.langid} --signatures {output.signatures} --heuristics {output.heuristics}"
        " --pii {output.pii} --toxicity {output.toxicity} --quality-fasttext {output.quality_fasttext}"
        " --quality-naturalness {output.quality_naturalness}"
        " --decontaminate {output.decontaminate} {params.derived} > {log} 2>&1"


rule train_quality_fasttext:
    input:
        labels=QUALITY_LABELS,
    output:
        model=PATHS["fasttext_model"],
        metrics=PATHS["fasttext_metrics"],
    params:
        settings=json.dumps(config["quality"]["fasttext"], sort_keys=True),
    log:
        f"{LOGS}/train_quality_fasttext.log",
    benchmark:
        f"{BENCH}/train_quality_fasttext.tsv"
    threads: 1
    resources:
        mem_mb=grow(4000),
    shell:
        "{PYTHON} {SCRIPTS}/train_quality_fasttext.py --labels {input.labels:q} --settings {params.settings:q}"
        " --model {output.model} --metrics {output.metrics} > {log} 2>&1"


rule train_quality_encoder:
    input:
        labels=GENERATION.quality_labels,
    output:
        model=PATHS["encoder_model"],
        metrics=PATHS["encoder_metrics"],
    params:
        settings=json.dumps({k: v for k, v in config["quality"]["encoder"].items() if k not in ("parts_per_job", "train_on")},
                            sort_keys=True),
        min_labels=f"--min-labels {ANNOTATE['min_labels']}" if config["quality"]["encoder"]["train_on"] == "annotate" else "",
    log:
        f"{LOGS}/train_quality_encoder.log",
    benchmark:
        f"{BENCH}/train_quality_encoder.tsv"
    threads: config["quality"]["encoder"]["threads"]
    resources:
        mem_mb=grow(4000),
    shell:
        "{PYTHON} {SCRIPTS}/train_quality_encoder.py --labels {input.labels:q} --settings {params.settings:q}"
        " {params.min_labels} --model {output.model} --metrics {output.metrics} > {log} 2>&1"


# GPU partition under profiles/slurm; on a machine without CUDA it scores on the CPU.
# One job scores a chunk of parts of a snapshot, so a GPU allocation does real work.
rule score_quality_encoder:
    input:
        docs=lambda wildcards: part_files("docs", encoder_chunk_parts(wildcards)),
        model=PATHS["encoder_model"],
    output:
        PATHS["quality_encoder"],
    params:
        parts=lambda wildcards: " ".join(p.part for p in encoder_chunk_parts(wildcards)),
    log:
        f"{LOGS}/score_quality_encoder/{{source}}/{{snapshot}}/chunk-{{chunk}}.log",
    benchmark:
        f"{BENCH}/score_quality_encoder/{{source}}/{{snapshot}}/chunk-{{chunk}}.tsv"
    threads: config["quality"]["encoder"]["threads"]
    resources:
        mem_mb=grow(4000),
    shell:
        "{PYTHON} {SCRIPTS}/score_quality_encoder.py --model {input.model} --out {output}"
        " --parts {params.parts} --docs {input.docs} > {log} 2>&1"
