rule langid:
    input:
        docs=PATHS["docs"],
    output:
        PATHS["langid"],
    params:
        model=config["langid"]["model"] or "",
        batch_size=config["langid"]["batch_size"],
        max_chars=config["langid"]["max_chars"],
    log:
        part_log("langid"),
    benchmark:
        part_bench("langid")
    threads: 1
    resources:
        mem_mb=grow(1000),
        runtime=30,
    shell:
        "{PYTHON} {SCRIPTS}/langid.py --docs {input.docs} --out {output} --model={params.model:q}"
        " --batch-size {params.batch_size} --max-chars {params.max_chars} > {log} 2>&1"
