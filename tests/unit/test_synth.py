"""Synthetic rephrasing: a small real generator trained on the sample's real articles, run
through transformers on the CPU, and the quality checks that must find its text poor."""

from __future__ import annotations

import dataclasses
import gzip
import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from transformers import AutoModelForCausalLM

from tests.conftest import built_once
from tests.unit.test_decontaminate import index, index_dir, plant  # noqa: F401 (fixtures)
from tokenmill.config import schema_defaults, schema_settings
from tokenmill.decontaminate import contaminated_documents, decontamination_rows
from tokenmill.hashing import doc_id_for
from tokenmill.io import read_json, write_json, write_parquet
from tokenmill.quality.fasttext import check_label_counts
from tokenmill.synth.annotate import parse_score
from tokenmill.synth.generator import (Sampling, TrainSettings, batches, build_prompt, generate, load_generator,
                                       train_generator)
from tokenmill.synth.quality import (distinguisher_auc, document_checks, failure_reason, grounding, ngram_entropy,
                                     repeated_share, source_overlap, type_token_ratio)
from tokenmill.synth.templates import TEMPLATES, resolve_templates
from tokenmill.synth.vllm import GeneratorUnavailable, vllm_generator

REPO = Path(__file__).resolve().parents[2]
GOLD = REPO / "data" / "sample" / "gold" / "aeb-ground-truth.json.gz"
SETTINGS = dataclasses.replace(schema_settings(TrainSettings, "synthetic.train"), vocab_size=1024, dim=64, context=256,
                               steps=60)
GREEDY = schema_settings(Sampling, "synthetic.annotate.sampling")


def sampling(**changes) -> Sampling:
    return dataclasses.replace(GREEDY, **changes)


