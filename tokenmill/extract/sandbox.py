"""Child processes that extract one document at a time under a deadline and a memory limit.

A page that hangs the parser or blows up its memory must not take the part down. The deadline
is in CPU seconds, the child's own and those of the programs it ran (tesseract), so that
whether a page times out depends on the page and not on how busy the machine was: a loaded
node or test run quarantines the same pages as an idle one. The parent kills a child whose
item has used its CPU allowance, or that has spent WALL_LIMIT deadlines of wall-clock time
on one item whatever its CPU (a child asleep or stuck in I/O); a child that did finish says
its CPU count, so that a parent that looked late (busy with other children) decides
the same way. On a timeout the child is killed, on a dead child the parent notes the exit
status, and either way a fresh child takes the next document. The child's address space may
grow by at most `memory_mb` beyond what it inherited, so a runaway allocation fails inside
the child (MemoryError) or kills it, never the parent.

A pool runs several such children at once and hands their results back in the order the
documents came in, so what a part writes does not depend on how many children there are or
which one finishes first.
"""

from __future__ import annotations

import multiprocessing
import os
import resource
import sys
import time
from multiprocessing.connection import wait
from typing import Callable, Iterable, Iterator

# wall-clock seconds per CPU second of deadline before an item is a timeout whatever CPU it used:
# only a child that sleeps or waits on I/O gets near it, as a node loaded four times over would
WALL_LIMIT = 4.0


def over_deadline(deadline_s: float) -> str:
    return f"no result within {deadline_s} s of CPU time ({WALL_LIMIT * deadline_s:g} s of wall clock)"


def over_memory(memory_mb: int) -> str:
    return f"over the {memory_mb} MB limit"


def died(exit_status: int | None) -> str:
    return f"the extraction process died (exit status {exit_status})"


def next_look(used: float, began: float, now: float, deadline_s: float) -> float | None:
    """When an item that began (wall clock) at `began` and has used `used` CPU seconds could next
    be over its deadline: now plus the CPU seconds it has left, or WALL_LIMIT deadlines after it
    began, whichever is sooner; None if it is over already."""
    if used >= deadline_s or now - began >= WALL_LIMIT * deadline_s:
        return None
    return min(now + deadline_s - used, began + WALL_LIMIT * deadline_s)


def fork_child(target: Callable, args: tuple):
    """A forked, daemonic child running target(connection, *args); (our end of the pipe, the child)."""
    context = multiprocessing.get_context("fork")  # the child inherits the loaded parsers
    # a forked child flushes the parent's stdio buffers on exit: empty them first, or the log repeats lines
    sys.stdout.flush()
    sys.stderr.flush()
    parent, child = context.Pipe()
    process = context.Process(target=target, args=(child, *args), daemon=True)
    process.start()
    child.close()
    return parent, process


class SandboxFailure(Exception):
    def __init__(self, reason: str, detail: str, restarted: bool):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail, self.restarted = reason, detail, restarted


def _address_space_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def cpu_seconds() -> float:
    """CPU seconds this process has used, with those of the children it has waited for."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def print_job_cpu(started: float) -> None:
    """A part job's last line, which bench/bench_part.py reads: the CPU seconds of its own process
    (`started` of them its start-up) and of its workers (the children it has waited for)."""
    own, workers = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    print(f"CPU seconds: the job's own process {own.ru_utime + own.ru_stime:.3f} ({started:.3f} of them starting), "
          f"its workers {workers.ru_utime + workers.ru_stime:.3f}")


def process_cpu_seconds(pid: int) -> float:
    """cpu_seconds() of another process, read from /proc."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
        fields = handle.read().rpartition(")")[2].split()  # after the command name, which may hold spaces
    return sum(int(ticks) for ticks in fields[11:15]) / os.sysconf("SC_CLK_TCK")  # utime stime cutime cstime


