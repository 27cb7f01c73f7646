"""report: the yield table (documents, bytes and tokens in and out of every stage, per source and
per snapshot) and the contamination report (which benchmarks were found in which documents)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from tokenmill.io import read_json, read_parquet, write_json, write_parquet, write_tsv
from tokenmill.languages import LanguageTable, load_language_table
from tokenmill.select.judge import FILTER_STAGES, reason_stage
from tokenmill.shards.writer import read_listings

YIELD_COLUMNS = ["source", "stage", "docs_in", "docs_out", "retention", "bytes_in", "bytes_out", "tokens_out",
                 "representatives_changed"]
SNAPSHOT_YIELD_COLUMNS = ["source", "snapshot", *YIELD_COLUMNS[1:]]
KIND_YIELD_COLUMNS = ["source", "kind", "stage", "docs_in", "docs_out", "retention", "bytes_in", "bytes_out"]
# `rules`: where its heuristics' thresholds and its naturalness reference come from (tokenmill.languages):
# its own reference text, or its script's entry for a language that has none
LANGUAGE_YIELD_COLUMNS = ["source", "lang", "tier", "max_epochs", "rules", "stage", "docs_in", "docs_out", "retention",
                          "bytes_in", "bytes_out"]
ALL_SOURCES = "ALL"
CONTAMINATION_COLUMNS = ["benchmark", "docs_scanned", "docs_flagged", "rate", "tokens_flagged", "items_hit", "max_run"]
TOP_OFFENDERS = 10
STAGES = ["extract", *FILTER_STAGES, "tokenize", "write_shards"]
# the stages where select chooses which copy of a group to keep (select's per-snapshot summary)
_REPRESENTATIVES = {"exact_dedup": "exact_groups_changed", "near_dedup": "clusters_changed"}


@dataclass
class PartOutputs:
    """The files one part produced, as the report reads them."""

    source: str
    snapshot: str
    part: str
    extract_stats: str
    select: str
    tokenize: str
    decontaminate: str


@dataclass
class _Row:
    docs_in: int = 0
    docs_out: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    tokens_out: int = 0
    representatives_changed: int = 0

    def add(self, docs_in: int, docs_out: int, bytes_in: int, bytes_out: int, tokens_out: int = 0,
            representatives_changed: int = 0) -> None:
        self.docs_in += docs_in
        self.docs_out += docs_out
        self.bytes_in += bytes_in
        self.bytes_out += bytes_out
        self.tokens_out += tokens_out
        self.representatives_changed += representatives_changed

    def counts(self) -> dict:
        """Documents and bytes in and out, and the retention as the tables print it ("" where nothing came in)."""
        return {"docs_in": self.docs_in, "docs_out": self.docs_out,
                "retention": f"{self.docs_out / self.docs_in:.4f}" if self.docs_in else "",
                "bytes_in": self.bytes_in, "bytes_out": self.bytes_out}


@dataclass
class _BenchmarkTally:
    docs_flagged: int = 0
    tokens_flagged: int = 0
    max_run: int = 0
    items: set = field(default_factory=set)
    offenders: list = field(default_factory=list)  # (-run, doc_id, record)


@dataclass
class ContaminationReport:
    """Per benchmark over every scanned document (flagged ones are kept in docs/, only select drops
    them). tokens_flagged counts the n-gram normalizer's word tokens of the flagged documents."""

    benchmarks: list
    docs_scanned: int = 0
    tally: dict = field(default_factory=lambda: defaultdict(_BenchmarkTally))

    def add_part(self, part: PartOutputs) -> None:
        table = read_parquet(part.decontaminate, columns=["doc_id", "url", "matched_spans", "words"])
        self.docs_scanned += table.num_rows
        flagged = table.filter(pc.greater(pc.list_value_length(table.column("matched_spans")), 0))
        for row in flagged.to_pylist():
            runs: dict[str, list] = defaultdict(list)
            for span in row["matched_spans"]:
                runs[span["benchmark"]].append(span)
            for benchmark, spans in runs.items():
                tally = self.tally[benchmark]
                longest = max(span["run"] for span in spans)
                tally.docs_flagged += 1
                tally.tokens_flagged += row["words"]
                tally.max_run = max(tally.max_run, longest)
                tally.items.update(span["item"] for span in spans)
                tally.offenders.append((-longest, row["doc_id"], {
                    "doc_id": row["doc_id"], "url": row["url"], "source": part.source, "snapshot": part.snapshot,
                    "part": part.part, "longest_run": longest, "items": sorted({s["item"] for s in spans})}))
                tally.offenders = sorted(tally.offenders)[:TOP_OFFENDERS]

    def rows(self) -> list[dict]:
        out = []
        for benchmark in self.benchmarks:
            tally = self.tally.get(benchmark, _BenchmarkTally())
            out.append({"benchmark": benchmark, "docs_scanned": self.docs_scanned, "docs_flagged": tally.docs_flagged,
                        "rate": round(tally.docs_flagged / self.docs_scanned, 6) if self.docs_scanned else 0.0,
                        "tokens_flagged": tally.tokens_flagged, "items_hit": len(tally.items),
                        "max_run": tally.max_run,
                        "top_offenders": [record for _, _, record in tally.offenders]})
        return out


