"""`snakemake ablate` on the demo's finished run, from the root of a checkout with the user's own
--configfile: a threshold ablation, a heuristic rule set and a small mixture search on the CPU that run no upstream job,
a decision page with each seed's value, a proposed recipe the loader opens, and proxies whose
losses are the same to the bit when trained again."""

from __future__ import annotations

import shutil

import pyarrow.parquet as pq
import pytest
import yaml

from tests.conftest import job_counts, repository_copy, run_snakemake
from tests.sample_data import demo_config, write_config
from tokenmill.io import read_json
from tokenmill.trainer.loader import Loader
from tokenmill.trainer.recipe import validate_recipe

# Two thresholds, a rule set (web documents of 300 words at least; the profile's minimum is 50) and four
# mixtures, two seeds each: 14 proxies of 8 steps (a few CPU-seconds each)
LONG = {"web": {"gopher_quality": {"word_count": {"min": 300, "max": 100000}}}}
ABLATE = {"seeds": [1, 2], "thresholds": {"keep_top": [0.9, 0.3]}, "rules": {"long": LONG},
          "mixtures": {"count": 4, "propose_samples": 2000}, "eval": {"choice_items": 20},
          "proxy": {"layers": 1, "hidden": 32, "heads": 2, "intermediate": 64, "seq_len": 64, "micro_batch": 8,
                    "learning_rate": 0.002, "warmup_steps": 2, "tokens": 4096, "checkpoint_every": 4}}


@pytest.fixture(scope="module")
def ablated(reference_run, tmp_path_factory):
    """A checkout beside the demo's finished run (its results, holdout and metadata copied), whose
    own config.yaml is the demo's with ABLATE; (its root, the dry run's output, the run's output)."""
    root = repository_copy(tmp_path_factory.mktemp("ablate"))
    for folder in ("results", "holdout", ".snakemake"):
        shutil.copytree(reference_run / folder, root / folder, symlinks=True)
    config = demo_config()
    config["ablate"] = ABLATE
    write_config(root, config)
    # the target last: --configfile (which snakemake_command puts first) takes every word up to the next option
    dry = run_snakemake(root, "-n", "ablate")
    run = run_snakemake(root, "--cores", "2", "ablate")
    return root, dry.stdout + dry.stderr, run.stdout + run.stderr


def test_the_ablation_builds_its_candidates_from_the_versions_scores_and_shards_alone(ablated):
    _, dry, _ = ablated
    assert job_counts(dry) == {"ablate_evalset": 1, "ablate_candidate": 7, "ablate_train": 14, "ablate_decide": 1,
                               "ablate": 1}


def test_a_stricter_threshold_keeps_a_subset_of_the_versions_documents(ablated):
    root, _, _ = ablated
    candidates = root / "results" / "ablate_candidate" / "demo-v0"
    version = read_json(root / "results" / "shards" / "demo-v0" / "manifest.json")
    loose = read_json(candidates / "keep_top-0.9" / "manifest.json")
    strict = read_json(candidates / "keep_top-0.3" / "manifest.json")
    # 0.9 is the version's own cut: every document; 0.3 cuts the languages the classifiers may judge
    # (the demo's labels are English) in the tiers the cut applies to
    assert loose["n_docs"] == version["n_docs"] and loose["n_tokens"] == version["n_tokens"]
    assert strict["sources"]["aeb_articles"]["n_tokens"] < version["sources"]["aeb_articles"]["n_tokens"]
    assert strict["sources"]["code_samples"]["n_tokens"] == version["sources"]["code_samples"]["n_tokens"]


def shard_documents(manifest_path) -> dict[tuple[str, str, str, int], str]:
    """(source, snapshot, part, row) -> doc_id of every document of a manifest's shards."""
    manifest = read_json(manifest_path)
    found = {}
    for shard in manifest["shards"]:
        lineage = pq.read_table(manifest_path.parent / f"{shard['path']}.docs.parquet").to_pylist()
        found.update({(shard["source"], row["snapshot_id"], row["part"], row["row"]): row["doc_id"] for row in lineage})
    return found


def test_a_rule_set_drops_exactly_the_versions_documents_that_fail_it(ablated):
    root, _, _ = ablated
    results = root / "results"
    kept = shard_documents(results / "shards" / "demo-v0" / "manifest.json")
    candidate = shard_documents(results / "ablate_candidate" / "demo-v0" / "rules-long" / "manifest.json")
    assert set(candidate) < set(kept)
    failing = set()
    for source, snapshot, part in {key[:3] for key in kept}:
        judged = pq.read_table(results / "judge" / "demo-v0" / source / snapshot / f"{part}.parquet",
                               columns=["row", "kind", "lang"]).to_pylist()
        words = pq.read_table(results / "score" / "heuristics" / source / snapshot / f"{part}.parquet",
                              columns=["word_count"]).column("word_count").to_pylist()
        failing |= {(source, snapshot, part, doc["row"]) for doc in judged
                    if doc["kind"] == "web" and words[doc["row"]] < 300 and (source, snapshot, part, doc["row"]) in kept}
    # web documents of the version under 300 words and nothing else (code and PDFs keep their own rules)
    assert failing and set(kept) - set(candidate) == failing


def test_the_page_shows_each_seed_and_the_proposed_recipe_loads(ablated):
    root, _, _ = ablated
    decided = root / "results" / "ablate_decide" / "demo-v0"
    decision = read_json(decided / "decision.json")
    thresholds = decision["thresholds"]
    assert {row["candidate"] for row in thresholds["candidates"]} == {"keep_top-0.9", "keep_top-0.3"}
    assert all(len(row["values"]) == 2 for row in thresholds["candidates"])
    assert [row["candidate"] for row in decision["rules"]["candidates"]] == ["rules-long"]
    page = (decided / "index.html").read_text()
    for row in thresholds["candidates"]:
        assert all(f"{value:.5f}" in page for value in row["values"])
    assert (f"<b>{thresholds['best']}</b> is best on every seed" in page) == thresholds["decided"]
    assert "Heuristic rule sets" in page
    recipe = validate_recipe(yaml.safe_load((decided / "recipe.yaml").read_text()))
    assert recipe["phases"][0]["weights"] == {source: weight for source, weight in
                                              sorted(decision["mixtures"]["proposed"].items()) if weight > 0}
    loader = Loader(recipe, root / "results" / "shards" / "demo-v0" / "manifest.json")
    assert all(row["epochs"] <= row["max_epochs"] == 4 for row in loader.replay())
    assert (decided / "ratios.csv").read_text().count("\n") == (decided / "metrics.csv").read_text().count("\n") == 5


def test_a_proxy_trained_again_gives_the_same_losses_and_weights(ablated):
    root, _, _ = ablated
    run_file = root / "results" / "ablate_train" / "demo-v0" / "keep_top-0.3" / "seed-2.json"
    weights = run_file.with_suffix(".safetensors")
    before = run_file.read_bytes(), weights.read_bytes()
    run_snakemake(root, "--forcerun", str(run_file.relative_to(root)), "--cores", "2", "ablate")
    assert (run_file.read_bytes(), weights.read_bytes()) == before
    assert len(read_json(run_file)["losses"]) == 8
