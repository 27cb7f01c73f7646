"""index.html: one self-contained page (plots inlined as SVG, no scripts, no network) with the
alerts first, then the yield, the distributions, contamination, shard validation and the rule
graph. It is a pure function of what it is given, so the same run gives the same bytes."""

from __future__ import annotations

from html import escape

from tokenmill.report import plots
from tokenmill.io import atomic_output, read_json
from tokenmill.shards.writer import read_listings

_CSS = """
body { font-family: sans-serif; margin: 2em auto; padding: 0 1.5em; max-width: 75em; color: #222; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
table { border-collapse: collapse; font-size: 0.85em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.5em; text-align: right; }
th { background: #f3f3f3; } td.text, th.text { text-align: left; }
td.alert { background: #fbd5d5; font-weight: bold; } tr.failed td { background: #fbd5d5; }
.alerts { border: 2px solid #c0392b; background: #fdecea; padding: 0.5em 1em; }
.ok { border: 2px solid #27ae60; background: #eafaf1; padding: 0.5em 1em; }
.pins { color: #555; font-size: 0.9em; } figure { margin: 1em 0; } svg { max-width: 100%; height: auto; }
"""


def shard_validation_rows(shard_dirs: list[str], excluded: list[dict]) -> list[dict]:
    """Every shard with its validation checks (from its .meta.json, where write_shards recorded
    them) and, for the ones the manifest left out, the reasons."""
    reasons = {(entry["source"], entry["name"]): entry.get("reasons", []) for entry in excluded}
    rows = []
    for shard_dir, listing in read_listings(shard_dirs):
        source = listing["source"]
        for name in listing["shards"]:
            meta = read_json(shard_dir / f"{name}.meta.json")
            validation = meta.get("validation")
            rows.append({"source": source, "name": name, "n_docs": meta["n_docs"], "n_tokens": meta["n_tokens"],
                         "passed": None if validation is None else validation["passed"],
                         "checks": (validation or {}).get("checks", {}),
                         "excluded": reasons.get((source, name))})
    return rows


def _cell(value, css: str = "") -> str:
    if isinstance(value, float):
        value = f"{value:.4g}"
    elif isinstance(value, int):
        value = f"{value:,}"
    return f'<td{f" class={css!r}" if css else ""}>{escape(str(value))}</td>'


def _table(columns: list[str], rows: list[list[str]], text_columns: int = 1, failed: list[bool] | None = None) -> str:
    head = "".join(f'<th{" class=text" if i < text_columns else ""}>{escape(c)}</th>' for i, c in enumerate(columns))
    marks = failed or [False] * len(rows)
    return (f"<table><tr>{head}</tr>" + "".join(f"<tr{' class=failed' if mark else ''}>{''.join(row)}</tr>"
                                                for row, mark in zip(rows, marks)) + "</table>")


def _yield_table(rows: list[dict], alerts: list[dict], by_snapshot: bool) -> str:
    flagged = {(a["source"], a["snapshot"], a["stage"]): a["message"] for a in alerts}
    columns = ["source", *(["snapshot"] if by_snapshot else []), "stage", "docs in", "docs out", "retention",
               "bytes in", "bytes out", "tokens out", "representatives changed"]
    body = []
    for row in rows:
        message = flagged.get((row["source"], row.get("snapshot", ""), row["stage"]))
        retention = (f'<td class="alert" title="{escape(message)}">{escape(row["retention"])} &#9888;</td>'
                     if message else _cell(row["retention"]))
        body.append([_cell(row["source"], "text"), *([_cell(row["snapshot"], "text")] if by_snapshot else []),
                     _cell(row["stage"], "text"), _cell(row["docs_in"]), _cell(row["docs_out"]), retention,
                     _cell(row["bytes_in"]), _cell(row["bytes_out"]), _cell(row["tokens_out"]),
                     _cell(row["representatives_changed"])])
    return _table(columns, body, text_columns=3 if by_snapshot else 2)


def _auc_cell(auc: float | None, flagged: bool) -> str:
    if auc is None:
        return _cell("-")
    if flagged:
        return f'<td class="alert" title="too identifiable">{auc:.3f} &#9888;</td>'
    return _cell(f"{auc:.3f}")


