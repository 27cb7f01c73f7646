"""Connected components of an edge list spread over MPI ranks.

Vertices (uint64 ids) live on the rank `owner_of(id)`, with a parent pointer that only
ever decreases and never exceeds the vertex itself. Each round hooks, for every edge
(u, v), the parents of u and v and the endpoints themselves onto min(parent(u), parent(v)),
then shortcuts every pointer to its grandparent until the forest is flat (pointer
jumping). When a round changes nothing, every component is a star whose root is its
smallest vertex, whatever the number of ranks or the order of the edges. Long chains
converge in O(log length) rounds because of the shortcutting.
"""

from __future__ import annotations

import numpy as np

from tokenmill.dedup.mpi import Exchange
from tokenmill.hashing import owner_of

_PROPOSAL = np.dtype([("target", np.uint64), ("value", np.uint64)])


class DistributedForest:
    def __init__(self, exchange: Exchange, u: np.ndarray, v: np.ndarray):
        self.ex = exchange
        self.u = u.astype(np.uint64)
        self.v = v.astype(np.uint64)
        endpoints = np.concatenate([self.u, self.v])
        received, _ = self.ex.shuffle(owner_of(endpoints, self.ex.size), endpoints)
        self.vertices = np.unique(received)  # the vertices this rank owns, sorted
        self.parent = self.vertices.copy()
        self.rounds = 0

    def _local_index(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        index = np.searchsorted(self.vertices, keys)
        index = np.minimum(index, max(len(self.vertices) - 1, 0))
        found = (self.vertices[index] == keys) if len(self.vertices) else np.zeros(len(keys), dtype=bool)
        return index, found

    def find(self, keys: np.ndarray) -> np.ndarray:
        """Current parent of each key; a key that is no vertex (no edge) is its own parent."""
        keys = keys.astype(np.uint64)
        received, route = self.ex.shuffle(owner_of(keys, self.ex.size), keys)
        index, found = self._local_index(received)
        answers = np.where(found, self.parent[index] if len(self.vertices) else received, received)
        return self.ex.reply(route, answers.astype(np.uint64))

    def _lower(self, targets: np.ndarray, values: np.ndarray) -> bool:
        proposals = np.empty(len(targets), dtype=_PROPOSAL)
        proposals["target"], proposals["value"] = targets, values
        received, _ = self.ex.shuffle(owner_of(targets, self.ex.size), proposals)
        index, _ = self._local_index(received["target"])
        lowered = self.parent.copy()
        np.minimum.at(lowered, index, received["value"])
        changed = bool(np.any(lowered != self.parent))
        self.parent = lowered
        return changed

    def _shortcut(self) -> None:
        while True:
            grandparent = self.find(self.parent)
            changed = bool(np.any(grandparent != self.parent))
            self.parent = grandparent
            if not self.ex.any(changed):
                return

    def solve(self) -> "DistributedForest":
        while True:
            self.rounds += 1
            pu, pv = self.find(self.u), self.find(self.v)
            low = np.minimum(pu, pv)
            changed = self._lower(np.concatenate([pu, pv, self.u, self.v]), np.concatenate([low, low, low, low]))
            self._shortcut()
            if not self.ex.any(changed):
                return self

