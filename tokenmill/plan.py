"""Planning: a snapshot's input files grouped into parts, and the part plan.

A part is a unit of work (about a node-hour), not a file: a snapshot's input files, sorted,
are grouped in order into parts of at most `parts.target_bytes` bytes and `parts.max_files`
files. Each snapshot is globbed once and listed (every file, its size and its part) in
`{plan_dir}/{source}/{snapshot}.inputs.tsv`, which later plannings read instead of globbing
for as long as the snapshot's patterns and the `parts` settings are the ones it records. So
the grouping holds when files arrive: re-listing (on demand, or because the patterns changed)
appends them as new parts, and a part, once listed, keeps its files, so nothing already done
reruns. And the jobs, each of which plans again, scan no input directory.

The plan is one TSV row per part with the paths every stage reads and writes. Aggregating
stages (minhash_cluster, train_tokenizer, write_shards, report) take the plan instead of
thousands of paths on a command line; the workflow fills it from its own path templates, so
there is one definition of where things live. The plan does not depend on the dataset
version: versioned paths keep a literal `{version}` that readers fill in.

The plan also answers what a rule reads besides its own part: the files of a source's earlier
or later snapshots that the cross-snapshot pass reads (tokenmill.extract.settings answers the
settings each extract and OCR job runs with); the rules only pass the config, their wildcards and
path templates.
"""

from __future__ import annotations

import csv
import glob
import io
import json
import os
import re
from dataclasses import dataclass
from itertools import groupby

from tokenmill.config import ConfigError, source_ocr, synthetic_sources
from tokenmill.engine_rules import generation_rule
from tokenmill.hashing import sha256_bytes
from tokenmill.io import atomic_output, canonical_json, input_bytes
from tokenmill.layout import OUTPUTS, PART_OUTPUTS

PLAN_COLUMNS = ["source", "snapshot", "part", "kind", "inputs", *PART_OUTPUTS]
VERSIONED = ("judge", "select", "chain_groups", "tokenize")
LISTING_COLUMNS = ["part", "bytes", "path"]
# The listing's first line: what it was made from, so that a changed config is noticed.
LISTING_MARK = "# tokenmill input listing "
_INPUT_SUFFIXES = (".warc.gz", ".warc", ".arc.gz", ".arc", ".jsonl.gz", ".jsonl.zst", ".jsonl", ".json.gz", ".json", ".pdf")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
Files = list[tuple[str, int]]  # (path, bytes) in listing order
NamedParts = list[tuple[str, Files]]  # (part name, its files) in listing order


@dataclass(frozen=True)
class Part:
    source: str
    snapshot: str
    part: str
    kind: str
    inputs: tuple[str, ...]
    bytes: int

    @property
    def key(self) -> tuple[str, str, str]:
        return self.source, self.snapshot, self.part


@dataclass(frozen=True)
class SnapshotListing:
    """A snapshot's parts; whether this planning globbed its files (else it read the listing),
    and the files and parts that the listing did not hold before (every one when new)."""
    source: str
    snapshot: str
    parts: list[Part]
    globbed: bool
    new_files: int
    new_parts: int


def part_name(path: str) -> str:
    """A part's name: its first input file's name without the input suffix, made safe for paths."""
    name = os.path.basename(path)
    for suffix in _INPUT_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return _UNSAFE.sub("_", name).strip("._") or "part"


def listing_path(plan_dir: str, source: str, snapshot: str) -> str:
    return os.path.join(plan_dir, source, f"{snapshot}.inputs.tsv")


def group_files(files: Files, target_bytes: int, max_files: int) -> list[Files]:
    """(path, bytes) in order, as runs of at most `target_bytes` bytes and `max_files` files;
    a file larger than the target is a run of its own."""
    groups: list[Files] = []
    size = 0
    for path, nbytes in files:
        if groups and len(groups[-1]) < max_files and size + nbytes <= target_bytes:
            groups[-1].append((path, nbytes))
            size += nbytes
        else:
            groups.append([(path, nbytes)])
            size = nbytes
    return groups


