"""python -m tokenmill: the commands a user runs by hand.

  where [CONFIG]                         where a finished run put its manifest, shards and report
  relist [CONFIG]                        glob every snapshot's inputs again: new files join new parts,
                                         listed parts keep their files
  replay RECIPE [--manifest M] [--global-batch G]
                                         the sampler over every phase, no I/O: realized vs planned
                                         mixture, and the steps of each phase
  lineage RECIPE --step N --rank R ...   the document a token of a sample comes from
  megatron-blend RECIPE --phase P        Megatron's --data-path for the same shards and mixture
  export-groups RECIPE --phase P --out DIR
                                         a phase that keeps groups whole as shards of one document per
                                         group (no EOD inside a group), and their --data-path
  (these four take --global-batch G, the trainer's, where the recipe declares no global_batch;
  every phase must be whole steps of it; and read the manifest of the version of --config C,
  config/config.yaml unless given, unless --manifest M names one)
  manifest-diff OLD NEW [--json]         shards added, removed and unchanged between two versions, with bytes
  tombstone --source S --reason R MANIFEST... [--raw FILE...]
                                         delete a source's shards (and raw files), recording tombstones
  calibrate [RESULTS ...] --out RATES    per-stage cost rates of finished runs, fitted together (default results/)
  plan-cost CONFIG [--rates R] [--at-scale A] [--cores N] [--node-memory-gb G] [--gpu-docs-per-second D] [--proxy-tokens-per-second T] [--json]
                                         per stage: jobs, sbatch calls, documents, core-hours, GPU-hours,
                                         bytes written, and the wall time on N cores, before any job runs
  train-extractor [--out DIR] [--input PATH ...] [--gold GOLD] [--setting KEY=VALUE ...]
                                         train blockml (extract.engine blockml) on the repository's real pages,
                                         deterministically: DIR/model.json and DIR/manifest.json; prints the
                                         sha256 to pin as extract.blockml.sha256
  train-naturalness [--labels L] [--language-table T] [--out FILE]
                                         fit the naturalness model (select.min_naturalness) on native speakers'
                                         labels, deterministically; prints its leave-one-language-out AUC and
                                         the sha256 to pin as quality.naturalness.sha256
  similar SNAPSHOT (DOC_ID | --text T | --text-file F) [--source S] [--json]
                                         a document's near-duplicates in a snapshot, through datasketch: Jaccard,
                                         matching bands, cluster, and the copy select kept and why
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import yaml

from tokenmill.config import validate
from tokenmill.cost import GPU_DOCS_PER_SECOND
from tokenmill.io import read_json


def _version(config_path: str) -> str:
    with open(config_path, encoding="utf-8") as handle:
        return validate(yaml.safe_load(handle))["version"]


def _manifest_path(version: str, results: str = "results") -> str:
    return os.path.join(results, "shards", version, "manifest.json")


def where(config_path: str, results: str = "results") -> int:
    version = _version(config_path)
    manifest_path = _manifest_path(version, results)
    if not os.path.exists(manifest_path):
        print(f"no manifest yet for version {version} ({manifest_path}); run snakemake first")
        return 1
    manifest = read_json(manifest_path)
    print(f"version {version}: {manifest['n_docs']} documents, {manifest['n_tokens']} tokens "
          f"in {len(manifest['shards'])} shards (tokenizer sha256 {manifest['tokenizer']['sha256'][:12]}...)")
    for source, totals in manifest["sources"].items():
        excluded = f" ({totals['excluded_shards']} left out)" if totals.get("excluded_shards") else ""
        print(f"  {source:<20} {totals['n_docs']:>8} docs {totals['n_tokens']:>12} tokens "
              f"{totals['shards']:>4} shards{excluded}")
    for shard in manifest.get("excluded_shards", []):
        print(f"  left out {shard['path']}: {'; '.join(shard['reasons'])}")
    print(f"manifest: {manifest_path}")
    print(f"shard validation: {os.path.join(results, 'shards', version, 'validation.tsv')}")
    print(f"shards:   {os.path.join(results, 'shards', version)}/<source>/<snapshot>/")
    print(f"yield:    {os.path.join(results, 'report', version, 'yield.tsv')}")
    print(f"reasons:  {os.path.join(results, 'report', version, 'reasons.tsv')}")
    print(f"report:   {os.path.join(results, 'report', version, 'index.html')}")
    return 0


def relist(args, results: str = "results") -> int:
    from tokenmill.plan import list_inputs

    with open(args.config, encoding="utf-8") as handle:
        config = validate(yaml.safe_load(handle))
    for listing in list_inputs(config, os.path.join(results, "plan"), relist=True):
        files = sum(len(part.inputs) for part in listing.parts)
        print(f"{listing.source}/{listing.snapshot}: {files} files in {len(listing.parts)} parts; "
              f"{listing.new_files} new files in {listing.new_parts} new parts")
    return 0


def _loader(args, needs_global_batch: bool = False):
    from tokenmill.trainer.loader import Loader
    from tokenmill.trainer.recipe import RecipeError, load_recipe, phase_samples

    recipe = load_recipe(args.recipe)
    if needs_global_batch and args.global_batch is None and "global_batch" not in recipe:
        samples = [phase_samples(phase) for phase in recipe["phases"]]
        raise RecipeError(f"recipe field global_batch: {args.recipe} declares none; give --global-batch G, the "
                          f"trainer's samples per step (the phases' samples {', '.join(map(str, samples))} are "
                          f"whole steps of any G that divides {math.gcd(*samples)})")
    manifest = args.manifest or _manifest_path(_version(args.config))
    return Loader(recipe, manifest, skip=args.skip, global_batch=args.global_batch)


def replay(args) -> int:
    loader = _loader(args, needs_global_batch=True)
    started = time.perf_counter()
    rows = loader.replay()
    seconds = time.perf_counter() - started
    print(f"{'phase':<10}{'stream':<26}{'weight':>8}{'planned':>10}{'realized':>10}{'rel.err':>10}"
          f"{'samples':>10}{'epochs':>8}{'max':>6}")
    for row in rows:
        print(f"{row['phase']:<10}{row['stream']:<26}{row['weight']:>8.4f}{row['planned']:>10.6f}{row['realized']:>10.6f}"
              f"{row['relative_error']:>10.1e}{row['samples']:>10}{row['epochs']:>8.2f}{row['max_epochs']:>6g}")
    print(f"\n{'phase':<10}{'source':<22}{'share':>7}{'units':>7}{'p50':>8}{'p90':>8}{'p99':>8}{'max':>8}"
          f"{'long>=':>8}{'natural':>8}{'planned':>8}{'real.':>7}{'single':>7}{'pad':>5}")
    for row in loader.length_report():
        print(f"{row['phase']:<10}{row['source']:<22}{row['realized']:>7.4f}{row['units']:>7}{row['p50']:>8}"
              f"{row['p90']:>8}{row['p99']:>8}{row['max']:>8}{row['long_tokens']:>8}{row['long_natural']:>8.4f}"
              f"{row['long_planned']:>8.4f}{row['long_realized']:>7.4f}{row['single_unit']:>7.4f}{row['padding']:>5.1f}")
    print("(units: documents, or whole groups in a phase that keeps them; long: the share of tokens from units of "
          "at least long>= tokens; single: samples that hold one unit; pad: samples are packed, never padded)\n")
    batch = loader.global_batch
    for number, phase in enumerate(loader.phases):
        section = loader.recipe["phases"][number]
        settings = [f"groups kept whole, cu_seqlens per {section['mask']}"] if section["groups"] else []
        settings += [f"{key} {value}" for key, value in section["positional"].items()]
        print(f"phase {phase.name}: {phase.samples} samples = {phase.samples // batch} steps of global batch {batch}, "
              f"steps {phase.first // batch} to {(phase.first + phase.samples) // batch - 1}"
              + (f"; {', '.join(settings)}" if settings else ""))
    print(f"{loader.total_samples} samples in {seconds:.3f} s ({loader.total_samples / seconds:,.0f} samples/s); "
          f"skip set: {sorted(loader.skip_set) or 'empty'}")
    worst = max(row["relative_error"] for row in rows)
    return 0 if worst <= 1e-4 else 1


def lineage(args) -> int:
    loader = _loader(args, needs_global_batch=True)
    index = int(loader.step_indices(args.step, args.rank, args.world)[args.sample])
    print(json.dumps(loader.lineage(index, args.position), indent=1))
    return 0


def megatron_blend(args) -> int:
    loader = _loader(args)
    if loader.phase_named(args.phase).keeps_groups:
        print(f"warning: phase {args.phase} keeps groups whole, but Megatron's GPTDataset shuffles documents every "
              f"epoch and splits them at EOD tokens, so these shards' groups would be scattered; write one document "
              f"per group with: python -m tokenmill export-groups {args.recipe} --phase {args.phase} --out DIR",
              file=sys.stderr)
    print(" ".join(f"{weight:.8f} {prefix}" for weight, prefix in loader.megatron_blend(args.phase)))
    return 0


def export_groups(args) -> int:
    from tokenmill.trainer.export import export_groups as export
    print(" ".join(f"{weight:.8f} {prefix}" for weight, prefix in export(_loader(args), args.phase, args.out)))
    return 0


def manifest_diff(args) -> int:
    from tokenmill.shards.versions import diff_manifests

    diff = diff_manifests(read_json(args.old), read_json(args.new))
    if args.json:
        print(json.dumps(diff, indent=1))
        return 0
    for kind in ("added", "removed", "unchanged"):
        print(f"{kind}: {len(diff[kind])} shards, {diff['bytes'][kind]:,} bytes")
        for entry in diff[kind] if kind != "unchanged" else []:
            print(f"  {entry['path']:<48} {entry['bin_bytes']:>14,} bytes {entry['n_tokens']:>12,} tokens")
    return 0


def tombstone(args) -> int:
    from tokenmill.shards.versions import tombstone_source

    recorded = tombstone_source(args.manifests, args.source, args.reason, args.raw)
    for entry in recorded:
        print(f"tombstone: {entry['manifest']}: {entry['path']} ({entry['bin_bytes']:,} bytes) deleted")
    print(f"{len(recorded)} shards and {len(args.raw)} raw files of {args.source} deleted")
    return 0


def calibrate(args) -> int:
    from tokenmill.cost import calibrate as measure, write_rates

    rates = measure(args.results)
    write_rates(rates, args.out)
    run = rates["run"]
    print(f"{args.out}: rates of {len(rates['stages'])} stages from {run['parts']} parts, "
          f"{sum(run['documents'].values()):,} documents ({', '.join(args.results)}); "
          f"documents per input byte: {', '.join(f'{k} {v:.3g}' for k, v in rates['documents_per_byte'].items())}")
    for path in rates["skipped_benchmarks"]:
        print(f"  skipped {path}: not a benchmark of a known stage and part, chunk or snapshot")
    return 0


def plan_cost(args) -> int:
    from tokenmill.cost import ablation_cost, format_ablation, format_plan, plan_cost as cost_plan, read_at_scale
    from tokenmill.plan import list_inputs

    with open(args.config, encoding="utf-8") as handle:
        config = validate(yaml.safe_load(handle))
    def bundled(path: str) -> str:  # run from outside the checkout: the repository's file
        repository = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        return path if os.path.exists(path) or os.path.isabs(path) else os.path.join(repository, path)

    profile_path, rates_path = bundled(os.path.join(args.profile, "config.yaml")), bundled(args.rates)
    at_scale_path = bundled(args.at_scale) if args.at_scale else None
    with open(profile_path, encoding="utf-8") as handle:
        profile = yaml.safe_load(handle) or {}
    listings = list_inputs(config, os.path.join(args.results, "plan"))
    cost = cost_plan(config, listings, read_json(rates_path), profile, args.cores, args.array_limit,
                     read_at_scale(at_scale_path) if at_scale_path else None, args.node_memory_gb,
                     args.gpu_docs_per_second or None)
    ablation = ablation_cost(config, args.proxy_tokens_per_second or None)
    print(json.dumps({**cost, "ablation": ablation}, indent=1, sort_keys=True) if args.json else
          f"config {args.config}, profile {profile_path}, rates {rates_path}"
          f"{f', rates at scale {at_scale_path}' if at_scale_path else ''}\n{format_plan(cost)}"
          f"{f'{chr(10)}{format_ablation(ablation)}' if ablation else ''}")
    return 0


def similar(args) -> int:
    from tokenmill.dedup.similar import find_similar, format_similar

    with open(os.path.join(args.root, args.config), encoding="utf-8") as handle:
        version = validate(yaml.safe_load(handle))["version"]
    text = args.text
    if args.text_file:
        with open(args.text_file, encoding="utf-8") as handle:
            text = handle.read()
    report = find_similar(args.root, args.snapshot, version, args.doc_id, text, args.source)
    print(json.dumps(report, indent=1) if args.json else format_similar(report))
    return 0


def train_extractor(args) -> int:
    from tokenmill.config import schema_defaults
    from tokenmill.extract.blockml_train import DEFAULT_SETTINGS, default_inputs, train

    inputs, gold = default_inputs()
    if args.input:
        inputs = [Path(path) for path in args.input]
    if args.gold is not None:
        gold = Path(args.gold) if args.gold else None
    settings = {}
    for assignment in args.setting:
        key, _, value = assignment.partition("=")
        if key not in DEFAULT_SETTINGS:
            raise ValueError(f"--setting {key}: not one of {', '.join(sorted(DEFAULT_SETTINGS))}")
        settings[key] = type(DEFAULT_SETTINGS[key])(value)
    manifest = train(inputs, gold, Path(args.out), schema_defaults("extract"), settings)
    print(f"{manifest['pages']} pages ({manifest['gold_pages']} with gold), {manifest['lines']} lines: "
          f"{args.out}/model.json sha256 {manifest['model_sha256']} (pin it as extract.blockml.sha256)")
    return 0


def train_naturalness(args) -> int:
    from tokenmill.hashing import sha256_file
    from tokenmill.languages import load_language_table
    from tokenmill.quality.naturalness_train import train_naturalness as fit_model

    model = fit_model(args.labels, load_language_table(args.language_table), args.out)
    print(f"{model['trained_on']['excerpts']} excerpts in {len(model['trained_on']['languages'])} languages; "
          f"leave one language out AUC: {model['validation']['leave_one_language_out_auc']}: {args.out} sha256 "
          f"{sha256_file(args.out)} (pin it as quality.naturalness.sha256)")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tokenmill", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    where_parser = commands.add_parser("where", help="print the paths of a finished run")
    where_parser.add_argument("config", nargs="?", default="config/config.yaml")
    relist_parser = commands.add_parser("relist", help="glob the inputs again: new files join new parts")
    relist_parser.set_defaults(function=relist)
    relist_parser.add_argument("config", nargs="?", default="config/config.yaml")
    for name, function, text in (("replay", replay, "the sampler over every phase, no I/O"),
                                 ("lineage", lineage, "the document a token comes from"),
                                 ("megatron-blend", megatron_blend, "Megatron --data-path for a phase"),
                                 ("export-groups", export_groups, "a phase's groups as one document each")):
        command = commands.add_parser(name, help=text)
        command.set_defaults(function=function)
        command.add_argument("recipe")
        command.add_argument("--manifest", help="default: the manifest of --config's version, under results/")
        command.add_argument("--config", default="config/config.yaml", help="the run's config (for its version)")
        command.add_argument("--skip", action="append", default=[], help="a shard of the checkpoint's skip set")
        command.add_argument("--global-batch", type=int,
                             help="the trainer's samples per step, where the recipe declares no global_batch")
        if name == "lineage":
            for option in ("step", "rank", "world", "sample", "position"):
                command.add_argument(f"--{option}", type=int, required=option in ("step", "position"),
                                     default={"rank": 0, "world": 1, "sample": 0}.get(option))
        if name in ("megatron-blend", "export-groups"):
            command.add_argument("--phase", required=True)
        if name == "export-groups":
            command.add_argument("--out", required=True, help="the folder to write (atomically)")
    diff_parser = commands.add_parser("manifest-diff", help="shards added, removed and unchanged between versions")
    diff_parser.set_defaults(function=manifest_diff)
    diff_parser.add_argument("old")
    diff_parser.add_argument("new")
    diff_parser.add_argument("--json", action="store_true")
    tombstone_parser = commands.add_parser("tombstone", help="delete a source's shards, recording tombstones")
    tombstone_parser.set_defaults(function=tombstone)
    tombstone_parser.add_argument("manifests", nargs="+")
    tombstone_parser.add_argument("--source", required=True)
    tombstone_parser.add_argument("--reason", required=True, help="e.g. a takedown reference")
    tombstone_parser.add_argument("--raw", nargs="*", default=[], help="the source's raw input files to delete")
    calibrate_parser = commands.add_parser("calibrate", help="per-stage cost rates of finished runs")
    calibrate_parser.set_defaults(function=calibrate)
    calibrate_parser.add_argument("results", nargs="*", default=["results"],
                                  help="the runs' results folders (a small and a large run: fixed costs and rates)")
    calibrate_parser.add_argument("--out", required=True, help="the rates file to write (JSON)")
    cost_parser = commands.add_parser("plan-cost", help="jobs, sbatch calls, core-hours and bytes of a config")
    cost_parser.set_defaults(function=plan_cost)
    cost_parser.add_argument("config")
    cost_parser.add_argument("--rates", default="config/cost_rates.json", help="written by calibrate")
    cost_parser.add_argument("--at-scale", default="config/cost_at_scale.json",
                             help="per-document rates that benchmarks measured at scale, which replace those of "
                                  "--rates for their stages ('' for none)")
    cost_parser.add_argument("--node-memory-gb", type=float, default=256.0,
                             help="memory of a node (of the profile's `cores` CPUs): jobs that need more are marked, "
                                  "and the MPI job's ranks are sized to it")
    cost_parser.add_argument("--gpu-docs-per-second", type=float, default=GPU_DOCS_PER_SECOND,
                             help="documents a GPU scores per second, for a rule the profile puts on a GPU whose rates "
                                  "were calibrated on a CPU (default: the figure for a 150M encoder at 512 tokens, "
                                  "unmeasured here; 0: the CPU rate)")
    cost_parser.add_argument("--proxy-tokens-per-second", type=float, default=0,
                             help="tokens a GPU trains an ablation proxy on per second (default 0: the FLOPs of the "
                                  "proxy at 30%% of an H100's bf16 peak, unmeasured here)")
    cost_parser.add_argument("--cores", type=int, default=128, help="cores for the wall-time estimate")
    cost_parser.add_argument("--array-limit", type=int, default=None,
                             help="array tasks per sbatch (default: the profile's slurm-array-limit, else 1000)")
    cost_parser.add_argument("--profile", default="profiles/slurm", help="the SLURM profile folder")
    cost_parser.add_argument("--results", default="results",
                             help="where the input listings are cached (results/plan, as the workflow's)")
    cost_parser.add_argument("--json", action="store_true")
    train_parser = commands.add_parser("train-extractor", help="train the blockml extraction model")
    train_parser.set_defaults(function=train_extractor)
    train_parser.add_argument("--out", default="data/models/blockml", help="where model.json and manifest.json go")
    train_parser.add_argument("--input", action="append", default=[],
                              help="a WARC or .tar.zst of HTML pages (default: the repository's training pages)")
    train_parser.add_argument("--gold", help="gold article bodies by url (.json.gz; '' for none)")
    train_parser.add_argument("--setting", action="append", default=[], help="KEY=VALUE over the defaults")
    naturalness_parser = commands.add_parser("train-naturalness", help="fit the naturalness model on labelled excerpts")
    naturalness_parser.set_defaults(function=train_naturalness)
    naturalness_parser.add_argument("--labels", default="data/train/naturalness/hplt-dev.jsonl.gz",
                                    help="gzipped JSONL, one {text, unnatural, lang} a line")
    naturalness_parser.add_argument("--language-table", default=None, help="default: the bundled data/languages/languages.json")
    naturalness_parser.add_argument("--out", default="data/models/naturalness/model.json")
    similar_parser = commands.add_parser("similar", help="a document's near-duplicates in a snapshot (datasketch)")
    similar_parser.set_defaults(function=similar)
    similar_parser.add_argument("snapshot")
    similar_parser.add_argument("doc_id", nargs="?", help="a document of the snapshot (or give --text/--text-file)")
    similar_text = similar_parser.add_mutually_exclusive_group()
    similar_text.add_argument("--text", help="a piece of text, signed with the snapshot's MinHash parameters")
    similar_text.add_argument("--text-file", help="the text, from a file")
    similar_parser.add_argument("--source", help="the snapshot's source, where more than one has that snapshot")
    similar_parser.add_argument("--root", default=".", help="the finished run's root (holding results/)")
    similar_parser.add_argument("--config", default="config/config.yaml", help="the run's config, below --root")
    similar_parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "where":
        return where(args.config)
    from tokenmill.trainer.loader import LoaderError

    try:
        return args.function(args)
    except (ValueError, LoaderError, OSError) as error:  # a bad recipe, argument or shard (RecipeError is a ValueError)
        print(f"error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
