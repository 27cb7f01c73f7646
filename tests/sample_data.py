"""The bundled sample, the demo config and the demo recipe as the tests and the benchmarks read
them. No pytest here: the benchmarks import this module from `make demo`'s virtualenv, which
has only the runtime dependencies."""

from __future__ import annotations

import collections
import gzip
import hashlib
import json
import re
from pathlib import Path

import yaml

from tokenmill.io import read_json
from tokenmill.trainer.recipe import validate_recipe

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "sample"
MATH_PAGES = REPO / "data" / "bench" / "math-html"
_WORD = re.compile(r"\w+")
_SPACE = re.compile(r"\s+")


def sample(*parts: str) -> str:
    return str(SAMPLE.joinpath(*parts))


def gold_articles() -> dict[str, dict]:
    """The 181 real article pages' gold records (url, articleBody, ...) by page hash."""
    with gzip.open(sample("gold", "aeb-ground-truth.json.gz"), "rt", encoding="utf-8") as handle:
        return json.load(handle)


def bag_of_words_f1(expected: str, got: str) -> float:
    """Word-count F1 of an extracted text against its gold text (case folded)."""
    want, have = collections.Counter(_WORD.findall(expected.lower())), collections.Counter(_WORD.findall(got.lower()))
    common = sum((want & have).values())
    precision, recall = common / max(1, sum(have.values())), common / max(1, sum(want.values()))
    return 2 * precision * recall / max(1e-9, precision + recall)


def math_page(name: str) -> str:
    """A page of data/bench/math-html (stored gzipped)."""
    with gzip.open(MATH_PAGES / f"{name}.gz", "rt", encoding="utf-8", errors="replace") as handle:
        return handle.read()


def expected_formulas() -> dict[str, list[dict]]:
    """The formulas each math page's own markup holds (expected_math.jsonl), by file."""
    by_file = collections.defaultdict(list)
    for line in (MATH_PAGES / "expected_math.jsonl").read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        by_file[entry["file"]].append(entry)
    return by_file


def formulas_found(file: str, entries: list[dict], text: str) -> tuple[collections.Counter, collections.Counter, int]:
    """(found, total) distinct formulas per form of one page in an extracted text, verbatim with
    whitespace aside, and how many formulas the text writes more often than the page has them.
    A Wikipedia formula is one formula in three copies (annotation, alttext, image alt, each listed
    in page order): found in any of them, counted as the form "wikipedia"."""
    found, total, repeated = collections.Counter(), collections.Counter(), 0
    squashed = _SPACE.sub("", text)
    if "wikipedia" in file:
        copies = collections.defaultdict(list)
        for entry in entries:
            copies[entry["form"]].append(_SPACE.sub("", entry["tex"]))
        for formula in zip(*copies.values()):
            total["wikipedia"] += 1
            found["wikipedia"] += any(tex in squashed for tex in formula)
        annotations = copies["annotation_x_tex"]
        repeated = sum(max(0, squashed.count(f"${tex}$") - annotations.count(tex)) for tex in set(annotations))
        return found, total, repeated
    for form, tex in {(entry["form"], _SPACE.sub("", entry["tex"])) for entry in entries}:
        total[form] += 1
        found[form] += tex in squashed
    return found, total, repeated


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
        for snapshot, patterns in source.get("snapshots", {}).items():  # a synthetic source has none of its own
            source["snapshots"][snapshot] = [str(REPO / pattern) for pattern in patterns]
        if source.get("urls"):
            source["urls"] = str(REPO / source["urls"])
    for benchmark in config.get("decontamination", {}).get("benchmarks", []):
        benchmark["path"] = str(REPO / benchmark["path"])
    robots = config.get("robots", {})
    robots["warc"] = [str(REPO / pattern) for pattern in robots.get("warc", [])]
    for entry in robots.get("files", []):
        entry["paths"] = [str(REPO / pattern) for pattern in entry["paths"]]
    if config.get("report", {}).get("recipe"):
        config["report"]["recipe"] = str(REPO / config["report"]["recipe"])
    for key, value in overrides.items():
        config[key] = value
    return config


def with_sources(config: dict, sources: dict) -> dict:
    """`config` (a demo config) with only `sources`: the demo's rubric annotation, which samples
    aeb_articles, is left out when that source is, and so is the time-forward holdout when a source
    it names (common_crawl) is; the chains keep the sources left."""
    config["sources"] = sources
    chains = config.get("chains", {})
    if chains.get("sources"):
        chains["sources"] = [name for name in chains["sources"] if name in sources]
    annotate = config.get("synthetic", {}).get("annotate", {})
    if not set(annotate.get("sources") or []) <= set(sources):
        annotate.update(enabled=False, sources=None)
    holdout = config.get("holdout", {})
    if not set(holdout.get("time_forward", {}).get("sources", [])) <= set(sources):
        holdout["time_forward"] = {"cutoff": None, "sources": []}
    return config


def with_one_encoder_epoch(config: dict) -> dict:
    """`config` with its quality encoder trained one epoch: the demo's ten are ~30 CPU-s, far longer
    than the rest of a run of one or two parts, whose checks do not depend on the model."""
    config.setdefault("quality", {}).setdefault("encoder", {})["epochs"] = 1
    return config


def write_config(workdir: Path, config: dict) -> Path:
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def recipe_for(manifest: Path, name: str = "recipe.yaml") -> dict:
    """config/<name> pinned to this run's manifest (its bytes depend on the machine's run)."""
    recipe = yaml.safe_load((REPO / "config" / name).read_text())
    recipe["manifest_sha256"] = hashlib.sha256(manifest.read_bytes()).hexdigest()
    recipe["tokenizer_sha256"] = read_json(manifest)["tokenizer"]["sha256"]
    return validate_recipe(recipe)
