"""fastText lid.176 (bundled .ftz) on real sentences in many languages."""

from __future__ import annotations

import os

import numpy as np

from tests.conftest import lingua_records
from tests.unit.helpers import langid_part
from tokenmill.io import JsonlZstWriter, read_parquet
from tokenmill.langid import bundled_model_path, predict


def lingua_docs(lang: str, count: int, lines: int = 3) -> list[str]:
    """The first `lines` real sentences of the bundled lingua documents of one language."""
    records = lingua_records(lang)
    return ["\n".join(r["text"].split("\n")[:lines]) for r in records[:count]]


def test_bundled_model_is_present():
    path = bundled_model_path()
    assert os.path.isfile(path) and path.endswith("lid.176.ftz")


def test_identifies_real_sentences_across_languages():
    correct = total = 0
    for lang in ["ar", "de", "en", "es", "fr", "hi", "it", "ja", "nl", "pl", "pt", "ru", "tr", "zh"]:
        langs, conf = predict(lingua_docs(lang, 16), bundled_model_path(), 20000)
        correct += sum(found == lang for found in langs)
        total += len(langs)
        assert np.all((conf >= 0) & (conf <= 1))
    assert correct / total >= 0.95


def test_batched_equals_one_by_one_and_newlines_do_not_cut_input():
    texts = lingua_docs("pt", 8)
    batched = predict(texts, bundled_model_path(), 20000)
    single = [predict([text], bundled_model_path(), 20000) for text in texts]
    assert batched[0] == [s[0][0] for s in single]
    assert np.allclose(batched[1], [s[1][0] for s in single])
    # only the first line would be seen if newlines were passed through
    mixed = "Ceci est une phrase.\n" + "Dies ist ein deutscher Satz, und noch einer, und noch viele mehr. " * 10
    assert predict([mixed], bundled_model_path(), 20000)[0] == ["de"]


def test_langid_part_rows_align_with_documents(tmp_path):
    docs = tmp_path / "docs.jsonl.zst"
    texts = lingua_docs("ru", 5) + lingua_docs("ja", 5)
    with JsonlZstWriter(docs) as writer:
        for i, text in enumerate(texts):
            writer.write({"doc_id": f"{i:032x}", "text": text})
    out = tmp_path / "langid.parquet"
    assert langid_part(str(docs), str(out), bundled_model_path(), batch_size=3, max_chars=20000) == 10
    table = read_parquet(out)
    assert table.column("doc_id").to_pylist() == [f"{i:032x}" for i in range(10)]
    assert table.column("lang").to_pylist() == ["ru"] * 5 + ["ja"] * 5
    assert table.schema.metadata[b"model_sha256"]
