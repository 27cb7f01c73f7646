"""Repositories as documents (tokenmill.code.documents), their extraction as a code source and their
repository-level MinHash, on the real release tarballs of data/bench/code-repos."""

import bz2
import gzip
import io
import json
import tarfile
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import REPO, demo_config
from tokenmill.code.documents import code_documents, file_block, repository_documents
from tokenmill.code.overlap import bucket_groups, repository_files, shared_files, vendored_copies
from tokenmill.config import validate
from tokenmill.decontaminate import Benchmark, DecontaminationSettings, Index, build_index, decontamination_rows
from tokenmill.dedup.minhash import MinHashParams, Shingler, permutation_coefficients, signature_rows, version_rank
from tokenmill.extract.part import extract_part
from tokenmill.extract.records import CODE_TYPE, FileStats, PartInfo, Unreadable, code_candidates, document
from tokenmill.extract.sandbox import cpu_seconds
from tokenmill.io import input_bytes, read_jsonl_zst
from tokenmill.select.judge import Policy

REPOS = Path(__file__).resolve().parents[2] / "data" / "bench" / "code-repos"
SETTINGS = validate({"sources": {"code": {"kind": "code", "tier": "code", "license_id": "x",
                                          "snapshots": {"s": ["x"]}}}})
CODE = SETTINGS["extract"]["code"]
INFO = PartInfo("code", "s", "p", "code", "per-repository")
VERSION_PAIRS = [("click-8.1.2", "click-8.1.3"), ("idna-3.3", "idna-3.4"), ("packaging-23.0", "packaging-23.1"),
                 ("six-1.15.0", "six-1.16.0"), ("tomli-2.0.0", "tomli-2.0.1")]


def archive(name: str) -> str:
    return str(next(REPOS.glob(f"*/{name}.t*gz")))


@lru_cache(maxsize=None)
def documents_of(name: str) -> list[dict]:
    stats = FileStats()
    return [document(candidate, INFO, SETTINGS["extract"])[0]
            for candidate in code_candidates(archive(name), SETTINGS["extract"], stats)]


def test_a_repository_reads_readme_first_then_files_by_path_each_under_its_header():
    docs = documents_of("tomli-2.0.1")
    text = "".join(doc["text"] for doc in docs)
    headers = [line[len("<file path="):-1] for line in text.splitlines() if line.startswith("<file path=")]
    assert headers[0] == "README.md"
    assert headers[1:] == sorted(headers[1:]) and "src/tomli/_parser.py" in headers
    assert {doc["derived_from"] for doc in docs} == {archive("tomli-2.0.1")}
    assert {doc["license_id"] for doc in docs} == {"MIT"}
    assert [doc["extract_meta"]["code"]["chunk"] for doc in docs] == list(range(len(docs)))
    first = docs[0]["extract_meta"]["code"]
    assert first["repository"]["name"] == "tomli" and first["repository"]["version"] == "2.0.1"
    assert first["license_class"] == "permissive" and first["features"]["file_count"] == 7
    assert all(doc["content_type"] == CODE_TYPE for doc in docs)


def test_long_repositories_are_cut_at_file_boundaries_within_the_token_budget():
    made = code_documents(archive("click-8.1.3"), {**CODE, "max_document_tokens": 4000})
    assert len(made.documents) > 5
    kept = {file.path: file for file in made.selection.kept}
    for doc in made.documents:
        assert doc.text == "".join(file_block(kept[path]) for path in doc.paths)  # whole files only
        if len(doc.paths) > 1:  # a single file over the budget is a document of its own
            assert len(doc.text.encode()) / CODE["bytes_per_token"] <= 4000
    assert sorted(path for doc in made.documents for path in doc.paths) == sorted(kept)
    whole = repository_documents(made.selection.kept, 10**9, CODE["bytes_per_token"])
    assert len(whole) == 1 and whole[0].paths == tuple(path for doc in made.documents for path in doc.paths)


def test_rejected_files_are_counted_by_reason_and_a_poison_archive_is_quarantined(tmp_path):
    stats = FileStats()
    list(code_candidates(archive("poetry_core-1.6.1"), SETTINGS["extract"], stats))
    assert stats.code_rejected["vendored"] >= 100 and stats.code_license_classes == {"permissive": 1}
    assert stats.code_languages["Python"] > 0

    broken = tmp_path / "broken-1.0.tar.gz"
    broken.write_bytes(b"\x1f\x8b" + b"not a tar archive" * 10)
    only_binary = tmp_path / "blob-1.0.tar.gz"
    with tarfile.open(only_binary, "w:gz") as tar:
        data = bytes(range(256)) * 40
        info = tarfile.TarInfo("blob-1.0/image.png")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    for path, reason in ((broken, "unreadable_repository"), (only_binary, "no_code")):
        records = list(code_candidates(str(path), SETTINGS["extract"], FileStats()))
        assert len(records) == 1 and isinstance(records[0], Unreadable) and records[0].problem.reason == reason


