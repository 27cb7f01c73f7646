"""Config validation names the wrong key and fills in the defaults (planning parts: test_plan.py)."""

from __future__ import annotations

import copy

import pytest

from tests.conftest import demo_config
from tokenmill.config import ConfigError, config_sha256, load_schema, validate


def test_demo_config_validates_and_gets_defaults():
    config = validate(demo_config())
    assert config["extract"]["max_bytes"] == 8 << 20 and config["extract"]["zstd_level"] == 6
    assert config["langid"]["model"] is None
    assert config["sources"]["lingua_sentences"]["fields"]["text"] == "text"
    assert config["select"]["keep_truncated_records"] is False


@pytest.mark.parametrize("mutate, message", [
    (lambda c: c["extract"].update(max_byte=1), "config key extract.max_byte: unknown key 'max_byte'"),
    (lambda c: c.update(shard={}), "config key shard: unknown key 'shard'"),
    (lambda c: c["sources"]["govuk"].update(tier="web"), "config key sources.govuk.tier: 'web' is not one of"),
    (lambda c: c["select"].update(min_chars="200"), "config key select.min_chars: '200' is not of type 'integer'"),
    (lambda c: c["sources"]["govuk"].pop("license_id"), "config key sources.govuk: 'license_id' is a required property"),
    (lambda c: c["sources"]["govuk"].update(fields={"text": "body"}), "config key sources.govuk.fields: only jsonl"),
    (lambda c: c["tokenizer"].update(sha256="abc"), "config key tokenizer.sha256: 'abc' does not match"),
    (lambda c: c.update(version="bad/name"), "config key version: 'bad/name' does not match"),
    (lambda c: c["sources"]["code_samples"].update(ocr="tesseract"),
     "config key sources.code_samples.ocr: a code source holds no PDFs to OCR"),
    # pdf_responses is a WARC source's: only it holds PDF responses, and without them it has no PDF to OCR
    (lambda c: c["sources"]["pdf_samples"].update(pdf_responses=False),
     "config key sources.pdf_samples.pdf_responses: only warc sources take it (a pdf source holds no PDF responses)"),
    (lambda c: c["sources"]["lingua_sentences"].update(pdf_responses=True),
     "config key sources.lingua_sentences.pdf_responses: only warc sources take it"),
    (lambda c: c["sources"]["govuk"].update(pdf_responses=False, ocr="tesseract"),
     "config key sources.govuk.ocr: sources.govuk.pdf_responses is false, so the source makes no document of a PDF"),
    (lambda c: c.update(minhash={"code": {"bands": 20}}), "config key minhash.code.bands: 20 is more than minhash.bands (14)"),
    (lambda c: c["select"].update(code={"license_classes": ["free"]}),
     "config key select.code.license_classes.0: 'free' is not one of"),
    # synthetic sources, the generators they name, annotate
    (lambda c: c["sources"]["aeb_rephrased"].update(snapshots={"x": ["y"]}),
     "config key sources.aeb_rephrased.snapshots: a synthetic source has the snapshots of the source it rewrites"),
    (lambda c: c["sources"]["aeb_rephrased"].pop("synthetic"),
     "config key sources.aeb_rephrased: 'synthetic' is a required property"),
    (lambda c: c["sources"]["govuk"].update(synthetic={"from": "aeb_articles"}),
     "config key sources.govuk.synthetic: only synthetic sources (kind: synthetic) rewrite another source"),
    (lambda c: c["sources"]["aeb_rephrased"]["synthetic"].update({"from": "aeb_rephrased"}),
     "config key sources.aeb_rephrased.synthetic.from: 'aeb_rephrased' is not a configured source that is not synthetic"),
    (lambda c: c["sources"]["aeb_rephrased"]["synthetic"].update(snapshots=["CC-MAIN-2024-22"]),
     "config key sources.aeb_rephrased.synthetic.snapshots: CC-MAIN-2024-22 not among the snapshots of aeb_articles"),
    (lambda c: c["sources"]["aeb_rephrased"]["synthetic"].update(quality_band={"min": 0.6, "max": 0.2}),
     "config key sources.aeb_rephrased.synthetic.quality_band.min: 0.6 is above max 0.2"),
    (lambda c: c["sources"]["aeb_rephrased"]["synthetic"].update(generator="llama"),
     "config key sources.aeb_rephrased.synthetic.generator: 'llama' is not in synthetic.generators (demo)"),
    (lambda c: c["sources"]["aeb_rephrased"].update(tier="crawl"),
     "config key sources.aeb_rephrased.tier: a synthetic source is tier synthetic"),
    (lambda c: c["synthetic"]["generators"]["demo"].update(sha256="0" * 64),
     "config key synthetic.generators.demo.sha256: a pin needs synthetic.generators.demo.path"),
    (lambda c: c["synthetic"]["generators"]["demo"].update(path="data"),
     "config key synthetic.generators.demo.knowledge_cutoff: a model directory needs its knowledge cutoff"),
    (lambda c: c["synthetic"]["annotate"].update(sources=["aeb_rephrased"]),
     "config key synthetic.annotate.sources: 'aeb_rephrased' is not a configured source that is not synthetic"),
    (lambda c: c.update(quality={"encoder": {"train_on": "annotate"}}) or c["synthetic"]["annotate"].update(enabled=False),
     "config key quality.encoder.train_on: annotate needs synthetic.annotate.enabled"),
    (lambda c: c["chains"].update(sources=["aeb_articles", "aeb-articles"]),
     "config key chains.sources: 'aeb-articles' is not a configured source"),
    (lambda c: c["chains"].update(token_budget=1), "config key chains.token_budget: 1 is less than the minimum of 2"),
])
def test_bad_config_names_the_key(mutate, message):
    config = demo_config()
    config.setdefault("extract", {})
    mutate(config)
    with pytest.raises(ConfigError) as raised:
        validate(config)
    assert message in str(raised.value)


