# OCR of the PDF pages without a usable text layer, for the parts of sources whose OCR engine is
# tesseract (rule ocr, cpu) or vllm (rule ocr_vllm, gpu: the profile sets its partition); the
# part's extract reads the rows. Sources without OCR have no such job.
rule ocr:
    input:
        inputs=part_inputs,
    output:
        pages=PATHS["ocr"],
        stats=PATHS["ocr_stats"],
    params:
        kind=source_setting("kind"),
        settings=ocr_settings,
    log:
        part_log("ocr"),
    benchmark:
        part_bench("ocr")
    # tesseract is single-threaded here: one PDF per core (profiles/slurm sets a whole node)
    threads: run_cores()
    resources:
        mem_mb=lambda wildcards, threads, attempt: (1000 + 1000 * threads) * attempt,
    shell:
        "{PYTHON} {SCRIPTS}/ocr.py --inputs {input.inputs:q} --kind {params.kind}"
        " --workers {threads} --settings {params.settings:q} --pages {output.pages} --stats {output.stats} > {log} 2>&1"


rule ocr_vllm:
    input:
        inputs=part_inputs,
    output:
        pages=PATHS["ocr_vllm"],
        stats=PATHS["ocr_vllm_stats"],
    params:
        kind=source_setting("kind"),
        settings=ocr_settings,
    log:
        part_log("ocr_vllm"),
    benchmark:
        part_bench("ocr_vllm")
    # the sandboxes route and render pages on the CPUs; the model runs on the job's GPU
    threads: run_cores()
    resources:
        mem_mb=lambda wildcards, threads, attempt: (16000 + 1000 * threads) * attempt,
    shell:
        "{PYTHON} {SCRIPTS}/ocr_vllm.py --inputs {input.inputs:q} --kind {params.kind}"
        " --workers {threads} --settings {params.settings:q} --pages {output.pages} --stats {output.stats} > {log} 2>&1"
