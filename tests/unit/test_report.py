"""The report's alerts, history, distributions, plots, rule graph and dataset card, and the
report of a whole version.

The yield rows and histories here are small synthetic tables written by the tests (labelled as
such); the rule graph is a real `snakemake --rulegraph` excerpt of this workflow. The version
report reads real lingua text, extracted, tokenized and sharded."""

from __future__ import annotations

import copy
import json
import re
import sqlite3
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import demo_config, repository_copy
from tests.unit.helpers import SHARD_LIMITS, tokenized_parts
from tokenmill.decontaminate import SCHEMA as DECONTAMINATE_SCHEMA
from tokenmill.dedup.minhash_cluster import OUTPUT_SCHEMA as DEDUP_SCHEMA
from tokenmill.dedup.normalize import content_hash
from tokenmill.io import read_json, read_jsonl_zst, write_json, write_parquet
from tokenmill.quality.encoder import SCHEMA as ENCODER_SCHEMA
from tokenmill.quality.fasttext import SCHEMA as FASTTEXT_SCHEMA
from tokenmill.report import plots
from tokenmill.report.alerts import (AlertConfigError, alert_summary, check_band_names, closing_lines, end_of_run_summary,
                                     find_alerts, update_history)
from tokenmill.config import validate
from tokenmill.report.dataset_card import build_card, card_markdown, recipe_mixture
from tokenmill.report.distributions import CLUSTER_SIZE_EDGES, SCORE_EDGES, _histogram
from tokenmill.report.html import render
from tokenmill.report.tables import STAGES, yield_arrow
from tokenmill.report.rulegraph import parse_rulegraph, rulegraph_svg
from tokenmill.report.version import PRINTED_TABLES, write_version_report
from tokenmill.shards.manifest import publish_manifest
from tokenmill.shards.writer import write_shards
from tokenmill.tokenize import load_tokenizer, token_dtype

RULEGRAPH_DOT = """digraph snakemake_dag {
    graph[bgcolor=white, margin=0];
	0[label = "all", color = "0.00 0.6 0.85", style="rounded"];
	1[label = "manifest", color = "0.25 0.6 0.85", style="rounded"];
	2[label = "write_shards", color = "0.64 0.6 0.85", style="rounded"];
	3[label = "tokenize", color = "0.53 0.6 0.85", style="rounded"];
	4[label = "report", color = "0.36 0.6 0.85", style="rounded"];
	1 -> 0
	4 -> 0
	2 -> 1
	3 -> 2
	2 -> 4
}"""


def alert_settings(**overrides) -> dict:
    settings = copy.deepcopy(validate(demo_config())["report"]["alerts"])
    settings["bands"] = {stage: band for stage, band in settings["bands"].items() if band}
    settings.update(overrides)
    return settings


def no_history(tmp_path):
    """The earlier rows of a first run: none."""
    earlier, _ = update_history(tmp_path / "history.parquet", "v1", yield_arrow(synthetic_rows(600)))
    return earlier


def synthetic_rows(langid_kept: int, source: str = "web", snapshot: str = "") -> list[dict]:
    """A synthetic yield table: 1,000 documents reach langid, `langid_kept` leave it."""
    return [{"source": source, "snapshot": snapshot, "stage": stage, "docs_in": 1000,
             "docs_out": langid_kept if stage == "langid" else 1000,
             "retention": f"{(langid_kept if stage == 'langid' else 1000) / 1000:.4f}",
             "bytes_in": 10_000, "bytes_out": 10_000, "tokens_out": 0, "representatives_changed": ""}
            for stage in ("extract", "langid")]


def test_retention_outside_its_band_alerts_only_for_checked_tiers_and_enough_documents(tmp_path):
    settings = alert_settings()
    empty = no_history(tmp_path)
    assert empty.num_rows == 0
    inside, outside = synthetic_rows(600), synthetic_rows(930)
    assert find_alerts(inside, empty, settings, {"web": "crawl"}) == []
    alerts = find_alerts(outside, empty, settings, {"web": "crawl"})
    assert [(a["kind"], a["stage"]) for a in alerts] == [("band", "langid")]
    assert "93.0%" in alerts[0]["message"] and "58.0%-63.0%" in alerts[0]["message"]
    assert find_alerts(outside, empty, settings, {"web": "academic"}) == []  # a curated source keeps more
    assert find_alerts(outside, empty, alert_settings(min_docs=5000), {"web": "crawl"}) == []


