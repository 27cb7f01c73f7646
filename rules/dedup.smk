# One MPI job per snapshot: exact groups, near-duplicate clusters, line counts, and the snapshot's
# host stats (select's crawler-trap rule), counted where its documents already are.
# The shell launches the ranks itself: mpiexec locally, srun under profiles/slurm.
rule minhash_cluster:
    input:
        plan=SNAPSHOT_PLAN,
        signatures=snapshot_files("signatures"),
    output:
        clusters=directory(DEDUP_DIR),
        host_stats=PATHS["host_stats"],
    params:
        bucket_cap=config["minhash"]["bucket_cap"],
    log:
        f"{LOGS}/minhash_cluster/{{source}}/{{snapshot}}.log",
    benchmark:
        f"{BENCH}/minhash_cluster/{{source}}/{{snapshot}}.tsv"
    threads: snapshot_ranks
    resources:
        **MPI_JOB_RESOURCES,
    shell:
        "{resources.mpi} -n {resources.tasks} {PYTHON} {SCRIPTS}/minhash_cluster.py --plan {input.plan}"
        " --bucket-cap {params.bucket_cap} --out-dir {output.clusters} --host-stats {output.host_stats} > {log} 2>&1"


# Across snapshots: each snapshot's survivors become one immutable generation of the
# source's band index, and each snapshot probes the generations of the snapshots before it.
# An MPI job on the snapshot's ranks, as minhash_cluster: each rank writes the bucket of keys it owns.
rule cross_snapshot_index:
    input:
        plan=SNAPSHOT_PLAN,
        signatures=snapshot_files("signatures"),
        dedup=DEDUP_DIR,
    output:
        directory(PATHS["cross_snapshot_index"]),
    params:
        bands=config["minhash"]["cross_snapshot"]["bands"],
        rows=config["minhash"]["cross_snapshot"]["rows"],
        rate=config["minhash"]["cross_snapshot"]["false_positive_rate"],
    log:
        f"{LOGS}/cross_snapshot_index/{{source}}/{{snapshot}}.log",
    benchmark:
        f"{BENCH}/cross_snapshot_index/{{source}}/{{snapshot}}.tsv"
    threads: snapshot_ranks
    resources:
        **MPI_JOB_RESOURCES,
    shell:
        "{resources.mpi} -n {resources.tasks} {PYTHON} {SCRIPTS}/cross_snapshot_index.py --plan {input.plan} --bands {params.bands} --rows {params.rows}"
        " --false-positive-rate {params.rate} --out {output} > {log} 2>&1"


# A job per part: no process reads the snapshot (each maps the older generations).
rule cross_snapshot_dedup:
    input:
        signatures=PATHS["signatures"],
        generations=older_generations,
    output:
        PATHS["cross_snapshot_dedup"],
    params:
        bands=config["minhash"]["cross_snapshot"]["bands"],
        rows=config["minhash"]["cross_snapshot"]["rows"],
    log:
        part_log("cross_snapshot_dedup"),
    benchmark:
        part_bench("cross_snapshot_dedup")
    threads: 1
    resources:
        mem_mb=grow(4000),  # a row group of the part's signatures (1 GB at a million rows), its band keys
    shell:
        "{PYTHON} {SCRIPTS}/cross_snapshot_dedup.py --part {wildcards.part} --signatures {input.signatures}"
        " --bands {params.bands} --rows {params.rows} --out {output} {input.generations} > {log} 2>&1"
