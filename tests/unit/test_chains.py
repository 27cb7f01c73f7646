"""Chains of related documents (tokenmill.chains) on real text: the 181 article bodies of the bundled
benchmark, with planted near-copies, through the fit, part and bucket steps."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import REPO
from tests.sample_data import gold_articles, lingua_records
from tokenmill import chains
from tokenmill.config import schema_settings
from tokenmill.dedup.minhash import MinHashParams, Shingler, permutation_coefficients, signature_rows
from tokenmill.hashing import doc_id_for
from tokenmill.io import write_jsonl_zst, write_parquet
from tokenmill.plan import PLAN_COLUMNS, write_plan

MINHASH = schema_settings(MinHashParams, "minhash")
PARAMS = dataclasses.replace(schema_settings(chains.ChainParams, "chains"), centroids=4, token_budget=3000,
                             fit_iterations=4)
NEAR_COPIES = 6
MPIEXEC = os.path.join(os.path.dirname(sys.executable), "mpiexec")


@pytest.fixture(scope="module")
def corpus():
    """Real articles plus near-copies of six of them (one word added: Jaccard well above 0.85)."""
    texts = [record["articleBody"] for _, record in sorted(gold_articles().items()) if record["articleBody"].strip()]
    rng = random.Random(3)
    copies = [text.replace(" ", " really ", 1) for text in rng.sample([t for t in texts if len(t) > 3000], NEAR_COPIES)]
    docs = [{"doc_id": doc_id_for(text), "text": text} for text in texts + copies]
    rng.shuffle(docs)
    return docs


def _signatures(docs):
    table = signature_rows(docs, MINHASH, 0, Shingler(MINHASH.ngram), permutation_coefficients(MINHASH))
    return table


def _write_parts(docs, folder, parts):
    paths = []
    for number in range(parts):
        share = docs[number::parts]
        docs_path, signatures_path = folder / f"docs-{number}.jsonl.zst", folder / f"signatures-{number}.parquet"
        write_jsonl_zst(docs_path, share)
        write_parquet(signatures_path, _signatures(share))
        paths.append((str(docs_path), str(signatures_path)))
    return paths


@pytest.fixture(scope="module")
def built(corpus, tmp_path_factory):
    """The three steps on files: the corpus in 3 parts, 2 bucket jobs."""
    folder = tmp_path_factory.mktemp("chains")
    inputs = _write_parts(corpus, folder, 3)
    model = chains.fit_files([docs for docs, _ in inputs], [None] * 3, str(folder / "model.parquet"), PARAMS)
    model = chains.read_model(str(folder / "model.parquet"))
    part_paths = []
    for number, (docs, signatures) in enumerate(inputs):
        part_paths.append(str(folder / f"part-{number}.parquet"))
        chains.part_file(docs, signatures, part_paths[-1], model, PARAMS)
    outs = [str(folder / f"bucket-{b}.parquet") for b in range(2)]
    for bucket, out in enumerate(outs):
        chains.bucket_file(part_paths, bucket, 2, out, PARAMS)
    table = pa.concat_tables([pq.read_table(out) for out in outs])
    return {"folder": folder, "model": model, "part_paths": part_paths, "outs": outs, "table": table,
            "vectors": pa.concat_tables([pq.read_table(p) for p in part_paths])}


def _chains(table):
    found = {}
    for doc_id, group, position in zip(table["doc_id"].to_pylist(), table["group_id"].to_pylist(),
                                       table["group_pos"].to_pylist()):
        found.setdefault(group, []).append((position, doc_id))
    return {group: [doc_id for _, doc_id in sorted(members)] for group, members in found.items()}


def test_chains_cover_most_documents_and_groups_are_well_formed(built, corpus):
    table = built["table"]
    doc_ids = table["doc_id"].to_pylist()
    assert len(doc_ids) == len(set(doc_ids))  # a document is in one chain at most
    assert len(doc_ids) > len(corpus) // 2
    for group, members in _chains(table).items():
        assert len(members) >= 2  # singletons have no row
        assert group == chains.group_id_of(members[0])
    positions = {}
    for group, position in zip(table["group_id"].to_pylist(), table["group_pos"].to_pylist()):
        positions.setdefault(group, []).append(position)
    assert all(sorted(p) == list(range(len(p))) for p in positions.values())


def test_the_token_budget_holds(built, corpus):
    tokens = {doc["doc_id"]: chains.estimated_tokens(doc["text"], PARAMS.bytes_per_token) for doc in corpus}
    for members in _chains(built["table"]).values():
        assert sum(tokens[doc_id] for doc_id in members) <= PARAMS.token_budget


def test_no_adjacent_near_duplicates(built, corpus):
    signatures = _signatures(corpus)
    signature_of = dict(zip(signatures["doc_id"].to_pylist(), chains._fixed_rows(signatures["signature"], np.uint64)))
    adjacent = [(a, b) for members in _chains(built["table"]).values() for a, b in zip(members, members[1:])]
    assert max(np.mean(signature_of[a] == signature_of[b]) for a, b in adjacent) <= PARAMS.near_duplicate
    # and the planted copies would have been adjacent without the rule: each is its original's nearest neighbour
    vectors = built["vectors"]
    vector_of = dict(zip(vectors["doc_id"].to_pylist(), chains._fixed_rows(vectors["vector"], np.int8)))
    copies = [(a, b) for a in signature_of for b in signature_of if a < b
              and np.mean(signature_of[a] == signature_of[b]) > PARAMS.near_duplicate]
    assert len(copies) >= NEAR_COPIES - 1
    assert all(chains.cosine_rows(vector_of[a][None], vector_of[b][None])[0] > 0.9 for a, b in copies)


def test_adjacent_documents_are_far_more_similar_than_random_pairs(built):
    vectors = built["vectors"]
    vector_of = dict(zip(vectors["doc_id"].to_pylist(), chains._fixed_rows(vectors["vector"], np.int8)))
    adjacent = [(a, b) for members in _chains(built["table"]).values() for a, b in zip(members, members[1:])]
    rng = random.Random(5)
    ids = sorted(vector_of)
    pairs = [tuple(rng.sample(ids, 2)) for _ in range(2000)]
    mean = lambda ps: float(np.mean(chains.cosine_rows(np.stack([vector_of[a] for a, _ in ps]),
                                                       np.stack([vector_of[b] for _, b in ps]))))
    assert mean(adjacent) >= 3 * mean(pairs)
    # groups come in group_id order, unrelated: the last of one against the first of the next is random
    groups = list(_chains(built["table"]).values())
    boundary = [(left[-1], right[0]) for left, right in zip(groups, groups[1:])]
    assert mean(boundary) <= 1.2 * mean(pairs) + 0.02


def test_deterministic_and_independent_of_parts_and_buckets(built, corpus, tmp_path):
    """The same inputs and seed give the same bytes; 2 parts instead of 3, or 1 bucket job
    instead of 2, give the same chains."""
    again = tmp_path / "again.parquet"
    chains.bucket_file(built["part_paths"], 0, 2, str(again), PARAMS)
    assert again.read_bytes() == open(built["outs"][0], "rb").read()
    inputs = _write_parts(corpus, tmp_path, 2)
    part_paths = []
    for number, (docs, signatures) in enumerate(inputs):
        part_paths.append(str(tmp_path / f"part-{number}.parquet"))
        chains.part_file(docs, signatures, part_paths[-1], built["model"], PARAMS)
    one = tmp_path / "one.parquet"
    chains.bucket_file(part_paths, 0, 1, str(one), PARAMS)
    assert _chains(pq.read_table(one)) == _chains(built["table"])
    reseeded = chains.build_chains(chains.read_bucket(part_paths, 0, 1, PARAMS.centroids),
                                   dataclasses.replace(PARAMS, seed=1))
    assert _chains(reseeded) != _chains(built["table"])  # the seed orders the walk


def test_only_selected_documents_are_chained(built, corpus, tmp_path):
    docs, signatures = _write_parts(corpus, tmp_path, 1)[0]
    kept = {doc["doc_id"] for doc in corpus[::2]}
    select = tmp_path / "select.parquet"
    write_parquet(select, pa.table({"doc_id": [d["doc_id"] for d in corpus],
                                    "selected": [d["doc_id"] in kept for d in corpus]}))
    out = tmp_path / "part.parquet"
    assert chains.part_file(docs, signatures, str(out), built["model"], PARAMS, select_path=str(select)) == len(kept)
    assert set(pq.read_table(out)["doc_id"].to_pylist()) == kept


def test_words_of_every_language_make_a_topic_vector():
    """A language without spaces gets its words from its segmenter, not one vector dimension per line."""
    hasher = chains.WordHasher()
    for lang in ("zh", "ja", "ar", "ru"):
        text = " ".join(record["text"] for record in lingua_records(lang)[:3])
        hashes = hasher(text, lang, PARAMS.max_chars)
        assert len(np.unique(hashes)) > 20, lang
        assert np.count_nonzero(chains.topic_vectors([hashes], None, PARAMS.dims)) > 20, lang


def test_the_snapshot_job_writes_each_part_s_chains_the_same_on_any_number_of_ranks(built, tmp_path):
    """scripts/chain_groups.py under mpiexec, as the graph runs it: a file per part with the chains
    of its selected documents, byte-identical for 1, 2 and 3 ranks, and the chains those of the
    bucket step over the same rows (a document select dropped is in none)."""
    settings = {"centroids": PARAMS.centroids, "token_budget": PARAMS.token_budget, "min_similarity": PARAMS.min_similarity,
                "near_duplicate": PARAMS.near_duplicate, "sample_documents": 200000, "sources": ["web"]}
    params = chains.chain_params(settings, 0, MINHASH.permutations)
    dropped = set(pq.read_table(built["part_paths"][0], columns=["doc_id"])["doc_id"].to_pylist()[::4])
    selects = []
    for number, path in enumerate(built["part_paths"]):
        doc_ids = pq.read_table(path, columns=["doc_id"])["doc_id"].to_pylist()
        selects.append(tmp_path / f"select-{number}.parquet")
        write_parquet(selects[-1], pa.table({"doc_id": doc_ids, "selected": [doc_id not in dropped for doc_id in doc_ids]}))
    files = {}
    for ranks in (1, 2, 3):
        rows, outputs = [], []
        for number, path in enumerate(built["part_paths"]):
            row = {column: "" for column in PLAN_COLUMNS}
            outputs.append(tmp_path / f"ranks-{ranks}" / f"part-{number}.parquet")
            row.update(source="web", snapshot="s1", part=f"part-{number}", chain_vectors=path, select=str(selects[number]),
                       chain_groups=str(outputs[-1]))
            rows.append([row[column] for column in PLAN_COLUMNS])
        write_plan(rows, str(tmp_path / f"plan-{ranks}.tsv"))
        subprocess.run([MPIEXEC, "-n", str(ranks), sys.executable, "-P", str(REPO / "scripts" / "chain_groups.py"),
                        "--plan", str(tmp_path / f"plan-{ranks}.tsv"), "--version", "v1", "--settings",
                        json.dumps(settings), "--seed", "0", "--permutations", str(MINHASH.permutations),
                        "--out-dir", str(tmp_path / f"ranks-{ranks}")], check=True, timeout=300, capture_output=True)
        files[ranks] = [path.read_bytes() for path in outputs]
    assert files[1] == files[2] == files[3]
    written = pa.concat_tables([pq.read_table(tmp_path / "ranks-1" / f"part-{n}.parquet") for n in range(3)])
    assert not set(written["doc_id"].to_pylist()) & dropped
    kept = pa.concat_tables([pq.read_table(path) for path in built["part_paths"]])
    kept = kept.filter(pa.array([doc_id not in dropped for doc_id in kept["doc_id"].to_pylist()]))
    assert _chains(written) == _chains(chains.build_chains(kept, params)) and len(_chains(written)) > 5
