"""Every settings dataclass holds the schema's defaults: a test or a benchmark that builds one
without arguments gets the model, index or clustering the pipeline would make."""

from __future__ import annotations

import dataclasses

import pytest

from tokenmill.config import load_schema
from tokenmill.decontaminate import DecontaminationSettings
from tokenmill.dedup.minhash_cluster import ClusterSettings
from tokenmill.dedup.minhash import MinHashParams
from tokenmill.quality.fasttext import FastTextSettings
from tokenmill.quality.encoder import EncoderSettings


def schema_defaults(*keys: str) -> dict:
    section = load_schema()
    for key in keys:
        section = section["properties"][key]
    return {name: spec["default"] for name, spec in section["properties"].items() if "default" in spec}


@pytest.mark.parametrize("settings, section", [
    (FastTextSettings, ("quality", "fasttext")),
    (EncoderSettings, ("quality", "encoder")),
    (MinHashParams, ("minhash",)),
    (ClusterSettings, ("minhash",)),
    (DecontaminationSettings, ("decontamination",)),
], ids=lambda value: value.__name__ if isinstance(value, type) else ".".join(value))
def test_settings_defaults_are_the_schemas(settings, section):
    defaults = schema_defaults(*section)
    fields = {field.name: field.default for field in dataclasses.fields(settings)}
    shared = sorted(set(fields) & set(defaults))
    assert shared, f"{settings.__name__} shares no key with config {'.'.join(section)}"
    assert {name: fields[name] for name in shared} == {name: defaults[name] for name in shared}
