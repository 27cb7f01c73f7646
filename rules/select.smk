# The only rules that apply policy: a policy change reruns them and what follows, nothing upstream.


rule select_thresholds:
    input:
        plan=PLAN,
        langid=part_files("langid"),
        quality=part_files("quality"),
        encoder=part_files("encoder"),
    output:
        QUALITY_THRESHOLDS,
    params:
        policy=json.dumps(config["select"]["quality"], sort_keys=True),
    log:
        f"{LOGS}/select_thresholds/{{version}}.log",
    threads: 1
    resources:
        mem_mb=grow(4000),
        runtime=30,
    shell:
        "{PYTHON} {SCRIPTS}/select_thresholds.py --plan {input.plan} --policy {params.policy:q} --out {output}"
        " > {log} 2>&1"


rule select:
    input:
        docs=PATHS["docs"],
        langid=PATHS["langid"],
        dedup=PATHS["dedup"],
        heuristics=PATHS["heuristics"],
        pii=PATHS["pii"],
        toxicity=PATHS["toxicity"],
        quality=PATHS["quality"],
        encoder=lambda wildcards: part_path("encoder", part_of(wildcards)),
        decontaminate=PATHS["decontaminate"],
        host_stats=PATHS["host_stats"],
        thresholds=QUALITY_THRESHOLDS,
    output:
        PATHS["select"],
    params:
        policy=json.dumps(config["select"], sort_keys=True),
        seed=config["seed"],
    log:
        part_log("select", versioned=True),
    threads: 1
    resources:
        mem_mb=grow(1000),
        runtime=30,
    shell:
        "{PYTHON} {SCRIPTS}/select.py --docs {input.docs} --part {wildcards.part} --langid {input.langid} --dedup {input.dedup}"
        " --heuristics {input.heuristics} --pii {input.pii} --toxicity {input.toxicity} --quality {input.quality}"
        " --encoder {input.encoder} --decontaminate {input.decontaminate}"
        " --host-stats {input.host_stats} --thresholds {input.thresholds} --policy {params.policy:q} --seed {params.seed}"
        " --out {output} > {log} 2>&1"
