"""annotate: a generator scores sampled documents 0-5 for educational value with an additive
rubric (the FineWeb-Edu recipe: Penedo et al. 2024 annotated 450,000 pages with Llama-3-70B and
trained a classifier on the scores), and the parsed scores become quality labels.

The output of a model is parsed robustly: the last `Educational score: N` line wins, then a last
`score: N`, then a last `N/5`; an output with none, or with a number outside 0-5, is counted
by reason and gives no label. Labels are hq at `hq_min_score` and above (FineWeb-Edu keeps 3 and
up), split train/test by a hash of the doc_id, in the JSONL that the quality trainers read.
"""

from __future__ import annotations

import gzip
import heapq
import json
import re
from collections import Counter

import pyarrow as pa

from tokenmill.hashing import keyed_hash64, seed_key
from tokenmill.io import atomic_output, read_json, read_jsonl_zst, write_json, write_parquet
from tokenmill.synth.generator import Sampling, build_prompt, generate
from tokenmill.synth.rephrase import generator_identity

RUBRIC = """Below is an extract from a web page. Judge its educational value for teaching from primary \
school to grade school with the additive 5-point system below: add the points of every criterion the \
extract meets.
- Add 1 point if it gives some basic information relevant to an educational topic, even among \
advertising or other unrelated material.
- Add a 2nd point if it covers elements that matter to education but does not follow educational \
standards closely: it mixes in other material, stays superficial, or is disorganised.
- Add a 3rd point if it suits educational use and introduces key concepts of school curricula: \
coherent, if incomplete, like the opening of a textbook or a basic tutorial.
- Add a 4th point if it is highly relevant and useful for teaching at grade school level or below: \
clear and consistent, like a textbook chapter or a tutorial with exercises and solutions, with little \
that is off topic.
- Add a 5th point if it is outstanding for teaching at primary or grade school: detailed reasoning, \
easy to follow, real insight into its subject, and nothing off topic or too advanced.

The extract:
{text}

After examining the extract, justify the total in at most 100 words, then end with the line \
"Educational score: <total points>".
"""
STATUSES = ("parsed", "empty", "no_score", "out_of_range")
_PATTERNS = [re.compile(pattern, re.IGNORECASE) for pattern in (
    r"educational\s+score\s*[:=\-]?\s*[*_`]*\s*(-?\d+(?:\.\d+)?)",
    r"\bscore\s*[:=]\s*[*_`]*\s*(-?\d+(?:\.\d+)?)",
    r"(-?\d+(?:\.\d+)?)\s*/\s*5\b")]
SCHEMA = pa.schema([("doc_id", pa.string()), ("source", pa.string()), ("snapshot", pa.string()),
                    ("part", pa.string()), ("row", pa.int64()), ("status", pa.string()), ("score", pa.int8()),
                    ("new_tokens", pa.int32()), ("output", pa.string())])


def parse_score(output: str) -> tuple[int | None, str]:
    """(score, status): the score an output gives, or None with why (STATUSES)."""
    if not output.strip():
        return None, "empty"
    for pattern in _PATTERNS:
        found = pattern.findall(output)
        if found:
            value = float(found[-1])
            if value.is_integer() and 0 <= value <= 5:
                return int(value), "parsed"
            return None, "out_of_range"
    return None, "no_score"


def sample_documents(parts: list[dict], max_docs: int, max_chars: int, seed: int) -> list[dict]:
    """The `max_docs` documents of lowest keyed hash of doc_id over `parts` (plan rows: source,
    snapshot, part, docs), each with where it is and its first `max_chars` characters; one per
    doc_id (exact copies are one document)."""
    key, heap, seen = seed_key(seed), [], set()
    for part in parts:
        for row, doc in enumerate(read_jsonl_zst(part["docs"])):
            if doc["doc_id"] in seen:
                continue
            seen.add(doc["doc_id"])
            entry = (-keyed_hash64(key, f"annotate:{doc['doc_id']}"), doc["doc_id"],
                     {"doc_id": doc["doc_id"], "source": part["source"], "snapshot": part["snapshot"],
                      "part": part["part"], "row": row, "text": doc["text"][:max_chars]})
            if len(heap) < max_docs:
                heapq.heappush(heap, entry)
            else:
                heapq.heappushpop(heap, entry)
    return [entry[2] for entry in sorted(heap, key=lambda entry: (-entry[0], entry[1]))]


