# Long-context chains of related documents (tokenmill.chains), for the sources chains.sources names:
# a snapshot's topics, each part's topic vectors (beside score's signatures), and per version an MPI
# job over the snapshot's selected documents that writes each part's chains, which tokenize reads.
# Every chain job is given the whole section; its params hold only what its output depends on
# (tokenmill.chains.step_settings), so that a changed key reruns those jobs alone.
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
        depends_on=json.dumps(chain_step_settings(config, "chain_model"), sort_keys=True),
    log:
        f"{LOGS}/chain_model/{{source}}/{{snapshot}}.log",
    benchmark:
        f"{BENCH}/chain_model/{{source}}/{{snapshot}}.tsv"
    threads: 1
    resources:
        mem_mb=grow(4000),  # the sample's word hashes and topic vectors
    shell:
        "{PYTHON} {SCRIPTS}/chain_model.py --plan {input.plan} {CHAIN_ARGUMENTS} --out {output} > {log} 2>&1"


rule chain_vectors:
    input:
        docs=PATHS["docs"],
        signatures=PATHS["signatures"],
        langid=PATHS["langid"],
        model=PATHS["chain_model"],
    output:
        PATHS["chain_vectors"],
    params:
        depends_on=json.dumps(chain_step_settings(config, "chain_vectors"), sort_keys=True),
    log:
        part_log("chain_vectors"),
    benchmark:
        part_bench("chain_vectors")
    threads: 1
    resources:
        mem_mb=grow(4000),
    shell:
        "{PYTHON} {SCRIPTS}/chain_vectors.py --docs {input.docs} --signatures {input.signatures}"
        " --langid {input.langid} --model {input.model} {CHAIN_ARGUMENTS} --out {output} > {log} 2>&1"


rule chain_groups:
    input:
        plan=SNAPSHOT_PLAN,
        vectors=snapshot_files("chain_vectors"),
        select=SELECT_DIR,
    output:
        directory(PATHS["chain_groups_dir"]),
    params:
        depends_on=json.dumps(chain_step_settings(config, "chain_groups"), sort_keys=True),
    log:
        f"{LOGS}/chain_groups/{{version}}/{{source}}/{{snapshot}}.log",
    benchmark:
        f"{BENCH}/chain_groups/{{version}}/{{source}}/{{snapshot}}.tsv"
    threads: snapshot_ranks
    resources:
        **MPI_JOB_RESOURCES,
    shell:
        "{resources.mpi} -n {resources.tasks} {PYTHON} {SCRIPTS}/chain_groups.py --plan {input.plan}"
        " --version {wildcards.version} {CHAIN_ARGUMENTS} --out-dir {output} > {log} 2>&1"
