"""A child process that extracts one document at a time under a deadline and a memory limit.

A page that hangs the parser or blows up its memory must not take the part down: the
parent waits at most `deadline_s` for each result; on a timeout it kills the child, on a
dead child it notes the exit status, and either way it starts a fresh child for the next
document. The child's address space may grow by at most `memory_mb` beyond what it
inherited, so a runaway allocation fails inside the child (MemoryError) or kills it, never
the parent.
"""

from __future__ import annotations

import multiprocessing
import os
import resource


class SandboxFailure(Exception):
    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


def _address_space_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as handle:
        return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _serve(connection, work, memory_mb: int) -> None:
    if memory_mb:
        limit = _address_space_bytes() + (memory_mb << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    while True:
        item = connection.recv()
        if item is None:
            return
        try:
            connection.send(("ok", work(item)))
        except MemoryError:
            connection.send(("failed", ("memory", f"over the {memory_mb} MB limit")))
        except Exception as error:  # the parent decides what a failure means
            connection.send(("raised", error))


class Sandbox:
    """`sandbox.run(item)` is `work(item)` computed in the child; raises SandboxFailure with
    reason timeout, crash or memory, or re-raises what `work` raised."""

    def __init__(self, work, deadline_s: float, memory_mb: int):
        self._work, self.deadline_s, self.memory_mb = work, deadline_s, memory_mb
        self._context = multiprocessing.get_context("fork")  # the child inherits the loaded parser
        self._process = None
        self._connection = None
        self.restarts = 0

    def _start(self) -> None:
        parent, child = self._context.Pipe()
        self._process = self._context.Process(target=_serve, args=(child, self._work, self.memory_mb), daemon=True)
        self._process.start()
        child.close()
        self._connection = parent

    def _stop(self) -> int | None:
        self._process.kill()
        self._process.join()
        self._connection.close()
        code = self._process.exitcode
        self._process = self._connection = None
        self.restarts += 1
        return code

    def run(self, item):
        if self._process is None:
            self._start()
        self._connection.send(item)
        if not self._connection.poll(self.deadline_s):
            self._stop()
            raise SandboxFailure("timeout", f"no result within {self.deadline_s} s")
        try:
            status, value = self._connection.recv()
        except (EOFError, OSError):
            self._process.join(1)
            code = self._process.exitcode
            self._stop()
            raise SandboxFailure("crash", f"the extraction process died (exit status {code})") from None
        if status == "failed":
            raise SandboxFailure(*value)
        if status == "raised":
            raise value
        return value

    def close(self) -> None:
        if self._process is not None:
            try:
                self._connection.send(None)
                self._process.join(5)
            finally:
                if self._process.is_alive():
                    self._process.kill()
                self._process = self._connection = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
