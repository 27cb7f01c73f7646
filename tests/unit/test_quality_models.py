"""Quality classifiers (fastText, byte-level encoder), per-language cut-offs, script shares."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

from tests.conftest import sample
from tokenmill.io import read_json, write_parquet
from tokenmill.quality.fasttext import read_labelled
from tokenmill.quality.encoder import load_encoder, score_texts
from tokenmill.select.thresholds import (ALL_LANGUAGES, build_thresholds, document_values, language_entry, largest_file_bytes,
                                         percentile)
from tokenmill.unicode_script import script_share

LABELS = sample("quality", "aeb-quality-labels.jsonl.gz")


def train_in_subprocess(kind: str, tmp_path, changes: dict) -> tuple[str, dict]:
    """Train with the schema's quality.`kind` settings, `changes` made to them."""
    function, cls = {"fasttext": ("train_fasttext", "FastTextSettings"),
                     "encoder": ("train_encoder", "EncoderSettings")}[kind]
    model = tmp_path / f"{kind}-{len(list(tmp_path.iterdir()))}.model"
    code = (f"import dataclasses\n"
            f"from tokenmill.config import schema_settings\n"
            f"from tokenmill.quality.{kind} import {function}, {cls}\n"
            f"settings = dataclasses.replace(schema_settings({cls}, 'quality.{kind}'), **{changes!r})\n"
            f"{function}({LABELS!r}, {str(model)!r}, {str(model) + '.json'!r}, settings)\n")
    subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, timeout=600)
    return hashlib.sha256(model.read_bytes()).hexdigest(), read_json(str(model) + ".json")


def test_labelled_set_is_balanced_and_split():
    records = read_labelled(LABELS)
    counts = {(r["label"], r["split"]): 0 for r in records}
    for r in records:
        counts[r["label"], r["split"]] += 1
    assert counts == {("hq", "train"): 147, ("lq", "train"): 147, ("hq", "test"): 34, ("lq", "test"): 34}


def test_fasttext_training_is_deterministic_and_accurate(tmp_path):
    first, metrics = train_in_subprocess("fasttext", tmp_path, {})
    second, _ = train_in_subprocess("fasttext", tmp_path, {})
    assert first == second
    assert metrics["test_documents"] == 68 and metrics["test_accuracy"] >= 0.9


def test_encoder_training_is_deterministic(tmp_path):
    small = {"epochs": 2, "max_bytes": 128, "dim": 32, "heads": 2}
    first, metrics = train_in_subprocess("encoder", tmp_path, small)
    second, _ = train_in_subprocess("encoder", tmp_path, small)
    assert first == second and metrics["test_documents"] == 68


def test_torch_jobs_require_deterministic_kernels_without_loading_the_compiler():
    """A kernel without a deterministic implementation fails the job instead of changing its bytes,
    and the switch does not import TorchDynamo (seconds per job, for a compiler no job uses)."""
    code = ("import sys, torch\n"
            "from tokenmill.machine import deterministic_torch\n"
            "deterministic_torch(7, 1)\n"
            "print(torch.are_deterministic_algorithms_enabled(), torch.get_num_threads(), 'torch._dynamo' in sys.modules)")
    printed = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=300)
    assert printed.stdout.split() == ["True", "1", "False"]


def test_encoder_scores_do_not_depend_on_batching(tmp_path):
    import torch
    _, _ = train_in_subprocess("encoder", tmp_path, {"epochs": 1, "max_bytes": 128, "dim": 32, "heads": 2})
    model_path = sorted(p for p in tmp_path.iterdir() if p.suffix == ".model")[0]
    model, settings = load_encoder(str(model_path), torch.device("cpu"))
    texts = [r["text"] for r in read_labelled(LABELS)[:40]]
    batched = score_texts(model, texts, settings, torch.device("cpu"))
    alone = np.array([score_texts(model, [t], settings, torch.device("cpu"))[0] for t in texts])
    assert np.allclose(batched, alone, atol=1e-5) and ((batched >= 0) & (batched <= 1)).all()


def write_scores(tmp_path, langs, fasttext, encoder):
    n = len(langs)
    paths = {name: str(tmp_path / f"{name}.parquet") for name in ("langid", "quality", "encoder")}
    write_parquet(paths["langid"], pa.table({"doc_id": [str(i) for i in range(n)], "lang": langs}))
    write_parquet(paths["quality"], pa.table({"doc_id": [str(i) for i in range(n)], "quality_fasttext": fasttext}))
    write_parquet(paths["encoder"], pa.table({"part": ["p"] * n, "row": list(range(n)),
                                              "doc_id": [str(i) for i in range(n)], "quality_encoder": encoder}))
    return [("p", paths["langid"], paths["quality"], paths["encoder"])]


@pytest.mark.parametrize("score", ["fasttext", "encoder", "ensemble"])
def test_per_language_cut_keeps_the_top_share_of_each_language(tmp_path, score):
    rng = np.random.default_rng(0)
    langs = ["en"] * 600 + ["de"] * 300 + ["yo"] * 5
    # German scores sit much lower than English: a global cut would drop most German documents
    fasttext = np.concatenate([rng.beta(5, 2, 600), rng.beta(2, 5, 300), rng.random(5)])
    encoder = np.clip(fasttext + rng.normal(0, 0.1, len(langs)), 0, 1)
    policy = {"score": score, "keep_top": 0.35, "min_language_docs": 20, "mid_band": 0.2, "mid_keep": 0.25}
    thresholds = build_thresholds(write_scores(tmp_path, langs, fasttext, encoder), policy, str(tmp_path / "t.json"))
    assert set(thresholds["languages"]) == {ALL_LANGUAGES, "en", "de"}  # yo has too few documents
    for lang, rows in (("en", slice(0, 600)), ("de", slice(600, 900))):
        entry = language_entry(thresholds, lang)
        values = document_values(entry, fasttext[rows], encoder[rows], score)
        assert abs(np.mean(values >= entry["cut"]) - 0.35) < 0.02
    assert language_entry(thresholds, "yo") is thresholds["languages"][ALL_LANGUAGES]
    assert json.loads((tmp_path / "t.json").read_text()) == thresholds


