"""The whole graph with the local executor on the bundled sample."""

from __future__ import annotations

import csv
import hashlib
import os
import re
import subprocess
import tarfile
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import yaml
from warcio.archiveiterator import ArchiveIterator

import pytest

from tests.conftest import (REPO, demo_config, dry_run_printed, job_counts, run_snakemake, snakemake_command,
                            with_one_encoder_epoch, with_sources, write_config)
from tests.unit.test_adversarial import write_warc
from tests.workflow.test_snapshots import planned_jobs

from tokenmill.io import read_json, read_jsonl_zst
from tokenmill.select.judge import FILTER_STAGES, emitted_text
from tokenmill.tokenize import load_tokenizer

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from megatron.core.datasets.indexed_dataset import IndexedDataset

PARTS = 23  # the demo's 32 input files, grouped by its parts settings, and the 2 parts that rewrite aeb_articles'
SNAPSHOTS = 16
SYNTHETIC_PARTS = 2
EXPECTED_JOBS = {"plan": 1, "plan_snapshot": SNAPSHOTS, "carve_evalsets": 1,
                 "train_generator": 1, "annotate": 1, "synthetic_inputs": 1, "generate": SYNTHETIC_PARTS,
                 "synthetic_quality": 1,
                 "holdout_manifest": 1, "extract": PARTS, "score": PARTS,
                 "ocr": 4,  # the parts of pdf_samples, whose PDFs Tesseract reads where they need OCR
                 "minhash_cluster": SNAPSHOTS,
                 "cross_snapshot_dedup": 6,  # the parts of the snapshots that have an older one of their source
                 "cross_snapshot_index": 6,  # the snapshots that a later snapshot of their source probes
                 "robots_state": 1, "train_quality_fasttext": 1,
                 "train_quality_encoder": 1, "score_quality_encoder": SNAPSHOTS, "decontamination_index": 1,
                 "select_thresholds": SNAPSHOTS, "judge": PARTS, "select": SNAPSHOTS,
                 # chains of aeb_articles (a snapshot of 2 parts) and dolma_crawl (a snapshot of 1)
                 "chain_model": 2, "chain_vectors": 3, "chain_groups": 2,
                 "train_tokenizer": 1, "tokenize": PARTS,
                 "write_shards": SNAPSHOTS + 1,  # the PDF snapshot's 4 parts are 2 shard groups
                 "manifest": 1, "rulegraph": 1, "report": 1, "all": 1}
DOWNSTREAM_OF_SELECT = {"judge", "select", "chain_groups", "train_tokenizer", "tokenize", "write_shards", "manifest",
                        "report", "all"}
# score rewrites every per-document signal, the MinHash signatures among them, and the scores that choose what the
# synthetic source rewrites: its generation reruns (taking every unchanged batch from its cache) and so does what
# reads the rewrites, their extract and encoder scores among them (and the holdout check, which reads every
# extract's carve receipt)
DOWNSTREAM_OF_SCORE = {"score", "minhash_cluster", "cross_snapshot_index", "cross_snapshot_dedup",
                       "select_thresholds", "synthetic_inputs", "generate", "extract", "score_quality_encoder",
                       "synthetic_quality", "holdout_manifest", "chain_model", "chain_vectors", *DOWNSTREAM_OF_SELECT}


def test_dry_run_lists_every_job(fresh_dry_run):
    assert job_counts(dry_run_printed(fresh_dry_run)) == EXPECTED_JOBS
    # a dry run writes nothing but each snapshot's input listing, which later runs read
    written = {path.relative_to(fresh_dry_run) for path in (fresh_dry_run / "results").rglob("*") if path.is_file()}
    sources = demo_config()["sources"]
    snapshots = {(source, snapshot) for source, spec in sources.items() for snapshot in spec.get("snapshots", {})}
    snapshots |= {(source, snapshot) for source, spec in sources.items() if spec["kind"] == "synthetic"
                  for snapshot in sources[spec["synthetic"]["from"]]["snapshots"]}
    assert written == {Path("results", "plan", source, f"{snapshot}.inputs.tsv") for source, snapshot in snapshots}


@pytest.mark.parametrize("key, value, extra", [
    ("min_chars", 500, set()),
    ("heuristics", {"by_source": {"govuk": {"web": {"gopher_quality": {"word_count": {"min": 80}},
                                                     "fineweb": {"fineweb_line_punct_ratio": {"min": 0.3}}}}}},
     set()),
    ("toxicity", {"max_score": 0.001}, set()),
    ("crawler_traps", {"min_urls": 20, "max_unique_share": 0.5}, set()),
    ("quality", {"keep_top": 0.5}, {"select_thresholds"}),  # a new cut needs new per-language thresholds
    # the policy kinds of provenance, each with a value that excludes documents of the demo
    ("opt_out_hosts", ["gov.uk"], set()),  # covers data.gov.uk
    ("licences", {"MIT": {"excluded": True}}, set()),  # aeb_articles
    (None, {"as_of": "2025-01-01", "licences": {"GPL-2.0": {"expires": "2024-06-01"}}}, set()),  # govuk expired
    ("cutoff", {"crawl": "2024-01-01T00:00:00Z"}, set()),  # dolma_crawl (2024-04) and aeb_articles (2026)
    ("exclude_sources", ["dolma_crawl"], set()),
    ("code", {"license_classes": ["permissive", "copyleft"]}, set()),  # lets asciinema (GPL-3.0-or-later) in
    ("robots", {"as_of": "2019-07-19"}, set()),  # en.wikipedia.org's 2012 capture instead of 2019's
    ("robots", {"agents": ["GPTBot"]}, set()),
    ("synthetic", {"min_grounding": 0.0, "exclude_failures": []}, set()),  # lets the demo generator's text through
])
def test_policy_change_reruns_only_select_and_what_follows(reference_run, tmp_path, key, value, extra):
    changed = yaml.safe_load((reference_run / "config" / "config.yaml").read_text())
    for key, value in (value.items() if key is None else [(key, value)]):  # None: several keys at once
        if isinstance(value, dict):
            changed["select"].setdefault(key, {}).update(value)
        else:
            changed["select"][key] = value
    other = tmp_path / "changed.yaml"
    other.write_text(yaml.safe_dump(changed))
    result = run_snakemake(reference_run, "-n", "--configfile", str(other))
    counts = job_counts(result.stdout)
    assert set(counts) == DOWNSTREAM_OF_SELECT | extra
    assert (counts["judge"], counts["select"]) == (PARTS, SNAPSHOTS)


