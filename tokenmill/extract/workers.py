"""Worker processes that each do a whole unit of a part's work (a file, or a byte range of one)
from reading its input to writing its output fragment, under the same guarantees as the
per-document sandbox (tokenmill.extract.sandbox).

The job's own process only hands out units and watches: it never reads, decodes or writes a
document, so one job can keep a whole node's cores busy. A worker marks each document it
extracts in a small shared slot (its offset, and the worker's CPU and wall clock when it
began); the job reads the slot, not a message per document. A document that has used its
deadline in CPU seconds (or WALL_LIMIT deadlines of wall clock) gets its worker killed; a
worker that dies names the document it was on. Either way the unit is started again in a
fresh worker, from its beginning, with that document quarantined by the reason (a "poison"
offset), so a unit's output never depends on where a worker was killed. A worker that
finished a document over its deadline quarantines it the same way itself, so whether the
job looked in time changes nothing.
"""

from __future__ import annotations

import collections
import ctypes
import multiprocessing
import os
import signal
import time
from multiprocessing.connection import wait
from typing import Callable, Iterable, Iterator

from tokenmill.extract.sandbox import (SandboxFailure, cpu_seconds, died, fork_child, limit_memory, next_look,
                                       over_deadline, over_memory, process_cpu_seconds)

OFFSET, CPU_START, WALL_START, WATCHING = range(4)


class Guard:
    """In a worker: `run(offset, compute)` computes one document under the deadline and memory
    limit, raising SandboxFailure where the per-document sandbox would have failed it."""

    def __init__(self, slot, deadline_s: float, memory_mb: int, poison: dict[int, tuple[str, str]]):
        self._slot, self.deadline_s, self.memory_mb, self._poison = slot, deadline_s, memory_mb, poison

    def run(self, offset: int, compute: Callable):
        if offset in self._poison:  # an earlier attempt's worker was killed on it, or died on it
            raise SandboxFailure(*self._poison[offset], restarted=True)
        start = cpu_seconds()
        self._slot[OFFSET], self._slot[CPU_START], self._slot[WALL_START] = offset, start, time.monotonic()
        self._slot[WATCHING] = 1.0
        try:
            outcome = ("ok", compute())
        except MemoryError:
            outcome = ("memory", None)
        except Exception as error:  # what the document raised, unless the deadline says otherwise
            outcome = ("raised", error)
        finally:
            self._slot[WATCHING] = 0.0
        if cpu_seconds() - start > self.deadline_s:  # done, but late: as if the job had been looking
            raise SandboxFailure("timeout", over_deadline(self.deadline_s), restarted=True)
        status, value = outcome
        if status == "memory":
            raise SandboxFailure("memory", over_memory(self.memory_mb), restarted=False)
        if status == "raised":
            raise value
        return value


PR_SET_PDEATHSIG = 1


def _die_with(parent: int) -> None:
    """This worker killed when the job's process dies, even by SIGKILL: an orphan would go on
    writing fragments beside the next attempt's workers."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the request was made
        os._exit(1)


def _serve(connection, work: Callable, slot, deadline_s: float, memory_mb: int, parent: int) -> None:
    _die_with(parent)
    limit_memory(memory_mb)
    while True:
        task = connection.recv()
        if task is None:
            return
        unit, poison = task
        try:
            result = ("ok", work(unit, Guard(slot, deadline_s, memory_mb, poison)))
        except Exception as error:  # not a document's failure (those are quarantined): the job's
            result = ("raised", error)
        connection.send(result)


class _Worker:
    def __init__(self, work: Callable, deadline_s: float, memory_mb: int):
        self.slot = multiprocessing.get_context("fork").RawArray("d", 4)
        self.connection, self.process = fork_child(_serve, (work, self.slot, deadline_s, memory_mb, os.getpid()))
        self.deadline_s = deadline_s
        self.task = None
        self.due = 0.0

    def submit(self, task) -> None:
        self.task = task
        self.connection.send(task)
        self.due = time.monotonic() + self.deadline_s

    def overdue(self, now: float) -> int | None:
        """The offset of the document this worker has spent its deadline on, if any; else `due`
        moves to when the document it is on could first be overdue."""
        if now < self.due:
            return None
        offset, start, began, watching = self.slot[:]
        if not watching:
            self.due = now + self.deadline_s
            return None
        used = process_cpu_seconds(self.process.pid) - start
        if tuple(self.slot[:]) != (offset, start, began, watching):  # it moved on meanwhile: look again soon
            self.due = now
            return None
        due = next_look(used, began, now, self.deadline_s)
        if due is None:
            return int(offset)
        self.due = due
        return None

    def died_on(self) -> int | None:
        """After the worker died: the document it was on, if it was on one."""
        offset, _, _, watching = self.slot[:]
        return int(offset) if watching else None

    def stop(self) -> int | None:
        if self.process.is_alive():
            os.kill(self.process.pid, signal.SIGKILL)
        self.process.join()
        self.connection.close()
        return self.process.exitcode

    def close(self) -> None:
        try:
            self.connection.send(None)
            self.process.join(5)
        except OSError:
            pass
        if self.process.is_alive():
            self.process.kill()
            self.process.join()


class WorkerPool:
    """`workers` processes; `run(units)` does `work(unit, guard)` for every unit in whichever
    worker is free and yields (unit, what work returned) as units finish. A unit whose worker
    was killed on a document or died on one is done again with that document in its poison."""

    def __init__(self, work: Callable, workers: int, deadline_s: float, memory_mb: int):
        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        self._work, self._workers, self._deadline_s, self._memory_mb = work, workers, deadline_s, memory_mb
        self._live: list[_Worker] = []

    def _fresh(self) -> _Worker:
        worker = _Worker(self._work, self._deadline_s, self._memory_mb)
        self._live.append(worker)
        return worker

    def _retire(self, worker: _Worker) -> int | None:
        self._live.remove(worker)
        return worker.stop()

    def run(self, units: Iterable) -> Iterator[tuple[object, object]]:
        queue = collections.deque((unit, {}) for unit in units)
        idle = [self._fresh() for _ in range(min(self._workers, len(queue)))]
        busy: list[_Worker] = []
        while queue or busy:
            while queue and idle:
                worker = idle.pop()
                worker.submit(queue.popleft())
                busy.append(worker)
            due = min(worker.due for worker in busy)
            timeout = None if due == float("inf") else max(0.0, due - time.monotonic())
            readable = wait([worker.connection for worker in busy], timeout)
            now = time.monotonic()
            for worker in list(busy):
                unit, poison = worker.task
                if worker.connection in readable:
                    try:
                        status, value = worker.connection.recv()
                    except (EOFError, OSError):
                        offset = worker.died_on()
                        code = self._retire(worker)
                        if offset is None:
                            raise RuntimeError(f"{unit}: a worker died outside any document (exit status {code})")
                        failure = ("crash", died(code))
                    else:
                        busy.remove(worker)
                        idle.append(worker)
                        if status == "raised":
                            raise value
                        yield unit, value
                        continue
                else:
                    offset = worker.overdue(now)
                    if offset is None:
                        continue
                    self._retire(worker)
                    failure = ("timeout", over_deadline(self._deadline_s))
                # the unit again from its start, in a fresh worker, with that document quarantined
                busy.remove(worker)
                idle.append(self._fresh())
                queue.appendleft((unit, {**poison, offset: failure}))

    def close(self) -> None:
        for worker in list(self._live):
            worker.close()
        self._live.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
