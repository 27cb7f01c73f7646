"""The one exception a record's extraction raises to be quarantined with its reason."""

from __future__ import annotations


class Quarantine(Exception):
    def __init__(self, reason: str, detail: str = "", content: str = ""):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail, self.content = reason, detail, content

    def __reduce__(self):  # crosses the sandbox's pipe whole
        return Quarantine, (self.reason, self.detail, self.content)
