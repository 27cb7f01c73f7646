"""The long-context stage over the demo run's shards (config/recipe-long.yaml, docs/long-context.md):
its code repositories and the chains of aeb_articles and dolma_crawl are groups in the shards,
served whole and in order, each source at its weight with 60 % of it from its long units, the same
samples for any data-parallel size."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import pyarrow.parquet as pq
import pytest

from tests.sample_data import recipe_for
from tokenmill.io import read_json
from tokenmill.trainer.loader import Loader

GLOBAL_BATCH = 4  # config/recipe-long.yaml's


@pytest.fixture(scope="module")
def manifest(reference_run):
    return reference_run / "results" / "shards" / "demo-v0" / "manifest.json"


@pytest.fixture(scope="module")
def loader(manifest) -> Loader:
    return Loader(recipe_for(manifest, "recipe-long.yaml"), manifest)


def lineage(manifest) -> list[list[dict]]:
    return [pq.read_table(manifest.parent / f"{shard['path']}.docs.parquet").to_pylist()
            for shard in read_json(manifest)["shards"]]


def test_repositories_and_chains_are_groups_of_the_shards(manifest, reference_run):
    shards = read_json(manifest)["shards"]
    members = defaultdict(list)
    for shard, rows in zip(shards, lineage(manifest)):
        for row in rows:
            if row["group_id"] is not None:
                members[shard["source"], row["group_id"]].append(row["group_pos"])
    by_source = Counter(source for source, _ in members)
    assert by_source["code_samples"] >= 1 and by_source["aeb_articles"] >= 5 and by_source["dolma_crawl"] >= 1
    assert set(by_source) == {"code_samples", "aeb_articles", "dolma_crawl"}  # chains.sources and the code
    for (source, group), positions in members.items():
        if source != "code_samples":  # a chain is of selected documents only: none of it is missing
            assert sorted(positions) == list(range(len(positions))) and len(positions) >= 2, (source, group)
        else:  # a repository's kept documents, each at its place in the repository
            assert len(set(positions)) == len(positions)
    # every chained document is the chain job's, and no document is in two chains
    chained = {}
    for path in (reference_run / "results" / "chain_groups" / "demo-v0").rglob("*.parquet"):
        for row in pq.read_table(path).to_pylist():
            assert row["doc_id"] not in chained
            chained[row["doc_id"]] = (row["group_id"], row["group_pos"])
    in_shards = {row["doc_id"]: (row["group_id"], row["group_pos"]) for rows in lineage(manifest) for row in rows
                 if row["group_id"] and not row["group_id"].startswith("repo-")}
    assert in_shards == chained


def test_the_long_stage_serves_groups_whole_in_order_and_the_same_for_any_world_size(loader, manifest):
    rows = lineage(manifest)
    for stream in loader.phases[0].streams:
        groups = [rows[shard][document]["group_id"] or f"doc-{rows[shard][document]['doc_id']}"
                  for shard, document in zip(stream.shards.tolist(), stream.documents.tolist())]
        runs = [group for number, group in enumerate(groups) if number == 0 or group != groups[number - 1]]
        assert len(runs) == len(set(runs)), f"{stream.name}: a group is split"
    served = {}
    for world in (4, 2):
        served[world] = sorted((int(index), tokens.tobytes(), mask.tobytes())
                               for step in range(loader.total_samples // GLOBAL_BATCH) for rank in range(world)
                               for batch in loader.micro_batches(step, rank, world, GLOBAL_BATCH // world)
                               for index, tokens, mask in zip(batch["indices"], batch["tokens"], batch["cu_seqlens"]))
    assert served[4] == served[2] and len(served[4]) == loader.total_samples


def test_each_source_keeps_its_weight_and_its_long_share(loader):
    report = {row["source"]: row for row in loader.length_report()}
    weights = loader.recipe["phases"][0]["weights"]
    for source, weight in weights.items():
        assert report[source]["realized"] == pytest.approx(weight, abs=0.01), source
    # aeb_articles' chains make long units: 60 % of its tokens come from them, ~3.5x their natural share
    assert report["aeb_articles"]["long_realized"] == pytest.approx(0.6, abs=0.01)
    assert report["aeb_articles"]["long_natural"] < 0.3
    # phase tokens from units of 8k tokens or more: at least the share its sources can give
    long_tokens = sum(row["realized"] * row["long_realized"] for row in report.values())
    assert long_tokens >= 0.5


def test_the_export_keeps_each_group_one_document(loader, manifest, tmp_path):
    from tokenmill.trainer.export import export_groups
    from tokenmill.shards.megatron import MegatronReader
    eod = read_json(manifest)["tokenizer"]["eod_id"]
    blend = export_groups(loader, "long", tmp_path / "export")
    for (weight, prefix), stream in zip(blend, [s for n, s in enumerate(loader.phases[0].streams)
                                                if loader.phases[0].counts[n] and s.tokens]):
        exported = MegatronReader(prefix)
        assert len(exported) == len(stream.group_starts) - 1
        for number in range(len(exported)):
            assert np.flatnonzero(np.asarray(exported[number]) == eod).tolist() == [len(exported[number]) - 1]
    assert sum(weight for weight, _ in blend) == pytest.approx(1.0)