# A chains setting reruns the chain jobs whose output it can change and what reads them, for the
# chained sources only (aeb_articles: 2 parts, dolma_crawl: 1); a newly chained source runs its own.
AFTER_CHAINS = {"tokenize", "write_shards", "manifest", "report", "all"}


@pytest.mark.parametrize("change, expected", [
    ({"token_budget": 4096}, {"chain_groups": 2, "tokenize": 3}),  # the walk only
    ({"centroids": 3}, {"chain_model": 2, "chain_vectors": 3, "chain_groups": 2, "tokenize": 3}),
    ({"sources": ["aeb_articles", "dolma_crawl", "govuk"]},  # govuk's 2 snapshots of a part each
     {"chain_model": 2, "chain_vectors": 2, "chain_groups": 2, "tokenize": 2}),
])
def test_a_chains_setting_reruns_only_the_chain_jobs_it_changes(reference_run, tmp_path, change, expected):
    changed = yaml.safe_load((reference_run / "config" / "config.yaml").read_text())
    changed["chains"].update(change)
    other = tmp_path / "changed.yaml"
    other.write_text(yaml.safe_dump(changed))
    counts = job_counts(run_snakemake(reference_run, "-n", "--configfile", str(other)).stdout)
    assert set(counts) == set(expected) | AFTER_CHAINS
    assert {rule: counts[rule] for rule in expected} == expected


def test_a_new_robots_capture_reruns_the_robots_state_and_select_onwards(reference_run, tmp_path):
    """A newer robots.txt of a host (github.com's real file, saved in 2019) adds a capture: the
    host table is rebuilt and judge onwards rerun; extraction, scoring and dedup do not."""
    changed = yaml.safe_load((reference_run / "config" / "config.yaml").read_text())
    changed["robots"]["files"].append({"paths": ["data/bench/robots/protego-2019/github.com"],
                                       "fetch_ts": "2019-07-20T00:00:00Z"})
    other = tmp_path / "changed.yaml"
    other.write_text(yaml.safe_dump(changed))
    counts = job_counts(run_snakemake(reference_run, "-n", "--configfile", str(other)).stdout)
    assert set(counts) == {"robots_state"} | DOWNSTREAM_OF_SELECT


def test_a_new_word_list_reruns_score_and_what_follows_never_extract(reference_run, tmp_path):
    """A scorer change is backfilled as docs/quality-and-safety.md says: the score job of every part (all of its
    signals, from one read of the part) and what reads them run again; extraction of the inputs,
    the trained classifiers and the benchmark index do not (the synthetic parts' extract reads
    their generation records again)."""
    wordlist = tmp_path / "wordlist.txt"
    wordlist.write_text((reference_run / "data" / "wordlists" / "ldnoobw-en.txt").read_text() + "backfilled\n")
    changed = yaml.safe_load((reference_run / "config" / "config.yaml").read_text())
    changed["safety"] = {"wordlist": str(wordlist)}
    other = tmp_path / "changed.yaml"
    other.write_text(yaml.safe_dump(changed))
    counts = job_counts(run_snakemake(reference_run, "-n", "--configfile", str(other)).stdout)
    assert set(counts) == DOWNSTREAM_OF_SCORE
    assert counts["score"] == PARTS and counts["generate"] == counts["extract"] == SYNTHETIC_PARTS  # no input re-read


def test_the_encoder_trains_on_the_rubric_labels_when_told(reference_run, tmp_path):
    """quality.encoder.train_on: annotate: train_quality_encoder reads annotate's labels (refusing
    fewer than min_labels of a class) and what scores with the encoder reruns; no input is read again."""
    changed = yaml.safe_load((reference_run / "config" / "config.yaml").read_text())
    changed.setdefault("quality", {})["encoder"] = {"train_on": "annotate"}
    other = tmp_path / "changed.yaml"
    other.write_text(yaml.safe_dump(changed))
    result = run_snakemake(reference_run, "-n", "-p", "--configfile", str(other))
    assert "--labels results/annotate/labels.jsonl.gz --settings" in result.stdout and "--min-labels 20" in result.stdout
    counts = job_counts(result.stdout)
    assert counts["train_quality_encoder"] == 1 and counts["score_quality_encoder"] == SNAPSHOTS
    assert "annotate" not in counts and counts["extract"] == counts["generate"] == SYNTHETIC_PARTS


def test_every_shard_opens_in_megatron_and_decodes_to_the_selected_text(reference_run):
    shards_root = reference_run / "results" / "shards" / "demo-v0"
    manifest = read_json(shards_root / "manifest.json")
    tokenizer, _ = load_tokenizer(str(shards_root / manifest["tokenizer"]["path"]), manifest["tokenizer"]["sha256"])
    eod = manifest["tokenizer"]["eod_id"]
    selected = {}  # (source, snapshot, part, row) -> (PII spans replaced, lines dropped)
    for path in (reference_run / "results" / "select" / "demo-v0").rglob("*.parquet"):
        source, snapshot = path.parts[-3], path.parts[-2]
        rows = pq.read_table(path, columns=["row", "selected", "drop_lines", "scrub_spans"]).to_pylist()
        selected.update({(source, snapshot, path.stem, r["row"]): (r["scrub_spans"], r["drop_lines"])
                         for r in rows if r["selected"]})
    texts = {}
    decoded_docs = 0
    for entry in manifest["shards"]:
        prefix = shards_root / entry["path"]
        dataset = IndexedDataset(str(prefix))
        meta = read_json(f"{prefix}.meta.json")
        lineage = pq.read_table(prefix.parent / meta["docs"]["path"]).to_pylist()
        assert len(dataset) == entry["n_docs"] == len(lineage)
        for i, doc in enumerate(lineage):
            key = (entry["source"], doc["snapshot_id"], doc["part"])
            if key not in texts:
                docs_file = reference_run / "results" / "extract" / "docs" / key[0] / key[1] / f"{key[2]}.jsonl.zst"
                texts[key] = [d["text"] for d in read_jsonl_zst(docs_file)]
            assert (*key, doc["row"]) in selected
            tokens = dataset[i]
            assert tokens[-1] == eod
            expected = emitted_text(texts[key][doc["row"]], *selected[(*key, doc["row"])])
            assert tokenizer.decode(tokens[:-1].tolist(), skip_special_tokens=False) == expected
            decoded_docs += 1
    left_out = sum(shard["n_docs"] for shard in manifest["excluded_shards"])  # shards that failed validation
    assert decoded_docs == manifest["n_docs"] == len(selected) - left_out