class _Snapshot:
    """One snapshot of the config: its patterns, its settings and its listing file."""

    def __init__(self, config: dict, source: str, snapshot: str, plan_dir: str):
        self.source, self.snapshot = source, snapshot
        self.kind = config["sources"][source]["kind"]
        self.key = f"sources.{source}.snapshots.{snapshot}"
        self.recorded = {"patterns": config["sources"][source]["snapshots"][snapshot], **config["parts"]}
        self.listing = listing_path(plan_dir, source, snapshot)

    def glob(self) -> Files:
        """Every file the patterns match, once, sorted, with its size."""
        paths: set[str] = set()
        for pattern in self.recorded["patterns"]:
            matches = glob.glob(pattern)
            if not matches:
                raise ConfigError(f"config key {self.key}: {pattern!r} matches no file "
                                  f"(relative paths are read from {os.getcwd()})")
            paths.update(matches)
        return [(path, input_bytes(path)) for path in sorted(paths)]

    def read_listing(self) -> tuple[dict, NamedParts] | None:
        """What the listing records and its (part, files) in order; None when there is none."""
        if not os.path.exists(self.listing):
            return None
        with open(self.listing, encoding="utf-8", newline="") as handle:
            first = handle.readline()
            if not first.startswith(LISTING_MARK):
                raise ConfigError(f"config key {self.key}: {self.listing} is not a tokenmill input listing; "
                                  "delete it to list the snapshot afresh")
            rows = csv.DictReader(handle, delimiter="\t")
            parts = [(name, [(row["path"], int(row["bytes"])) for row in members])
                     for name, members in groupby(rows, key=lambda row: row["part"])]
        return json.loads(first[len(LISTING_MARK):]), parts

    def write_listing(self, parts: NamedParts) -> None:
        with atomic_output(self.listing) as temp:
            temp.write_text(_listing_text(self.recorded, parts), encoding="utf-8")

    def named(self, groups: list[Files], taken: dict[str, str]) -> NamedParts:
        """Each group with its part name, unique among `taken` (name -> first file) and each other."""
        named = []
        for files in groups:
            name, first = part_name(files[0][0]), files[0][0]
            if name in taken:
                raise ConfigError(f"config key {self.key}: {taken[name]!r} and {first!r} both become part "
                                  f"{name!r}; rename one")
            taken[name] = first
            named.append((name, files))
        return named

    def plan(self, relist: bool, verify: bool) -> SnapshotListing:
        """The snapshot's parts: from its listing while that is current (checking, with `verify`,
        that every listed file still exists), else globbed, new files appended as new parts."""
        recorded, parts = self.read_listing() or (None, [])
        if recorded is not None and _sizes(recorded) != _sizes(self.recorded):
            recorded, parts = None, []  # other part sizes: the snapshot is grouped afresh
        same_patterns = recorded is not None and recorded["patterns"] == self.recorded["patterns"]
        if same_patterns and not relist:
            if verify:
                self.check_listed(parts, os.path.exists)
            return self._listing(parts, globbed=False, new_files=0, new_parts=0)
        found = self.glob()
        matched = {path for path, _ in found}
        if same_patterns:
            self.check_listed(parts, matched.__contains__)
        else:  # files that the changed patterns no longer match leave their parts; an emptied part goes
            parts = [(name, [file for file in files if file[0] in matched]) for name, files in parts]
            parts = [(name, files) for name, files in parts if files]
        listed = {path for _, files in parts for path, _ in files}
        new = [(path, nbytes) for path, nbytes in found if path not in listed]
        taken = {name: files[0][0] for name, files in parts}
        added = self.named(group_files(new, self.recorded["target_bytes"], self.recorded["max_files"]), taken)
        parts = parts + added
        if recorded != self.recorded or new:
            self.write_listing(parts)
        return self._listing(parts, globbed=True, new_files=len(new), new_parts=len(added))

    def check_listed(self, parts: NamedParts, present) -> None:
        """Every listed file is `present`; else an error naming the key and the files that are not."""
        gone = [path for _, files in parts for path, _ in files if not present(path)]
        if gone:
            shown = ", ".join(repr(path) for path in gone[:3]) + (f" and {len(gone) - 3} more" if len(gone) > 3 else "")
            raise ConfigError(f"config key {self.key}: listed input file {shown} no longer exists (listing "
                              f"{self.listing}); restore it, or delete the listing to list the snapshot afresh")

    def _listing(self, parts: NamedParts, globbed: bool, new_files: int, new_parts: int) -> SnapshotListing:
        return SnapshotListing(self.source, self.snapshot, [
            Part(self.source, self.snapshot, name, self.kind, tuple(path for path, _ in files),
                 sum(nbytes for _, nbytes in files)) for name, files in parts], globbed, new_files, new_parts)


