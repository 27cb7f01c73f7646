rule decontamination_index:
    input:
        PATHS["evalsets_receipt"],
    output:
        directory(PATHS["decontamination_index"]),
    params:
        settings=json.dumps({k: v for k, v in config["decontamination"].items() if k != "benchmarks"}, sort_keys=True),
    log:
        f"{LOGS}/decontamination_index.log",
    benchmark:
        f"{BENCH}/decontamination_index.tsv"
    threads: 1
    resources:
        mem_mb=grow(4000),
    shell:
        "{PYTHON} {SCRIPTS}/decontamination_index.py --evalsets {input} --holdout-dir {HOLDOUT:q}"
        " --settings {params.settings:q} --out {output} > {log} 2>&1"

