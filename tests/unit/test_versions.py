"""Versions are manifests: a diff by shard content, and tombstones that outlive deleted data."""

from __future__ import annotations

import json

import pytest

from tests.unit.helpers import SHARD_LIMITS, tokenized_parts
from tokenmill.__main__ import main
from tokenmill.hashing import sha256_file
from tokenmill.io import read_json
from tokenmill.trainer.loader import Loader, LoaderError
from tokenmill.trainer.recipe import validate_recipe
from tokenmill.shards.manifest import build_manifest
from tokenmill.shards.writer import TokenizedPart, write_shards
from tokenmill.tokenize import load_tokenizer, token_dtype


@pytest.fixture(scope="module")
def lingua(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("versions")
    tokenizer, parts, _ = tokenized_parts(tmp, ["de", "fr", "pl"], seed=5)
    return tmp, tokenizer, {part.part: part for part in parts}


def version(root, name, snapshots: dict, tokenizer) -> str:
    """A dataset version: one shard folder per (source, snapshot) (-> its tokenized parts), as the
    workflow lays them out, and its manifest."""
    tok, sha = load_tokenizer(str(tokenizer))
    for (source, snapshot), parts in snapshots.items():
        write_shards(source, snapshot, parts, str(root / name / source / snapshot), 30000, "Apache-2.0", "academic",
                     token_dtype(tok.get_vocab_size()), SHARD_LIMITS)
    manifest = root / name / "manifest.json"
    build_manifest(name, [str(root / name / source / snapshot) for source, snapshot in snapshots], str(manifest),
                   str(root / name / "validation.tsv"), {"sha256": sha}, "c" * 64, "0.1.0")
    return str(manifest)


def files(directory) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in directory.iterdir()}


def test_adding_a_snapshot_writes_only_its_shards_and_the_diff_ships_only_them(lingua, tmp_path, capsys):
    _, tokenizer, parts = lingua
    first = {("lingua", "s1"): [parts["de"], parts["fr"]]}
    recrawl = TokenizedPart("s2", "pl", parts["pl"].path, parts["pl"].select)
    old = version(tmp_path, "v1", first, tokenizer)
    new = version(tmp_path, "v2", {**first, ("lingua", "s2"): [recrawl]}, tokenizer)
    kept = files(tmp_path / "v1" / "lingua" / "s1")
    assert kept == files(tmp_path / "v2" / "lingua" / "s1")  # same names, same bytes in the next version
    assert len(kept) > 5 and any(name.endswith(".bin") for name in kept)
    old_shards, new_shards = read_json(old)["shards"], read_json(new)["shards"]
    assert [s for s in new_shards if s["snapshot"] == "s1"] == old_shards  # the same entries, paths included
    assert main(["manifest-diff", old, new, "--json"]) == 0
    diff = json.loads(capsys.readouterr().out)
    added = [s for s in new_shards if s["snapshot"] == "s2"]
    assert added and [e["path"] for e in diff["added"]] == [s["path"] for s in added]
    assert all(path.startswith("lingua/s2/lingua-s2-") for path in (e["path"] for e in diff["added"]))
    assert diff["removed"] == []
    assert sorted(e["path"] for e in diff["unchanged"]) == sorted(s["path"] for s in old_shards)
    assert diff["bytes"]["added"] == sum(s["bin_bytes"] for s in added)


def test_diff_of_two_versions_that_differ_by_one_source(lingua, tmp_path, capsys):
    _, tokenizer, parts = lingua
    old = version(tmp_path, "v1", {("german", "s1"): [parts["de"]], ("french", "s1"): [parts["fr"]]}, tokenizer)
    new = version(tmp_path, "v2", {("german", "s1"): [parts["de"]], ("french", "s1"): [parts["fr"]],
                                   ("polish", "s1"): [parts["pl"]]}, tokenizer)
    assert main(["manifest-diff", old, new, "--json"]) == 0
    diff = json.loads(capsys.readouterr().out)
    new_shards = read_json(new)["shards"]
    polish = [s for s in new_shards if s["source"] == "polish"]
    assert [e["path"] for e in diff["added"]] == [s["path"] for s in polish] and polish
    assert diff["removed"] == []
    assert len(diff["unchanged"]) == len(new_shards) - len(polish)  # the same bytes: not shipped
    assert diff["bytes"]["added"] == sum(s["bin_bytes"] for s in polish)
    back = json.loads((main(["manifest-diff", new, old, "--json"]), capsys.readouterr().out)[1])
    assert [e["path"] for e in back["removed"]] == [s["path"] for s in polish] and back["added"] == []


def test_a_tombstoned_source_fails_loading_naming_the_tombstone(lingua, tmp_path, capsys):
    _, tokenizer, parts = lingua
    manifest = version(tmp_path, "v1", {("german", "s1"): [parts["de"]], ("french", "s1"): [parts["fr"]]}, tokenizer)
    raw = tmp_path / "french-crawl.warc.gz"
    raw.write_bytes(b"raw bytes of the source taken down")
    recipe = validate_recipe({
        "recipe_id": "r", "manifest_sha256": sha256_file(manifest),
        "tokenizer_sha256": read_json(manifest)["tokenizer"]["sha256"], "seed": 1, "max_skipped_share": 0.5,
        "phases": [{"name": "main", "tokens": 20000, "seq_len": 64, "weights": {"german": 0.5, "french": 0.5},
                    "max_epochs": {"german": 50, "french": 50}}]})
    Loader(recipe, manifest)  # loads before the takedown
    assert main(["tombstone", manifest, "--source", "french", "--reason", "takedown TD-17", "--raw", str(raw)]) == 0
    assert not raw.exists() and not list((tmp_path / "v1" / "french").rglob("*.bin"))
    assert sha256_file(manifest) == recipe["manifest_sha256"]  # the old version's record is unchanged
    tombstones = read_json(tmp_path / "v1" / "tombstones.json")["tombstones"]
    french = [s for s in read_json(manifest)["shards"] if s["source"] == "french"]
    assert [(t["path"], t["bin_sha256"], t["bin_bytes"]) for t in tombstones] == \
        sorted((s["path"], s["bin_sha256"], s["bin_bytes"]) for s in french)  # tombstones.json is by path
    assert tombstones[0]["raw_files"][0]["bytes"] == len(b"raw bytes of the source taken down")
    with pytest.raises(LoaderError, match=r"shards of french were deleted on .* \(takedown TD-17\); tombstone of "
                                          r"french/s1/french-s1-[0-9a-f]{16}"):
        Loader(recipe, manifest)
    german_only = validate_recipe({**recipe, "phases": [{**recipe["phases"][0], "weights": {"german": 1.0},
                                                         "max_epochs": {"german": 50}}]})
    assert Loader(german_only, manifest).total_samples > 0  # what was not taken down still loads