def limit_memory(memory_mb: int) -> None:
    """This process's address space may grow by at most `memory_mb` from here (0: no limit)."""
    if memory_mb:
        limit = _address_space_bytes() + (memory_mb << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _serve(connection, work, memory_mb: int) -> None:
    limit_memory(memory_mb)
    while True:
        item = connection.recv()
        if item is None:
            return
        try:
            result = ("ok", work(item))
        except MemoryError:
            result = ("failed", ("memory", over_memory(memory_mb)))
        except Exception as error:  # the parent decides what a failure means
            result = ("raised", error)
        connection.send((*result, cpu_seconds()))


class Outcome:
    """What one item came to: `get()` returns the value or raises what computing it raised."""

    def __init__(self, value=None, error: BaseException | None = None):
        self._value, self._error = value, error

    def get(self):
        if self._error is not None:
            raise self._error
        return self._value


class Sandbox:
    """One child: `submit(item)`, then `collect()` once `connection` is readable or `due` has
    passed; collect returns `work(item)` computed in the child, raises SandboxFailure with
    reason timeout, crash or memory, or re-raises what `work` raised."""

    def __init__(self, work: Callable, deadline_s: float, memory_mb: int):
        self._work, self.deadline_s, self.memory_mb = work, deadline_s, memory_mb
        self._process = None
        self.connection = None
        self.due = self._submitted = 0.0
        self._child_cpu = 0.0  # the child's CPU seconds when it finished its last item: the next one's start
        self.restarts = 0

    def _start(self) -> None:
        self.connection, self._process = fork_child(_serve, (self._work, self.memory_mb))
        self._child_cpu = 0.0  # a forked child's count starts at zero

    def _stop(self) -> int | None:
        self._process.kill()
        self._process.join()
        self.connection.close()
        code = self._process.exitcode
        self._process = self.connection = None
        self.restarts += 1
        return code

    def submit(self, item) -> None:
        if self._process is None:
            self._start()
        self.connection.send(item)
        self._submitted = time.monotonic()
        self.due = self._submitted + self.deadline_s

    def overdue(self, now: float) -> bool:
        """Whether the item has run out of time; if it has not, `due` moves to when it next could
        have: now plus the CPU seconds it has left."""
        if now < self.due:
            return False
        due = next_look(process_cpu_seconds(self._process.pid) - self._child_cpu, self._submitted, now, self.deadline_s)
        if due is None:
            return True
        self.due = due
        return False

    def collect(self):
        if not self.connection.poll(0):
            self._stop()
            raise SandboxFailure("timeout", over_deadline(self.deadline_s), restarted=True)
        try:
            status, value, child_cpu = self.connection.recv()
        except (EOFError, OSError):
            self._process.join(1)
            code = self._process.exitcode
            self._stop()
            raise SandboxFailure("crash", died(code), restarted=True) from None
        used, self._child_cpu = child_cpu - self._child_cpu, child_cpu
        if used > self.deadline_s:  # as if the parent had been waiting: the same outcome, a fresh child
            self._stop()
            raise SandboxFailure("timeout", over_deadline(self.deadline_s), restarted=True)
        if status == "failed":
            raise SandboxFailure(*value, restarted=False)
        if status == "raised":
            raise value
        return value

    def close(self) -> None:
        if self._process is not None:
            try:
                self.connection.send(None)
                self._process.join(5)
            finally:
                if self._process.is_alive():
                    self._process.kill()
                self._process = self.connection = None


class SandboxPool:
    """`workers` sandboxes. `imap(items, task_of)` runs `work(task_of(item))` in whichever
    sandbox is free, and yields every item with its Outcome (None for an item whose task is
    None, which passes through) in the order the items came in. At most `window` items per
    worker are held between reading and yielding, which bounds the memory a slow document can
    make the others pile up."""

    def __init__(self, work: Callable, workers: int, deadline_s: float, memory_mb: int, window: int = 16):
        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        self._sandboxes = [Sandbox(work, deadline_s, memory_mb) for _ in range(workers)]
        self._window = window * workers

    @property
    def restarts(self) -> int:
        return sum(sandbox.restarts for sandbox in self._sandboxes)

    def imap(self, items: Iterable, task_of: Callable) -> Iterator[tuple[object, Outcome | None]]:
        source = iter(items)
        held: dict[int, object] = {}  # position -> item, until yielded
        tasks: dict[int, object] = {}  # position -> task, until a sandbox takes it
        outcomes: dict[int, Outcome | None] = {}  # position -> outcome, until yielded
        busy: dict[Sandbox, int] = {}
        idle = list(self._sandboxes)
        waiting = None  # position of an isolated item that no sandbox was free for
        taken = yielded = 0
        exhausted = False

        def dispatch() -> None:  # the waiting item to an idle sandbox
            nonlocal waiting
            sandbox, task = idle.pop(), tasks.pop(waiting)
            sandbox.submit(task)
            busy[sandbox], waiting = waiting, None

        while True:
            while taken - yielded < self._window and not exhausted:
                if waiting is None:
                    try:
                        item = next(source)
                    except StopIteration:
                        exhausted = True
                        break
                    held[taken] = item
                    task = task_of(item)
                    if task is None:
                        outcomes[taken] = None
                        taken += 1
                        continue
                    tasks[taken] = task
                    waiting, taken = taken, taken + 1
                if not idle:
                    break
                dispatch()
            if waiting is not None and idle:  # the window was full when the item was read
                dispatch()
            if yielded in outcomes:
                yield held.pop(yielded), outcomes.pop(yielded)
                yielded += 1
                continue
            if not busy:
                return
            timeout = max(0.0, min(sandbox.due for sandbox in busy) - time.monotonic())
            readable = set(wait([sandbox.connection for sandbox in busy], timeout))
            now = time.monotonic()
            for sandbox in [s for s in busy if s.connection in readable or s.overdue(now)]:
                try:
                    outcome = Outcome(sandbox.collect())
                except Exception as error:  # handed to the caller in order, with the item
                    outcome = Outcome(error=error)
                outcomes[busy.pop(sandbox)] = outcome
                idle.append(sandbox)

    def close(self) -> None:
        for sandbox in self._sandboxes:
            sandbox.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
