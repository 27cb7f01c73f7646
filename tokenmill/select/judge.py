"""judge: every rule of the policy but the choice among duplicates, per part (see tokenmill.select.judge)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tokenmill.dedup.cross_snapshot import superseded
from tokenmill.robots import RobotsState
from tokenmill.select.host_stats import crawler_traps, host_of
from tokenmill.io import canonical_json, read_json, read_jsonl_zst, read_parquet, read_part_rows, write_parquet
from tokenmill.languages import LanguageTable, load_language_table
from tokenmill.quality.heuristics import failed_rule
from tokenmill.quality.pii import PII_SPAN_TYPE, PLACEHOLDERS
from tokenmill.select.thresholds import language_entry, language_values
from tokenmill.hashing import keyed_hash64, seed_key

# What `judge` writes per document: the first failing rule other than the duplicate rules, what
# select ranks the members of a group by, and what the final table needs.
JUDGE_SCHEMA = pa.schema([
    ("row", pa.int64()),
    ("doc_id", pa.string()),
    ("reason", pa.string()),  # the first rule failed, leaving out the three duplicate rules; "" when none
    ("cross_snapshot_duplicate", pa.bool_()),  # excluded as a copy of another snapshot's document
    ("exact_group", pa.uint64()),  # the content hash: equal within an exact group
    ("exact_canonical", pa.bool_()),  # minhash_cluster's choice: the first copy by fetch time, url, doc_id
    ("dup_cluster_id", pa.string()),
    ("is_cluster_representative", pa.bool_()),  # minhash_cluster's choice, by the same order
    ("fetch_ts", pa.int64()),  # COPY_ORDER: epoch seconds (missing last), url hash, record id hash
    ("url_key", pa.uint64()),
    ("record_key", pa.uint64()),
    ("lang", pa.string()),
    ("lang_conf", pa.float32()),
    ("lang_tier", pa.string()),  # the language's resource tier in its snapshot: high, medium or low (select.tiers)
    ("quality", pa.float64()),  # the document's value of the score that judges its quality (null for code)
    ("quality_mid_kept", pa.bool_()),  # below the cut and drawn into the mid-quality share
    ("drop_lines", pa.list_(pa.int32())),
    ("scrub_spans", pa.list_(PII_SPAN_TYPE)),
    ("raw_bytes", pa.int64()),
    ("chars", pa.int64()),
    ("bytes", pa.int64()),
    ("math_count", pa.int32()),
    ("kind", pa.string()),  # whose heuristics profile judged it: web, pdf, math or code (Policy.document_kind)
    # what select keeps or drops whole among near-duplicates: a repository (its documents' derived_from);
    # null for any other document, which is its own unit
    ("copy_unit", pa.string()),
])

SCHEMA = pa.schema([
    ("row", pa.int64()),
    ("doc_id", pa.string()),
    ("selected", pa.bool_()),
    ("reason", pa.string()),
    ("lang", pa.string()),
    ("lang_conf", pa.float32()),
    ("lang_tier", pa.string()),  # the language's resource tier in its snapshot (select.tiers)
    ("quality", pa.float64()),  # the document's value of the score that judges its quality (null for code)
    ("quality_mid_kept", pa.bool_()),  # below the cut, kept on purpose (mid-quality share)
    ("drop_lines", pa.list_(pa.int32())),
    ("scrub_spans", pa.list_(PII_SPAN_TYPE)),
    ("raw_bytes", pa.int64()),  # before boilerplate lines are removed
    ("chars", pa.int64()),
    ("bytes", pa.int64()),
    ("math_count", pa.int32()),  # formulas extract wrote as TeX
    ("kind", pa.string()),  # web, pdf, math or code: the heuristics profile it was judged by
])

# "policy" (source removal, opt-outs, licences, knowledge cutoffs) comes first after "damaged": it
# depends on provenance only, never on content, so a document it excludes is counted there and not
# under whichever content filter would have caught it too; a policy change then shows in one row of
# the yield table. "damaged" stays first: a truncated record is a fault of the input, not a policy.
# "robots" (the site's robots.txt state at select.robots.as_of) is provenance too, in a row of its
# own: how much a date's opt-outs take out is what a reader of the yield table asks first.
FILTER_STAGES = ["damaged", "policy", "robots", "langid", "exact_dedup", "near_dedup", "crawler_trap", "line_dedup", "length",
                 "synthetic", "heuristics", "quality", "toxicity", "decontaminate"]
REASON_STAGES = {
    "record_truncated": "damaged",
    "source_removed": "policy",
    "opted_out": "policy",
    "licence_excluded": "policy",
    "licence_expired": "policy",
    "license_class_excluded": "policy",
    "after_cutoff": "policy",
    "cutoff_undated": "policy",
    "robots_disallowed": "robots",
    "lang_not_selected": "langid",
    "langid_unclaimed": "langid",
    "script_mismatch": "langid",
    "exact_duplicate": "exact_dedup",
    "near_duplicate": "near_dedup",
    "cross_snapshot_duplicate": "near_dedup",
    "crawler_trap": "crawler_trap",
    "too_short": "length",
    "generation_failed": "synthetic",
    "low_grounding": "synthetic",
    "copies_source": "synthetic",
    "low_quality": "quality",
    "unnatural": "quality",
    "toxic": "toxicity",
    "toxicity_downweighted": "toxicity",
    "contaminated": "decontaminate",
}
ATTRIBUTES = {  # side-car file -> the columns judge reads from it
    "langid": ["lang", "lang_conf", "script_share"],
    "minhash_cluster": ["content_hash", "exact_canonical", "dup_cluster_id", "is_cluster_representative",
              "line_doc_counts", "scope_clusters"],
    "pii": ["pii_spans"],
    "toxicity": ["toxicity"],
    "quality_fasttext": ["quality_fasttext"],
    "quality_naturalness": ["quality_naturalness"],
    "quality_encoder": ["quality_encoder"],  # a chunk file of several parts
    "decontaminate": ["contaminated_by"],
    "cross_snapshot_dedup": ["xsnap_dup_of"],
}


PROVENANCE = ("source", "tier", "license_id", "fetch_ts")  # document fields the policy reads (with host)
# the signature file's columns that minhash_cluster orders the copies of a group by (with doc_id)
COPY_ORDER = ("fetch_ts", "url_key", "record_key")


# a PDF's content_type, as extract writes it (tokenmill.extract.records.PDF_TYPE; importing extract here would
# double judge's start-up time for one string)
PDF_TYPE = "application/pdf"
SNAPSHOT_FILES = {"quality_encoder"}  # one file per chunk of parts, rows keyed by part
OPTIONAL_ATTRIBUTES = {"cross_snapshot_dedup"}  # no file: no probe was made (cross_snapshot_dedup's rule)


def reason_stage(reason: str) -> str:
    return "heuristics" if reason.startswith("heuristics:") else REASON_STAGES[reason]


_FIRST_DEDUP_STAGE = FILTER_STAGES.index("exact_dedup")


def final_reason(failed_rule: str, exact_duplicate: bool, near_duplicate: bool, cross_snapshot_duplicate: bool) -> str:
    """The first rule in pipeline order that excludes a document, given the first other rule it
    fails (from judge) and the duplicate decisions (from select): a rule of provenance, damage
    or language stays the reason of a copy that was not kept, a later rule yields to the copy."""
    if failed_rule and FILTER_STAGES.index(reason_stage(failed_rule)) < _FIRST_DEDUP_STAGE:
        return failed_rule
    if exact_duplicate:
        return "exact_duplicate"
    if near_duplicate:
        return "near_duplicate"
    if cross_snapshot_duplicate:
        return "cross_snapshot_duplicate"
    return failed_rule


def final_reasons(failed_rules: pa.ChunkedArray, exact_duplicate: np.ndarray, near_duplicate: np.ndarray,
                  cross_snapshot_duplicate: pa.ChunkedArray) -> pa.ChunkedArray:
    """final_reason of a part's documents at once, as a column."""
    early = [rule for rule in pc.unique(failed_rules).to_pylist()
             if rule and FILTER_STAGES.index(reason_stage(rule)) < _FIRST_DEDUP_STAGE]
    copy = pc.if_else(pc.fill_null(cross_snapshot_duplicate, False), "cross_snapshot_duplicate", failed_rules)
    duplicate = pc.if_else(exact_duplicate, "exact_duplicate", pc.if_else(near_duplicate, "near_duplicate", copy))
    return pc.if_else(pc.is_in(failed_rules, value_set=pa.array(early, pa.string())), failed_rules, duplicate)


