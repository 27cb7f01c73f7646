"""The report's alerts, history, distributions, plots, rule graph and dataset card.

The yield rows and histories here are small synthetic tables written by the tests (labelled as
such); the rule graph is a real `snakemake --rulegraph` excerpt of this workflow."""

from __future__ import annotations

import copy
import re

import pyarrow.parquet as pq
import pytest

from tests.conftest import demo_config
from tokenmill.report import plots
from tokenmill.report.alerts import AlertConfigError, alert_summary, check_band_names, find_alerts, update_history
from tokenmill.config import validate
from tokenmill.report.dataset_card import build_card, card_markdown, recipe_mixture
from tokenmill.report.distributions import CLUSTER_SIZE_EDGES, SCORE_EDGES, _histogram
from tokenmill.report.html import render
from tokenmill.report.tables import STAGES, yield_arrow
from tokenmill.report.rulegraph import parse_rulegraph, rulegraph_svg

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
    assert alert_summary(alerts)[0] == "1 yield alert(s):" and alert_summary([]) == ["no yield alerts"]


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
    assert "1 yield alert(s)" in page and 'class="alert"' in page
    assert "<tr class=failed>" in page and "excluded: token_entropy_bits" in page
    assert page.count("<svg") == 10  # 2 yield plots, 7 distributions, the rule graph (one run: no history plot)


def test_card_lists_licences_pins_and_says_when_there_is_no_recipe(tmp_path):
    manifest = {"version": "v9", "n_docs": 3, "n_tokens": 30, "sources": {"web": {"shards": 1, "n_docs": 3, "n_tokens": 30}},
                "tokenizer": {"sha256": "ab" * 32, "vocab_size": 1000}, "config_sha256": "cd" * 32, "code_version": "0.1.0"}
    card = build_card(manifest, {"web": {"tier": "crawl", "license_id": "CC-TOU"}},
                      {"docs_scanned": 3, "benchmarks": []}, recipe_mixture(None, "unused"))
    text = card_markdown(card)
    assert "| web | crawl | CC-TOU | 1 | 3 | 30 | 100.0% |" in text
    assert "ab" * 32 in text and "cd" * 32 in text and "0.1.0" in text
    assert "no recipe configured" in text
    manifest_path = tmp_path / "manifest.json"
    manifest_path.write_text("{}")
    mixture = recipe_mixture("config/recipe.yaml", str(manifest_path))  # pins the demo manifest, not this one
    assert "no replay" in mixture["status"] and "phases" not in mixture
