rule extract:
    input:
        part_input,
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
        mem_mb=2000,
        runtime=60,
    shell:
        "{PYTHON} {SCRIPTS}/extract.py --input {input:q} --kind {params.kind}"
        " --source {wildcards.source} --snapshot {wildcards.snapshot} --part {wildcards.part}"
        " --tier {params.tier} --license-id {params.license_id:q} --settings {params.settings:q}"
        " --docs {output.docs} --quarantine {output.quarantine} --stats {output.stats} > {log} 2>&1"
