"""write_shards merges a snapshot's parts into shuffled, content-named Megatron shards; the
manifest re-checks every hash."""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.unit.helpers import SHARD_LIMITS, tokenized_parts
from tokenmill.io import read_json, read_jsonl_zst, write_parquet
from tokenmill.plan import shard_groups
from tokenmill.shards.manifest import build_manifest
from tokenmill.shards.writer import TokenizedPart, _row_groups_holding, group_keys, write_shards
from tokenmill.hashing import keyed_hash64, seed_key
from tokenmill.tokenize import SHARD_GROUP_READ_ROWS, load_tokenizer, token_dtype, tokenize_part

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from megatron.core.datasets.indexed_dataset import IndexedDataset

LANGS = ["de", "fr", "pl"]
SEED = 99


@pytest.fixture(scope="module")
def tokenized(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shards")
    tokenizer, parts, prepared = tokenized_parts(tmp, LANGS, SEED)
    texts = {(lang, row): doc["text"] for lang, (docs, _) in prepared.items() for row, doc in enumerate(read_jsonl_zst(docs))}
    return tmp, tokenizer, parts, texts


def shard(tmp, parts, tokenizer, name, target=20000, source="lingua", snapshot="s1", group=0, groups=1):
    tok, _ = load_tokenizer(str(tokenizer))
    return write_shards(source, snapshot, parts, str(tmp / name), target, "Apache-2.0", "academic",
                        token_dtype(tok.get_vocab_size()), SHARD_LIMITS, group, groups)


def lineage_of(directory, metas) -> list[dict]:
    return [doc for meta in metas for doc in pq.read_table(directory / meta["docs"]["path"]).to_pylist()]


def test_shards_hold_every_document_in_shuffle_order(tokenized):
    tmp, tokenizer, parts, texts = tokenized
    metas = shard(tmp, parts, tokenizer, "out")
    tok, sha = load_tokenizer(str(tokenizer))
    assert len(metas) > 2 and all(m["n_tokens"] >= 20000 for m in metas[:-1])
    order, seen = [], 0
    for meta in metas:
        prefix = str(tmp / "out" / meta["name"])
        dataset = IndexedDataset(prefix)
        lineage = pq.read_table(tmp / "out" / meta["docs"]["path"]).to_pylist()
        assert len(dataset) == meta["n_docs"] == len(lineage)
        assert sum(len(dataset[i]) for i in range(len(dataset))) == meta["n_tokens"]
        assert meta["tokenizer_sha256"] == sha and meta["license_ids"] == ["Apache-2.0"]
        for i, doc in enumerate(lineage):
            tokens = dataset[i]
            assert tokens[-1] == meta["eod_id"]
            assert tok.decode(tokens[:-1].tolist(), skip_special_tokens=False) == texts[doc["part"], doc["row"]]
            order.append(keyed_hash64(seed_key(SEED), doc["doc_id"]))
        seen += len(lineage)
    assert seen == len(texts) and order == sorted(order)


def test_same_bytes_whatever_the_part_order(tokenized):
    tmp, tokenizer, parts, _ = tokenized
    shard(tmp, parts, tokenizer, "forward")
    shard(tmp, list(reversed(parts)), tokenizer, "reverse")
    forward = {p.name: p.read_bytes() for p in (tmp / "forward").iterdir()}
    reverse = {p.name: p.read_bytes() for p in (tmp / "reverse").iterdir()}
    assert forward == reverse


def test_shards_are_named_after_their_content_and_hold_nothing_of_the_version(tokenized):
    tmp, tokenizer, parts, _ = tokenized
    metas = shard(tmp, parts, tokenizer, "named")
    for meta in metas:
        bin_sha256 = hashlib.sha256((tmp / "named" / meta["bin"]["path"]).read_bytes()).hexdigest()
        assert meta["name"] == f"lingua-s1-{bin_sha256[:16]}" and meta["bin"]["sha256"] == bin_sha256
        assert meta["snapshot"] == "s1" and "version" not in meta
        assert sorted(p.name for p in (tmp / "named").glob(f"{meta['name']}.*")) == sorted(
            f"{meta['name']}{suffix}" for suffix in (".bin", ".idx", ".meta.json", ".docs.parquet"))
    assert read_json(tmp / "named" / "shards.json") == {"source": "lingua", "snapshot": "s1", "group": 0, "groups": 1,
                                                        "documents": sum(m["n_docs"] for m in metas),
                                                        "shards": [m["name"] for m in metas]}
    assert len(list((tmp / "named").iterdir())) == 4 * len(metas) + 1  # no provisional file is left


def test_a_part_of_another_snapshot_is_refused(tokenized, tmp_path):
    tmp, tokenizer, parts, _ = tokenized
    stray = TokenizedPart("s2", parts[0].part, parts[0].path, parts[0].select)
    with pytest.raises(ValueError, match=r"write_shards of lingua/s1 was given parts of snapshots \['s2'\]"):
        shard(tmp_path, [parts[1], stray], tokenizer, "mixed")
    assert not (tmp_path / "mixed").exists()


def test_manifest_lists_every_shard_and_catches_tampering(tokenized):
    tmp, tokenizer, parts, _ = tokenized
    metas = shard(tmp, parts[1:], tokenizer, "v1/lingua/s1")
    later = shard(tmp, [TokenizedPart("s0", p.part, p.path, p.select) for p in parts[:1]], tokenizer,
                  "v1/lingua/s0", snapshot="s0")
    first = shard(tmp, parts[:1], tokenizer, "v1/alpha/s1", source="alpha")
    _, sha = load_tokenizer(str(tokenizer))
    pins = {"sha256": sha}
    shard_dirs = [str(tmp / "v1" / d) for d in ("lingua/s1", "alpha/s1", "lingua/s0")]
    manifest = build_manifest("v1", shard_dirs, str(tmp / "v1" / "manifest.json"),
                              str(tmp / "v1" / "validation.tsv"), pins, "c" * 64, "0.1.0")
    # by source, snapshot, then the order the snapshot cut them in: whatever the order of the directories
    assert [(s["path"], s["source"], s["snapshot"]) for s in manifest["shards"]] == [
        *((f"alpha/s1/{m['name']}", "alpha", "s1") for m in first),
        *((f"lingua/s0/{m['name']}", "lingua", "s0") for m in later),
        *((f"lingua/s1/{m['name']}", "lingua", "s1") for m in metas)]
    assert manifest["sources"]["lingua"]["shards"] == len(later) + len(metas)
    assert manifest["sources"]["lingua"]["n_docs"] == sum(m["n_docs"] for m in later + metas)
    assert manifest["n_docs"] == sum(m["n_docs"] for m in first + later + metas)
    assert read_json(tmp / "v1" / "manifest.json") == manifest
    victim = tmp / "v1" / "lingua" / "s1" / f"{metas[0]['name']}.bin"
    data = bytearray(victim.read_bytes())
    data[10] ^= 1
    victim.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="sha256 .* differs from its meta.json"):
        build_manifest("v1", shard_dirs, str(tmp / "v1" / "manifest2.json"),
                       str(tmp / "v1" / "validation2.tsv"), pins, "c" * 64, "0.1.0")
    assert not (tmp / "v1" / "manifest2.json").exists()


