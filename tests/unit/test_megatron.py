"""Our .bin/.idx writer against megatron-core's own builder and reader."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from tokenmill.shards.megatron import MegatronReader, MegatronWriter


def megatron_indexed_dataset():
    """megatron-core's IndexedDataset and IndexedDatasetBuilder, imported when a test runs (seconds
    of torch and megatron imports that collecting the suite should not pay)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from megatron.core.datasets.indexed_dataset import IndexedDataset, IndexedDatasetBuilder
    return IndexedDataset, IndexedDatasetBuilder


def sequences(dtype, count=50, seed=0):
    rng = np.random.default_rng(seed)
    high = 65000 if dtype == np.uint16 else 200_000
    return [rng.integers(0, high, size=rng.integers(1, 400)).astype(dtype) for _ in range(count)]


@pytest.mark.parametrize("dtype, code", [(np.uint16, 8), (np.int32, 4)])
def test_writer_is_byte_identical_to_megatron_builder(tmp_path, dtype, code):
    docs = sequences(dtype)
    ours = MegatronWriter(tmp_path / "ours", dtype)
    for doc in docs:
        ours.add(doc)
    ours.close()
    import torch
    _, IndexedDatasetBuilder = megatron_indexed_dataset()
    theirs = IndexedDatasetBuilder(str(tmp_path / "theirs.bin"), dtype=dtype)
    for doc in docs:
        theirs.add_item(torch.from_numpy(doc.astype(np.int64)))
        theirs.end_document()
    theirs.finalize(str(tmp_path / "theirs.idx"))
    for suffix in (".bin", ".idx"):
        assert (tmp_path / f"ours{suffix}").read_bytes() == (tmp_path / f"theirs{suffix}").read_bytes()
    assert (tmp_path / "ours.idx").read_bytes()[17] == code


@pytest.mark.parametrize("dtype", [np.uint16, np.int32])
def test_megatron_reads_what_we_write_and_we_read_it_back(tmp_path, dtype):
    docs = sequences(dtype, seed=1)
    writer = MegatronWriter(tmp_path / "shard", dtype)
    for doc in docs:
        writer.add(doc)
    writer.close()
    IndexedDataset, _ = megatron_indexed_dataset()
    dataset = IndexedDataset(str(tmp_path / "shard"))
    reader = MegatronReader(tmp_path / "shard")
    assert len(dataset) == len(reader) == len(docs)
    for i, doc in enumerate(docs):
        assert np.array_equal(dataset[i], doc) and np.array_equal(reader[i], doc)
        assert dataset[i].dtype == dtype


def test_empty_shard_is_refused(tmp_path):
    """megatron-core cannot open an empty .bin, so no shard may be empty."""
    writer = MegatronWriter(tmp_path / "empty", np.uint16)
    with pytest.raises(ValueError, match="at least one document"):
        writer.close()
