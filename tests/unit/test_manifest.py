"""The manifest pins the tokenizer: a copy beside the manifest, named by a path relative to it,
whose sha256 is the pin; a copy that differs and shards of another tokenizer are refused."""

from __future__ import annotations

import csv
import json

import pytest

from tests.unit.helpers import SHARD_LIMITS, tokenized_parts
from tokenmill.hashing import sha256_file
from tokenmill.io import read_json
from tokenmill.shards.manifest import VALIDATION_COLUMNS, copy_tokenizer, publish_manifest
from tokenmill.shards.writer import write_shards
from tokenmill.tokenize import EOD_TOKEN, load_tokenizer, token_dtype

LANGS = ["de", "fr"]
SEED = 5
VERSION_DIR = "results/shards/v1"  # relative, as the workflow passes its paths


@pytest.fixture(scope="module")
def sharded(tmp_path_factory):
    """A real tokenizer, the shards of one snapshot tokenized with it, and the same tokenizer
    saved with other whitespace: the same vocabulary, another sha256."""
    tmp = tmp_path_factory.mktemp("manifest")
    tokenizer, parts, _ = tokenized_parts(tmp, LANGS, SEED)
    tok, _ = load_tokenizer(str(tokenizer))
    shard_dir = tmp / VERSION_DIR / "lingua" / "s1"
    metas = write_shards("lingua", "s1", parts, str(shard_dir), 20000, "Apache-2.0", "academic",
                         token_dtype(tok.get_vocab_size()), SHARD_LIMITS)
    resaved = tmp / "resaved-tokenizer.json"
    resaved.write_text(json.dumps(json.loads(tokenizer.read_text(encoding="utf-8")), indent=1), encoding="utf-8")
    return tmp, tokenizer, resaved, metas


def publish(tokenizer, manifest: str = "manifest.json", copy: str = "tokenizer.json") -> dict:
    return publish_manifest("v1", str(tokenizer), f"{VERSION_DIR}/{copy}", [f"{VERSION_DIR}/lingua/s1"],
                            f"{VERSION_DIR}/{manifest}", f"{VERSION_DIR}/validation.tsv", "c" * 64, "0.1.0")


def test_the_manifest_pins_the_copy_beside_it_by_a_relative_path(sharded, monkeypatch):
    tmp, tokenizer, _, metas = sharded
    monkeypatch.chdir(tmp)
    manifest = publish(tokenizer)
    pins = manifest["tokenizer"]
    assert pins["path"] == "tokenizer.json"
    copy = tmp / VERSION_DIR / pins["path"]
    assert sha256_file(copy) == pins["sha256"] == sha256_file(tokenizer)
    tok, _ = load_tokenizer(str(copy))
    assert pins["vocab_size"] == tok.get_vocab_size() and pins["eod_token"] == EOD_TOKEN
    assert pins["eod_id"] == tok.token_to_id(EOD_TOKEN) == metas[0]["eod_id"]  # the id that ends every document
    assert read_json(tmp / VERSION_DIR / "manifest.json") == manifest
    assert [shard["path"] for shard in manifest["shards"]] == [f"lingua/s1/{meta['name']}" for meta in metas]
    with open(tmp / VERSION_DIR / "validation.tsv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    assert list(rows[0]) == VALIDATION_COLUMNS and [row["shard"] for row in rows] == [m["name"] for m in metas]


def test_a_copy_in_another_directory_is_named_relative_to_the_manifest(sharded, monkeypatch):
    tmp, tokenizer, _, _ = sharded
    monkeypatch.chdir(tmp)
    manifest = publish(tokenizer, manifest="published/manifest.json", copy="pins/tokenizer.json")
    assert manifest["tokenizer"]["path"] == "../pins/tokenizer.json"
    assert sha256_file(tmp / VERSION_DIR / "published" / manifest["tokenizer"]["path"]) == manifest["tokenizer"]["sha256"]


def test_a_copy_that_differs_from_the_pin_is_refused_and_not_left_behind(sharded, tmp_path):
    _, tokenizer, resaved, _ = sharded
    with pytest.raises(ValueError, match="has sha256 .*, the manifest pins " + sha256_file(tokenizer)):
        copy_tokenizer(str(resaved), sha256_file(tokenizer), str(tmp_path / "tokenizer.json"))
    assert list(tmp_path.iterdir()) == []


def test_shards_of_another_tokenizer_are_refused(sharded, monkeypatch):
    tmp, _, resaved, _ = sharded
    monkeypatch.chdir(tmp)
    with pytest.raises(ValueError, match=f"manifest pins {sha256_file(resaved)}"):
        publish(resaved, manifest="refused/manifest.json")
    assert not (tmp / VERSION_DIR / "refused" / "manifest.json").exists()
