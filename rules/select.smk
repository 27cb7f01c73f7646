# The only rule that applies policy: a policy change reruns select and what follows it.
rule select:
    input:
        docs=PATHS["docs"],
        langid=PATHS["langid"],
        dedup=PATHS["dedup"],
    output:
        PATHS["select"],
    params:
        policy=json.dumps(config["select"], sort_keys=True),
    log:
        part_log("select", versioned=True),
    threads: 1
    resources:
        mem_mb=1000,
        runtime=30,
    shell:
        "{PYTHON} {SCRIPTS}/select.py --docs {input.docs} --langid {input.langid} --dedup {input.dedup}"
        " --policy {params.policy:q} --out {output} > {log} 2>&1"
