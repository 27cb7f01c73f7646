"""The report's synthetic data: the quality of each synthetic snapshot per prompt template (from
synthetic_quality), what generation cost per device (from the generate and annotate stats) in
core- or GPU-hours and, with report.prices, money per million tokens, the rubric annotation's
counts, and an alert for every snapshot or template whose distinguisher AUC is above
report.alerts.max_distinguisher_auc (too identifiable to train on as it is)."""

from __future__ import annotations

from tokenmill.io import read_json, write_tsv

QUALITY_COLUMNS = ["source", "snapshot", "template", "outputs", "documents", "kept", "failures", "mean_grounding",
                   "mean_source_overlap", "mean_type_token_ratio", "mean_source_type_token_ratio", "mean_ngram_entropy",
                   "mean_source_ngram_entropy", "new_tokens", "distinguisher_auc", "distinguisher_real",
                   "distinguisher_synthetic", "too_identifiable"]
COST_COLUMNS = ["job", "requests", "new_tokens", "device", "kind", "tokens_per_second", "hours_per_million_tokens",
                "cost_per_million_tokens", "calibration"]
TEMPLATE_TOTAL = "ALL"


def _kept(yield_rows: list[dict], source: str, snapshot: str) -> int | None:
    """Documents of a synthetic snapshot that select kept: what its write_shards stage wrote."""
    return next((row["docs_out"] for row in yield_rows
                 if row["source"] == source and row["snapshot"] == snapshot and row["stage"] == "write_shards"), None)


def quality_rows(summaries: list[dict], yield_rows: list[dict], max_auc: float) -> tuple[list[dict], list[dict]]:
    """(synthetic.tsv rows, alerts) of synthetic_quality's summaries."""
    rows, alerts = [], []
    for summary in summaries:
        source, snapshot = summary["source"], summary["snapshot"]
        for template, entry in summary["templates"].items():
            auc = entry["distinguisher"]["auc"]
            flagged = auc is not None and auc > max_auc
            rows.append({"source": source, "snapshot": snapshot, "template": template, "outputs": entry["outputs"],
                         "documents": entry["documents"],
                         "kept": _kept(yield_rows, source, snapshot) if template == TEMPLATE_TOTAL else "",
                         "failures": " ".join(f"{reason}:{count}" for reason, count in entry["failures"].items()),
                         **{name: entry[name] for name in QUALITY_COLUMNS if name.startswith("mean_")},
                         "new_tokens": entry["new_tokens"], "distinguisher_auc": auc,
                         "distinguisher_real": entry["distinguisher"]["real"],
                         "distinguisher_synthetic": entry["distinguisher"]["synthetic"], "too_identifiable": flagged})
            if flagged:
                which = "" if template == TEMPLATE_TOTAL else f" (template {template})"
                alerts.append({"kind": "distinguisher", "source": source, "snapshot": snapshot, "stage": "synthetic",
                               "template": template, "auc": auc, "max": max_auc,
                               "docs_in": entry["distinguisher"]["synthetic"],
                               "message": f"{source}/{snapshot}{which}: a real-vs-synthetic classifier tells its text "
                                          f"from its sources with AUC {auc:.3f} (above {max_auc}): too identifiable"})
    return rows, alerts


def cost_rows(jobs: dict[str, list[dict]], rates: dict, prices: dict) -> list[dict]:
    """Per generation job kind (a synthetic source, or annotate): its requests and new tokens, and
    per device of the rates' calibration (`rates`: a tokenmill calibrate file) its tokens per
    second, core- or GPU-hours per million new tokens and, with a price, their cost. The speed is
    the calibration's, not this run's (whose seconds would make the report another file every run:
    `python -m tokenmill calibrate` on this run's results measures them)."""
    devices = (rates.get("generation") or {}).get("devices") or {}
    provenance = rates.get("provenance", {})
    rows = []
    for name, stats in sorted(jobs.items()):
        base = {"job": name, "requests": sum(entry["requests"] for entry in stats),
                "new_tokens": sum(entry["new_tokens"] for entry in stats),
                "calibration": f"{provenance.get('date')} on {provenance.get('hostname')}"}
        if not devices:
            rows.append({**base, "device": "not calibrated (no generation in the rates)", "kind": "", "tokens_per_second": None,
                         "hours_per_million_tokens": None, "cost_per_million_tokens": None})
        for label, device in sorted(devices.items()):
            per_million = 1e6 / device["tokens_per_second"] / 3600 * device["units"]
            price = prices["core_hour" if device["kind"] == "cpu" else "gpu_hour"]
            rows.append({**base, "device": label, "kind": "core-hours" if device["kind"] == "cpu" else "GPU-hours",
                         "tokens_per_second": device["tokens_per_second"],
                         "hours_per_million_tokens": round(per_million, 6),
                         "cost_per_million_tokens": None if price is None else f"{per_million * price:.4g} {prices['currency']}"})
    return rows


def write_synthetic_report(quality_paths: list[str], generation_paths: list[str], annotate_path: str | None,
                           yield_rows: list[dict], max_auc: float, prices: dict, rates: dict, out_dir: str) -> dict:
    """Write synthetic.tsv and generation_cost.tsv into `out_dir`; return their rows, the
    annotation summary and the alerts."""
    quality, alerts = quality_rows([read_json(path) for path in quality_paths], yield_rows, max_auc)
    jobs: dict[str, list[dict]] = {}
    for path in generation_paths:
        stats = read_json(path)
        jobs.setdefault(stats["part"].split("/")[0], []).append(stats)
    annotation = read_json(annotate_path) if annotate_path else None
    if annotation is not None:
        jobs["annotate"] = [annotation]
    cost = cost_rows(jobs, rates, prices)
    write_tsv(f"{out_dir}/synthetic.tsv", QUALITY_COLUMNS, quality)
    write_tsv(f"{out_dir}/generation_cost.tsv", COST_COLUMNS, cost)
    generators = {stats["part"].split("/")[0]: {key: stats[key] for key in ("generator_model_id", "generator_sha256",
                                                                            "engine", "knowledge_cutoff", "templates")}
                  for entries in jobs.values() for stats in entries if "part" in stats}
    return {"quality": quality, "cost": cost, "annotation": annotation, "alerts": alerts, "generators": generators}
