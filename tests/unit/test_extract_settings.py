"""Each extract and OCR job's settings hold only what can change its output: a setting of another
kind leaves a job's settings (its rule's params, and its completion records' key) the same bytes,
so Snakemake reruns nothing of it; and each job runs on its settings alone."""

from __future__ import annotations

import copy
import functools
import json

import pytest

from tests.conftest import SAMPLE, demo_config
from tests.unit.test_ocr import BLANK, READABLE, SCAN, warc_of
from tokenmill.config import schema_defaults, validate
from tokenmill.extract.ocr_part import ocr_part, read_ocr_rows
from tokenmill.extract.part import extract_part
from tokenmill.extract.records import PartInfo
from tokenmill.extract.settings import extract_settings, ocr_settings
from tokenmill.holdout import HoldoutRules
from tokenmill.io import read_jsonl_zst

# one demo source of each kind (govuk: a WARC source on extract.engine that reads its PDF responses), and the
# OCR job of pdf_samples under each engine
SOURCES = {"warc": "govuk", "pdf": "pdf_samples", "code": "code_samples", "jsonl": "lingua_sentences",
           "synthetic": "aeb_rephrased"}
ENGINES = ("tesseract", "vllm")
EXTRACT_JOBS = set(SOURCES)
ALL_JOBS = EXTRACT_JOBS | set(ENGINES)
ROUTES = {"warc", "pdf", *ENGINES}  # a setting that decides which PDF pages need OCR
PDF_TEXT = {"warc", "pdf"}  # a setting of the text of PDFs, applied after routing
SANDBOXED = {"warc", "pdf", "code"}

# what each setting's change must rerun: the kinds whose extract jobs read it, the engines whose OCR jobs do
RERUNS = {
    **{f"extract.{key}": {"warc"} for key in ("engine", "max_bytes", "blockml.model", "blockml.sha256")},
    # other engines' settings: govuk is on blockml, the default (the next tests: the sources on them)
    **{f"extract.{key}": set() for key in ("two_pass.min_words", "two_pass.min_short_line_share", "fast",
                                           "favor_precision", "include_tables")},
    **{f"extract.pdf.{key}": ROUTES for key in (
        "max_bytes", "max_pages", "min_page_chars", "scan_max_chars", "scan_image_share", "garbage_min_words",
        "max_one_letter_word_share", "min_mean_word_length", "min_letter_share", "max_control_share",
        "min_latin_vowel_share", "max_latin_vowel_share", "table_cell_gap", "table_max_cell_words", "table_min_rows",
        "table_min_columns", "table_gutter_tolerance")},
    **{f"extract.pdf.{key}": PDF_TEXT for key in ("margin_band", "margin_lines", "repeated_share",
                                                   "margin_max_words", "margin_min_gap")},
    "extract.ocr.engine": set(),  # which OCR rule a pdf source without its own `ocr` gets, not what a job reads
    **{f"extract.ocr.{key}": set(ENGINES) for key in ("dpi", "max_pixels", "max_pages", "page_timeout_s")},
    **{f"extract.ocr.{key}": {"tesseract"} for key in ("languages", "min_confidence")},
    **{f"extract.ocr.{key}": {"vllm"} for key in ("model", "max_new_tokens", "batch_pages", "gpu_memory_utilization")},
    **{f"extract.code.{key}": {"code"} for key in ("max_document_tokens", "bytes_per_token", "max_file_bytes",
                                                   "timeout_s")},
    "extract.sandbox": SANDBOXED,
    "extract.timeout_s": {"warc", "pdf", *ENGINES},  # a code part's repositories have their own deadline
    "extract.memory_mb": SANDBOXED | set(ENGINES),
    "extract.zstd_level": ALL_JOBS,
    # beyond the extract section
    "synthetic.quality.max_repeated_share": {"synthetic"},
    "synthetic.quality.overlap_ngram": {"synthetic"},
    "synthetic.quality.distinguisher_docs": set(),  # synthetic_quality's, not extract's
    "holdout.web.residue": EXTRACT_JOBS,
    "holdout.manifest_sha256": set(),  # re-pinning carves nothing again
    "sources.govuk.engine": {"warc"},
    "sources.govuk.pdf_responses": {"warc"},  # false: its settings lose their `pdf` section
    "sources.pdf_samples.urls": {"pdf"},  # the documents' urls; OCR rows name a PDF by its file
    "sources.lingua_sentences.fields": {"jsonl"},
}
NEW_VALUES = {"extract.engine": "two_pass", "extract.ocr.engine": "none", "extract.ocr.languages": "eng+deu",
              "extract.ocr.model": "/models/olmocr", "holdout.manifest_sha256": "0" * 64,
              "sources.govuk.engine": "resiliparse", "sources.pdf_samples.urls": "other-urls.tsv",
              "sources.lingua_sentences.fields": {"text": "sentence"}, "extract.blockml.model": "other/model.json",
              "extract.blockml.sha256": "0" * 64}


