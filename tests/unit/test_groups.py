"""Groups through tokenize, the shards and the loader, on real code repositories: a repository's
documents are one group in its document order, the shards' lineage files keep it, and a phase that
keeps groups whole serves each group contiguous and in order, masked as one span when it asks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from tests.unit.helpers import SHARD_LIMITS, prepared_part, write_selection
from tests.unit.test_code_documents import INFO, SETTINGS
from tokenmill.__main__ import main
from tokenmill.extract.part import extract_part
from tokenmill.hashing import sha256_file
from tokenmill.io import read_json, read_jsonl_zst
from tokenmill.shards.manifest import build_manifest
from tokenmill.shards.writer import TokenizedPart, write_shards
from tokenmill.tokenize import EOD_TOKEN, load_tokenizer, selected_texts, token_dtype, tokenize_part, train_bpe
from tokenmill.trainer.export import EXPORT_LISTING, export_groups
from tokenmill.trainer.loader import Loader
from tokenmill.trainer.recipe import RecipeError, validate_recipe

SAMPLE_CODE = Path(__file__).resolve().parents[2] / "data" / "sample" / "code"
REPOSITORIES = ("asciinema-2.3.0", "MarkupSafe-2.1.3", "tomli-2.0.0")
SOURCE = "mixed"
SEQ_LEN = 2048


@pytest.fixture(scope="module")
def version(tmp_path_factory) -> tuple[Path, dict[str, list[dict]]]:
    """(manifest, each part's extracted documents): one source of three code repositories, a part
    each, and lingua's German sentences (documents of no group), in shards of about 20,000 tokens."""
    tmp = tmp_path_factory.mktemp("groups")
    prepared = {}
    for name in REPOSITORIES:
        docs, select = tmp / f"{name}.docs.jsonl.zst", tmp / f"{name}.select.parquet"
        extract_part([str(SAMPLE_CODE / f"{name}.tar.gz")], "code", INFO, SETTINGS["extract"], str(docs),
                     str(tmp / f"{name}.q.jsonl.zst"), str(tmp / f"{name}.stats.json"))
        records = list(read_jsonl_zst(docs))
        write_selection(select, [d["doc_id"] for d in records], [d["text"] for d in records], "en")
        prepared[name] = (str(docs), str(select))
    prepared["de"] = prepared_part(tmp, "de")
    tokenizer = tmp / "tokenizer.json"
    train_bpe([d["text"] for docs, select in prepared.values() for _, d in selected_texts(docs, select)], 3000, 2,
              str(tokenizer))
    parts = []
    for name, (docs, select) in prepared.items():
        tokenize_part(docs, select, str(tokenizer), None, 5, str(tmp / f"{name}.tokens.parquet"))
        parts.append(TokenizedPart("s1", name, str(tmp / f"{name}.tokens.parquet"), select))
    tok, sha = load_tokenizer(str(tokenizer))
    root = tmp / "results" / "shards" / "v1"
    write_shards(SOURCE, "s1", parts, str(root / SOURCE / "s1"), 20_000, "Apache-2.0", "code",
                 token_dtype(tok.get_vocab_size()), SHARD_LIMITS)
    build_manifest("v1", [str(root / SOURCE / "s1")], str(root / "manifest.json"), str(root / "validation.tsv"),
                   {"sha256": sha, "eod_id": tok.token_to_id(EOD_TOKEN)}, "c" * 64, "0.1.0")
    return root / "manifest.json", {name: list(read_jsonl_zst(docs)) for name, (docs, _) in prepared.items()}


def recipe_for(manifest: Path, seed: int = 11, **phase) -> dict:
    return validate_recipe({
        "recipe_id": "groups", "manifest_sha256": sha256_file(manifest),
        "tokenizer_sha256": read_json(manifest)["tokenizer"]["sha256"], "seed": seed, "global_batch": 12,
        "phases": [{"name": "long", "tokens": SEQ_LEN * 12 * 4, "seq_len": SEQ_LEN, "weights": {SOURCE: 1.0},
                    "max_epochs": {SOURCE: 20}, **phase}]})


def lineage_rows(manifest: Path) -> list[list[dict]]:
    """Each shard's .docs.parquet rows, by shard number."""
    return [pq.read_table(manifest.parent / f"{shard['path']}.docs.parquet").to_pylist()
            for shard in read_json(manifest)["shards"]]


def stream_documents(loader: Loader, manifest: Path) -> list[dict]:
    stream = loader.phases[0].streams[0]
    rows = lineage_rows(manifest)
    return [rows[shard][document] for shard, document in zip(stream.shards.tolist(), stream.documents.tolist())]


def test_a_repository_is_one_group_in_its_document_order(version):
    manifest, documents = version
    by_doc = {row["doc_id"]: row for rows in lineage_rows(manifest) for row in rows}
    for name in REPOSITORIES:
        records = documents[name]
        assert len(records) > 1
        groups = {by_doc[record["doc_id"]]["group_id"] for record in records}
        assert len(groups) == 1 and None not in groups
        assert [by_doc[record["doc_id"]]["group_pos"] for record in records] == list(range(len(records)))
        # the group's files: the README first, then every other file by path
        paths = [file["path"] for record in records for file in record["extract_meta"]["code"]["files"]]
        assert paths[0].lower().startswith("readme") and paths[1:] == sorted(paths[1:])
    assert {by_doc[record["doc_id"]]["group_id"] for record in documents["de"]} == {None}
    assert len({by_doc[documents[name][0]["doc_id"]]["group_id"] for name in REPOSITORIES}) == len(REPOSITORIES)


def test_a_phase_that_keeps_groups_whole_serves_each_group_contiguous_and_in_order(version):
    manifest, _ = version
    scattered = stream_documents(Loader(recipe_for(manifest), manifest), manifest)
    runs = [row["group_id"] for row in scattered]
    # manifest order (the shuffle) scatters a repository's documents
    assert any(len({i for i, group in enumerate(runs) if group == name}) > 1
               and np.diff([i for i, group in enumerate(runs) if group == name]).max() > 1
               for name in set(runs) - {None})
    kept = stream_documents(Loader(recipe_for(manifest, groups=True), manifest), manifest)
    assert sorted(row["doc_id"] for row in kept) == sorted(row["doc_id"] for row in scattered)
    seen, previous, last_pos = set(), None, None
    for row in kept:
        group = row["group_id"]
        if group is not None and group == previous:
            assert row["group_pos"] == last_pos + 1
        else:
            assert group is None or group not in seen, f"group {group} is split"
            assert group is None or row["group_pos"] == 0
            seen.add(group)
        previous, last_pos = group, row["group_pos"]
    # the groups' order is keyed by the recipe's seed
    other = stream_documents(Loader(recipe_for(manifest, seed=12, groups=True), manifest), manifest)
    assert [row["doc_id"] for row in other] != [row["doc_id"] for row in kept]


def test_group_masks_mark_only_where_a_group_starts(version):
    manifest, _ = version
    by_documents = Loader(recipe_for(manifest, groups=True), manifest)
    by_groups = Loader(recipe_for(manifest, groups=True, mask="group"), manifest)
    stream = by_groups.phases[0].streams[0]
    rows = stream_documents(by_groups, manifest)
    group_starts = {int(stream.starts[i]) for i, row in enumerate(rows)
                    if row["group_id"] is None or row["group_pos"] == 0}
    fewer = 0
    for index in range(by_groups.total_samples):
        grouped, plain = by_groups.sample(index), by_documents.sample(index)
        assert np.array_equal(grouped.tokens, plain.tokens)
        start = grouped.position * SEQ_LEN
        assert {start + int(mark) for mark in grouped.cu_seqlens[1:-1]} <= group_starts
        assert set(grouped.cu_seqlens.tolist()) <= set(plain.cu_seqlens.tolist())
        fewer += len(grouped.cu_seqlens) < len(plain.cu_seqlens)
    assert fewer, "no sample held two documents of one repository"


def test_grouped_samples_are_the_same_every_run_and_for_any_world_size(version):
    manifest, _ = version
    first, second = (Loader(recipe_for(manifest, groups=True, mask="group"), manifest) for _ in range(2))
    steps = first.total_samples // 12
    for step in range(steps):
        batches = {}
        for world in (4, 3):
            served = [(int(index), tokens.tobytes(), mask.tobytes())
                      for rank in range(world)
                      for batch in second.micro_batches(step, rank, world, 12 // world)
                      for index, tokens, mask in zip(batch["indices"], batch["tokens"], batch["cu_seqlens"])]
            batches[world] = sorted(served)
        assert batches[4] == batches[3]
        expected = [(index, first.sample(index).tokens.tobytes(), first.sample(index).cu_seqlens.tobytes())
                    for index in range(step * 12, step * 12 + 12)]
        assert batches[4] == expected


def test_a_group_mask_without_groups_kept_whole_is_refused(version):
    manifest, _ = version
    with pytest.raises(RecipeError, match=r"phases\.0\.mask: .*set phases\.0\.groups: true"):
        recipe_for(manifest, mask="group")


def test_the_export_writes_each_group_as_one_document_megatron_reads_whole(version, tmp_path):
    from tests.unit.test_megatron import megatron_indexed_dataset
    manifest, _ = version
    loader = Loader(recipe_for(manifest, groups=True), manifest)
    blend = export_groups(loader, "long", tmp_path / "export")
    stream = loader.phases[0].streams[0]
    eod = read_json(manifest)["tokenizer"]["eod_id"]
    [(weight, prefix)] = blend
    assert weight == 1.0 and read_json(tmp_path / "export" / EXPORT_LISTING)["shards"][0]["groups"] == \
        len(stream.group_starts) - 1
    exported = megatron_indexed_dataset()[0](prefix)
    rows = stream_documents(loader, manifest)
    first_documents = np.searchsorted(stream.starts, stream.group_starts)
    for number, (begin, end) in enumerate(zip(first_documents[:-1], first_documents[1:])):
        document = np.asarray(exported[number])
        assert document[-1] == eod and eod not in document[:-1]  # Megatron finds no boundary inside the group
        served = np.concatenate([loader.reader.document_tokens(int(stream.shards[d]), int(stream.documents[d]))
                                 for d in range(begin, end)])
        assert np.array_equal(document, served[(served != eod) | (np.arange(len(served)) == len(served) - 1)])
        assert len({rows[d]["group_id"] for d in range(begin, end)}) == 1
    assert any(end - begin > 1 for begin, end in zip(first_documents[:-1], first_documents[1:]))
    with pytest.raises(RecipeError, match=r"phases\.0\.groups: phase 'long' does not keep groups whole"):
        export_groups(Loader(recipe_for(manifest), manifest), "long", tmp_path / "plain")


def test_megatron_blend_warns_that_megatron_would_scatter_the_groups(version, tmp_path, capsys):
    manifest, _ = version
    for groups in (False, True):
        recipe = tmp_path / f"recipe-{groups}.yaml"
        recipe.write_text(yaml.safe_dump(recipe_for(manifest, groups=groups)))
        assert main(["megatron-blend", str(recipe), "--manifest", str(manifest), "--phase", "long"]) == 0
        printed = capsys.readouterr()
        assert str(manifest.parent) in printed.out
        warned = "shuffles documents every epoch" in printed.err and "export-groups" in printed.err
        assert warned == groups
