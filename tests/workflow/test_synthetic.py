"""The demo's synthetic source on the reference run: the demo generator (a GPT-2 of two layers, trained
by the graph on aeb_articles) rewrites the articles under two templates; its rewrites carry their
lineage, re-enter the graph as a source of their own, and the quality checks and select find them
poor; the same generator's rubric annotation is counted, parsed or not."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import pyarrow.parquet as pq

from tokenmill.io import read_json, read_jsonl_zst
from tokenmill.synth.templates import resolve_templates
from tokenmill.trainer.lineage import Lineage

SOURCE, ORIGIN, SNAPSHOT = "aeb_rephrased", "aeb_articles", "built-2026-11-29"
REPORT = Path("results/report/demo-v0")


def documents(root: Path, source: str) -> dict[str, list[dict]]:
    return {path.name.removesuffix(".jsonl.zst"): list(read_jsonl_zst(path))
            for path in sorted((root / "results/extract/docs" / source / SNAPSHOT).glob("*.jsonl.zst"))}


def test_the_rewrites_carry_their_lineage_generator_template_and_knowledge_cutoff(reference_run):
    origin, rewrites = documents(reference_run, ORIGIN), documents(reference_run, SOURCE)
    assert sorted(rewrites) == sorted(origin)  # one synthetic part per part rewritten, of the same name
    model = read_json(reference_run / "results/train_generator/model/tokenmill_generator.json")
    newest = max(doc["fetch_ts"] for docs in origin.values() for doc in docs if doc["fetch_ts"])
    assert model["knowledge_cutoff"] == newest  # what the generator read ends there
    templates = set(resolve_templates({"wikipedia": None, "qa": None}))
    for part, docs in rewrites.items():
        stats = read_json(reference_run / f"results/generate/stats/{SOURCE}/{SNAPSHOT}/{part}.json")
        assert stats["requests"] == 2 * stats["chosen"] > 0 and stats["left_out"]["language"] > 0  # English only
        quarantined = list(read_jsonl_zst(reference_run / f"results/extract/quarantine/{SOURCE}/{SNAPSHOT}/{part}.jsonl.zst"))
        assert len(docs) + len(quarantined) == stats["requests"]  # nothing is lost
        for record in quarantined:  # each with its reason and the request it answered
            assert record["reason"] in ("empty_generation", "bad_encoding"), record
            assert record["record_id"].rsplit(":", 1)[1] in templates, record
        for doc in docs:
            made = doc["extract_meta"]["synthetic"]
            source = origin[made["origin"]["part"]][made["origin"]["row"]]
            assert made["origin"] == {"source": ORIGIN, "snapshot": SNAPSHOT, "part": part, "row": made["origin"]["row"]}
            assert doc["derived_from"] == source["doc_id"] and doc["url"] == source["url"]
            assert doc["tier"] == "synthetic" and doc["fetch_ts"] == newest
            assert doc["generator_model_id"] == "tokenmill-demo-gpt2" and doc["prompt_template_id"] in templates
            assert made["generator_sha256"] == stats["generator_sha256"] and 0 < made["source_chars"] <= len(source["text"])
            assert set(made["checks"]) >= {"failure", "grounding", "source_overlap", "type_token_ratio", "ngram_entropy"}


def test_the_demo_generators_text_is_flagged_too_identifiable_and_select_keeps_it_out(reference_run):
    rows = list(csv.DictReader(open(reference_run / REPORT / "synthetic.tsv", encoding="utf-8"), delimiter="\t"))
    total = next(row for row in rows if row["template"] == "ALL")
    assert float(total["distinguisher_auc"]) > 0.95 and total["too_identifiable"] == "True"
    assert float(total["mean_grounding"]) < 0.2 < float(total["mean_source_type_token_ratio"])
    alerts = read_json(reference_run / REPORT / "alerts.json")["alerts"]
    flagged = [alert for alert in alerts if alert["kind"] == "distinguisher"]
    assert {alert["template"] for alert in flagged} >= {"ALL"} and all(alert["auc"] > 0.95 for alert in flagged)
    selected = [row for path in (reference_run / "results/select/demo-v0/tables" / SOURCE).rglob("*.parquet")
                for row in pq.read_table(path).to_pylist()]
    assert selected and not any(row["selected"] for row in selected) and int(total["kept"]) == 0
    reasons = {row["reason"] for row in selected}
    assert "low_grounding" in reasons and reasons <= {"low_grounding", "generation_failed", "copies_source",
                                                      "lang_not_selected", "langid_unclaimed", "too_short",
                                                      "robots_disallowed", "exact_duplicate", "near_duplicate"}
    manifest = read_json(reference_run / "results/shards/demo-v0/manifest.json")
    assert SOURCE not in manifest["sources"]
    card = (reference_run / REPORT / "DATASET_CARD.md").read_text()
    assert "## Synthetic data" in card and f"- {SOURCE}: generator `tokenmill-demo-gpt2`" in card
    cost = list(csv.DictReader(open(reference_run / REPORT / "generation_cost.tsv", encoding="utf-8"), delimiter="\t"))
    assert {row["job"] for row in cost} == {SOURCE, "annotate"} and all(float(row["tokens_per_second"]) > 0 for row in cost)


def test_lineage_leads_from_a_rewrite_back_to_the_source_url(reference_run):
    results = reference_run / "results"
    lineage = Lineage(results / "shards/demo-v0", [])
    for docs in documents(reference_run, SOURCE).values():
        record = docs[0]
        chain = lineage.derivations(record, SOURCE)
        assert [entry["doc_id"] for entry in chain] == [record["doc_id"], record["derived_from"]]
        assert chain[1]["source"] == ORIGIN and chain[1]["url"] == record["url"] and chain[1]["tier"] == "crawl"


def test_every_rubric_answer_is_counted_parsed_or_not(reference_run):
    summary = read_json(reference_run / "results/annotate/summary.json")
    table = pq.read_table(reference_run / "results/annotate/annotations.parquet").to_pylist()
    assert summary["documents"] == len(table) == 48 and sum(summary["statuses"].values()) == 48
    assert {row["source"] for row in table} == {ORIGIN}
    with gzip.open(reference_run / "results/annotate/labels.jsonl.gz", "rt", encoding="utf-8") as handle:
        labels = [line for line in handle if line.strip()]
    assert len(labels) == summary["statuses"]["parsed"] == sum(summary["labels"].values())
    assert summary["statuses"]["no_score"] > 0  # the tiny generator cannot follow the rubric, and it is counted
