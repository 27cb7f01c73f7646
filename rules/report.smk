rule report:
    input:
        plan=PLAN,
        stats=part_files("stats"),
        decontaminate=part_files("decontaminate"),
        select=lambda wildcards: part_files("select", version=wildcards.version),
        tokenized=lambda wildcards: part_files("tokenize", version=wildcards.version),
        shards=lambda wildcards: shard_dirs(wildcards.version),
    output:
        yield_table=f"{REPORT}/yield.tsv",
        reasons=f"{REPORT}/reasons.tsv",
        unclaimed=f"{REPORT}/langid_unclaimed.tsv",
        contamination=f"{REPORT}/contamination.json",
        contamination_table=f"{REPORT}/contamination.tsv",
    params:
        benchmarks=json.dumps([b["name"] for b in config["decontamination"]["benchmarks"]]),
        out_dir=lambda wildcards, output: os.path.dirname(output.yield_table),
    log:
        f"{LOGS}/report/{{version}}.log",
    threads: 1
    resources:
        mem_mb=grow(1000),
        runtime=30,
    shell:
        "{PYTHON} {SCRIPTS}/report.py --plan {input.plan} --version {wildcards.version}"
        " --benchmarks {params.benchmarks:q} --out-dir {params.out_dir} {input.shards} > {log} 2>&1"
