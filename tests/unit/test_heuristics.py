"""Heuristic quality metrics: hand-checked values on small texts and real article bodies.

Every expected number below was counted by hand; the same texts were also run through
datatrove 0.10.1's own definitions (its filters' code, in its own virtualenv), which give the
same values for every metric asserted here.
"""

from __future__ import annotations

import json
import random
import tarfile

import numpy as np
import pytest

from tests.conftest import REPO, gold_articles, lingua_records, written_twice
from tests.unit.helpers import score_heuristics_part
from tokenmill.config import load_schema, schema_defaults
from tokenmill.io import read_parquet, write_jsonl_zst
from tokenmill.languages import load_language_table
from tokenmill.words import unicode_words
from tokenmill.quality.heuristics import (
    DEFAULT_THRESHOLDS,
    FAMILY_METRICS,
    FORMULA_WORD,
    GOPHER,
    HEURISTIC_COLUMNS,
    LONG_DOCUMENT_WORDS,
    NULLABLE_COLUMNS,
    SCHEMA,
    failed_rule,
    error_line_chars,
    heuristic_scores,
    heuristic_scores_and_segmenter,
    heuristics_text,
    language_stop_words,
    long_range_recurrence,
    mojibake_chars,
)

GOLD_SHORT = "042bb7b5fedab6eac7db576522b89b93904c237d344bcbe14a6a5ab7f7335856"  # WSJ teaser, passes all
GOLD_REPEATED = "0dd1357045727799a447563fd8851f4ebe79f042073ea16991a9b67aa595f81a"  # a tweet footer twice


@pytest.fixture(scope="module")
def gold() -> dict[str, str]:
    return {key: value["articleBody"] for key, value in gold_articles().items()}


def test_columns_schema_and_thresholds_agree():
    assert len(HEURISTIC_COLUMNS) == len(set(HEURISTIC_COLUMNS)) == 39
    assert SCHEMA.names == ["doc_id", *HEURISTIC_COLUMNS, "segmenter"]
    scores = heuristic_scores("Some text.")
    assert list(scores) == HEURISTIC_COLUMNS
    assert not any(isinstance(value, bool) for value in scores.values())
    for name, value in scores.items():
        if name in NULLABLE_COLUMNS and value is None:  # a short document: no long-document metrics
            continue
        expected = int if str(SCHEMA.field(name).type) == "int64" else float
        assert type(value) is expected, name
    for family, rules in DEFAULT_THRESHOLDS.items():
        for metric, rule in rules.items():
            assert metric in HEURISTIC_COLUMNS and set(rule) <= {"min", "max"}, (family, metric)


def test_tokenizer_splits_like_spacy_on_common_cases():
    assert unicode_words("Hello, world! It's 3.5 U.S. e-mail... at 2:55 p.m. http://x.com/a?b=1).") == [
        "Hello", ",", "world", "!", "It", "'s", "3.5", "U.S.", "e", "-", "mail", "...", "at", "2:55", "p.m.",
        "http://x.com/a?b=1", ")", "."]
    # In a document of a language without a segmenter of its own, Han, kana and Hangul: one word
    # per character; combining marks stay inside words.
    assert unicode_words("日本語のテキスト。") == ["日", "本", "語", "の", "テ", "キ", "ス", "ト", "。"]
    assert unicode_words("한국어 문장") == ["한", "국", "어", "문", "장"]
    assert unicode_words("हिन्दी भाषा।") == ["हिन्दी", "भाषा", "।"]


def test_gopher_quality_on_a_real_sentence():
    # The first sentence of the WSJ gold body: 33 tokens, of which 5 are punctuation (. , , , .)
    # and 28 words; their lengths sum to 91; stop words present: to, be, of, the.
    text = ("Gaming used to be so simple. We’d buy a game, sit down in front of a console or PC, "
            "grind our way to the end, then repeat.")
    scores = heuristic_scores(text)
    assert scores["word_count"] == 28
    assert scores["mean_word_length"] == 91 / 28
    assert scores["alpha_word_fraction"] == 28 / 33
    assert scores["stop_word_count"] == 4
    assert scores["hash_to_word_ratio"] == scores["ellipsis_to_word_ratio"] == 0.0
    # No bigram repeats, so the top bigram is the first one, "Gaming used", once: 11 characters.
    assert scores["top_2gram_char_fraction"] == 11 / len(text)
    assert scores["top_3gram_char_fraction"] == len("Gaming used to") / len(text)
    assert scores["c4_kept_sentence_count"] == 2
    assert scores["fineweb_line_punct_ratio"] == 1.0
    assert failed_rule(scores, DEFAULT_THRESHOLDS) == "gopher_quality.word_count"  # 28 < 50


