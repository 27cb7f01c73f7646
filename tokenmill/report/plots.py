"""The report's plots as SVG text, byte-identical for the same data (fixed id salt, no date)."""

from __future__ import annotations

import io
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend is chosen before pyplot loads)
import numpy as np  # noqa: E402

STYLE = {"font.size": 9, "axes.spines.top": False, "axes.spines.right": False,
         "figure.dpi": 96}


def to_svg(figure, name: str) -> str:
    """The figure as an inline <svg> element. The salt is the plot's name, so that the ids of two
    plots on one page never collide, and the same data always gives the same ids. Text stays text
    (searchable, small), set in the browser's sans-serif."""
    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"tokenmill-{name}", "svg.fonttype": "none"}):
        figure.savefig(buffer, format="svg", metadata={"Date": None}, bbox_inches="tight")
    plt.close(figure)
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def _figure(width: float, height: float):
    with matplotlib.rc_context(STYLE):
        return plt.subplots(figsize=(width, height))


def _edge_labels(edges: list, unit: str = "") -> list[str]:
    def short(value):
        return f"{value / 1000:g}k" if value >= 1000 else f"{value:g}"
    return [f"{short(low)}-{short(high)}{unit}" for low, high in zip(edges, edges[1:])] + [f"{short(edges[-1])}+{unit}"]


def retention_heatmap(rows: list[dict], stages: list[str], alerts: list[dict]) -> str:
    """Retention of every stage (columns) for every source/snapshot (rows); alert cells are boxed in red."""
    names = sorted({(r["source"], r["snapshot"]) for r in rows})
    grid = np.full((len(names), len(stages)), np.nan)
    for r in rows:
        if r["retention"] != "":
            grid[names.index((r["source"], r["snapshot"])), stages.index(r["stage"])] = float(r["retention"])
    with matplotlib.rc_context(STYLE):
        figure, axes = plt.subplots(figsize=(1.2 + 0.55 * len(stages), 0.8 + 0.28 * len(names)))
        image = axes.imshow(grid, cmap="RdYlGn", vmin=0.0, vmax=1.0, aspect="auto")
        axes.set_xticks(range(len(stages)), stages, rotation=45, ha="right")
        axes.set_yticks(range(len(names)), [f"{s} / {n}" for s, n in names])
        for (i, j), value in np.ndenumerate(grid):
            if not np.isnan(value):
                axes.text(j, i, f"{value:.0%}", ha="center", va="center", fontsize=7)
        for alert in alerts:
            if (alert["source"], alert["snapshot"]) in names:
                i, j = names.index((alert["source"], alert["snapshot"])), stages.index(alert["stage"])
                axes.add_patch(plt.Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="red", linewidth=2))
        figure.colorbar(image, ax=axes, label="documents out / in", fraction=0.03)
        axes.set_title("Retention per snapshot and stage (red box: alert)")
    return to_svg(figure, "retention_heatmap")


def retention_vs_bands(rows: list[dict], stages: list[str], bands: dict) -> str:
    """Per-source retention per stage against the expected bands (grey)."""
    figure, axes = _figure(1.5 + 0.6 * len(stages), 3.6)
    for position, stage in enumerate(stages):
        band = bands.get(stage)
        if band:
            low, high = band.get("min", 0.0), band.get("max", 1.0)
            axes.add_patch(plt.Rectangle((position - 0.4, low), 0.8, high - low, color="0.85", zorder=0))
    sources = sorted({r["source"] for r in rows})
    for number, source in enumerate(sources):
        points = [(stages.index(r["stage"]), float(r["retention"])) for r in rows
                  if r["source"] == source and r["retention"] != ""]
        x, y = zip(*points) if points else ((), ())
        style = {"color": "black", "marker": "D", "s": 30} if source == "ALL" else {"marker": "o", "s": 18}
        axes.scatter(np.asarray(x) + (number - len(sources) / 2) * 0.04, y, label=source, zorder=2, **style)
    axes.set_xticks(range(len(stages)), stages, rotation=45, ha="right")
    axes.set_ylim(-0.02, 1.05)
    axes.set_ylabel("retention (documents)")
    axes.set_title("Retention per source and stage; grey: expected band")
    axes.legend(fontsize=7, loc="lower left", ncol=2)
    return to_svg(figure, "retention_vs_bands")


def tokens_by_language(snapshots: list[dict], top: int = 8) -> str:
    """Selected tokens per source, stacked by language (the `top` largest languages overall)."""
    totals, by_source = defaultdict(int), defaultdict(lambda: defaultdict(int))
    for snapshot in snapshots:
        for row in snapshot["languages"]:
            totals[row["lang"]] += row["tokens"]
            by_source[snapshot["source"]][row["lang"]] += row["tokens"]
    languages = [lang for lang, _ in sorted(totals.items(), key=lambda item: (-item[1], item[0]))[:top]]
    sources = sorted(by_source)
    figure, axes = _figure(7.5, 0.8 + 0.35 * len(sources))
    left = np.zeros(len(sources))
    for lang in languages + ["other"]:
        widths = np.array([by_source[s][lang] if lang != "other" else
                           sum(v for k, v in by_source[s].items() if k not in languages) for s in sources], dtype=float)
        axes.barh(sources, widths, left=left, label=lang)
        left += widths
    axes.set_xlabel("tokens in shards")
    axes.set_title("Tokens by source and language")
    axes.legend(fontsize=7, ncol=5, loc="lower right")
    return to_svg(figure, "tokens_by_language")


