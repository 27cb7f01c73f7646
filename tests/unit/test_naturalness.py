"""Naturalness: the model fitted on native speakers' labels, its pin, its transfer to languages it was
not fitted on, and what it says of real text: articles in many languages, and the web spam of the sample."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from tests.conftest import REPO, lingua_records
from tokenmill.config import schema_defaults
from tokenmill.extract.html import decode_html, extract_main_text
from tokenmill.hashing import sha256_file
from tokenmill.languages import load_language_table
from tokenmill.quality.naturalness import (CHUNK_CHARS, FEATURES, ModelError, _token_starts, _vocabulary_measures,
                                           chunk_features, chunks, configured_model, document_features, load_model,
                                           model_inputs, naturalness)
from tokenmill.words import unicode_words
from tokenmill.quality.naturalness_train import auc, read_labels, train_naturalness

LABELS = REPO / "data" / "train" / "naturalness" / "hplt-dev.jsonl.gz"
MODEL = REPO / "data" / "models" / "naturalness" / "model.json"


def test_the_committed_model_is_what_its_labels_fit_and_its_pin():
    """train-naturalness fits the same bytes twice, and they are the committed model's, which the
    schema pins; leave-one-language-out, it ranks unnatural text under natural text in every
    labelled language, each scored by a model that never saw it."""
    table = load_language_table()
    model = train_naturalness(str(LABELS), table, str(MODEL.parent / "refit.json.tmp"))
    refit = MODEL.parent / "refit.json.tmp"
    try:
        assert refit.read_bytes() == MODEL.read_bytes()
    finally:
        refit.unlink()
    assert sha256_file(MODEL) == schema_defaults("quality.naturalness")["sha256"]
    validation = model["validation"]["leave_one_language_out_auc"]
    assert set(validation) == {"ast_Latn", "eng_Latn", "pes_Arab", "rus_Cyrl"}
    assert min(validation.values()) > 0.75 and np.median(list(validation.values())) > 0.85
    # each coefficient keeps the sign that running text gives its feature
    signs = dict(zip(FEATURES, np.sign(model["coefficients"])))
    assert signs["stop_share"] >= 0 and signs["ttr"] >= 0 and signs["separators"] <= 0 and signs["duplication"] <= 0


def test_a_model_that_is_missing_altered_or_of_other_features_is_an_error_naming_the_key(tmp_path):
    with pytest.raises(ModelError, match="quality.naturalness.model: no model at"):
        load_model(str(tmp_path / "none.json"))
    altered = tmp_path / "model.json"
    altered.write_text(MODEL.read_text().replace('"intercept": ', '"intercept": 1'))
    with pytest.raises(ModelError, match="quality.naturalness.sha256 pins"):
        configured_model({"model": str(altered), "sha256": schema_defaults("quality.naturalness")["sha256"]})
    other = tmp_path / "other.json"
    other.write_text(MODEL.read_text().replace('"symbols"', '"emoji"'))
    with pytest.raises(ModelError, match="fit it again"):
        load_model(str(other))


def test_a_document_is_read_in_chunks_without_its_table_rows():
    text = "\n".join(["A line of prose that goes on for a while, as prose does."] * 40
                     + ["| cell | 1999 |", "| cell | 2000 |"] + ["Another paragraph of running text."] * 20)
    pieces = chunks(text)
    assert len(pieces) > 1 and all(len(piece) >= CHUNK_CHARS for piece in pieces[:-1])
    assert "\n".join(pieces) == "\n".join(line for line in text.split("\n") if not line.startswith("|"))
    assert chunks("| a | b |\n| c | d |") == [] and chunks("short text") == ["short text"]


def test_a_document_segmented_once_has_the_features_of_its_chunks_segmented_one_by_one():
    """The score job segments a document once and gives each chunk the words that start in it: in a
    language written with spaces, the same features as each chunk read alone (table rows dropped)."""
    text = "\n".join([f"Item {n} | Home » News » Sport | a line of prose with {n} words, as prose has." for n in range(60)]
                     + ["| cell | 1999 |"] + ["Another paragraph of running text, long enough to count."] * 30)
    stop_words = load_language_table().entry("en").stop_words
    assert [features for _, features in document_features(text, "en", stop_words)] == \
        [chunk_features(piece, "en", stop_words) for piece in chunks(text)]


def test_the_vocabulary_measures_of_a_batch_are_each_piece_s_own():
    """ttr and duplication counted over a batch's pieces at once are each piece's by their definitions
    (windows of 50 words every 25; 5-grams scanned left to right, a repeat counted and jumped past)."""
    def ttr(words: list[int]) -> float:
        if not words:
            return 0.0
        if len(words) < 50:
            return len(set(words)) / len(words)
        starts = range(0, len(words) - 50 + 1, 25)
        return sum(len(set(words[start:start + 50])) for start in starts) / (50 * len(starts))

    def duplication(words: list[int], lengths: list[int]) -> float:
        grams = list(zip(*(words[offset:] for offset in range(5))))
        ends = [0, *np.cumsum(lengths).tolist()]
        seen, repeated, position = set(), 0, 0
        while position < len(grams):
            if grams[position] in seen:
                repeated += ends[position + 5] - ends[position]
                position += 5
            else:
                seen.add(grams[position])
                position += 1
        return repeated / ends[-1] if ends[-1] else 0.0

    random = np.random.default_rng(7)
    for vocabulary_size in (3, 20, 400):
        sizes = random.choice([0, 1, 4, 5, 6, 49, 50, 51, 74, 75, 76, 170, 400], size=40)
        words = random.integers(0, vocabulary_size, size=int(sizes.sum()))
        word_lengths = random.integers(0, 4, size=vocabulary_size)  # a word may be empty: a piece of no characters
        ends = np.cumsum(sizes)
        ttrs, duplications = _vocabulary_measures(words, word_lengths[words], ends)
        pieces = np.split(words, ends[:-1])
        assert ttrs == [ttr(piece.tolist()) for piece in pieces]
        assert duplications == [duplication(piece.tolist(), word_lengths[piece].tolist()) for piece in pieces]


def test_token_starts_are_where_a_search_from_the_last_token_s_end_finds_each():
    def searched(text: str, tokens: list[str]) -> list[int] | None:
        starts, position = [], 0
        for token in tokens:
            position = text.find(token, position)
            if position < 0:
                return None
            starts.append(position)
            position += len(token)
        return starts

    def starts(text: str, tokens: list[str]) -> list[int] | None:
        found = _token_starts(text, tokens, np.array([len(token) for token in tokens], dtype=np.int64))
        return None if found is None else found.tolist()

    texts = [" Twenty\u3000words, 3.5 of them\xa0here\t(in a line)...\n\nand e-mail: a@b.com ", "", "   ",
             "नमस्ते दुनिया\u2028दूसरी पंक्ति", "abc abc  abc\x1c\x1dabc"]
    for text in texts:
        tokens = unicode_words(text)
        assert starts(text, tokens) == searched(text, tokens)
    # tokens that are not the text's non-space characters: a segmenter that splits, drops or rewrites
    text = "ab ab ab"
    for tokens in (["a", "b", "ab"], ["ab", "ab"], ["b", "ab"], ["", "ab", "", "ab", "ab"], ["ab", "AB"]):
        assert starts(text, tokens) == searched(text, tokens)


def score(text: str, lang: str) -> float:
    table = load_language_table()
    return naturalness(text, lang, load_model(None), table.entry(lang))[0]


def test_running_text_scores_above_lists_and_stuffing_in_languages_the_model_was_not_fitted_on():
    """Real sentences of German, Turkish, Chinese and Hindi (none among the labels) against the same
    words made into a tag list and into keyword stuffing."""
    for lang in ("de", "tr", "zh", "hi"):
        text = " ".join(record["text"] for record in lingua_records(lang)[:3])[:1200]
        words = text.split() if lang != "zh" else [text[i:i + 3] for i in range(0, len(text), 3)]
        tag_list = " | ".join(words[:120])
        stuffing = " ".join([" ".join(words[:4])] * 30)
        assert score(text, lang) > 0.7, lang
        assert score(tag_list, lang) < 0.3 and score(stuffing, lang) < 0.3, lang


def test_an_article_is_judged_by_its_lead_when_lists_follow_it():
    """baike.baidu.com's page of trafilatura's evaluation set: a biography, then long lists of awards
    and references (blockml keeps them): the lists' chunks score low, the lead is prose."""
    html = gzip.open(REPO / "data/bench/html-trafilatura-eval/html/baike.baidu.com.tanya.html.gz", "rb").read()
    settings = {**schema_defaults("extract"), "fields": schema_defaults("sources.source.fields")}
    page = extract_main_text(decode_html(html, None).text, None, settings).text
    entry, model = load_language_table().entry("zh"), load_model(None)
    probabilities = [model.probability(model_inputs(features, entry.reference))[0]
                     for _, features in document_features(page, "zh", entry.stop_words)]
    assert min(probabilities) < 0.2 and probabilities[0] > 0.7
    assert score(page, "zh") == pytest.approx(probabilities[0])
    assert score(page, "zh") > schema_defaults("select")["min_naturalness"]


def test_auc_is_the_chance_a_positive_scores_above_a_negative():
    assert auc(np.array([0.9, 0.8, 0.1, 0.2]), np.array([1, 1, 0, 0])) == 1.0
    assert auc(np.array([0.5, 0.5]), np.array([1, 0])) == 0.5
    assert auc(np.array([0.1, 0.9, 0.4]), np.array([1, 0, 0])) == 0.0


def test_the_labels_are_the_shared_data_s():
    rows = read_labels(str(LABELS))
    assert len(rows) == 1200 and sum(row["unnatural"] for row in rows) == 246
    assert {row["lang"] for row in rows} == {"rus_Cyrl", "pes_Arab", "ast_Latn", "eng_Latn"}