def test_history_replaces_a_rerun_version_and_a_drop_from_its_median_alerts(tmp_path):
    history = tmp_path / "history.parquet"
    settings = alert_settings(tiers=[])  # bands off: only the history check
    for version in ("v1", "v2", "v3"):
        update_history(history, version, yield_arrow(synthetic_rows(600)))
    earlier, table = update_history(history, "v2", yield_arrow(synthetic_rows(600)))  # v2 reported again
    assert table.num_rows == 6 and sorted(set(table.column("version").to_pylist())) == ["v1", "v2", "v3"]
    assert table.column("version").to_pylist()[-2:] == ["v2", "v2"]  # the rerun is now the latest
    assert pq.read_table(history).equals(table)

    earlier, _ = update_history(history, "v4", yield_arrow(synthetic_rows(400)))  # language ID lost a third
    alerts = find_alerts(synthetic_rows(400), earlier, settings, {"web": "crawl"})
    assert [(a["kind"], a["stage"], a["median"]) for a in alerts] == [("history", "langid", 0.6)]
    assert "-20.0%" in alerts[0]["message"]
    assert find_alerts(synthetic_rows(620), earlier, settings, {"web": "crawl"}) == []
    assert alert_summary(alerts)[0] == "1 alert(s):" and alert_summary([]) == ["no alerts"]


def test_a_history_written_before_a_yield_column_existed_still_takes_new_versions(tmp_path):
    history = tmp_path / "history.parquet"
    update_history(history, "v1", yield_arrow(synthetic_rows(600)).drop(["representatives_changed"]))
    extract, langid = synthetic_rows(600)
    near_dedup = {**langid, "stage": "near_dedup", "representatives_changed": 3}
    _, table = update_history(history, "v2", yield_arrow([extract, near_dedup]))
    assert table.column("version").to_pylist() == ["v1", "v1", "v2", "v2"]
    assert table.column("representatives_changed").to_pylist() == [None, None, None, 3]


def test_a_band_for_a_stage_that_does_not_exist_is_an_error():
    check_band_names({"langid": {"min": 0.5, "max": 1.0}}, STAGES)
    with pytest.raises(AlertConfigError, match="langidd"):
        check_band_names({"langidd": {"min": 0.5, "max": 1.0}}, STAGES)


def test_histograms_put_every_value_in_exactly_one_bin():
    scores = [0.0, 0.049, 0.05, 0.5, 0.99, 1.0]
    counts = _histogram(scores, SCORE_EDGES)
    assert len(counts) == len(SCORE_EDGES) and sum(counts) == len(scores)
    assert counts[0] == 2 and counts[1] == 1 and counts[10] == 1 and counts[-1] == 2  # 1.0 is in the last bin
    sizes = _histogram([1, 2, 3, 4, 300], CLUSTER_SIZE_EDGES, weights=[10, 5, 2, 1, 1])
    assert sizes[:3] == [10, 5, 3] and sizes[-1] == 1


def test_plots_are_deterministic_svg_with_distinct_ids():
    rows = synthetic_rows(930) + synthetic_rows(600, source="ALL")
    first = plots.retention_vs_bands(rows, ["extract", "langid"], {"langid": {"min": 0.58, "max": 0.63}})
    second = plots.retention_vs_bands(rows, ["extract", "langid"], {"langid": {"min": 0.58, "max": 0.63}})
    assert first == second and first.startswith("<svg") and "Date" not in first
    heatmap = plots.retention_heatmap(synthetic_rows(930, snapshot="s1"), ["extract", "langid"], [])
    referenced = [set(re.findall(r"url\(#([^)]+)\)", svg)) for svg in (first, heatmap)]
    assert referenced[0] and not referenced[0] & referenced[1], "two plots on one page share clip-path ids"
    assert ">langid<" in first  # text stays text


def test_rule_graph_is_parsed_and_drawn_in_dependency_order():
    rules, edges = parse_rulegraph(RULEGRAPH_DOT)
    assert rules == ["all", "manifest", "report", "tokenize", "write_shards"]
    assert ("write_shards", "report") in edges and len(edges) == 5
    svg = rulegraph_svg(RULEGRAPH_DOT)
    drawn = re.findall(r">([a-z_]+)</text>", svg)
    assert sorted(drawn) == rules
    assert drawn.index("tokenize") < drawn.index("write_shards") < drawn.index("report") < drawn.index("all")
    with pytest.raises(ValueError, match="no rule"):
        parse_rulegraph("not a graph")