def test_parts_tokenized_differently_are_refused(tokenized, tmp_path):
    tmp, tokenizer, parts, _ = tokenized
    docs = str(tmp / "de.docs.jsonl.zst")
    other_seed = tmp_path / "de-other-seed.parquet"
    tokenize_part(docs, str(tmp / "de.select.parquet"), str(tokenizer), None, SEED + 1, str(other_seed))
    with pytest.raises(ValueError, match="seed="):
        shard(tmp_path, [parts[1], TokenizedPart("s1", "de", str(other_seed), parts[1].select)], tokenizer, "mixed")
    assert not (tmp_path / "mixed").exists()


def test_shard_groups_write_the_snapshot_in_the_order_one_job_writes_it(tokenized):
    """A large snapshot's shards come from several jobs, each an equal range of the shuffle keys:
    their shards one after another hold exactly the documents, in exactly the order, of one job's,
    and the manifest lists them in that order."""
    tmp, tokenizer, parts, _ = tokenized
    whole = shard(tmp, parts, tokenizer, "whole/lingua/s1")
    groups = [shard(tmp, parts, tokenizer, f"grouped/lingua/s1/group-{group:04d}", group=group, groups=3)
              for group in range(3)]
    assert all(groups)  # a few hundred documents: every third of the key space holds some
    joined = [doc for group, metas in enumerate(groups)
              for doc in lineage_of(tmp / f"grouped/lingua/s1/group-{group:04d}", metas)]
    assert [doc["doc_id"] for doc in joined] == [doc["doc_id"] for doc in lineage_of(tmp / "whole/lingua/s1", whole)]
    for group, metas in enumerate(groups):
        first, last = group_keys(group, 3)
        keys = [keyed_hash64(seed_key(SEED), doc["doc_id"])
                for doc in lineage_of(tmp / f"grouped/lingua/s1/group-{group:04d}", metas)]
        assert first <= min(keys) and max(keys) <= last
        listing = read_json(tmp / f"grouped/lingua/s1/group-{group:04d}/shards.json")
        assert (listing["group"], listing["groups"], listing["documents"]) == (group, 3, len(keys))
    _, sha = load_tokenizer(str(tokenizer))
    manifest = build_manifest("v1", [str(tmp / f"grouped/lingua/s1/group-{group:04d}") for group in (2, 0, 1)],
                              str(tmp / "grouped/manifest.json"), str(tmp / "grouped/validation.tsv"),
                              {"sha256": sha}, "c" * 64, "0.1.0")
    assert [entry["path"] for entry in manifest["shards"]] == [
        f"lingua/s1/group-{group:04d}/{meta['name']}" for group, metas in enumerate(groups) for meta in metas]
    assert manifest["n_docs"] == sum(meta["n_docs"] for meta in whole)