def articles() -> list[str]:
    """The 181 real news articles of the sample's gold file (data/sample/SOURCES.md), by key."""
    with gzip.open(GOLD, "rt", encoding="utf-8") as handle:
        gold = json.load(handle)
    return [gold[key]["articleBody"] for key in sorted(gold)]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The generator trained on the first 120 articles; the others are its unseen sources. Trained
    once per run of the suite (built_once): both pytest-xdist workers run tests of this module."""
    def train(folder: Path) -> None:
        write_json(folder / "record.json", train_generator(articles()[:120], str(folder / "model"), SETTINGS))

    folder = built_once(tmp_path_factory, "trained-generator", train)
    return folder / "model", read_json(folder / "record.json")


def requests_for(generator, texts: list[str], max_new_tokens: int) -> tuple[list[str], list[str]]:
    """(keys, prompts) of the texts under the Wikipedia template."""
    template = TEMPLATES["wikipedia"]
    return ([f"doc-{i:03d}" for i in range(len(texts))],
            [build_prompt(generator, template, text, max_new_tokens).text for text in texts])


def run(generator, keys: list[str], prompts: list[str], settings: Sampling, batch_size: int, cache, stats=None,
        measured=None):
    return generate(generator, keys, prompts.__getitem__, settings, batch_size, str(cache), stats, measured)


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
    tokens = len(generator.tokenizer(prompt.text, add_special_tokens=False)["input_ids"])
    assert SETTINGS.context - 64 - 8 <= tokens <= SETTINGS.context - 64
    assert prompt.text.startswith(TEMPLATES["qa"].split("{text}")[0]) and prompt.text.endswith("Questions and answers:\n")
    assert longest[:prompt.source_chars] in prompt.text and prompt.source_chars < len(longest)
    with pytest.raises(ValueError, match="leaves no room"):
        build_prompt(generator, TEMPLATES["qa"], longest, SETTINGS.context)
    # every article fits, whatever tokens the template and the text make where they join
    for text in articles():
        made = build_prompt(generator, TEMPLATES["wikipedia"], text, 96).text
        assert len(generator.tokenizer(made, add_special_tokens=False)["input_ids"]) <= SETTINGS.context - 96


GENERATE = """
import dataclasses, json, sys
from tokenmill.config import schema_settings
from tokenmill.synth.generator import Sampling, generate, load_generator
generator = load_generator(sys.argv[1])
keys, prompts = json.load(open(sys.argv[2]))
greedy = dataclasses.replace(schema_settings(Sampling, "synthetic.annotate.sampling"), max_new_tokens=48)
generate(generator, keys, prompts.__getitem__, greedy, 1, sys.argv[3])
"""


def test_a_generation_killed_mid_run_resumes_to_the_bytes_of_an_uninterrupted_one(trained, tmp_path):
    generator = load_generator(str(trained[0]))
    keys, prompts = requests_for(generator, articles()[120:136], 48)
    whole = run(generator, keys, prompts, sampling(max_new_tokens=48), 1, tmp_path / "whole")
    assert whole == run(generator, keys, prompts, sampling(max_new_tokens=48), 1, tmp_path / "again")

    (tmp_path / "requests.json").write_text(json.dumps([keys, prompts]))
    cache = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    process = subprocess.Popen([sys.executable, "-c", GENERATE, str(trained[0]), str(tmp_path / "requests.json"),
                                str(cache)], env=env, start_new_session=True)
    deadline = time.monotonic() + 120
    while not list(cache.glob("*.batch.json")):
        assert process.poll() is None and time.monotonic() < deadline, "the generation never finished a batch"
        time.sleep(0.01)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    stats, measured = {}, {}
    resumed = run(generator, keys, prompts, sampling(max_new_tokens=48), 1, cache, stats, measured)
    assert 1 <= measured["cached_batches"] < stats["batches"] == len(keys)
    assert measured["cached_batches"] + measured["generated_batches"] == len(keys)
    assert json.dumps(resumed) == json.dumps(whole)
    assert not list(cache.glob("*.tmp-*"))
    # the cache holds the outputs only: its bytes are those of an uninterrupted run's
    assert sorted((path.name, path.read_bytes()) for path in cache.glob("*.batch.json")) == \
        sorted((path.name, path.read_bytes()) for path in (tmp_path / "whole").glob("*.batch.json"))
    (device, timing), = measured["devices"].items()
    assert device.startswith("cpu (") and timing["new_tokens"] > 0 and measured["tokens_per_second"][device] > 0


def test_a_request_added_generates_its_own_batch_only_and_the_cache_keeps_the_current_batches(trained, tmp_path):
    generator = load_generator(str(trained[0]))
    keys, prompts = requests_for(generator, articles()[120:160], 16)
    settings = sampling(max_new_tokens=16)
    second_stats, measured = {}, {}
    first = run(generator, keys[1:], prompts[1:], settings, 4, tmp_path / "cache")
    second = run(generator, keys, prompts, settings, 4, tmp_path / "cache", second_stats, measured)
    assert second[1:] == first  # the other requests' outputs are the cached ones, byte for byte
    assert second_stats["batches"] >= 5 and measured["cached_batches"] >= second_stats["batches"] - 2
    assert len(list((tmp_path / "cache").glob("*.batch.json"))) == second_stats["batches"]
    lengths = [len(prompt) for prompt in prompts]
    cut = batches(keys, lengths, 4)
    assert sorted(index for batch in cut for index in batch) == list(range(len(keys))) and max(map(len, cut)) <= 8
    assert batches(keys, lengths, 1) == [[i] for i in sorted(range(len(keys)), key=lambda i: (lengths[i], keys[i]))]


def test_sampling_is_seeded(trained, tmp_path):
    generator = load_generator(str(trained[0]))
    keys, prompts = requests_for(generator, articles()[120:124], 32)

    def sampled(seed: int, where: str) -> list[str]:
        seeded = sampling(max_new_tokens=32, greedy=False, temperature=0.9, seed=seed)
        return [output["text"] for output in run(generator, keys, prompts, seeded, 2, tmp_path / where)]

    assert sampled(1, "first") == sampled(1, "second") != sampled(2, "third")


def test_a_rewrite_of_a_document_with_a_planted_benchmark_item_is_contaminated(trained, index, tmp_path):
    """A real GSM8K item planted into a real article: the rewrite the generator writes of it holds
    no 13-gram run of the item, and is flagged all the same, by lineage."""
    with gzip.open(REPO / "data/evalsets/gsm8k/test.jsonl.gz", "rt", encoding="utf-8") as handle:
        item = json.loads(handle.readline())
    texts = articles()[140:144]
    texts[2] = plant(texts[2], f"{item['question']} {item['answer']}")[0]
    origin = [{"doc_id": doc_id_for(text), "url": f"https://example.org/{n}", "text": text} for n, text in enumerate(texts)]
    origin_table = decontamination_rows(origin, index)
    assert origin_table.column("contaminated_by").to_pylist() == [[], [], ["gsm8k"], []]
    write_parquet(tmp_path / "origin.parquet", origin_table)
    generator = load_generator(str(trained[0]))
    keys, prompts = requests_for(generator, texts, 48)
    outputs = run(generator, keys, prompts, sampling(max_new_tokens=48, greedy=False, seed=5), 2, tmp_path / "cache")
    rewrites = [{"doc_id": doc_id_for(output["text"]), "url": doc["url"], "derived_from": doc["doc_id"],
                 "text": output["text"]} for doc, output in zip(origin, outputs)]
    assert decontamination_rows(rewrites, index).column("contaminated_by").to_pylist() == [[]] * 4  # not its words
    inherited = decontamination_rows(rewrites, index, contaminated_documents(str(tmp_path / "origin.parquet")))
    assert inherited.column("contaminated_by").to_pylist() == [[], [], ["gsm8k"], []]
    assert inherited.column("derived_contaminated_by").to_pylist() == [[], [], ["gsm8k"], []]
    assert inherited.column("matched_spans").to_pylist()[2] == []


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


def test_the_checks_of_a_generated_text_against_its_source():
    source = max(articles(), key=len)
    settings = schema_defaults("synthetic.quality")
    copied = source[:source.rfind(" ", 0, 800)]  # a copy of its first words
    checks = document_checks(copied, "stop", source, settings)
    assert checks["failure"] == "" and checks["grounding"] == 1.0 and checks["source_overlap"] == 1.0
    assert source_overlap(" ".join(reversed(copied.split())), source, 5) < 0.1
    unrelated = document_checks(articles()[0][:800], "length", source, settings)
    assert unrelated["failure"] == "truncated" and unrelated["grounding"] < 0.6 and unrelated["source_overlap"] < 0.05
    assert document_checks("", "stop", source, settings)["grounding"] is None


def test_the_distinguisher_flags_the_small_generators_text_and_not_real_text(trained, tmp_path):
    generator = load_generator(str(trained[0]))
    real = articles()
    keys, prompts = requests_for(generator, real, 64)
    synthetic = [output["text"] for output in run(generator, keys, prompts, sampling(
        max_new_tokens=64, greedy=False, temperature=0.9, seed=3), 16, tmp_path / "cache")]
    flagged = distinguisher_auc(real, synthetic)
    assert flagged["auc"] > 0.95 and flagged["synthetic"] == len(real) == 181
    # the real texts are cut to the synthetic ones' median length: length alone tells nothing
    assert flagged["real_words"] == sorted(len(text.split()) for text in synthetic)[90]
    unflagged = distinguisher_auc(real[0::2], real[1::2])
    assert 0.3 < unflagged["auc"] < 0.8
    assert distinguisher_auc(real[:1], synthetic[:1])["auc"] is None  # a half without both kinds


@pytest.mark.parametrize("output, score, status", [
    ("The extract explains photosynthesis step by step.\nEducational score: 4", 4, "parsed"),
    ("Justification ... **Educational Score:** 3", 3, "parsed"),
    ("Educational score: 2\nOn second thought, Educational score: 5", 5, "parsed"),
    ("I would give it a score: 1", 1, "parsed"),
    ("Overall 2/5.", 2, "parsed"),
    ("Educational score: 7", None, "out_of_range"),
    ("Educational score: 3.5", None, "out_of_range"),
    ("This page is about cooking.", None, "no_score"),
    ("  \n", None, "empty"),
])
def test_rubric_answers_are_parsed_or_counted_by_reason(output, score, status):
    assert parse_score(output) == (score, status)


def test_too_few_annotation_labels_refuse_to_train_the_encoder(tmp_path):
    labels = tmp_path / "labels.jsonl.gz"
    with gzip.open(labels, "wt", encoding="utf-8") as handle:
        handle.write("".join(json.dumps({"label": label, "split": "train", "text": "x"}) + "\n"
                             for label in ["hq"] * 25 + ["lq"] * 3))
    with pytest.raises(ValueError, match="quality.encoder.train_on: annotate parsed 25 hq and 3 lq"):
        check_label_counts(str(labels), 20)
    check_label_counts(str(labels), 3)


def test_the_vllm_engine_says_what_is_missing_where_vllm_is_not_installed(trained):
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is installed here")
    with pytest.raises(GeneratorUnavailable, match="synthetic.generators.big: the vllm engine needs the vllm package"):
        vllm_generator(str(trained[0]), None, 0.85, key="synthetic.generators.big")