def length_histogram(snapshots: list[dict], edges: list[int]) -> str:
    extracted = np.sum([s["length_extracted"] for s in snapshots], axis=0)
    selected = np.sum([s["length_selected"] for s in snapshots], axis=0)
    figure, axes = _figure(7.5, 3.0)
    x = np.arange(len(edges))
    axes.bar(x - 0.2, extracted, width=0.4, label="extracted")
    axes.bar(x + 0.2, selected, width=0.4, label="selected")
    axes.set_xticks(x, _edge_labels(edges), rotation=45, ha="right")
    axes.set_xlabel("characters per document")
    axes.set_ylabel("documents")
    axes.set_title("Document length")
    axes.legend()
    return to_svg(figure, "length_histogram")


def score_histograms(snapshots: list[dict], edges: list[float]) -> str:
    names = list(snapshots[0]["scores"]) if snapshots else []
    with matplotlib.rc_context(STYLE):
        figure, grid = plt.subplots(1, max(len(names), 1), figsize=(3.2 * max(len(names), 1), 2.8), squeeze=False)
    width = edges[1] - edges[0]
    for axes, name in zip(grid[0], names):
        for kind in ("all", "selected"):
            counts = np.sum([s["scores"][name][kind] for s in snapshots], axis=0)
            axes.bar(np.asarray(edges) + width / 2, counts, width=width * 0.95, alpha=0.6, label=kind)
        axes.set_title(name)
        axes.set_xlabel("score")
    grid[0][0].set_ylabel("documents")
    grid[0][0].legend(fontsize=7)
    figure.suptitle("Quality scores: every scored document and the selected ones", y=1.04)
    return to_svg(figure, "score_histograms")


def cluster_sizes(snapshots: list[dict], edges: list[int]) -> str:
    counts = np.sum([s["cluster_sizes"] for s in snapshots], axis=0)
    figure, axes = _figure(6.0, 2.8)
    axes.bar(range(len(edges)), counts)
    axes.set_yscale("log")
    axes.set_xticks(range(len(edges)), [f"{low}" if high - low == 1 else f"{low}-{high - 1}"
                                        for low, high in zip(edges, edges[1:])] + [f"{edges[-1]}+"])
    axes.set_xlabel("documents per near-duplicate cluster")
    axes.set_ylabel("clusters")
    axes.set_title("Near-duplicate cluster sizes")
    return to_svg(figure, "cluster_sizes")


def top_hosts(snapshots: list[dict], top: int = 20) -> str:
    tokens = defaultdict(int)
    for snapshot in snapshots:
        for row in snapshot["top_hosts"]:
            tokens[f"{row['host']} ({snapshot['source']})"] += row["tokens"]
    ranked = sorted(tokens.items(), key=lambda item: (-item[1], item[0]))[:top][::-1]
    figure, axes = _figure(7.5, 0.8 + 0.25 * max(len(ranked), 1))
    axes.barh([name for name, _ in ranked], [value for _, value in ranked])
    axes.set_xlabel("tokens in shards")
    axes.set_title(f"Top {top} hosts by surviving tokens")
    return to_svg(figure, "top_hosts")


def new_host_rate(snapshots: list[dict]) -> str:
    shown = [s for s in snapshots if s["new_host_rate"] is not None]
    figure, axes = _figure(7.5, 0.8 + 0.28 * max(len(shown), 1))
    axes.barh([f"{s['source']} / {s['snapshot']}" for s in shown][::-1], [s["new_host_rate"] for s in shown][::-1])
    axes.set_xlim(0, 1)
    axes.set_xlabel("share of the snapshot's hosts not seen in an earlier snapshot of the source")
    axes.set_title("New-host rate")
    return to_svg(figure, "new_host_rate")


def quarantine_reasons(snapshots: list[dict]) -> str:
    counts = defaultdict(int)
    for snapshot in snapshots:
        for reason, count in snapshot["quarantine"].items():
            counts[f"{reason} ({snapshot['source']})"] += count
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[::-1]
    figure, axes = _figure(7.5, 0.8 + 0.25 * max(len(ranked), 1))
    axes.barh([name for name, _ in ranked], [value for _, value in ranked])
    axes.set_xlabel("records")
    axes.set_title("Records that yielded no document, by reason")
    return to_svg(figure, "quarantine_reasons")


def retention_history(history: list[dict], stages: list[str]) -> str:
    """Retention of every stage over the runs in the history (all sources together)."""
    runs = sorted({(row["run"], row["version"]) for row in history})
    figure, axes = _figure(7.5, 3.2)
    for stage in stages:
        points = {row["run"]: row["retention"] for row in history
                  if row["source"] == "ALL" and row["stage"] == stage and row["retention"] is not None}
        axes.plot([run for run, _ in runs if run in points], [points[run] for run, _ in runs if run in points],
                  marker="o", label=stage)
    axes.set_xticks([run for run, _ in runs], [version for _, version in runs], rotation=45, ha="right")
    axes.set_ylabel("retention (all sources)")
    axes.set_title("Retention per stage over reported versions")
    axes.legend(fontsize=7, ncol=3)
    return to_svg(figure, "retention_history")