def test_manifest_hashes_and_counts_match_the_files(reference_run):
    shards_root = reference_run / "results" / "shards" / "demo-v0"
    manifest = read_json(shards_root / "manifest.json")
    # every source but aeb_rephrased, whose text select keeps out (tests/workflow/test_synthetic.py); wikipedia_math's
    # two pages are judged by the math profile, which leaves out Gopher's alpha-word rule (select.heuristics.profiles)
    assert set(manifest["sources"]) == set(demo_config()["sources"]) - {"aeb_rephrased"}
    for entry in manifest["shards"]:
        prefix = shards_root / entry["path"]
        bin_bytes = Path(f"{prefix}.bin").read_bytes()
        assert hashlib.sha256(bin_bytes).hexdigest() == entry["bin_sha256"] and len(bin_bytes) == entry["bin_bytes"]
        assert hashlib.sha256(Path(f"{prefix}.idx").read_bytes()).hexdigest() == entry["idx_sha256"]
        assert len(bin_bytes) == entry["n_tokens"] * 2  # uint16
    assert manifest["n_tokens"] == sum(e["n_tokens"] for e in manifest["shards"])
    # every shard written is either listed or left out with the checks it failed
    on_disk = {str(path.relative_to(shards_root))[:-len(".bin")] for path in shards_root.glob("*/*/group-*/*.bin")}
    listed = [e["path"] for e in manifest["shards"]]
    excluded = {e["path"]: e["reasons"] for e in manifest["excluded_shards"]}
    assert sorted(listed + list(excluded)) == sorted(on_disk) and all(excluded.values())
    # the PDF snapshot's 4 parts are two shard groups (shards.parts_per_job: 2), listed in group order
    pdf_groups = [path.split("/")[2] for path in listed if path.startswith("pdf_samples/")]
    assert set(pdf_groups) == {"group-0000", "group-0001"} and pdf_groups == sorted(pdf_groups)
    with open(shards_root / "validation.tsv", newline="") as handle:
        verdicts = {(r["source"], r["snapshot"], r["shard"]): r["passed"] == "True"
                    for r in csv.DictReader(handle, delimiter="\t")}
    # a shard's path is {source}/{snapshot}/group-NNNN/{name}
    assert verdicts == {(path.split("/")[0], path.split("/")[1], path.split("/")[3]): path not in excluded
                        for path in on_disk}
    assert manifest["tokenizer"]["sha256"] == hashlib.sha256(
        (shards_root / manifest["tokenizer"]["path"]).read_bytes()).hexdigest()


def test_yield_table_accounts_for_every_document(reference_run):
    with open(reference_run / "results" / "report" / "demo-v0" / "yield.tsv") as handle:
        rows = {(r["source"], r["stage"]): r for r in csv.DictReader(handle, delimiter="\t")}
    manifest = read_json(reference_run / "results" / "shards" / "demo-v0" / "manifest.json")
    assert int(rows["ALL", "write_shards"]["docs_out"]) == manifest["n_docs"]
    assert int(rows["ALL", "write_shards"]["tokens_out"]) == manifest["n_tokens"]
    assert int(rows["ALL", "damaged"]["docs_in"]) == int(rows["ALL", "extract"]["docs_out"])
    assert int(rows["ALL", FILTER_STAGES[-1]]["docs_out"]) == int(rows["ALL", "tokenize"]["docs_in"])
    for earlier, later in zip(FILTER_STAGES, FILTER_STAGES[1:]):
        assert rows["ALL", earlier]["docs_out"] == rows["ALL", later]["docs_in"]
    assert int(rows["govuk", "near_dedup"]["docs_in"]) > int(rows["govuk", "near_dedup"]["docs_out"])
    assert int(rows["dolma_crawl", "exact_dedup"]["docs_in"]) > int(rows["dolma_crawl", "exact_dedup"]["docs_out"])
    assert int(rows["aeb_articles", "extract"]["docs_in"]) == 181 - 2  # two pages are in the web holdout
    for stage in ("heuristics", "quality"):  # each filter of the demo policy removes something
        assert int(rows["ALL", stage]["docs_in"]) > int(rows["ALL", stage]["docs_out"])
    for source, stage in rows:
        assert float(rows[source, stage]["retention"] or 1) <= 1
    summaries = [read_json(path) for path in (reference_run / "results/select/demo-v0/representatives").rglob("*.json")]
    for stage, count in (("exact_dedup", "exact_groups_changed"), ("near_dedup", "clusters_changed")):
        assert int(rows["ALL", stage]["representatives_changed"]) == sum(summary[count] for summary in summaries)
    assert {rows[key]["representatives_changed"] for key in rows if key[1] not in ("exact_dedup", "near_dedup")} == {""}


