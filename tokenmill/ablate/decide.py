"""decide: from the proxies' measurements to a decision, with its uncertainty.

- Thresholds, and heuristic rule sets apart: per candidate, the metric of each seed and their mean. The best candidate is
  decided only when every one of its seeds beats every seed of every other candidate; the
  candidates whose seeds overlap the best's are named as undecided against it (two seeds are too
  few to estimate a variance; their range is what they show).
- Mixtures: each mixture's metric averaged over its seeds, a regression from weights to it
  (tokenmill.ablate.mixture), the regression's rank correlation on mixtures it was not fitted on
  (cross-validated), and RegMix's optimum: the proposed weights, capped by ablate.max_epochs,
  written as a recipe over the version's manifest. The runs also go out as RegMix's ratios.csv and
  metrics.csv, for other fitting tools.

The metric is ablate.eval.metric: bits per byte of the evaluation text (lower is better) or the
probability the proxy gives the right answer of the multiple-choice items (higher is better).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import yaml

from tokenmill.ablate import mixture
from tokenmill.ablate.candidates import budget_tokens, natural_shares, source_caps, source_tokens
from tokenmill.hashing import sha256_file
from tokenmill.io import atomic_output, read_json, write_json
from tokenmill.trainer.recipe import validate_recipe

LOWER_IS_BETTER = {"bits_per_byte": True, "choice_probability": False}


def _better(metric: str, first: float, second: float) -> bool:
    return first < second if LOWER_IS_BETTER[metric] else first > second


def pool_decision(runs: list[dict], metric: str, kind: str) -> dict | None:
    """The table of the candidates of `kind` (threshold or rules: candidate, keep_top, seeds'
    values, mean, range), best first, the best candidate, whether it is decided, and the candidates
    undecided against it."""
    by_candidate: dict[str, list[dict]] = {}
    for run in runs:
        if run["kind"] == kind:
            by_candidate.setdefault(run["candidate"], []).append(run)
    if not by_candidate:
        return None
    rows = []
    for name, seeds in by_candidate.items():
        values = [run["metrics"][metric] for run in sorted(seeds, key=lambda run: run["seed"])]
        rows.append({"candidate": name, "keep_top": seeds[0]["keep_top"], "seeds": [run["seed"] for run in seeds],
                     "values": values, "mean": float(np.mean(values)), "low": min(values), "high": max(values),
                     "tokens_held": seeds[0]["tokens_held"]})
    rows.sort(key=lambda row: row["mean"] if LOWER_IS_BETTER[metric] else -row["mean"])
    best = rows[0]
    # every seed of the best beats every seed of the other: its worst against the other's best
    worst_of_best = best["high"] if LOWER_IS_BETTER[metric] else best["low"]
    undecided = [row["candidate"] for row in rows[1:]
                 if not _better(metric, worst_of_best, row["low"] if LOWER_IS_BETTER[metric] else row["high"])]
    return {"metric": metric, "lower_is_better": LOWER_IS_BETTER[metric], "candidates": rows,
            "best": best["candidate"], "decided": not undecided, "undecided_with_best": undecided}


def mixture_runs(runs: list[dict], metric: str) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
    """(mixture names, sources, weights [mixtures, sources], metric averaged over seeds)."""
    by_mixture: dict[str, list[dict]] = {}
    for run in runs:
        if run["kind"] == "mixture":
            by_mixture.setdefault(run["candidate"], []).append(run)
    names = sorted(by_mixture)
    sources = sorted({source for seeds in by_mixture.values() for source in seeds[0]["weights"]})
    weights = np.array([[by_mixture[name][0]["weights"].get(source, 0.0) for source in sources] for name in names])
    values = np.array([np.mean([run["metrics"][metric] for run in by_mixture[name]]) for name in names])
    return names, sources, weights, values


def mixture_decision(runs: list[dict], metric: str, ablate: dict, manifest: dict) -> dict | None:
    """The mixture search's fit, its cross-validated rank correlation, and the proposed weights."""
    names, sources, weights, values = mixture_runs(runs, metric)
    if not names:
        return None
    settings = ablate["mixtures"]
    # the regression predicts a loss; a score where higher is better is fitted negated
    target = values if LOWER_IS_BETTER[metric] else -values
    model = mixture.fit(weights, target, method=settings["fit"], seed=ablate["seed"], sources=sources)
    folds = min(settings["folds"], len(names))
    correlation = mixture.cross_validated_rank_correlation(weights, target, settings["fit"], folds, ablate["seed"])
    natural = natural_shares(manifest)
    caps = source_caps(source_tokens(manifest), ablate)
    proposed = mixture.propose(model, {source: natural.get(source, 0.0) for source in sources}, ablate["seed"],
                               caps={source: caps[source] for source in sources},
                               samples=settings["propose_samples"], top=settings["propose_top"])
    best_run = names[int(np.argmin(target))]
    return {"metric": metric, "fit": settings["fit"], "mixtures": len(names), "sources": sources,
            "rank_correlation_cross_validated": correlation, "folds": folds,
            "proposed": proposed, "natural": {source: natural.get(source, 0.0) for source in sources},
            "best_run": best_run, "runs": [{"candidate": name, "weights": dict(zip(sources, row.tolist())),
                                            "value": float(value)}
                                           for name, row, value in zip(names, weights, values)]}


