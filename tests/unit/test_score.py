"""The score job: every per-document signal of a part from one read, on real documents (the gold
article bodies and the lingua sentences of the sample, one page with a real GSM8K item planted),
with the real lid.176 model, a fastText classifier trained on the bundled labels and the
decontamination index of the real GSM8K test set."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import zstandard

from tests.conftest import REPO, demo_config, gold_articles, lingua_records, sample
from tests.unit.helpers import (decontaminate_part, langid_part, naturalness_part, pii_part, score_heuristics_part,
                                score_quality_part, signatures_part, toxicity_part)
from tests.unit.test_decontaminate import plant
from tokenmill.config import schema_defaults, schema_settings, validate
from tokenmill.decontaminate import Benchmark, DecontaminationSettings, build_index, read_items
from tokenmill.dedup.minhash import CodeBands, MinHashParams
from tokenmill.io import JsonlZstWriter, read_parquet
from tokenmill.langid import bundled_model_path
from tokenmill.languages import BUNDLED as BUNDLED_TABLE
from tokenmill.quality.naturalness import resolve_model_path
from tokenmill.quality.toxicity import configured_wordlists
from tokenmill.score import SIGNALS, ScoreSettings, score_part

LANGID_MAX_CHARS = schema_defaults("langid.max_chars")
GSM8K_ITEM = 7


@pytest.fixture(scope="module")
def settings(tmp_path_factory) -> ScoreSettings:
    models = tmp_path_factory.mktemp("models")
    demo = validate(demo_config())
    config = demo["decontamination"]
    gsm8k = [Benchmark(b["name"], b["path"], b["format"], b["fields"]) for b in config["benchmarks"]
             if b["name"] == "gsm8k"]
    build_index(gsm8k, DecontaminationSettings(**{k: v for k, v in config.items() if k != "benchmarks"}),
                str(models / "index"))
    # fastText training in the pytest process can diverge (NaN); the pipeline trains in its own process too
    code = (f"from tokenmill.quality.fasttext import train_fasttext, FastTextSettings\n"
            f"train_fasttext({sample('quality', 'aeb-quality-labels.jsonl.gz')!r}, {str(models / 'quality.bin')!r},"
            f" {str(models / 'quality.json')!r}, FastTextSettings(**{demo['quality']['fasttext']!r}))\n")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=600)
    return ScoreSettings(langid_model=bundled_model_path(), langid_max_chars=LANGID_MAX_CHARS,
                         minhash=schema_settings(MinHashParams, "minhash"),
                         code_bands=schema_settings(CodeBands, "minhash.code"),
                         wordlists=configured_wordlists({"wordlists": {}}, str(REPO / "data/wordlists/ldnoobw-en.txt")),
                         language_table=BUNDLED_TABLE, naturalness_model=str(resolve_model_path(None)),
                         naturalness_sha256=schema_defaults("quality.naturalness")["sha256"],
                         quality_model=str(models / "quality.bin"), decontamination_index=str(models / "index"),
                         derived_decontaminate=None)


def real_documents() -> list[dict]:
    """Article bodies and lingua documents as extract writes them, one page holding a GSM8K item."""
    pages = [entry["articleBody"] for _, entry in sorted(gold_articles().items())][:60]
    gsm8k = read_items(Benchmark("gsm8k", str(REPO / "data/evalsets/gsm8k/test.jsonl.gz"), "jsonl",
                                 ["question", "answer"]))
    pages[17] = plant(pages[17], gsm8k[GSM8K_ITEM])[0]
    # beside English, languages of four segmenters: the unicode one (ru, hi, sw), jieba (zh), SudachiPy (ja)
    texts = pages + [record["text"] for lang in ("ru", "ja", "hi", "sw", "zh") for record in lingua_records(lang)[:10]]
    return [{"doc_id": f"{number:032x}", "record_id": f"<urn:uuid:{number}>", "url": f"https://example.org/{number}",
             "fetch_ts": "2024-03-01T12:00:00Z" if number % 3 else None, "text": text}
            for number, text in enumerate(texts)]


def write_docs(path, docs: list[dict]) -> str:
    with JsonlZstWriter(path) as writer:
        for doc in docs:
            writer.write(doc)
    return str(path)


def scored(folder, docs_path: str, settings: ScoreSettings, **options) -> dict[str, bytes]:
    """The bytes of every file score_part writes into `folder`, by signal."""
    folder.mkdir()
    outputs = {signal: str(folder / f"{signal}.parquet") for signal in SIGNALS}
    score_part(docs_path, outputs, settings, **options)
    return {signal: (folder / f"{signal}.parquet").read_bytes() for signal in SIGNALS}


def each_signals_own_files(folder, docs_path: str, settings: ScoreSettings) -> dict[str, bytes]:
    """The bytes of the files that each signal's rows make written alone (what the five per-part
    rules wrote before the score job)."""
    folder.mkdir()
    out = {signal: str(folder / f"{signal}.parquet") for signal in SIGNALS}
    langid_part(docs_path, out["langid"], settings.langid_model, 512, settings.langid_max_chars)
    signatures_part(docs_path, out["signatures"], settings.minhash)
    score_heuristics_part(docs_path, out["heuristics"])
    pii_part(docs_path, out["pii"])
    toxicity_part(docs_path, out["toxicity"], settings.wordlists)
    score_quality_part(docs_path, settings.quality_model, out["quality_fasttext"])
    naturalness_part(docs_path, out["quality_naturalness"])
    decontaminate_part(docs_path, settings.decontamination_index, out["decontaminate"])
    return {signal: (folder / f"{signal}.parquet").read_bytes() for signal in SIGNALS}


def test_one_read_writes_the_bytes_of_each_signals_own_call(tmp_path, settings):
    docs = real_documents()
    docs_path = write_docs(tmp_path / "docs.jsonl.zst", docs)
    # batches of 16: several batches, the last one short
    together = scored(tmp_path / "score", docs_path, settings, batch_size=16)
    apart = each_signals_own_files(tmp_path / "apart", docs_path, settings)
    assert [signal for signal in SIGNALS if together[signal] != apart[signal]] == []
    langid = read_parquet(tmp_path / "score" / "langid.parquet")
    assert langid.column("doc_id").to_pylist() == [doc["doc_id"] for doc in docs]
    assert {"en", "ru", "ja", "hi", "zh"} <= set(langid.column("lang").to_pylist())
    segmenters = set(read_parquet(tmp_path / "score" / "heuristics.parquet").column("segmenter").to_pylist())
    assert {"unicode", "jieba", "sudachi"} <= segmenters
    assert read_parquet(tmp_path / "score" / "signatures.parquet").column("row").to_pylist() == list(range(len(docs)))
    flagged = [row["doc_id"] for row in read_parquet(tmp_path / "score" / "decontaminate.parquet").to_pylist()
               if row["contaminated_by"]]
    assert flagged == [f"{17:032x}"]


def test_two_and_three_workers_write_the_bytes_of_one(tmp_path, settings):
    docs_path = write_docs(tmp_path / "docs.jsonl.zst", real_documents())
    one = scored(tmp_path / "one", docs_path, settings, workers=1, batch_size=16)
    assert scored(tmp_path / "two", docs_path, settings, workers=2, batch_size=16) == one
    assert scored(tmp_path / "three", docs_path, settings, workers=3, batch_size=7) == one


def test_an_empty_part_writes_empty_files_like_each_signals_own_call(tmp_path, settings):
    docs_path = write_docs(tmp_path / "docs.jsonl.zst", [])
    assert scored(tmp_path / "score", docs_path, settings, workers=2) == \
        each_signals_own_files(tmp_path / "apart", docs_path, settings)
    assert read_parquet(tmp_path / "score" / "heuristics.parquet").num_rows == 0


def rows(folder, signal: str) -> list[dict]:
    """A side-car file's rows, without the row number (which says where in its part a row is)."""
    table = read_parquet(folder / f"{signal}.parquet")
    return table.drop_columns([name for name in ("row",) if name in table.column_names]).to_pylist()


