"""Small gradient-boosted decision trees for binary labels, in numpy: a deterministic fit (no
sampling, histogram splits over fixed quantile cuts, ties to the lowest feature and cut) and an
inference that evaluates every tree at once. Trees are complete binary trees of one depth, stored
as arrays: a node that does not split sends every row left (threshold +inf)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np


def libm(function: Callable[[float], float], values: np.ndarray) -> np.ndarray:
    """`function` (math.exp, math.log1p: the C library's) of each value. numpy's own exp and log1p
    take SIMD builds on AVX-512 CPUs that differ from the C library's in the last bit (5 % of exp's
    values and 2 % of log1p's here), so a feature, a probability and a trained model would change
    with the CPU's vector width; blockml's compiled loops call the C library's too."""
    return np.fromiter(map(function, np.asarray(values, dtype=np.float64).ravel().tolist()), np.float64,
                       np.size(values)).reshape(np.shape(values))


@dataclass(frozen=True)
class Forest:
    base: float  # log-odds before the trees
    features: np.ndarray  # (trees, 2**depth - 1) feature index of each inner node
    thresholds: np.ndarray  # (trees, 2**depth - 1): a value <= threshold goes left
    leaves: np.ndarray  # (trees, 2**depth) log-odds added by each leaf

    @property
    def depth(self) -> int:
        return int(np.log2(self.leaves.shape[1]))

    def log_odds(self, rows: np.ndarray) -> np.ndarray:
        """The forest's log-odds for each row of `rows` (rows x features)."""
        trees, inner = self.features.shape
        if not len(rows) or not trees:
            return np.full(len(rows), self.base)
        # flat indices into raveled arrays: half the time of two-dimensional fancy indexing on a page's lines
        values = np.ascontiguousarray(rows, dtype=np.float64).ravel()
        row_start = (np.arange(len(rows)) * rows.shape[1])[None, :]
        tree_start = (np.arange(trees) * inner)[:, None]
        features, thresholds = self.features.ravel(), self.thresholds.ravel()
        node = np.zeros((trees, len(rows)), dtype=np.intp)
        for _ in range(self.depth):
            at = tree_start + node
            node = 2 * node + 1 + (values[row_start + features[at]] > thresholds[at])
        leaf = (np.arange(trees) * self.leaves.shape[1])[:, None] + node - inner
        return self.base + self.leaves.ravel()[leaf].sum(axis=0)

    def to_json(self) -> dict:
        return {"base": self.base, "features": self.features.tolist(), "thresholds": [
            [None if np.isinf(value) else value for value in row] for row in self.thresholds.tolist()],
                "leaves": self.leaves.tolist()}

    @classmethod
    def from_json(cls, data: dict) -> "Forest":
        thresholds = np.array([[np.inf if value is None else value for value in row] for row in data["thresholds"]],
                              dtype=np.float64)
        return cls(float(data["base"]), np.array(data["features"], dtype=np.intp).reshape(thresholds.shape),
                   thresholds.reshape(len(data["features"]), -1), np.array(data["leaves"], dtype=np.float64))


def quantile_cuts(column: np.ndarray, bins: int) -> np.ndarray:
    """At most bins - 1 distinct cut values between a column's quantiles."""
    cuts = np.unique(np.quantile(column, np.linspace(0, 1, bins + 1)[1:-1], method="lower"))
    return cuts[cuts < column.max()] if len(column) else cuts


def fit(rows: np.ndarray, labels: np.ndarray, weights: np.ndarray | None = None, trees: int = 100, depth: int = 4,
        learning_rate: float = 0.1, bins: int = 32, l2: float = 1.0, min_child_weight: float = 5.0) -> Forest:
    """Logistic-loss boosting: each tree grown level by level to `depth`, each split the best
    gain over every feature's quantile cuts (rows with a value <= cut go left)."""
    rows = np.asarray(rows, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    weights = np.ones(len(labels)) if weights is None else np.asarray(weights, dtype=np.float64)
    n, width = rows.shape
    cuts = [quantile_cuts(rows[:, f], bins) for f in range(width)]
    binned = np.stack([np.searchsorted(cuts[f], rows[:, f], side="left") for f in range(width)], axis=1)
    offsets = np.arange(width) * bins
    prior = np.clip(np.average(labels, weights=weights), 1e-6, 1 - 1e-6)
    base = math.log(prior / (1 - prior))
    score = np.full(n, base)
    inner, leaves_per_tree = 2 ** depth - 1, 2 ** depth
    all_features = np.zeros((trees, inner), dtype=np.intp)
    all_thresholds = np.full((trees, inner), np.inf)
    all_leaves = np.zeros((trees, leaves_per_tree))
    for t in range(trees):
        probability = 1 / (1 + libm(math.exp, -score))
        gradient = (probability - labels) * weights
        hessian = np.maximum(probability * (1 - probability), 1e-12) * weights
        node = np.zeros(n, dtype=np.intp)  # index among the nodes of the current level
        for level in range(depth):
            width_level = 2 ** level
            cells = (node[:, None] * (width * bins) + offsets[None, :] + binned).ravel()
            size = width_level * width * bins
            g = np.bincount(cells, np.repeat(gradient, width), size).reshape(width_level, width, bins)
            h = np.bincount(cells, np.repeat(hessian, width), size).reshape(width_level, width, bins)
            g_left, h_left = np.cumsum(g, axis=2), np.cumsum(h, axis=2)
            g_total, h_total = g_left[:, :, -1:], h_left[:, :, -1:]
            g_right, h_right = g_total - g_left, h_total - h_left
            gain = g_left ** 2 / (h_left + l2) + g_right ** 2 / (h_right + l2) - g_total ** 2 / (h_total + l2)
            valid = (h_left >= min_child_weight) & (h_right >= min_child_weight)
            valid[:, :, -1] = False
            for f in range(width):
                valid[:, f, len(cuts[f]):] = False
            gain = np.where(valid, gain, 0.0).reshape(width_level, -1)
            best = np.argmax(gain, axis=1)
            go_right = np.zeros(n, dtype=bool)
            for position in range(width_level):
                index = width_level - 1 + position
                if gain[position, best[position]] <= 1e-12:
                    continue
                feature, cut = divmod(int(best[position]), bins)
                all_features[t, index], all_thresholds[t, index] = feature, cuts[feature][cut]
                members = node == position
                go_right |= members & (binned[:, feature] > cut)
            node = 2 * node + go_right
        g_leaf = np.bincount(node, gradient, leaves_per_tree)
        h_leaf = np.bincount(node, hessian, leaves_per_tree)
        values = -learning_rate * g_leaf / (h_leaf + l2)
        all_leaves[t] = values
        score += values[node]
    return Forest(base, all_features, all_thresholds, all_leaves)
