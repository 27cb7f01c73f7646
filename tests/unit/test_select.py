"""select applies policy to stored values, and only there."""

from __future__ import annotations

import copy

import pyarrow as pa
import pytest

from tests.conftest import demo_config
from tokenmill.config import validate
from tokenmill.decontam import SCHEMA as DECONTAMINATE_SCHEMA
from tokenmill.host_stats import SCHEMA as HOST_STATS_SCHEMA
from tokenmill.dedup.cluster import OUTPUT_SCHEMA as DEDUP_SCHEMA
from tokenmill.dedup.cross_snapshot import PROBE_SCHEMA
from tokenmill.io import JsonlZstWriter, read_parquet, write_json, write_parquet
from tokenmill.langid import SCHEMA as LANGID_SCHEMA
from tokenmill.quality.classifier import SCHEMA as FASTTEXT_SCHEMA
from tokenmill.quality.encoder import SCHEMA as ENCODER_SCHEMA
from tokenmill.quality.heuristics import SCHEMA as HEURISTICS_SCHEMA, heuristic_scores
from tokenmill.quality.pii import PII_SCHEMA, find_pii
from tokenmill.quality.toxicity import TOXICITY_SCHEMA
from tokenmill.select import FILTER_STAGES, Policy, emitted_text, reason_stage, select_part


@pytest.fixture
def policy_section():
    section = copy.deepcopy(validate(demo_config())["select"])
    section.update(languages=["en", "de", "sw"], min_lang_conf=0.65, lang_conf={"sw": 0.9}, min_chars=10,
                   script_check={"languages": ["sw"], "min_share": 0.8},
                   boilerplate_lines={"min_count": 3, "rate": 0.01})
    section["heuristics"]["thresholds"] = {"gopher_quality": {"word_count": {"min": 5}}}
    return section


def passing(**changes):
    doc = {"doc_id": "0" * 32, "record_truncated": False, "lang": "en", "lang_conf": 0.9, "script_share": 1.0,
           "exact_canonical": True, "is_cluster_representative": True, "xsnap_dup_of": None, "superseded": False,
           "crawler_trap": False, "chars": 100, "heuristics": {"word_count": 20}, "quality_below_cut": False, "quality_mid_kept": False,
           "toxicity": 0.0, "contaminated_by": [], "source": "news", "host": "www.example.com", "tier": "crawl",
           "license_id": "CC-BY-4.0", "fetch_ts": "2024-03-01T12:00:00Z"}
    doc.update(changes)
    return doc


@pytest.mark.parametrize("changes, reason", [
    ({}, ""),
    ({"lang": "fr", "lang_conf": 0.99}, "lang_not_selected"),
    ({"lang_conf": 0.6}, "langid_unclaimed"),
    ({"lang": "sw", "lang_conf": 0.85}, "langid_unclaimed"),  # the low-resource threshold is 0.9
    ({"lang": "sw", "lang_conf": 0.95, "script_share": 0.5}, "script_mismatch"),
    ({"lang": "sw", "lang_conf": 0.95, "heuristics": {"word_count": 1}}, ""),  # heuristics apply to en only
    ({"chars": 5}, "too_short"),
    ({"record_truncated": True, "lang": "fr"}, "record_truncated"),  # the first failing rule wins
    ({"exact_canonical": False, "is_cluster_representative": False}, "exact_duplicate"),
    ({"is_cluster_representative": False}, "near_duplicate"),
    ({"crawler_trap": True}, "crawler_trap"),
    ({"crawler_trap": True, "chars": 5}, "crawler_trap"),
    ({"heuristics": {"word_count": 3}}, "heuristics:gopher_quality.word_count"),
    ({"quality_below_cut": True}, "low_quality"),
    ({"quality_below_cut": True, "quality_mid_kept": True}, ""),
    ({"contaminated_by": ["gsm8k"]}, "contaminated"),
    ({"contaminated_by": ["gsm8k"], "quality_below_cut": True}, "low_quality"),
    ({"source": "forum"}, "source_removed"),
    ({"source": "forum", "record_truncated": True}, "record_truncated"),
    ({"host": "optout.example"}, "opted_out"),
    ({"host": "a.b.OptOut.example"}, "opted_out"),  # a listed host covers its subdomains
    ({"host": "notoptout.example"}, ""),
    ({"host": "optout.example.org"}, ""),
    ({"host": None}, ""),
    ({"host": "optout.example", "lang": "fr", "chars": 5}, "opted_out"),  # policy comes before content filters
    ({"license_id": "NC-only"}, "licence_excluded"),
    ({"license_id": "deal-2023"}, "licence_expired"),  # expired on 2025-01-01, the policy date is 2025-06-30
    ({"license_id": "deal-2026"}, ""),
    ({"license_id": "deal-as-of"}, "licence_expired"),  # it stops covering use on the policy date itself
    ({"fetch_ts": "2024-06-01T00:00:00Z"}, "after_cutoff"),
    ({"fetch_ts": "2024-05-01T00:00:01Z"}, "after_cutoff"),
    ({"fetch_ts": "2024-05-01T00:00:00Z"}, ""),  # fetch_ts <= cutoff passes
    ({"fetch_ts": None}, "cutoff_undated"),
    ({"tier": "academic", "fetch_ts": None}, ""),  # no cutoff for the tier
    ({"tier": "synthetic", "fetch_ts": "2023-10-01T00:00:00Z"}, "after_cutoff"),  # the generator's cutoff
    ({"tier": "synthetic", "fetch_ts": "2023-01-01T00:00:00Z"}, ""),
])
def test_policy_reasons(policy_section, changes, reason):
    policy_section.update(exclude_sources=["forum"], opt_out_hosts=["optout.example"], as_of="2025-06-30",
                          licences={"NC-only": {"excluded": True}, "deal-2023": {"expires": "2025-01-01"},
                                    "deal-2026": {"expires": "2026-01-01"}, "deal-as-of": {"expires": "2025-06-30"}},
                          cutoff={"crawl": "2024-05-01T00:00:00Z", "synthetic": "2023-04-30T00:00:00Z"})
    assert Policy(policy_section, 1).reason(passing(**changes)) == reason


