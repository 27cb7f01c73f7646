"""Chains of related documents (tokenmill.chains, issue 64): the partitioned builder against the same
walk over one bucket (no partitioning) and against chains of random documents, on real text.

Input (real, from /work/shared/data, see its SOURCES.md): every MMLU test question with its four
choices (14,079, 57 subjects), every GSM8K test problem with its answer (1,319), the 1,200 HPLT v2
excerpts (Russian, Persian, Asturian, English) and the 181 article bodies of the scrapinghub
benchmark: 16,779 documents, in a seeded order, cut into `--parts` parts. Each part is written as
extract writes documents, with the langid side-car (the source's own language labels) and the
MinHash signatures as score writes them (tokenmill.dedup.minhash.signature_rows, the schema's
settings); none of that is timed. Measured at two sizes (the first half of the documents and all of
them), one core, each step in a process of its own (CPU seconds, peak memory):

  fit     the model from a sample (the first --sample documents of each part): IDF and centroids
  part    per part: read documents, signatures and langid, topic vector and routing key
  bucket  per key range (--buckets jobs): leaves, exact neighbour graph, greedy walk

Quality, on the larger size, for partitioned chains, one bucket, and random chains of the same lengths:
similarity of adjacent documents in chains against random pairs of the same source (TF-IDF cosine
over the exact words, not the hashed vector the builder uses; the ratio's target is >= 3), of the
last document of a chain against the first of the next chain in output order (target: within 1.2x
random), the largest adjacent estimated Jaccard (MinHash, all permutations; target <= 0.85), and
for MMLU the share of adjacent questions of the same subject. Five near-copies of real documents
(a word changed) are planted so that the near-duplicate rule has something to refuse.

usage: python bench/bench_chains.py [WORKDIR] [--parts 8] [--buckets 4] [--budget 2048] [--tiny]
(--tiny: 400 documents of the repository's own sample, the AEB articles and lingua sentence runs, which
any copy of the repository has; 2 parts, 2 buckets)
"""

from __future__ import annotations

import csv
import dataclasses
import glob
import json
import math
import os
import pickle
import platform
import random
import resource
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from common import (MEASURED_RUN, REPO, add_at_scale_option, memory_mb, pin_to_one_cpu,  # also puts the
                    record_at_scale, run_in_workdir, run_measured)  # repository on the import path
from tokenmill import chains
from tokenmill.config import schema_settings
from tokenmill.dedup.minhash import MinHashParams, Shingler, permutation_coefficients, signature_rows
from tokenmill.hashing import doc_id_for
from tokenmill.io import write_jsonl_zst, write_parquet
from tokenmill.words import words

DATA = Path(os.environ.get("TOKENMILL_SHARED_DATA", "/work/shared/data"))
LABELLED = ("mmlu", "lingua")  # sources whose documents have a label (MMLU's subject, lingua's language)
SCALE_CENTROIDS = 8192
WEB_KB = 3.0  # mean extracted web page (FineWeb: ~680 tokens a document)
HPLT_LANGS = {"rus_Cyrl": "ru", "pes_Arab": "fa", "ast_Latn": "ast", "eng_Latn": "en"}