def test_symbols_bullets_and_ellipses():
    text = "The cat sat.\n- One item\n• Two items...\n#tag"
    # tokens: The cat sat . - One item • Two items ... # tag  (13); symbol-only: . - ... #
    scores = heuristic_scores(text)
    assert scores["word_count"] == 9  # "•" is not in datatrove's punctuation list, so it is a word
    assert scores["mean_word_length"] == (3 + 3 + 3 + 3 + 4 + 1 + 3 + 5 + 3) / 9
    assert scores["hash_to_word_ratio"] == 1 / 13
    assert scores["ellipsis_to_word_ratio"] == 1 / 13
    assert scores["bullet_line_fraction"] == 2 / 4
    assert scores["ellipsis_line_fraction"] == 1 / 4
    assert scores["alpha_word_fraction"] == 8 / 13
    assert scores["stop_word_count"] == 0  # "The": datatrove's stop-word test is case-sensitive
    assert heuristic_scores("• one\n● two\n- three\n* four\nfive")["bullet_line_fraction"] == 4 / 5


def test_repeated_lines_and_paragraphs():
    text = "alpha beta\nalpha beta\ngamma\n\nalpha beta"  # 39 characters, 4 newlines
    scores = heuristic_scores(text)
    assert scores["dup_line_fraction"] == 2 / 4
    assert scores["dup_line_char_fraction"] == 20 / 39
    assert scores["dup_para_fraction"] == scores["dup_para_char_fraction"] == 0.0
    assert scores["top_2gram_char_fraction"] == 3 * len("alpha beta") / 39
    assert scores["top_3gram_char_fraction"] == len("alpha beta alpha") / 39  # all unique: the first
    assert scores["fineweb_dup_line_char_ratio"] == 20 / 35
    assert scores["fineweb_newline_to_word_ratio"] == 4 / 7
    assert scores["fineweb_short_line_ratio"] == 1.0
    assert scores["fineweb_line_punct_ratio"] == 0.0

    scores = heuristic_scores("Read more\n\nSome text here.\n\nRead more")  # 37 characters
    assert scores["dup_para_fraction"] == 1 / 3
    assert scores["dup_para_char_fraction"] == 9 / 37


def test_duplicated_ngrams_follow_the_greedy_scan():
    text = "a b c d e a b c d e a b c d e"  # 15 one-letter words, 29 characters
    scores = heuristic_scores(text)
    # top n-grams: "a b" x3 (ties broken to the first seen), "a b c" x3, "a b c d" x3
    assert scores["top_2gram_char_fraction"] == 9 / 29
    assert scores["top_3gram_char_fraction"] == 15 / 29
    assert scores["top_4gram_char_fraction"] == 21 / 29
    # 5-grams: positions 5 and 10 repeat position 0; the scan jumps 5 after each: 2 x 5 letters.
    assert scores["dup_5gram_char_fraction"] == 10 / 29
    # n = 6..10: position 5 repeats position 0, the jump then passes the last n-gram: n letters.
    for n in range(6, 11):
        assert scores[f"dup_{n}gram_char_fraction"] == n / 29


def test_c4_signals():
    text = "\n".join([
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit.",
        "Please enable JavaScript to view this page.",
        "This site uses cookies. Read our Privacy Policy.",
        "function() { return 1; }",
        "Short line.",
        "No punctuation here at all",
        "It rained. We stayed inside! Did you?",
    ])
    scores = heuristic_scores(text)
    assert scores["c4_lines_without_terminal_punct_fraction"] == 2 / 7
    assert scores["c4_short_line_fraction"] == 1 / 7
    assert scores["c4_javascript_line_count"] == 1
    assert scores["c4_policy_line_count"] == 1
    assert scores["c4_lorem_ipsum"] == 1
    assert scores["c4_curly_bracket"] == 1
    assert scores["c4_max_word_length"] == len("consectetur")
    # kept lines: the lorem ipsum line (1 sentence) and the last one (3)
    assert scores["c4_kept_sentence_count"] == 4
    assert failed_rule(scores, {"c4": DEFAULT_THRESHOLDS["c4"]}) == "c4.c4_lorem_ipsum"
    assert heuristic_scores("Visit Dr. Smith at 5 p.m. on Oct. 3. He is in.")["c4_kept_sentence_count"] == 2
    # the longest whitespace-separated word, whatever the whitespace
    for text in ("", "   ", "one", " two  words ", "a\u3000bbb\x85cc\u2028dddd\xa0e", "x" * 1200 + "\ty"):
        assert heuristic_scores(text)["c4_max_word_length"] == max(map(len, text.split()), default=0)


