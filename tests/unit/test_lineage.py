"""Lineage over a small real dataset version: every token of a stream leads back to its document
in the shard and to the extracted record it was tokenized from (and to the records it derives from)."""

from __future__ import annotations

import shutil

import pyarrow.parquet as pq
import pytest

from tests.unit.test_reader import SOURCE, dataset_version, pins, whole_source
from tokenmill.io import read_jsonl_zst, write_jsonl_zst
from tokenmill.shards.megatron import MegatronReader
from tokenmill.trainer.lineage import Lineage
from tokenmill.trainer.loader import Loader
from tokenmill.trainer.reader import LoaderError, ShardReader
from tokenmill.trainer.recipe import validate_recipe

RECORD_FIELDS = ("doc_id", "source", "url", "fetch_ts", "license_id", "derived_from")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A version, with each part's extracted documents where the workflow writes them:
    results/extract/docs/{source}/{snapshot}/{part}.jsonl.zst beside results/shards/."""
    tmp = tmp_path_factory.mktemp("lineage")
    manifest, docs = dataset_version(tmp)
    for part, path in docs.items():
        target = docs_file(manifest, part)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    return tmp / "results"


@pytest.fixture
def version(built, tmp_path):
    """A copy of the built version's results, to change."""
    shutil.copytree(built, tmp_path / "results")
    return tmp_path / "results" / "shards" / "v1" / "manifest.json"


def docs_file(manifest, part: str):
    return manifest.parent.parent.parent / "extract" / "docs" / SOURCE / "s1" / f"{part}.jsonl.zst"


def test_every_document_s_tokens_lead_back_to_it_and_to_its_record(version):
    reader = ShardReader(pins(version), version)
    stream = whole_source(reader)
    every_token = reader.packed(stream, 0, stream.tokens)[0]
    lineage = Lineage(reader.root, reader.shards)
    records = {part: list(read_jsonl_zst(docs_file(version, part))) for part in ("de", "fr")}
    seen = set()
    for document in range(len(stream.documents)):
        begin, end = int(stream.starts[document]), int(stream.starts[document + 1])
        for offset in (begin, (begin + end) // 2, end - 1):
            found = lineage.origin(stream, offset)
            assert found["token_in_document"] == offset - begin
            tokens = MegatronReader(reader.root / found["shard"])[found["document_in_shard"]]
            assert tokens[found["token_in_document"]] == every_token[offset]
            listed = pq.read_table(reader.root / f"{found['shard']}.docs.parquet").to_pylist()[found["document_in_shard"]]
            record = records[listed["part"]][listed["row"]]
            assert record["doc_id"] == listed["doc_id"]
            assert {key: found[key] for key in RECORD_FIELDS} == {key: record.get(key) for key in RECORD_FIELDS}
            assert found["derived_chain"] == []
        seen.add(found["doc_id"])
    assert seen == {record["doc_id"] for part in records.values() for record in part}  # each document once


def test_the_chain_of_documents_a_record_derives_from(version):
    fr = list(read_jsonl_zst(docs_file(version, "fr")))
    original, translation = fr[3], fr[4]
    translation["derived_from"] = original["doc_id"]
    original["url"], original["fetch_ts"] = "https://example.org/original", "2024-05-01T00:00:00Z"
    write_jsonl_zst(docs_file(version, "fr"), fr)
    reader = ShardReader(pins(version), version)
    stream = whole_source(reader)
    lineage = Lineage(reader.root, reader.shards)
    offsets = [int(stream.starts[d]) for d in range(len(stream.documents))]
    found = next(f for f in map(lambda offset: lineage.origin(stream, offset), offsets)
                 if f["doc_id"] == translation["doc_id"])
    assert found["derived_from"] == original["doc_id"]
    assert found["derived_chain"] == [{"doc_id": original["doc_id"], "url": "https://example.org/original",
                                       "fetch_ts": "2024-05-01T00:00:00Z", "license_id": original["license_id"]}]


def test_a_record_missing_from_the_docs_is_an_error_naming_the_file(version):
    kept = list(read_jsonl_zst(docs_file(version, "de")))[:2]
    write_jsonl_zst(docs_file(version, "de"), kept)
    reader = ShardReader(pins(version), version)
    stream = whole_source(reader)
    lineage = Lineage(reader.root, reader.shards)
    with pytest.raises(LoaderError, match=r"extract/docs/lingua/s1/de\.jsonl\.zst has no row \d+"):
        for document in range(len(stream.documents)):
            lineage.origin(stream, int(stream.starts[document]))


def test_the_loader_s_lineage_of_a_sample_token(version):
    recipe = validate_recipe({**pins(version), "recipe_id": "lineage", "seed": 11,
                              "phases": [{"name": "main", "tokens": 300 * 64, "seq_len": 64, "weights": {SOURCE: 1.0},
                                          "max_epochs": {SOURCE: 2}}]})
    loader = Loader(recipe, version)
    for index, position in ((0, 0), (17, 64), (150, 31), (299, 1)):
        found = loader.lineage(index, position)
        assert (found["index"], found["position"]) == (index, position)
        assert found["token"] == loader.sample(index).tokens[position]
        tokens = MegatronReader(loader.root / found["shard"])[found["document_in_shard"]]
        assert tokens[found["token_in_document"]] == found["token"]
    with pytest.raises(IndexError, match="position 65 is outside a sample of 65 tokens"):
        loader.lineage(3, 65)
    with pytest.raises(IndexError, match="sample 300 is outside the recipe's 300 samples"):
        loader.lineage(300, 0)
