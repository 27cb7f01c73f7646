"""Every language judged by rules made for it, under the schema's defaults: what judge decides of real
text from the values score stores (language, heuristics with the language's words and thresholds,
naturalness, toxicity), duplicates and provenance aside (tokenmill.select.preview)."""

from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from tests.conftest import REPO
from tokenmill.config import schema_defaults
from tokenmill.extract.html import decode_html, extract_main_text
from tokenmill.languages import load_language_table
from tokenmill.quality.naturalness import load_model
from tokenmill.quality.toxicity import all_wordlists, configured_wordlists, load_wordlists
from tokenmill.select.judge import language_thresholds
from tokenmill.select.preview import first_failed_rules, stored_values

TABLE = load_language_table()
CHINESE_PAGES = ["xinhuanet.com.c_1125597921", "archive.org.he.xinhuanet.com.25340717",
                 "banyuetan.org.1000200033136171577956287380194268_1", "baike.baidu.com.tanya"]


def default_reasons(texts: list[str]) -> tuple[list[str], list[str]]:
    """(each text's first failed rule under the schema's select defaults, its language): a small run's
    languages are low-resource (tokenmill.select.preview)."""
    lists = load_wordlists(all_wordlists(configured_wordlists(schema_defaults("safety"),
                                                          str(REPO / "data/wordlists/ldnoobw-en.txt"))))
    values = stored_values(texts, TABLE, load_model(None), lists, schema_defaults("langid")["max_chars"])
    return first_failed_rules(values, schema_defaults("select"), TABLE), [row["lang"] for row in values]


def test_the_chinese_pages_of_trafilatura_s_evaluation_set_are_kept():
    settings = {**schema_defaults("extract"), "fields": schema_defaults("sources.source.fields")}  # blockml
    texts = []
    for name in CHINESE_PAGES:
        html = gzip.open(REPO / "data/bench/html-trafilatura-eval/html" / f"{name}.html.gz", "rb").read()
        texts.append(extract_main_text(decode_html(html, None).text, None, settings).text)
    reasons, langs = default_reasons(texts)
    assert langs == ["zh"] * 4 and reasons == [""] * 4


def development_excerpts() -> list[dict]:
    with gzip.open(REPO / "data/train/naturalness/hplt-dev.jsonl.gz", "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def test_on_the_development_labels_the_defaults_halve_the_unnatural_share_and_keep_the_natural_text():
    """Native speakers' labels in Russian, Persian, Asturian and English (the naturalness model is fitted
    on them: bench_languages.py measures each language with a model fitted on the others)."""
    rows = development_excerpts()
    reasons, _ = default_reasons([row["text"].replace("\n..........\n", "\n\n") for row in rows])
    kept = np.array([not reason for reason in reasons])
    unnatural = np.array([row["unnatural"] for row in rows])
    assert kept[unnatural].sum() / kept.sum() <= 0.5 * unnatural.mean()
    assert kept[~unnatural].mean() >= 0.85
    for lang in ("rus_Cyrl", "pes_Arab", "ast_Latn"):
        of_lang = np.array([row["lang"] == lang for row in rows])
        assert kept[of_lang & ~unnatural].mean() >= 0.8, lang


@pytest.mark.parametrize("lang, metric, english", [
    ("zh", "mean_word_length", {"min": 3, "max": 10}),  # a jieba word is 1.8 characters
    ("fi", "mean_word_length", {"min": 3, "max": 10}),  # a Finnish one 7.8
    ("zh", "dup_5gram_char_fraction", {"max": 0.15}),
])
def test_a_language_s_thresholds_replace_the_english_values_that_do_not_carry_over(lang, metric, english):
    profile = schema_defaults("select")["heuristics"]["profiles"]["web"]
    family = next(family for family, rules in profile.items() if metric in rules)
    assert profile[family][metric] == english
    own = language_thresholds(profile, TABLE.entry(lang).heuristics)[family][metric]
    assert own != english
    if metric == "mean_word_length":
        assert (own["min"] < 3) == (lang == "zh") and (own["max"] > 10) == (lang == "fi")
    # FineWeb2's method: no C4 sentence count and no short-line rule outside English
    assert "c4_kept_sentence_count" not in language_thresholds(profile, TABLE.entry(lang).heuristics)["c4"]
    # a rule the kind's profile does not have is not added (the PDF profile has no FineWeb rules)
    assert "fineweb" not in language_thresholds(schema_defaults("select")["heuristics"]["profiles"]["pdf"],
                                                TABLE.entry(lang).heuristics)


def test_a_language_without_reference_text_gets_its_script_s_entry_and_says_so():
    assert TABLE.entry("zh").source == "reference" and TABLE.entry("en").source == "reference"
    gaelic = TABLE.entry("gd")
    assert gaelic.source == "script:LATIN" and not gaelic.stop_words
    # Amharic: no language of the table is written in Ethiopic, so every language's medians
    assert TABLE.entry("am").source == "script:*"
    assert len(TABLE.languages) == 75
