"""Synthetic rephrasing: a small real generator trained on the sample's real articles, run
through transformers on the CPU, and the quality checks that must find its text poor."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM

from tokenmill.config import schema_settings

from tokenmill.synth.generator import Sampling, TrainSettings, build_prompt, generate, load_generator, train_generator
from tokenmill.synth.quality import (distinguisher_auc, failure_reason, grounding, ngram_entropy, repeated_share,
                                     type_token_ratio)
from tokenmill.synth.rephrase import rephrase
from tokenmill.synth.templates import TEMPLATES, resolve_templates

REPO = Path(__file__).resolve().parents[2]
GOLD = REPO / "data" / "sample" / "gold" / "aeb-ground-truth.json.gz"
SETTINGS = dataclasses.replace(schema_settings(TrainSettings, "synthetic.train"), vocab_size=1024, dim=64, context=256,
                               steps=60)
GREEDY = schema_settings(Sampling, "synthetic.sampling")


def sampling(**changes) -> Sampling:
    return dataclasses.replace(GREEDY, **changes)


def articles() -> list[str]:
    """The 181 real news articles of the sample's gold file (data/sample/SOURCES.md), by key."""
    with gzip.open(GOLD, "rt", encoding="utf-8") as handle:
        gold = json.load(handle)
    return [gold[key]["articleBody"] for key in sorted(gold)]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The generator trained on the first 120 articles; the others are its unseen sources."""
    out = tmp_path_factory.mktemp("generator") / "model"
    return out, train_generator(articles()[:120], str(out), SETTINGS)


def requests_for(generator, texts: list[str], max_new_tokens: int) -> list[tuple[str, str]]:
    template = TEMPLATES["wikipedia"]
    return [(f"doc-{i:03d}", build_prompt(generator, template, text, max_new_tokens)) for i, text in enumerate(texts)]


def test_the_generator_trains_to_the_same_files_and_loads_as_a_transformers_model(trained, tmp_path):
    model_dir, record = trained
    again = train_generator(articles()[:120], str(tmp_path / "again"), SETTINGS)
    assert again["sha256"] == record["sha256"]
    assert record["loss_last"] < record["loss_first"] - 1.0  # it learned something of the text
    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True)
    assert model.config.n_layer == SETTINGS.layers and sum(p.numel() for p in model.parameters()) == record["parameters"]
    assert load_generator(str(model_dir), record["sha256"]).sha256 == record["sha256"]
    with pytest.raises(ValueError, match="synthetic.generator.sha256: .* config pins 0+"):
        load_generator(str(model_dir), "0" * 64, key="synthetic.generator.sha256")
    with pytest.raises(ValueError, match="no model directory"):
        load_generator(str(tmp_path))


def test_a_prompt_holds_as_much_source_as_the_context_leaves(trained):
    generator = load_generator(str(trained[0]))
    longest = max(articles(), key=len)
    prompt = build_prompt(generator, TEMPLATES["qa"], longest, 64)
    tokens = len(generator.tokenizer(prompt, add_special_tokens=False)["input_ids"])
    assert SETTINGS.context - 64 - 8 <= tokens <= SETTINGS.context - 64
    assert prompt.startswith(TEMPLATES["qa"].split("{text}")[0]) and prompt.endswith("Questions and answers:\n")
    with pytest.raises(ValueError, match="leaves no room"):
        build_prompt(generator, TEMPLATES["qa"], longest, SETTINGS.context)


GENERATE = """
import dataclasses, json, sys
from tokenmill.config import schema_settings
from tokenmill.synth.generator import Sampling, generate, load_generator
generator = load_generator(sys.argv[1])
requests = [tuple(pair) for pair in json.load(open(sys.argv[2]))]
greedy = dataclasses.replace(schema_settings(Sampling, "synthetic.sampling"), max_new_tokens=48)
outputs = list(generate(generator, requests, greedy, 1, sys.argv[3]))
"""


def test_a_generation_killed_mid_run_resumes_to_the_bytes_of_an_uninterrupted_one(trained, tmp_path):
    generator = load_generator(str(trained[0]))
    requests = requests_for(generator, articles()[120:136], 48)
    whole = list(generate(generator, requests, sampling(max_new_tokens=48), 1, str(tmp_path / "whole")))
    assert whole == list(generate(generator, requests, sampling(max_new_tokens=48), 1, str(tmp_path / "again")))

    (tmp_path / "requests.json").write_text(json.dumps(requests))
    checkpoints = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.Popen([sys.executable, "-c", GENERATE, str(trained[0]), str(tmp_path / "requests.json"),
                            str(checkpoints)], env=env, start_new_session=True)
    deadline = time.monotonic() + 120
    while not list(checkpoints.glob("batch-*.json")):
        assert run.poll() is None and time.monotonic() < deadline, "the generation never finished a batch"
        time.sleep(0.01)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    stats = {}
    resumed = list(generate(generator, requests, sampling(max_new_tokens=48), 1, str(checkpoints), stats))
    assert 1 <= stats["resumed_batches"] < stats["batches"] == len(requests)
    assert json.dumps(resumed) == json.dumps(whole)
    assert not list(checkpoints.glob("*.tmp-*"))


def test_sampling_is_seeded(trained, tmp_path):
    generator = load_generator(str(trained[0]))
    requests = requests_for(generator, articles()[120:124], 32)

    def sampled(seed: int, run: str) -> list[str]:
        seeded = sampling(max_new_tokens=32, greedy=False, temperature=0.9, seed=seed)
        return [output["text"] for output in generate(generator, requests, seeded, 2, str(tmp_path / run))]

    assert sampled(1, "first") == sampled(1, "second") != sampled(2, "third")


def test_rephrased_documents_carry_their_lineage_and_quality_columns(trained, tmp_path):
    generator = load_generator(str(trained[0]))
    sources = [{"doc_id": f"{i:032x}", "url": f"https://example.org/{i}", "host": "example.org", "text": text}
               for i, text in enumerate(articles()[150:153])]
    templates = resolve_templates({"wikipedia": None, "knowledge_list": None})
    docs = list(rephrase(sources, templates, generator, sampling(max_new_tokens=32), 4, str(tmp_path / "ck"),
                         source="synthetic_news", snapshot_id="gen-1", license_id="MIT",
                         generator_model_id="demo-gpt2", knowledge_cutoff="2026-11-29T00:00:00Z"))
    assert [(doc["derived_from"], doc["prompt_template_id"]) for doc in docs] == \
        [(source["doc_id"], tid) for source in sources for tid in sorted(templates)]
    for doc in docs:
        assert doc["tier"] == "synthetic" and doc["generator_model_id"] == "demo-gpt2"
        assert doc["fetch_ts"] == "2026-11-29T00:00:00Z" and doc["url"].startswith("https://example.org/")
        meta = doc["extract_meta"]
        assert meta["generator_sha256"] == generator.sha256 and meta["finish"] in ("stop", "length")
        assert meta["failure"] in ("", "empty", "refused", "repeated_loop", "truncated")


def test_template_ids_name_their_text_and_a_template_needs_the_source_slot():
    resolved = resolve_templates({"wikipedia": None, "mine": "Summarise: {text}\nSummary:"})
    assert sorted(tid.rsplit("-", 1)[0] for tid in resolved) == ["mine", "wikipedia"]
    assert resolve_templates({"mine": "Summarise: {text}\nSummary:"}) != resolve_templates({"mine": "Sum: {text}"})
    with pytest.raises(ValueError, match="needs {text} exactly once"):
        resolve_templates({"mine": "no slot"})
    with pytest.raises(ValueError, match="no bundled template"):
        resolve_templates({"poem": None})


def test_diversity_and_grounding_tell_a_rewrite_from_a_loop_and_from_an_unrelated_text():
    source, other = [text for text in articles() if len(text) > 3000][:2]
    sentences = source.split(". ")
    rewrite = ". ".join(reversed(sentences[:6]))
    loop = " ".join(["the game is the game and"] * 40)
    assert grounding(rewrite, source) == 1.0
    assert grounding(other[:600], source) < 0.5
    assert type_token_ratio(loop) < 0.1 < 0.5 < type_token_ratio(source)
    assert ngram_entropy(loop) < 3 < 8 < ngram_entropy(source)  # bits
    assert repeated_share(loop) > 0.9 and repeated_share(source) < 0.05


@pytest.mark.parametrize("text, finish, reason", [
    ("", "stop", "empty"),
    ("\n\n  ...\n", "length", "empty"),
    ("I'm sorry, but I cannot rewrite this text.", "stop", "refused"),
    ("As an AI language model, I do not have opinions.", "stop", "refused"),
    (" ".join(["the game is the game and"] * 20), "length", "repeated_loop"),
    ("Gaming used to be simple: people bought a game and played it to the end", "length", "truncated"),
    ("Gaming used to be simple: people bought a game and played it to the end.", "stop", ""),
])
def test_generation_failures_are_named(text, finish, reason):
    assert failure_reason(text, finish) == reason


def test_the_distinguisher_flags_the_small_generators_text_and_not_real_text(trained, tmp_path):
    generator = load_generator(str(trained[0]))
    real = articles()[120:]
    requests = requests_for(generator, real, 64)
    synthetic = [output["text"] for output in generate(
        generator, requests, sampling(max_new_tokens=64, greedy=False, temperature=0.9, seed=3), 8, str(tmp_path / "ck"))]
    flagged = distinguisher_auc(real, synthetic)
    assert flagged["auc"] > 0.95 and flagged["synthetic"] == len(real) == 61
    texts = articles()
    unflagged = distinguisher_auc(texts[0::2], texts[1::2])
    assert 0.3 < unflagged["auc"] < 0.8
