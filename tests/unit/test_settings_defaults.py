"""One owner per setting: config/config.schema.yaml holds every default (tokenmill.config.validate
fills them in), and a settings dataclass takes its values from the validated config. Each one
mirrors its config section key for key and has no default of its own, so a value can neither
drift from the schema's nor be silently left out. Tests and benchmarks build settings with the
schema's values through tokenmill.config.schema_settings."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

from tokenmill.ablate.proxy import ProxySettings
from tokenmill.chains import ChainParams
from tokenmill.config import load_schema, schema_settings
from tokenmill.decontaminate import Benchmark, DecontaminationSettings
from tokenmill.dedup.minhash import CodeBands, MinHashParams
from tokenmill.dedup.minhash_cluster import ClusterSettings
from tokenmill.extract.ocr import OcrSettings
from tokenmill.extract.pdf_settings import PdfRouting, PdfSettings
from tokenmill.holdout import HoldoutRules
from tokenmill.quality.encoder import EncoderSettings
from tokenmill.quality.fasttext import FastTextSettings
from tokenmill.score import ScoreSettings
from tokenmill.select.judge import Policy
from tokenmill.shards.validation import ValidationLimits
from tokenmill.synth.generator import Sampling, TrainSettings

PACKAGE = Path(__file__).resolve().parents[2] / "tokenmill"
MINHASH_SIGNATURE = ("permutations", "bands", "rows", "ngram", "seed")


@dataclasses.dataclass(frozen=True)
class Mirror:
    settings: type
    section: str  # dotted path in the config; "*" is any entry of a list or of a map
    # schema keys the dataclass does not take -> where they go instead
    not_taken: dict[str, str] = dataclasses.field(default_factory=dict)
    # fields that are no config key -> why they are constants (they may keep a default)
    constants: dict[str, str] = dataclasses.field(default_factory=dict)


MIRRORS = [
    Mirror(MinHashParams, "minhash", not_taken={
        "bucket_cap": "ClusterSettings' (minhash_cluster only; signatures do not depend on it)",
        "tasks": "MPI ranks: the minhash_cluster and select rules' threads and resources (tokenmill.cost.mpi_ranks)",
        "rank_memory_gb": "a rank's memory: sizes minhash.tasks auto and is the MPI rules' mem_mb_per_cpu",
        "cross_snapshot": "--bands/--rows/--false-positive-rate of the cross_snapshot_index and _dedup rules",
        "code": "CodeBands (minhash.code)"}),
    Mirror(CodeBands, "minhash.code"),
    Mirror(ChainParams, "chains", not_taken={
        "sources": "which sources the chain rules run for (tokenmill.engine_rules.makes_part_job)",
        "sample_documents": "how many documents chain_model reads (tokenmill.chains.sample_per_part)"}, constants={
        "dims": "the topic vector's length: int8 dot products exact in float32",
        "vocabulary": "the common words whose IDF the topic model keeps",
        "fit_iterations": "k-means rounds of the topic model",
        "max_chars": "characters of a document its topic is read from",
        "bytes_per_token": "a chain's tokens are estimated before the tokenizer exists",
        "permutations": "minhash.permutations, given by chain_params",
        "leaf_size": "documents whose neighbour graph is exact together",
        "neighbours": "k of the nearest-neighbour graph",
        "seed": "the run's top-level seed, given by chain_params"}),
    Mirror(ProxySettings, "ablate.proxy"),
    Mirror(ClusterSettings, "minhash", not_taken={
        **{key: "MinHashParams' (written by score, read back from the signatures)" for key in MINHASH_SIGNATURE},
        "tasks": "MPI ranks: the minhash_cluster and select rules' threads and resources (tokenmill.cost.mpi_ranks)",
        "rank_memory_gb": "a rank's memory: sizes minhash.tasks auto and is the MPI rules' mem_mb_per_cpu",
        "cross_snapshot": "--bands/--rows/--false-positive-rate of the cross_snapshot_index and _dedup rules",
        "code": "CodeBands (minhash.code), which score reads"}),
    Mirror(FastTextSettings, "quality.fasttext", constants={
        "min_count": "fastText's minCount, fixed at 1 (every word of the small labelled set counts)",
        "max_chars": "characters of a document read by training and scoring alike (fasttext.MAX_CHARS)"}),
    Mirror(EncoderSettings, "quality.encoder", not_taken={
        "parts_per_job": "parts per score_quality_encoder job: planning (tokenmill.plan), not the model",
        "train_on": "which labels the train_quality_encoder rule reads (its input), not the model"}),
    Mirror(DecontaminationSettings, "decontamination", not_taken={
        "benchmarks": "carved by carve_evalsets; the index reads the carve receipt (Benchmark)"}),
    Mirror(Benchmark, "decontamination.benchmarks.*"),
    Mirror(ValidationLimits, "shards.validation"),
    Mirror(PdfSettings, "extract.pdf"),
    Mirror(PdfRouting, "extract.pdf", not_taken={
        key: "PdfSettings' (running lines, dropped after the pages are routed to OCR)"
        for key in ("margin_band", "margin_lines", "repeated_share", "margin_max_words", "margin_min_gap")}),
    Mirror(OcrSettings, "extract.ocr", not_taken={
        "engine": "which rule reads a source's pages (ocr or ocr_vllm): tokenmill.config.source_ocr, for the workflow"}),
    Mirror(TrainSettings, "synthetic.train", not_taken={
        "sources": "what the train_generator rule reads (its input documents), not the model"}),
    Mirror(Sampling, "sources.*.synthetic.sampling"),
    Mirror(Sampling, "synthetic.annotate.sampling"),
]

# Settings dataclasses that are not one section: they still take every value, defaulting none.
ASSEMBLED = {
    HoldoutRules: "one source's holdout predicate, from holdout.web and holdout.time_forward (from_config)",
    ScoreSettings: "the score job's model and file paths with langid.max_chars and MinHashParams",
    Policy: "the validated `select` section, whole, with the top-level seed",
}


SETTINGS_NAME = re.compile(r"(Settings|Params|Limits|Rules|Policy)$")


def schema_section(path: str) -> dict:
    """The schema of config section `path` ("*": the entries of a list or map)."""
    node = load_schema()
    for key in path.split("."):
        if key == "*":
            node = node["items"] if "items" in node else node["additionalProperties"]
        else:
            node = node["properties"][key]
    return node


def section_keys(path: str) -> set[str]:
    return set(schema_section(path)["properties"])


def every_section(node: dict, path: str = "") -> dict[str, set[str]]:
    sections = {path: set(node["properties"])} if "properties" in node else {}
    children = [(f"{path}.{key}".lstrip("."), child) for key, child in node.get("properties", {}).items()]
    children += [(f"{path}.*".lstrip("."), node[key]) for key in ("items", "additionalProperties")
                 if isinstance(node.get(key), dict)]
    for child_path, child in children:
        sections.update(every_section(child, child_path))
    return sections


def own_defaults(settings: type, allowed=()) -> list[str]:
    return [field.name for field in dataclasses.fields(settings) if field.name not in allowed
            and (field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING)]


def name_of(value) -> str:
    return value.settings.__name__ if isinstance(value, Mirror) else value.__name__


@pytest.mark.parametrize("mirror", MIRRORS, ids=name_of)
def test_fields_are_the_keys_of_the_section(mirror):
    fields = {field.name for field in dataclasses.fields(mirror.settings)}
    keys = section_keys(mirror.section)
    name, section = mirror.settings.__name__, mirror.section
    assert not set(mirror.not_taken) - keys, f"{name}: not_taken lists keys config {section} does not have"
    assert not set(mirror.not_taken) & fields, f"{name}: not_taken lists keys that are its fields"
    assert not set(mirror.constants) - fields, f"{name}: constants lists keys that are not its fields"
    assert not set(mirror.constants) & keys, f"{name}: constants lists config keys (config {section} owns them)"
    assert not fields - keys - set(mirror.constants), \
        f"{name} has fields config {section} lacks: {sorted(fields - keys - set(mirror.constants))}"
    assert not keys - fields - set(mirror.not_taken), \
        f"config {section} has keys {name} ignores: {sorted(keys - fields - set(mirror.not_taken))}"


@pytest.mark.parametrize("settings", [m.settings for m in MIRRORS] + list(ASSEMBLED), ids=name_of)
def test_no_defaults_of_its_own(settings):
    constants = next((m.constants for m in MIRRORS if m.settings is settings), {})
    assert not own_defaults(settings, constants), (
        f"{settings.__name__} defaults {own_defaults(settings, constants)}: config/config.schema.yaml owns "
        "defaults; take the value from the validated config (tests: tokenmill.config.schema_settings)")


@pytest.mark.parametrize("mirror", [m for m in MIRRORS if "*" not in m.section], ids=name_of)
def test_the_schemas_values_build_it(mirror):
    settings = schema_settings(mirror.settings, mirror.section)
    defaults = {key: spec["default"] for key, spec in schema_section(mirror.section)["properties"].items()
                if "default" in spec}
    values = dataclasses.asdict(settings)
    assert {key: values[key] for key in values if key in defaults} == \
        {key: defaults[key] for key in values if key in defaults}


def test_every_settings_dataclass_is_listed():
    """A dataclass named like settings, or whose fields are mostly the keys of one config section,
    is listed above (found in the source, so a new one cannot be forgotten)."""
    sections = every_section(load_schema())
    listed = {f"{cls.__module__}.{cls.__name__}" for cls in [m.settings for m in MIRRORS] + list(ASSEMBLED)}
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ClassDef) and any("dataclass" in ast.unparse(d) for d in node.decorator_list)):
                continue
            fields = {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}
            shared = max((len(fields & keys) for keys in sections.values()), default=0)
            if SETTINGS_NAME.search(node.name) or (shared >= 2 and 2 * shared > len(fields)):
                found.add(f"{module}.{node.name}")
    assert not found - listed, f"settings dataclasses missing from this test: {sorted(found - listed)}"
