"""Byte-level BPE training and tokenization of real multilingual text."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.unit.helpers import prepared_part
from tokenmill.hashing import sha256_file
from tokenmill.io import read_jsonl_zst
from tokenmill.hashing import keyed_hash64, seed_key
from tokenmill.tokenize import EOD_TOKEN, load_tokenizer, selected_texts, token_dtype, tokenize_part, train_bpe

LANGS = ["en", "ja", "ar", "ru"]


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tokenize")
    return tmp, {lang: prepared_part(tmp, lang) for lang in LANGS}


@pytest.fixture(scope="module")
def tokenizer_path(parts):
    tmp, prepared = parts
    texts = [doc["text"] for docs, select in prepared.values() for _, doc in selected_texts(docs, select)]
    path = tmp / "tokenizer.json"
    train_bpe(texts, vocab_size=2000, min_frequency=2, out_path=str(path))
    return path


def test_training_is_deterministic_across_thread_counts(parts, tokenizer_path):
    tmp, prepared = parts
    code = ("import sys\nfrom tokenmill.tokenize import selected_texts, train_bpe\n"
            "pairs = [tuple(p.split(',')) for p in sys.argv[2:]]\n"
            "texts = [d['text'] for docs, sel in pairs for _, d in selected_texts(docs, sel)]\n"
            "print(train_bpe(texts, 2000, 2, sys.argv[1]))\n")
    args = [f"{docs},{select}" for docs, select in prepared.values()]
    hashes = set()
    for threads in ("1", "2"):
        out = tmp / f"tok-{threads}.json"
        result = subprocess.run([sys.executable, "-c", code, str(out), *args], capture_output=True, text=True,
                                env={**os.environ, "RAYON_NUM_THREADS": threads}, check=True)
        hashes.add(result.stdout.strip())
    assert hashes == {sha256_file(tokenizer_path)}


def test_every_document_round_trips_exactly(parts, tokenizer_path):
    _, prepared = parts
    tokenizer, _ = load_tokenizer(str(tokenizer_path))
    for docs, select in prepared.values():
        for _, doc in selected_texts(docs, select):
            ids = tokenizer.encode(doc["text"], add_special_tokens=False).ids
            assert tokenizer.decode(ids, skip_special_tokens=False) == doc["text"]


def test_tokenize_part_sorts_by_shuffle_key_and_ends_documents_with_eod(parts, tokenizer_path, tmp_path):
    _, prepared = parts
    docs, select = prepared["ja"]
    out = tmp_path / "ja.parquet"
    count = tokenize_part(docs, select, str(tokenizer_path), None, seed=7, out_path=str(out))
    table = pq.read_table(out)
    tokenizer, sha = load_tokenizer(str(tokenizer_path))
    eod = tokenizer.token_to_id(EOD_TOKEN)
    assert count == table.num_rows == len(list(read_jsonl_zst(docs)))
    keys = table.column("shuffle_key").to_pylist()
    assert keys == sorted(keys)
    assert keys == sorted(keyed_hash64(seed_key(7), d) for d in table.column("doc_id").to_pylist())
    assert table.schema.field("tokens").type.value_type == "uint16"
    assert table.schema.metadata[b"tokenizer_sha256"].decode() == sha
    texts = {row: doc["text"] for row, doc in enumerate(read_jsonl_zst(docs))}
    for row, tokens in zip(table.column("row").to_pylist(), table.column("tokens").to_pylist()):
        assert tokens[-1] == eod and eod not in tokens[:-1]
        assert tokenizer.decode(tokens[:-1], skip_special_tokens=False) == texts[row]


def test_pinned_hash_mismatch_and_missing_eod_are_errors(parts, tokenizer_path, tmp_path):
    _, prepared = parts
    docs, select = prepared["en"]
    with pytest.raises(ValueError, match="config pins"):
        tokenize_part(docs, select, str(tokenizer_path), "0" * 64, 1, str(tmp_path / "x.parquet"))
    no_eod = tmp_path / "no-eod.json"
    no_eod.write_text(tokenizer_path.read_text().replace(EOD_TOKEN, "<|other|>"))
    with pytest.raises(ValueError, match="no '<|endoftext|>' token"):
        load_tokenizer(str(no_eod))
    assert not (tmp_path / "x.parquet").exists()


def test_dtype_follows_megatron_rule():
    assert token_dtype(65499) == np.uint16 and token_dtype(65500) == np.int32
