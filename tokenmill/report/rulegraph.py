"""The workflow's rule graph as a picture, drawn from `snakemake --rulegraph` output in pure Python
(layers by longest path from the inputs, barycentre ordering within a layer), so that no
system package is needed to make the report."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from tokenmill.report.plots import STYLE, to_svg  # noqa: E402

_NODE = re.compile(r'^\s*(\d+)\[label = "([^"]+)"', re.MULTILINE)
_EDGE = re.compile(r"^\s*(\d+) -> (\d+)\s*$", re.MULTILINE)


def parse_rulegraph(dot: str) -> tuple[list[str], list[tuple[str, str]]]:
    """Rule names and (upstream, downstream) edges of a Snakemake rule graph in DOT."""
    names = dict(_NODE.findall(dot))
    if not names:
        raise ValueError("no rule found in the rule graph (is it snakemake --rulegraph output?)")
    edges = sorted({(names[a], names[b]) for a, b in _EDGE.findall(dot)})
    return sorted(names.values()), edges


def _forward_edges(rules: list[str], edges: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The edges without those that close a cycle. The rule graph can have a cycle where jobs have
    none: a synthetic source's extract reads what generate made of another source's extracted
    documents. Of the edges on a cycle, the one that runs furthest back (towards the rules that
    read nothing, by breadth-first distance from them) is left out, until none is left."""
    reading = {b for _, b in edges}
    distance = {rule: 0 for rule in rules if rule not in reading}
    frontier, level = sorted(distance), 0
    while frontier:
        level += 1
        frontier = sorted({b for a, b in edges if a in frontier and b not in distance})
        distance.update((rule, level) for rule in frontier)
    kept = set(edges)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            rule = todo.pop()
            if rule == goal:
                return True
            if rule not in seen:
                seen.add(rule)
                todo.extend(b for a, b in kept if a == rule)
        return False

    while cyclic := [(a, b) for a, b in sorted(kept) if reaches(b, a)]:
        kept.discard(min(cyclic, key=lambda edge: (distance.get(edge[1], 0) - distance.get(edge[0], 0), edge)))
    return sorted(kept)


def _layers(rules: list[str], edges: list[tuple[str, str]]) -> list[list[str]]:
    """Rules by layer, by longest path from the rules that read nothing (an edge that closes a
    cycle is left out of the layering, and drawn upwards)."""
    upstream = {rule: [a for a, b in _forward_edges(rules, edges) if b == rule] for rule in rules}
    depth: dict[str, int] = {}

    def level(rule: str) -> int:
        if rule not in depth:
            depth[rule] = 1 + max((level(parent) for parent in upstream[rule]), default=-1)
        return depth[rule]

    layers: list[list[str]] = [[] for _ in range(1 + max(level(rule) for rule in rules))]
    for rule in rules:
        layers[depth[rule]].append(rule)
    for number in range(1, len(layers)):  # order each layer by the mean position of its parents
        previous = {rule: i for i, rule in enumerate(layers[number - 1])}
        def barycentre(rule):
            positions = [previous[p] for p in upstream[rule] if p in previous]
            return (sum(positions) / len(positions) if positions else len(previous), rule)
        layers[number].sort(key=barycentre)
    return layers


def rulegraph_svg(dot: str) -> str:
    rules, edges = parse_rulegraph(dot)
    layers = _layers(rules, edges)
    width = max(len(layer) for layer in layers)
    position = {}
    for row, layer in enumerate(layers):
        for column, rule in enumerate(layer):
            position[rule] = ((column + 0.5) * width / len(layer), -row)
    with matplotlib.rc_context(STYLE):
        figure, axes = plt.subplots(figsize=(2.1 * width, 0.75 * len(layers) + 0.4))
    for a, b in edges:
        axes.annotate("", xy=position[b], xytext=position[a], zorder=1,
                      arrowprops={"arrowstyle": "-|>", "color": "0.55", "shrinkA": 9, "shrinkB": 9, "lw": 0.8})
    for rule, (x, y) in position.items():
        axes.text(x, y, rule, ha="center", va="center", fontsize=8, zorder=2,
                  bbox={"boxstyle": "round,pad=0.3", "facecolor": "#e8f0fb", "edgecolor": "#4a74b4"})
    axes.set_xlim(-0.1, width + 0.1)
    axes.set_ylim(-len(layers) + 0.5, 0.5)
    axes.axis("off")
    return to_svg(figure, "rulegraph")