def _sizes(recorded: dict) -> dict:
    """The `parts` settings a listing was grouped with (what it records besides the patterns)."""
    return {key: value for key, value in recorded.items() if key != "patterns"}


def list_inputs(config: dict, plan_dir: str, relist: bool = False, verify: bool = True) -> list[SnapshotListing]:
    """Every snapshot of the config, sorted (so that reordering the config changes nothing),
    with its parts in listing order. `relist` globs every snapshot again (new files become new
    parts); `verify` checks that every file of a reused listing still exists. A synthetic
    source's snapshots are those it rewrites, part for part (synthetic_listings)."""
    synthetic = set(synthetic_sources(config))
    listings = [_Snapshot(config, source, snapshot, plan_dir).plan(relist, verify)
                for source in sorted(config["sources"]) if source not in synthetic
                for snapshot in sorted(config["sources"][source]["snapshots"])]
    listings += synthetic_listings(config, plan_dir, listings)
    return sorted(listings, key=lambda listing: (listing.source, listing.snapshot))


def synthetic_listings(config: dict, plan_dir: str, listings: list[SnapshotListing]) -> list[SnapshotListing]:
    """The snapshots of the synthetic sources: one per snapshot of the source each rewrites, with
    one part per part of it, of the same name and input bytes, whose input is that part's
    generation records (rule generate, or generate_vllm for a vllm generator). Their listings are
    written beside the globbed ones (for the cost plan) whenever they change."""
    by_key = {(listing.source, listing.snapshot): listing for listing in listings}
    results = os.path.dirname(os.path.normpath(plan_dir))
    made = []
    for source in synthetic_sources(config):
        settings = config["sources"][source]["synthetic"]
        origin = settings["from"]
        records = os.path.join(results, OUTPUTS[generation_rule(config, settings["generator"], "generate")])
        for snapshot in sorted(settings["snapshots"] or config["sources"][origin]["snapshots"]):
            named = [(part.part, [(records.format(source=source, snapshot=snapshot, part=part.part), part.bytes)])
                     for part in by_key[(origin, snapshot)].parts]
            _write_if_changed(listing_path(plan_dir, source, snapshot), {"rewrites": f"{origin}/{snapshot}"}, named)
            made.append(SnapshotListing(source, snapshot, [
                Part(source, snapshot, name, "synthetic", tuple(path for path, _ in files), sum(b for _, b in files))
                for name, files in named], globbed=False, new_files=0, new_parts=0))
    return made


def _listing_text(recorded: dict, parts: NamedParts) -> str:
    buffer = io.StringIO()
    buffer.write(LISTING_MARK + canonical_json(recorded) + "\n")
    writer = csv.writer(buffer, delimiter="\t", lineterminator="\n")
    writer.writerow(LISTING_COLUMNS)
    writer.writerows((name, nbytes, path) for name, files in parts for path, nbytes in files)
    return buffer.getvalue()


def _write_if_changed(path: str, recorded: dict, parts: NamedParts) -> None:
    text = _listing_text(recorded, parts)
    if os.path.exists(path):
        with open(path, encoding="utf-8", newline="") as handle:
            if handle.read() == text:
                return
    with atomic_output(path) as temp:
        temp.write_text(text, encoding="utf-8")


