rule extract:
    input:
        part=part_input,
        # ancient: a re-carved holdout reruns nothing by itself; extract checks the pin when it runs
        holdout=ancient(HOLDOUT_MANIFEST),
    output:
        docs=PATHS["docs"],
        quarantine=PATHS["quarantine"],
        stats=PATHS["stats"],
    params:
        kind=source_setting("kind"),
        tier=source_setting("tier"),
        license_id=source_setting("license_id"),
        settings=extract_settings,
    log:
        part_log("extract"),
    benchmark:
        part_bench("extract")
    threads: 1
    resources:
        mem_mb=grow(2000),
        runtime=60,
    shell:
        "{PYTHON} {SCRIPTS}/extract.py --input {input.part:q} --kind {params.kind}"
        " --holdout-manifest {input.holdout:q} --holdout-pin={HOLDOUT_PIN}"
        " --source {wildcards.source} --snapshot {wildcards.snapshot} --part {wildcards.part}"
        " --tier {params.tier} --license-id {params.license_id:q} --settings {params.settings:q}"
        " --docs {output.docs} --quarantine {output.quarantine} --stats {output.stats} > {log} 2>&1"
