"""Test-only fault injection, so that the retry path can be tested on real jobs.

TOKENMILL_FAIL_ONCE=<directory>: the first run of a step that calls `fail_once(name)` leaves
`<directory>/<name>` and exits with status 75 (EX_TEMPFAIL); every later run finds the marker
and goes on. Unset (always, outside the tests), it does nothing.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

TEMPORARY_FAILURE = 75


def fail_once(step: str) -> None:
    directory = os.environ.get("TOKENMILL_FAIL_ONCE")
    if not directory:
        return
    marker = Path(directory) / re.sub(r"[^A-Za-z0-9._-]+", "_", step)
    if marker.exists():
        return
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("failed once on purpose\n", encoding="utf-8")
    print(f"TOKENMILL_FAIL_ONCE: injected transient failure of {step}; a retry succeeds", file=sys.stderr)
    raise SystemExit(TEMPORARY_FAILURE)
