# Evaluation data is carved before extraction, write-once, into the holdout directory;
# extraction checks the pinned manifest and skips the same records.


rule carve_holdout:
    input:
        part_input,
    output:
        PATHS["carve"],
    params:
        kind=source_setting("kind"),
        rules=lambda wildcards: json.dumps(holdout_rules(wildcards), sort_keys=True),
        fields=lambda wildcards: json.dumps(config["sources"][wildcards.source].get("fields", {}), sort_keys=True),
    log:
        part_log("carve_holdout"),
    threads: 1
    resources:
        mem_mb=grow(1000),
        runtime=60,
    shell:
        "{PYTHON} {SCRIPTS}/carve_holdout.py part --input {input:q} --kind {params.kind} --rules {params.rules:q}"
        " --fields {params.fields:q} --holdout-dir {HOLDOUT:q}"
        " --name {wildcards.source}/{wildcards.snapshot}/{wildcards.part} --receipt {output} > {log} 2>&1"


rule carve_evalsets:
    input:
        [b["path"] for b in config["decontamination"]["benchmarks"]],
    output:
        EVALSETS_RECEIPT,
    params:
        benchmarks=json.dumps(config["decontamination"]["benchmarks"], sort_keys=True),
    log:
        f"{LOGS}/carve_evalsets.log",
    localrule: True
    shell:
        "{PYTHON} {SCRIPTS}/carve_holdout.py evalsets --benchmarks {params.benchmarks:q} --holdout-dir {HOLDOUT:q}"
        " --receipt {output} > {log} 2>&1"


rule holdout_manifest:
    input:
        evalsets=EVALSETS_RECEIPT,
        parts=part_files("carve"),
    output:
        HOLDOUT_MANIFEST,
    params:
        settings=json.dumps({"web": config["holdout"]["web"], "time_forward": config["holdout"]["time_forward"]},
                            sort_keys=True),
    log:
        f"{LOGS}/holdout_manifest.log",
    localrule: True
    shell:
        "{PYTHON} {SCRIPTS}/carve_holdout.py manifest --settings {params.settings:q} --out {output:q}"
        " {input.evalsets} {input.parts} > {log} 2>&1"