def test_a_thresholds_file_stops_growing_with_documents_once_each_language_has_its_entry(tmp_path):
    """What the cost plan takes for select_thresholds' output: a bound set by the languages, not the
    documents (its calibrated bytes per document, times a Common Crawl snapshot, were 395 GB)."""
    rng = np.random.default_rng(5)
    policy = {"score": "ensemble", "keep_top": 0.35, "min_language_docs": 20, "mid_band": 0.2, "mid_keep": 0.25}
    sizes = {}
    for documents in (3_000, 30_000):
        langs = rng.choice(["en", "de", "fr", "yo"], documents).tolist()
        scores = rng.random(documents).astype(np.float32), rng.random(documents).astype(np.float32)
        build_thresholds(write_scores(tmp_path / str(documents), langs, *scores), policy, str(tmp_path / f"{documents}.json"))
        sizes[documents] = (tmp_path / f"{documents}.json").stat().st_size
    assert sizes[30_000] <= largest_file_bytes(4, policy) < 1.2 * sizes[30_000]
    assert abs(sizes[30_000] - sizes[3_000]) < 0.01 * sizes[3_000]


@pytest.mark.parametrize("score", ["fasttext", "ensemble"])
def test_a_snapshot_read_part_by_part_gets_numpys_quantiles_of_its_scores(tmp_path, score):
    """The parts are read one at a time, never held together, by one process or several: every
    sketch point and cut is np.quantile's over the whole snapshot's scores, to the last bit."""
    rng = np.random.default_rng(3)
    rows, langs, fasttext, encoder = [], [], [], []
    for index, size in enumerate((700, 1, 0, 1300)):
        part_langs = rng.choice(["en", "de", "yo"], size, p=[0.7, 0.29, 0.01]).tolist()
        # ties too: many documents with the same score
        part_fasttext = np.round(rng.random(size), 2 if index else 7).astype(np.float32)
        part_encoder = rng.beta(2, 5, size).astype(np.float32)
        rows += write_scores(tmp_path / str(index), part_langs, part_fasttext, part_encoder)
        langs += part_langs
        fasttext.append(part_fasttext)
        encoder.append(part_encoder)
    fasttext, encoder = np.concatenate(fasttext), np.concatenate(encoder)
    policy = {"score": score, "keep_top": 0.35, "min_language_docs": 30, "mid_band": 0.2, "mid_keep": 0.25}
    thresholds = build_thresholds(rows, policy, str(tmp_path / "t.json"))
    for workers in (2, 3):  # the parts shared among processes: the same bytes
        build_thresholds(rows, policy, str(tmp_path / f"t{workers}.json"), workers)
        assert (tmp_path / f"t{workers}.json").read_bytes() == (tmp_path / "t.json").read_bytes()
    assert list(thresholds["languages"]) == [ALL_LANGUAGES, "de", "en"]
    grid = np.linspace(0, 1, 1001)
    for lang, entry in thresholds["languages"].items():
        chosen = np.ones(len(langs), bool) if lang == ALL_LANGUAGES else np.array(langs) == lang
        assert entry["documents"] == chosen.sum()
        assert entry["sketches"]["fasttext"] == [round(float(v), 7) for v in np.quantile(fasttext[chosen], grid)]
        assert entry["sketches"]["encoder"] == [round(float(v), 7) for v in np.quantile(encoder[chosen], grid)]
        values = document_values(entry, fasttext[chosen], encoder[chosen], score)
        assert entry["cut"] == np.quantile(values, 0.65) and entry["mid_floor"] == np.quantile(values, 0.45)


def test_a_score_that_is_not_a_probability_is_refused_with_its_part_and_row(tmp_path):
    rows = write_scores(tmp_path, ["en", "de"], np.array([0.5, np.nan], np.float32), np.array([0.1, 0.2], np.float32))
    with pytest.raises(ValueError, match=r"part p: the fastText score of row 1 is nan, not a number in \[0, 1\]"):
        build_thresholds(rows, {"score": "fasttext", "keep_top": None, "min_language_docs": 1, "mid_band": 0.0,
                                "mid_keep": 0.0}, str(tmp_path / "t.json"))
    assert not (tmp_path / "t.json").exists()


def test_percentile_of_a_sketch():
    sketch = list(np.linspace(0, 1, 1001))
    assert np.allclose(percentile(sketch, np.array([0.0, 0.25, 1.0])), [0.0, 0.25, 1.0])
    flat = [0.5] * 1001
    assert percentile(flat, np.array([0.1, 0.9])).tolist() == [0.5, 0.5]


def test_script_share():
    assert script_share("Привет, как дела?", "ru") == 1.0
    assert script_share("Привет hello", "ru") == pytest.approx(6 / 11)
    assert script_share("東京はきれいです。カメラ", "ja") == 1.0
    assert script_share("Habari ya asubuhi", "sw") == 1.0 and script_share("Хабари", "sw") == 0.0
    assert script_share("1234 !!", "en") == 1.0