@dataclass
class YieldTable:
    rows: dict = field(default_factory=lambda: defaultdict(_Row))  # (source, snapshot, stage) -> _Row
    # (source, kind, stage) -> _Row over the filter stages: what each kind of document (judge's heuristics
    # profile: web, pdf, math, code) loses where
    kinds: dict = field(default_factory=lambda: defaultdict(_Row))
    # (source, lang, tier, stage) -> _Row over the filter stages: what each language loses where
    languages: dict = field(default_factory=lambda: defaultdict(_Row))
    reasons: Counter = field(default_factory=Counter)  # (source, stage, reason) -> documents
    unclaimed: list = field(default_factory=list)  # documents no language claimed: kept aside, listed

    def add_part(self, part: PartOutputs) -> None:
        stats = read_json(part.extract_stats)
        self.rows[part.source, part.snapshot, "extract"].add(stats["candidates"], stats["docs"],
                                              stats["candidate_bytes"], stats["doc_bytes"])
        for reason, count in stats["quarantined"].items():
            self.reasons[part.source, "extract", f"quarantine:{reason}"] += count
        if stats["no_text"]:
            self.reasons[part.source, "extract", "no_main_text"] += stats["no_text"]
        if stats["read_errors"]:
            self.reasons[part.source, "extract", "read_error"] += len(stats["read_errors"])
        # not exclusions: which engine's text each document has (a two_pass source's second-pass
        # share), and how many documents hold formulas
        for engine, count in stats["engines"].items():
            self.reasons[part.source, "extract", f"text_from:{engine}"] += count
        self.reasons[part.source, "extract", "with_formulas"] += stats["math_docs"]
        # PDF pages: read, routed to OCR (no usable text layer), and given their text by OCR
        for key, reason in (("pdf_pages", "pdf_pages"), ("pages_needing_ocr", "pdf_pages_needing_ocr"),
                            ("ocr_pages", "pdf_pages_from_ocr")):
            if stats[key]:
                self.reasons[part.source, "extract", reason] += stats[key]
        # repositories: their files left out by reason, the files kept by language, the repositories by licence class
        for key, prefix in (("code_rejected", "code_file_rejected"), ("code_languages", "code_files_kept"),
                            ("code_license_classes", "repository_license_class")):
            for name, count in stats.get(key, {}).items():
                self.reasons[part.source, "extract", f"{prefix}:{name}"] += count
        selection = read_parquet(part.select, columns=["row", "doc_id", "reason", "lang", "lang_conf", "lang_tier",
                                                       "raw_bytes", "bytes", "scrub_spans", "quality_mid_kept", "kind"])
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
        _add_stages(self.rows, (part.source, part.snapshot), reached, raw, cleaned)
        kinds = np.asarray(selection.column("kind").to_pylist(), dtype=object)
        for kind in sorted(set(kinds)):
            of_kind = kinds == kind
            _add_stages(self.kinds, (part.source, kind), reached[of_kind], raw[of_kind], cleaned[of_kind])
        languages = list(zip(selection.column("lang").to_pylist(), selection.column("lang_tier").to_pylist()))
        for language in sorted(set(languages), key=str):
            of_language = np.array([pair == language for pair in languages], dtype=bool)
            _add_stages(self.languages, (part.source, *language), reached[of_language], raw[of_language],
                        cleaned[of_language])
        for reason, count in Counter(r for r in reasons if r).items():
            self.reasons[part.source, reason_stage(reason), reason] += count
        selected = reached == len(FILTER_STAGES)
        kept_docs, kept_bytes = int(selected.sum()), int(cleaned[selected].sum())

        tokenized = read_parquet(part.tokenize, columns=["n_tokens"])
        tokens = int(pc.sum(tokenized.column("n_tokens")).as_py() or 0)
        token_bytes = pq.read_schema(part.tokenize).field("tokens").type.value_type.bit_width // 8
        self.rows[part.source, part.snapshot, "tokenize"].add(kept_docs, tokenized.num_rows, kept_bytes,
                                               tokens * token_bytes, tokens)

    def add_representatives(self, summary: dict) -> None:
        """How many exact groups and near-duplicate clusters of a snapshot select kept another
        copy of than minhash_cluster's first (its summary: tokenmill.select.select_snapshot)."""
        for stage, count in _REPRESENTATIVES.items():
            self.rows[summary["source"], summary["snapshot"], stage].representatives_changed += summary[count]

    def add_shards(self, source: str, snapshot: str, shards: list[Path]) -> None:
        """What the snapshot's shards (those the manifest kept, of every shard group; each its path
        without suffix) hold, from their lineage."""
        out = _Row()
        for shard in shards:
            token_bytes = np.dtype(read_json(f"{shard}.meta.json")["dtype"]).itemsize
            docs = read_parquet(f"{shard}.docs.parquet", columns=["n_tokens"])
            tokens = int(pc.sum(docs.column("n_tokens")).as_py() or 0)
            out.add(0, docs.num_rows, 0, tokens * token_bytes, tokens)
        tokenized = self.rows[source, snapshot, "tokenize"]
        self.rows[source, snapshot, "write_shards"].add(tokenized.docs_out, out.docs_out, tokenized.bytes_out,
                                                        out.bytes_out, out.tokens_out)

    def kind_rows(self) -> list[dict]:
        """One row per source, kind and filter stage (then ALL sources per kind), stages in pipeline order."""
        grouped: dict = defaultdict(_Row)
        for (source, kind, stage), row in self.kinds.items():
            for group in (source, ALL_SOURCES):
                grouped[group, kind, stage].add(row.docs_in, row.docs_out, row.bytes_in, row.bytes_out)
        order = sorted(grouped, key=lambda key: (key[0] == ALL_SOURCES, key[:2], FILTER_STAGES.index(key[2])))
        return [{"source": source, "kind": kind, "stage": stage, **grouped[source, kind, stage].counts()}
                for source, kind, stage in order]

    def language_rows(self, table: LanguageTable, max_epochs: dict[str, float]) -> list[dict]:
        """One row per source, language, tier and filter stage (then ALL sources), stages in pipeline
        order: each language's yield, the tier it was judged in and its epoch cap (`max_epochs`:
        report.max_epochs), and where its rules come from."""
        grouped: dict = defaultdict(_Row)
        for (source, lang, tier, stage), row in self.languages.items():
            for group in (source, ALL_SOURCES):
                grouped[group, lang, tier, stage].add(row.docs_in, row.docs_out, row.bytes_in, row.bytes_out)
        order = sorted(grouped, key=lambda key: (key[0] == ALL_SOURCES, key[0], str(key[1]), str(key[2]),
                                                 FILTER_STAGES.index(key[3])))
        return [{"source": source, "lang": lang, "tier": tier, "max_epochs": max_epochs.get(tier, ""),
                 "rules": table.entry(lang).source, "stage": stage,
                 **grouped[source, lang, tier, stage].counts()} for source, lang, tier, stage in order]

    def ordered_rows(self, by_snapshot: bool = False) -> list[dict]:
        """One row per source (then ALL) and stage, or per source, snapshot and stage; stages in
        pipeline order."""
        grouped: dict = defaultdict(_Row)
        for (source, snapshot, stage), row in self.rows.items():
            for group in ([(source, snapshot)] if by_snapshot else [(source, ""), (ALL_SOURCES, "")]):
                grouped[(*group, stage)].add(row.docs_in, row.docs_out, row.bytes_in, row.bytes_out, row.tokens_out,
                                             row.representatives_changed)
        out = []
        for source, snapshot in sorted({key[:2] for key in grouped}, key=lambda g: (g[0] == ALL_SOURCES, g)):
            for stage in STAGES:
                row = grouped.get((source, snapshot, stage))
                if row is None:
                    continue
                out.append({
                    "source": source, **({"snapshot": snapshot} if by_snapshot else {}), "stage": stage,
                    **row.counts(), "tokens_out": row.tokens_out,
                    "representatives_changed": row.representatives_changed if stage in _REPRESENTATIVES else "",
                })
        return out