def test_default_policy_excludes_nothing_by_provenance(policy_section):
    policy = Policy(policy_section, 1)
    assert policy.reason(passing(fetch_ts=None, host=None, source=None, tier=None, license_id=None)) == ""


def test_an_expiry_without_a_policy_date_is_never_guessed(policy_section):
    policy_section["licences"] = {"CC-BY-4.0": {"expires": "2020-01-01"}}
    with pytest.raises(ValueError, match="select.licences.CC-BY-4.0.expires needs select.as_of"):
        Policy(policy_section, 1).reason(passing())


def test_switches_and_toxicity(policy_section):
    policy_section.update(languages=None, drop_near_duplicates=False, drop_cross_snapshot_duplicates=True)
    policy = Policy(policy_section, 1)
    assert policy.reason(passing(lang="yo", is_cluster_representative=False)) == ""
    assert policy.reason(passing(xsnap_dup_of="a" * 32)) == "cross_snapshot_duplicate"
    assert policy.reason(passing(xsnap_dup_of=None)) == ""  # no older snapshot has it
    assert policy.reason(passing(superseded=True)) == ""  # a newer copy exists: kept unless newer is preferred
    policy_section["cross_snapshot_prefer"] = "newer"
    policy = Policy(policy_section, 1)
    assert policy.reason(passing(xsnap_dup_of="a" * 32)) == ""
    assert policy.reason(passing(superseded=True)) == "cross_snapshot_duplicate"
    policy_section["toxicity"] = {"max_score": 0.05, "downweight_above": 0.01, "downweight_keep": 0.5}
    policy = Policy(policy_section, 1)
    assert policy.reason(passing(toxicity=0.2)) == "toxic"
    kept = [policy.reason(passing(doc_id=f"{i:032x}", toxicity=0.02)) == "" for i in range(400)]
    assert 0.4 < sum(kept) / len(kept) < 0.6  # deterministic sampling keeps about half
    assert kept == [policy.reason(passing(doc_id=f"{i:032x}", toxicity=0.02)) == "" for i in range(400)]


def test_reason_stages():
    assert reason_stage("heuristics:c4.c4_curly_bracket") == "heuristics"
    assert reason_stage("langid_unclaimed") == "langid" and reason_stage("low_quality") == "quality"
    for reason in ("source_removed", "opted_out", "licence_excluded", "licence_expired", "after_cutoff",
                   "cutoff_undated"):
        assert reason_stage(reason) == "policy"
    assert FILTER_STAGES[:2] == ["damaged", "policy"]


def test_boilerplate_threshold_scales_with_the_snapshot(policy_section):
    policy = Policy(policy_section, 1)
    assert policy.boilerplate_threshold(10) == 3 and policy.boilerplate_threshold(1000) == 10
    assert policy.drop_lines([0, 4, 3, 11, 1], 1000) == [3]


