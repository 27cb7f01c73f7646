"""Configuration: schema validation with defaults, and checks across keys and of named files."""

from __future__ import annotations

import copy
import dataclasses
import functools
import datetime as dt
import os
from pathlib import Path
from typing import TYPE_CHECKING

import yaml

from tokenmill.hashing import sha256_bytes
from tokenmill.io import canonical_json

if TYPE_CHECKING:
    import jsonschema

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "config" / "config.schema.yaml"


class ConfigError(ValueError):
    """A configuration problem; the message names the offending key."""


@functools.cache
def _validator_class():
    """Draft 7 with defaults filled in. jsonschema is imported here, not with this module: the jobs
    read settings through it but never validate, and the import is ~0.08 CPU-s in each of a run's
    hundreds of job processes."""
    import jsonschema

    validator_class = jsonschema.Draft7Validator
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for name, subschema in properties.items():
                if "default" in subschema and name not in instance:
                    instance[name] = copy.deepcopy(subschema["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


def _key_path(error: jsonschema.ValidationError) -> str:
    return ".".join(str(part) for part in error.absolute_path) or "<top level>"


def _describe(error: jsonschema.ValidationError, noun: str = "config key") -> str:
    where = _key_path(error)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        unexpected = sorted(set(error.instance) - set(allowed)) if isinstance(error.instance, dict) else []
        names = ", ".join(repr(name) for name in unexpected)
        hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
        prefix = "" if where == "<top level>" else f"{where}."
        return f"{noun} {prefix}{unexpected[0] if unexpected else '?'}: unknown key {names}{hint}"
    return f"{noun} {where}: {error.message}"


def schema_problems(document: dict, schema: dict, noun: str = "config key") -> list[str]:
    """Every way `document` breaks `schema` (filling defaults in place), each naming its key."""
    errors = sorted(_validator_class()(schema).iter_errors(document),
                    key=lambda e: (list(map(str, e.absolute_path)), e.message))
    return [_describe(error, noun) for error in errors]


def load_schema(path: str | os.PathLike = SCHEMA_PATH) -> dict:
    """The schema as a new dict (the caller may change it): parsed once per process, since a
    dry run, a test session and schema_defaults read it many times."""
    return copy.deepcopy(_parsed_schema(os.fspath(path)))


@functools.lru_cache(maxsize=4)
def _parsed_schema(path: str) -> dict:
    with open(path, encoding="utf-8") as handle:
        return yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def validate(config: dict, schema: dict | str | os.PathLike = SCHEMA_PATH) -> dict:
    """Validate `config` in place, filling defaults; raise ConfigError naming every bad key."""
    if not isinstance(schema, dict):
        schema = load_schema(schema)
    sources = [(name, source) for name, source in (config.get("sources") or {}).items() if isinstance(source, dict)]
    misplaced = [f"config key sources.{name}.fields: only jsonl sources take field names"
                 for name, source in sources if "fields" in source and source.get("kind") != "jsonl"]
    misplaced += [f"config key sources.{name}.urls: only pdf sources take a urls side file"
                  for name, source in sources if source.get("urls") is not None and source.get("kind") != "pdf"]
    misplaced += [f"config key sources.{name}.ocr: a {source.get('kind')} source holds no PDFs to OCR"
                  for name, source in sources
                  if source.get("ocr") not in (None, "none") and source.get("kind") in ("jsonl", "code", "synthetic")]
    misplaced += [f"config key sources.{name}.pdf_responses: only warc sources take it (a {source.get('kind')} "
                  "source holds no PDF responses)"
                  for name, source in sources if "pdf_responses" in source and source.get("kind") != "warc"]
    misplaced += [f"config key sources.{name}.ocr: sources.{name}.pdf_responses is false, so the source makes no "
                  "document of a PDF to OCR"
                  for name, source in sources if source.get("kind") == "warc" and source.get("pdf_responses") is False
                  and source.get("ocr") not in (None, "none")]
    misplaced += [f"config key sources.{name}.{key}: {why}" for name, source in sources
                  for key, why in _misplaced_synthetic_keys(source) if source.get(key) is not None]
    problems = misplaced + schema_problems(config, schema)
    if problems:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(problems))
    for number, benchmark in enumerate(config["decontamination"]["benchmarks"]):
        wanted = int if benchmark["format"] == "csv" else str
        if not all(isinstance(field, wanted) and not isinstance(field, bool) for field in benchmark["fields"]):
            raise ConfigError(f"config key decontamination.benchmarks.{number}.fields: a {benchmark['format']} "
                              f"benchmark takes {'column numbers' if wanted is int else 'field names'}")
    names = [b["name"] for b in config["decontamination"]["benchmarks"]]
    if len(set(names)) != len(names):
        raise ConfigError("config key decontamination.benchmarks: benchmark names must be unique")
    _check_configured(config, "holdout.time_forward.sources", config["holdout"]["time_forward"]["sources"] or [])
    _check_select_policy(config)
    _check_configured(config, "chains.sources", config["chains"]["sources"])
    _check_synthetic(config)
    minhash = config["minhash"]
    if minhash["code"]["bands"] > minhash["bands"]:
        raise ConfigError(f"config key minhash.code.bands: {minhash['code']['bands']} is more than minhash.bands "
                          f"({minhash['bands']}), the band columns a signature has")
    for prefix, section in (("minhash", minhash), ("minhash.cross_snapshot", minhash["cross_snapshot"]),
                            ("minhash.code", minhash["code"])):
        if section["bands"] * section["rows"] > minhash["permutations"]:
            raise ConfigError(f"config key {prefix}.bands: bands x rows = {section['bands'] * section['rows']} "
                              f"exceeds minhash.permutations ({minhash['permutations']})")
    vllm = [name for name in config["sources"] if source_ocr(config, name) == "vllm"]
    if vllm and not config["extract"]["ocr"]["model"]:
        raise ConfigError(f"config key extract.ocr.model: the vllm OCR engine (sources {', '.join(vllm)}) needs a local "
                          "model directory")
    tokenizer = config["tokenizer"]
    if tokenizer["sha256"] and not tokenizer["path"]:
        raise ConfigError("config key tokenizer.sha256: a pin needs tokenizer.path (a trained tokenizer is pinned by its own hash)")
    return config


def _check_configured(config: dict, key: str, sources: list[str]) -> None:
    """Every source that config `key` names is one of config `sources`."""
    for source in sources:
        if source not in config["sources"]:
            raise ConfigError(f"config key {key}: {source!r} is not a configured source")


def _check_band(key: str, band: dict) -> None:
    """A {min, max} band (either bound may be null) that keeps something."""
    if band["min"] is not None and band["max"] is not None and band["min"] > band["max"]:
        raise ConfigError(f"config key {key}.min: {band['min']} is above max {band['max']}: the band keeps nothing")


# A config that sets nothing it need not: one JSONL source (so `sources.source.fields` is filled in too).
_MINIMAL_CONFIG = {"sources": {"source": {"kind": "jsonl", "tier": "crawl", "license_id": "none",
                                          "snapshots": {"snapshot": ["none"]}}}}


def schema_defaults(section: str = "", schema: dict | str | os.PathLike = SCHEMA_PATH):
    """The schema's values of config `section`, a dotted key path ("minhash", "quality.fasttext",
    "sources.source.fields"; "" for the whole config): that section of a minimal config (one JSONL
    source named "source") after `validate`, nested sections filled in. Tests and benchmarks build
    settings from it, so that the schema stays the one owner of every default."""
    value = validate(copy.deepcopy(_MINIMAL_CONFIG), schema)
    for key in filter(None, section.split(".")):
        value = value[key]
    return value


def schema_settings(settings_class: type, section: str):
    """`settings_class` (a settings dataclass) holding the schema's values of config `section`:
    the section's keys that are its fields (MinHashParams takes five of `minhash`'s keys)."""
    values = schema_defaults(section)
    return settings_class(**{field.name: values[field.name] for field in dataclasses.fields(settings_class)
                             if field.init and field.name in values})


def _check_select_policy(config: dict) -> None:
    """Cross-key checks of the provenance policy of `select` (sources, licence dates, cutoffs)."""
    select = config["select"]
    _check_configured(config, "select.exclude_sources", select["exclude_sources"])
    for source in select["heuristics"]["by_source"]:
        if source not in config["sources"]:
            raise ConfigError(f"config key select.heuristics.by_source.{source}: not a configured source")
    for metric, rule in select["heuristics"]["long_document"].items():
        _check_band(f"select.heuristics.long_document.{metric}", rule)
    dates = [("select.as_of", select["as_of"], dt.date.fromisoformat),
             ("select.robots.as_of", select["robots"]["as_of"], dt.date.fromisoformat)]
    dates += [(f"select.licences.{licence}.expires", entry["expires"], dt.date.fromisoformat)
              for licence, entry in select["licences"].items()]
    dates += [(f"select.cutoff.{tier}", value, lambda text: dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))
              for tier, value in select["cutoff"].items()]
    for key, value, parse in dates:
        try:
            if value is not None:
                parse(value)
        except ValueError as error:
            raise ConfigError(f"config key {key}: {value!r} is not a valid date ({error})") from None
    expiring = sorted(licence for licence, entry in select["licences"].items() if entry["expires"])
    if expiring and select["as_of"] is None:
        raise ConfigError(f"config key select.as_of: licence expiries ({', '.join(expiring)}) are evaluated at the "
                          "policy date; set select.as_of (YYYY-MM-DD)")
    if (config["robots"]["warc"] or config["robots"]["files"]) and select["robots"]["as_of"] is None:
        raise ConfigError("config key select.robots.as_of: robots.txt captures are configured (robots.warc, "
                          "robots.files); set the date whose robots state applies (YYYY-MM-DD)")


