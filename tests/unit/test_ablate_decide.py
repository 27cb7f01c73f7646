"""The ablation's decisions and candidates, on made-up runs: a threshold is called only when every
seed agrees, a mixture fit finds a planted optimum, and a config that cannot be ablated names its key."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import yaml

from tokenmill.ablate.candidates import (ablate_problems, budget_tokens, candidate_names, candidate_settings,
                                         check_budget, shard_order, source_caps, with_rules)
from tokenmill.ablate.decide import mixture_decision, pool_decision, write_regmix_tables
from tokenmill.config import ConfigError, validate

pytestmark = pytest.mark.unit


def threshold_runs(values: dict[str, list[float]]) -> list[dict]:
    return [{"candidate": name, "kind": "threshold", "seed": seed, "keep_top": float(name.split("-")[1]),
             "tokens_held": 1000, "metrics": {"bits_per_byte": value}}
            for name, seeds in values.items() for seed, value in enumerate(seeds, start=1)]


def test_the_best_threshold_is_decided_only_when_every_seed_beats_every_other():
    clear = pool_decision(threshold_runs({"keep_top-0.2": [1.10, 1.12], "keep_top-0.5": [1.20, 1.21],
                                          "keep_top-0.9": [1.30, 1.28]}), "bits_per_byte", "threshold")
    assert clear["best"] == "keep_top-0.2" and clear["decided"] and clear["undecided_with_best"] == []
    assert [row["candidate"] for row in clear["candidates"]] == ["keep_top-0.2", "keep_top-0.5", "keep_top-0.9"]
    # the second seed of 0.5 beats the first of 0.2: their ranges overlap, and the table says so
    tied = pool_decision(threshold_runs({"keep_top-0.2": [1.10, 1.15], "keep_top-0.5": [1.16, 1.12],
                                         "keep_top-0.9": [1.30, 1.28]}), "bits_per_byte", "threshold")
    assert tied["best"] == "keep_top-0.2" and not tied["decided"] and tied["undecided_with_best"] == ["keep_top-0.5"]


def test_a_higher_is_better_metric_ranks_the_other_way():
    runs = threshold_runs({"keep_top-0.2": [0.30, 0.31], "keep_top-0.5": [0.26, 0.27]})
    for run in runs:
        run["metrics"] = {"choice_probability": run["metrics"]["bits_per_byte"]}
    decision = pool_decision(runs, "choice_probability", "threshold")
    assert pool_decision(runs, "choice_probability", "rules") is None  # each kind decided apart
    assert decision["best"] == "keep_top-0.2" and decision["decided"]


def mixture_runs(count: int, favoured: str, seed: int = 0) -> list[dict]:
    """Runs whose loss falls as the weight of `favoured` rises (its source is the evaluation text's)."""
    rng = np.random.default_rng(seed)
    runs = []
    for number in range(count):
        weights = dict(zip("abc", rng.dirichlet([1.0, 1.0, 1.0]).round(6)))
        loss = 3.0 - 1.2 * weights[favoured] + 0.3 * weights[favoured] ** 2 + rng.normal(0, 0.01)
        runs += [{"candidate": f"mixture-{number:03d}", "kind": "mixture", "seed": seed_number, "weights": weights,
                  "metrics": {"bits_per_byte": loss + 0.001 * seed_number}} for seed_number in (1, 2)]
    return runs


def ablate_settings(fit: str = "auto") -> dict:
    return {"seed": 0, "max_epochs": 4, "proxy": {"seq_len": 128, "micro_batch": 8, "tokens": 8192},
            "mixtures": {"count": 12, "fit": fit, "folds": 4, "propose_samples": 4000, "propose_top": 50}}


def test_the_mixture_search_proposes_most_of_the_source_the_evaluation_text_is_drawn_from():
    manifest = {"n_tokens": 300_000, "sources": {name: {"n_tokens": 100_000} for name in "abc"}}
    decision = mixture_decision(mixture_runs(12, "b"), "bits_per_byte", ablate_settings(), manifest)
    assert max(decision["proposed"], key=decision["proposed"].get) == "b"
    assert decision["rank_correlation_cross_validated"] > 0.8
    assert decision["best_run"] == min(decision["runs"], key=lambda run: run["value"])["candidate"]


def test_the_runs_are_written_as_regmix_reads_them(tmp_path):
    manifest = {"n_tokens": 300_000, "sources": {name: {"n_tokens": 100_000} for name in "abc"}}
    decision = mixture_decision(mixture_runs(12, "a"), "bits_per_byte", ablate_settings("loglinear"), manifest)
    write_regmix_tables(decision, str(tmp_path / "ratios.csv"), str(tmp_path / "metrics.csv"))
    ratios = list(csv.DictReader(open(tmp_path / "ratios.csv")))
    metrics = list(csv.DictReader(open(tmp_path / "metrics.csv")))
    assert list(ratios[0]) == ["index", "a", "b", "c"] and list(metrics[0]) == ["index", "bits_per_byte"]
    assert len(ratios) == len(metrics) == 12
    assert all(abs(sum(float(row[s]) for s in "abc") - 1) < 1e-5 for row in ratios)


def demo_config(**ablate) -> dict:
    config = yaml.safe_load(open("config/config.yaml"))
    config["ablate"] = {**config.get("ablate", {}), **ablate}
    return validate(config)


def test_a_threshold_looser_than_the_versions_cut_or_too_few_mixtures_name_their_key():
    problems = ablate_problems(demo_config(thresholds={"keep_top": [0.5, 0.95, None]}, mixtures={"count": 2}))
    assert any(p.startswith("ablate.thresholds.keep_top: 0.95 keeps more than select.quality.keep_top 0.9")
               for p in problems)
    assert any(p.startswith("ablate.thresholds.keep_top: None keeps more") for p in problems)
    assert any(p.startswith("ablate.mixtures.count: 2 mixtures cannot fit") for p in problems)
    assert ablate_problems(demo_config()) == []


def test_a_rule_set_looser_than_its_kinds_profile_names_the_bound():
    # the web profile: gopher_quality.word_count {min: 50, max: 100000}, no rule on c4_max_word_length
    looser = {"web": {"gopher_quality": {"word_count": {"min": 20, "max": 100000}}}}
    stricter = {"web": {"gopher_quality": {"word_count": {"min": 300, "max": 100000}},
                        "c4": {"c4_max_word_length": {"max": 1000}}}}
    problems = ablate_problems(demo_config(rules={"short": looser, "long": stricter}))
    assert problems == ["ablate.rules.short.web.gopher_quality.word_count.min: 20 keeps more than "
                        "select.heuristics.profiles.web.gopher_quality.word_count.min 50, and candidates are drawn from "
                        "the version's selection; loosen the profile or tighten the rule"]
    # a bound the set leaves out is no rule at all: looser than the profile's
    dropped = ablate_problems(demo_config(rules={"open": {"web": {"gopher_quality": {"word_count": {"min": 300}}}}}))
    assert [p.split(":")[0] for p in dropped] == ["ablate.rules.open.web.gopher_quality.word_count.max"]
    with pytest.raises(ConfigError, match="ablate.rules"):
        demo_config(rules={"typo": {"web": {"gopher_quality": {"wordcount": {"min": 300}}}}})


def test_a_rule_set_is_laid_over_a_threshold_set_and_adds_the_rules_it_lacks():
    profile = {"gopher_quality": {"word_count": {"min": 50, "max": 100000}, "mean_word_length": {"min": 3, "max": 10}}}
    laid = with_rules(profile, {"gopher_quality": {"word_count": {"min": 300, "max": 100000}},
                                "c4": {"c4_max_word_length": {"max": 1000}}})
    assert laid == {"gopher_quality": {"word_count": {"min": 300, "max": 100000}, "mean_word_length": {"min": 3, "max": 10}},
                    "c4": {"c4_max_word_length": {"max": 1000}}}
    assert profile["gopher_quality"]["word_count"]["min"] == 50  # the version's own set is left as it was


def test_candidates_read_only_the_settings_they_depend_on():
    rules = {"long": {"web": {"gopher_quality": {"word_count": {"min": 300, "max": 100000}}}}}
    config = demo_config(thresholds={"keep_top": [0.9, 0.5]}, mixtures={"count": 4}, rules=rules)
    assert candidate_names(config["ablate"]) == ["keep_top-0.9", "keep_top-0.5", "rules-long", "mixture-000",
                                                 "mixture-001", "mixture-002", "mixture-003"]
    assert candidate_settings(config, "rules-long")["rules"] == rules["long"]
    threshold, mixture = candidate_settings(config, "keep_top-0.5"), candidate_settings(config, "mixture-001")
    assert "select" in threshold and "select" not in mixture and "mixtures" in mixture
    changed = demo_config(thresholds={"keep_top": [0.9, 0.5]}, mixtures={"count": 4}, eval={"metric": "choice_probability"},
                          seeds=[1, 2, 3], rules=rules)
    # the metric and the seeds are the proxies' and the decision's: no candidate is built again
    assert candidate_settings(changed, "keep_top-0.5") == threshold and candidate_settings(changed, "mixture-001") == mixture


def test_a_candidate_too_small_for_the_budget_is_refused_by_name():
    proxy = {"seq_len": 128, "micro_batch": 8, "tokens": 10_000}
    assert budget_tokens(proxy) == 9 * 1024
    with pytest.raises(ConfigError, match="ablate.proxy.tokens: candidate keep_top-0.2 holds 2000 tokens"):
        check_budget("keep_top-0.2", {"a": 1500, "b": 500}, 4, budget_tokens(proxy))
    check_budget("keep_top-0.2", {"a": 1500, "b": 900}, 4, budget_tokens(proxy))
    assert source_caps({"a": 1024, "b": 10**6}, {"max_epochs": 4, "proxy": proxy}) == {"a": 4 * 1024 / 9216, "b": 1.0}


def test_the_pool_reads_shards_in_an_order_of_their_paths_alone():
    shards = [{"path": f"src/snap/group-0000/shard-{number}"} for number in range(20)]
    order = shard_order(shards, seed=3)
    assert sorted(order) == list(range(20)) and order != list(range(20))
    reordered = list(reversed(shards))
    assert [reordered[i]["path"] for i in shard_order(reordered, seed=3)] == [shards[i]["path"] for i in order]
    assert shard_order(shards, seed=4) != order