def test_emitted_text_scrubs_pii_and_drops_lines_keeping_line_numbers():
    text = "Menu\nWrite to jane.doe@example.org or call +1 415 555 0100.\nFooter"
    spans = [{"start": s.start, "end": s.end, "kind": s.kind} for s in find_pii(text)]
    assert [s["kind"] for s in spans] == ["email", "phone"]
    assert emitted_text(text, spans, [0, 2]) == "Write to <EMAIL> or call <PHONE>."
    assert emitted_text("a\nb", [], []) == "a\nb"
    split = "call +44 20\n7946 0958 now\nlast"  # a span over a line break keeps the break
    assert emitted_text(split, [{"start": 5, "end": 21, "kind": "phone"}], [2]) == "call <PHONE>\n now"


def write_attributes(tmp_path, texts, langs, confs, canonical, line_counts, urls=None, hosts=None, provenance=None):
    """`hosts`: the snapshot's host_stats rows (none by default); `provenance`: extra document
    fields (source, tier, license_id, fetch_ts) per document."""
    ids = [f"{i:032x}" for i in range(len(texts))]
    docs = tmp_path / "docs.jsonl.zst"
    with JsonlZstWriter(docs) as writer:
        for doc_id, text, url, extra in zip(ids, texts, urls or [None] * len(texts), provenance or [{}] * len(texts)):
            writer.write({"doc_id": doc_id, "text": text, "url": url, "extract_meta": {}, **extra})
    n = len(ids)
    tables = {
        "langid": pa.Table.from_pydict({"doc_id": ids, "lang": langs, "lang_conf": confs, "script_share": [1.0] * n},
                                       schema=LANGID_SCHEMA),
        "dedup": pa.Table.from_pydict({
            "doc_id": ids, "content_hash": [0] * n, "exact_canonical": canonical, "exact_dup_of": [None] * n,
            "exact_group_size": [1] * n, "dup_cluster_id": ids, "dup_cluster_size": [1] * n,
            "is_cluster_representative": [True] * n, "line_doc_counts": line_counts, "scope_clusters": [100] * n},
            schema=DEDUP_SCHEMA),
        "cross_snapshot_dedup": pa.Table.from_pydict({"part": ["p"] * n, "row": list(range(n)), "doc_id": ids,
                                                      **{f"xsnap_{kind}_{field}": [None] * n for kind in ("dup", "latest")
                                                         for field in ("of", "snapshot")}},
                                                     schema=PROBE_SCHEMA),
        "heuristics": pa.Table.from_pylist([{"doc_id": i, **heuristic_scores(t)} for i, t in zip(ids, texts)],
                                           schema=HEURISTICS_SCHEMA),
        "pii": pa.Table.from_pydict({"doc_id": ids, "pii_spans": [[{"start": s.start, "end": s.end, "kind": s.kind}
                                                                   for s in find_pii(t)] for t in texts],
                                     **{f"pii_{k}": [0] * n for k in ("email", "phone", "ip", "ssn", "credit_card")}},
                                    schema=PII_SCHEMA),
        "toxicity": pa.Table.from_pydict({"doc_id": ids, "toxicity": [0.0] * n, "toxic_matches": [0] * n},
                                         schema=TOXICITY_SCHEMA),
        "quality": pa.Table.from_pydict({"doc_id": ids, "quality_fasttext": [0.9] * n}, schema=FASTTEXT_SCHEMA),
        "encoder": pa.Table.from_pydict({"part": ["p"] * n, "row": list(range(n)), "doc_id": ids,
                                         "quality_encoder": [0.8] * n}, schema=ENCODER_SCHEMA),
        "decontaminate": pa.Table.from_pydict({"doc_id": ids, "url": [None] * n, "contaminated_by": [[]] * n,
                                               "longest_run": [0] * n, "matched_spans": [[]] * n,
                                               "words": [len(t.split()) for t in texts]}, schema=DECONTAMINATE_SCHEMA),
        "host_stats": pa.Table.from_pylist(hosts or [], schema=HOST_STATS_SCHEMA),
    }
    paths = {}
    for name, table in tables.items():
        paths[name] = str(tmp_path / f"{name}.parquet")
        write_parquet(paths[name], table)
    thresholds = tmp_path / "thresholds.json"
    write_json(thresholds, {"score": "ensemble", "keep_top": None, "mid_band": 0.2, "mid_keep": 0.25,
                            "languages": {"*": {"documents": n}}})
    return docs, paths, thresholds


