rule decontamination_index:
    input:
        EVALSETS_RECEIPT,
    output:
        directory(DECONTAMINATION_INDEX),
    params:
        settings=json.dumps({k: v for k, v in config["decontamination"].items() if k != "benchmarks"}, sort_keys=True),
    log:
        f"{LOGS}/decontamination_index.log",
    threads: 1
    resources:
        mem_mb=grow(4000),
        runtime=60,
    shell:
        "{PYTHON} {SCRIPTS}/decontaminate.py index --evalsets {input} --holdout-dir {HOLDOUT:q}"
        " --settings {params.settings:q} --out {output} > {log} 2>&1"


rule decontaminate:
    input:
        docs=PATHS["docs"],
        index=DECONTAMINATION_INDEX,
    output:
        PATHS["decontaminate"],
    log:
        part_log("decontaminate"),
    benchmark:
        part_bench("decontaminate")
    threads: 1
    resources:
        mem_mb=grow(2000),
        runtime=60,
    shell:
        "{PYTHON} {SCRIPTS}/decontaminate.py part --docs {input.docs} --index {input.index} --out {output} > {log} 2>&1"
