# The only rules that apply policy: a policy change reruns them and what follows, nothing upstream.


rule select_thresholds:
    input:
        plan=SNAPSHOT_PLAN,
        langid=snapshot_files("langid"),
        heuristics=snapshot_files("heuristics"),
        quality_fasttext=snapshot_files("quality_fasttext"),
        quality_naturalness=snapshot_files("quality_naturalness"),
        quality_encoder=snapshot_files("quality_encoder"),
        fasttext_metrics=PATHS["fasttext_metrics"],
        encoder_metrics=PATHS["encoder_metrics"],
    output:
        PATHS["select_thresholds"],
    params:
        policy=THRESHOLDS_POLICY,
    log:
        f"{LOGS}/select_thresholds/{{version}}/{{source}}/{{snapshot}}.log",
    benchmark:
        f"{BENCH}/select_thresholds/{{version}}/{{source}}/{{snapshot}}.tsv"
    threads: 2
    resources:
        mem_mb=grow(4000),
    shell:
        "{PYTHON} {SCRIPTS}/select_thresholds.py --plan {input.plan} --policy {params.policy:q} --out {output}"
        " --fasttext-metrics {input.fasttext_metrics} --encoder-metrics {input.encoder_metrics}"
        " --workers {threads}"
        " > {log} 2>&1"


# Per part: every rule but the choice among duplicates (reads the documents and every side-car file).
rule judge:
    input:
        docs=PATHS["docs"],
        langid=PATHS["langid"],
        signatures=PATHS["signatures"],
        minhash_cluster_dir=DEDUP_DIR,
        cross_snapshot_dedup=part_probe,
        later_cross_snapshot_dedup=later_probes,
        heuristics=PATHS["heuristics"],
        pii=PATHS["pii"],
        toxicity=PATHS["toxicity"],
        quality_fasttext=PATHS["quality_fasttext"],
        quality_naturalness=PATHS["quality_naturalness"],
        quality_encoder=lambda wildcards: part_path("quality_encoder", part_of(wildcards)),
        decontaminate=PATHS["decontaminate"],
        host_stats=PATHS["host_stats"],
        thresholds=PATHS["select_thresholds"],
        robots_state=PATHS["robots_state"],
        language_table=LANGUAGE_TABLE,
    output:
        PATHS["judge"],
    params:
        minhash_cluster=PATHS["minhash_cluster"],
        policy=SELECT_POLICY,
        seed=config["seed"],
    log:
        part_log("judge", versioned=True),
    benchmark:
        part_bench("judge", versioned=True)
    threads: 1
    resources:
        mem_mb=grow(1000),
    shell:
        "{PYTHON} {SCRIPTS}/judge.py --docs {input.docs} --part {wildcards.part} --langid {input.langid}"
        " --signatures {input.signatures} --minhash-cluster {params.minhash_cluster}"
        " --heuristics {input.heuristics} --pii {input.pii} --toxicity {input.toxicity} --quality-fasttext {input.quality_fasttext}"
        " --quality-naturalness {input.quality_naturalness} --language-table {input.language_table:q}"
        " --quality-encoder {input.quality_encoder} --decontaminate {input.decontaminate}"
        " --cross-snapshot-dedup {input.cross_snapshot_dedup} --later-cross-snapshot-dedup {input.later_cross_snapshot_dedup}"
        " --host-stats {input.host_stats} --robots-state {input.robots_state} --thresholds {input.thresholds} --policy {params.policy:q} --seed {params.seed}"
        " --out {output} > {log} 2>&1"


# Per snapshot: the copy kept of an exact group or near-duplicate cluster (whose members are in
# several parts) is the best one that passes every other rule. Reads judge's outputs, no text.
# One MPI job, as minhash_cluster (its ranks, minhash.tasks): no process holds the snapshot.
rule select:
    input:
        plan=SNAPSHOT_PLAN,
        judged=lambda wildcards: part_files("judge", snapshot_parts(wildcards.source, wildcards.snapshot),
                                            wildcards.version),
    output:
        tables=directory(SELECT_DIR),
        summary=PATHS["select_summary"],
    params:
        policy=SELECT_POLICY,
    log:
        f"{LOGS}/select/{{version}}/{{source}}/{{snapshot}}.log",
    benchmark:
        f"{BENCH}/select/{{version}}/{{source}}/{{snapshot}}.tsv"
    threads: snapshot_ranks
    resources:
        **MPI_JOB_RESOURCES,
    shell:
        "{resources.mpi} -n {resources.tasks} {PYTHON} {SCRIPTS}/select.py --plan {input.plan} --version {wildcards.version}"
        " --policy {params.policy:q}"
        " --out-dir {output.tables} --summary {output.summary} > {log} 2>&1"
