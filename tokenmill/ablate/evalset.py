"""evalset: the fixed text every proxy is measured on, which no candidate trained on.

The holdout carved at ingest is that text: its web records (the perpetual url-hash residue
class) and its time-forward records (fetched after the cutoff) never reach a part's documents,
so no candidate's shards hold them. They are extracted here as their source's extract jobs would
extract them (its engine and settings), and joined by any JSONL files ablate.eval.texts names.
The multiple-choice items are MMLU's, from the holdout's evalsets (carve_evalsets), a fixed
sample of ablate.eval.choice_items questions by keyed hash, the same for every candidate.
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import io
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping

from tokenmill.extract.part import extract_part
from tokenmill.extract.settings import extract_settings
from tokenmill.extract.records import PartInfo, open_lines
from tokenmill.hashing import keyed_hash64, seed_key
from tokenmill.io import read_jsonl_zst, write_json, write_jsonl_zst

CARVED_KINDS = {".warc.gz": "warc", ".jsonl.gz": "jsonl"}  # a carved PDF has no text of its own to score
CARVED_REASONS = ("web", "time_forward")
ANSWER_LETTERS = "ABCD"


def carved_files(holdout_dir: str) -> list[tuple[str, str, str, str]]:
    """(source, snapshot, kind, path) of every carved web and time-forward file, in path order."""
    found = []
    for reason in CARVED_REASONS:
        for path in sorted((Path(holdout_dir) / reason).glob("*/*/*")):
            kind = next((kind for suffix, kind in CARVED_KINDS.items() if path.name.endswith(suffix)), None)
            if kind is not None:
                found.append((path.parent.parent.name, path.parent.name, kind, str(path)))
    return found


def holdout_texts(holdout_dir: str, source_settings: dict[str, dict], sources: dict[str, dict]) -> list[dict]:
    """The carved records' documents ({source, snapshot, doc_id, text}), extracted with their
    source's settings (`source_settings`: source -> extract settings; `sources`: the config's
    sources section), its holdout predicate left out (they are the held-out records). A carved
    file of a source the config no longer names is skipped."""
    documents = []
    with tempfile.TemporaryDirectory(prefix="ablate-evalset-") as work:
        for number, (source, snapshot, kind, path) in enumerate(carved_files(holdout_dir)):
            if source not in source_settings:
                continue
            settings = {key: value for key, value in source_settings[source].items() if key != "holdout"}
            if kind == "jsonl":
                settings = {**settings, "fields": sources[source].get("fields", settings.get("fields"))}
            info = PartInfo(source, snapshot, f"holdout-{number:05d}", sources[source]["tier"],
                            sources[source]["license_id"])
            docs = Path(work) / f"{number:05d}.jsonl.zst"
            extract_part([path], kind, info, settings, str(docs), str(Path(work) / f"{number:05d}.quarantine.jsonl.zst"),
                         str(Path(work) / f"{number:05d}.json"))
            documents += [{"source": source, "snapshot": snapshot, "doc_id": doc["doc_id"], "text": doc["text"]}
                          for doc in read_jsonl_zst(docs) if doc["text"].strip()]
    return documents


def extra_texts(paths: list[str]) -> list[dict]:
    """The documents of JSONL files (plain, .gz or .zst) with a `text` field: ablate.eval.texts."""
    documents = []
    for path in paths:
        with open_lines(path) as handle:
            for number, line in enumerate(handle):
                if line.strip():
                    text = json.loads(line)["text"]
                    documents.append({"source": Path(path).name, "snapshot": "", "doc_id": f"{path}:{number}",
                                      "text": text})
    return documents


@dataclass(frozen=True)
class Choice:
    """A multiple-choice item: `answer` is the index of the correct one of `choices`."""

    question: str
    choices: tuple[str, ...]
    answer: int
    subject: str = ""

    @classmethod
    def of(cls, item: Choice | Mapping) -> Choice:
        """An item as read_mmlu gives it, or as a dict {question, choices, answer, subject}
        (tokenmill.ablate.evalset's JSON)."""
        if isinstance(item, Choice):
            return item
        return cls(item["question"], tuple(item["choices"]), int(item["answer"]), item.get("subject", ""))


def read_mmlu(paths: Iterable[str | os.PathLike]) -> list[Choice]:
    """The items of MMLU CSV files (no header; question, four answers, answer letter), gzipped
    (.gz) or plain, in file and row order; the subject is the file name without `_test.csv`."""
    items = []
    for path in paths:
        path = Path(path)
        raw = path.read_bytes()
        text = (gzip.decompress(raw) if path.name.endswith(".gz") else raw).decode("utf-8")
        subject = path.name.removesuffix(".gz").removesuffix(".csv").removesuffix("_test")
        for number, row in enumerate(csv.reader(io.StringIO(text, newline="")), start=1):
            if len(row) != 6 or row[5].strip() not in tuple(ANSWER_LETTERS):
                raise ValueError(f"{path}: row {number} is not question, A, B, C, D, answer letter: {row!r}")
            question, *choices, letter = row
            items.append(Choice(question, tuple(choices), ANSWER_LETTERS.index(letter.strip()), subject))
    return items


def choice_items(holdout_dir: str, count: int, seed: int) -> list[dict]:
    """`count` MMLU questions of the holdout's evalsets (all of them when fewer), picked by keyed
    hash of their subject and text, in that hash's order: {subject, question, choices, answer}."""
    items = read_mmlu(sorted((Path(holdout_dir) / "evalsets" / "mmlu").glob("*.csv.gz")))
    key = seed_key(seed)
    ranked = sorted(items, key=lambda item: keyed_hash64(key, f"{item.subject}\0{item.question}"))
    return [dataclasses.asdict(item) for item in ranked[:count]]


def build_evalset(holdout_dir: str, source_settings: dict[str, dict], sources: dict[str, dict], extra: list[str],
                  items: int, seed: int, texts_path: str, choices_path: str) -> dict:
    """The evaluation texts (texts_path, JSONL.zst) and multiple-choice items (choices_path, JSON);
    returns their counts."""
    documents = holdout_texts(holdout_dir, source_settings, sources) + extra_texts(extra)
    if not documents:
        raise ValueError(f"{holdout_dir} holds no web or time-forward record with text, and ablate.eval.texts names "
                         "no file: the proxies have nothing to be measured on (widen holdout.web or name "
                         "ablate.eval.texts)")
    write_jsonl_zst(texts_path, documents)
    picked = choice_items(holdout_dir, items, seed)
    write_json(choices_path, picked)
    return {"texts": len(documents), "bytes": sum(len(doc["text"].encode("utf-8")) for doc in documents),
            "choice_items": len(picked)}


def evalset_settings(config: dict) -> dict:
    """What ablate_evalset reads of the config: each WARC and JSONL source's extract settings and
    its tier, licence and fields (what its carved records are extracted with), and the texts and
    items ablate.eval names."""
    sources = {name: source for name, source in sorted(config["sources"].items())
               if source["kind"] in CARVED_KINDS.values()}
    return {"extract": {name: json.loads(extract_settings(config, name)) for name in sources},
            "sources": {name: {key: source.get(key) for key in ("tier", "license_id", "fields")}
                        for name, source in sources.items()}}