def _synthetic_section(synthetic: dict | None) -> list[str]:
    """Synthetic data: quality per snapshot and template (the too identifiable marked), what
    generation cost, and the rubric annotation's counts."""
    if not synthetic or not (synthetic["quality"] or synthetic["annotation"]):
        return []
    columns = ["source", "snapshot", "template", "outputs", "documents", "kept", "failures", "grounding",
               "source overlap", "TTR (sources)", "entropy (sources)", "distinguisher AUC"]

    def pair(row: dict, name: str) -> str:
        ours, theirs = row[f"mean_{name}"], row[f"mean_source_{name}"]
        return "-" if ours is None else f"{ours:.3f} ({theirs:.3f})" if theirs is not None else f"{ours:.3f}"

    body = [[_cell(row["source"], "text"), _cell(row["snapshot"], "text"), _cell(row["template"], "text"),
             _cell(row["outputs"]), _cell(row["documents"]), _cell(row["kept"]), _cell(row["failures"], "text"),
             _cell("-" if row["mean_grounding"] is None else f"{row['mean_grounding']:.3f}"),
             _cell("-" if row["mean_source_overlap"] is None else f"{row['mean_source_overlap']:.3f}"),
             _cell(pair(row, "type_token_ratio")), _cell(pair(row, "ngram_entropy")),
             _auc_cell(row["distinguisher_auc"], row["too_identifiable"])] for row in synthetic["quality"]]
    parts = ["<h2 id=synthetic>Synthetic data</h2>",
             "<p>Each generated document against the source text it was given (synthetic.tsv); a distinguisher AUC "
             "near 0.5 means a classifier cannot tell the text from its sources.</p>",
             _table(columns, body, text_columns=3, failed=[row["too_identifiable"] for row in synthetic["quality"]])]
    if synthetic["cost"]:
        parts += [f"<p>What generating these tokens costs at the tokens per second of the calibration of "
                  f"{escape(synthetic['cost'][0]['calibration'])} (report.cost_rates; generation_cost.tsv):</p>",
                  _table(["job", "device", "new tokens", "tokens/s", "hours per million tokens", "cost per million tokens"],
                         [[_cell(row["job"], "text"), _cell(row["device"], "text"), _cell(row["new_tokens"]),
                           _cell("-" if row["tokens_per_second"] is None else row["tokens_per_second"]),
                           _cell(f"{row['hours_per_million_tokens']} {row['kind']}" if row["hours_per_million_tokens"]
                                 is not None else "-", "text"),
                           _cell(row["cost_per_million_tokens"] or "no price (report.prices)", "text")]
                          for row in synthetic["cost"]], text_columns=2)]
    annotation = synthetic["annotation"]
    if annotation is not None:
        parts.append(f"<p>Rubric annotation: {annotation['documents']} documents, "
                     + ", ".join(f"{status} {count}" for status, count in annotation["statuses"].items())
                     + f"; scores {escape(str(annotation['scores']))}; labels {escape(str(annotation['labels']))}.</p>")
    return parts


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{escape(caption)}</figcaption></figure>"