def _add_stages(rows: dict, key: tuple, reached: np.ndarray, raw: np.ndarray, cleaned: np.ndarray) -> None:
    """Documents and bytes in and out of every filter stage, from the index of the stage that
    excluded each document (`reached`; past the end when selected), added to rows[(*key, stage)]."""
    line_stage = FILTER_STAGES.index("line_dedup")
    for position, stage in enumerate(FILTER_STAGES):
        arriving = reached >= position
        leaving = arriving if stage == "line_dedup" else reached > position
        size_in = raw if position <= line_stage else cleaned
        size_out = raw if position < line_stage else cleaned
        rows[(*key, stage)].add(int(arriving.sum()), int(leaving.sum()), int(size_in[arriving].sum()),
                                int(size_out[leaving].sum()))


def yield_arrow(rows: list[dict]) -> pa.Table:
    """Yield rows as a typed table: retention a float (null where nothing came in), snapshot ""
    on the per-source and ALL rows, representatives_changed null on the stages without a choice."""
    return pa.table({
        "source": [r["source"] for r in rows], "snapshot": [r.get("snapshot", "") for r in rows],
        "stage": [r["stage"] for r in rows],
        **{c: pa.array([int(r[c]) for r in rows], pa.int64()) for c in ("docs_in", "docs_out")},
        "retention": pa.array([float(r["retention"]) if r["retention"] != "" else None for r in rows], pa.float64()),
        **{c: pa.array([int(r[c]) for r in rows], pa.int64()) for c in ("bytes_in", "bytes_out", "tokens_out")},
        "representatives_changed": pa.array([None if r["representatives_changed"] == ""
                                             else int(r["representatives_changed"]) for r in rows], pa.int64()),
    })