def repository_groups(names: list[str], params: MinHashParams) -> list[set[str]]:
    """Repositories that share an LSH bucket, joined (as minhash_cluster joins documents)."""
    docs = [doc for name in names for doc in documents_of(name)]
    table = signature_rows(docs, params, 0, Shingler(params.ngram), permutation_coefficients(params))
    bands = np.stack([table.column(f"band_{band:02d}").to_numpy() for band in range(params.bands)], axis=1)
    return bucket_groups([Path(doc["derived_from"]).name.split(".tar")[0] for doc in docs], bands)


def test_repository_minhash_groups_every_version_pair_and_merges_nothing_else():
    names = sorted(path.name.split(".t")[0] for path in REPOS.glob("*/*.t*gz"))
    params = MinHashParams(112, 14, 8, 5, 1)
    groups = [group for group in repository_groups(names, params) if len(group) > 1]
    assert groups == [set(pair) for pair in VERSION_PAIRS]


def test_every_document_of_a_repository_shares_its_signature_and_the_newest_version_sorts_first():
    params = MinHashParams(112, 14, 8, 5, 1)
    docs = documents_of("click-8.1.2") + documents_of("click-8.1.3")
    table = signature_rows(docs, params, 0, Shingler(5), permutation_coefficients(params))
    by_repository = defaultdict(set)
    for row, doc in enumerate(docs):
        by_repository[doc["derived_from"]].add((table.column("fetch_ts")[row].as_py(),
                                                tuple(table.column("signature")[row].as_py())))
    older, newer = (by_repository[archive(name)] for name in ("click-8.1.2", "click-8.1.3"))
    assert len(older) == len(newer) == 1
    assert next(iter(newer))[0] < next(iter(older))[0]  # select and minhash_cluster keep the lowest key
    assert version_rank("8.1.10") > version_rank("8.1.9") > version_rank("8.1") > version_rank("not a version") == 0


@pytest.mark.parametrize("classes, expected", [(["permissive"], "license_class_excluded"),
                                               (["permissive", "copyleft"], "")])
def test_the_licence_class_policy_judges_code_and_prose_rules_do_not(classes, expected):
    section = validate({"sources": {"code": {"kind": "code", "tier": "code", "license_id": "x",
                                             "snapshots": {"s": ["x"]}}},
                        "select": {"code": {"license_classes": classes}, "languages": ["de"]}})["select"]
    doc = documents_of("asciinema-2.3.0")[0]
    stored = {"record_truncated": False, "robots_disallowed": False, "source": "code", "tier": "code",
              "license_id": doc["license_id"], "fetch_ts": None, "host": None, "code": doc["extract_meta"]["code"],
              "chars": len(doc["text"]), "lang": "en", "lang_conf": 0.1, "toxicity": 0.0, "contaminated_by": [],
              "doc_id": doc["doc_id"]}
    assert doc["license_id"] == "GPL-3.0-or-later"
    # an English README with a low language score and no German would fail the prose rules
    assert Policy(section, 1, None).first_failed_rule(stored) == expected


def test_a_humaneval_problem_planted_in_a_repository_is_caught_by_decontamination(tmp_path):
    """tomli 2.0.1 with HumanEval/0 (prompt and solution) added as one more module: its document
    that holds the module is flagged, the others are not."""
    config = validate(demo_config())
    benchmarks = [Benchmark(b["name"], b["path"], b["format"], b["fields"])
                  for b in config["decontamination"]["benchmarks"] if b["name"] == "humaneval"]
    settings = DecontaminationSettings(**{k: v for k, v in config["decontamination"].items() if k != "benchmarks"})
    build_index(benchmarks, settings, str(tmp_path / "index"))
    problem = json.loads(gzip.open(REPO / benchmarks[0].path, "rt").readline())
    planted = tmp_path / "tomli-2.0.1.tar.gz"
    with tarfile.open(archive("tomli-2.0.1")) as original, tarfile.open(planted, "w:gz") as copy:
        for member in original.getmembers():
            copy.addfile(member, original.extractfile(member) if member.isfile() else None)
        module = (problem["prompt"] + problem["canonical_solution"]).encode()
        info = tarfile.TarInfo("tomli-2.0.1/src/tomli/_close.py")
        info.size = len(module)
        copy.addfile(info, io.BytesIO(module))
    docs = [document(candidate, INFO, SETTINGS["extract"])[0]
            for candidate in code_candidates(str(planted), SETTINGS["extract"], FileStats())]
    flagged = decontamination_rows(docs, Index(str(tmp_path / "index"))).column("contaminated_by").to_pylist()
    holding = ["<file path=src/tomli/_close.py>" in doc["text"] for doc in docs]
    assert flagged == [["humaneval"] if holds else [] for holds in holding] and sum(holding) == 1