def test_real_article_with_a_repeated_footer(gold):
    text = gold[GOLD_REPEATED]  # 1172 characters, 19 newlines, 11 non-blank lines, 10 paragraphs
    assert (len(text), text.count("\n")) == (1172, 19)
    footer = "— The Nigerian Senate (@NGRSenate) October 9, 2018"  # 50 characters, twice
    assert text.count(footer) == 2
    scores = heuristic_scores(text)
    assert scores["dup_line_fraction"] == 1 / 11
    assert scores["dup_line_char_fraction"] == 50 / 1172
    assert scores["dup_para_fraction"] == 1 / 10
    assert scores["dup_para_char_fraction"] == 50 / 1172
    assert scores["fineweb_line_punct_ratio"] == 6 / 11   # 5 lines end in ":", "8" or "y"
    assert scores["fineweb_short_line_ratio"] == 2 / 11   # "See tweets :", "Senate resolves to:"
    assert scores["fineweb_dup_line_char_ratio"] == 50 / 1153
    assert scores["c4_lines_without_terminal_punct_fraction"] == 5 / 11
    assert scores["c4_short_line_fraction"] == 0.0       # both short lines have 3 words
    assert scores["c4_max_word_length"] == len("#TodayInSenatePlenary")
    assert scores["c4_kept_sentence_count"] == 6
    # datatrove: Gopher quality, Gopher repetition and C4 keep it, FineWeb drops it (char_dup_ratio).
    assert failed_rule(scores, DEFAULT_THRESHOLDS) == "fineweb.fineweb_dup_line_char_ratio"
    assert failed_rule(heuristic_scores(gold[GOLD_SHORT]), DEFAULT_THRESHOLDS) == ""


def test_empty_and_blank_documents():
    scores = heuristic_scores("")
    long_document = {name: scores.pop(name) for name in FAMILY_METRICS["long_document"]}
    assert long_document == {"compression_ratio": None, "long_range_recurrence": None}  # not a long document
    assert all(value == 0 for value in scores.values())  # zero denominators give 0.0
    assert failed_rule(scores, DEFAULT_THRESHOLDS) == "gopher_quality.word_count"
    scores = heuristic_scores("\n\n  \n")  # lines "", "  ", "": the empty line repeats
    assert (scores["word_count"], scores["dup_line_fraction"], scores["fineweb_line_punct_ratio"]) == (0, 1 / 3, 0.0)
    assert failed_rule(scores, {"fineweb": DEFAULT_THRESHOLDS["fineweb"]}) == "fineweb.fineweb_line_punct_ratio"


def test_failed_rule_order_and_bounds(gold):
    passing = heuristic_scores(gold[GOLD_SHORT])
    assert failed_rule(passing, DEFAULT_THRESHOLDS) == ""
    both = {**passing, "word_count": 10, "dup_line_fraction": 0.9, "fineweb_line_punct_ratio": 0.0}
    assert failed_rule(both, DEFAULT_THRESHOLDS) == "gopher_quality.word_count"  # families in order
    without_quality = {key: value for key, value in DEFAULT_THRESHOLDS.items() if key != "gopher_quality"}
    assert failed_rule(both, without_quality) == "gopher_repetition.dup_line_fraction"
    assert failed_rule(both, {"fineweb": DEFAULT_THRESHOLDS["fineweb"]}) == "fineweb.fineweb_line_punct_ratio"
    assert failed_rule(both, {}) == ""
    # within a family, datatrove's order: paragraphs before lines
    assert failed_rule({**passing, "dup_line_fraction": 0.5, "dup_para_fraction": 0.5},
                       DEFAULT_THRESHOLDS) == "gopher_repetition.dup_para_fraction"
    # max side, and strict bounds: a value equal to the threshold passes
    assert failed_rule({**passing, "word_count": 100001}, DEFAULT_THRESHOLDS) == "gopher_quality.word_count"
    assert failed_rule({**passing, "hash_to_word_ratio": 0.1}, DEFAULT_THRESHOLDS) == ""
    assert failed_rule({**passing, "hash_to_word_ratio": 0.11}, DEFAULT_THRESHOLDS) == \
        "gopher_quality.hash_to_word_ratio"
    # a rule set to None is off; an unknown family is an error
    custom = {"gopher_quality": {"word_count": None, "stop_word_count": {"min": 2}}}
    assert failed_rule({**passing, "word_count": 1, "stop_word_count": 1}, custom) == "gopher_quality.stop_word_count"
    with pytest.raises(ValueError, match="gopher_qualty"):
        failed_rule(passing, {"gopher_qualty": {}})


