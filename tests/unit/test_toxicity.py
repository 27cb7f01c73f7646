"""Word-list toxicity score with the shipped LDNOOBW English list, and toxicity_part."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import written_twice
from tests.unit.helpers import toxicity_part
from tokenmill.io import read_parquet, write_jsonl_zst
from tokenmill.quality.toxicity import (TOXICITY_SCHEMA, all_wordlists, configured_wordlists, load_wordlist,
                                       load_wordlists, tokenize, toxicity_score)

WORDLIST = Path(__file__).resolve().parents[2] / "data" / "wordlists" / "ldnoobw-en.txt"


@pytest.fixture(scope="module")
def words() -> frozenset[str]:
    return load_wordlist(str(WORDLIST))


def test_shipped_list_is_the_c4_revision(words):
    data = WORDLIST.read_bytes()
    assert hashlib.sha256(data).hexdigest() == "a506cbcf8a31935b122299f3bb1d32be6db3d0ad498765d28f365dfc4f4d7b8c"
    assert len(words) == 377
    assert {"bastard", "bullshit", "sucks", "girl on top", "two girls one cup", "g-spot", "s&m", "🖕"} <= words


def test_load_wordlist_lowercases_and_skips_blanks(tmp_path):
    path = tmp_path / "list.txt"
    path.write_text("Foo\n\n  Bar Baz \n\nfoo\n", encoding="utf-8")
    assert load_wordlist(str(path)) == frozenset({"foo", "bar baz"})


def test_word_boundaries(words):
    assert toxicity_score("The class passed the assessment in Essex; a cocktail at Scunthorpe.", words) == (0.0, 0)
    assert toxicity_score("", words) == (0.0, 0)
    assert toxicity_score("!!! ...", words) == (0.0, 0)
    # a hyphen separates words, as in C4's \W-bounded match
    assert toxicity_score("Anti-porn law", words) == (pytest.approx(1 / 3), 1)


def test_hand_checked_score(words):
    # 7 tokens: this movie sucks the plot is bullshit -> 2 listed words
    assert toxicity_score("This movie SUCKS, the plot is bullshit.", words) == (pytest.approx(2 / 7), 2)


def test_phrases(words):
    # "girl on top" (3 tokens) beats its prefix "girl on"; then "girl on" alone: 5 of 10 tokens, 2 matches
    text = "Girl on top of the hill; girl on a bike."
    assert tokenize(text) == ["girl", "on", "top", "of", "the", "hill", "girl", "on", "a", "bike"]
    assert toxicity_score(text, words) == (pytest.approx(0.5), 2)
    assert toxicity_score("two girls one cup", words) == (1.0, 1)
    assert toxicity_score("Two girls, one cup of tea.", words) == (pytest.approx(4 / 6), 1)
    # "g-spot" is the phrase (g, spot), written with a hyphen or a space; "s&m" is one token
    assert toxicity_score("The G-spot and g spot.", words) == (pytest.approx(4 / 6), 2)
    assert toxicity_score("S&M club and s and m", words) == (pytest.approx(1 / 6), 1)
    assert toxicity_score("🖕 you", words) == (0.5, 1)
    assert toxicity_score("one girl on", frozenset({"girl on top"})) == (0.0, 0)


def test_the_scan_that_visits_entries_first_tokens_alone_matches_a_scan_of_every_token():
    """Greedy from left to right, longest entry first, over random texts of listed words, phrase
    heads and tails and other words (matches that overlap, phrases cut short at the text's end)."""
    entries = frozenset({"a", "a b", "a b c", "b c", "c", "d e", "b"})

    def every_token(tokens: list[str]) -> tuple[float, int]:
        covered = matches = position = 0
        while position < len(tokens):
            step = next((length for length in (3, 2) if " ".join(tokens[position:position + length]) in entries
                         and position + length <= len(tokens)), 1 if tokens[position] in entries else 0)
            covered, matches, position = covered + step, matches + bool(step), position + max(step, 1)
        return covered / len(tokens), matches

    random = np.random.default_rng(3)
    for _ in range(2000):
        tokens = random.choice(["a", "b", "c", "d", "e", "x"], size=int(random.integers(1, 12))).tolist()
        assert toxicity_score(" ".join(tokens), entries) == every_token(tokens)
    assert toxicity_score("x y z", entries) == (0.0, 0) and toxicity_score("", entries) == (0.0, 0)


def test_toxicity_part_rows_judge_each_language_by_its_own_list_and_no_other(tmp_path):
    docs = tmp_path / "docs.jsonl.zst"
    write_jsonl_zst(docs, [
        {"doc_id": "a", "text": "This movie sucks, the plot is bullshit."},
        {"doc_id": "b", "text": "A perfectly ordinary sentence about classes."},
        # Chinese, read by jieba: 色情 (pornography) is one word of LDNOOBW's Chinese list, in eight words
        {"doc_id": "c", "text": "这个网站上有很多色情内容。"},
        # Welsh, which has no list: not judged (null), whatever its words
        {"doc_id": "d", "text": "Mae'r tywydd yn braf heddiw ac mae'r plant yn chwarae yn yr ardd gyda'u ffrindiau."},
    ])
    wordlists = configured_wordlists({"wordlists": {}}, str(WORDLIST))
    first, count = written_twice(tmp_path, lambda out: toxicity_part(str(docs), out, wordlists))
    assert count == 4
    table = read_parquet(first)
    assert table.schema.equals(TOXICITY_SCHEMA)
    recorded = json.loads(table.schema.metadata[b"wordlists_sha256"])
    assert recorded["en"] == hashlib.sha256(WORDLIST.read_bytes()).hexdigest() and "zh" in recorded and "cy" not in recorded
    assert table.column("doc_id").to_pylist() == ["a", "b", "c", "d"]
    assert tokenize("这个网站上有很多色情内容。", "zh") == ["这个", "网站", "上", "有", "很多", "色情", "内容"]
    assert table.column("toxicity").to_pylist() == [pytest.approx(2 / 7), 0.0, pytest.approx(1 / 7), None]
    assert table.column("toxic_matches").to_pylist() == [2, 0, 1, None]


def test_the_bundled_lists_are_ldnoobw_s_in_23_languages_beside_english():
    configured = configured_wordlists({"wordlists": {}}, str(WORDLIST))
    assert configured == {"en": str(WORDLIST)}  # what the score rule reads: no path into the installed package
    lists = load_wordlists(all_wordlists(configured))
    assert len(lists) == 24 and lists["en"] == load_wordlist(str(WORDLIST))
    assert {"色情", "做爱"} <= lists["zh"] and {"سكس"} <= lists["ar"]
    # a configured list replaces its language's, and only it
    own = all_wordlists(configured_wordlists({"wordlists": {"zh": str(WORDLIST)}}, str(WORDLIST)))
    assert own["zh"] == str(WORDLIST) and own["ar"] == all_wordlists(configured)["ar"]
