rule plan:
    output:
        PLAN,
    params:
        # a digest, not the rows themselves: the plan of 10^5 parts would bloat Snakemake's metadata
        rows_sha256=plan_digest(),
    log:
        f"{LOGS}/plan.log",
    localrule: True
    run:
        from tokenmill.plan import write_plan

        write_plan(plan_rows(), output[0])
