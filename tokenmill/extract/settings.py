"""The settings of each extract and OCR job: only those that can change what the job writes.

A job's settings are its rule's params, which Snakemake reruns the job for when they change, and
the extract job's completion records (tokenmill.extract.part) are keyed on them. So each job is
given what its readers read, by the kind of its source (and, for OCR, by its engine), and
nothing else: a PDF setting reruns no code part, an HTML setting no OCR job. A job reads only
the settings it is given, so a key missing from these tables fails the job (and the tests) at
once rather than going unnoticed.
"""

from __future__ import annotations

import dataclasses
import json

from tokenmill.config import ConfigError, source_ocr
from tokenmill.extract.blockml import ModelError, configured_model
from tokenmill.quality.naturalness import ModelError as NaturalnessModelError, configured_model as configured_naturalness
from tokenmill.extract.pdf_settings import PdfRouting
from tokenmill.holdout import HoldoutRules
from tokenmill.plan import source_engine

# what parses a record in a child process: whether it does, and its deadline and memory per record
SANDBOX = ("sandbox", "timeout_s", "memory_mb")
HTML = ("engine", "max_bytes")
TRAFILATURA = ("fast", "favor_precision", "include_tables")
# what each HTML engine reads beyond HTML: a WARC part's settings follow its source's engine, so a
# trafilatura option reruns no resiliparse part and the blockml model no trafilatura part
ENGINE_KEYS = {"trafilatura": TRAFILATURA, "resiliparse": (), "two_pass": ("two_pass", *TRAFILATURA),
               "blockml": ("blockml",)}

# `extract` keys each kind's extract job reads (a section name: all of it). A WARC reads its PDF
# responses with the PDF settings: whether a WARC holds any is known only once it is read, so they
# are a WARC part's settings whatever its records, unless its source says it turns no PDF response
# into a document (sources.<name>.pdf_responses false: they are quarantined unread, and a PDF
# setting reruns none of its parts nor what reads them). OCR settings are no extract job's: the
# part's OCR rows, an input of its extract job (and a digest in its completion records), change
# when they do.
EXTRACT_KEYS = {
    "warc": (*HTML, "pdf", *SANDBOX, "zstd_level"),
    "pdf": ("pdf", *SANDBOX, "zstd_level"),
    # a repository is read in a sandbox under its own deadline, extract.code.timeout_s
    "code": ("code", "sandbox", "memory_mb", "zstd_level"),
    # text records, cleaned in the job's own process: no parser, no sandbox
    "jsonl": ("zstd_level",),
    "synthetic": ("zstd_level",),
}
# the source's own keys each kind reads, beside its holdout predicate (which every kind applies)
SOURCE_KEYS = {"warc": (), "pdf": ("urls",), "code": (), "jsonl": ("fields",), "synthetic": ()}
# the `synthetic.quality` checks extract stores on each rewrite
SYNTHETIC_CHECKS = ("max_repeated_share", "overlap_ngram")

# `extract.ocr` keys each OCR engine reads: rendering (dpi, max_pixels), the page cap and its
# deadline, and the engine's own
OCR_KEYS = {
    "tesseract": ("dpi", "max_pixels", "max_pages", "page_timeout_s", "languages", "min_confidence"),
    # batching and the memory vLLM takes decide which pages share a forward pass, which can move the
    # floating-point sums of a greedy decode
    "vllm": ("dpi", "max_pixels", "max_pages", "page_timeout_s", "model", "max_new_tokens", "batch_pages",
             "gpu_memory_utilization"),
}
# the OCR job routes each PDF's pages as extract does (PdfRouting: not the settings of running
# lines, applied after routing) in a sandbox, and compresses its rows
PDF_ROUTING = tuple(field.name for field in dataclasses.fields(PdfRouting))
OCR_GENERIC = ("timeout_s", "memory_mb", "zstd_level")


def extract_settings(config: dict, source: str) -> str:
    """What the extract jobs of `source`'s parts read, from a validated config, as canonical
    JSON (the rule's param: the same bytes for the same settings): the `extract` keys of its
    kind (EXTRACT_KEYS, with the source's own engine and, for WARC, that engine's ENGINE_KEYS), its own keys (SOURCE_KEYS), a synthetic
    source's checks, and its holdout predicate. Not the holdout pin: re-pinning reruns no
    extract. A WARC source whose `pdf_responses` is false has no `pdf` section: its extract jobs
    quarantine PDF responses unread (tokenmill.extract.records.file_candidates), and the flag is
    not a key of its own, so that a source on the default keeps the same bytes."""
    source_settings = config["sources"][source]
    kind = source_settings["kind"]
    engine = source_engine(config, source)
    section = {**config["extract"], "engine": engine}
    keys = EXTRACT_KEYS[kind] + (ENGINE_KEYS[engine] if kind == "warc" else ())
    if kind == "warc" and source_settings.get("pdf_responses") is False:
        keys = tuple(key for key in keys if key != "pdf")
    settings = {key: section[key] for key in keys}
    settings.update({key: source_settings[key] for key in SOURCE_KEYS[kind]})
    if kind == "synthetic":
        settings["synthetic_quality"] = {key: config["synthetic"]["quality"][key] for key in SYNTHETIC_CHECKS}
    settings["holdout"] = dataclasses.asdict(HoldoutRules.from_config(config["holdout"], source))
    return json.dumps(settings, sort_keys=True)


def ocr_settings(config: dict, source: str) -> str:
    """What the OCR jobs of `source`'s parts read, from a validated config, as canonical JSON:
    the PDF settings that route pages (PDF_ROUTING), the `extract.ocr` keys of the source's
    engine (OCR_KEYS), and the sandbox limits and compression (OCR_GENERIC). A source without
    OCR has no OCR job."""
    engine = source_ocr(config, source)
    if engine == "none":
        raise ValueError(f"source {source} has no OCR (sources.{source}.ocr, extract.ocr.engine)")
    section = config["extract"]
    return json.dumps({"pdf": {key: section["pdf"][key] for key in PDF_ROUTING},
                       "ocr": {key: section["ocr"][key] for key in OCR_KEYS[engine]},
                       **{key: section[key] for key in OCR_GENERIC}}, sort_keys=True)


def check_models(config: dict) -> None:
    """The blockml model, where a WARC source extracts with it, and the naturalness model exist and
    match their pins: else a ConfigError naming the key before any job runs (dry runs included), not
    a job that fails, or a part whose every page is quarantined."""
    try:
        if any(source["kind"] == "warc" and source_engine(config, name) == "blockml"
               for name, source in config["sources"].items()):
            configured_model(config["extract"]["blockml"])
        configured_naturalness(config["quality"]["naturalness"])
    except (ModelError, NaturalnessModelError) as error:
        raise ConfigError(f"invalid configuration:\n  {error}") from error