def test_select_part_keeps_every_row_with_its_reason_lines_and_pii(tmp_path, policy_section):
    article = "An English document that is long enough to pass, written by jane@example.org today."
    texts = ["short", article + "\nShare this", "ein deutsches Dokument, lang genug und gut", article + "\nShare this"]
    docs, paths, thresholds = write_attributes(tmp_path, texts, ["en", "en", "de", "en"], [0.9, 0.9, 0.3, 0.9],
                                               [True, True, True, False], [[1], [1, 9], [1], [1, 9]])
    out = tmp_path / "select.parquet"
    select_part(str(docs), "p", paths, str(thresholds), str(out), policy_section, seed=1)
    table = read_parquet(out)
    assert table.column("reason").to_pylist() == ["too_short", "", "langid_unclaimed", "exact_duplicate"]
    assert table.column("selected").to_pylist() == [False, True, False, False]
    assert table.column("drop_lines").to_pylist()[1] == [1]  # "Share this" is in 9 clusters > 3
    assert [s["kind"] for s in table.column("scrub_spans").to_pylist()[1]] == ["email"]
    emitted = article.replace("jane@example.org", "<EMAIL>")
    assert table.column("bytes").to_pylist()[1] == len(emitted.encode())
    assert table.column("raw_bytes").to_pylist()[1] == len(texts[1].encode())


def test_misaligned_attributes_are_refused(tmp_path, policy_section):
    docs, paths, thresholds = write_attributes(tmp_path, ["x" * 50], ["en"], [0.9], [True], [[0]])
    write_parquet(paths["langid"], pa.Table.from_pydict({"doc_id": ["b" * 32], "lang": ["en"], "lang_conf": [0.9],
                                                        "script_share": [1.0]}, schema=LANGID_SCHEMA))
    with pytest.raises(ValueError, match="langid attributes are not aligned"):
        select_part(str(docs), "p", paths, str(thresholds), str(tmp_path / "out.parquet"), policy_section, seed=1)


def test_documents_of_a_crawler_trap_host_are_excluded_by_policy(tmp_path, policy_section):
    text = "An English document that is long enough to pass the length rule of this policy."
    urls = ["http://calendar.example/day/1", "http://news.example/a", "http://calendar.example/day/2", None]
    hosts = [{"host": "calendar.example", "urls": 5000, "docs": 5000, "distinct_content": 40, "unique_share": 0.008},
             {"host": "news.example", "urls": 5000, "docs": 5000, "distinct_content": 4900, "unique_share": 0.98}]
    docs, paths, thresholds = write_attributes(tmp_path, [text] * 4, ["en"] * 4, [0.9] * 4, [True] * 4, [[1]] * 4,
                                               urls=urls, hosts=hosts)
    out = tmp_path / "select.parquet"
    select_part(str(docs), "p", paths, str(thresholds), str(out), policy_section, seed=1)
    assert read_parquet(out).column("reason").to_pylist() == ["crawler_trap", "", "crawler_trap", ""]
    policy_section["crawler_traps"]["min_urls"] = 10_000  # the same host is no longer big enough to be a trap
    select_part(str(docs), "p", paths, str(thresholds), str(out), policy_section, seed=1)
    assert read_parquet(out).column("selected").to_pylist() == [True] * 4
    policy_section["crawler_traps"].update(min_urls=1, max_unique_share=None)
    select_part(str(docs), "p", paths, str(thresholds), str(out), policy_section, seed=1)
    assert read_parquet(out).column("selected").to_pylist() == [True] * 4


def test_select_part_applies_the_provenance_policy_to_the_stored_document_fields(tmp_path, policy_section):
    text = "An English document that is long enough to pass the length rule of this policy."
    urls = ["https://www.optout.example/a", "https://news.example/b", "https://news.example/c",
            "https://news.example/d", "https://news.example/e", "https://news.example/f"]
    base = {"source": "web", "tier": "crawl", "license_id": "CC-BY-4.0", "fetch_ts": "2024-01-01T00:00:00Z"}
    provenance = [base, {**base, "source": "forum"}, {**base, "license_id": "NC-only"},
                  {**base, "fetch_ts": "2025-01-01T00:00:00Z"}, {**base, "fetch_ts": None}, base]
    docs, paths, thresholds = write_attributes(tmp_path, [text] * 6, ["en"] * 6, [0.9] * 6, [True] * 6, [[1]] * 6,
                                               urls=urls, provenance=provenance)
    out = tmp_path / "select.parquet"
    select_part(str(docs), "p", paths, str(thresholds), str(out), policy_section, seed=1)
    assert read_parquet(out).column("selected").to_pylist() == [True] * 6  # the default policy excludes nothing
    policy_section.update(exclude_sources=["forum"], opt_out_hosts=["optout.example"],
                          licences={"NC-only": {"excluded": True}}, cutoff={"crawl": "2024-06-30T23:59:59Z"})
    select_part(str(docs), "p", paths, str(thresholds), str(out), policy_section, seed=1)
    assert read_parquet(out).column("reason").to_pylist() == ["opted_out", "source_removed", "licence_excluded",
                                                              "after_cutoff", "cutoff_undated", ""]
