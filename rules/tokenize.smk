rule train_tokenizer:
    input:
        plan=PLAN,
        docs=part_files("docs"),
        select=lambda wildcards: every_snapshot(SELECT_DIR.replace("{version}", wildcards.version)),
    output:
        TRAINED_TOKENIZER,
    params:
        vocab_size=config["tokenizer"]["vocab_size"],
        min_frequency=config["tokenizer"]["min_frequency"],
        max_train_chars=config["tokenizer"]["max_train_chars"],
    log:
        f"{LOGS}/train_tokenizer/{{version}}.log",
    benchmark:
        f"{BENCH}/train_tokenizer/{{version}}.tsv"
    threads: 2
    resources:
        mem_mb=grow(8000),
    shell:
        "RAYON_NUM_THREADS={threads} {PYTHON} {SCRIPTS}/train_tokenizer.py --plan {input.plan} --version {wildcards.version}"
        " --vocab-size {params.vocab_size} --min-frequency {params.min_frequency}"
        " --max-train-chars {params.max_train_chars} --out {output} > {log} 2>&1"


rule tokenize:
    input:
        docs=PATHS["docs"],
        select=SELECT_DIR,
        tokenizer=tokenizer_file,
        chains=chain_groups_dir,
    output:
        PATHS["tokenize"],
    params:
        select=PATHS["select"],
        chains=chains_option,
        sha256=config["tokenizer"]["sha256"] or "",
        seed=config["seed"],
    log:
        part_log("tokenize", versioned=True),
    benchmark:
        part_bench("tokenize", versioned=True)
    threads: 2
    resources:
        mem_mb=grow(4000),
    shell:
        "RAYON_NUM_THREADS={threads} {PYTHON} {SCRIPTS}/tokenize.py --docs {input.docs} --select {params.select}"
        " --tokenizer {input.tokenizer:q} --tokenizer-sha256={params.sha256:q} --seed {params.seed}{params.chains}"
        " --out {output} > {log} 2>&1"
