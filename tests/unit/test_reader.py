"""The shard reader over a small real dataset version: token spans packed across documents and
shards, sha256 checks with a stand-in shard and a skip set, tombstones, and the pins of the recipe."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from tests.unit.helpers import SHARD_LIMITS, flip_byte, tokenized_parts
from tokenmill.hashing import sha256_file
from tokenmill.io import read_json
from tokenmill.shards.manifest import build_manifest
from tokenmill.shards.megatron import MegatronReader
from tokenmill.shards.versions import tombstone_source
from tokenmill.shards.writer import write_shards
from tokenmill.tokenize import load_tokenizer, token_dtype
from tokenmill.trainer.reader import LoaderError, ShardReader
from tokenmill.trainer.recipe import RecipeError
from tokenmill.trainer.schedule import Stream

SOURCE = "lingua"


def dataset_version(tmp) -> tuple:
    """(manifest, the extracted docs of each part): one source, lingua, of two parts (de, fr) in
    one snapshot s1, cut into shards of about 10,000 tokens, laid out as the workflow writes a
    version: results/shards/v1/lingua/s1/ with results/shards/v1/manifest.json."""
    tokenizer, parts, prepared = tokenized_parts(tmp, ["de", "fr"], seed=5)
    tok, sha = load_tokenizer(str(tokenizer))
    version = tmp / "results" / "shards" / "v1"
    write_shards(SOURCE, "s1", parts, str(version / SOURCE / "s1"), 10_000, "Apache-2.0", "academic",
                 token_dtype(tok.get_vocab_size()), SHARD_LIMITS)
    manifest = version / "manifest.json"
    build_manifest("v1", [str(version / SOURCE / "s1")], str(manifest), str(version / "validation.tsv"),
                   {"sha256": sha}, "c" * 64, "0.1.0")
    return manifest, {part: docs for part, (docs, _) in prepared.items()}


def pins(manifest, max_skipped_share: float = 0.5) -> dict:
    """The recipe fields the reader reads."""
    return {"manifest_sha256": sha256_file(manifest), "tokenizer_sha256": read_json(manifest)["tokenizer"]["sha256"],
            "max_skipped_share": max_skipped_share}


def whole_source(reader: ShardReader) -> Stream:
    shards, documents, lengths = reader.source_documents(SOURCE, "phases.0.weights.lingua")
    return Stream(SOURCE, SOURCE, 1.0, shards, documents, np.concatenate([[0], np.cumsum(lengths)]))


@pytest.fixture(scope="module")
def version(tmp_path_factory):
    return dataset_version(tmp_path_factory.mktemp("reader"))[0]


@pytest.fixture
def version_copy(version, tmp_path):
    """A copy of the version to damage."""
    shutil.copytree(version.parent, tmp_path / "v1")
    return tmp_path / "v1" / "manifest.json"


def test_the_source_is_its_shards_documents_in_manifest_order(version):
    reader = ShardReader(pins(version), version)
    shards, documents, lengths = reader.source_documents(SOURCE, "phases.0.weights.lingua")
    listed = [number for number, shard in enumerate(reader.shards) if shard["source"] == SOURCE]
    assert len(listed) >= 4 and reader.skip_set == set()
    assert sorted(set(shards.tolist())) == listed and (np.diff(shards) >= 0).all()
    for number in listed:
        megatron = MegatronReader(reader.prefix(number))
        assert documents[shards == number].tolist() == list(range(len(megatron)))
        assert lengths[shards == number].tolist() == megatron.lengths.tolist()


def test_a_span_is_the_stream_s_tokens_packed_across_documents_and_shards(version):
    reader = ShardReader(pins(version), version)
    stream = whole_source(reader)
    every_token = np.concatenate([MegatronReader(reader.prefix(int(shard)))[int(document)]
                                  for shard, document in zip(stream.shards, stream.documents)]).astype(np.int64)
    assert len(every_token) == stream.tokens
    shard_ends = stream.starts[1:][np.flatnonzero(np.diff(stream.shards))]
    spans = [(0, 17), (5, 6), (int(stream.starts[3]) - 40, int(stream.starts[3]) + 3),  # across a document
             (int(shard_ends[0]) - 100, int(shard_ends[0]) + 100),  # across two shards
             (int(shard_ends[0]) - 10, int(shard_ends[2]) + 10),  # across four shards
             (stream.tokens - 65, stream.tokens)]
    for start, stop in spans:
        tokens, cu_seqlens = reader.packed(stream, start, stop)
        assert tokens.dtype == np.int64 and cu_seqlens.dtype == np.int32
        assert np.array_equal(tokens, every_token[start:stop]), (start, stop)
        inside = stream.starts[(stream.starts > start) & (stream.starts < stop)] - start
        assert cu_seqlens.tolist() == [0, *inside.tolist(), stop - start]


def test_a_shard_that_fails_its_sha256_is_replaced_by_the_next_healthy_one(version, version_copy):
    listed = [shard["path"] for shard in read_json(version_copy)["shards"]]
    flip_byte(version_copy.parent / f"{listed[1]}.bin", 100)
    reader = ShardReader(pins(version_copy), version_copy)
    stream = whole_source(reader)
    assert reader.skip_set == {listed[1]}
    stand_in = [0, 2, 2, *range(3, len(listed))]  # shard 1's place holds shard 2's documents
    assert stream.shards.tolist() == [number for number in stand_in for _ in range(len(MegatronReader(reader.prefix(number))))]
    intact = ShardReader(pins(version), version, skip=[listed[1]])  # told the skip set, an intact copy does the same
    assert intact.skip_set == {listed[1]}
    assert np.array_equal(whole_source(intact).shards, stream.shards)
    assert np.array_equal(reader.packed(stream, 0, stream.tokens)[0],
                          intact.packed(whole_source(intact), 0, stream.tokens)[0])


def test_too_many_failing_shards_refuse_the_source(version_copy):
    listed = [shard["path"] for shard in read_json(version_copy)["shards"]]
    assert len(listed) >= 6
    for path in listed[:3]:
        flip_byte(version_copy.parent / f"{path}.idx", 40)
    with pytest.raises(LoaderError, match=rf"3 of {len(listed)} shards of lingua fail their sha256 check "
                                          r"\(max_skipped_share 0.25\): "):
        whole_source(ShardReader(pins(version_copy, max_skipped_share=0.25), version_copy))
    assert whole_source(ShardReader(pins(version_copy), version_copy)).tokens > 0  # within a half


def test_a_tombstoned_source_is_refused_naming_its_tombstone(version_copy):
    recipe = pins(version_copy)
    tombstone_source([str(version_copy)], SOURCE, "takedown TD-9", [], date="2026-01-02")
    reader = ShardReader(recipe, version_copy)  # the manifest is unchanged: a version's record
    with pytest.raises(LoaderError, match=r"shards of lingua were deleted on 2026-01-02 \(takedown TD-9\); "
                                          r"tombstone of lingua/s1/lingua-s1-[0-9a-f]{16}"):
        whole_source(reader)


def test_the_manifest_and_tokenizer_must_be_the_ones_the_recipe_pins(version):
    with pytest.raises(RecipeError, match="recipe field manifest_sha256: pins 0000"):
        ShardReader({**pins(version), "manifest_sha256": "0" * 64}, version)
    with pytest.raises(RecipeError, match="recipe field tokenizer_sha256: pins 1111.*, but the manifest's tokenizer"):
        ShardReader({**pins(version), "tokenizer_sha256": "1" * 64}, version)
    with pytest.raises(RecipeError, match=r"recipe field phases.2.weights.govuk: the manifest has no source 'govuk' "
                                          r"\(it has lingua\)"):
        ShardReader(pins(version), version).source_documents("govuk", "phases.2.weights.govuk")
