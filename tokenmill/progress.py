"""Progress lines for the per-document loops of long rules: documents done, rate and elapsed
time, logged every `TOKENMILL_PROGRESS_INTERVAL_S` seconds (30 by default) and once at the end.

Progress goes to the job's log only (through `logging`), never into an output, so it cannot
change an output's bytes; the interval is an environment variable rather than a config key
because a config change would rerun the rules that log it.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Callable

INTERVAL_ENV = "TOKENMILL_PROGRESS_INTERVAL_S"
DEFAULT_INTERVAL_S = 30.0

log = logging.getLogger("tokenmill.progress")


def log_progress_to_stderr() -> None:
    """For the command-line entry points: progress lines to stderr, which the rules send to their log."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    log.setLevel(logging.INFO)  # ours only: the libraries' own INFO chatter stays out of the log


def interval_from_env() -> float:
    value = os.environ.get(INTERVAL_ENV)
    if value is None:
        return DEFAULT_INTERVAL_S
    try:
        return max(0.0, float(value))
    except ValueError:
        raise ValueError(f"{INTERVAL_ENV}={value!r}: expected a number of seconds") from None


class Progress:
    """`progress.tick(n)` after every n documents, `progress.finish()` after the last."""

    def __init__(self, stage: str, unit: str = "documents", interval_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.stage, self.unit = stage, unit
        self.interval_s = interval_from_env() if interval_s is None else interval_s
        self.count = 0
        self._clock = clock
        self._started = clock()
        self._due = self._started + self.interval_s

    def tick(self, n: int = 1) -> None:
        self.count += n
        now = self._clock()
        if now >= self._due:
            self._log(now, "")
            self._due = now + self.interval_s

    def finish(self) -> None:
        self._log(self._clock(), " done")

    def _log(self, now: float, state: str) -> None:
        elapsed = now - self._started
        rate = self.count / elapsed if elapsed > 0 else 0.0
        log.info("%s%s: %d %s, %.1f %s/s, %.1f s elapsed",
                 self.stage, state, self.count, self.unit, rate, self.unit, elapsed)