def proposed_recipe(version: str, manifest_path: str, manifest: dict, weights: dict[str, float], ablate: dict) -> dict:
    """A recipe over the version's manifest (`manifest`, read from `manifest_path`) at the proposed
    weights: one phase as long as the mixture can run with no source past ablate.max_epochs, in
    whole steps of the proxy's batch."""
    used = {source: weight for source, weight in sorted(weights.items()) if weight > 0}
    sustainable = min(ablate["max_epochs"] * manifest["sources"][source]["n_tokens"] / weight
                      for source, weight in used.items())
    step = ablate["proxy"]["seq_len"] * ablate["proxy"]["micro_batch"]
    tokens = int(sustainable // step) * step
    if tokens < step:
        raise ValueError(f"the proposed mixture sustains {sustainable:.0f} tokens within ablate.max_epochs "
                         f"{ablate['max_epochs']}, less than one step of {step}")
    return validate_recipe({
        "recipe_id": f"{version}-ablate-mixture", "manifest_sha256": sha256_file(manifest_path),
        "tokenizer_sha256": manifest["tokenizer"]["sha256"], "seed": ablate["seed"],
        "global_batch": ablate["proxy"]["micro_batch"],
        "phases": [{"name": "main", "tokens": tokens, "seq_len": ablate["proxy"]["seq_len"], "weights": used,
                    "max_epochs": {source: ablate["max_epochs"] for source in used}}]})


def write_regmix_tables(decision: dict, ratios_path: str, metrics_path: str) -> None:
    """The mixture runs in RegMix's layout: ratios.csv (index, one column per source) and
    metrics.csv (index, the metric), rows joined by index."""
    for path, columns, row_of in (
            (ratios_path, decision["sources"], lambda run: [run["weights"][s] for s in decision["sources"]]),
            (metrics_path, [decision["metric"]], lambda run: [run["value"]])):
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(["index", *columns])
        for number, run in enumerate(decision["runs"]):
            writer.writerow([number, *(repr(float(value)) for value in row_of(run))])
        with atomic_output(path) as temp:
            temp.write_text(buffer.getvalue(), encoding="utf-8")


def decide(run_paths: list[str], ablate: dict, version: str, manifest_path: str, out_dir: str) -> dict:
    """decision.json, the proposed recipe (where mixtures ran), ratios.csv and metrics.csv, and
    index.html in `out_dir`, from the proxies' run files."""
    from tokenmill.ablate.page import write_page

    runs = sorted((read_json(path) for path in run_paths), key=lambda run: (run["candidate"], run["seed"]))
    metric = ablate["eval"]["metric"]
    manifest = read_json(manifest_path)
    out = Path(out_dir)
    decision = {"version": version, "metric": metric, "budget_tokens": budget_tokens(ablate["proxy"]),
                "seeds": ablate["seeds"], "thresholds": pool_decision(runs, metric, "threshold"),
                "rules": pool_decision(runs, metric, "rules"),
                "mixtures": mixture_decision(runs, metric, ablate, manifest),
                "runs": [{key: run[key] for key in ("candidate", "kind", "seed", "metrics")}
                         for run in runs]}
    if decision["mixtures"] is not None:
        recipe = proposed_recipe(version, manifest_path, manifest, decision["mixtures"]["proposed"], ablate)
        decision["mixtures"]["recipe"] = "recipe.yaml"
        with atomic_output(out / "recipe.yaml") as temp:
            temp.write_text(yaml.safe_dump(recipe, sort_keys=False), encoding="utf-8")
        write_regmix_tables(decision["mixtures"], str(out / "ratios.csv"), str(out / "metrics.csv"))
    write_json(out / "decision.json", decision)
    write_page(str(out / "index.html"), decision, runs)
    return decision