def test_score_heuristics_part_rows_in_order_and_deterministic(tmp_path, gold):
    docs = [{"doc_id": "b-repeated", "text": gold[GOLD_REPEATED]}, {"doc_id": "a-empty", "text": ""},
            {"doc_id": "c-short", "text": gold[GOLD_SHORT]}]
    docs_path = tmp_path / "docs.jsonl.zst"
    write_jsonl_zst(docs_path, docs)
    first, count = written_twice(tmp_path, lambda out: score_heuristics_part(str(docs_path), out))
    assert count == 3
    table = read_parquet(first)
    assert table.schema.equals(SCHEMA)
    assert table.column("doc_id").to_pylist() == ["b-repeated", "a-empty", "c-short"]
    rows = table.to_pylist()
    assert {key: rows[0][key] for key in HEURISTIC_COLUMNS} == heuristic_scores(gold[GOLD_REPEATED])
    assert rows[1]["word_count"] == 0 and rows[2]["fineweb_line_punct_ratio"] == 1.0


def test_a_formula_is_one_word_in_a_document_with_math_and_dollars_stay_money_elsewhere():
    text = "The energy is $E = mc^2$ where $$m_0 \\over \\sqrt{1 - v^2/c^2}$$ is the mass, and it costs $5 or $10."
    with_math = {"doc_id": "a", "text": text, "extract_meta": {"math_count": 2}}
    judged = heuristics_text(with_math)
    assert judged.count(FORMULA_WORD) == 2 and "\\sqrt" not in judged and "costs $5 or $10." in judged
    assert heuristic_scores(judged)["alpha_word_fraction"] > heuristic_scores(text)["alpha_word_fraction"]
    assert heuristics_text({**with_math, "extract_meta": {"math_count": 0}}) == text
    assert heuristics_text({"doc_id": "b", "text": text, "extract_meta": None}) == text


def test_the_schema_s_web_profile_is_the_published_set_and_names_every_metric_a_rule_can_test():
    assert schema_defaults("select.heuristics.profiles.web") == DEFAULT_THRESHOLDS
    families = load_schema()["definitions"]["heuristic_thresholds"]["properties"]
    assert {family: list(entry["properties"]) for family, entry in families.items()} == \
        {family: list(metrics) for family, metrics in FAMILY_METRICS.items()}
    # every metric but line_count, which no rule tests: it says which line rules apply (min_lines)
    assert sorted(metric for metrics in FAMILY_METRICS.values() for metric in metrics) == \
        sorted(set(HEURISTIC_COLUMNS) - {"line_count"})


def test_the_first_failing_rule_is_datatrove_s_whatever_order_the_policy_lists_them_in(gold):
    # judge gets the policy as JSON with sorted keys: alpha_word_fraction then comes before word_count
    sorted_keys = json.loads(json.dumps(DEFAULT_THRESHOLDS, sort_keys=True))
    scores = {**heuristic_scores(gold[GOLD_SHORT]), "word_count": 10, "alpha_word_fraction": 0.5}
    assert failed_rule(scores, sorted_keys) == failed_rule(scores, DEFAULT_THRESHOLDS) == "gopher_quality.word_count"
    with pytest.raises(ValueError, match="unknown gopher_quality metrics"):
        failed_rule(scores, {"gopher_quality": {"word_cont": {"min": 5}}})


