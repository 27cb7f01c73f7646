# One job per part: reads the part's files once, carves their held-out records into the holdout
# (write-once; holdout_manifest checks the pin) and parses HTML and PDFs and reads repositories in
# `threads` sandboxed workers; the PDF pages without a text layer take their text from the part's
# OCR job, if any. A synthetic part's files are its generation records (rules/synthetic.smk).
# A killed job resumes file by file from the completion records in results/docs/.../{part}.work/.
rule extract:
    input:
        inputs=part_inputs,
        ocr=part_ocr,
        urls=source_urls_file,
        origin=origin_file("docs"),  # a synthetic part: the documents it rewrites, which its checks read
    output:
        docs=PATHS["docs"],
        quarantine=PATHS["quarantine"],
        stats=PATHS["stats"],
        carve=PATHS["carve"],
    params:
        kind=source_setting("kind"),
        tier=source_setting("tier"),
        license_id=source_setting("license_id"),
        settings=extract_settings,
        folders=folder_states,  # not used by the script: a changed checkout reruns the part
        ocr=lambda wildcards, input: f"--ocr {input.ocr}" if input.ocr else "",
        origin=lambda wildcards, input: f"--origin-docs {input.origin}" if input.origin else "",
    log:
        part_log("extract"),
    benchmark:
        part_bench("extract")
    # every core the run has (--cores); profiles/slurm sets a whole node. A profile's set-threads
    # here would also override the cluster's: the default profile is read under --profile too.
    threads: run_cores()
    resources:
        # the job's own process, then each worker's parser
        mem_mb=lambda wildcards, threads, attempt: (1000 + 1000 * threads) * attempt,
    shell:
        "{PYTHON} {SCRIPTS}/extract.py --inputs {input.inputs:q} --workers {threads} --kind {params.kind}"
        " --source {wildcards.source} --snapshot {wildcards.snapshot} --part {wildcards.part}"
        " --tier {params.tier} --license-id {params.license_id:q} --settings {params.settings:q}"
        " --holdout-dir {HOLDOUT:q} --carve-receipt {output.carve} {params.ocr} {params.origin}"
        " --docs {output.docs} --quarantine {output.quarantine} --stats {output.stats} > {log} 2>&1"
