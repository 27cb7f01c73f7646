"""Shard validation: real shards from the real writer; a failing shard is left out of the manifest."""

from __future__ import annotations

import csv
import struct
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from tests.unit.helpers import tokenized_parts, write_selection
from tokenmill.config import schema_settings
from tokenmill.hashing import sha256_file
from tokenmill.io import read_json, write_parquet
from tokenmill.trainer.loader import Loader
from tokenmill.shards.manifest import build_manifest
from tokenmill.shards.megatron import MegatronReader
from tokenmill.trainer.recipe import RecipeError, validate_recipe
from tokenmill.shards.validation import (CHECKS, ValidationLimits, expected_sampling_distance, language_distance,
                                        token_statistics, validate_shard)
from tokenmill.shards.writer import TokenizedPart, write_shards
from tokenmill.hashing import keyed_hash64, seed_key
from tokenmill.tokenize import EOD_TOKEN, load_tokenizer, token_dtype

LANGS = ["de", "fr", "pl"]
SEED = 7
STUCK_TOKEN = 7
LIMITS = schema_settings(ValidationLimits, "shards.validation")


@pytest.fixture(scope="module")
def lingua(tmp_path_factory):
    """Real tokenized text of three languages, and the tokenizer it was tokenized with."""
    tmp = tmp_path_factory.mktemp("validation")
    tokenizer, parts, _ = tokenized_parts(tmp, LANGS, SEED)
    return tmp, tokenizer, parts


def tokenized_part(directory, name, documents: list[np.ndarray], tokenizer) -> TokenizedPart:
    """A tokenized part (tokenize's own layout) and its selection, from token arrays."""
    tok, sha = load_tokenizer(str(tokenizer))
    doc_ids = [f"{name}-{i}" for i in range(len(documents))]
    keys = np.array([keyed_hash64(seed_key(SEED), doc_id) for doc_id in doc_ids], dtype=np.uint64)
    order = np.argsort(keys, kind="stable")
    table = pa.Table.from_pydict({
        "shuffle_key": pa.array(keys[order], pa.uint64()),
        "row": pa.array(order, pa.int64()),
        "doc_id": [doc_ids[i] for i in order],
        "n_tokens": pa.array([len(documents[i]) for i in order], pa.int64()),
        "group_id": pa.nulls(len(order), pa.string()), "group_pos": pa.nulls(len(order), pa.int32()),
        "tokens": pa.array([documents[i].tolist() for i in order], pa.large_list(pa.uint16())),
    }).replace_schema_metadata({"tokenizer_sha256": sha, "seed": str(SEED), "eod_id": str(tok.token_to_id(EOD_TOKEN))})
    tokens, select = directory / f"{name}.tokens.parquet", directory / f"{name}.select.parquet"
    write_parquet(tokens, table)
    write_selection(select, doc_ids, ["x"] * len(documents), "en")
    return TokenizedPart("s1", name, str(tokens), str(select))


def shards_of(directory, source, parts, tokenizer, target=20000):
    """The shards of `source`'s one snapshot s1, in directory/source."""
    tok, _ = load_tokenizer(str(tokenizer))
    return write_shards(source, "s1", parts, str(directory / source), target, "Apache-2.0", "academic",
                        token_dtype(tok.get_vocab_size()), LIMITS)


def manifest_of(directory, sources, tokenizer):
    _, sha = load_tokenizer(str(tokenizer))
    return build_manifest("v1", [str(directory / source) for source in sources], str(directory / "manifest.json"),
                          str(directory / "validation.tsv"), {"sha256": sha}, "c" * 64, "0.1.0")


