"""The part plan: one TSV row per part with the paths every stage reads and writes.

Aggregating stages (minhash_cluster, train_tokenizer, write_shards, report) take the plan
instead of thousands of paths on a command line; the workflow writes it from its own path
templates, so there is one definition of where things live. The plan does not depend on
the dataset version: versioned paths keep a literal `{version}` that readers fill in.
"""

from __future__ import annotations

import csv
import io

from tokenmill.io import atomic_output

PLAN_COLUMNS = ["source", "snapshot", "part", "kind", "input", "docs", "stats", "quarantine", "langid", "signatures",
                "dedup", "heuristics", "pii", "toxicity", "quality", "encoder", "decontaminate", "judge", "select",
                "tokenize"]
VERSIONED = ("judge", "select", "tokenize")


def write_plan(rows: list[list[str]], path: str) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", lineterminator="\n")
    writer.writerow(PLAN_COLUMNS)
    writer.writerows(rows)
    with atomic_output(path) as temp:
        temp.write_text(buffer.getvalue(), encoding="utf-8")


def read_plan(path: str, source: str | None = None, version: str | None = None) -> list[dict]:
    """The plan's rows (of one source, if given), with versioned paths filled in for `version`."""
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    if rows and list(rows[0]) != PLAN_COLUMNS:
        raise ValueError(f"{path}: columns {list(rows[0])} are not a tokenmill plan ({PLAN_COLUMNS})")
    rows = [row for row in rows if source is None or row["source"] == source]
    for row in rows:
        for column in VERSIONED:
            if version is not None:
                row[column] = row[column].replace("{version}", version)
            elif "{version}" in row[column]:
                row[column] = None  # a versioned path is only meaningful with a version
    return rows
