rule minhash_signatures:
    input:
        docs=PATHS["docs"],
    output:
        PATHS["signatures"],
    params:
        minhash=lambda wildcards: " ".join(
            f"--{key} {config['minhash'][key]}" for key in ("permutations", "bands", "rows", "ngram", "seed")
        ),
    log:
        part_log("minhash_signatures"),
    benchmark:
        part_bench("minhash_signatures")
    threads: 1
    resources:
        mem_mb=grow(2000),
        runtime=60,
    shell:
        "{PYTHON} {SCRIPTS}/minhash_signatures.py --docs {input.docs} --out {output} {params.minhash} > {log} 2>&1"


# One MPI job over the whole corpus: exact groups, near-duplicate clusters, line counts.
# The shell launches the ranks itself: mpiexec locally, srun under profiles/slurm.
rule minhash_cluster:
    input:
        plan=PLAN,
        signatures=part_files("signatures"),
    output:
        part_files("dedup"),
    params:
        bucket_cap=config["minhash"]["bucket_cap"],
        cross_snapshot=cross_snapshot_flags(),
    log:
        f"{LOGS}/minhash_cluster.log",
    benchmark:
        f"{BENCH}/minhash_cluster.tsv"
    threads: config["minhash"]["tasks"]
    resources:
        mpi=MPIEXEC,
        tasks=config["minhash"]["tasks"],
        mem_mb=grow(8000),
        runtime=240,
    shell:
        "{resources.mpi} -n {resources.tasks} {PYTHON} {SCRIPTS}/minhash_cluster.py --plan {input.plan}"
        " --bucket-cap {params.bucket_cap} {params.cross_snapshot} > {log} 2>&1"


rule host_stats:
    input:
        docs=snapshot_files("docs"),
        dedup=snapshot_files("dedup"),
    output:
        PATHS["host_stats"],
    log:
        f"{LOGS}/host_stats/{{source}}/{{snapshot}}.log",
    threads: 1
    resources:
        mem_mb=grow(2000),
        runtime=30,
    shell:
        "{PYTHON} {SCRIPTS}/host_stats.py --docs {input.docs} --dedup {input.dedup} --out {output} > {log} 2>&1"