def test_the_rule_graph_is_drawn_while_the_running_head_holds_its_metadata_file(tmp_path):
    """The rulegraph job runs beside the head job that started it, which writes Snakemake's
    metadata file (profiles/default: one SQLite file) as it submits; a write transaction held
    there must not fail the drawing."""
    repository = repository_copy(tmp_path / "repo")
    (repository / ".snakemake").mkdir()
    head = sqlite3.connect(repository / ".snakemake" / "metadata.db", isolation_level=None)
    head.execute("CREATE TABLE held (x)")
    head.execute("BEGIN EXCLUSIVE")  # as a head's submission holds it
    head.execute("INSERT INTO held VALUES (1)")
    try:
        subprocess.run([sys.executable, "-P", "scripts/rulegraph.py", "--snakefile", "Snakefile", "--configfiles",
                        "config/config.yaml", "--out", "rulegraph.svg"], cwd=repository, check=True, timeout=300)
    finally:
        head.execute("ROLLBACK")
        head.close()
    drawn = re.findall(r">([a-z_]+)</text>", (repository / "rulegraph.svg").read_text(encoding="utf-8"))
    assert {"extract", "minhash_cluster", "select", "write_shards", "report"} <= set(drawn)


def test_page_marks_alerts_and_lists_failing_shards(tmp_path):
    manifest = {"n_docs": 10, "n_tokens": 100, "shards": [{}], "tokenizer": {"sha256": "ab" * 32},
                "config_sha256": "cd" * 32, "code_version": "0.1.0"}
    rows = synthetic_rows(930)
    alerts = find_alerts(rows, no_history(tmp_path), alert_settings(), {"web": "crawl"})
    snapshot = {"source": "web", "snapshot": "s1", "languages": [{"lang": "en", "docs": 1, "tokens": 100}],
                "length_extracted": [1] * 11, "length_selected": [1] * 11,
                "scores": {"quality_fasttext": {"all": [1] * 20, "selected": [1] * 20}},
                "cluster_sizes": [1] * 10, "top_hosts": [{"host": "example.org", "tokens": 100}],
                "new_host_rate": 1.0, "quarantine": {"quarantine:timeout": 2}}
    shards = [{"source": "web", "name": "web-s1-0123456789abcdef", "n_docs": 5, "n_tokens": 50, "passed": False,
               "checks": {"token_entropy_bits": {"value": 1.2, "limit": 2.0, "passed": False}},
               "excluded": ["token_entropy_bits"]}]
    page = render(version="v9", manifest=manifest, stages=["extract", "langid"], yield_rows=rows,
                  snapshot_rows=[{**r, "snapshot": "s1"} for r in rows], alerts=alerts, bands={},
                  distributions={"snapshots": [snapshot], "length_edges": list(range(11)),
                                 "score_edges": SCORE_EDGES, "cluster_size_edges": CLUSTER_SIZE_EDGES},
                  contamination={"docs_scanned": 10, "benchmarks": []}, shards=shards, history=[],
                  rulegraph_svg=rulegraph_svg(RULEGRAPH_DOT))
    assert "1 alert(s)" in page and 'class="alert"' in page
    assert "<tr class=failed>" in page and "excluded: token_entropy_bits" in page
    assert page.count("<svg") == 10  # 2 yield plots, 7 distributions, the rule graph (one run: no history plot)


def test_card_lists_licences_pins_and_says_when_there_is_no_recipe(tmp_path):
    manifest = {"version": "v9", "n_docs": 3, "n_tokens": 30, "sources": {"web": {"shards": 1, "n_docs": 3, "n_tokens": 30}},
                "tokenizer": {"sha256": "ab" * 32, "vocab_size": 1000}, "config_sha256": "cd" * 32, "code_version": "0.1.0"}
    card = build_card(manifest, {"web": {"tier": "crawl", "license_id": "CC-TOU",
                                         "text_from": "HTML, extract engine two_pass"}},
                      {"docs_scanned": 3, "benchmarks": []}, recipe_mixture(None, "unused"))
    text = card_markdown(card)
    assert "| web | crawl | CC-TOU | HTML, extract engine two_pass | 1 | 3 | 30 | 100.0% |" in text
    assert "ab" * 32 in text and "cd" * 32 in text and "0.1.0" in text
    assert "no recipe configured" in text
    manifest_path = tmp_path / "manifest.json"
    manifest_path.write_text("{}")
    mixture = recipe_mixture("config/recipe.yaml", str(manifest_path))  # pins the demo manifest, not this one
    assert "no replay" in mixture["status"] and "phases" not in mixture