def _unit_hash(seed: int, doc_id: str, purpose: str) -> float:
    """A deterministic number in [0, 1) per document and purpose (sampling without state)."""
    return keyed_hash64(seed_key(seed), f"{purpose}:{doc_id}") / 2**64


def language_thresholds(thresholds: dict, overrides: dict) -> dict:
    """`thresholds` with a language's `overrides` (family -> metric -> rule) of the rules it has: a
    rule replaced, or left out where the override is None. A rule the set does not have is not
    added: a kind's profile says which rules judge it (the PDF profile has no FineWeb rules)."""
    merged = {family: dict(rules or {}) for family, rules in thresholds.items()}
    for family, rules in overrides.items():
        for metric, rule in (rules or {}).items():
            if metric in merged.get(family, {}):
                if rule is None:
                    del merged[family][metric]
                else:
                    merged[family][metric] = rule
    return merged


@dataclass(frozen=True)
class Policy:
    section: dict
    seed: int
    languages: LanguageTable | None  # the language table: per-language heuristics thresholds (None: the profiles')

    def __post_init__(self):
        object.__setattr__(self, "_thresholds", {})  # heuristic_thresholds' sets, by (source, kind, language)

    def __getitem__(self, key):
        return self.section[key]

    def document_kind(self, code: dict | None, content_type: str, math_count: int, word_count: int) -> str:
        """The kind whose heuristics profile judges a document (select.heuristics): code, pdf, math or web."""
        if code is not None:
            return "code"
        if content_type == PDF_TYPE:
            return "pdf"
        math = self.section["heuristics"]["math"]
        if math_count >= math["min_formulas"] and math_count >= math["min_formula_share"] * word_count:
            return "math"
        return "web"

    def heuristic_thresholds(self, source: str, kind: str, lang: str | None = None) -> dict:
        """The threshold set of a kind of document of a source in a language: the source's own, else
        the kind's profile, with select.heuristics.long_document where the set has no long_document rules of
        its own, with the language's values (the language table's, then select.heuristics.by_language's) for
        the rules the set has (language_thresholds)."""
        key = (source, kind, lang)
        if key not in self._thresholds:
            heuristics = self.section["heuristics"]
            own = heuristics["by_source"].get(source, {}).get(kind)
            merged = own if own is not None else heuristics["profiles"][kind]
            # its rules stay in the set with null bounds (not tested), so that a language can set its own band
            if not merged.get("long_document") and heuristics.get("long_document"):
                merged = {**merged, "long_document": heuristics["long_document"]}
            if lang is not None and self.languages is not None:
                merged = language_thresholds(merged, self.languages.entry(lang).heuristics)
            if lang is not None:
                merged = language_thresholds(merged, heuristics["by_language"].get(lang, {}))
            self._thresholds[key] = merged
        return self._thresholds[key]

    def failed_heuristic(self, values: dict, source: str, kind: str, lang: str) -> str:
        """The first heuristic rule (failed_rule's "<family>.<metric>") that a document of `source`,
        `kind` and `lang` with the heuristics' `values` fails; "" where it passes or
        select.heuristics.languages leaves its language unjudged."""
        heuristics = self.section["heuristics"]
        if heuristics["languages"] is not None and lang not in heuristics["languages"]:
            return ""
        return failed_rule(values, self.heuristic_thresholds(source, kind, lang), heuristics["min_lines"])

    def boilerplate_threshold(self, scope_clusters: int) -> int:
        """A line counted in more clusters than this is boilerplate: it scales with the
        size of the snapshot (rate per cluster) and never falls below min_count."""
        lines = self.section["boilerplate_lines"]
        return max(lines["min_count"], math.ceil(lines["rate"] * scope_clusters))

    def drop_lines(self, line_counts: list[int], scope_clusters: int) -> list[int]:
        limit = self.boilerplate_threshold(scope_clusters)
        return [i for i, count in enumerate(line_counts) if count > limit]

    def crawler_traps(self, host_table: pa.Table) -> set[str]:
        traps = self.section["crawler_traps"]
        if traps["max_unique_share"] is None:
            return set()
        return crawler_traps(host_table, traps["min_urls"], traps["max_unique_share"])

    @cached_property
    def _opt_out_hosts(self) -> frozenset[str]:
        return frozenset(host.lower().rstrip(".") for host in self.section["opt_out_hosts"])

    def opted_out(self, host: str | None) -> bool:
        """A listed host covers itself and its subdomains: example.com covers www.example.com
        and a.b.example.com, not badexample.com."""
        labels = host.lower().rstrip(".").split(".") if host else []
        return any(".".join(labels[i:]) in self._opt_out_hosts for i in range(len(labels)))

    def provenance_reason(self, doc: dict) -> str:
        """The policy on where a document comes from (source, host, licence, fetch time), not on
        what it says: empty string or the reason."""
        s = self.section
        if doc["source"] in s["exclude_sources"]:
            return "source_removed"
        if self.opted_out(doc["host"]):
            return "opted_out"
        licence = s["licences"].get(doc["license_id"]) or {}
        if licence.get("excluded"):
            return "licence_excluded"
        if licence.get("expires"):
            if s["as_of"] is None:  # validate() refuses this config; never guess the date from the clock
                raise ValueError(f"select.licences.{doc['license_id']}.expires needs select.as_of (the policy date)")
            if s["as_of"] >= licence["expires"]:  # ISO dates compare as strings
                return "licence_expired"
        cutoff = s["cutoff"].get(doc["tier"])
        if cutoff is not None:
            if doc["fetch_ts"] is None:  # cannot be shown to be before the cutoff
                return "cutoff_undated"
            if doc["fetch_ts"] > cutoff:  # both normalised to YYYY-MM-DDTHH:MM:SSZ (UTC)
                return "after_cutoff"
        return ""

    def cross_snapshot_duplicate(self, doc: dict) -> bool:
        """A repeat of a document of another snapshot of its source that the policy drops: by
        default the newer copy, with cross_snapshot_prefer "newer" the older one."""
        s = self.section
        return s["drop_cross_snapshot_duplicates"] and bool(doc["superseded"] if s["cross_snapshot_prefer"] == "newer"
                                                            else doc["xsnap_dup_of"])

    def first_failed_rule(self, doc: dict) -> str:
        """Empty string when the document passes; else the first rule it fails, in pipeline
        order, leaving out the duplicate rules: which copy of an exact group or near-duplicate
        cluster is kept depends on its other members (select), and a cross-snapshot copy is
        `cross_snapshot_duplicate`. `doc` holds the stored values (see judge_part)."""
        s = self.section
        if doc["record_truncated"] and not s["keep_truncated_records"]:
            return "record_truncated"
        if provenance := self.provenance_reason(doc):
            return provenance
        if doc["robots_disallowed"]:
            return "robots_disallowed"
        if doc.get("code") is not None:  # a repository's document: its licence class, then what holds for code
            if doc["code"]["license_class"] not in s["code"]["license_classes"]:
                return "license_class_excluded"
            if doc["chars"] < s["min_chars"]:
                return "too_short"
        elif prose := self._prose_rule(doc):
            return prose
        return self._content_rule(doc)

    def lang_conf_threshold(self, lang: str, derived: float | None) -> float:
        """The confidence a document of `lang` needs: select.lang_conf's, else the one its snapshot
        derived for it (select.lang_conf_per_language), else min_lang_conf."""
        s = self.section
        return s["lang_conf"].get(lang, derived if derived is not None else s["min_lang_conf"])

    def _prose_rule(self, doc: dict) -> str:
        """The rules of language, crawl and quality, which hold for prose, not for code."""
        s = self.section
        lang = doc["lang"]
        if doc["lang_conf"] < self.lang_conf_threshold(lang, doc["lang_conf_threshold"]):
            return "langid_unclaimed"
        if s["languages"] is not None and lang not in s["languages"]:
            return "lang_not_selected"
        if (lang in s["script_check"]["languages"] or doc["lang_tier"] in s["tiers"]["script_check"]) and \
                doc["script_share"] < s["script_check"]["min_share"]:
            return "script_mismatch"
        if doc["crawler_trap"]:
            return "crawler_trap"
        if doc["chars"] < s["min_chars"]:
            return "too_short"
        if doc.get("synthetic") is not None and (synthetic := self._synthetic_rule(doc["synthetic"])):
            return synthetic
        if rule := self.failed_heuristic(doc["heuristics"], doc["source"], doc["kind"], lang):
            return f"heuristics:{doc['kind']}:{rule}"
        if doc["quality_naturalness"] < s["min_naturalness"]:
            return "unnatural"
        if doc["quality_below_cut"] and not doc["quality_mid_kept"]:
            return "low_quality"
        return ""

    def _synthetic_rule(self, checks: dict) -> str:
        """The rules of generated text, on the checks extract stored (tokenmill.synth.quality)."""
        s = self.section["synthetic"]
        if checks["failure"] in s["exclude_failures"]:
            return "generation_failed"
        if checks["grounding"] is None or checks["grounding"] < s["min_grounding"]:
            return "low_grounding"
        if checks["source_overlap"] is not None and checks["source_overlap"] > s["max_source_overlap"]:
            return "copies_source"
        return ""

    def _content_rule(self, doc: dict) -> str:
        s = self.section
        toxicity, score = s["toxicity"], doc["toxicity"]  # None: the language has no word list, not judged
        if score is not None:
            if toxicity["max_score"] is not None and score > toxicity["max_score"]:
                return "toxic"
            if (toxicity["downweight_above"] is not None and score > toxicity["downweight_above"]
                    and _unit_hash(self.seed, doc["doc_id"], "toxicity") >= toxicity["downweight_keep"]):
                return "toxicity_downweighted"
        if s["drop_contaminated"] and doc["contaminated_by"]:
            return "contaminated"
        return ""


