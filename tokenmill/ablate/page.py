"""page: the ablation's decision as one HTML page with its plots (ablate_decide/<version>/index.html)."""

from __future__ import annotations

from html import escape

import numpy as np

from tokenmill.io import atomic_output
from tokenmill.report.html import _CSS, _cell, _figure, _table
from tokenmill.report.plots import _figure as new_figure, to_svg

METRIC_LABEL = {"bits_per_byte": "bits per byte of the evaluation text (lower is better)",
                "choice_probability": "probability of the right answer (higher is better)"}


def threshold_plot(thresholds: dict) -> str:
    """The metric against keep_top: each seed a dot, the mean a line."""
    figure, axes = new_figure(5.5, 3.2)
    rows = sorted(thresholds["candidates"], key=lambda row: 1.0 if row["keep_top"] is None else row["keep_top"])
    xs = [1.0 if row["keep_top"] is None else row["keep_top"] for row in rows]
    for x, row in zip(xs, rows):
        axes.scatter([x] * len(row["values"]), row["values"], s=14, color="#888")
    axes.plot(xs, [row["mean"] for row in rows], marker="o", color="#1f6fb2")
    axes.set_xlabel("select.quality.keep_top (1 = no cut)")
    axes.set_ylabel(thresholds["metric"])
    return to_svg(figure, "ablate-thresholds")


def mixture_plots(mixtures: dict) -> list[str]:
    """The proposed weights beside the natural shares, and each run's metric against its weight of
    the source the proposal favours most."""
    sources = mixtures["sources"]
    figure, axes = new_figure(6.0, 3.2)
    positions = np.arange(len(sources))
    axes.bar(positions - 0.2, [mixtures["natural"][s] for s in sources], width=0.4, label="natural", color="#aaa")
    axes.bar(positions + 0.2, [mixtures["proposed"][s] for s in sources], width=0.4, label="proposed",
             color="#1f6fb2")
    axes.set_xticks(positions, sources, rotation=30, ha="right")
    axes.set_ylabel("weight")
    axes.legend(frameon=False)
    weights = to_svg(figure, "ablate-mixture-weights")
    favoured = max(sources, key=lambda source: mixtures["proposed"][source])
    figure, axes = new_figure(5.0, 3.2)
    axes.scatter([run["weights"][favoured] for run in mixtures["runs"]], [run["value"] for run in mixtures["runs"]],
                 s=16, color="#1f6fb2")
    axes.set_xlabel(f"weight of {favoured}")
    axes.set_ylabel(mixtures["metric"])
    return [weights, to_svg(figure, "ablate-mixture-runs")]


def pool_section(anchor: str, title: str, pools: dict) -> list[str]:
    """The verdict and table of one kind of pool candidate (decide.pool_decision)."""
    verdict = (f"<b>{escape(pools['best'])}</b> is best on every seed." if pools["decided"] else
               f"<b>Undecided</b>: {escape(pools['best'])} has the best mean, but its seeds overlap those of "
               f"{escape(', '.join(pools['undecided_with_best']))}: more seeds or more tokens are needed.")
    return [f"<h2 id={anchor}>{title}</h2>", f"<p>{verdict}</p>",
            _table(["candidate", "tokens held", "seeds", "mean", "low", "high"],
                   [[_cell(row["candidate"], "text"), _cell(row["tokens_held"]),
                     _cell(", ".join(f"{value:.5f}" for value in row["values"]), "text"),
                     _cell(f"{row['mean']:.5f}"), _cell(f"{row['low']:.5f}"), _cell(f"{row['high']:.5f}")]
                    for row in pools["candidates"]])]


def render(decision: dict, runs: list[dict]) -> str:
    metric = decision["metric"]
    parts = [f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>tokenmill ablation "
             f"{escape(decision['version'])}</title><style>{_CSS}</style></head><body>",
             f"<h1>Ablation of {escape(decision['version'])}</h1>",
             f"<p class=pins>{len(runs)} proxy runs, {decision['budget_tokens']:,} tokens each, seeds "
             f"{', '.join(map(str, decision['seeds']))}; decided on {escape(METRIC_LABEL[metric])}.</p>"]
    if decision["thresholds"] is not None:
        parts += [*pool_section("thresholds", "Quality threshold", decision["thresholds"]),
                  _figure(threshold_plot(decision["thresholds"]),
                          "The metric of each seed (grey) and their mean, per threshold.")]
    if decision["rules"] is not None:
        parts += pool_section("rules", "Heuristic rule sets", decision["rules"])
    mixtures = decision["mixtures"]
    if mixtures is not None:
        weights, scatter = mixture_plots(mixtures)
        parts += ["<h2 id=mixtures>Mixture</h2>",
                  f"<p>{mixtures['mixtures']} mixtures, fit <b>{escape(mixtures['fit'])}</b>; rank correlation on "
                  f"mixtures the fit did not see ({mixtures['folds']}-fold): "
                  f"<b>{mixtures['rank_correlation_cross_validated']:.3f}</b>. The proposed mixture is in recipe.yaml; "
                  "the runs in ratios.csv and metrics.csv.</p>",
                  _table(["source", "natural", "proposed"],
                         [[_cell(source, "text"), _cell(f"{mixtures['natural'][source]:.4f}"),
                           _cell(f"{mixtures['proposed'][source]:.4f}")] for source in mixtures["sources"]]),
                  _figure(weights, "The proposed weights beside each source's natural share of tokens."),
                  _figure(scatter, "Each mixture's metric (seeds averaged) against its weight of the source the "
                                   "proposal weights most.")]
    parts += ["<h2 id=runs>Runs</h2>",
              _table(["candidate", "seed", "bits per byte", "choice probability", "choice accuracy"],
                     [[_cell(run["candidate"], "text"), _cell(run["seed"]),
                       _cell(f"{run['metrics']['bits_per_byte']:.5f}"),
                       _cell(f"{run['metrics']['choice_probability']:.5f}"),
                       _cell(f"{run['metrics']['choice_accuracy']:.4f}")]
                      for run in runs]),
              "</body></html>\n"]
    return "\n".join(parts)


def write_page(path: str, decision: dict, runs: list[dict]) -> None:
    with atomic_output(path) as temp:
        temp.write_text(render(decision, runs), encoding="utf-8")
