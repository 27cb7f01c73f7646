# One job per shard group of a snapshot (shards.parts_per_job parts' worth of its documents, by
# shuffle key), reading only that snapshot's plan and parts (not the global plan, which a new
# snapshot changes): adding a snapshot writes its shards and reruns none of the others.
rule write_shards:
    input:
        plan=SNAPSHOT_PLAN,
        tokenized=lambda wildcards: part_files("tokenize", snapshot_parts(wildcards.source, wildcards.snapshot),
                                               wildcards.version),
        # the languages of the selected documents, for the shards' language check
        select=SELECT_DIR,
        tokenizer=tokenizer_file,
    output:
        directory(SHARD_DIR),
    params:
        target_tokens=config["shards"]["target_tokens"],
        groups=lambda wildcards: len(snapshot_shard_groups(wildcards.source, wildcards.snapshot)),
        validation=json.dumps(config["shards"]["validation"], sort_keys=True),
        tier=source_setting("tier"),
        license_id=source_setting("license_id"),
    log:
        f"{LOGS}/write_shards/{{version}}/{{source}}/{{snapshot}}/group-{{shard_group}}.log",
    benchmark:
        f"{BENCH}/write_shards/{{version}}/{{source}}/{{snapshot}}/group-{{shard_group}}.tsv"
    threads: 1
    resources:
        mem_mb=grow(4000),
    shell:
        "{PYTHON} {SCRIPTS}/write_shards.py --plan {input.plan} --source {wildcards.source}"
        " --snapshot {wildcards.snapshot} --group {wildcards.shard_group} --groups {params.groups}"
        " --version {wildcards.version} --tokenizer {input.tokenizer:q}"
        " --tier {params.tier} --license-id {params.license_id:q} --target-tokens {params.target_tokens}"
        " --validation {params.validation:q} --out {output} > {log} 2>&1"


rule manifest:
    input:
        shards=lambda wildcards: shard_dirs(wildcards.version),
        tokenizer=tokenizer_file,
        # no manifest is published before holdout_manifest has checked the pin. Not an input of
        # judge: a rerun of the check (a new snapshot, a re-pin) would rerun every judge, and
        # ancient() there makes Snakemake 9.27 leave pending jobs out of the DAG.
        holdout=HOLDOUT_MANIFEST,
    output:
        manifest=MANIFEST,
        validation=PATHS["shard_validation"],
        tokenizer=PATHS["manifest_tokenizer"],
    params:
        config_sha256=config_sha256(config),
        code_version=tokenmill.__version__,
    log:
        f"{LOGS}/manifest/{{version}}.log",
    benchmark:
        f"{BENCH}/manifest/{{version}}.tsv"
    threads: 1
    resources:
        mem_mb=grow(1000),
    shell:
        "{PYTHON} {SCRIPTS}/manifest.py --version {wildcards.version} --tokenizer {input.tokenizer:q}"
        " --config-sha256 {params.config_sha256} --code-version {params.code_version}"
        " --out {output.manifest} --validation-table {output.validation} --tokenizer-copy {output.tokenizer}"
        " {input.shards} > {log} 2>&1"