def leaves(section: dict, prefix: str) -> list[str]:
    return [name for key, value in section.items()
            for name in (leaves(value, f"{prefix}.{key}") if isinstance(value, dict) else [f"{prefix}.{key}"])]


@functools.cache
def demo() -> dict:
    """The demo config, validated (read it, never change it)."""
    return validate(demo_config())


def changed(key: str) -> dict:
    """The demo config with `key` set to another valid value, validated."""
    *path, last = key.split(".")
    value = demo()
    for name in key.split("."):
        value = value[name]
    config = demo_config()
    section = config
    for name in path:
        section = section.setdefault(name, {})
    section[last] = NEW_VALUES[key] if key in NEW_VALUES else (
        not value if isinstance(value, bool) else value + 1 if isinstance(value, int) else value / 2)
    return validate(config)


def job_settings(config: dict) -> dict[str, str]:
    """Each job's settings string: the extract job of each kind's source, the OCR job of each engine."""
    settings = {kind: extract_settings(config, source) for kind, source in SOURCES.items()}
    for engine in ENGINES:
        config = copy.deepcopy(config)
        config["sources"]["pdf_samples"]["ocr"] = engine
        settings[engine] = ocr_settings(config, "pdf_samples")
    return settings


def test_every_extract_setting_has_its_reruns_stated():
    """A new `extract` setting must be given to the jobs that read it (and stated here)."""
    assert sorted(key for key in leaves(schema_defaults("extract"), "extract") if key not in RERUNS) == []


@pytest.mark.parametrize("key", sorted(RERUNS))
def test_a_setting_changes_the_settings_of_the_jobs_that_read_it_only(key):
    before, after = job_settings(demo()), job_settings(changed(key))
    assert {job for job in ALL_JOBS if after[job] != before[job]} == RERUNS[key]


def test_a_source_with_its_own_engine_keeps_its_settings_when_extract_engine_changes():
    """common_crawl names resiliparse: extract.engine is another WARC source's setting."""
    assert extract_settings(changed("extract.engine"), "common_crawl") == extract_settings(demo(), "common_crawl")
    assert json.loads(extract_settings(demo(), "common_crawl"))["engine"] == "resiliparse"


@pytest.mark.parametrize("engine, reads, ignores", [
    ("trafilatura", ["fast", "favor_precision", "include_tables"], ["two_pass", "blockml"]),
    ("two_pass", ["two_pass", "fast"], ["blockml"]),
    ("blockml", ["blockml"], ["two_pass", "fast", "favor_precision", "include_tables"]),
    ("resiliparse", [], ["two_pass", "blockml", "fast"]),
])
def test_a_warc_part_reads_the_settings_of_its_own_engine_only(engine, reads, ignores):
    config = copy.deepcopy(demo())
    config["sources"]["aeb_articles"]["engine"] = engine
    settings = json.loads(extract_settings(config, "aeb_articles"))
    assert settings["engine"] == engine and set(reads) <= set(settings) and not set(ignores) & set(settings)