def test_the_demo_robots_captures_exclude_the_pages_their_hosts_disallow_and_the_card_says_so(reference_run):
    """The demo reads ten robots.txt captures; nytimes.com's 2019 file disallows its articles to
    the omgili group (an AI agent of robots.json), so its two pages are excluded, and so are the
    four rewrites of them (two templates each), which keep their source's URL; data.gov.uk's 2014
    file disallows /user to every agent, so its sign-up page is excluded from both gov.uk
    snapshots; and no other page."""
    state = pq.read_table(reference_run / "results/robots_state/state.parquet").to_pylist()
    assert len(state) == 10 and len({row["host"] for row in state}) == 8
    excluded = defaultdict(list)
    for source in (reference_run / "results/extract/docs").iterdir():
        urls = {doc["doc_id"]: doc["url"] for path in source.rglob("*.jsonl.zst") for doc in read_jsonl_zst(path)}
        excluded[source.name] = [urls[row["doc_id"]] for path in
                                 (reference_run / "results/select/demo-v0/tables" / source.name).rglob("*.parquet")
                                 for row in pq.read_table(path, columns=["doc_id", "reason"]).to_pylist()
                                 if row["reason"] == "robots_disallowed"]
    pages = excluded.pop("aeb_articles")
    assert len(pages) == 2 and all(url.startswith("https://www.nytimes.com/") for url in pages)
    assert sorted(excluded.pop("aeb_rephrased")) == sorted(pages * 2)
    assert excluded.pop("govuk") == ["http://data.gov.uk/user?destination=home"] * 2
    assert not any(excluded.values())
    card = (reference_run / "results/report/demo-v0/DATASET_CARD.md").read_text()
    assert "Robots state as of 2026-11-30" in card and "8 documents excluded (robots_disallowed)" in card


def test_reasons_say_which_engine_wrote_each_source_and_how_many_documents_hold_formulas(reference_run):
    """The demo's sources run each engine: every extracted document is counted under the engine
    whose text it has, so a two_pass source shows the share that got the second pass."""
    with open(reference_run / "results" / "report" / "demo-v0" / "yield.tsv") as handle:
        extracted = {r["source"]: int(r["docs_out"]) for r in csv.DictReader(handle, delimiter="\t")
                     if r["stage"] == "extract" and r["source"] != "ALL"}
    engines: dict = defaultdict(dict)
    with_formulas = {}
    with open(reference_run / "results" / "report" / "demo-v0" / "reasons.tsv") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if row["stage"] == "extract" and row["reason"].startswith("text_from:"):
                engines[row["source"]][row["reason"].removeprefix("text_from:").split("-")[0]] = int(row["docs"])
            elif row["stage"] == "extract" and row["reason"] == "with_formulas":
                with_formulas[row["source"]] = int(row["docs"])
    for source, docs in extracted.items():
        assert sum(engines[source].values()) == docs, source
    assert set(engines["common_crawl"]) == {"resiliparse"} and set(engines["aeb_articles"]) == {"blockml"}  # the default
    assert set(engines["dolma_crawl"]) == {"resiliparse", "trafilatura"}  # two_pass: some pages got the second pass
    assert with_formulas == {"wikipedia_math": 2}  # the two Wikipedia pages, and no page without math


def test_formulas_reach_the_documents_as_tex_and_select_counts_them(reference_run):
    docs = list(read_jsonl_zst(reference_run / "results/extract/docs/wikipedia_math/built-2026-12-01/wikipedia-math.jsonl.zst"))
    tsne = next(doc for doc in docs if doc["url"].endswith("stochastic_neighbor_embedding"))
    assert tsne["extract_meta"]["math_count"] >= 30 and "$" in tsne["text"]
    selection = pq.read_table(reference_run / "results/select/demo-v0/tables/wikipedia_math/built-2026-12-01/"
                              "wikipedia-math.parquet").to_pylist()
    assert sorted(row["math_count"] for row in selection) == sorted(doc["extract_meta"]["math_count"] for doc in docs)
    # judged as math pages: no heuristics rule rejects them (the web profile's alpha-word rule would)
    assert [row["kind"] for row in selection] == ["math", "math"]
    assert not any(row["reason"].startswith("heuristics:") for row in selection)


def test_the_demo_pdfs_become_documents_the_scan_is_read_by_tesseract_and_the_encrypted_one_quarantined(reference_run):
    snapshot = "pdf_samples/py-pdf-6921079"
    parts = [read_json(path) for path in sorted((reference_run / "results/extract/stats" / snapshot).glob("*.json"))]
    # two files each, sorted by path: olmocr-gnarly/ before py-pdf-sample-files/
    assert [part["part"] for part in parts] == ["edgar_image", "google-doc-document", "libreoffice-writer-password",
                                                "pdflatex-4-pages"]
    totals = Counter()
    for part in parts:
        totals.update({key: part[key] for key in ("candidates", "docs", "pdf_pages", "pages_needing_ocr", "ocr_pages")},
                      **part["quarantined"])
    # 1+1+1+1+3+4 pages; the scan's one page needed OCR and got its text from it
    assert totals == {"candidates": 7, "docs": 6, "encrypted": 1, "pdf_pages": 11, "pages_needing_ocr": 1,
                      "ocr_pages": 1}
    ocr = read_json(reference_run / "results/ocr/stats" / snapshot / "edgar_image.json")
    assert ocr["engine"].startswith("tesseract ") and ocr["status"] == {"ok": 1}
    docs = {Path(doc["url"]).name: doc for path in sorted((reference_run / "results/extract/docs" / snapshot).glob("*"))
            for doc in read_jsonl_zst(path)}
    two_columns = docs["multicolumn.pdf"]
    assert two_columns["extract_meta"]["pages"] == 3 and len(two_columns["extract_meta"]["page_starts"]) == 3
    # provenance from the source's urls side file, the text from Tesseract, tagged for a GPU pass
    scan = docs["edgar_image.pdf"]
    assert scan["url"] == "https://github.com/allenai/olmocr/blob/f7cfe4c22098/tests/gnarly_pdfs/edgar_image.pdf"
    assert "Edgar" in scan["text"] and scan["extract_meta"]["ocr_pages"] == {"1": ocr["engine"]}
    assert scan["extract_meta"]["ocr_redo"] == [1] and scan["record_id"] == "data/sample/pdf/olmocr-gnarly/edgar_image.pdf"
    card = (reference_run / "results/report/demo-v0/DATASET_CARD.md").read_text()
    assert "| pdf_samples | academic | CC-BY-SA-4.0 | PDF text layer (pdfium); pages without one read by tesseract OCR" \
        in card
    reasons = {(row["source"], row["reason"]): int(row["docs"]) for row in
               csv.DictReader((reference_run / "results/report/demo-v0/reasons.tsv").open(), delimiter="\t")}
    assert (reasons[("pdf_samples", "pdf_pages_needing_ocr")], reasons[("pdf_samples", "pdf_pages_from_ocr")]) == (1, 1)


