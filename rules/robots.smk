# One job: every robots.txt capture the config names (robots.warc, robots.files) as a host table,
# which judge reads at select.robots.as_of. A new capture file reruns it; judge and what follows
# rerun only where the table changed.
rule robots_state:
    input:
        warc=ROBOTS_WARCS,
        files=[path for path, _ in ROBOTS_FILES],
    output:
        state=PATHS["robots_state"],
        summary=PATHS["robots_state_summary"],
    params:
        captures=json.dumps({key: config["robots"][key] for key in ("warc", "files")}, sort_keys=True),
    log:
        f"{LOGS}/robots_state/robots_state.log",
    benchmark:
        f"{BENCH}/robots_state/robots_state.tsv"
    threads: 1
    resources:
        mem_mb=grow(2000),
    shell:
        "{PYTHON} {SCRIPTS}/robots_state.py --captures {params.captures:q} --out {output.state}"
        " --summary {output.summary} > {log} 2>&1"
