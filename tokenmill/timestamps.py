"""Times as the outputs write them: 'YYYY-MM-DDTHH:MM:SSZ', UTC, whatever the input wrote
(WARC-Date, ARC's 14 digits, ISO 8601 with or without a zone, epoch seconds)."""

from __future__ import annotations

import datetime as dt


def normalize_timestamp(value) -> str | None:
    """WARC-Date / JSONL timestamps to 'YYYY-MM-DDTHH:MM:SSZ' (UTC); None if unparseable."""
    if value is None or value == "":
        return None
    try:
        if isinstance(value, (int, float)):
            moment = dt.datetime.fromtimestamp(value, tz=dt.timezone.utc)
        else:
            text = str(value).strip()
            if len(text) == 14 and text.isdigit():  # WARC/0.17 and ARC style 20080430204825
                text = f"{text[:4]}-{text[4:6]}-{text[6:8]}T{text[8:10]}:{text[10:12]}:{text[12:14]}Z"
            moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=dt.timezone.utc)
        return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (ValueError, OverflowError, OSError):  # not a time, or outside the years a datetime holds
        return None


def utc_timestamp(value) -> str:
    """normalize_timestamp, for a time that must be there: ValueError naming the value if not."""
    normalized = normalize_timestamp(value)
    if normalized is None:
        raise ValueError(f"not a timestamp: {value!r}")
    return normalized
