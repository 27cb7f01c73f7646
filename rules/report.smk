rule report:
    input:
        plan=PLAN,
        stats=part_files("stats"),
        select=lambda wildcards: part_files("select", version=wildcards.version),
        tokenized=lambda wildcards: part_files("tokenize", version=wildcards.version),
        shards=lambda wildcards: shard_dirs(wildcards.version),
    output:
        yield_table=f"{REPORT}/yield.tsv",
        reasons=f"{REPORT}/reasons.tsv",
        unclaimed=f"{REPORT}/langid_unclaimed.tsv",
    log:
        f"{LOGS}/report/{{version}}.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=30,
    shell:
        "{PYTHON} {SCRIPTS}/report.py --plan {input.plan} --version {wildcards.version} --yield-table {output.yield_table}"
        " --reasons {output.reasons} --unclaimed {output.unclaimed} {input.shards} > {log} 2>&1"