def test_vendored_copies_name_the_repositories_they_copy():
    """poetry-core 1.6.1 vendors attrs 23.1.0, packaging 23.1 and tomli 2.0.1 (its _vendor/vendor.txt);
    some of packaging's files did not change from 23.0, so 23.0 is named with fewer files."""
    names = ["poetry_core-1.6.1", "attrs-23.1.0", "packaging-23.0", "packaging-23.1", "tomli-2.0.1", "six-1.16.0"]
    copies = {(Path(row["repository"]).name, Path(row["copies"]).name): row["files"]
              for row in vendored_copies(repository_files([doc for name in names for doc in documents_of(name)]))}
    assert set(copies) == {("poetry_core-1.6.1.tar.gz", f"{name}.tar.gz") for name in names[1:5]}
    assert copies["poetry_core-1.6.1.tar.gz", "packaging-23.1.tar.gz"] > copies["poetry_core-1.6.1.tar.gz",
                                                                                 "packaging-23.0.tar.gz"]
    shared = shared_files(repository_files(documents_of("packaging-23.0") + documents_of("packaging-23.1")))
    assert len(shared) > 10 and all(len(names) == 2 for names in shared.values())


def test_a_checkout_folder_gives_the_documents_of_its_archive_and_plans_by_its_files(tmp_path):
    with tarfile.open(archive("tomli-2.0.1")) as tar:
        tar.extractall(tmp_path, filter="data")
    folder = tmp_path / "tomli-2.0.1"
    from_folder = [document(candidate, INFO, SETTINGS["extract"])[0]
                   for candidate in code_candidates(str(folder), SETTINGS["extract"], FileStats())]
    assert [doc["text"] for doc in from_folder] == [doc["text"] for doc in documents_of("tomli-2.0.1")]
    stats = extract_part([str(folder)], "code", INFO, SETTINGS["extract"], str(tmp_path / "docs.jsonl.zst"),
                         str(tmp_path / "quarantine.jsonl.zst"), str(tmp_path / "stats.json"))
    assert stats["docs"] == len(from_folder) and stats["code_license_classes"] == {"permissive": 1}
    assert stats["input_bytes"] == input_bytes(folder) == sum(path.stat().st_size for path in folder.rglob("*")
                                                               if path.is_file())


def slow_repository(path: Path, zero_gib: int) -> None:
    """A .tar.bz2 whose first member is `zero_gib` GiB of zeros: a few KB on disk that take bz2
    2-3 CPU-s per GiB to skip through, so reading the repository outlasts a short deadline."""
    zeros = 8 << 20
    data = tarfile.TarInfo("slow-1.0/data.bin")
    data.size = zero_gib << 30
    source = b"print('hello')\n"
    module = tarfile.TarInfo("slow-1.0/hello.py")
    module.size = len(source)
    tail = module.tobuf() + source + bytes(-len(source) % 512) + bytes(1024)  # then the end-of-archive blocks
    path.write_bytes(bz2.compress(data.tobuf()) + bz2.compress(bytes(zeros)) * (data.size // zeros)
                     + bz2.compress(tail))


@pytest.mark.parametrize("workers", [1, 2])
def test_a_repository_past_its_deadline_is_quarantined_and_the_part_goes_on(tmp_path, workers):
    """Reading runs in the part's sandbox under extract.code.timeout_s: a repository that takes
    longer is quarantined `timeout` and the next repository of the part is read as alone."""
    slow = tmp_path / "slow-1.0.tar.bz2"
    slow_repository(slow, 8)
    settings = {**SETTINGS["extract"], "code": {**CODE, "timeout_s": 2.0}}
    out = {name: str(tmp_path / f"{name}-{workers}") for name in ("docs", "quarantine", "stats")}
    children_before = cpu_seconds()
    stats = extract_part([str(slow), archive("tomli-2.0.1")], "code", INFO, settings, out["docs"],
                         out["quarantine"], out["stats"], workers=workers)
    assert cpu_seconds() - children_before < 10  # the sandboxes' CPU; reading it through takes ~20 CPU-s
    quarantined = list(read_jsonl_zst(out["quarantine"]))
    assert [(row["input"], row["reason"]) for row in quarantined] == [(str(slow), "timeout")]
    assert "2.0 s" in quarantined[0]["detail"] and stats["sandbox_restarts"] == 1
    assert [doc["text"] for doc in read_jsonl_zst(out["docs"])] == [doc["text"] for doc in documents_of("tomli-2.0.1")]