def test_pin_without_path_is_refused():
    config = demo_config(tokenizer={"sha256": "0" * 64})
    with pytest.raises(ConfigError, match="tokenizer.sha256: a pin needs tokenizer.path"):
        validate(config)


@pytest.mark.parametrize("select, message", [
    ({"licences": {"GPL-2.0": {"expires": "2025-01-01"}}},
     "config key select.as_of: licence expiries (GPL-2.0) are evaluated at the policy date"),
    ({"exclude_sources": ["govuk", "gov_uk"]},
     "config key select.exclude_sources: 'gov_uk' is not a configured source"),
    ({"as_of": "2025-02-30"}, "config key select.as_of: '2025-02-30' is not a valid date"),
    ({"as_of": "2025-01-01", "licences": {"MIT": {"expires": "2025-13-01"}}},
     "config key select.licences.MIT.expires: '2025-13-01' is not a valid date"),
    ({"as_of": "1 May 2025"}, "config key select.as_of: '1 May 2025' does not match"),
    ({"cutoff": {"web": "2024-01-01T00:00:00Z"}},  # the keys are the tiers of sources.<name>.tier
     "config key select.cutoff.web: unknown key 'web' (allowed: academic, code, crawl, licensed, synthetic)"),
    ({"cutoff": {"crawl": "2024-01-01"}}, "config key select.cutoff.crawl: '2024-01-01' does not match"),
    ({"cutoff": {"crawl": "2024-01-01T25:00:00Z"}},
     "config key select.cutoff.crawl: '2024-01-01T25:00:00Z' is not a valid date"),
    ({"licences": {"MIT": {"expired": True}}}, "config key select.licences.MIT.expired: unknown key 'expired'"),
    ({"opt_out_hosts": ["https://example.com/"]},  # host names, not urls
     "config key select.opt_out_hosts.0: 'https://example.com/' does not match"),
    # heuristic thresholds per source and kind: a misspelt metric, family or kind never disables a rule silently
    ({"heuristics": {"by_source": {"pdf_samples": {"pdf": {"gopher_quality": {"word_cont": {"min": 20}}}}}}},
     "config key select.heuristics.by_source.pdf_samples.pdf.gopher_quality.word_cont: unknown key 'word_cont'"),
    ({"heuristics": {"by_source": {"pdf_samples": {"pdf": {"gopher": {"word_count": {"min": 20}}}}}}},
     "config key select.heuristics.by_source.pdf_samples.pdf.gopher: unknown key 'gopher'"),
    ({"heuristics": {"by_source": {"pdf_samples": {"scan": {}}}}},
     "config key select.heuristics.by_source.pdf_samples.scan: unknown key 'scan' (allowed: math, pdf, web)"),
    ({"heuristics": {"by_source": {"pdf_sample": {"pdf": {}}}}},
     "config key select.heuristics.by_source.pdf_sample: not a configured source"),
    ({"heuristics": {"profiles": {"math": {"c4": {"c4_kept_sentence_count": {"minimum": 3}}}}}},
     "config key select.heuristics.profiles.math.c4.c4_kept_sentence_count.minimum: unknown key 'minimum'"),
])
def test_bad_select_policy_is_refused_naming_the_key(select, message):
    config = demo_config()
    config["select"].update(select)
    with pytest.raises(ConfigError) as raised:
        validate(config)
    assert message in str(raised.value)


def test_select_policy_defaults_exclude_nothing_and_cutoff_tiers_are_the_source_tiers():
    select = validate(demo_config())["select"]
    assert select["exclude_sources"] == select["opt_out_hosts"] == [] and select["licences"] == select["cutoff"] == {}
    assert select["as_of"] is None
    schema = load_schema()
    assert set(schema["properties"]["select"]["properties"]["cutoff"]["properties"]) == \
        set(schema["properties"]["sources"]["additionalProperties"]["properties"]["tier"]["enum"])
    config = demo_config()
    config["select"].update(as_of="2025-06-30", exclude_sources=["govuk"], opt_out_hosts=["gov.uk"],
                            licences={"GPL-2.0": {"expires": "2025-01-01"}, "MIT": {"excluded": True}},
                            cutoff={"crawl": "2024-01-01T00:00:00Z"})
    assert validate(config)["select"]["licences"]["MIT"] == {"excluded": True, "expires": None}


def test_config_hash_changes_with_policy():
    base = validate(demo_config())
    changed = copy.deepcopy(base)
    changed["select"]["min_chars"] += 1
    assert config_sha256(base) == config_sha256(copy.deepcopy(base)) != config_sha256(changed)