def write_report(parts: list[PartOutputs], representatives: list[str], shard_dirs: list[str], benchmarks: list[str],
                 out_dir: str, excluded_shards: set[tuple[str, str]] = frozenset(),
                 language_table: str | None = None, max_epochs: dict[str, float] | None = None) -> YieldTable:
    """yield.tsv (per source), yield_by_snapshot.tsv, yield_by_kind.tsv (per source and kind of document, over
    the filter stages), yield_by_language.tsv (per source, language and tier, over the filter stages, with
    the tier's epoch cap, `max_epochs`, and where its rules come from: `language_table`, None the bundled one), yield.parquet (per source and per
    snapshot), reasons.tsv,
    langid_unclaimed.tsv, contamination.json and .tsv in `out_dir`. `representatives`: select's
    summary of each snapshot. Shards in `excluded_shards` ((source, name) pairs the manifest left
    out) count as lost at write_shards."""
    table = YieldTable()
    contamination = ContaminationReport(benchmarks)
    for part in parts:
        table.add_part(part)
        contamination.add_part(part)
    for summary in representatives:
        table.add_representatives(read_json(summary))
    kept: dict[tuple[str, str], list[Path]] = {}
    for shard_dir, listing in read_listings(shard_dirs):
        source = listing["source"]
        kept.setdefault((source, listing["snapshot"]), []).extend(
            shard_dir / name for name in listing["shards"] if (source, name) not in excluded_shards)
    for (source, snapshot), shards in kept.items():
        table.add_shards(source, snapshot, shards)
    by_source, by_snapshot = table.ordered_rows(), table.ordered_rows(by_snapshot=True)
    write_tsv(f"{out_dir}/yield.tsv", YIELD_COLUMNS, by_source)
    write_tsv(f"{out_dir}/yield_by_snapshot.tsv", SNAPSHOT_YIELD_COLUMNS, by_snapshot)
    write_tsv(f"{out_dir}/yield_by_kind.tsv", KIND_YIELD_COLUMNS, table.kind_rows())
    write_tsv(f"{out_dir}/yield_by_language.tsv", LANGUAGE_YIELD_COLUMNS,
              table.language_rows(load_language_table(language_table), max_epochs or {}))
    write_parquet(f"{out_dir}/yield.parquet", yield_arrow(by_snapshot + by_source))
    reason_rows = [{"source": source, "stage": stage, "reason": reason, "docs": count}
                   for (source, stage, reason), count in sorted(table.reasons.items()) if count]
    write_tsv(f"{out_dir}/reasons.tsv", ["source", "stage", "reason", "docs"], reason_rows)
    write_tsv(f"{out_dir}/langid_unclaimed.tsv", ["source", "snapshot", "part", "row", "doc_id", "lang", "lang_conf"],
               table.unclaimed)
    benchmark_rows = contamination.rows()
    write_json(f"{out_dir}/contamination.json", {"docs_scanned": contamination.docs_scanned,
                                                  "benchmarks": benchmark_rows})
    write_tsv(f"{out_dir}/contamination.tsv", CONTAMINATION_COLUMNS,
               [{k: row[k] for k in CONTAMINATION_COLUMNS} for row in benchmark_rows])
    return table