def test_the_demo_repositories_are_kept_or_dropped_whole_by_version_and_licence_class(reference_run):
    snapshot = "code_samples/pypi-2023"
    outcome = defaultdict(Counter)  # repository -> reasons of its documents ("" kept)
    licences, first_texts = {}, {}
    for docs_path in sorted((reference_run / "results/extract/docs" / snapshot).glob("*.jsonl.zst")):
        table = reference_run / "results/select/demo-v0/tables" / snapshot / docs_path.name.replace(".jsonl.zst", ".parquet")
        reasons = pq.read_table(table, columns=["reason"]).column("reason").to_pylist()
        for doc, reason in zip(read_jsonl_zst(docs_path), reasons, strict=True):
            repository = Path(doc["derived_from"]).name.removesuffix(".tar.gz")
            outcome[repository][reason] += 1
            licences[repository] = doc["license_id"]
            first_texts.setdefault(repository, doc["text"])
    # tomli 2.0.0 and 2.0.1 are one repository at two versions: the newer is kept, all of it
    assert {name: set(reasons) for name, reasons in outcome.items()} == {
        "MarkupSafe-2.1.3": {""}, "tomli-2.0.1": {""}, "tomli-2.0.0": {"near_duplicate"},
        "asciinema-2.3.0": {"license_class_excluded"}}
    assert licences == {"MarkupSafe-2.1.3": "BSD-3-Clause", "tomli-2.0.0": "MIT", "tomli-2.0.1": "MIT",
                        "asciinema-2.3.0": "GPL-3.0-or-later"}
    assert all(text.startswith("<file path=README") for text in first_texts.values())
    reasons = {(row["source"], row["reason"]): int(row["docs"]) for row in
               csv.DictReader((reference_run / "results/report/demo-v0/reasons.tsv").open(), delimiter="\t")}
    assert reasons[("code_samples", "repository_license_class:permissive")] == 3
    assert reasons[("code_samples", "repository_license_class:copyleft")] == 1
    assert reasons[("code_samples", "code_files_kept:Python")] > 0
    assert any(source == "code_samples" and reason.startswith("code_file_rejected:") for source, reason in reasons)
    card = (reference_run / "results/report/demo-v0/DATASET_CARD.md").read_text()
    assert "| code_samples | code | per-repository | repositories: README first" in card
    assert "4 repositories read, 2 with documents in this version" in card
    assert "Licences of the kept ones: BSD-3-Clause (1), MIT (1)." in card
    table = {Path(row["repository"]).name: row for row in csv.DictReader(
        (reference_run / "results/report/demo-v0/code_repositories.tsv").open(), delimiter="\t")}
    assert {name: (row["license_class"], row["selected"], row["reasons"]) for name, row in table.items()} == {
        "MarkupSafe-2.1.3.tar.gz": ("permissive", row_count(outcome, "MarkupSafe-2.1.3"), ""),
        "asciinema-2.3.0.tar.gz": ("copyleft", "0", f"license_class_excluded:{row_count(outcome, 'asciinema-2.3.0')}"),
        "tomli-2.0.0.tar.gz": ("permissive", "0", f"near_duplicate:{row_count(outcome, 'tomli-2.0.0')}"),
        "tomli-2.0.1.tar.gz": ("permissive", row_count(outcome, "tomli-2.0.1"), "")}


def row_count(outcome: dict, repository: str) -> str:
    return str(sum(outcome[repository].values()))


@pytest.mark.parametrize("engine, ocr_jobs", [("vllm", {"ocr_vllm": 4}), ("none", {})])
def test_a_sources_ocr_engine_picks_its_rule_and_reruns_that_sources_extract_only(reference_run, tmp_path, engine,
                                                                                 ocr_jobs):
    """Switching pdf_samples to the GPU engine (a model directory named) or to no OCR: its four
    parts get ocr_vllm jobs or none, its extract reruns, and no other source's part does."""
    changed = yaml.safe_load((reference_run / "config" / "config.yaml").read_text())
    changed["sources"]["pdf_samples"]["ocr"] = engine
    changed.setdefault("extract", {})["ocr"] = {"model": str(tmp_path)}  # read by no source under `none`
    other = tmp_path / "changed.yaml"
    other.write_text(yaml.safe_dump(changed))
    counts = job_counts(run_snakemake(reference_run, "-n", "--configfile", str(other)).stdout)
    assert {rule: n for rule, n in counts.items() if rule.startswith("ocr")} == ocr_jobs
    assert counts["extract"] == 4


DEMO_KINDS = {source: settings["kind"] for source, settings in demo_config()["sources"].items()}
WARC_SOURCES = {source for source, kind in DEMO_KINDS.items() if kind == "warc"}
REWRITES = {"aeb_rephrased"}  # aeb_articles' rewrites: they rerun with the documents they rewrite
# the sources whose extract reads the PDF settings: pdf ones, and the WARC sources that read their PDF responses (not
# aeb_articles, whose WARCs are HTML articles: pdf_responses false, so neither it nor its rewrites rerun)
PDF_READERS = {source for source, settings in demo_config()["sources"].items()
               if settings["kind"] == "pdf" or settings["kind"] == "warc" and settings.get("pdf_responses", True)}


