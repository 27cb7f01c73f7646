"""Yield alerts and the yield history: a stage whose retention leaves its expected band, or moves
away from what the same rows retained in earlier runs, is the first sign that something broke
(a language-ID drop is an encoding regression, a dedup jump is an index that failed to load).

The history file is the one report output that is not a function of this run's inputs: it
holds every version's yield rows in the order the versions were last reported. Reporting a
version again replaces its rows (they move to the end), so rerunning never duplicates them.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import statistics
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tokenmill.io import read_json, write_parquet

ALL_SOURCES = "ALL"


class AlertConfigError(ValueError):
    pass


def check_band_names(bands: dict, stages: list[str]) -> None:
    unknown = sorted(set(bands) - set(stages))
    if unknown:
        raise AlertConfigError(f"config key report.alerts.bands: unknown stage(s) {', '.join(unknown)} "
                               f"(stages: {', '.join(stages)})")


@contextlib.contextmanager
def _history_lock(path: Path):
    """Two versions reported at once (one run, two targets) must not lose each other's rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(f".{path.name}.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def update_history(path: str | os.PathLike, version: str, rows: pa.Table) -> tuple[pa.Table, pa.Table]:
    """Replace `version`'s rows in the history file with `rows` (a yield table), written atomically.
    Returns (the other versions' rows, before this run; the new history)."""
    path = Path(path)
    with _history_lock(path):
        earlier = pq.read_table(path) if path.exists() else None
        if earlier is not None:
            earlier = earlier.filter(pc.not_equal(earlier.column("version"), version))
        run = (pc.max(earlier.column("run")).as_py() or 0) + 1 if earlier is not None and earlier.num_rows else 1
        current = rows.add_column(0, "version", pa.array([version] * rows.num_rows, pa.string()))
        current = current.add_column(1, "run", pa.array([run] * rows.num_rows, pa.int64()))
        # rows of a version reported before a yield column existed get nulls in it
        history = pa.concat_tables([earlier, current], promote_options="default") if earlier is not None else current
        write_parquet(path, history)
    return (earlier if earlier is not None else current.slice(0, 0)), history


def _trailing_medians(earlier: pa.Table, window: int) -> dict[tuple[str, str, str], float]:
    """(source, snapshot, stage) -> median retention over the last `window` earlier runs that have it."""
    series: dict[tuple[str, str, str], list[tuple[int, float]]] = {}
    for row in earlier.select(["run", "source", "snapshot", "stage", "retention"]).to_pylist():
        if row["retention"] is not None:
            series.setdefault((row["source"], row["snapshot"], row["stage"]), []).append((row["run"], row["retention"]))
    return {key: statistics.median(value for _, value in sorted(points)[-window:]) for key, points in series.items()}


def _row_name(row: dict) -> str:
    return "/".join(part for part in (row["source"], row["snapshot"]) if part)


def find_alerts(rows: list[dict], earlier: pa.Table, settings: dict, tiers: dict[str, str]) -> list[dict]:
    """Alerts for yield `rows` (with a snapshot key, "" for whole sources): retention outside the
    stage's band (sources whose tier is in settings["tiers"]; never ALL, which mixes tiers), or
    more than settings["max_deviation"] away from the trailing median of the history. Rows with
    fewer than settings["min_docs"] documents in are skipped: their retention is noise."""
    medians = _trailing_medians(earlier, settings["history_window"])
    alerts = []
    for row in rows:
        if row["retention"] in ("", None) or row["docs_in"] < settings["min_docs"]:
            continue
        retention = float(row["retention"])
        where = {"source": row["source"], "snapshot": row["snapshot"], "stage": row["stage"],
                 "docs_in": row["docs_in"], "retention": retention}
        band = settings["bands"].get(row["stage"])
        if band and row["source"] != ALL_SOURCES and tiers.get(row["source"]) in settings["tiers"]:
            low, high = band.get("min", 0.0), band.get("max", 1.0)
            if not low <= retention <= high:
                alerts.append({"kind": "band", **where, "min": low, "max": high,
                               "message": f"{_row_name(row)} {row['stage']}: retention {retention:.1%} is outside "
                                          f"its band {low:.1%}-{high:.1%}"})
        median = medians.get((row["source"], row["snapshot"], row["stage"]))
        if median is not None and abs(retention - median) > settings["max_deviation"]:
            alerts.append({"kind": "history", **where, "median": median, "max_deviation": settings["max_deviation"],
                           "message": f"{_row_name(row)} {row['stage']}: retention {retention:.1%} is "
                                      f"{retention - median:+.1%} from the median of earlier runs ({median:.1%})"})
    return alerts


def alert_summary(alerts: list[dict], limit: int = 10) -> list[str]:
    """The lines printed at the end of a run."""
    if not alerts:
        return ["no alerts"]
    lines = [f"{len(alerts)} alert(s):"] + [f"  {alert['message']}" for alert in alerts[:limit]]
    if len(alerts) > limit:
        lines.append(f"  ... and {len(alerts) - limit} more")
    return lines


def closing_lines(version: str, manifest: str, shard_dirs: str, report_dir: str, built: list[str],
                  manifest_in_run: bool) -> list[str]:
    """What a successful run says at its end: the version, its manifest, shards and report when
    the run's targets included the version's manifest; else only what it built (`built`: the
    targets asked for), for a run of one target says nothing of a version it did not finish."""
    if not manifest_in_run:
        shown = ", ".join(built[:5]) + (f" and {len(built) - 5} more" if len(built) > 5 else "")
        return [f"tokenmill: built {shown}", f"  version {version} is not complete: its manifest ({manifest}) was "
                "not among this run's targets"]
    return [f"tokenmill: version {version} is complete", f"  manifest: {manifest}", f"  shards:   {shard_dirs}",
            f"  yield:    {report_dir}/yield.tsv", *end_of_run_summary(report_dir)]


def end_of_run_summary(report_dir: str) -> list[str]:
    """The lines the end of a workflow run prints: where the version's index.html is and the
    summary of its yield alerts (from its alerts.json), or that the report was not written."""
    alerts_path = f"{report_dir}/alerts.json"
    if not os.path.exists(alerts_path):
        return [f"  report:   not written ({alerts_path} is missing)"]
    summary = read_json(alerts_path)["summary"]
    return [f"  report:   {report_dir}/index.html", *(f"  {line}" for line in summary)]