def emitted_text(text: str, scrub_spans: list[dict], drop_lines: list[int]) -> str:
    """The text that goes into the shards: PII spans replaced by their placeholders, then the
    boilerplate lines select dropped removed. A replaced span keeps its newlines, so line
    numbers stay those of the stored text."""
    if scrub_spans:
        pieces, position = [], 0
        for span in sorted(scrub_spans, key=lambda s: s["start"]):
            pieces.append(text[position:span["start"]])
            pieces.append(PLACEHOLDERS[span["kind"]] + "\n" * text.count("\n", span["start"], span["end"]))
            position = span["end"]
        pieces.append(text[position:])
        text = "".join(pieces)
    if not drop_lines:
        return text
    dropped = set(drop_lines)
    return "\n".join(line for i, line in enumerate(text.split("\n")) if i not in dropped)


def check_aligned(doc_ids: list[str], attrs: pa.Table, stage: str) -> None:
    """Side-car attribute files are row-aligned with their documents; refuse a mismatch."""
    attr_ids = attrs.column("doc_id").to_pylist()
    if attr_ids != doc_ids:
        raise ValueError(f"{stage} attributes are not aligned with the documents "
                         f"({len(attr_ids)} rows vs {len(doc_ids)} documents); rerun {stage}")


def _quality(policy: Policy, thresholds: dict, langs: list[str], scores: dict[str, np.ndarray], tiers: list[str],
             doc_ids: list[str]) -> tuple[list, list[bool], list[bool]]:
    """(value, below the cut, kept as mid-quality) per document. The value is of the score that
    judges the document's quality: select.quality.score's where that score may judge its language
    (thresholds["valid"]: a classifier's labelled languages), naturalness elsewhere. The cut
    (keep_top) applies where its score may judge the language and its tier allows it
    (select.tiers.quality_cut)."""
    values = language_values(thresholds, langs, scores)
    unjudged = np.isnan(values)
    values[unjudged] = np.asarray(scores["naturalness"], dtype=np.float64)[unjudged]
    below, mid = quality_cut(thresholds, values.tolist(), langs, (~unjudged).tolist(), tiers, doc_ids,
                             policy["tiers"]["quality_cut"], policy.seed)
    return values.tolist(), below, mid


