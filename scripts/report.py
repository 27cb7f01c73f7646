"""report: the yield table of a dataset version (documents, bytes, tokens per stage, per source and
per snapshot), yield alerts and the history across versions, distributions, the contamination
report, the dataset card and index.html that shows them all."""

import argparse
import json
import sys

from tokenmill.report.alerts import alert_summary, check_band_names, find_alerts, update_history
from tokenmill.report.dataset_card import write_card
from tokenmill.report.distributions import PartFiles, write_distributions
from tokenmill.report.html import shard_validation_rows, write_html
from tokenmill.io import read_json, write_json
from tokenmill.plan import read_plan
from tokenmill.report.tables import STAGES, PartOutputs, write_report, yield_arrow


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True)
    parser.add_argument("--version", required=True)
    parser.add_argument("--benchmarks", required=True, help="decontamination benchmark names, as JSON")
    parser.add_argument("--manifest", required=True)
    parser.add_argument("--sources", required=True, help="source -> {tier, license_id}, as JSON")
    parser.add_argument("--alerts", required=True, help="the report.alerts config section, as JSON")
    parser.add_argument("--recipe", default=None, help="a recipe whose mixture the dataset card replays")
    parser.add_argument("--rulegraph", required=True, help="the rule graph as SVG")
    parser.add_argument("--history", required=True, help="the yield history across versions (Parquet)")
    parser.add_argument("--representatives", nargs="+", required=True,
                        help="select's summary of each snapshot (groups and clusters whose kept copy changed)")
    parser.add_argument("--out-dir", required=True)
    parser.add_argument("shard_dirs", nargs="+")
    args = parser.parse_args(argv)
    settings, sources = json.loads(args.alerts), json.loads(args.sources)
    settings["bands"] = {stage: band for stage, band in settings["bands"].items() if band}
    check_band_names(settings["bands"], STAGES)
    plan = read_plan(args.plan, version=args.version)
    manifest = read_json(args.manifest)
    excluded = manifest.get("excluded_shards", [])
    table = write_report([PartOutputs(row["source"], row["snapshot"], row["part"], row["stats"], row["select"],
                                      row["tokenize"], row["decontaminate"]) for row in plan],
                         args.representatives, args.shard_dirs, json.loads(args.benchmarks), args.out_dir,
                         {(entry["source"], entry["name"]) for entry in excluded})
    distributions = write_distributions([PartFiles(row["source"], row["snapshot"], row["part"], row["stats"],
                                                   row["select"], row["tokenize"], row["minhash_cluster"], row["quality_fasttext"],
                                                   row["quality_encoder"], row["decontaminate"]) for row in plan], args.out_dir)
    by_source = [{**row, "snapshot": ""} for row in table.ordered_rows()]
    by_snapshot = table.ordered_rows(by_snapshot=True)
    earlier, history = update_history(args.history, args.version, yield_arrow(by_snapshot + by_source))
    alerts = find_alerts(by_source + by_snapshot, earlier, settings,
                         {name: source["tier"] for name, source in sources.items()})
    summary = alert_summary(alerts)
    write_json(f"{args.out_dir}/alerts.json", {"version": args.version, "fail": settings["fail"], "summary": summary,
                                               "alerts": alerts})
    contamination = read_json(f"{args.out_dir}/contamination.json")
    write_card(args.out_dir, args.manifest, sources, contamination, args.recipe)
    with open(args.rulegraph, encoding="utf-8") as handle:
        rulegraph = handle.read()
    write_html(f"{args.out_dir}/index.html", version=args.version, manifest=manifest, stages=STAGES,
               yield_rows=by_source, snapshot_rows=by_snapshot, alerts=alerts, bands=settings["bands"],
               distributions=distributions, contamination=contamination,
               shards=shard_validation_rows(args.shard_dirs, excluded), history=history.to_pylist(),
               rulegraph_svg=rulegraph)
    for table_name in ("yield.tsv", "contamination.tsv"):
        with open(f"{args.out_dir}/{table_name}", encoding="utf-8") as handle:
            print(handle.read())
    print("\n".join(summary))
    if alerts and settings["fail"]:
        print("report.alerts.fail is set: failing the run on these alerts", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
