"""report: the yield table (documents, bytes and tokens in and out of every stage)."""

from __future__ import annotations

import csv
import io
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tokenmill.io import atomic_output, read_json, read_parquet
from tokenmill.select import FILTER_STAGES, reason_stage

YIELD_COLUMNS = ["source", "stage", "docs_in", "docs_out", "retention", "bytes_in", "bytes_out", "tokens_out"]
STAGES = ["extract", *FILTER_STAGES, "tokenize", "write_shards"]


@dataclass
class PartOutputs:
    """The files one part produced, as the report reads them."""

    source: str
    snapshot: str
    part: str
    extract_stats: str
    select: str
    tokenize: str


@dataclass
class _Row:
    docs_in: int = 0
    docs_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    tokens_out: int = 0

    def add(self, docs_in: int, docs_out: int, bytes_in: int, bytes_out: int, tokens_out: int = 0) -> None:
        self.docs_in += docs_in
        self.docs_out += docs_out
        self.bytes_in += bytes_in
        self.bytes_out += bytes_out
        self.tokens_out += tokens_out


@dataclass
class YieldTable:
    rows: dict = field(default_factory=lambda: defaultdict(_Row))
    reasons: Counter = field(default_factory=Counter)  # (source, stage, reason) -> documents
    unclaimed: list = field(default_factory=list)  # documents no language claimed: kept aside, listed

    def add_part(self, part: PartOutputs) -> None:
        stats = read_json(part.extract_stats)
        self.rows[part.source, "extract"].add(stats["candidates"], stats["docs"],
                                              stats["candidate_bytes"], stats["doc_bytes"])
        for reason, count in stats["quarantined"].items():
            self.reasons[part.source, "extract", f"quarantine:{reason}"] += count
        if stats["no_text"]:
            self.reasons[part.source, "extract", "no_main_text"] += stats["no_text"]
        if stats["read_errors"]:
            self.reasons[part.source, "extract", "read_error"] += len(stats["read_errors"])
        selection = read_parquet(part.select, columns=["row", "doc_id", "reason", "lang", "lang_conf", "raw_bytes",
                                                       "bytes", "scrub_spans", "quality_mid_kept"])
        for spans, reason in zip(selection.column("scrub_spans").to_pylist(), selection.column("reason").to_pylist()):
            for kind in sorted({span["kind"] for span in spans} if not reason else ()):
                self.reasons[part.source, "pii", f"scrubbed:{kind}"] += 1
        self.reasons[part.source, "quality", "mid_quality_kept"] += sum(selection.column("quality_mid_kept").to_pylist())
        reasons = selection.column("reason").to_pylist()
        for row in selection.filter(pc.equal(selection.column("reason"), "langid_unclaimed")).to_pylist():
            self.unclaimed.append({"source": part.source, "snapshot": part.snapshot, "part": part.part,
                                   "row": row["row"], "doc_id": row["doc_id"], "lang": row["lang"],
                                   "lang_conf": f"{row['lang_conf']:.4f}"})
        raw = np.asarray(selection.column("raw_bytes").to_numpy(), dtype=np.int64)
        cleaned = np.asarray(selection.column("bytes").to_numpy(), dtype=np.int64)
        # how far each document got: the index of the stage that excluded it (or past the end)
        reached = np.array([FILTER_STAGES.index(reason_stage(r)) if r else len(FILTER_STAGES) for r in reasons],
                           dtype=np.int64)
        line_stage = FILTER_STAGES.index("line_dedup")
        for position, stage in enumerate(FILTER_STAGES):
            arriving = reached >= position
            leaving = arriving if stage == "line_dedup" else reached > position
            size_in = raw if position <= line_stage else cleaned
            size_out = raw if position < line_stage else cleaned
            self.rows[part.source, stage].add(int(arriving.sum()), int(leaving.sum()),
                                              int(size_in[arriving].sum()), int(size_out[leaving].sum()))
        for reason, count in Counter(r for r in reasons if r).items():
            self.reasons[part.source, reason_stage(reason), reason] += count
        selected = reached == len(FILTER_STAGES)
        kept_docs, kept_bytes = int(selected.sum()), int(cleaned[selected].sum())

        tokenized = read_parquet(part.tokenize, columns=["n_tokens"])
        tokens = int(pc.sum(tokenized.column("n_tokens")).as_py() or 0)
        token_bytes = pq.read_schema(part.tokenize).field("tokens").type.value_type.bit_width // 8
        self.rows[part.source, "tokenize"].add(kept_docs, tokenized.num_rows, kept_bytes,
                                               tokens * token_bytes, tokens)

    def add_shards(self, source: str, shard_metas: list[dict]) -> None:
        tokenize_row = self.rows[source, "tokenize"]
        self.rows[source, "write_shards"].add(
            tokenize_row.docs_out, sum(m["n_docs"] for m in shard_metas), tokenize_row.bytes_out,
            sum(m["bin"]["bytes"] for m in shard_metas), sum(m["n_tokens"] for m in shard_metas))

    def ordered_rows(self) -> list[dict]:
        sources = sorted({source for source, _ in self.rows})
        totals: dict[str, _Row] = defaultdict(_Row)
        out = []
        for source in sources + ["ALL"]:
            for stage in STAGES:
                row = totals[stage] if source == "ALL" else self.rows.get((source, stage))
                if row is None:
                    continue
                if source != "ALL":
                    totals[stage].add(row.docs_in, row.docs_out, row.bytes_in, row.bytes_out, row.tokens_out)
                out.append({
                    "source": source, "stage": stage, "docs_in": row.docs_in, "docs_out": row.docs_out,
                    "retention": f"{row.docs_out / row.docs_in:.4f}" if row.docs_in else "",
                    "bytes_in": row.bytes_in, "bytes_out": row.bytes_out, "tokens_out": row.tokens_out,
                })
        return out


def _write_tsv(path: str, columns: list[str], rows: list[dict]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, delimiter="\t", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    with atomic_output(path) as temp:
        temp.write_text(buffer.getvalue(), encoding="utf-8")


def write_report(parts: list[PartOutputs], shard_dirs: dict[str, str], yield_path: str, reasons_path: str,
                 unclaimed_path: str) -> YieldTable:
    table = YieldTable()
    for part in parts:
        table.add_part(part)
    for source, shard_dir in sorted(shard_dirs.items()):
        listing = read_json(f"{shard_dir}/shards.json")
        table.add_shards(source, [read_json(f"{shard_dir}/{name}.meta.json") for name in listing["shards"]])
    _write_tsv(yield_path, YIELD_COLUMNS, table.ordered_rows())
    reason_rows = [{"source": source, "stage": stage, "reason": reason, "docs": count}
                   for (source, stage, reason), count in sorted(table.reasons.items()) if count]
    _write_tsv(reasons_path, ["source", "stage", "reason", "docs"], reason_rows)
    _write_tsv(unclaimed_path, ["source", "snapshot", "part", "row", "doc_id", "lang", "lang_conf"], table.unclaimed)
    return table
