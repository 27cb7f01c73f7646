"""Connected components in one process: the reference that the MPI components
(tokenmill.dedup.components) are tested against, and what jobs that are not MPI jobs use.
Kept apart from them because importing mpi4py initialises MPI, which fails in a SLURM job
step that was not launched for MPI."""

from __future__ import annotations

import numpy as np


def union_find_labels(n: int, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """The smallest vertex of each vertex's component (vertices 0..n-1)."""
    parent = np.arange(n)

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in zip(u.tolist(), v.tolist()):
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return np.array([root(x) for x in range(n)])