@pytest.mark.parametrize("key, value, extracted, ocr_jobs", [
    # an HTML setting: the WARC sources that name no engine of their own (and the rewrites of one)
    ("extract.engine", "resiliparse", WARC_SOURCES - {"common_crawl", "dolma_crawl"} | REWRITES, 0),
    # any WARC may hold PDF responses, unless its source turns them off; the running-line settings apply after
    # OCR's routing
    ("extract.pdf.margin_lines", 4, PDF_READERS, 0),
    ("extract.pdf.min_page_chars", 20, PDF_READERS, 4),  # routes pages to OCR
    ("extract.code.timeout_s", 900, {"code_samples"}, 0),
    ("extract.ocr.min_confidence", 50, {"pdf_samples"}, 4),  # through its OCR rows
    ("extract.ocr.model", "/models/olmocr", set(), 0),  # the vllm engine's, which no demo source runs
    ("sources.lingua_sentences.fields", {"fetch_ts": "fetched"}, {"lingua_sentences"}, 0),  # a field it lacks
    ("synthetic.quality.overlap_ngram", 4, REWRITES, 0),
])
def test_a_setting_reruns_only_the_parts_whose_output_it_can_change(reference_run, tmp_path, key, value, extracted,
                                                                   ocr_jobs):
    """One setting changed in a copy of the demo config: the dry run lists the extract jobs of the
    kinds that read it (and of what rewrites their documents) and the OCR jobs it can change,
    nothing of any other kind."""
    changed = yaml.safe_load((reference_run / "config" / "config.yaml").read_text())
    *path, last = key.split(".")
    section = changed
    for name in path:
        section = section.setdefault(name, {})
    section[last] = value
    other = tmp_path / "changed.yaml"
    other.write_text(yaml.safe_dump(changed))
    jobs = planned_jobs(run_snakemake(reference_run, "-n", "--configfile", str(other)).stdout)
    sources = {re.search(r"source=([^,]+)", wildcards).group(1) for rule, wildcards in jobs if rule == "extract"}
    assert sources == extracted, {source: DEMO_KINDS[source] for source in sources ^ extracted}
    assert sum(rule.startswith("ocr") for rule, _ in jobs) == ocr_jobs


def test_damaged_record_is_extracted_but_not_selected(reference_run):
    stats = read_json(reference_run / "results" / "extract" / "stats" / "common_crawl" / "fetched-2016-10-17" / "clipped.json")
    assert stats["read_errors"][0]["error"].startswith("record ends")
    selection = pq.read_table(reference_run / "results" / "select" / "demo-v0" / "tables" / "common_crawl" / "fetched-2016-10-17" /
                              "clipped.parquet").to_pylist()
    assert [row["reason"] for row in selection] == ["record_truncated"]


def test_bad_config_stops_the_run_naming_the_key(tmp_path):
    config = demo_config()
    config["shards"]["target_tokenz"] = 5
    write_config(tmp_path, config)
    result = run_snakemake(tmp_path, "-n", check=False)
    assert result.returncode != 0
    assert "config key shards.target_tokenz: unknown key 'target_tokenz'" in result.stdout + result.stderr


def test_every_signal_is_stored_as_columns(reference_run):
    results = reference_run / "results"
    part = "BL-20140325121225068-00000-32090_opera_8443"
    attrs = {
        "langid": (results / "score/langid/govuk/BL-20140325121225" / f"{part}.parquet", {"lang", "lang_conf", "script_share"}),
        "heuristics": (results / "score/heuristics/govuk/BL-20140325121225" / f"{part}.parquet",
                       {"word_count", "dup_line_fraction", "top_2gram_char_fraction", "c4_curly_bracket",
                        "fineweb_line_punct_ratio"}),
        "pii": (results / "score/pii/govuk/BL-20140325121225" / f"{part}.parquet",
                {"pii_spans", "pii_email", "pii_phone"}),
        "toxicity": (results / "score/toxicity/govuk/BL-20140325121225" / f"{part}.parquet",
                     {"toxicity"}),
        "quality": (results / "score/quality_fasttext/govuk/BL-20140325121225" / f"{part}.parquet", {"quality_fasttext"}),
        "encoder": (results / "score_quality_encoder/govuk/BL-20140325121225/chunk-0000.parquet",
                    {"part", "row", "quality_encoder"}),
        "dedup": (results / "minhash_cluster/govuk/BL-20140325121225" / f"{part}.parquet",
                  {"exact_canonical", "dup_cluster_id", "dup_cluster_size", "line_doc_counts"}),
        "decontaminate": (results / "score/decontaminate/govuk/BL-20140325121225" / f"{part}.parquet",
                          {"contaminated_by", "longest_run", "matched_spans"}),
    }
    docs = len(list(read_jsonl_zst(results / "extract/docs/govuk/BL-20140325121225" / f"{part}.jsonl.zst")))
    for name, (path, columns) in attrs.items():
        table = pq.read_table(path)
        assert columns <= set(table.column_names), name
        assert table.num_rows == docs, name
    assert read_json(results / "train_quality_fasttext/metrics.json")["test_accuracy"] >= 0.9
    assert read_json(results / "train_quality_encoder/metrics.json")["test_accuracy"] >= 0.75
    with open(results / "report/demo-v0/langid_unclaimed.tsv") as handle:
        unclaimed = list(csv.DictReader(handle, delimiter="\t"))
    assert unclaimed and all(float(row["lang_conf"]) < 0.65 for row in unclaimed if row["lang"] not in ("sw", "yo"))


def held_out_urls(holdout: Path, kind: str) -> set[str]:
    urls = set()
    for path in sorted((holdout / kind).rglob("*.warc.gz")):
        with open(path, "rb") as handle:
            urls.update(r.rec_headers.get_header("WARC-Target-URI") for r in ArchiveIterator(handle)
                        if r.rec_type == "response")
    return urls


