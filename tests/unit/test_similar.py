"""`python -m tokenmill similar`: datasketch over our signatures agrees with our banding, and the
kept copy of a cluster is explained as select decided it."""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations

import numpy as np
import pytest

from tests.conftest import gold_articles, lingua_records
from tokenmill.config import schema_settings
from tokenmill.dedup.minhash import MinHashParams, Shingler, band_hashes, estimated_jaccard, signatures
from tokenmill.dedup.normalize import normalize_for_dedup
from tokenmill.dedup.similar import Snapshot, datasketch_index, jaccard, matching_bands, shingle_set, why_kept

PARAMS = schema_settings(MinHashParams, "minhash")


@pytest.fixture(scope="module")
def families() -> list[str]:
    """Near-duplicate families of real documents: article bodies with 1-40 % of the words replaced,
    paragraphs reordered or boilerplate added (so that some pairs share a few bands, some all, some
    none), and real sentence documents in four languages, some of which repeat."""
    bodies = [entry["articleBody"] for _, entry in sorted(gold_articles().items())
              if len(entry["articleBody"].split()) > 150][:40]
    rng = np.random.default_rng(16)
    texts = []
    for body in bodies:
        words, paragraphs = body.split(" "), [p for p in body.split("\n") if p.strip()]
        texts.append(body)
        for fraction in (0.01, 0.03, 0.06, 0.1, 0.15, 0.25, 0.4):
            copy = list(words)
            for position in rng.choice(len(copy), size=int(fraction * len(copy)), replace=False):
                copy[position] = copy[rng.integers(len(copy))]
            texts.append(" ".join(copy))
        texts.append("\n".join(rng.permutation(paragraphs)))
        texts.append("\n".join(["Share this article"] + paragraphs + ["Related posts"]))
    for lang in ("en", "de", "ar", "zh"):
        texts += [record["text"] for record in lingua_records(lang)]
    return texts


def our_candidate_pairs(bands: np.ndarray) -> set[tuple[int, int]]:
    """The pairs minhash_cluster's banding makes candidates: the same hash in the same band."""
    buckets: dict[tuple[int, int], list[int]] = defaultdict(list)
    for document, row in enumerate(bands.tolist()):
        for band, value in enumerate(row):
            buckets[(band, value)].append(document)
    return {pair for members in buckets.values() for pair in combinations(members, 2)}


def test_datasketch_lsh_over_our_signatures_returns_our_candidate_pairs(families):
    shingler = Shingler(PARAMS.ngram)
    signature = signatures([shingler.shingles(normalize_for_dedup(text)) for text in families], PARAMS)
    ours = our_candidate_pairs(band_hashes(signature, PARAMS.bands, PARAMS.rows))
    lsh, minhashes = datasketch_index(list(range(len(families))), signature, PARAMS)
    theirs = {(min(a, b), max(a, b)) for a, minhash in enumerate(minhashes) for b in lsh.query(minhash) if a != b}
    assert theirs == ours
    shared = [len(matching_bands(signature[a], signature[b], PARAMS)) for a, b in sorted(ours)]
    # not only copies: pairs that share some bands and not others, and many documents in no pair
    assert len(ours) > 300 and 0 < sum(0 < n < PARAMS.bands for n in shared) and min(shared) >= 1
    assert len({document for pair in ours for document in pair}) < 0.5 * len(families)
    for a, b in sorted(ours)[:200]:  # datasketch estimates Jaccard as we do, over all permutations
        assert minhashes[a].jaccard(minhashes[b]) == pytest.approx(estimated_jaccard(signature[a], signature[b]))
        if a < 40 * 10:  # exact Jaccard is on our shingle sets
            truth = jaccard(shingle_set(families[a], PARAMS), shingle_set(families[b], PARAMS))
            assert abs(truth - minhashes[a].jaccard(minhashes[b])) < 0.2


def snapshot_of(members: list[dict]) -> Snapshot:
    """A one-cluster snapshot as judge, minhash_cluster and select left it."""
    columns = {name: [member.get(name) for member in members] for name in
               ("failed_rule", "quality", "reason", "is_cluster_representative")}
    columns["selected"] = [not reason for reason in columns["reason"]]
    ids = [f"{index:032x}" for index in range(len(members))]
    columns["dup_cluster_id"] = [ids[0]] * len(members)
    return Snapshot(".", "s", "x", PARAMS, [], ids, np.zeros(len(ids), np.int64), np.arange(len(ids)),
                    np.zeros((len(ids), PARAMS.permutations), np.uint64), columns)


@pytest.mark.parametrize("members, kept, why", [
    ([dict(failed_rule="", quality=0.5, reason="", is_cluster_representative=True),
      dict(failed_rule="", quality=0.5, reason="near_duplicate", is_cluster_representative=False)],
     0, "the representative (first copy by fetch time, url, doc_id) passes every other rule and no member"),
    ([dict(failed_rule="low_quality", quality=0.1, reason="low_quality", is_cluster_representative=True),
      dict(failed_rule="", quality=0.6, reason="", is_cluster_representative=False),
      dict(failed_rule="", quality=0.4, reason="near_duplicate", is_cluster_representative=False)],
     1, "the representative fails low_quality; this is the best member that passes every other rule"),
    ([dict(failed_rule="", quality=0.3, reason="near_duplicate", is_cluster_representative=True),
      dict(failed_rule="", quality=0.8, reason="", is_cluster_representative=False)],
     1, "higher quality (0.8) than the representative (0.3)"),
    ([dict(failed_rule="opted_out", quality=0.3, reason="opted_out", is_cluster_representative=True),
      dict(failed_rule="too_short", quality=0.8, reason="exact_duplicate", is_cluster_representative=False)],
     None, "none: the cluster is lost, every member fails another rule (opted_out x1, too_short x1)"),
])
def test_the_kept_copy_is_explained_as_select_chose_it(members, kept, why):
    chosen, because = why_kept(snapshot_of(members), list(range(len(members))))
    assert chosen == kept and because.startswith(why), because