def test_poison_documents_do_not_fail_the_part(tmp_path, settings):
    page = real_documents()[0]
    poison = ["",  # empty
              " \n\n\t \n",  # blank lines only
              page["text"] * (4_000_000 // len(page["text"])),  # 4 MB of real text
              "x" * 2_000_000,  # one 2 MB word
              "\x00\x01\x1b[31m " + page["text"],  # control characters
              "caf\ud800 " + page["text"]]  # a lone surrogate
    docs = [{**page, "doc_id": f"{number:032x}", "text": text} for number, text in enumerate(poison)]
    docs_path = tmp_path / "docs.jsonl.zst"
    # extract writes UTF-8, which cannot hold a lone surrogate; a JSON escape can
    docs_path.write_bytes(zstandard.ZstdCompressor().compress("".join(json.dumps(doc) + "\n" for doc in docs).encode()))
    scored(tmp_path / "score", str(docs_path), settings, workers=2)
    for signal in SIGNALS:
        assert len(rows(tmp_path / "score", signal)) == len(docs), signal
    # the lone surrogate is read as U+FFFD, one character for one, so its spans still point into the text
    repaired = write_docs(tmp_path / "repaired.jsonl.zst", [{**docs[-1], "text": "caf\ufffd " + page["text"]}])
    scored(tmp_path / "repaired", repaired, settings)
    for signal in SIGNALS:
        assert rows(tmp_path / "score", signal)[-1:] == rows(tmp_path / "repaired", signal), signal