def render(*, version: str, manifest: dict, stages: list[str], yield_rows: list[dict], snapshot_rows: list[dict],
           alerts: list[dict], bands: dict, distributions: dict, contamination: dict, shards: list[dict],
           history: list[dict], rulegraph_svg: str, synthetic: dict | None = None) -> str:
    snapshots = distributions["snapshots"]
    parts = [f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>tokenmill report {escape(version)}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>tokenmill report: {escape(version)}</h1>",
             f"<p class=pins>{manifest['n_docs']:,} documents, {manifest['n_tokens']:,} tokens in "
             f"{len(manifest['shards'])} shards &middot; tokenizer sha256 {escape(manifest['tokenizer']['sha256'][:16])}"
             f"&hellip; &middot; config sha256 {escape(manifest['config_sha256'][:16])}&hellip; &middot; code "
             f"{escape(manifest['code_version'])} &middot; <a href=DATASET_CARD.md>dataset card</a></p>",
             "<h2 id=alerts>Alerts</h2>"]
    if alerts:
        parts.append(f"<div class=alerts><p><b>{len(alerts)} alert(s)</b> (details in alerts.json)</p><ul>"
                     + "".join(f"<li>{escape(a['message'])}</li>" for a in alerts) + "</ul></div>")
    else:
        parts.append("<div class=ok>No alerts: every checked stage is inside its band and near its history, and no synthetic text is too identifiable.</div>")
    parts += ["<h2 id=yield>Yield</h2>",
              _yield_table([row for row in yield_rows if row["source"] == "ALL"], alerts, by_snapshot=False),
              "<details><summary>Yield per source (table)</summary>",
              _yield_table([row for row in yield_rows if row["source"] != "ALL"], alerts, by_snapshot=False),
              "</details>",
              _figure(plots.retention_vs_bands(yield_rows, stages, bands),
                      "Retention of each stage; the grey bands are report.alerts.bands."),
              _figure(plots.retention_heatmap(snapshot_rows, stages, alerts),
                      "Retention per snapshot: a stage that behaves differently in one snapshot stands out."),
              "<details><summary>Yield per snapshot (table)</summary>",
              _yield_table(snapshot_rows, alerts, by_snapshot=True), "</details>"]
    if len({row["run"] for row in history}) > 1:
        parts.append(_figure(plots.retention_history(history, stages),
                             "results/report/history.parquet: every reported version, oldest first."))
    parts += ["<h2 id=distributions>Distributions</h2>",
              _figure(plots.tokens_by_language(snapshots), "Tokens in shards by source and language."),
              _figure(plots.length_histogram(snapshots, distributions["length_edges"]),
                      "Characters per document after extraction and after selection."),
              _figure(plots.score_histograms(snapshots, distributions["score_edges"]),
                      "Quality classifier scores (select_quality: the score select cut on)."),
              _figure(plots.cluster_sizes(snapshots, distributions["cluster_size_edges"]),
                      "Near-duplicate clusters by size (1: a document with no near duplicate)."),
              _figure(plots.top_hosts(snapshots), "Hosts whose documents hold the most tokens in shards."),
              _figure(plots.new_host_rate(snapshots), "Hosts not seen in an earlier snapshot of the same source."),
              _figure(plots.quarantine_reasons(snapshots), "Records that yielded no document, by reason.")]
    parts += ["<h2 id=contamination>Contamination</h2>",
              f"<p>{contamination['docs_scanned']:,} documents scanned.</p>",
              _table(["benchmark", "docs flagged", "rate", "tokens flagged", "items hit", "longest run"],
                     [[_cell(b["benchmark"], "text"), _cell(b["docs_flagged"]), _cell(b["rate"]),
                       _cell(b["tokens_flagged"]), _cell(b["items_hit"]), _cell(b["max_run"])]
                      for b in contamination["benchmarks"]])]
    parts += _synthetic_section(synthetic)
    parts.append("<h2 id=shards>Shard validation</h2>")
    check_names = sorted({name for shard in shards for name in shard["checks"]})
    if not any(shard["passed"] is not None for shard in shards):
        parts.append("<p>These shards carry no validation results.</p>")
    body, failed = [], []
    for shard in shards:
        status = "not checked" if shard["passed"] is None else "passed" if shard["passed"] else "FAILED"
        if shard["excluded"] is not None:
            status = "excluded: " + ", ".join(map(str, shard["excluded"]))
        checks = [shard["checks"].get(name) for name in check_names]
        cells = [_cell(f"{shard['source']}/{shard['name']}", "text"), _cell(shard["n_docs"]), _cell(shard["n_tokens"]),
                 _cell(status, "text")]
        cells += ["<td></td>" if check is None else
                  _cell(f"{check['value']:.4g}" if isinstance(check["value"], float) else check["value"],
                        "" if check["passed"] else "alert") for check in checks]
        body.append(cells)
        failed.append(shard["passed"] is False or shard["excluded"] is not None)
    parts.append(_table(["shard", "documents", "tokens", "status", *check_names], body, failed=failed))
    parts += ["<h2 id=rulegraph>Rule graph</h2>", _figure(rulegraph_svg, "The workflow's rules and their dependencies."),
              "<h2 id=files>Data files</h2><p>In this folder: yield.tsv, yield_by_snapshot.tsv, yield_by_kind.tsv, yield_by_language.tsv, "
              "yield.parquet, alerts.json, distributions.json, tokens_by_language.tsv, top_hosts.tsv, hosts_by_snapshot.tsv, "
              "reasons.tsv, contamination.json, DATASET_CARD.md; across versions: ../history.parquet.</p>",
              "</body></html>\n"]
    return "\n".join(parts)


def write_html(path: str, **content) -> None:
    with atomic_output(path) as temp:
        temp.write_text(render(**content), encoding="utf-8")