def shard_groups(parts: int, parts_per_job: int) -> list[str]:
    """The shard groups of a snapshot of `parts` parts, one write_shards job each
    (tokenmill.shards.writer): one per `parts_per_job` parts, so that no job's work grows with
    the snapshot."""
    return [f"{group:04d}" for group in range(max(1, -(-parts // parts_per_job)))]


class Plan:
    """Every part of the config and the lookups the workflow makes, each built once: parts by
    key and by snapshot, the encoder chunks (`parts_per_job` parts of a snapshot) and the plan
    rows, whose paths come from `paths` (kind -> template with {source}, {snapshot}, {part},
    {chunk} and {version})."""

    def __init__(self, listings: list[SnapshotListing], parts_per_job: int, paths: dict[str, str]):
        self.listings = listings
        self.parts = [part for listing in listings for part in listing.parts]
        self.by_key = {part.key: part for part in self.parts}
        self.by_snapshot = {(listing.source, listing.snapshot): listing.parts for listing in listings}
        self.snapshots_of: dict[str, list[str]] = {}
        self.chunk_of: dict[tuple[str, str, str], str] = {}
        self.chunks: dict[tuple[str, str, str], list[Part]] = {}
        for (source, snapshot), parts in self.by_snapshot.items():
            self.snapshots_of.setdefault(source, []).append(snapshot)
            for index, part in enumerate(parts):
                chunk = f"{index // parts_per_job:04d}"
                self.chunk_of[part.key] = chunk
                self.chunks.setdefault((source, snapshot, chunk), []).append(part)
        self.paths = paths
        self._rows: dict[tuple[str, str], list[list[str]]] = {}

    def part(self, source: str, snapshot: str, part: str) -> Part:
        if (source, snapshot, part) not in self.by_key:
            raise ValueError(f"no part {source}/{snapshot}/{part} in the plan of the config's sources")
        return self.by_key[(source, snapshot, part)]

    def path(self, kind: str, part: Part, version: str | None = None) -> str:
        """The `kind` file of a part; versioned paths keep {version} unless it is given."""
        path = self.paths[kind].replace("{source}", part.source).replace("{snapshot}", part.snapshot)
        path = path.replace("{part}", part.part).replace("{chunk}", self.chunk_of[part.key])
        return path.replace("{version}", version) if version else path

    def files(self, kind: str, parts: list[Part], version: str | None = None) -> list[str]:
        """The `kind` file of each part, once each (parts can share one chunk file)."""
        return list(dict.fromkeys(self.path(kind, part, version) for part in parts))

    def parts_of(self, sources: list[str]) -> list[Part]:
        """The parts of `sources`, in plan order."""
        return [part for part in self.parts if part.source in sources]

    def snapshots_before(self, source: str, snapshot: str) -> list[str]:
        """The source's snapshots that came before `snapshot`: snapshot ids sort in time order,
        as CC-MAIN-2024-22 does."""
        return [other for other in self.snapshots_of[source] if other < snapshot]

    def snapshots_after(self, source: str, snapshot: str) -> list[str]:
        """The source's snapshots that came after `snapshot` (ids sort in time order)."""
        return [other for other in self.snapshots_of[source] if other > snapshot]

    def older_generations(self, config: dict, source: str, snapshot: str, template: str) -> list[str]:
        """The cross-snapshot index generations (`template`, with {source} and {snapshot}) that
        the snapshot is probed against: those of the source's earlier snapshots; none when
        minhash.cross_snapshot is off."""
        if not config["minhash"]["cross_snapshot"]["enabled"]:
            return []
        return [template.format(source=source, snapshot=other) for other in self.snapshots_before(source, snapshot)]

    def later_probes(self, config: dict, source: str, snapshot: str) -> list[str]:
        """The cross_snapshot_dedup outputs of every part of the source's later snapshots, which
        select reads only when it drops cross-snapshot duplicates keeping the newer copy (so that
        by default a new snapshot reruns no earlier select)."""
        select = config["select"]
        if not (config["minhash"]["cross_snapshot"]["enabled"] and select["drop_cross_snapshot_duplicates"]
                and select["cross_snapshot_prefer"] == "newer"):
            return []
        return self.files("cross_snapshot_dedup", [part for other in self.snapshots_after(source, snapshot)
                                                   for part in self.by_snapshot[(source, other)]])

    def rows(self, snapshot: tuple[str, str] | None = None) -> list[list[str]]:
        """The plan's rows (PLAN_COLUMNS) of one (source, snapshot), or of every part."""
        if snapshot is None:
            return [row for key in self.by_snapshot for row in self.rows(key)]
        if snapshot not in self._rows:
            self._rows[snapshot] = [self._row(part) for part in self.by_snapshot[snapshot]]
        return self._rows[snapshot]

    def digest(self, snapshot: tuple[str, str] | None = None) -> str:
        return sha256_bytes(json.dumps(self.rows(snapshot)).encode())

    def summary(self) -> str:
        globbed = sum(listing.globbed for listing in self.listings)
        new_files = sum(listing.new_files for listing in self.listings)
        new_parts = sum(listing.new_parts for listing in self.listings)
        derived = [listing for listing in self.listings if listing.parts and listing.parts[0].kind == "synthetic"]
        files = sum(len(part.inputs) for part in self.parts if part.kind != "synthetic")
        parts = len(self.parts) - sum(len(listing.parts) for listing in derived)
        read = len(self.listings) - len(derived) - globbed
        rewritten = (f"; {sum(len(listing.parts) for listing in derived)} synthetic parts of {len(derived)} snapshots "
                     "rewrite them") if derived else ""
        return (f"tokenmill plan: {files} input files in {parts} parts of {len(self.listings) - len(derived)} snapshots"
                f"{rewritten}; listings: {read} read, {globbed} globbed; {new_files} new files in {new_parts} new parts")

    def _row(self, part: Part) -> list[str]:
        row = {"source": part.source, "snapshot": part.snapshot, "part": part.part, "kind": part.kind,
               "inputs": json.dumps(part.inputs)}
        return [row[column] if column in row else self.path(column, part) for column in PLAN_COLUMNS]


def source_engine(config: dict, source: str) -> str:
    """The extraction engine of a source's HTML: its own `engine`, else `extract.engine`."""
    return config["sources"][source].get("engine") or config["extract"]["engine"]


def text_from(config: dict, source: str) -> str:
    """What a source's text comes from, as the dataset card names it."""
    settings = config["sources"][source]
    if settings["kind"] == "synthetic":
        rewrite = settings["synthetic"]
        band = rewrite["quality_band"]
        return (f"rewrites of {rewrite['from']} by generator {rewrite['generator']} under templates "
                f"{', '.join(sorted(rewrite['templates']))} (languages {', '.join(rewrite['languages'] or ['any'])}, "
                f"{band['score']} quality quantiles {band['min']}-{band['max']})")
    if settings["kind"] == "jsonl":
        return f"JSONL field `{settings.get('fields', {}).get('text', 'text')}`"
    if settings["kind"] == "code":
        return ("repositories: README first, then files by path under path headers (vendored, generated, minified, "
                "binary, data and unparseable files left out); licence detected per repository, classes kept: "
                + ", ".join(config["select"]["code"]["license_classes"]))
    ocr = source_ocr(config, source)
    pages = f"pages without one read by {ocr} OCR" if ocr != "none" else "pages without one listed for OCR"
    if settings["kind"] == "pdf":
        return f"PDF text layer (pdfium); {pages}"
    if settings.get("pdf_responses") is False:
        return f"HTML, extract engine {source_engine(config, source)}; PDF responses quarantined (pdf_responses false)"
    return f"HTML, extract engine {source_engine(config, source)}; PDF responses: text layer, {pages}"


def write_plan(rows: list[list[str]], path: str) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter="\t", lineterminator="\n")
    writer.writerow(PLAN_COLUMNS)
    writer.writerows(rows)
    with atomic_output(path) as temp:
        temp.write_text(buffer.getvalue(), encoding="utf-8")


def read_plan(path: str, source: str | None = None, version: str | None = None) -> list[dict]:
    """The plan's rows (of one source, if given), with versioned paths filled in for `version`
    and `inputs` as the list of the part's input files."""
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    if rows and list(rows[0]) != PLAN_COLUMNS:
        raise ValueError(f"{path}: columns {list(rows[0])} are not a tokenmill plan ({PLAN_COLUMNS})")
    rows = [row for row in rows if source is None or row["source"] == source]
    for row in rows:
        row["inputs"] = json.loads(row["inputs"] or "[]")
        for column in VERSIONED:
            if version is not None:
                row[column] = row[column].replace("{version}", version)
            elif "{version}" in row[column]:
                row[column] = None  # a versioned path is only meaningful with a version
    return rows


def snapshot_plan_rows(path: str, column: str, out_dir: str, version: str | None = None) -> list[dict]:
    """The plan's rows for a job that writes the whole snapshot's `column` files into `out_dir`:
    every row's file must lie there."""
    rows = read_plan(path, version=version)
    for row in rows:
        if os.path.dirname(row[column]) != out_dir.rstrip("/"):
            raise ValueError(f"{path}: part {row['part']} belongs in {os.path.dirname(row[column])}, not in {out_dir}")
    return rows
