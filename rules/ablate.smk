# Decide by training (docs/ablate.md): `snakemake ablate` builds each candidate of the `ablate`
# section from this version's judge tables and shards, trains a proxy per candidate and seed,
# and writes the decision. Nothing upstream of the version's manifest runs again.


rule ablate_evalset:
    input:
        holdout=HOLDOUT_MANIFEST,
        texts=config["ablate"]["eval"]["texts"],
    output:
        texts=PATHS["ablate_evalset_texts"],
        choices=PATHS["ablate_evalset_choices"],
    params:
        settings=ABLATE_EVAL_SETTINGS,
        choice_items=config["ablate"]["eval"]["choice_items"],
        seed=config["ablate"]["seed"],
    log:
        f"{LOGS}/ablate_evalset/{{version}}.log",
    benchmark:
        f"{BENCH}/ablate_evalset/{{version}}.tsv"
    threads: 1
    resources:
        mem_mb=grow(2000),
    shell:
        "{PYTHON} {SCRIPTS}/ablate_evalset.py --holdout {HOLDOUT:q} --settings {params.settings:q}"
        " --texts {input.texts:q} --items {params.choice_items} --seed {params.seed}"
        " --out-texts {output.texts} --out-choices {output.choices} > {log} 2>&1"


rule ablate_candidate:
    input:
        unpack(ablate_candidate_inputs),
    output:
        directory(PATHS["ablate_candidate"]),
    params:
        settings=ablate_candidate_settings,
    log:
        f"{LOGS}/ablate_candidate/{{version}}/{{candidate}}.log",
    benchmark:
        f"{BENCH}/ablate_candidate/{{version}}/{{candidate}}.tsv"
    threads: 1
    resources:
        mem_mb=grow(4000),
    shell:
        "{PYTHON} {SCRIPTS}/ablate_candidate.py --name {wildcards.candidate} --version {wildcards.version}"
        " --manifest {input.manifest} --plan {input.plan} --fasttext-metrics {input.fasttext_metrics}"
        " --encoder-metrics {input.encoder_metrics} --language-table {LANGUAGE_TABLE:q}"
        " --settings {params.settings:q} --out {output} > {log} 2>&1"


# One job per candidate and seed: a proxy LM on the candidate's tokens through the loader, then
# measured on the evaluation set. Resumable: a killed job restarts from its last checkpoint.
rule ablate_train:
    input:
        candidate=PATHS["ablate_candidate"],
        texts=PATHS["ablate_evalset_texts"],
        choices=PATHS["ablate_evalset_choices"],
    output:
        run=PATHS["ablate_train"],
        model=PATHS["ablate_train_model"],
    params:
        proxy=json.dumps(config["ablate"]["proxy"], sort_keys=True),
    log:
        f"{LOGS}/ablate_train/{{version}}/{{candidate}}/seed-{{seed}}.log",
    benchmark:
        f"{BENCH}/ablate_train/{{version}}/{{candidate}}/seed-{{seed}}.tsv"
    threads: config["ablate"]["proxy"]["threads"]
    resources:
        mem_mb=grow(4000),
    shell:
        "{PYTHON} {SCRIPTS}/ablate_train.py --candidate {input.candidate} --texts {input.texts}"
        " --choices {input.choices} --proxy {params.proxy:q} --seed {wildcards.seed}"
        " --out-run {output.run} --out-model {output.model} > {log} 2>&1"


rule ablate_decide:
    input:
        runs=ablate_runs,
        manifest=MANIFEST,
    output:
        directory(PATHS["ablate_decide"]),
    params:
        settings=ABLATE_DECIDE_SETTINGS,
    log:
        f"{LOGS}/ablate_decide/{{version}}.log",
    benchmark:
        f"{BENCH}/ablate_decide/{{version}}.tsv"
    threads: 1
    resources:
        mem_mb=grow(2000),
    shell:
        "{PYTHON} {SCRIPTS}/ablate_decide.py --version {wildcards.version} --manifest {input.manifest}"
        " --settings {params.settings:q} --out {output} {input.runs} > {log} 2>&1"
