"""MinHash signatures, LSH banding and connected components on real documents."""

from __future__ import annotations

import dataclasses
import glob
import math

import numpy as np
import pytest

from tests.conftest import sample
from tests.unit.helpers import RESILIPARSE_SETTINGS
from tokenmill.config import schema_settings
from tokenmill.dedup.minhash import (MinHashParams, Shingler, band_hashes, candidate_probability, estimated_jaccard,
                                     signatures)
from tokenmill.dedup.normalize import (content_hash, line_hashes, normalize_for_dedup, normalize_line,
                                      normalized_lines, tokens)
from tokenmill.extract.part import extract_part
from tokenmill.extract.records import PartInfo
from tokenmill.io import read_jsonl_zst

PARAMS = schema_settings(MinHashParams, "minhash")


@pytest.fixture(scope="module")
def real_docs(tmp_path_factory):
    """Long real documents: the article pages and the Arabic, German, English and Spanish sentence runs."""
    tmp = tmp_path_factory.mktemp("docs")
    texts = []
    inputs = [(p, "warc") for p in sorted(glob.glob(sample("warc", "aeb-articles", "*.warc.gz")))]
    inputs += [(sample("jsonl", "lingua-sentences", "lingua-ar-de-en-es.jsonl.gz"), "jsonl")]
    for i, (path, kind) in enumerate(inputs):
        out = tmp / f"{i}.jsonl.zst"
        extract_part(path, kind, PartInfo("s", "x", str(i), "crawl", "x"), RESILIPARSE_SETTINGS, str(out),
                     str(tmp / f"{i}.q.jsonl.zst"), str(tmp / f"{i}.json"))
        texts += [doc["text"] for doc in read_jsonl_zst(out) if len(tokens(normalize_for_dedup(doc["text"]))) >= 200]
    return texts


def shingle_set(text: str) -> set[int]:
    return set(Shingler(PARAMS.ngram).shingles(normalize_for_dedup(text)).tolist())


def exact_jaccard(a: str, b: str) -> float:
    x, y = shingle_set(a), shingle_set(b)
    return len(x & y) / len(x | y)


def edited(text: str, fraction: float, rng: np.random.Generator) -> str:
    """Replace a fraction of the words (real edits: the words come from the text itself)."""
    words = text.split(" ")
    for index in rng.choice(len(words), size=int(fraction * len(words)), replace=False):
        words[index] = words[rng.integers(len(words))]
    return " ".join(words)


def test_normalization():
    assert normalize_line("  Héllo\u00a0  WORLD\t ") == "héllo world"
    assert normalize_line("-- * --") == "" and normalize_line("") == ""
    assert normalize_for_dedup("A  b\n\n---\nＣ") == "a b\nc"  # NFKC folds the full-width letter
    assert content_hash("Hello   World\n\n") == content_hash("hello world")
    assert content_hash("hello world") != content_hash("hello, world")
    hashes = line_hashes("Menu\n\n***\nMenu")
    assert hashes[1] == hashes[2] == 0 and hashes[0] == hashes[3] != 0
    # a text's lines (split at line ends) are each normalize_line's, whatever whitespace or unprintable
    # character they hold
    odd = [chr(code) for code in range(0x3001) if code != 10 and (chr(code).isspace() or not chr(code).isprintable())]
    lines = ["plain words here", " lead", "trail ", "two  spaces", *(f"a{char}b {char}c{char}" for char in odd)]
    assert normalized_lines("\n".join(lines)) == [normalize_line(line) for line in lines]


def test_shingles_and_short_documents():
    shingler = Shingler(5)
    assert len(shingler.shingles("one two three four five six seven")) == 3
    short = shingler.shingles("too short")
    assert len(short) == 1 and short[0] != shingler.shingles("also short")[0]
    assert len(shingler.shingles("")) == 1  # even an empty text has a defined signature
    assert tokens("東京は晴れ です abc") == ["東", "京", "は", "晴", "れ", "で", "す", "abc"]


def test_identical_and_trivially_different_texts_have_equal_signatures(real_docs):
    text = real_docs[0]
    variant = text.upper().replace(" ", "  ")
    shingler = Shingler(PARAMS.ngram)
    sig = signatures([shingler.shingles(normalize_for_dedup(t)) for t in (text, text, variant)], PARAMS)
    assert np.array_equal(sig[0], sig[1]) and np.array_equal(sig[0], sig[2])
    assert sig.dtype == np.uint64 and sig.shape == (3, PARAMS.permutations)


def test_estimated_jaccard_is_within_three_standard_errors(real_docs):
    rng = np.random.default_rng(3)
    shingler = Shingler(PARAMS.ngram)
    errors, outside = [], 0
    pairs = [(text, edited(text, fraction, rng)) for text in real_docs[:120] for fraction in (0.02, 0.08, 0.2)]
    sets = [shingler.shingles(normalize_for_dedup(t)) for pair in pairs for t in pair]
    sig = signatures(sets, PARAMS)
    for i, (a, b) in enumerate(pairs):
        truth = exact_jaccard(a, b)
        estimate = estimated_jaccard(sig[2 * i], sig[2 * i + 1])
        standard_error = math.sqrt(max(truth * (1 - truth), 1e-9) / PARAMS.permutations)
        errors.append(estimate - truth)
        outside += abs(estimate - truth) > 3 * max(standard_error, 1 / PARAMS.permutations)
    assert outside <= 0.01 * len(pairs) + 1, f"{outside} of {len(pairs)} estimates outside 3 SE"
    assert abs(np.mean(errors)) < 0.01  # unbiased


def test_candidate_probability_follows_the_s_curve(real_docs):
    """Share of pairs that share a band vs 1-(1-s^r)^b, at several similarities."""
    rng = np.random.default_rng(5)
    shingler = Shingler(PARAMS.ngram)
    for fraction in (0.01, 0.03, 0.06, 0.1):
        pairs = [(text, edited(text, fraction, rng)) for text in real_docs]
        sig = signatures([shingler.shingles(normalize_for_dedup(t)) for pair in pairs for t in pair], PARAMS)
        bands = band_hashes(sig, PARAMS.bands, PARAMS.rows)
        hit = np.any(bands[0::2] == bands[1::2], axis=1)
        expected = np.array([candidate_probability(exact_jaccard(a, b), PARAMS.bands, PARAMS.rows) for a, b in pairs])
        tolerance = 3 * math.sqrt(max(expected.mean() * (1 - expected.mean()), 0.01) / len(pairs)) + 0.03
        assert abs(hit.mean() - expected.mean()) <= tolerance, (fraction, hit.mean(), expected.mean())


def test_band_settings_are_validated():
    with pytest.raises(ValueError, match="exceeds permutations"):
        dataclasses.replace(PARAMS, permutations=64, bands=14, rows=8)
    assert abs(PARAMS.threshold - (1 / 14) ** (1 / 8)) < 1e-12