def test_no_holdout_record_reaches_training_output(reference_run):
    holdout = reference_run / "holdout"
    manifest_sha = hashlib.sha256((holdout / "manifest.json").read_bytes()).hexdigest()
    assert manifest_sha == demo_config()["holdout"]["manifest_sha256"]  # the carve is deterministic: the pin holds
    manifest = read_json(holdout / "manifest.json")
    for entry in manifest["files"]:
        assert hashlib.sha256((holdout / entry["path"]).read_bytes()).hexdigest() == entry["sha256"]
    assert {e["path"].split("/")[1] for e in manifest["files"] if e["path"].startswith("evalsets/")} == \
        {"gsm8k", "humaneval", "mmlu"}
    web, forward = held_out_urls(holdout, "web"), held_out_urls(holdout, "time_forward")
    assert web and forward
    results = reference_run / "results"
    trained = {}
    for path in sorted((results / "extract" / "docs").rglob("*.jsonl.zst")):
        selection = pq.read_table(results / "select/demo-v0/tables" / path.relative_to(results / "extract" / "docs").with_suffix("")
                                  .with_suffix(".parquet"), columns=["doc_id", "selected"]).to_pylist()
        selected = {row["doc_id"] for row in selection if row["selected"]}
        trained.update({doc["url"]: doc["doc_id"] for doc in read_jsonl_zst(path) if doc["doc_id"] in selected})
    assert trained and not (web | forward) & set(trained)
    skipped = Counter()
    for path in (results / "extract" / "stats").rglob("*.json"):
        skipped.update(read_json(path)["skipped"])
    assert skipped["holdout_web"] == len(web) and skipped["holdout_time_forward"] == len(forward)


def test_contamination_report_covers_every_document(reference_run):
    report = read_json(reference_run / "results/report/demo-v0/contamination.json")
    with open(reference_run / "results/report/demo-v0/yield.tsv") as handle:
        rows = {(r["source"], r["stage"]): r for r in csv.DictReader(handle, delimiter="\t")}
    assert report["docs_scanned"] == int(rows["ALL", "extract"]["docs_out"])
    assert [b["benchmark"] for b in report["benchmarks"]] == ["gsm8k", "humaneval", "mmlu"]
    for entry in report["benchmarks"]:  # the real sample pages hold no benchmark text
        assert (entry["docs_flagged"], entry["rate"], entry["top_offenders"]) == (0, 0.0, [])
    assert rows["ALL", "decontaminate"]["docs_in"] == rows["ALL", "decontaminate"]["docs_out"]


def test_no_manifest_is_published_from_a_holdout_that_differs_from_the_pin(tmp_path):
    """Extraction carves the holdout; holdout_manifest then refuses it, naming the key, and no
    manifest is written although the run goes on with every job that does not wait for the check
    (--keep-going). The carved files stay for review. Kept short: one source, two of its snapshots
    (the one whose documents are checked, and one whose pages reach the shards), one encoder epoch."""
    config = demo_config()
    source = config["sources"]["web_archive_tests"]
    source["snapshots"] = {name: source["snapshots"][name] for name in ("wget-2012-01-19", "webrecorder-2017-03-06")}
    with_sources(config, {"web_archive_tests": source})
    config["holdout"]["manifest_sha256"] = "0" * 64
    with_one_encoder_epoch(config)
    write_config(tmp_path, config)
    result = run_snakemake(tmp_path, "--cores", "2", "--keep-going", check=False)
    assert result.returncode != 0
    assert list((tmp_path / "results/shards/demo-v0/web_archive_tests").rglob("*.bin"))
    log = (tmp_path / "results/logs/holdout_manifest.log").read_text()
    assert f"config key holdout.manifest_sha256 pins {'0' * 64}, but holdout/manifest.json has sha256" in log
    assert (tmp_path / "results/extract/docs/web_archive_tests/wget-2012-01-19/main-page.jsonl.zst").exists()
    assert list((tmp_path / "holdout/web").rglob("*.warc.gz")) and not (tmp_path / "holdout/manifest.json").exists()
    assert not (tmp_path / "results/shards/demo-v0/manifest.json").exists()


@pytest.mark.parametrize("change, message", [
    (lambda c: c["decontamination"]["benchmarks"][0].update(path="/nonexistent/gsm8k.jsonl"),
     "config key decontamination.benchmarks.0.path: '/nonexistent/gsm8k.jsonl' does not exist"),
    (lambda c: c.setdefault("tokenizer", {}).update(path="missing/tokenizer.json"),
     "config key tokenizer.path: 'missing/tokenizer.json' does not exist"),
    (lambda c: c["sources"]["govuk"]["snapshots"].update({"BL-x": ["/nonexistent/*.warc.gz"]}),
     "config key sources.govuk.snapshots.BL-x: '/nonexistent/*.warc.gz' matches no file"),
    (lambda c: c["sources"]["aeb_rephrased"]["synthetic"]["templates"].update(mine="Rewrite this."),
     "config key sources.aeb_rephrased.synthetic.templates: prompt template 'mine': needs {text} exactly once"),
    (lambda c: c["synthetic"]["generators"]["demo"].update(path="/nonexistent/model", knowledge_cutoff="2024-01-01T00:00:00Z"),
     "config key synthetic.generators.demo.path: '/nonexistent/model' does not exist"),
])
def test_a_missing_input_stops_the_dry_run_naming_the_key(tmp_path, change, message):
    config = demo_config()
    change(config)
    write_config(tmp_path, config)
    result = run_snakemake(tmp_path, "-n", check=False)
    assert result.returncode != 0 and message in result.stdout + result.stderr


def test_a_transient_failure_is_retried_with_more_memory(tmp_path):
    """TOKENMILL_FAIL_ONCE (tokenmill/faults.py) makes score fail once; the retry succeeds."""
    write_config(tmp_path, demo_config())
    target = "results/score/langid/web_archive_tests/wget-2012-01-19/main-page.parquet"
    result = subprocess.run(snakemake_command(tmp_path, "--cores", "2", target), cwd=tmp_path, capture_output=True,
                            text=True, timeout=900, env={**os.environ, "TOKENMILL_FAIL_ONCE": str(tmp_path / "faults")})
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert len(list((tmp_path / "faults").iterdir())) == 1
    assert re.search(r"Trying to restart job|attempt 2", output), output[-4000:]
    asked = re.findall(r"^(?:local)?rule score:\n(?:    .*\n)*?    resources: .*\bmem_mb=(\d+)", output, flags=re.MULTILINE)
    assert len(asked) == 2 and int(asked[1]) == 2 * int(asked[0]), asked  # the second attempt asked for twice
    assert pq.read_table(tmp_path / target).num_rows == 1


