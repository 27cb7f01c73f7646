"""What the workflow decides for synthetic sources and annotate (tokenmill.synth.sources), on the
demo config's real plan."""

from __future__ import annotations

import json

import pytest

from tests.conftest import demo_config
from tokenmill import layout
from tokenmill.config import ConfigError, validate
from tokenmill.plan import Plan, list_inputs
from tokenmill.synth.sources import ANNOTATE, Generation

PATHS = layout.results_paths("results")
BUNDLED = "data/sample/quality/aeb-quality-labels.jsonl.gz"


def generation(tmp_path, **changes) -> Generation:
    """The demo config's Generation; `changes` replace top-level sections or sources (None drops one)."""
    config = demo_config()
    for key, value in changes.items():
        if key in config["sources"] or key.startswith("source_"):
            name = key.removeprefix("source_")
            if value is None:
                config["sources"].pop(name)
            else:
                config["sources"][name] = value
        else:
            config[key] = value
    config = validate(config)
    plan = Plan(list_inputs(config, str(tmp_path / "plan")), config["quality"]["encoder"]["parts_per_job"],
                {kind: PATHS[kind] for kind in layout.PART_OUTPUTS})
    return Generation(config, plan, PATHS, BUNDLED)


def test_a_synthetic_part_reads_the_part_of_the_same_name_in_the_source_it_rewrites(tmp_path):
    synth = generation(tmp_path)
    assert synth.sources == ["aeb_rephrased"]
    origin = synth.origin_part("aeb_rephrased", "built-2026-11-29", "aeb-articles-0000")
    assert (origin.source, origin.snapshot, origin.part) == ("aeb_articles", "built-2026-11-29", "aeb-articles-0000")
    assert synth.origin_files("docs", "aeb_rephrased", "built-2026-11-29", "aeb-articles-0000") == \
        ["results/extract/docs/aeb_articles/built-2026-11-29/aeb-articles-0000.jsonl.zst"]
    assert synth.origin_files("docs", "aeb_articles", "built-2026-11-29", "aeb-articles-0000") == []
    assert synth.origin_snapshot("results/plan/{source}/{snapshot}.tsv", "aeb_rephrased", "built-2026-11-29") == \
        "results/plan/aeb_articles/built-2026-11-29.tsv"
    assert synth.origin_snapshot_files("langid", "aeb_rephrased", "built-2026-11-29") == [
        f"results/score/langid/aeb_articles/built-2026-11-29/{part}.parquet"
        for part in ("aeb-articles-0000", "aeb-articles-0002")]


def test_generators_their_models_and_the_settings_a_generation_job_reruns_on(tmp_path):
    synth = generation(tmp_path)
    assert synth.generator_of("aeb_rephrased") == synth.generator_of(ANNOTATE) == "demo"
    assert synth.generator_model("demo") == "results/train_generator/model"  # no path: the trained demo model
    assert synth.generator_state("demo") == ""
    settings = json.loads(synth.generation_settings("aeb_rephrased"))
    assert settings["key"] == "synthetic.generators.demo" and settings["source"]["from"] == "aeb_articles"
    assert settings["generator"]["engine"] == "transformers"
    assert json.loads(synth.generation_settings(ANNOTATE))["annotate"]["max_docs"] == 48
    part = synth.plan.part("aeb_rephrased", "built-2026-11-29", "aeb-articles-0000")
    assert synth.generation_stats_file(part) == "results/generate/stats/aeb_rephrased/built-2026-11-29/aeb-articles-0000.json"


def test_a_configured_vllm_generator_sends_generation_and_annotate_to_their_vllm_rules(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    config = demo_config()
    synthetic = {**config["synthetic"], "generators": {"demo": {}, "big": {"engine": "vllm", "path": str(model),
                                                                             "knowledge_cutoff": "2024-01-01T00:00:00Z"}}}
    synthetic["annotate"] = {**synthetic["annotate"], "generator": "big"}
    rephrased = {**config["sources"]["aeb_rephrased"]}
    rephrased["synthetic"] = {**rephrased["synthetic"], "generator": "big"}
    synth = generation(tmp_path, synthetic=synthetic, aeb_rephrased=rephrased,
                       quality={"encoder": {"train_on": "annotate"}})
    assert synth.annotate_rule == "annotate_vllm"
    assert synth.quality_labels == "results/annotate_vllm/labels.jsonl.gz"
    assert synth.generator_model("big") == str(model) and synth.generator_state("big") != ""
    part = synth.plan.part("aeb_rephrased", "built-2026-11-29", "aeb-articles-0002")
    assert synth.generation_stats_file(part) == \
        "results/generate_vllm/stats/aeb_rephrased/built-2026-11-29/aeb-articles-0002.json"


def test_the_encoder_trains_on_the_bundled_labels_unless_told_to_train_on_annotate(tmp_path):
    assert generation(tmp_path).quality_labels == BUNDLED
    synth = generation(tmp_path, quality={"encoder": {"train_on": "annotate"}})
    assert (synth.annotate_rule, synth.quality_labels) == ("annotate", "results/annotate/labels.jsonl.gz")


def test_what_the_demo_generator_trains_on_and_what_annotate_samples(tmp_path):
    synth = generation(tmp_path)
    assert synth.trained_on() == ["aeb_articles"]  # the source the synthetic source rewrites
    assert synth.annotated_sources() == ["aeb_articles"]  # synthetic.annotate.sources
    config = demo_config()
    synthetic = {**config["synthetic"], "train": {**config["synthetic"]["train"], "sources": ["govuk"]}}
    assert generation(tmp_path, synthetic=synthetic).trained_on() == ["govuk"]
    # no synthetic source and annotate samples every source: the generator trains on every source
    synthetic = {**config["synthetic"], "annotate": {**config["synthetic"]["annotate"], "sources": None}}
    synth = generation(tmp_path, synthetic=synthetic, aeb_rephrased=None)
    assert synth.annotated_sources() == synth.trained_on() == sorted(set(config["sources"]) - {"aeb_rephrased"})


def test_an_unknown_prompt_template_is_an_error_naming_its_key(tmp_path):
    rephrased = demo_config()["sources"]["aeb_rephrased"]
    rephrased["synthetic"]["templates"] = {"no_such_template": None}
    with pytest.raises(ConfigError, match=r"config key sources\.aeb_rephrased\.synthetic\.templates: prompt template "
                                          r"'no_such_template'"):
        generation(tmp_path, aeb_rephrased=rephrased)