def test_key_ranges_of_the_shard_groups_cover_every_key_once():
    for groups in (1, 3, 113):
        ranges = [group_keys(group, groups) for group in range(groups)]
        assert ranges[0][0] == 0 and ranges[-1][1] == (1 << 64) - 1
        assert all(last + 1 == first for (_, last), (first, _) in zip(ranges, ranges[1:]))
    with pytest.raises(ValueError, match="shard group 3 is not one of 0..2"):
        group_keys(3, 3)


def test_a_snapshot_gets_one_shard_group_per_parts_per_job_parts():
    assert shard_groups(4, 8) == ["0000"]
    assert shard_groups(9, 8) == ["0000", "0001"]
    assert len(shard_groups(901, 8)) == 113  # a Common Crawl snapshot of 120 GB parts


def test_a_shard_group_reads_only_the_row_groups_its_keys_can_be_in(tmp_path):
    """Tokenized parts keep their keys' range per row group, as tokenize writes them: a group's
    job skips the rest of each part instead of reading the whole snapshot."""
    keys = np.sort(np.random.default_rng(0).integers(0, 1 << 64, size=4 * SHARD_GROUP_READ_ROWS, dtype=np.uint64))
    path = tmp_path / "part.parquet"
    write_parquet(path, pa.table({"shuffle_key": pa.array(keys, pa.uint64())}), statistics=["shuffle_key"],
                  row_group_rows=SHARD_GROUP_READ_ROWS)
    handle = pq.ParquetFile(path)
    assert handle.num_row_groups == 4
    read = [_row_groups_holding(handle, *group_keys(group, 8)) for group in range(8)]
    # an eighth of the keys is within one quarter, or two where a row group ends inside it: each
    # group reads one or two row groups, instead of all four of the part
    assert all(1 <= len(row_groups) <= 2 for row_groups in read) and sum(map(len, read)) <= 8 + 3
    assert sorted({index for row_groups in read for index in row_groups}) == [0, 1, 2, 3]
    unmarked = tmp_path / "unmarked.parquet"
    write_parquet(unmarked, pa.table({"shuffle_key": pa.array(keys, pa.uint64())}), row_group_rows=SHARD_GROUP_READ_ROWS)
    assert _row_groups_holding(pq.ParquetFile(unmarked), *group_keys(0, 8)) == [0, 1, 2, 3]