def test_extract_settings_carry_a_jsonl_sources_fields_and_each_sources_holdout_predicate():
    config = copy.deepcopy(demo())
    config["sources"]["lingua_sentences"]["fields"] = {"text": "sentence", "id": "key"}
    lingua, crawl = (json.loads(extract_settings(config, source)) for source in ("lingua_sentences", "common_crawl"))
    assert lingua["fields"] == {"text": "sentence", "id": "key"} and "fields" not in crawl
    # the time-forward cutoff of config/config.yaml applies to common_crawl only
    assert crawl["holdout"] == {"modulus": 100, "residue": 0, "cutoff": "2024-05-01T00:00:00Z",
                                "time_forward_applies": True}
    assert lingua["holdout"]["time_forward_applies"] is False
    # extract rebuilds the predicate from its settings: a record fetched after the cutoff is held out
    rules = HoldoutRules(**crawl["holdout"])
    late = next(url for url in (f"https://example.org/{n}" for n in range(1000)) if rules.reason(url, None) is None)
    assert rules.reason(late, "2024-06-01T00:00:00Z") == "time_forward"


def test_a_source_without_ocr_has_no_ocr_settings():
    with pytest.raises(ValueError, match="source code_samples has no OCR"):
        ocr_settings(demo(), "code_samples")


@pytest.mark.parametrize("pdf_responses, has_pdf", [(None, True), (True, True), (False, False)])
def test_a_warc_source_reads_the_pdf_settings_only_if_it_reads_its_pdf_responses(pdf_responses, has_pdf):
    config = demo_config()
    if pdf_responses is None:
        config["sources"]["govuk"].pop("pdf_responses", None)  # the default: true
    else:
        config["sources"]["govuk"]["pdf_responses"] = pdf_responses
    settings = json.loads(extract_settings(validate(config), "govuk"))
    assert ("pdf" in settings) is has_pdf and "pdf_responses" not in settings
    # the flag is no key of the settings: a source on the default keeps the same bytes as before it existed
    assert "max_bytes" in settings and "engine" in settings


@pytest.mark.parametrize("key", sorted(key for key in RERUNS if key.startswith("extract.pdf.")))
def test_no_pdf_setting_changes_the_settings_of_aeb_articles_or_of_its_rewrites(key):
    """The demo's aeb_articles turns its PDF responses off (its WARCs are HTML articles): a PDF
    setting reruns none of its jobs, nor those of aeb_rephrased, which rewrites its documents."""
    assert demo()["sources"]["aeb_articles"]["pdf_responses"] is False
    for source in ("aeb_articles", "aeb_rephrased"):
        assert extract_settings(changed(key), source) == extract_settings(demo(), source)


def run_config() -> dict:
    """The demo config, with a holdout that holds out no record of these tests (the sample
    holds 1 % of urls out, and a PDF's url is its path, which depends on the checkout)."""
    return validate(demo_config(holdout={"web": {"modulus": 2 ** 61 - 1, "residue": 1}}))


def extracted(tmp_path, kind: str, inputs: list[str], settings: str, ocr: str | None = None) -> list[dict]:
    out = {name: str(tmp_path / f"{kind}.{name}") for name in ("docs", "quarantine", "stats")}
    extract_part(inputs, kind, PartInfo("src", "snap", "part", "crawl", "MIT"), json.loads(settings), out["docs"],
                 out["quarantine"], out["stats"], workers=2, ocr_path=ocr)
    return list(read_jsonl_zst(out["docs"]))


@pytest.mark.parametrize("kind, inputs", [
    ("warc", [str(SAMPLE / "warc" / "wikipedia-math" / "wikipedia-math.warc.gz")]),
    ("jsonl", sorted(str(path) for path in (SAMPLE / "jsonl" / "lingua-sentences").glob("*.jsonl.gz"))[:1]),
    ("code", sorted(str(path) for path in (SAMPLE / "code").glob("*.tar.gz"))[:1]),
])
def test_each_kind_extracts_with_its_own_settings_alone(tmp_path, kind, inputs):
    docs = extracted(tmp_path, kind, inputs, extract_settings(run_config(), SOURCES[kind]))
    assert docs and all(doc["text"] for doc in docs)