def test_paths_named_like_shell_code_and_hostile_records_go_through_the_rules(tmp_path):
    """An input directory and a holdout directory named like shell code are read as names; hostile
    records in the same snapshot are quarantined with their reasons by the real rules."""
    hostile = tmp_path / "in put's; touch PWNED #"
    hostile.mkdir()
    warc = hostile / "main-page.warc.gz"
    warc.write_bytes(Path(demo_config()["sources"]["web_archive_tests"]["snapshots"]["wget-2012-01-19"][0]).read_bytes())
    hostile_pages = [("http://hostile.example/binary", bytes(range(256)) * 64, []),  # generated, not crawl data
                     ("http://hostile.example/invisible", b"<html><body><p>" + "\u200b".encode() * 5000 + b"</p>", [])]
    write_warc(hostile / "hostile.warc.gz", hostile_pages, raw_tail=b"\x1f\x8b\x08 cut mid-member")
    config = demo_config()
    with_sources(config, {"web_archive_tests": {**config["sources"]["web_archive_tests"],
                                                "snapshots": {"wget-2012-01-19": [str(hostile / "*.warc.gz")]}}})
    config["holdout"].update(dir="hold out's; touch PWNED2 #", manifest_sha256=None)
    write_config(tmp_path, config)
    run_snakemake(tmp_path, "--cores", "2", "hold out's; touch PWNED2 #/manifest.json")
    carved = tmp_path / "hold out's; touch PWNED2 #" / "manifest.json"
    config["holdout"]["manifest_sha256"] = hashlib.sha256(carved.read_bytes()).hexdigest()
    write_config(tmp_path, config)
    target = "results/score/langid/web_archive_tests/wget-2012-01-19/hostile.parquet"  # one part of both files
    quarantine = "results/extract/quarantine/web_archive_tests/wget-2012-01-19/hostile.jsonl.zst"
    run_snakemake(tmp_path, "--cores", "2", target, quarantine)
    assert pq.read_table(tmp_path / target).num_rows == 1
    assert [q["reason"] for q in read_jsonl_zst(tmp_path / quarantine)] == ["binary", "hidden_text"]
    stats = read_json(tmp_path / "results/extract/stats/web_archive_tests/wget-2012-01-19/hostile.json")
    assert stats["read_errors"], "the cut gzip member at the end of the file was not reported"
    assert not list(tmp_path.rglob("PWNED*")), "a path was executed as shell code"


def test_a_file_changed_deep_in_a_checkout_folder_reruns_its_part(tmp_path):
    """A code source's folder input: Snakemake sees only the folder's own modification time,
    which an edit below it leaves alone; the part's extract reruns all the same."""
    with tarfile.open(next((REPO / "data/sample/code").glob("tomli-2.0.1.tar.gz"))) as tar:
        tar.extractall(tmp_path / "checkouts", filter="data")
    folder = tmp_path / "checkouts" / "tomli-2.0.1"
    config = demo_config()
    with_sources(config, {"checkouts": {"kind": "code", "tier": "code", "license_id": "per-repository",
                                        "snapshots": {"git-2026-11": [str(folder)]}}})
    config["holdout"]["manifest_sha256"] = None
    write_config(tmp_path, config)
    run_snakemake(tmp_path, "--cores", "2", "--until", "extract")
    assert job_counts(run_snakemake(tmp_path, "-n", "--until", "extract").stdout) == {}
    module, top = folder / "src" / "tomli" / "_parser.py", folder.stat().st_mtime_ns
    module.write_text(module.read_text() + "\n# a local change\n")
    assert folder.stat().st_mtime_ns == top
    assert job_counts(run_snakemake(tmp_path, "-n", "--until", "extract").stdout) == {"extract": 1}
    run_snakemake(tmp_path, "--cores", "2", "--until", "extract")
    docs = [doc for path in (tmp_path / "results/extract/docs/checkouts").rglob("*.jsonl.zst")
            for doc in read_jsonl_zst(path)]
    assert any("# a local change" in doc["text"] for doc in docs)


def test_the_sample_s_chinese_spam_porn_and_mojibake_pages_are_rejected_by_rules_that_name_them(reference_run):
    """CC-MAIN-2020-34 of the demo: its Chinese pages that the every-language issue names (a government
    template of mojibake keyword stuffing, a gambling forum post, a porn index, a steel-price list)
    and a German PHP/SQL error page are rejected, each by a named rule; its clean Russian and Dutch
    pages are kept; the yield by language shows each language's tier and where its rules come from."""
    results = reference_run / "results"
    snapshot = "common_crawl/CC-MAIN-2020-34"
    urls = {doc["doc_id"]: doc["url"] for path in sorted((results / "extract/docs" / snapshot).glob("*.jsonl.zst"))
            for doc in read_jsonl_zst(path)}
    decided = {urls[row["doc_id"]]: row for path in sorted((results / "select/demo-v0/tables" / snapshot).glob("*.parquet"))
               for row in pq.read_table(path).to_pylist()}
    def decision(host: str) -> dict:
        return next(row for url, row in decided.items() if host in url)
    for host in ("003338.cn", "044545.com", "0513mt.com", "041696.com", "06.live-radsport.ch/fahrerstatistik"):
        row = decision(host)
        assert not row["selected"] and row["reason"].split(":")[0] in ("heuristics", "unnatural", "script_mismatch",
                                                                      "toxic", "too_short"), (host, row["reason"])
    for host, lang in (("01spb.ru", "ru"), ("0900-hovenier.nl", "nl")):
        assert decision(host)["selected"] and decision(host)["lang"] == lang
    with open(results / "report/demo-v0/yield_by_language.tsv") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    chinese = [row for row in rows if row["source"] == "common_crawl" and row["lang"] == "zh"]
    assert chinese and {row["rules"] for row in chinese} == {"reference"}
    assert {row["tier"] for row in rows if row["source"] == "ALL"} >= {"high", "low"}
    english = next(row for row in rows if row["source"] == "ALL" and row["lang"] == "en" and row["stage"] == "damaged")
    assert english["tier"] == "high" and english["max_epochs"] == "4"  # report.max_epochs's default for high
