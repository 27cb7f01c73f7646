"""Record shuffles between MPI ranks: Alltoallv of NumPy structured arrays, and replies
that come back aligned with what was sent."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
from mpi4py import MPI

from tokenmill.io import publish_directory, temp_directory_for


def assign_parts(counts: list[int], size: int) -> list[int]:
    """Rank of each part: contiguous shares of about equal document counts."""
    total = max(sum(counts), 1)
    owners, start = [], 0
    for count in counts:
        owners.append(min(size - 1, start * size // total))
        start += count
    return owners


@contextlib.contextmanager
def folder_of_all_ranks(comm: MPI.Comm, path: str) -> Iterator[str]:
    """One temporary folder that every rank of `comm` writes its parts into, renamed to `path` by
    rank 0 once every rank is done: a killed job never leaves a folder that looks complete."""
    temp = comm.bcast(str(temp_directory_for(path)) if comm.Get_rank() == 0 else None)
    yield temp
    comm.Barrier()
    if comm.Get_rank() == 0:
        publish_directory(Path(temp), path)


@dataclass
class Route:
    """How a shuffle went, so that answers can be sent back in the senders' order."""

    order: np.ndarray  # sent records, sorted by destination
    send_counts: np.ndarray
    recv_counts: np.ndarray


class Exchange:
    def __init__(self, comm: MPI.Comm):
        self.comm = comm
        self.rank = comm.Get_rank()
        self.size = comm.Get_size()
        self._types: dict[int, MPI.Datatype] = {}

    def _datatype(self, itemsize: int) -> MPI.Datatype:
        # One MPI element per record, so counts are records (not bytes) and stay within int32.
        if itemsize not in self._types:
            self._types[itemsize] = MPI.BYTE.Create_contiguous(itemsize).Commit()
        return self._types[itemsize]

    def _move(self, send: np.ndarray, send_counts: np.ndarray, recv_counts: np.ndarray) -> np.ndarray:
        recv = np.empty(int(recv_counts.sum()), dtype=send.dtype)
        kind = self._datatype(send.dtype.itemsize)
        send_displs = np.concatenate([[0], np.cumsum(send_counts)[:-1]]).astype(np.int64)
        recv_displs = np.concatenate([[0], np.cumsum(recv_counts)[:-1]]).astype(np.int64)
        self.comm.Alltoallv([np.ascontiguousarray(send), (send_counts, send_displs), kind],
                            [recv, (recv_counts, recv_displs), kind])
        return recv

    def shuffle(self, destinations: np.ndarray, records: np.ndarray) -> tuple[np.ndarray, Route]:
        """Send records[i] to rank destinations[i]. Received records are grouped by source rank,
        each group in the sender's order."""
        order = np.argsort(destinations, kind="stable")
        send_counts = np.bincount(destinations, minlength=self.size).astype(np.int64)
        recv_counts = np.empty(self.size, dtype=np.int64)
        self.comm.Alltoall(send_counts, recv_counts)
        received = self._move(records[order], send_counts, recv_counts)
        return received, Route(order, send_counts, recv_counts)

    def reply(self, route: Route, answers: np.ndarray) -> np.ndarray:
        """Send one answer per received record back; returns them aligned with the records
        the caller originally passed to `shuffle`."""
        back = self._move(answers, route.recv_counts, route.send_counts)
        aligned = np.empty_like(back)
        aligned[route.order] = back
        return aligned

    def any(self, flag: bool) -> bool:
        return bool(self.comm.allreduce(int(flag), op=MPI.MAX))
