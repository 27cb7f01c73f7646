# Evaluation data is carved write-once into the holdout directory: the benchmark files here, the
# web and time-forward records by extract as it reads each part. holdout_manifest lists every
# carved file and refuses a holdout that differs from the pin; the manifest waits for it.


rule carve_evalsets:
    input:
        [b["path"] for b in config["decontamination"]["benchmarks"]],
    output:
        PATHS["evalsets_receipt"],
    params:
        benchmarks=json.dumps(config["decontamination"]["benchmarks"], sort_keys=True),
    log:
        f"{LOGS}/carve_evalsets.log",
    localrule: True
    shell:
        "{PYTHON} {SCRIPTS}/carve_evalsets.py --benchmarks {params.benchmarks:q} --holdout-dir {HOLDOUT:q}"
        " --receipt {output} > {log} 2>&1"


rule holdout_manifest:
    input:
        evalsets=PATHS["evalsets_receipt"],
        parts=part_files("carve"),
    output:
        HOLDOUT_MANIFEST,
    params:
        settings=json.dumps({"web": config["holdout"]["web"], "time_forward": config["holdout"]["time_forward"]},
                            sort_keys=True),
        # a param, so that re-pinning reruns this check (and the manifest, which records the config's hash)
        pin=HOLDOUT_PIN,
    log:
        f"{LOGS}/holdout_manifest.log",
    localrule: True
    shell:
        "{PYTHON} {SCRIPTS}/holdout_manifest.py --settings {params.settings:q} --pin={params.pin}"
        " --out {output:q} {input.evalsets} {input.parts} > {log} 2>&1"