def side_cars(directory, part: str, docs: str) -> dict[str, str]:
    """The minhash_cluster, quality and decontaminate files of a part, in their stages' schemas,
    for documents that are each their own cluster, score alike and hold no benchmark text
    (synthetic: those stages do not run here)."""
    documents = list(read_jsonl_zst(docs))
    ids, n = [doc["doc_id"] for doc in documents], len(documents)
    tables = {
        "minhash_cluster": pa.Table.from_pydict({
            "doc_id": ids, "content_hash": [content_hash(doc["text"]) for doc in documents],
            "exact_canonical": [True] * n, "exact_dup_of": [None] * n, "exact_group_size": [1] * n,
            "dup_cluster_id": ids, "dup_cluster_size": [1] * n, "is_cluster_representative": [True] * n,
            "line_doc_counts": [[]] * n, "scope_clusters": [n] * n}, schema=DEDUP_SCHEMA),
        "quality_fasttext": pa.Table.from_pydict({"doc_id": ids, "quality_fasttext": [0.9] * n}, schema=FASTTEXT_SCHEMA),
        "quality_encoder": pa.Table.from_pydict({"part": [part] * n, "row": list(range(n)), "doc_id": ids,
                                                 "quality_encoder": [0.8] * n}, schema=ENCODER_SCHEMA),
        "decontaminate": pa.Table.from_pydict({
            "doc_id": ids, "url": [doc.get("url") for doc in documents], "contaminated_by": [[]] * n, "derived_contaminated_by": [[]] * n,
            "longest_run": [0] * n, "matched_spans": [[]] * n, "words": [len(doc["text"].split()) for doc in documents]},
            schema=DECONTAMINATE_SCHEMA),
    }
    paths = {}
    for kind, table in tables.items():
        paths[kind] = str(directory / f"{part}.{kind}.parquet")
        write_parquet(paths[kind], table)
    return paths


@pytest.fixture(scope="module")
def version_inputs(tmp_path_factory) -> dict:
    """write_version_report's inputs but the alert settings, the history and the output folder:
    version v1 of lingua/s1, real text of two languages, every document selected, tokenized,
    sharded and published with its manifest."""
    tmp = tmp_path_factory.mktemp("version")
    tokenizer, parts, prepared = tokenized_parts(tmp, ["de", "fr"], 11)
    rows = [{"source": "lingua", "snapshot": "s1", "part": part.part, "kind": "jsonl",
             "stats": str(tmp / f"{part.part}.stats.json"),
             "select": part.select, "tokenize": part.path, **side_cars(tmp, part.part, prepared[part.part][0])}
            for part in parts]
    shard_dir = str(tmp / "shards" / "v1" / "lingua" / "s1")
    tok, _ = load_tokenizer(str(tokenizer))
    write_shards("lingua", "s1", parts, shard_dir, 20000, "Apache-2.0", "crawl", token_dtype(tok.get_vocab_size()),
                 SHARD_LIMITS)
    manifest = str(tmp / "shards" / "v1" / "manifest.json")
    publish_manifest("v1", str(tokenizer), str(tmp / "shards" / "v1" / "tokenizer.json"), [shard_dir], manifest,
                     str(tmp / "shards" / "v1" / "validation.tsv"), "c" * 64, "0.1.0")
    representatives = tmp / "select-summary.json"  # select's summary: no group kept another copy
    write_json(representatives, {"source": "lingua", "snapshot": "s1", "exact_groups": 0, "exact_groups_changed": 0,
                                 "clusters": 0, "clusters_changed": 0, "clusters_lost": 0})
    rulegraph = tmp / "rulegraph.svg"
    rulegraph.write_text(rulegraph_svg(RULEGRAPH_DOT), encoding="utf-8")
    return {"version": "v1", "plan_rows": rows, "representatives": [str(representatives)], "shard_dirs": [shard_dir],
            "benchmarks": ["gsm8k"], "manifest_path": manifest,
            "sources": {"lingua": {"tier": "crawl", "license_id": "Apache-2.0", "text_from": "JSONL field `text`"}}, "recipe_path": None,
            "rulegraph_path": str(rulegraph)}


def alert_section(**overrides) -> dict:
    """The report.alerts config section as the workflow passes it (empty bands included); 80
    documents are checked (the default skips rows of fewer than 100)."""
    section = copy.deepcopy(validate(demo_config())["report"]["alerts"])
    return {**section, "min_docs": 10, **overrides}