def test_ocr_and_extract_of_pdfs_run_on_their_own_settings_alone(tmp_path):
    """Scanned pages read by Tesseract on the OCR job's settings, in a pdf part and in a WARC
    part (routed without the WARC's HTML settings), their text in the parts' documents."""
    config = run_config()
    config["sources"]["common_crawl"]["ocr"] = "tesseract"
    warc = warc_of(tmp_path / "pdfs.warc.gz", [("https://example.org/scan.pdf", SCAN.read_bytes(), False)])
    for kind, source, inputs in (("pdf", "pdf_samples", [str(SCAN), str(BLANK), str(READABLE)]),
                                 ("warc", "common_crawl", [warc])):
        pages = tmp_path / f"{kind}.ocr.jsonl.zst"
        ocr_part(inputs, kind, json.loads(ocr_settings(config, source)), "tesseract", str(pages),
                 str(tmp_path / f"{kind}.ocr.json"), workers=2)
        assert read_ocr_rows(str(pages))[(inputs[0], 0)][1]["status"] == "ok"
        docs = extracted(tmp_path, kind, inputs, extract_settings(config, source), str(pages))
        assert "Edgar" in docs[0]["text"] and list(docs[0]["extract_meta"]["ocr_pages"]) == ["1"]


def test_a_warc_source_without_pdf_responses_quarantines_each_naming_its_setting(tmp_path):
    """A part of an HTML WARC and a WARC of one PDF response, on the settings of a WARC source
    whose pdf_responses is false: the HTML pages are documents, the PDF is none but a quarantine
    record with its url, file and offset (nothing lost), counted in the stats; on the default the
    same PDF is a document."""
    html = str(SAMPLE / "warc" / "wikipedia-math" / "wikipedia-math.warc.gz")
    pdfs = warc_of(tmp_path / "pdfs.warc.gz", [("https://example.org/paper.pdf", READABLE.read_bytes(), False)])
    info = PartInfo("govuk", "snap", "part", "crawl", "GPL-2.0")
    results = {}
    for pdf_responses in (True, False):
        config = demo_config(holdout={"web": {"modulus": 2 ** 61 - 1, "residue": 1}})
        config["sources"]["govuk"]["pdf_responses"] = pdf_responses
        out = {name: str(tmp_path / f"{pdf_responses}.{name}") for name in ("docs", "quarantine", "stats")}
        stats = extract_part([html, pdfs], "warc", info, json.loads(extract_settings(validate(config), "govuk")),
                             out["docs"], out["quarantine"], out["stats"], workers=2)
        results[pdf_responses] = (list(read_jsonl_zst(out["docs"])), list(read_jsonl_zst(out["quarantine"])), stats)
    (docs_on, quarantine_on, _), (docs, quarantine, stats) = results[True], results[False]
    assert [doc["url"] for doc in docs_on if doc["content_type"] == "application/pdf"] == ["https://example.org/paper.pdf"]
    assert quarantine_on == []
    assert [doc["url"] for doc in docs] == [doc["url"] for doc in docs_on if doc["content_type"] != "application/pdf"]
    assert docs and all(doc["content_type"] == "text/html" for doc in docs)
    (record,) = quarantine
    assert (record["reason"], record["url"], record["input"], record["offset"], record["source"]) == \
        ("pdf_response_off", "https://example.org/paper.pdf", pdfs, 0, "govuk")
    assert record["record_id"].startswith("<urn:uuid:")
    assert record["detail"] == "a PDF response, not read: sources.govuk.pdf_responses is false"
    assert stats["quarantined"] == {"pdf_response_off": 1} and stats["records"]["pdf_response"] == 1
    assert stats["pdf_pages"] == 0  # not read
