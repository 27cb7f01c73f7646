"""report: the yield table of a dataset version (documents, bytes, tokens per stage, per source and
per snapshot), yield alerts and the history across versions, distributions, the contamination
report, the dataset card and index.html that shows them all."""

import argparse
import json
import sys

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.plan import read_plan
from tokenmill.report.version import write_version_report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--benchmarks", required=True, help="decontamination benchmark names, as JSON")
    parser.add_argument("--manifest", required=True)
    parser.add_argument("--sources", required=True, help="source -> {tier, license_id, text_from}, as JSON")
    parser.add_argument("--alerts", required=True, help="the report.alerts config section, as JSON")
    parser.add_argument("--recipe", default=None, help="a recipe whose mixture the dataset card replays")
    parser.add_argument("--rulegraph", required=True, help="the rule graph as SVG")
    parser.add_argument("--history", required=True, help="the yield history across versions (Parquet)")
    parser.add_argument("--representatives", nargs="+", required=True,
                        help="select's summary of each snapshot (groups and clusters whose kept copy changed)")
    parser.add_argument("--robots-state", help="robots_state's summary (captures read)")
    parser.add_argument("--robots-policy", help="select.robots with its agents resolved, as JSON")
    parser.add_argument("--synthetic-quality", nargs="*", default=[], help="synthetic_quality's summary of each synthetic snapshot")
    parser.add_argument("--generation-stats", nargs="*", default=[], help="the stats of every generate job")
    parser.add_argument("--annotate-summary", help="annotate's summary (synthetic.annotate)")
    parser.add_argument("--prices", required=True, help="the report.prices config section, as JSON")
    parser.add_argument("--cost-rates", required=True, help="the calibration (tokenmill calibrate) that prices generated tokens")
    parser.add_argument("--language-table", help="quality.language_table: where each language's rules come from")
    parser.add_argument("--max-epochs", default="{}", help="report.max_epochs, as JSON: each tier's epoch cap")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("shard_dirs", nargs="+")
    args = parser.parse_args(argv)
    report = write_version_report(
        version=args.version, plan_rows=read_plan(args.plan, version=args.version),
        representatives=args.representatives, shard_dirs=args.shard_dirs, benchmarks=json.loads(args.benchmarks),
        manifest_path=args.manifest, sources=json.loads(args.sources), alert_section=json.loads(args.alerts),
        recipe_path=args.recipe, rulegraph_path=args.rulegraph, history_path=args.history, out_dir=args.out_dir,
        robots_summary_path=args.robots_state,
        robots_policy=json.loads(args.robots_policy) if args.robots_policy else None,
        synthetic_quality=args.synthetic_quality, generation_stats=args.generation_stats,
        annotate_summary=args.annotate_summary, prices=json.loads(args.prices), cost_rates=args.cost_rates,
        language_table=args.language_table, max_epochs=json.loads(args.max_epochs))
    print(report.text)
    if report.fails_run:
        print("report.alerts.fail is set: failing the run on these alerts", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