def test_a_version_report_writes_its_page_and_card_and_fails_the_run_only_when_told(version_inputs, tmp_path):
    history = str(tmp_path / "history.parquet")
    warned = write_version_report(**version_inputs, alert_section=alert_section(fail=False), history_path=history,
                                  out_dir=str(tmp_path / "warned"))
    # every document is kept: language ID keeps far more than a general crawl's band allows
    assert ("band", "langid") in {(alert["kind"], alert["stage"]) for alert in warned.alerts}
    assert not warned.fails_run
    page = (tmp_path / "warned" / "index.html").read_text(encoding="utf-8")
    assert "tokenmill report: v1" in page and page.count('class="alert"') >= len(warned.alerts)
    assert "| lingua | crawl | Apache-2.0 |" in (tmp_path / "warned" / "DATASET_CARD.md").read_text(encoding="utf-8")
    alerts = read_json(tmp_path / "warned" / "alerts.json")
    assert alerts["fail"] is False and alerts["alerts"] == json.loads(json.dumps(warned.alerts))
    tables = [(tmp_path / "warned" / name).read_text(encoding="utf-8") for name in PRINTED_TABLES]
    assert warned.text == "\n".join([*tables, *alerts["summary"]])
    assert "lingua\ttokenize\t80\t80\t" in warned.text  # the yield per source: all 80 documents tokenized
    closing = end_of_run_summary(str(tmp_path / "warned"))  # what the end of a workflow run prints
    assert closing[:3] == [f"  report:   {tmp_path}/warned/index.html", f"  {len(warned.alerts)} alert(s):",
                           f"    {warned.alerts[0]['message']}"]
    assert end_of_run_summary(str(tmp_path / "unreported")) == [
        f"  report:   not written ({tmp_path}/unreported/alerts.json is missing)"]

    failed = write_version_report(**version_inputs, alert_section=alert_section(fail=True), history_path=history,
                                  out_dir=str(tmp_path / "failed"))
    assert failed.fails_run and failed.alerts == warned.alerts
    assert read_json(tmp_path / "failed" / "alerts.json")["fail"] is True
    assert set(pq.read_table(history).column("version").to_pylist()) == {"v1"}  # reported again: replaced
    quiet = write_version_report(**version_inputs, alert_section=alert_section(fail=True, tiers=[]),
                                 history_path=history, out_dir=str(tmp_path / "quiet"))
    assert quiet.alerts == [] and not quiet.fails_run and quiet.text.endswith("no alerts")


def test_a_band_for_a_stage_that_does_not_exist_fails_before_anything_is_written(version_inputs, tmp_path):
    section = alert_section()
    section["bands"] = {**section["bands"], "langidd": {"min": 0.5, "max": 1.0}}
    with pytest.raises(AlertConfigError, match="langidd"):
        write_version_report(**version_inputs, alert_section=section, history_path=str(tmp_path / "history.parquet"),
                             out_dir=str(tmp_path / "report"))
    assert list(tmp_path.iterdir()) == []


def test_a_rule_graph_with_a_cycle_is_layered_from_its_inputs():
    """A synthetic source's extract reads what generate made of extracted documents: the rule graph
    has a cycle (and self-loops) that its jobs do not, and the layering leaves out the edge back."""
    from tokenmill.report.rulegraph import _layers

    rules = ["all", "extract", "generate", "plan", "score"]
    edges = [("plan", "extract"), ("extract", "score"), ("score", "generate"), ("generate", "extract"),
             ("extract", "extract"), ("score", "all")]
    assert _layers(rules, edges) == [["plan"], ["extract"], ["score"], ["all", "generate"]]


def test_a_run_names_its_version_complete_only_when_its_manifest_was_a_target(tmp_path):
    args = ("v1", "results/shards/v1/manifest.json", "results/shards/v1/<source>/<snapshot>/", str(tmp_path / "report"))
    partial = closing_lines(*args, built=["results/plan/parts.tsv"], manifest_in_run=False)
    assert partial[0] == "tokenmill: built results/plan/parts.tsv"
    assert "is complete" not in "\n".join(partial) and "not complete" in partial[1]
    whole = closing_lines(*args, built=["all"], manifest_in_run=True)
    assert whole[:2] == ["tokenmill: version v1 is complete", "  manifest: results/shards/v1/manifest.json"]
    assert whole[-1].startswith("  report:   not written")
