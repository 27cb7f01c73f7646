from snakemake.utils import min_version

min_version("9.0")


# The demo config only when the user gives none: Snakemake would merge it into a --configfile
# (its spawned job processes do so even under --replace-workflow-config), mixing in demo sources.
if not workflow.overwrite_configfiles:

    configfile: "config/config.yaml"


include: "rules/common.smk"
include: "rules/slurm.smk"
include: "rules/plan.smk"
include: "rules/holdout.smk"
include: "rules/ocr.smk"
include: "rules/extract.smk"
include: "rules/dedup.smk"
include: "rules/synthetic.smk"
include: "rules/score.smk"
include: "rules/decontaminate.smk"
include: "rules/robots.smk"
include: "rules/select.smk"
include: "rules/chains.smk"
include: "rules/tokenize.smk"
include: "rules/shards.smk"
include: "rules/report.smk"
include: "rules/ablate.smk"


rule all:
    input:
        manifest=MANIFEST.format(version=VERSION),
        report=rules.report.output.yield_table.format(version=VERSION),
    default_target: True


# `snakemake ablate`: the ablation of the version (rules/ablate.smk, docs/ablate.md)
rule ablate:
    input:
        rules.ablate_decide.output[0].format(version=VERSION),


onstart:
    check_system(workflow.dag)


onsuccess:
    print("\n".join(closing_summary(workflow.dag)))
