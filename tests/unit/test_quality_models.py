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
from tokenmill.config import schema_defaults
from tokenmill.select.thresholds import (ALL_LANGUAGES, ScoreFiles, build_thresholds, document_values, language_entry,
                                         language_values, largest_file_bytes, percentile, thresholds_policy)
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


def write_scores(tmp_path, langs, fasttext, encoder, naturalness=None, lang_conf=None, words=None) -> list[ScoreFiles]:
    """One part's score files as score writes them (naturalness, confidence and words: 0.5, 0.9, 100 where not given)."""
    n = len(langs)
    tmp_path.mkdir(parents=True, exist_ok=True)
    ids = [str(i) for i in range(n)]
    paths = {name: str(tmp_path / f"{name}.parquet")
             for name in ("langid", "quality", "encoder", "naturalness", "heuristics")}
    write_parquet(paths["langid"], pa.table({"doc_id": ids, "lang": langs, "lang_conf": pa.array(
        [0.9] * n if lang_conf is None else lang_conf, pa.float32())}))
    write_parquet(paths["quality"], pa.table({"doc_id": ids, "quality_fasttext": fasttext}))
    write_parquet(paths["encoder"], pa.table({"part": ["p"] * n, "row": list(range(n)), "doc_id": ids,
                                              "quality_encoder": encoder}))
    write_parquet(paths["naturalness"], pa.table({"doc_id": ids, "quality_naturalness": pa.array(
        [0.5] * n if naturalness is None else naturalness, pa.float32())}))
    write_parquet(paths["heuristics"], pa.table({"doc_id": ids, "word_count": [100] * n if words is None else words}))
    return [ScoreFiles("p", paths["langid"], paths["quality"], paths["encoder"], paths["naturalness"],
                       paths["heuristics"])]


EVERY_LANGUAGE = {"fasttext": None, "encoder": None, "naturalness": None}


def quality_policy(valid: dict | None = None, **quality) -> dict:
    """select_thresholds' policy: the schema's, with these select.quality keys, its classifiers valid in `valid`'s languages."""
    return {**thresholds_policy(schema_defaults("select")), **quality, "valid": valid or EVERY_LANGUAGE}


@pytest.mark.parametrize("score", ["fasttext", "encoder", "ensemble", "naturalness"])
def test_per_language_cut_keeps_the_top_share_of_each_language(tmp_path, score):
    rng = np.random.default_rng(0)
    langs = ["en"] * 600 + ["de"] * 300 + ["yo"] * 5
    # German scores sit much lower than English: a global cut would drop most German documents
    fasttext = np.concatenate([rng.beta(5, 2, 600), rng.beta(2, 5, 300), rng.random(5)])
    encoder = np.clip(fasttext + rng.normal(0, 0.1, len(langs)), 0, 1)
    naturalness = np.clip(fasttext + rng.normal(0, 0.2, len(langs)), 0, 1).astype(np.float32)
    scores = {"fasttext": fasttext, "encoder": encoder, "naturalness": naturalness}
    policy = quality_policy(score=score, keep_top=0.35)
    thresholds = build_thresholds(write_scores(tmp_path, langs, fasttext, encoder, naturalness), policy,
                                  str(tmp_path / "t.json"))
    # every language is counted; yo has too few documents for a cut of its own
    assert set(thresholds["languages"]) == {ALL_LANGUAGES, "en", "de", "yo"}
    assert [lang for lang, entry in thresholds["languages"].items() if "cut" in entry] == [ALL_LANGUAGES, "de", "en"]
    for lang, rows in (("en", slice(0, 600)), ("de", slice(600, 900))):
        entry = language_entry(thresholds, lang)
        values = document_values(entry, {name: values[rows] for name, values in scores.items()}, score)
        assert abs(np.mean(values >= entry["cut"]) - 0.35) < 0.02
    assert language_entry(thresholds, "yo") is thresholds["languages"][ALL_LANGUAGES]
    assert json.loads((tmp_path / "t.json").read_text()) == thresholds


def test_a_classifier_cuts_only_the_languages_of_its_labels(tmp_path):
    """The bundled classifiers were trained on English labels: they cut English, and the cut of all
    languages together ("*") is over the English documents only; German gets no classifier cut."""
    rng = np.random.default_rng(1)
    langs = ["en"] * 400 + ["de"] * 400
    fasttext = np.concatenate([rng.beta(5, 2, 400), rng.beta(2, 5, 400)])
    policy = quality_policy({"fasttext": ["en"], "encoder": ["en"], "naturalness": None}, score="fasttext", keep_top=0.5)
    thresholds = build_thresholds(write_scores(tmp_path, langs, fasttext, fasttext), policy, str(tmp_path / "t.json"))
    assert "cut" in thresholds["languages"]["en"] and "cut" not in thresholds["languages"]["de"]
    assert thresholds["languages"][ALL_LANGUAGES]["cut"] == np.quantile(fasttext[:400].astype(np.float64), 0.5)
    values = language_values(thresholds, ["en", "de"], {"fasttext": np.array([0.7, 0.7]), "encoder": np.zeros(2),
                                                         "naturalness": np.zeros(2)})
    assert values[0] == 0.7 and np.isnan(values[1])  # judge scores the German document by naturalness instead


