"""What judge would decide of some texts, without a run: each text's first failed rule under a `select`
section, from the values the score job would store for it (its language and confidence, its
heuristics read with its language's words and thresholds, its naturalness, its toxicity).

Duplicates, provenance, robots and contamination are left out (a text alone has none); every text is
of kind web, in one resource tier, and a language's confidence threshold is derived from the texts
of that language as select_thresholds derives it from a snapshot's. The benchmarks and tests that
measure the policy on labelled text use it; the graph never does.
"""

from __future__ import annotations

import numpy as np

from tokenmill.langid import bundled_model_path, langid_rows
from tokenmill.languages import LanguageTable
from tokenmill.quality.heuristics import heuristics_rows, read_documents
from tokenmill.quality.naturalness import Model, naturalness_rows
from tokenmill.quality.toxicity import toxicity_rows
from tokenmill.select.judge import Policy
from tokenmill.select.thresholds import lang_conf_threshold, thresholds_policy


def stored_values(texts: list[str], table: LanguageTable, model: Model, wordlists: dict[str, frozenset[str]],
                  langid_max_chars: int) -> list[dict]:
    """The values judge reads of each text, as the score job would store them."""
    docs = [{"doc_id": f"{number:032x}", "text": text, "extract_meta": {}} for number, text in enumerate(texts)]
    langid = langid_rows(docs, bundled_model_path(), langid_max_chars).to_pylist()
    langs = [row["lang"] for row in langid]
    read = read_documents(docs, langs)  # each text segmented once, as the score job does
    heuristics = heuristics_rows(docs, langs, table, read).drop(["doc_id", "segmenter"]).to_pylist()
    natural = naturalness_rows(docs, langs, model, table, read).column("quality_naturalness").to_pylist()
    toxicity = toxicity_rows(docs, langs, wordlists, read).column("toxicity").to_pylist()
    return [{**row, "chars": len(doc["text"].strip()), "heuristics": scores, "quality_naturalness": score,
             "toxicity": toxic} for doc, row, scores, score, toxic in zip(docs, langid, heuristics, natural, toxicity)]


def first_failed_rules(values: list[dict], select: dict, table: LanguageTable, tier: str = "low") -> list[str]:
    """Each text's first failed rule (stored_values' rows) under `select`: "" where it passes."""
    policy = Policy(select, 1, table)
    threshold_policy = thresholds_policy(select)
    by_language: dict[str, list[float]] = {}
    for row in values:
        by_language.setdefault(row["lang"], []).append(row["lang_conf"])
    derived = {lang: lang_conf_threshold(float(np.quantile(np.array(confidence, np.float32).astype(np.float64),
                                                           select["lang_conf_per_language"]["quantile"])),
                                         threshold_policy)
               for lang, confidence in by_language.items() if len(confidence) >= select["quality"]["min_language_docs"]}
    return [policy.first_failed_rule({
        **row, "record_truncated": False, "source": "preview", "host": None, "tier": "crawl", "license_id": "preview",
        "fetch_ts": None, "robots_disallowed": False, "kind": "web", "crawler_trap": False, "quality_below_cut": False,
        "quality_mid_kept": False, "contaminated_by": [], "lang_tier": tier,
        "lang_conf_threshold": derived.get(row["lang"])}) for row in values]
