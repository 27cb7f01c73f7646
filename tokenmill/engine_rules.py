"""Which rule runs each engine of the stages that have a GPU variant: one table that the workflow
(rules/common.smk, tokenmill.plan, tokenmill.synth.sources) and the cost plan (tokenmill.cost) read."""

from __future__ import annotations

from tokenmill.config import generator_settings, source_ocr

ENGINE_RULES = {
    "ocr": {"tesseract": "ocr", "vllm": "ocr_vllm"},
    "generate": {"transformers": "generate", "vllm": "generate_vllm"},
    "annotate": {"transformers": "annotate", "vllm": "annotate_vllm"},
}
STAGE_OF_RULE = {rule: stage for stage, rules in ENGINE_RULES.items() for rule in rules.values()}
# the rules of long-context chains, which run for the sources chains.sources names only
CHAIN_RULES = ("chain_model", "chain_vectors", "chain_groups")


def ocr_rule(config: dict, source: str) -> str | None:
    """The rule that reads a source's scanned pages (ocr or ocr_vllm); None for a source without OCR."""
    engine = source_ocr(config, source)
    return None if engine == "none" else ENGINE_RULES["ocr"][engine]


def generation_rule(config: dict, generator: str, stage: str) -> str:
    """The rule of `stage` (generate or annotate) for the engine of synthetic.generators.<generator>."""
    return ENGINE_RULES[stage][generator_settings(config, generator)["engine"]]


def makes_part_job(rule: str, config: dict, source: str, kind: str) -> bool:
    """Whether a per-part rule makes a job for a part of `source` (of `kind`): an OCR rule for the
    sources whose engine it runs, a generation rule for the synthetic sources whose generator's
    engine it runs, a chain rule for the sources chains.sources names, every other rule for every
    part."""
    if rule in CHAIN_RULES:
        return chained(config, source)
    stage = STAGE_OF_RULE.get(rule)
    if stage == "ocr":
        return ocr_rule(config, source) == rule
    if stage == "generate":
        return kind == "synthetic" and generation_rule(
            config, config["sources"][source]["synthetic"]["generator"], "generate") == rule
    return True


def chained(config: dict, source: str) -> bool:
    """Whether the chain rules run for `source` (chains.sources names it)."""
    return source in config["chains"]["sources"]


def makes_annotate_job(rule: str, config: dict) -> bool:
    """Whether an annotate rule runs: annotate is enabled and its generator's engine is the rule's."""
    annotate = config["synthetic"]["annotate"]
    return annotate["enabled"] and generation_rule(config, annotate["generator"], "annotate") == rule
