rule rulegraph:
    output:
        report(f"{REPORT}/rulegraph.svg", caption="../report/rulegraph.rst", category="Workflow"),
    log:
        f"{LOGS}/rulegraph/{{version}}.log",
    # it reads the workflow, not the data: on the head node, where a cluster job would wait in the
    # queue and start Snakemake twice before starting it a third time
    localrule: True
    shell:
        # SNAKEFILE and CONFIGFILES are filled in at run time, so that another config file does
        # not count as changed code (the graph of rules does not depend on it)
        "{PYTHON} {SCRIPTS}/rulegraph.py --snakefile {SNAKEFILE:q} --configfiles {CONFIGFILES} --out {output} > {log} 2>&1"


rule report:
    input:
        plan=PLAN,
        stats=part_files("stats"),
        code_docs=part_files("docs", [part for part in PARTS if part.kind == "code"]),
        decontaminate=part_files("decontaminate"),
        dedup=every_snapshot(DEDUP_DIR),
        quality=part_files("quality_fasttext"),
        encoder=part_files("quality_encoder"),
        select=lambda wildcards: every_snapshot(SELECT_DIR.replace("{version}", wildcards.version)),
        representatives=lambda wildcards: every_snapshot(PATHS["select_summary"].replace("{version}", wildcards.version)),
        tokenized=lambda wildcards: part_files("tokenize", version=wildcards.version),
        shards=lambda wildcards: shard_dirs(wildcards.version),
        manifest=MANIFEST,
        rulegraph=rules.rulegraph.output[0],
        recipe=config["report"]["recipe"] or [],
        robots_state=PATHS["robots_state_summary"],
        synthetic_quality=every_snapshot(PATHS["synthetic_quality"], SYNTHETIC_SOURCES),
        generation_stats=[GENERATION.generation_stats_file(part) for part in PLANNED.parts_of(SYNTHETIC_SOURCES)],
        annotate=[PATHS[f"{GENERATION.annotate_rule}_summary"]] if ANNOTATE["enabled"] else [],
        cost_rates=bundled(config["report"]["cost_rates"], "config/cost_rates.json"),
        language_table=LANGUAGE_TABLE,
    output:
        html=report(f"{REPORT}/index.html", caption="../report/index.rst", category="Report"),
        yield_table=report(f"{REPORT}/yield.tsv", caption="../report/yield.rst", category="Yield"),
        yield_by_snapshot=report(f"{REPORT}/yield_by_snapshot.tsv", caption="../report/yield.rst", category="Yield"),
        yield_by_kind=report(f"{REPORT}/yield_by_kind.tsv", caption="../report/yield.rst", category="Yield"),
        yield_by_language=report(f"{REPORT}/yield_by_language.tsv", caption="../report/yield.rst", category="Yield"),
        yield_parquet=f"{REPORT}/yield.parquet",
        alerts=report(f"{REPORT}/alerts.json", caption="../report/alerts.rst", category="Yield"),
        reasons=report(f"{REPORT}/reasons.tsv", caption="../report/reasons.rst", category="Yield"),
        unclaimed=f"{REPORT}/langid_unclaimed.tsv",
        distributions=f"{REPORT}/distributions.json",
        tokens_by_language=report(f"{REPORT}/tokens_by_language.tsv", caption="../report/distributions.rst",
                                  category="Distributions"),
        top_hosts=report(f"{REPORT}/top_hosts.tsv", caption="../report/distributions.rst", category="Distributions"),
        hosts_by_snapshot=f"{REPORT}/hosts_by_snapshot.tsv",
        contamination=f"{REPORT}/contamination.json",
        contamination_table=report(f"{REPORT}/contamination.tsv", caption="../report/contamination.rst",
                                   category="Contamination"),
        code_repositories=f"{REPORT}/code_repositories.tsv",
        code_overlap=f"{REPORT}/code_overlap.tsv",
        synthetic=report(f"{REPORT}/synthetic.tsv", caption="../report/synthetic.rst", category="Synthetic"),
        generation_cost=f"{REPORT}/generation_cost.tsv",
        card=report(f"{REPORT}/DATASET_CARD.md", caption="../report/dataset_card.rst", category="Report"),
        card_json=f"{REPORT}/dataset_card.json",
    params:
        benchmarks=json.dumps([b["name"] for b in config["decontamination"]["benchmarks"]]),
        sources=json.dumps({name: {"tier": s["tier"], "license_id": s["license_id"], "text_from": text_from(name)}
                            for name, s in sorted(config["sources"].items())}),
        alerts=json.dumps(config["report"]["alerts"], sort_keys=True),
        recipe=f"--recipe {shlex.quote(config['report']['recipe'])}" if config["report"]["recipe"] else "",
        robots_policy=json.dumps({**config["select"]["robots"], "agents": ROBOTS_AGENTS}, sort_keys=True),
        prices=json.dumps(config["report"]["prices"], sort_keys=True),
        max_epochs=json.dumps(config["report"]["max_epochs"], sort_keys=True),
        annotate=lambda wildcards, input: f"--annotate-summary {input.annotate}" if input.annotate else "",
        # across versions, so not an output of this job: reporting a version again replaces its rows
        history=PATHS["report_history"],
        out_dir=lambda wildcards, output: os.path.dirname(output.yield_table),
    log:
        f"{LOGS}/report/{{version}}.log",
    benchmark:
        f"{BENCH}/report/{{version}}.tsv"
    threads: 1
    resources:
        mem_mb=grow(2000),
    shell:
        "{PYTHON} {SCRIPTS}/report.py --plan {input.plan} --version {wildcards.version}"
        " --benchmarks {params.benchmarks:q} --manifest {input.manifest} --sources {params.sources:q}"
        " --alerts {params.alerts:q} {params.recipe} --rulegraph {input.rulegraph} --history {params.history}"
        " --representatives {input.representatives} --robots-state {input.robots_state} --robots-policy {params.robots_policy:q}"
        " --synthetic-quality {input.synthetic_quality} --generation-stats {input.generation_stats} {params.annotate}"
        " --prices {params.prices:q} --cost-rates {input.cost_rates:q} --language-table {input.language_table:q}"
        " --max-epochs {params.max_epochs:q}"
        " --out-dir {params.out_dir} {input.shards} > {log} 2>&1"