def quality_cut(thresholds: dict, values: list, langs: list[str], judged: list[bool], tiers: list[str],
                doc_ids: list[str], cut_tiers: list[str], seed: int) -> tuple[list[bool], list[bool]]:
    """(below the cut, kept as mid-quality) per document, under `thresholds` (a select_thresholds
    file): the cut applies to a document whose score may judge its language (`judged`) and whose
    tier is in `cut_tiers`. The ablation applies a candidate's thresholds with it to the values
    judge wrote."""
    n = len(langs)
    below, mid = [False] * n, [False] * n
    if thresholds["keep_top"] is None:
        return below, mid
    for i, lang in enumerate(langs):
        if not judged[i] or values[i] is None or tiers[i] not in cut_tiers:
            continue
        entry = language_entry(thresholds, lang)
        below[i] = bool(values[i] < entry["cut"])
        mid[i] = below[i] and values[i] >= entry["mid_floor"] and \
            _unit_hash(seed, doc_ids[i], "quality") < thresholds["mid_keep"]
    return below, mid


def judge_part(docs_path: str, part: str, attribute_paths: dict[str, str], thresholds_path: str, out_path: str,
               policy_section: dict, seed: int, language_table: str | None = None) -> pa.Table:
    """Every rule but the choice among duplicates, for every document of a part (JUDGE_SCHEMA).
    `attribute_paths`: the part's side-car files, keyed like ATTRIBUTES (plus "heuristics",
    "signatures", "host_stats", the table of its snapshot, "cross_snapshot_dedup" (None where its snapshot
    has no older one to probe), and "later_cross_snapshot_dedup", the
    probe outputs of the later snapshots of its source when the newer copy is preferred, and
    "robots_state", the host table of robots.txt captures). `language_table`: the per-language
    thresholds of the heuristics (None: the bundled table)."""
    policy = Policy(policy_section, seed, load_language_table(language_table))
    robots = policy_section["robots"]  # its agents resolved (tokenmill.robots.judged_agents)
    robots_state = RobotsState(read_parquet(attribute_paths["robots_state"]), robots["as_of"], robots["agents"]) \
        if robots["as_of"] is not None else None
    traps = policy.crawler_traps(read_parquet(attribute_paths["host_stats"]))
    newer_copies = superseded(attribute_paths.get("later_cross_snapshot_dedup", []))
    docs = list(read_jsonl_zst(docs_path))
    doc_ids = [doc["doc_id"] for doc in docs]
    values: dict[str, list] = {}
    for name, columns in ATTRIBUTES.items():
        path = attribute_paths.get(name)
        if path is None and name in OPTIONAL_ATTRIBUTES:  # a source's first snapshot has no older one to repeat
            values.update({column: [None] * len(doc_ids) for column in columns})
            continue
        table = read_part_rows(path, part, ["doc_id", *columns]) if name in SNAPSHOT_FILES \
            else read_parquet(path, ["doc_id", *columns])
        check_aligned(doc_ids, table, name)
        values.update({column: table.column(column).to_pylist() for column in columns})
    heuristics = read_parquet(attribute_paths["heuristics"])
    check_aligned(doc_ids, heuristics, "heuristics")
    heuristic_rows = heuristics.drop(["doc_id"]).to_pylist()
    copy_order = read_parquet(attribute_paths["signatures"], ["doc_id", *COPY_ORDER])
    check_aligned(doc_ids, copy_order, "signatures")
    thresholds = read_json(thresholds_path)
    languages = thresholds["languages"]
    tiers = [languages.get(lang, {}).get("tier", "low") for lang in values["lang"]]
    quality, below, mid = _quality(policy, thresholds, values["lang"],
                                   {name: np.asarray(values[f"quality_{name}"], dtype=np.float64)
                                    for name in ("fasttext", "encoder", "naturalness")}, tiers, doc_ids)
    columns: dict[str, list] = {name: copy_order.column(name).to_pylist() for name in COPY_ORDER}
    columns.update({name: [] for name in JUDGE_SCHEMA.names if name not in COPY_ORDER})
    for row, doc in enumerate(docs):
        stored = {name: column[row] for name, column in values.items()}
        code = doc["extract_meta"].get("code")
        if code is not None:  # code keeps every line, and no prose quality score ranks it
            quality[row], below[row], mid[row] = None, False, False
        drop = [] if code is not None else policy.drop_lines(stored["line_doc_counts"], stored["scope_clusters"])
        spans = stored["pii_spans"] if policy_section["scrub_pii"] else []
        text = emitted_text(doc["text"], spans, drop)
        kind = policy.document_kind(code, doc.get("content_type"), doc["extract_meta"].get("math_count", 0),
                                    heuristic_rows[row]["word_count"])
        stored.update(doc_id=doc["doc_id"], kind=kind, crawler_trap=host_of(doc.get("url")) in traps,
                      superseded=doc["doc_id"] in newer_copies,
                      record_truncated=bool(doc["extract_meta"].get("record_truncated")),
                      chars=len(text.strip()), heuristics=heuristic_rows[row], quality_below_cut=below[row],
                      lang_tier=tiers[row], lang_conf_threshold=languages.get(stored["lang"], {}).get("lang_conf"),
                      quality_mid_kept=mid[row], host=host_of(doc.get("url")), code=code,
                      synthetic=(doc["extract_meta"].get("synthetic") or {}).get("checks"),
                      robots_disallowed=robots_state is not None and robots_state.disallowed(doc.get("url"),
                                                                                          host_of(doc.get("url"))),
                      **{key: doc.get(key) for key in PROVENANCE})
        for name, value in (("row", row), ("doc_id", doc["doc_id"]), ("reason", policy.first_failed_rule(stored)),
                            ("cross_snapshot_duplicate", policy.cross_snapshot_duplicate(stored)),
                            ("exact_group", stored["content_hash"]), ("exact_canonical", stored["exact_canonical"]),
                            ("dup_cluster_id", stored["dup_cluster_id"]),
                            ("is_cluster_representative", stored["is_cluster_representative"]),
                            ("lang", stored["lang"]), ("lang_conf", stored["lang_conf"]), ("lang_tier", tiers[row]),
                            ("quality", quality[row]),
                            ("quality_mid_kept", mid[row]), ("drop_lines", drop), ("scrub_spans", spans),
                            ("raw_bytes", len(doc["text"].encode("utf-8"))), ("chars", len(text)),
                            ("bytes", len(text.encode("utf-8"))),
                            ("math_count", doc["extract_meta"].get("math_count", 0)), ("kind", kind),
                            ("copy_unit", doc["derived_from"] if code is not None else None)):
            columns[name].append(value)
    table = pa.Table.from_pydict(columns, schema=JUDGE_SCHEMA).replace_schema_metadata(
        {"policy": canonical_json(policy_section), "seed": str(seed)})
    write_parquet(out_path, table)
    return table