def test_a_language_s_words_and_stop_words_are_its_own():
    table = load_language_table()
    chinese = "我们在这里讨论的是一个非常重要的问题，他也同意了。"
    scores = heuristic_scores(chinese, "zh", language_stop_words("zh", table))
    # jieba's words, not one character each nor one per sentence: 我们 在 这里 讨论 的 是 一个 非常 重要 的 问题 他 也 同意 了
    assert scores["word_count"] == 15 and 1.5 < scores["mean_word_length"] < 2
    assert scores["stop_word_count"] >= 5  # 的 是 在 了 他 也 ... of the language table's thirty
    russian = "Это было в тот самый день, когда он впервые приехал в город и не знал, что делать."
    assert heuristic_scores(russian, "ru", language_stop_words("ru", table))["stop_word_count"] >= 5
    # English keeps Gopher's eight, case-sensitive as datatrove; a language without reference text has none to count
    assert language_stop_words("en", table) == GOPHER
    assert heuristic_scores("Gàidhlig agus Beurla", "gd", language_stop_words("gd", table))["stop_word_count"] is None
    assert failed_rule({"stop_word_count": None}, {"gopher_quality": {"stop_word_count": {"min": 2}}}) == ""


@pytest.mark.parametrize("text, chars", [
    ("Café au lait über alles " + "ordinary words " * 20, 0),
    ("CafÃ© au lait Ã¼ber alles " + "ordinary words " * 20, 4),  # UTF-8 read as cp1252: two sequences, two each
    # UTF-8 Russian read as cp1251 (Привет мир): twice the 6 characters ftfy's repair removes
    ("РџСЂРёРІРµС‚ РјРёСЂ " + "обычные слова " * 20, 12),
    # UTF-8 Chinese read as GBK, the keyword of the sample's 003338.cn: the runs that decode whole (澳洲, 规的)
    ("婢虫床28鏄?笉鏄??瑙勭殑 " + "正常的中文文本" * 10, 6),
    ("锟斤拷锟斤拷 " + "正常的中文文本" * 10, 6),  # U+FFFD's bytes read as GBK
])
def test_mojibake_is_counted_in_any_script(text, chars):
    assert mojibake_chars(text) == chars


def test_real_chinese_and_japanese_hold_no_mojibake():
    """GBK's byte pairs that happen to be UTF-8 decode to Latin, Greek or Cyrillic, never Han: the
    sample's Chinese and Japanese sentences (18,000 and 9,000 characters) hold none."""
    for lang in ("zh", "ja"):
        text = "\n".join(record["text"] for record in lingua_records(lang))
        assert mojibake_chars(text) == 0


def test_error_pages_in_any_language_are_their_error_lines():
    page = "Table 'usr_web204-06_1.ranglisten_teams_2020' doesn't exist\n\nGeburtsdatum:\nNation:\nAktuelles Team:"
    assert error_line_chars(page) == len("Table 'usr_web204-06_1.ranglisten_teams_2020' doesn't exist")
    assert heuristic_scores(page, "de")["error_line_char_fraction"] > 0.5
    php = "<b>Fatal error</b>: Uncaught Error: Call to undefined function mysql_connect() in /var/www/x.php on line 12"
    assert error_line_chars(php) == len(php)
    prose = "The error in his reasoning was that the table did not exist before the war."
    assert error_line_chars(prose) == 0


def test_a_document_of_fewer_lines_than_min_lines_is_not_judged_by_how_its_lines_end():
    # an excerpt cut out of a longer text: two lines, neither ending in punctuation
    excerpt = ("The council approved the new budget after a long debate in which several members argued that it "
               "was too\n\nand the school would open in autumn, three months later than planned, because the")
    scores = heuristic_scores(excerpt, "en")
    assert scores["line_count"] == 2 and scores["fineweb_line_punct_ratio"] == 0.0
    line_rules = {"fineweb": {"fineweb_line_punct_ratio": {"min": 0.12}}}
    assert failed_rule(scores, line_rules) == "fineweb.fineweb_line_punct_ratio"
    assert failed_rule(scores, line_rules, min_lines=3) == ""
    # the rules of words still judge it
    assert failed_rule({**scores, "word_count": 3}, {**line_rules, **DEFAULT_THRESHOLDS}, min_lines=3) == \
        "gopher_quality.word_count"


# real long documents of the repository: a project's changelog (English, 6,850 words), a Russian listicle (the
# longest gold article, 7,972 words), and underscore.js (code: its words stand for identifiers)
LONG_ARTICLE = "3c6d3381ef52ca26be2fbde19c1b0fe17d85682b726dfecf5e300c1ca34546b1"  # wday.ru, 23 food bloggers
SLATE = "851498a2b9f4f0b578ac9700c245253dbc147a06c0fb3499adebf1c2d5663c29"  # 3,553 words, under the long threshold