def test_each_language_gets_its_confidence_threshold_and_tier_from_its_own_documents(tmp_path):
    """lid.176 is unsure of Scottish Gaelic: its threshold falls to its own tenth-percentile
    confidence (not below the floor); English keeps min_lang_conf; tiers follow estimated tokens."""
    rng = np.random.default_rng(2)
    langs = ["en"] * 200 + ["gd"] * 200 + ["nn"] * 200 + ["yo"] * 5
    confidence = np.concatenate([rng.uniform(0.8, 1.0, 200), rng.uniform(0.4, 0.7, 200), rng.uniform(0.1, 0.5, 200),
                                 rng.uniform(0.2, 0.3, 5)]).astype(np.float32)
    words = [100_000] * 200 + [1_000] * 200 + [10] * 200 + [10] * 5
    policy = quality_policy()
    policy["tiers"] = {**policy["tiers"], "min_tokens": {"high": 1e7, "medium": 1e5}}
    thresholds = build_thresholds(write_scores(tmp_path, langs, np.zeros(605), np.zeros(605), lang_conf=confidence,
                                               words=words), policy, str(tmp_path / "t.json"))
    languages = thresholds["languages"]
    assert languages["en"]["lang_conf"] == 0.65  # its tenth percentile is above min_lang_conf
    gaelic = np.quantile(confidence[200:400].astype(np.float64), 0.1)
    assert languages["gd"]["lang_conf"] == round(gaelic, 7) and 0.4 < gaelic < 0.65
    assert languages["nn"]["lang_conf"] == 0.3  # its tenth percentile is below the floor
    assert "lang_conf" not in languages["yo"]  # too few documents: min_lang_conf
    assert [languages[lang]["tokens"] for lang in ("en", "gd", "nn")] == [26_000_000, 260_000, 2_600]
    assert [languages[lang]["tier"] for lang in ("en", "gd", "nn", "yo")] == ["high", "medium", "low", "low"]
    assert not any("max_epochs" in entry for entry in languages.values())  # the report's, not a cut: no rerun


def test_a_thresholds_file_stops_growing_with_documents_once_each_language_has_its_entry(tmp_path):
    """What the cost plan takes for select_thresholds' output: a bound set by the languages, not the
    documents (its calibrated bytes per document, times a Common Crawl snapshot, were 395 GB)."""
    rng = np.random.default_rng(5)
    policy = quality_policy(score="ensemble", keep_top=0.35)
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
    policy = quality_policy(score=score, keep_top=0.35, min_language_docs=30)
    thresholds = build_thresholds(rows, policy, str(tmp_path / "t.json"))
    for workers in (2, 3):  # the parts shared among processes: the same bytes
        build_thresholds(rows, policy, str(tmp_path / f"t{workers}.json"), workers)
        assert (tmp_path / f"t{workers}.json").read_bytes() == (tmp_path / "t.json").read_bytes()
    assert [lang for lang, entry in thresholds["languages"].items() if "sketches" in entry] == [ALL_LANGUAGES, "de", "en"]
    grid = np.linspace(0, 1, 1001)
    for lang, entry in thresholds["languages"].items():
        chosen = np.ones(len(langs), bool) if lang == ALL_LANGUAGES else np.array(langs) == lang
        assert entry["documents"] == chosen.sum()
        if "sketches" not in entry:
            continue
        assert entry["sketches"]["fasttext"] == [round(float(v), 7) for v in np.quantile(fasttext[chosen], grid)]
        assert entry["sketches"]["encoder"] == [round(float(v), 7) for v in np.quantile(encoder[chosen], grid)]
        values = document_values(entry, {"fasttext": fasttext[chosen], "encoder": encoder[chosen]}, score)
        assert entry["cut"] == np.quantile(values, 0.65) and entry["mid_floor"] == np.quantile(values, 0.45)


def test_a_score_that_is_not_a_probability_is_refused_with_its_part_and_row(tmp_path):
    rows = write_scores(tmp_path, ["en", "de"], np.array([0.5, np.nan], np.float32), np.array([0.1, 0.2], np.float32))
    with pytest.raises(ValueError, match=r"part p: the fasttext score of row 1 is nan, not a number in \[0, 1\]"):
        build_thresholds(rows, quality_policy(score="fasttext", min_language_docs=1), str(tmp_path / "t.json"))
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
