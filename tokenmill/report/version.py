"""The report of a dataset version, end to end: the yield and contamination tables, the
distributions, the yield alerts and their history across versions, the dataset card and the
index.html that shows them all, from the plan's rows and the version's files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tokenmill.io import read_json, write_json
from tokenmill.report.code import write_code_tables
from tokenmill.report.alerts import alert_summary, check_band_names, find_alerts, update_history
from tokenmill.report.dataset_card import robots_card, write_card
from tokenmill.report.distributions import PartFiles, write_distributions
from tokenmill.report.html import shard_validation_rows, write_html
from tokenmill.report.synthetic import write_synthetic_report
from tokenmill.report.tables import ALL_SOURCES, STAGES, PartOutputs, write_report, yield_arrow

# the tables a person reads in the job's log, before the alert summary
PRINTED_TABLES = ("yield.tsv", "contamination.tsv")


@dataclass(frozen=True)
class VersionReport:
    """The yield alerts found, the text to print (the yield and contamination tables, then the
    alert summary), and whether the alerts fail the run (report.alerts.fail is set)."""

    alerts: list[dict]
    text: str
    fails_run: bool


def write_version_report(*, version: str, plan_rows: list[dict], representatives: list[str], shard_dirs: list[str],
                         benchmarks: list[str], manifest_path: str, sources: dict, alert_section: dict,
                         recipe_path: str | None, rulegraph_path: str, history_path: str, out_dir: str,
                         robots_summary_path: str | None = None, robots_policy: dict | None = None,
                         synthetic_quality: list[str] = (), generation_stats: list[str] = (),
                         annotate_summary: str | None = None, prices: dict | None = None,
                         cost_rates: str | None = None, language_table: str | None = None,
                         max_epochs: dict[str, float] | None = None) -> VersionReport:
    """Write the report of `version` into `out_dir` and add its yield rows to the history at
    `history_path` (reporting a version again replaces its rows). `plan_rows`: read_plan's rows
    for the version; `representatives`: select's summary of each snapshot; `sources`: source ->
    {tier, license_id, text_from}; `alert_section`: the report.alerts config section (an empty band is no
    band). Alerts are checked against the yield per source and per snapshot. `robots_summary_path`:
    robots_state's summary; `robots_policy`: select.robots with its agents resolved.
    `synthetic_quality`, `generation_stats`, `annotate_summary`: the synthetic_quality summaries,
    the generate stats and annotate's summary (tokenmill.report.synthetic); `prices`: report.prices;
    `cost_rates`: the calibration that prices generated tokens; `language_table`, `max_epochs`: where
    each language's rules come from, and each tier's epoch cap (report.max_epochs)."""
    settings = {**alert_section, "bands": {stage: band for stage, band in alert_section["bands"].items() if band}}
    check_band_names(settings["bands"], STAGES)
    manifest = read_json(manifest_path)
    excluded = manifest.get("excluded_shards", [])
    table = write_report([PartOutputs(row["source"], row["snapshot"], row["part"], row["stats"], row["select"],
                                      row["tokenize"], row["decontaminate"]) for row in plan_rows],
                         representatives, shard_dirs, benchmarks, out_dir,
                         {(entry["source"], entry["name"]) for entry in excluded}, language_table, max_epochs)
    code_repositories = write_code_tables([row for row in plan_rows if row["kind"] == "code"], out_dir)
    distributions = write_distributions([PartFiles(row["source"], row["snapshot"], row["part"], row["stats"],
                                                   row["select"], row["tokenize"], row["minhash_cluster"],
                                                   row["quality_fasttext"], row["quality_encoder"],
                                                   row["decontaminate"]) for row in plan_rows], out_dir)
    by_source = [{**row, "snapshot": ""} for row in table.ordered_rows()]
    by_snapshot = table.ordered_rows(by_snapshot=True)
    earlier, history = update_history(history_path, version, yield_arrow(by_snapshot + by_source))
    alerts = find_alerts(by_source + by_snapshot, earlier, settings,
                         {name: source["tier"] for name, source in sources.items()})
    synthetic = write_synthetic_report(list(synthetic_quality), list(generation_stats), annotate_summary, by_snapshot,
                                       settings["max_distinguisher_auc"],
                                       prices or {"core_hour": None, "gpu_hour": None, "currency": ""},
                                       read_json(cost_rates) if cost_rates else {}, out_dir)
    alerts += synthetic["alerts"]
    summary = alert_summary(alerts)
    write_json(f"{out_dir}/alerts.json", {"version": version, "fail": settings["fail"], "summary": summary,
                                          "alerts": alerts})
    contamination = read_json(f"{out_dir}/contamination.json")
    robots = None
    if robots_summary_path:
        disallowed = sum(row["docs_in"] - row["docs_out"] for row in by_source
                         if row["source"] == ALL_SOURCES and row["stage"] == "robots")
        robots = robots_card(read_json(robots_summary_path), robots_policy, disallowed)
    write_card(out_dir, manifest_path, sources, contamination, recipe_path, code_repositories, robots, synthetic)
    write_html(f"{out_dir}/index.html", version=version, manifest=manifest, stages=STAGES,
               yield_rows=by_source, snapshot_rows=by_snapshot, alerts=alerts, bands=settings["bands"],
               distributions=distributions, contamination=contamination,
               shards=shard_validation_rows(shard_dirs, excluded), history=history.to_pylist(), synthetic=synthetic,
               rulegraph_svg=Path(rulegraph_path).read_text(encoding="utf-8"))
    tables = [Path(out_dir, name).read_text(encoding="utf-8") for name in PRINTED_TABLES]
    return VersionReport(alerts, "\n".join([*tables, *summary]), bool(alerts) and settings["fail"])
