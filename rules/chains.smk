# Long-context chains of related documents (tokenmill.chains), for the sources chains.sources names:
# a snapshot's topics, each part's topic vectors (beside score's signatures), and per version an MPI
# job over the snapshot's selected documents that writes each part's chains, which tokenize reads.
# (a param, so that a changed setting reruns the chain jobs, and only them)
CHAIN_ARGUMENTS = (f"--settings {shlex.quote(json.dumps(config['chains'], sort_keys=True))} --seed {config['seed']}"
                   f" --permutations {config['minhash']['permutations']}")


rule chain_model:
    input:
        plan=SNAPSHOT_PLAN,
        docs=snapshot_files("docs"),
        langid=snapshot_files("langid"),
    output:
        PATHS["chain_model"],
    params:
        arguments=CHAIN_ARGUMENTS,
    log:
        f"{LOGS}/chain_model/{{source}}/{{snapshot}}.log",
    benchmark:
        f"{BENCH}/chain_model/{{source}}/{{snapshot}}.tsv"
    threads: 1
    resources:
        mem_mb=grow(4000),  # the sample's word hashes and topic vectors
    shell:
        "{PYTHON} {SCRIPTS}/chain_model.py --plan {input.plan} {params.arguments} --out {output} > {log} 2>&1"


rule chain_vectors:
    input:
        docs=PATHS["docs"],
        signatures=PATHS["signatures"],
        langid=PATHS["langid"],
        model=PATHS["chain_model"],
    output:
        PATHS["chain_vectors"],
    params:
        arguments=CHAIN_ARGUMENTS,
    log:
        part_log("chain_vectors"),
    benchmark:
        part_bench("chain_vectors")
    threads: 1
    resources:
        mem_mb=grow(4000),
    shell:
        "{PYTHON} {SCRIPTS}/chain_vectors.py --docs {input.docs} --signatures {input.signatures}"
        " --langid {input.langid} --model {input.model} {params.arguments} --out {output} > {log} 2>&1"


rule chain_groups:
    input:
        plan=SNAPSHOT_PLAN,
        vectors=snapshot_files("chain_vectors"),
        select=SELECT_DIR,
    output:
        directory(PATHS["chain_groups_dir"]),
    params:
        arguments=CHAIN_ARGUMENTS,
    log:
        f"{LOGS}/chain_groups/{{version}}/{{source}}/{{snapshot}}.log",
    benchmark:
        f"{BENCH}/chain_groups/{{version}}/{{source}}/{{snapshot}}.tsv"
    threads: snapshot_ranks
    resources:
        **MPI_JOB_RESOURCES,
    shell:
        "{resources.mpi} -n {resources.tasks} {PYTHON} {SCRIPTS}/chain_groups.py --plan {input.plan}"
        " --version {wildcards.version} {params.arguments} --out-dir {output} > {log} 2>&1"
