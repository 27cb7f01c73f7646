"""The bundled sample, the demo config and the demo recipe as the tests and the benchmarks read
them. No pytest here: the benchmarks import this module from `make demo`'s virtualenv, which
has only the runtime dependencies."""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import yaml

from tokenmill.io import read_json
from tokenmill.trainer.recipe import validate_recipe

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample"


def sample(*parts: str) -> str:
    return str(SAMPLE.joinpath(*parts))


def gold_articles() -> dict[str, dict]:
    """The 181 real article pages' gold records (url, articleBody, ...) by page hash."""
    with gzip.open(sample("gold", "aeb-ground-truth.json.gz"), "rt", encoding="utf-8") as handle:
        return json.load(handle)


def lingua_records(lang: str) -> list[dict]:
    """The bundled lingua JSONL documents of one language (four languages share a file)."""
    records = []
    for path in sorted((SAMPLE / "jsonl" / "lingua-sentences").glob("lingua-*.jsonl.gz")):
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            records += [r for r in map(json.loads, handle) if r["lang_hint"] == lang]
    return records


def demo_config(**overrides) -> dict:
    """The demo config with input globs made absolute, so a run can use any working directory."""
    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    for source in config["sources"].values():
        for snapshot, patterns in source["snapshots"].items():
            source["snapshots"][snapshot] = [str(REPO / pattern) for pattern in patterns]
    for benchmark in config.get("decontamination", {}).get("benchmarks", []):
        benchmark["path"] = str(REPO / benchmark["path"])
    if config.get("report", {}).get("recipe"):
        config["report"]["recipe"] = str(REPO / config["report"]["recipe"])
    for key, value in overrides.items():
        config[key] = value
    return config


def write_config(workdir: Path, config: dict) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def recipe_for(manifest: Path) -> dict:
    """config/recipe.yaml pinned to this run's manifest (its bytes depend on the machine's run)."""
    recipe = yaml.safe_load((REPO / "config" / "recipe.yaml").read_text())
    recipe["manifest_sha256"] = hashlib.sha256(manifest.read_bytes()).hexdigest()
    recipe["tokenizer_sha256"] = read_json(manifest)["tokenizer"]["sha256"]
    return validate_recipe(recipe)