def _misplaced_synthetic_keys(source: dict) -> list[tuple[str, str]]:
    """(key, why) of the keys a source of its kind must not have."""
    if source.get("kind") != "synthetic":
        return [("synthetic", "only synthetic sources (kind: synthetic) rewrite another source")]
    return [("snapshots", "a synthetic source has the snapshots of the source it rewrites (synthetic.from, "
                          "synthetic.snapshots)"),
            ("engine", "a synthetic source has no HTML to extract")]


def synthetic_sources(config: dict) -> list[str]:
    """The names of the config's synthetic sources, sorted."""
    return sorted(name for name, source in config["sources"].items() if source["kind"] == "synthetic")


def generator_settings(config: dict, name: str) -> dict:
    return config["synthetic"]["generators"][name]


def used_generators(config: dict) -> set[str]:
    """The generators that a synthetic source or annotate names."""
    used = {config["sources"][name]["synthetic"]["generator"] for name in synthetic_sources(config)}
    if config["synthetic"]["annotate"]["enabled"]:
        used.add(config["synthetic"]["annotate"]["generator"])
    return used


def _check_synthetic(config: dict) -> None:
    """Cross-key checks of the synthetic sources, the generators they name, annotate and train (the
    templates' text is checked where they are resolved, tokenmill.synth.templates)."""
    sources = config["sources"]
    synthetic = config["synthetic"]
    for name in synthetic_sources(config):
        settings, key = sources[name]["synthetic"], f"sources.{name}"
        if sources[name]["tier"] != "synthetic":
            raise ConfigError(f"config key {key}.tier: a synthetic source is tier synthetic, not {sources[name]['tier']!r}")
        origin = settings["from"]
        if origin not in sources or sources[origin]["kind"] == "synthetic":
            raise ConfigError(f"config key {key}.synthetic.from: {origin!r} is not a configured source that is not "
                              "synthetic (a synthetic source rewrites extracted documents)")
        unknown = sorted(set(settings["snapshots"] or []) - set(sources[origin]["snapshots"]))
        if unknown:
            raise ConfigError(f"config key {key}.synthetic.snapshots: {', '.join(unknown)} not among the snapshots of "
                              f"{origin} ({', '.join(sorted(sources[origin]['snapshots']))})")
        _check_band(f"{key}.synthetic.quality_band", settings["quality_band"])
        _check_generator_name(config, f"{key}.synthetic.generator", settings["generator"])
    annotate = synthetic["annotate"]
    if annotate["enabled"]:
        _check_generator_name(config, "synthetic.annotate.generator", annotate["generator"])
        if annotate["template"] is not None and annotate["template"].count("{text}") != 1:
            raise ConfigError("config key synthetic.annotate.template: needs {text} exactly once, where the document goes")
    elif config["quality"]["encoder"]["train_on"] == "annotate":
        raise ConfigError("config key quality.encoder.train_on: annotate needs synthetic.annotate.enabled")
    for key, listed in (("synthetic.train.sources", synthetic["train"]["sources"]),
                        ("synthetic.annotate.sources", annotate["sources"])):
        wrong = [name for name in listed or [] if name not in sources or sources[name]["kind"] == "synthetic"]
        if wrong:
            raise ConfigError(f"config key {key}: {', '.join(map(repr, wrong))} is not a configured source that is not "
                              "synthetic")
    for name, generator in synthetic["generators"].items():
        key = f"synthetic.generators.{name}"
        if generator["sha256"] and not generator["path"]:
            raise ConfigError(f"config key {key}.sha256: a pin needs {key}.path (the trained model is pinned by its own hash)")
        if generator["path"] and not generator["knowledge_cutoff"]:
            raise ConfigError(f"config key {key}.knowledge_cutoff: a model directory needs its knowledge cutoff "
                              "(YYYY-MM-DDTHH:MM:SSZ), the fetch_ts of what it writes")