def real_documents() -> list[dict]:
    """The real texts named in the docstring: dicts with text, lang, source, label (MMLU subject)."""
    docs = []
    for path in sorted(glob.glob(str(DATA / "eval-mmlu/test/*_test.csv"))):
        subject = Path(path).name.removesuffix("_test.csv")
        with open(path, newline="", encoding="utf-8") as handle:
            for row in csv.reader(handle):
                text = row[0] + "\n" + "\n".join(f"{letter}. {choice}" for letter, choice in zip("ABCD", row[1:5]))
                docs.append({"text": text, "lang": "en", "source": "mmlu", "label": subject})
    with open(DATA / "eval-gsm8k/test.jsonl", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            docs.append({"text": row["question"] + "\n" + row["answer"], "lang": "en", "source": "gsm8k", "label": ""})
    with open(DATA / "quality-hplt-dev/labelled.jsonl", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            docs.append({"text": row["text"], "lang": HPLT_LANGS[row["lang"]], "source": "hplt", "label": row["lang"]})
    articles = json.loads((DATA / "html-scrapinghub-aeb/ground-truth.json").read_text(encoding="utf-8"))
    for key in sorted(articles):
        docs.append({"text": articles[key]["articleBody"], "lang": None, "source": "aeb", "label": ""})
    return _unique(docs)


def bundled_documents() -> list[dict]:
    """--tiny: the repository's own sample (so that it runs in any copy of it): the 181 article
    bodies and the lingua sentence runs of sixteen languages."""
    from tests.sample_data import gold_articles, lingua_records

    docs = [{"text": record["articleBody"], "lang": None, "source": "aeb", "label": ""}
            for _, record in sorted(gold_articles().items())]
    for lang in ("ar", "de", "en", "es", "fr", "hi", "it", "ja", "nl", "pl", "pt", "ru", "sw", "tr", "yo", "zh"):
        docs += [{"text": record["text"], "lang": lang, "source": "lingua", "label": lang}
                 for record in lingua_records(lang)]
    return _unique(docs)


def _unique(docs: list[dict]) -> list[dict]:
    seen, unique = set(), []
    for doc in docs:
        doc["doc_id"] = doc_id_for(doc["text"])
        if doc["text"].strip() and doc["doc_id"] not in seen:
            seen.add(doc["doc_id"])
            unique.append(doc)
    return unique


def plant_near_copies(docs: list[dict], count: int, rng: random.Random) -> list[dict]:
    """`count` copies of long real documents with one word changed (estimated Jaccard well above 0.85)."""
    long_docs = [doc for doc in docs if len(doc["text"]) > 2000]
    copies = []
    for doc in rng.sample(long_docs, min(count, len(long_docs))):
        text = doc["text"].replace(" ", " also ", 1)
        copies.append({**doc, "text": text, "doc_id": doc_id_for(text)})
    return copies


def write_parts(docs: list[dict], folder: Path, parts: int, minhash: MinHashParams) -> list[dict]:
    """Each part's docs, langid and signatures files, as extract and score write them."""
    shingler, coefficients = Shingler(minhash.ngram), permutation_coefficients(minhash)
    written = []
    for number in range(parts):
        share = docs[number::parts]
        paths = {name: str(folder / name / f"part-{number:03d}.{ext}")
                 for name, ext in (("docs", "jsonl.zst"), ("langid", "parquet"), ("signatures", "parquet"))}
        write_jsonl_zst(paths["docs"], ({"doc_id": d["doc_id"], "text": d["text"]} for d in share))
        write_parquet(paths["langid"], pa.table({"doc_id": [d["doc_id"] for d in share],
                                                 "lang": [d["lang"] for d in share]}))
        table = signature_rows([{"doc_id": d["doc_id"], "text": d["text"]} for d in share], minhash, 0, shingler,
                               coefficients, langs=[d["lang"] for d in share])
        write_parquet(paths["signatures"], table)
        written.append(paths)
    return written


def in_child(function):
    """function() in a forked process: (its result, CPU seconds, wall seconds, peak RSS MiB)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        started, cpu = time.perf_counter(), time.process_time()
        result = function()
        payload = pickle.dumps((result, time.process_time() - cpu, time.perf_counter() - started,
                                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
        with os.fdopen(write, "wb") as handle:
            handle.write(payload)
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as handle:
        payload = handle.read()
    os.waitpid(pid, 0)
    return pickle.loads(payload)


def run_size(folder: Path, parts: list[dict], params: chains.ChainParams, buckets: int, sample: int) -> dict:
    model_path = str(folder / "model.parquet")
    _, fit_cpu, _, fit_rss = in_child(lambda: chains.fit_files([p["docs"] for p in parts], [p["langid"] for p in parts],
                                                               model_path, params, sample) and None)
    model = chains.read_model(model_path)
    part_paths, part_cpu, part_rss, documents = [], 0.0, 0.0, 0
    for number, paths in enumerate(parts):
        out = str(folder / "chain_part" / f"part-{number:03d}.parquet")
        rows, cpu, _, rss = in_child(lambda: chains.part_file(paths["docs"], paths["signatures"], out, model, params,
                                                              paths["langid"]))
        part_paths.append(out)
        part_cpu, part_rss, documents = part_cpu + cpu, max(part_rss, rss), documents + rows
    bucket_cpu, bucket_rss, bucket_max_cpu, sizes = 0.0, 0.0, 0.0, []
    for bucket in range(buckets):
        out = str(folder / "chain_bucket" / f"bucket-{bucket:03d}.parquet")
        _, cpu, _, rss = in_child(lambda: chains.bucket_file(part_paths, bucket, buckets, out, params))
        bucket_cpu, bucket_rss, bucket_max_cpu = bucket_cpu + cpu, max(bucket_rss, rss), max(bucket_max_cpu, cpu)
        sizes.append(chains.read_bucket(part_paths, bucket, buckets, params.centroids).num_rows)
    # leaf-bound: every document under one key, so that the bucket step splits it by k-means into
    # leaves of at most leaf_size, as a bucket of a snapshot does (its centroids hold ~10^5 documents)
    leaf_out = str(folder / "one_cluster.parquet")

    def one_cluster():
        table = pa.concat_tables([pq.read_table(path).replace_schema_metadata(None) for path in part_paths])
        table = table.set_column(0, "key", pa.array(np.zeros(table.num_rows, np.uint32)))
        write_parquet(leaf_out, chains.build_chains(table, params))

    _, leaf_cpu, _, leaf_rss = in_child(one_cluster)
    return {"documents": documents, "fit_cpu": fit_cpu, "leaf_cpu": leaf_cpu, "leaf_rss": leaf_rss,
            "leaf_path": leaf_out, "fit_rss": fit_rss, "sample": min(sample * len(parts), documents),
            "part_cpu": part_cpu, "part_rss": part_rss, "bucket_cpu": bucket_cpu, "bucket_rss": bucket_rss,
            "bucket_max_cpu": bucket_max_cpu, "bucket_sizes": sizes, "part_paths": part_paths,
            "chain_paths": sorted(glob.glob(str(folder / "chain_bucket" / "*.parquet")))}


class Measure:
    """TF-IDF cosine over each document's exact words (its language's segmenter), IDF of the corpus."""

    def __init__(self, docs: list[dict]):
        self.bags = {}
        df = Counter()
        for doc in docs:
            counts = Counter(word.casefold() for word in words(doc["text"][:20_000], doc["lang"])
                             if any(char.isalnum() for char in word))
            self.bags[doc["doc_id"]] = counts
            df.update(counts.keys())
        total = len(docs)
        self.vectors = {}
        for doc_id, counts in self.bags.items():
            vector = {w: (1 + math.log(c)) * math.log((total + 1) / (df[w] + 1)) for w, c in counts.items()}
            norm = math.sqrt(sum(v * v for v in vector.values())) or 1.0
            self.vectors[doc_id] = {w: v / norm for w, v in vector.items()}

    def cosine(self, a: str, b: str) -> float:
        va, vb = self.vectors[a], self.vectors[b]
        if len(va) > len(vb):
            va, vb = vb, va
        return sum(v * vb.get(w, 0.0) for w, v in va.items())


def sequences(chain_paths: list[str]) -> list[list[str]]:
    """The chains of all buckets in output order (by group_id, as a reader of the joined files sees them)."""
    table = pa.concat_tables([pq.read_table(path) for path in chain_paths]).sort_by([("group_id", "ascending"),
                                                                                     ("group_pos", "ascending")])
    found, last = [], None
    for doc_id, group in zip(table["doc_id"].to_pylist(), table["group_id"].to_pylist()):
        if group != last:
            found.append([])
            last = group
        found[-1].append(doc_id)
    return found


def quality(chain_list: list[list[str]], docs_by_id: dict, measure: Measure, signature_of: dict,
            rng: random.Random) -> dict:
    adjacent = [(a, b) for chain in chain_list for a, b in zip(chain, chain[1:])]
    boundary = [(left[-1], right[0]) for left, right in zip(chain_list, chain_list[1:])]
    by_source: dict[str, list[str]] = {}
    for doc_id, doc in docs_by_id.items():
        by_source.setdefault(doc["source"], []).append(doc_id)
    # random pairs of the same source, as many of each source as the adjacent pairs have
    random_pairs = []
    for a, _ in adjacent:
        pool = by_source[docs_by_id[a]["source"]]
        pool = pool if len(pool) > 1 else sorted(docs_by_id)
        random_pairs.append(tuple(rng.sample(pool, 2)))
    mean = lambda pairs: float(np.mean([measure.cosine(a, b) for a, b in pairs])) if pairs else float("nan")
    jaccard = [float(np.mean(signature_of[a] == signature_of[b])) for a, b in adjacent]
    mmlu = [(a, b) for a, b in adjacent if docs_by_id[a]["source"] in LABELLED and docs_by_id[b]["source"] in LABELLED]
    mmlu_random = [(a, b) for a, b in random_pairs if docs_by_id[a]["source"] in LABELLED]
    same = lambda pairs: (float(np.mean([docs_by_id[a]["label"] == docs_by_id[b]["label"] for a, b in pairs]))
                          if pairs else float("nan"))
    chained = sum(len(chain) for chain in chain_list)
    return {"chains": len(chain_list), "chained": chained, "mean_length": chained / max(len(chain_list), 1),
            "adjacent": mean(adjacent), "random": mean(random_pairs), "boundary": mean(boundary),
            "max_jaccard": max(jaccard, default=0.0), "subject_same": same(mmlu), "subject_random": same(mmlu_random)}


def random_chains(chain_list: list[list[str]], doc_ids: list[str], rng: random.Random) -> list[list[str]]:
    """Chains of the same lengths, of documents drawn at random."""
    pool = rng.sample(doc_ids, sum(len(chain) for chain in chain_list))
    out, at = [], 0
    for chain in chain_list:
        out.append(pool[at:at + len(chain)])
        at += len(chain)
    return out


def main(workdir: Path, tiny: bool, parts: int, buckets: int, budget: int, sample: int,
         write_at_scale: str | None = None) -> None:
    pin_to_one_cpu()
    rng = random.Random(7)
    docs = bundled_documents() if tiny else real_documents()
    rng.shuffle(docs)
    if tiny:
        docs, parts, buckets = docs[:400], 2, 2
    docs += plant_near_copies(docs, 5, rng)
    rng.shuffle(docs)
    minhash = schema_settings(MinHashParams, "minhash")
    params = dataclasses.replace(schema_settings(chains.ChainParams, "chains"), token_budget=budget)
    sizes = [len(docs) // 2, len(docs)]
    results = {}
    for size in sizes:
        folder = workdir / f"n{size}"
        written = write_parts(docs[:size], folder / "in", parts, minhash)
        results[size] = run_size(folder, written, params, buckets, sample)
    one_bucket = workdir / f"n{sizes[-1]}" / "one_bucket.parquet"
    _, one_cpu, _, one_rss = in_child(lambda: chains.bucket_file(results[sizes[-1]]["part_paths"], 0, 1,
                                                                 str(one_bucket), params))
    # determinism: the larger size's bucket outputs again, byte for byte
    again = workdir / "again.parquet"
    chains.bucket_file(results[sizes[-1]]["part_paths"], 0, buckets, str(again), params)
    deterministic = again.read_bytes() == Path(results[sizes[-1]]["chain_paths"][0]).read_bytes()

    docs_by_id = {doc["doc_id"]: doc for doc in docs[:sizes[-1]]}
    measure = Measure(list(docs_by_id.values()))
    signature_of = {}
    for path in glob.glob(str(workdir / f"n{sizes[-1]}" / "in" / "signatures" / "*.parquet")):
        table = pq.read_table(path, columns=["doc_id", "signature"])
        values = chains._fixed_rows(table["signature"], np.uint64)
        signature_of.update(zip(table["doc_id"].to_pylist(), values))
    partitioned = sequences(results[sizes[-1]]["chain_paths"])
    rows = {f"tokenmill, {buckets} buckets": quality(partitioned, docs_by_id, measure, signature_of, random.Random(1)),
            "one bucket (no partitioning)": quality(sequences([str(one_bucket)]), docs_by_id, measure, signature_of,
                                                    random.Random(1)),
            "one cluster, k-means leaves": quality(sequences([results[sizes[-1]]["leaf_path"]]), docs_by_id, measure,
                                                   signature_of, random.Random(1)),
            "random chains, same lengths": quality(random_chains(partitioned, sorted(docs_by_id), random.Random(2)),
                                                   docs_by_id, measure, signature_of, random.Random(1))}

    corpus = "the bundled AEB articles and lingua sentence runs" if tiny else "MMLU, GSM8K, HPLT, AEB articles"
    print(f"machine: {platform.processor() or platform.machine()}, one core; {sizes[-1]:,} real documents "
          f"({corpus}; 5 planted near-copies) in {parts} parts; budget {budget} tokens, "
          f"{params.centroids} centroids, leaf {params.leaf_size}, k {params.neighbours}")
    print(f"{'chains (TF-IDF cosine of exact words)':38}{'chains':>8}{'docs':>7}{'len':>6}{'adjacent':>10}"
          f"{'random':>8}{'ratio':>7}{'boundary':>10}{'b/rand':>8}{'max J':>7}{'label':>7}")
    for name, q in rows.items():
        print(f"{name:38}{q['chains']:>8,}{q['chained']:>7,}{q['mean_length']:>6.1f}{q['adjacent']:>10.3f}"
              f"{q['random']:>8.3f}{q['adjacent'] / q['random']:>7.2f}{q['boundary']:>10.3f}"
              f"{q['boundary'] / q['random']:>8.2f}{q['max_jaccard']:>7.2f}{q['subject_same']:>7.2f}")
    mine = rows[f"tokenmill, {buckets} buckets"]
    label = "lingua runs of the same language" if tiny else "MMLU questions of the same subject"
    print(f"adjacent {label}: {mine['subject_same']:.2f} in chains, {mine['subject_random']:.2f} for random pairs")
    print(f"{'CPU per document (one core)':30}{'documents':>10}{'fit ms*':>9}{'part ms':>9}{'bucket ms':>10}"
          f"{'leaf-bound ms':>14}{'part MiB':>10}{'bucket MiB':>11}{'leaf-bound MiB':>16}  bucket docs")
    for size, r in results.items():
        print(f"{'':30}{r['documents']:>10,}{1000 * r['fit_cpu'] / r['sample']:>9.3f}"
              f"{1000 * r['part_cpu'] / r['documents']:>9.3f}{1000 * r['bucket_cpu'] / r['documents']:>10.3f}"
              f"{1000 * r['leaf_cpu'] / r['documents']:>14.3f}{r['part_rss']:>10.0f}{r['bucket_rss']:>11.0f}"
              f"{r['leaf_rss']:>16.0f}  {'/'.join(map(str, r['bucket_sizes']))}")
    print(f"* fit: per sampled document ({results[sizes[-1]]['sample']:,} sampled of the larger size); "
          f"peak memory of fit {results[sizes[-1]]['fit_rss']:.0f} MiB")
    print(f"one bucket over all {sizes[-1]:,} documents: {1000 * one_cpu / sizes[-1]:.3f} ms per document, "
          f"{one_rss:.0f} MiB")
    big = results[sizes[-1]]
    # the part step on long documents only (HPLT excerpts and articles), whose rate scales to web pages
    long_docs = [doc for doc in docs[:sizes[-1]] if doc["source"] in ("hplt", "aeb", "lingua")]
    long_parts = write_parts(long_docs, workdir / "long" / "in", 1, minhash)
    model = chains.read_model(str(workdir / f"n{sizes[-1]}" / "model.parquet"))
    _, long_cpu, _, _ = in_child(lambda: chains.part_file(long_parts[0]["docs"], long_parts[0]["signatures"],
                                                          str(workdir / "long" / "part.parquet"), model, params,
                                                          long_parts[0]["langid"]))
    long_kb = sum(min(len(d["text"]), params.max_chars) for d in long_docs) / len(long_docs) / 1000
    # routing among the centroids a snapshot needs (one per ~4e5 documents: 8,192 for 3e9), with
    # the vectors of the larger size as centroids
    vectors = np.concatenate([chains._fixed_rows(pq.read_table(path, columns=["vector"])["vector"], np.int8)
                              for path in big["part_paths"]])
    centroids = np.resize(vectors, (SCALE_CENTROIDS, params.dims))
    route_cpu = time.process_time()
    chains.nearest(vectors, centroids)
    route_ms = 1000 * (time.process_time() - route_cpu) / len(vectors)
    part_ms = 1000 * long_cpu / len(long_docs) * WEB_KB / long_kb + route_ms
    leaf_ms = 1000 * big["leaf_cpu"] / big["documents"]
    rate_ms = part_ms + leaf_ms
    core_hours = 3e9 * rate_ms / 1000 / 3600
    print(f"part step on {len(long_docs):,} long documents (mean {long_kb:.1f} KB read): "
          f"{1000 * long_cpu / len(long_docs):.3f} ms per document; routing among {SCALE_CENTROIDS:,} centroids: "
          f"{route_ms:.3f} ms per document")
    print(f"at scale: part {part_ms:.3f} ms per document (a {WEB_KB:.0f} KB web page, {SCALE_CENTROIDS:,} centroids) + "
          f"bucket {leaf_ms:.3f} (leaf-bound) = {rate_ms:.3f} ms -> 3 billion documents = {core_hours:,.0f} core-hours "
          f"= {core_hours / 6400:.2f} h wall on 6,400 cores (+ fit: k-means of a sample)")
    rates_at_scale(workdir, written, big["part_paths"], docs[:sizes[-1]], params, long_parts[0],
                   None if tiny else write_at_scale)
    print(f"deterministic: {deterministic}")
    print(f"targets: adjacent/random {mine['adjacent'] / mine['random']:.2f} (>= 3), boundary/random "
          f"{mine['boundary'] / mine['random']:.2f} (<= 1.2), max adjacent Jaccard {mine['max_jaccard']:.3f} (<= 0.85)")
    assert deterministic
    assert all(q["max_jaccard"] <= params.near_duplicate for name, q in rows.items() if "random" not in name)


CHAIN_SNAPSHOT_RUN = MEASURED_RUN.format(
    imports="from mpi4py import MPI\nfrom tokenmill.chains import ChainParams, ChainPart, chain_snapshot",
    call="chain_snapshot(MPI.COMM_WORLD, [ChainPart(*part) for part in arguments[0]], ChainParams(**arguments[1]))")


FIT_RUN = MEASURED_RUN.format(
    imports="from tokenmill.chains import ChainParams, fit_files",
    call="len(fit_files(arguments[0], arguments[1], arguments[2], ChainParams(**arguments[3]), arguments[4]).centroids)")
PART_RUN = MEASURED_RUN.format(
    imports="from tokenmill.chains import ChainParams, part_file, read_model",
    call="part_file(*arguments[:3], read_model(arguments[3]), ChainParams(**arguments[4]), arguments[5])")


def rates_at_scale(workdir: Path, inputs: list[dict], part_paths: list[str], all_docs: list[dict],
                   params: chains.ChainParams, long_part: dict, at_scale: str | None) -> None:
    """The graph's three chain steps, each in a process of its own as a job runs it: chain_model
    with a snapshot's SCALE_CENTROIDS topics, chain_vectors on a part of long documents, and
    chain_groups (chain_snapshot, the MPI job, every document selected) on 1 and 2 ranks, which
    must write the same files; with `at_scale`, their rates recorded for plan-cost."""
    documents, source = len(all_docs), "MMLU, GSM8K, HPLT, AEB articles"
    scale = dataclasses.replace(params, centroids=SCALE_CENTROIDS)
    fit = run_measured(REPO, FIT_RUN, [[p["docs"] for p in inputs], [p["langid"] for p in inputs],
                                       str(workdir / "model-scale.parquet"), dataclasses.asdict(scale), documents])
    vectors = run_measured(REPO, PART_RUN, [long_part["docs"], long_part["signatures"], str(workdir / "long.parquet"),
                                            str(workdir / "model-scale.parquet"), dataclasses.asdict(scale),
                                            long_part["langid"]])
    long_docs = vectors["result"]
    # memory per document of a part: the slope between one part of half the documents and one of all
    # (a part job's fixed memory, the model's words and topics, is most of it at these sizes)
    by_size = {}
    for share in (2, 1):
        whole = write_parts(all_docs[:len(all_docs) // share], workdir / f"one-part-{share}", 1,
                            schema_settings(MinHashParams, "minhash"))[0]
        by_size[len(all_docs) // share] = run_measured(REPO, PART_RUN, [
            whole["docs"], whole["signatures"], str(workdir / f"one-part-{share}.parquet"),
            str(workdir / "model-scale.parquet"), dataclasses.asdict(scale), whole["langid"]])
    (small, at_small), (large, at_large) = sorted(by_size.items())
    per_document = (at_large["peak_rss_mb"] - at_small["peak_rss_mb"]) / (large - small)
    measured, outputs = {}, {}
    for ranks in (1, 2):
        folder = workdir / f"mpi-{ranks}"
        parts = []
        for number, path in enumerate(part_paths):
            select = folder / "select" / f"part-{number:03d}.parquet"
            doc_ids = pq.read_table(path, columns=["doc_id"])["doc_id"]
            write_parquet(str(select), pa.table({"doc_id": doc_ids, "selected": pa.array([True] * len(doc_ids))}))
            parts.append([f"part-{number:03d}", path, str(select), str(folder / "groups" / f"part-{number:03d}.parquet")])
        measured[ranks] = run_measured(REPO, CHAIN_SNAPSHOT_RUN, [parts, dataclasses.asdict(params)], ranks)
        outputs[ranks] = [Path(part[3]).read_bytes() for part in parts]
    same = outputs[1] == outputs[2]
    print(f"{'the graph' + chr(39) + 's jobs, a process each':48}{'documents':>10}{'CPU-s':>8}{'wall s':>8}{'memory MB':>11}")
    for name, run, count in ((f"chain_model, {SCALE_CENTROIDS:,} topics", fit, documents),
                             (f"chain_vectors, {SCALE_CENTROIDS:,} topics", vectors, long_docs),
                             *((f"chain_groups, MPI job on {ranks} rank{'s' if ranks > 1 else ''}", run, documents)
                               for ranks, run in measured.items())):
        print(f"{name:48}{count:>10,}{run['cpu_seconds']:>8.2f}{run['wall_seconds']:>8.2f}{memory_mb(run):>11,.0f}")
    print(f"chain_groups: the same files on 1 and 2 ranks: {same}")
    assert same
    record_at_scale(at_scale, "chain_model", {"documents": documents, "core_seconds": round(fit["cpu_seconds"], 3),
                                              **{name: round(fit[name], 1) for name in ("base_rss_mb", "peak_rss_mb")}},
                    "bench_chains.py", f"{documents:,} real documents ({source}) sampled from {len(inputs)} parts, "
                                       f"{SCALE_CENTROIDS:,} topics, one core")
    print(f"chain_vectors' memory: {memory_mb(at_small):,.0f} MB for a part of {small:,} documents, "
          f"{memory_mb(at_large):,.0f} MB for {large:,}: {1024 * per_document:.2f} KB a document")
    record_at_scale(at_scale, "chain_vectors", {
        "documents": long_docs, "core_seconds": round(vectors["cpu_seconds"], 3), "documents_per_part": large,
        "base_rss_mb": round(at_large["peak_rss_mb"] - per_document * large, 1),
        "peak_rss_mb": round(at_large["peak_rss_mb"], 1)}, "bench_chains.py",
        f"CPU: one part of {long_docs:,} real long documents (HPLT excerpts, AEB articles), {SCALE_CENTROIDS:,} "
        f"topics, one core; memory: the slope between parts of {small:,} and {large:,} documents ({source})")
    record_at_scale(at_scale, "chain_groups", {"documents": documents, "ranks": {
        str(ranks): {name: round(run[name], 2) for name in ("wall_seconds", "peak_rss_mb")}
        for ranks, run in measured.items()}}, "bench_chains.py",
        f"{documents:,} real documents' part files ({source}), every one selected, {params.centroids} topics; "
        f"the MPI job on 1 rank (one core) and 2 ranks (2 cores), wall seconds with mpiexec")


def add_options(parser) -> None:
    parser.add_argument("--parts", type=int, default=8)
    parser.add_argument("--buckets", type=int, default=4)
    parser.add_argument("--budget", type=int, default=2048, help="tokens per chain")
    parser.add_argument("--sample", type=int, default=1000, help="documents of each part the fit step reads")
    add_at_scale_option(parser)


if __name__ == "__main__":
    run_in_workdir(main, __doc__, "folder for the parts and chains (kept)", add_options)
