rule plan:
    output:
        PLAN,
    params:
        # a digest, not the rows themselves: the plan of 10^5 parts would bloat Snakemake's metadata
        rows_sha256=PLANNED.digest(),
    log:
        f"{LOGS}/plan.log",
    localrule: True
    run:
        from tokenmill.plan import write_plan

        write_plan(PLANNED.rows(), output[0])


rule plan_snapshot:
    output:
        SNAPSHOT_PLAN,
    params:
        rows_sha256=lambda wildcards: PLANNED.digest((wildcards.source, wildcards.snapshot)),
    log:
        f"{LOGS}/plan_snapshot/{{source}}/{{snapshot}}.log",
    localrule: True
    run:
        from tokenmill.plan import write_plan

        write_plan(PLANNED.rows((wildcards.source, wildcards.snapshot)), output[0])