def _check_generator_name(config: dict, key: str, name: str) -> None:
    if name not in config["synthetic"]["generators"]:
        raise ConfigError(f"config key {key}: {name!r} is not in synthetic.generators "
                          f"({', '.join(sorted(config['synthetic']['generators']))})")


def source_ocr(config: dict, source: str) -> str:
    """The OCR engine of a validated config's source: its own `ocr`, else none for warc and jsonl
    sources and extract.ocr.engine for pdf ones."""
    settings = config["sources"][source]
    if settings.get("ocr"):
        return settings["ocr"]
    return config["extract"]["ocr"]["engine"] if settings["kind"] == "pdf" else "none"


def check_files(config: dict) -> None:
    """Every file the config names exists: an error before any job runs (dry runs included),
    naming the key. Relative paths are read from the working directory."""
    named = [("tokenizer.path", config["tokenizer"]["path"]), ("quality.labels", config["quality"]["labels"]),
             ("safety.wordlist", config["safety"]["wordlist"]), ("report.recipe", config["report"]["recipe"]),
             ("robots.agent_list", config["robots"]["agent_list"]), ("report.cost_rates", config["report"]["cost_rates"])]
    named += [(f"sources.{name}.urls", source.get("urls")) for name, source in config["sources"].items()]
    if any(source_ocr(config, name) == "vllm" for name in config["sources"]):
        named.append(("extract.ocr.model", config["extract"]["ocr"]["model"]))
    named += [(f"synthetic.generators.{name}.path", generator_settings(config, name)["path"])
              for name in sorted(used_generators(config))]
    named += [(f"decontamination.benchmarks.{number}.path", benchmark["path"])
              for number, benchmark in enumerate(config["decontamination"]["benchmarks"])]
    missing = [f"config key {key}: {path!r} does not exist (relative paths are read from {os.getcwd()})"
               for key, path in named if path is not None and not os.path.exists(path)]
    if missing:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(missing))


# Sections that build nothing of a version: the ablation reads the version, so trying other
# candidates must not change (and rerun) the manifest that records this hash.
NOT_OF_THE_VERSION = ("ablate",)


def config_sha256(config: dict) -> str:
    """The hash a version's manifest records of the config that built it."""
    return sha256_bytes(canonical_json({key: value for key, value in config.items()
                                        if key not in NOT_OF_THE_VERSION}).encode("utf-8"))