def annotate(generator, documents: list[dict], *, template: str | None, sampling: Sampling, generator_settings: dict,
             hq_min_score: int, test_share: float, seed: int, labels_path: str, table_path: str, summary_path: str,
             cache_dir: str, measured_path: str) -> dict:
    """Score `documents` (sample_documents) with the rubric, write the labels (parsed scores
    only), every annotation (table) and the counts (summary), and what the job did and how fast
    (no output, as generate's); return the summary."""
    rubric = template or RUBRIC
    keys = [doc["doc_id"] for doc in documents]
    generation, measured = {}, {}
    outputs = generate(generator, keys, lambda index: build_prompt(generator, rubric, documents[index]["text"],
                                                                   sampling.max_new_tokens).text,
                       sampling, generator_settings["batch_size"], cache_dir, generation, measured)
    statuses, scores, labels, rows = Counter(), Counter(), [], []
    key = seed_key(seed)
    for doc, output in zip(documents, outputs):
        score, status = parse_score(output["text"])
        statuses[status] += 1
        rows.append({**{name: doc[name] for name in ("doc_id", "source", "snapshot", "part", "row")},
                     "status": status, "score": score, "new_tokens": output["new_tokens"], "output": output["text"]})
        if score is not None:
            scores[score] += 1
            split = "test" if keyed_hash64(key, f"split:{doc['doc_id']}") / 2**64 < test_share else "train"
            labels.append({"label": "hq" if score >= hq_min_score else "lq", "split": split, "score": score,
                           "doc_id": doc["doc_id"], "source": doc["source"], "text": doc["text"]})
    with atomic_output(labels_path) as temp:  # gzip.compress: no file name in the header (the temporary one)
        temp.write_bytes(gzip.compress("".join(json.dumps(label, ensure_ascii=False) + "\n"
                                               for label in labels).encode("utf-8"), mtime=0))
    write_parquet(table_path, pa.Table.from_pylist(rows, schema=SCHEMA))
    model_id, _ = generator_identity(generator_settings, generator.path)
    summary = {"documents": len(documents), "statuses": {status: statuses[status] for status in STATUSES},
               "scores": {str(score): scores[score] for score in range(6)},
               "labels": {label: sum(entry["label"] == label for entry in labels) for label in ("hq", "lq")},
               "hq_min_score": hq_min_score, "generator_model_id": model_id, "generator_sha256": generator.sha256,
               "engine": generator.engine, **generation}
    write_json(summary_path, summary)
    write_json(measured_path, {"part": "annotate", **measured})
    return summary


def main(engine: str, description: str, argv=None) -> None:
    """The command line of rules annotate and annotate_vllm (scripts/annotate*.py)."""
    import argparse

    from tokenmill.plan import read_plan
    from tokenmill.synth.engines import load_engine

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--plan", required=True)
    parser.add_argument("--sources", required=True, nargs="+", help="the sources sampled")
    parser.add_argument("--model", required=True, help="the generator's model directory")
    parser.add_argument("--settings", required=True,
                        help='as JSON: {"annotate": the synthetic.annotate section, "generator": its synthetic.generators '
                             'entry, "key": that entry\'s config key}')
    parser.add_argument("--seed", type=int, required=True)
    for name in ("labels", "table", "summary", "cache", "measured"):
        parser.add_argument(f"--{name}", required=True)
    args = parser.parse_args(argv)
    settings = json.loads(args.settings)
    section = settings["annotate"]
    parts = [row for row in read_plan(args.plan) if row["source"] in args.sources]
    documents = sample_documents(parts, section["max_docs"], section["max_chars"], args.seed)
    generator = load_engine(engine, args.model, settings["generator"], settings["key"], args.seed)
    summary = annotate(generator, documents, template=section["template"], sampling=Sampling(**section["sampling"]),
                       generator_settings=settings["generator"], hq_min_score=section["hq_min_score"],
                       test_share=section["test_share"], seed=args.seed, labels_path=args.labels,
                       table_path=args.table, summary_path=args.summary, cache_dir=args.cache,
                       measured_path=args.measured)
    print(json.dumps({key: summary[key] for key in ("documents", "statuses", "scores", "labels")}))
    print(json.dumps(read_json(args.measured)))