def test_shards_of_real_text_pass_every_check_and_are_all_listed(lingua, tmp_path):
    _, tokenizer, parts = lingua
    metas = shards_of(tmp_path, "lingua", parts, tokenizer)
    assert len(metas) > 2
    for meta in metas:
        validation = read_json(tmp_path / "lingua" / f"{meta['name']}.meta.json")["validation"]
        assert validation == meta["validation"] and validation["passed"], validation
        checks = validation["checks"]
        assert list(checks) == list(CHECKS)
        assert checks["token_count"]["value"] == checks["token_count"]["limit"] == meta["n_tokens"]
        assert checks["repeated_run"]["value"] < 50 and checks["token_entropy_bits"]["value"] > 8
        assert checks["top_token_share"]["value"] < 0.1 and checks["lang_distance"]["value"] < 0.5
    manifest = manifest_of(tmp_path, ["lingua"], tokenizer)
    assert len(manifest["shards"]) == len(metas) and manifest["excluded_shards"] == []
    assert manifest["sources"]["lingua"]["excluded_shards"] == 0


def test_a_shard_of_one_repeated_token_is_left_out_of_the_manifest_with_its_reasons(lingua, tmp_path):
    _, tokenizer, parts = lingua
    eod = load_tokenizer(str(tokenizer))[0].token_to_id(EOD_TOKEN)
    stuck = tokenized_part(tmp_path, "stuck", [np.append(np.full(5000, STUCK_TOKEN), eod)], tokenizer)
    good = shards_of(tmp_path, "lingua", parts, tokenizer)
    [bad] = shards_of(tmp_path, "stuck", [stuck], tokenizer)
    checks = bad["validation"]["checks"]
    assert not bad["validation"]["passed"]
    assert checks["repeated_run"] == {"value": 5000, "limit": 1000, "passed": False, "token": STUCK_TOKEN}
    assert checks["top_token_share"]["value"] == round(5000 / 5001, 6) and not checks["top_token_share"]["passed"]
    assert checks["token_entropy_bits"]["value"] < 0.01 and not checks["token_entropy_bits"]["passed"]
    assert checks["token_count"]["passed"] and checks["lang_distance"]["passed"]

    manifest = manifest_of(tmp_path, ["lingua", "stuck"], tokenizer)
    assert [s["path"] for s in manifest["shards"]] == [f"lingua/{m['name']}" for m in good]
    [excluded] = manifest["excluded_shards"]
    assert excluded["source"] == "stuck" and excluded["snapshot"] == "s1" and excluded["n_docs"] == 1
    assert excluded["name"] == bad["name"] and excluded["path"] == f"stuck/{bad['name']}"
    assert excluded["reasons"] == ["repeated_run=5000 (limit 1000)",
                                   f"token_entropy_bits={checks['token_entropy_bits']['value']} (limit 2.0)",
                                   f"top_token_share={round(5000 / 5001, 6)} (limit 0.3)"]
    assert manifest["sources"]["stuck"] == {"tier": "academic", "shards": 0, "n_docs": 0, "n_tokens": 0, "excluded_shards": 1}
    assert manifest["n_tokens"] == sum(m["n_tokens"] for m in good) == manifest["sources"]["lingua"]["n_tokens"]

    with open(tmp_path / "validation.tsv", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    assert [(r["snapshot"], r["shard"], r["passed"]) for r in rows] == \
        [("s1", m["name"], "True") for m in good] + [("s1", bad["name"], "False")]
    assert rows[-1]["repeated_run"] == "5000"
    assert rows[-1]["failed"] == "repeated_run,token_entropy_bits,top_token_share"

    recipe = validate_recipe({
        "recipe_id": "r", "manifest_sha256": sha256_file(tmp_path / "manifest.json"),
        "tokenizer_sha256": manifest["tokenizer"]["sha256"], "seed": 1, "max_skipped_share": 0.5,
        "phases": [{"name": "main", "tokens": 1000, "seq_len": 16, "weights": {"lingua": 0.5, "stuck": 0.5},
                    "max_epochs": {"lingua": 10, "stuck": 10}}]})
    with pytest.raises(RecipeError, match=r"every shard of 'stuck' failed validation .*repeated_run=5000"):
        Loader(recipe, tmp_path / "manifest.json")


def test_an_index_that_disagrees_with_its_bin_fails_the_token_count(lingua, tmp_path):
    _, tokenizer, parts = lingua
    meta = shards_of(tmp_path, "lingua", parts[:1], tokenizer, target=10 ** 9)[0]
    prefix = tmp_path / "lingua" / meta["name"]
    index = bytearray((tmp_path / "lingua" / meta["idx"]["path"]).read_bytes())
    first_length, = struct.unpack_from("<i", index, 34)  # header, version, dtype, two counts: then the lengths
    struct.pack_into("<i", index, 34, first_length + 3)
    (tmp_path / "lingua" / meta["idx"]["path"]).write_bytes(bytes(index))
    validation = validate_shard(prefix, Counter(de=meta["n_docs"]), Counter(de=meta["n_docs"]), LIMITS)
    assert not validation["passed"]
    assert validation["checks"]["token_count"] == {"value": meta["n_tokens"], "limit": meta["n_tokens"] + 3,
                                                   "passed": False}


def test_chunked_statistics_equal_the_whole_array_at_once(lingua, tmp_path):
    _, tokenizer, parts = lingua
    eod = load_tokenizer(str(tokenizer))[0].token_to_id(EOD_TOKEN)
    runs = [np.append(np.full(n, 40 + n), eod) for n in (3, 17, 9)]  # the 17-run straddles chunk boundaries
    meta = shards_of(tmp_path, "runs", [tokenized_part(tmp_path, "runs", runs, tokenizer)], tokenizer)[0]
    prefix = tmp_path / "runs" / meta["name"]
    tokens = np.asarray(MegatronReader(prefix).array)
    counts = np.bincount(tokens)
    shares = counts[counts > 0] / len(tokens)
    for chunk in (1, 2, 5, 7, 1 << 22):
        stats = token_statistics(prefix, chunk_tokens=chunk)
        assert (stats.longest_run, stats.longest_run_token) == (17, 57)
        assert stats.entropy_bits == pytest.approx(float(-(shares * np.log2(shares)).sum()))
        assert (stats.top_token, stats.top_token_share) == (57, 17 / len(tokens))
        assert stats.bin_tokens == stats.index_tokens == len(tokens) == 32


def test_language_distance_tolerates_sampling_but_not_a_skewed_shard():
    rng = np.random.default_rng(0)
    source_langs = np.repeat(np.array(["en", "de", "fr", "pl", "ja"]), [6000, 2000, 1000, 700, 300])
    source = Counter(source_langs.tolist())
    limits = LIMITS
    for size in (20, 200, 2000):
        allowed = limits.max_lang_distance + limits.lang_sampling_allowance * expected_sampling_distance(size, source)
        failures = sum(language_distance(Counter(rng.choice(source_langs, size, replace=False).tolist()), source)
                       > allowed for _ in range(200))
        assert failures <= 1, size
    assert language_distance(source, source) == 0 and expected_sampling_distance(10_000, source) == 0
    without_english = Counter({lang: count for lang, count in source.items() if lang != "en"})
    skewed = language_distance(without_english, source)
    assert skewed == pytest.approx(0.6)
    assert skewed > limits.max_lang_distance + limits.lang_sampling_allowance * expected_sampling_distance(
        sum(without_english.values()), source)


def test_the_language_check_compares_a_shard_with_its_own_snapshot(lingua, tmp_path):
    """A source whose snapshots differ in language: each snapshot's shards match the selection
    they were cut from (against the whole source, each would be half a language off)."""
    _, tokenizer, parts = lingua
    tok, _ = load_tokenizer(str(tokenizer))
    german, french = parts[0], TokenizedPart("s2", parts[1].part, parts[1].path, parts[1].select)
    metas = [meta for snapshot, part in (("s1", german), ("s2", french))
             for meta in write_shards("lingua", snapshot, [part], str(tmp_path / snapshot), 20000, "Apache-2.0",
                                      "academic", token_dtype(tok.get_vocab_size()), LIMITS)]
    assert {meta["snapshot"] for meta in metas} == {"s1", "s2"}
    for meta in metas:
        assert meta["validation"]["checks"]["lang_distance"]["value"] == 0 and meta["validation"]["passed"]