def _packaged(tarball: str, member: str) -> str:
    with tarfile.open(REPO / "data/bench/code-repos" / tarball) as archive:
        return archive.extractfile(member).read().decode("utf-8")


@pytest.fixture(scope="module")
def long_documents(gold) -> dict[str, tuple[str, str]]:
    return {"changelog": (_packaged("pypi/attrs-23.1.0.tar.gz", "attrs-23.1.0/CHANGELOG.md"), "en"),
            "listicle": (gold[LONG_ARTICLE], "ru"),
            "code": (_packaged("npm/underscore-1.13.6.tgz", "package/underscore.js"), "en")}


def test_real_long_documents_lie_inside_the_suggested_band_and_a_short_one_is_not_measured(long_documents, gold):
    for name, (text, lang) in long_documents.items():
        scores = heuristic_scores(text, lang)
        assert 0.2 < scores["compression_ratio"] < 0.5, name  # docs/quality-and-safety.md's band for these scripts
        assert 0.2 < scores["long_range_recurrence"] < 0.6, name
    short = heuristic_scores(gold[SLATE])
    assert short["word_count"] < LONG_DOCUMENT_WORDS
    assert (short["compression_ratio"], short["long_range_recurrence"]) == (None, None)


def test_a_long_document_that_repeats_itself_or_is_noise_falls_outside_the_band(gold, long_documents):
    # a real article's text twice over (a page served twice in one record, a text layer doubled): zlib's
    # 32 KiB window sees only part of the repeat, the recurrence sees all of it
    doubled = heuristic_scores("\n\n".join([gold[SLATE]] * 2))
    assert doubled["word_count"] >= LONG_DOCUMENT_WORDS and doubled["long_range_recurrence"] > 0.85
    # a short page repeated until long: boilerplate, nearly all of it compressed away
    assert heuristic_scores("\n\n".join([gold[GOLD_SHORT]] * 120))["compression_ratio"] < 0.05
    # the changelog's characters shuffled: noise of the same letters
    text, _ = long_documents["changelog"]
    characters = list(text)
    random.Random(0).shuffle(characters)
    assert heuristic_scores("".join(characters))["compression_ratio"] > 0.6
    thresholds = {"long_document": {"compression_ratio": {"min": 0.2, "max": 0.5}, "long_range_recurrence": {"max": 0.6}}}
    assert failed_rule(heuristic_scores(text), thresholds) == ""
    assert failed_rule(doubled, thresholds) == "long_document.long_range_recurrence"
    assert failed_rule(heuristic_scores("".join(characters)), thresholds) == "long_document.compression_ratio"
    # without bounds (select.heuristics.long_document's default) no rule is tested
    assert failed_rule(doubled, {"long_document": {"compression_ratio": {"min": None, "max": None}}}) == ""


def test_the_recurrence_counts_the_words_of_the_document_s_language_and_only_where_they_are_words():
    chinese = "\n\n".join(record["text"] for record in lingua_records("zh"))
    scores, segmenter = heuristic_scores_and_segmenter(chinese, "zh", language_stop_words("zh", load_language_table()))
    assert segmenter == "jieba" and scores["long_range_recurrence"] is not None
    # Han characters one by one (jieba failed on the document) are not words: no recurrence, the bytes still compress
    characters = list(chinese.replace("\n", ""))
    fallback, _ = heuristic_scores_and_segmenter(chinese, "zh", GOPHER, (characters, "jieba-failed"))
    assert fallback["long_range_recurrence"] is None and fallback["compression_ratio"] == scores["compression_ratio"]
    syllables, _ = heuristic_scores_and_segmenter(chinese, "bo", GOPHER, (characters, "tibetan_syllables"))
    assert syllables["long_range_recurrence"] is None


def test_long_range_recurrence_counts_returns_past_the_gap_in_each_window():
    window, gap = 10, 4
    # word 0 returns 9 places after its first use, word 1 never, word 2 after 2: of the words first used in
    # the window's first five places (0, 1, 2, 3, 4), one recurs past the gap
    first = np.array([0, 1, 2, 3, 4, 2, 5, 6, 7, 0])
    assert long_range_recurrence(first, window, gap) == 1 / 5
    # two windows: the second is all one word (its only early word recurs); a partial third is left out
    assert long_range_recurrence(np.r_[first, [9] * 10, [0] * 5], window, gap) == (1 / 5 + 1) / 2
    assert long_range_recurrence(first[:9], window, gap) is None
