"""tokenmill.code: the repository reader, the file rejection and the parse gate, on the real
release tarballs of data/bench/code-repos (provenance and ground truth in its SOURCES.md) and on
hostile archives made here."""

import csv
import io
import tarfile
import zipfile
from functools import lru_cache
from pathlib import Path

import pytest

from tokenmill.code.files import DATA, GENERATED, MINIFIED, VENDORED, classify, has_generated_header, reject_files
from tokenmill.code.parse import UNPARSEABLE, ParseGate, parse_gate, select_code
from tokenmill.code.repository import RepoFile, Repository, read_repository

REPOS = Path(__file__).resolve().parents[2] / "data" / "bench" / "code-repos"
GROUND_TRUTH = list(csv.DictReader((REPOS / "ground_truth.tsv").open(encoding="utf-8"), delimiter="\t"))
# the ground truth's regex scan also hit these; they are not generated (tokenmill/code/files.py says why)
NOT_GENERATED = {("tomli-2.0.0.tar.gz", "tomli/__init__.py"), ("tomli-2.0.1.tar.gz", "src/tomli/__init__.py"),
                 ("wcwidth-0.2.6.tar.gz", "wcwidth/__init__.py")}


@lru_cache(maxsize=None)
def selection(archive: str):
    repository = read_repository(REPOS / archive)
    return repository, select_code(repository)[0]


def listed(row: dict, column: str) -> list[str]:
    return [] if row[column] in ("", "-") else row[column].split(",")


def expected(column: str):
    return [(row["file"], path) for row in GROUND_TRUTH for path in listed(row, column)]


def reason(archive: str, path: str) -> str | None:
    repository, chosen = selection(archive)
    reasons = {r.path: r.reason for r in chosen.rejected if r.path == path or r.path.startswith(path + "/")}
    assert reasons, f"{path} is not rejected (or not in {archive})"
    return set(reasons.values())


@pytest.mark.parametrize("archive,path", expected("vendored_paths"))
def test_every_ground_truth_vendored_path_is_rejected_vendored(archive, path):
    assert reason(archive, path) == {VENDORED}


@pytest.mark.parametrize("archive,path", expected("generated_files_marked"))
def test_every_ground_truth_generated_file_is_rejected_generated(archive, path):
    name = Path(archive).name
    if (name, path) in NOT_GENERATED:
        kept = {file.path for file in selection(archive)[1].kept}
        assert path in kept  # the documented false positives of the scan
    elif "/_vendor/" in path:
        assert reason(archive, path) == {VENDORED}  # vendored is decided first
    else:
        assert reason(archive, path) == {GENERATED}


@pytest.mark.parametrize("archive,path", expected("minified_files"))
def test_every_ground_truth_minified_file_is_rejected_minified(archive, path):
    root = "package/" if archive.startswith("npm/") else ""
    assert reason(archive, path.removeprefix(root)) == {MINIFIED}


def test_hand_written_c_and_first_party_packages_are_kept():
    kept = {f.path for f in selection("pypi/MarkupSafe-2.1.3.tar.gz")[1].kept}
    assert "src/markupsafe/_speedups.c" in kept
    poetry = {f.path for f in selection("pypi/poetry_core-1.6.1.tar.gz")[1].kept}
    # a first-party subpackage called `packages` imports its host, so it is not vendored
    assert {"src/poetry/core/packages/dependency.py", "tests/packages/test_dependency.py"} <= poetry
    assert "six.py" in {f.path for f in selection("pypi/six-1.16.0.tar.gz")[1].kept}


def test_sphinx_conf_is_kept_and_unmarked_build_outputs_are_rejected_their_sources_kept():
    assert "docs/conf.py" in {f.path for f in selection("pypi/chardet-5.1.0.tar.gz")[1].kept}
    for archive, built, sources in (
            ("npm/js-yaml-4.1.0.tgz", ["dist/js-yaml.js", "dist/js-yaml.mjs"], ["lib/loader.js", "index.js"]),
            ("npm/underscore-1.13.6.tgz", ["amd/each.js", "cjs/each.js", "underscore.js", "underscore-umd.js"],
             ["modules/each.js", "modules/index.js"])):
        chosen = selection(archive)[1]
        assert [chosen.reason_of(path) for path in built] == [GENERATED] * len(built)
        kept = {file.path for file in chosen.kept}
        assert set(sources) <= kept
    # a root module that shares only a few lines with the package (conftest.py, six.py) is source
    assert "conftest.py" in {file.path for file in selection("pypi/attrs-23.1.0.tar.gz")[1].kept}
    assert "six.py" in {file.path for file in selection("pypi/six-1.16.0.tar.gz")[1].kept}


@pytest.mark.parametrize("archive,paths", [
    ("pypi/Unidecode-1.3.6.tar.gz", ["unidecode/x000.py", "unidecode/x4e.py", "unidecode/x0ff.py"]),
    ("pypi/chardet-5.1.0.tar.gz", ["chardet/langrussianmodel.py", "chardet/big5freq.py",
                                   "tests/windows-1252/github_bug_9.txt", "tests/UTF-16LE/plane1-utf-16le.html"]),
    ("pypi/certifi-2023.7.22.tar.gz", ["certifi/cacert.pem"]),
])
def test_data_files_that_look_like_code_are_rejected_data(archive, paths):
    repository, chosen = selection(archive)
    present = {f.path for f in repository.files}
    for path in paths:
        if path in present:
            assert reason(archive, path) == {DATA}, path
    assert sum(path in present for path in paths) >= len(paths) - 1


def test_unidecode_tables_are_all_data_and_its_code_is_kept():
    repository, chosen = selection("pypi/Unidecode-1.3.6.tar.gz")
    tables = [f.path for f in repository.files if f.path.startswith("unidecode/x")]
    assert len(tables) > 180 and all(chosen.reason_of(path) == DATA for path in tables)
    assert "unidecode/__init__.py" in {f.path for f in chosen.kept}


def test_chardet_test_corpus_is_data_and_the_zoneinfo_tarball_binary():
    repository, chosen = selection("pypi/chardet-5.1.0.tar.gz")
    corpus = [f.path for f in repository.files if f.path.startswith("tests/") and not f.path.endswith(".py")]
    assert len(corpus) > 400 and {chosen.reason_of(path) for path in corpus} == {DATA}
    assert reason("pypi/python-dateutil-2.8.2.tar.gz", "dateutil/zoneinfo/dateutil-zoneinfo.tar.gz") == {"binary"}


@pytest.mark.parametrize("row", GROUND_TRUTH, ids=[row["file"] for row in GROUND_TRUTH])
def test_nothing_is_silently_dropped(row):
    path = REPOS / row["file"]
    repository, chosen = selection(row["file"])
    with tarfile.open(path) as archive:
        members = {m.name.split("/", 1)[1] for m in archive.getmembers() if not m.isdir()}
    assert {f.path for f in chosen.kept} | {r.path for r in chosen.rejected} == members
    assert len(chosen.kept) + len(chosen.rejected) == len(members)
    assert sum(chosen.rejections.values()) == len(chosen.rejected)


def test_files_come_in_sorted_order_and_the_same_every_time():
    first = read_repository(REPOS / "pypi/click-8.1.3.tar.gz")
    paths = [f.path for f in first.files]
    assert paths == sorted(paths)
    again = read_repository(REPOS / "pypi/click-8.1.3.tar.gz")
    assert [(f.path, f.sha256) for f in again.files] == [(f.path, f.sha256) for f in first.files]


def test_provenance_of_an_sdist_and_an_npm_tarball():
    click = read_repository(REPOS / "pypi/click-8.1.3.tar.gz")
    assert (click.name, click.version, click.declared_license) == ("click", "8.1.3", "BSD-3-Clause")
    assert click.url and click.license_files == ("LICENSE.rst",)
    setup = next(f for f in click.files if f.path == "setup.py")
    assert setup.provenance()["language"] == "Python" and len(setup.provenance()["sha256"]) == 64
    mustache = read_repository(REPOS / "npm/mustache-4.2.0.tgz")
    assert (mustache.name, mustache.version, mustache.declared_license) == ("mustache", "4.2.0", "MIT")
    assert next(f for f in mustache.files if f.path == "bin/mustache").language.name == "JavaScript"  # #!


def test_features_of_click_8_1_3():
    _, features = select_code(read_repository(REPOS / "pypi/click-8.1.3.tar.gz"))
    assert features.file_count == 107 and features.members == 124
    assert features.languages["Python"]["files"] == 63
    assert {"Python", "reStructuredText", "Text"} <= set(features.languages)
    assert features.parse_failure_share == 0.0
    assert 0.15 < features.test_file_share < 0.3
    assert features.bytes == sum(entry["bytes"] for entry in features.languages.values())


def test_the_symlink_in_idna_3_4_is_skipped_with_a_reason():
    repository, chosen = selection("pypi/idna-3.4.tar.gz")
    assert chosen.reason_of("tools/intranges.py") == "symlink"


# ---------------------------------------------------------------------------------------------
# hostile archives

def add(archive: tarfile.TarFile, name: str, data: bytes = b"x = 1\n", kind=tarfile.REGTYPE, link: str = ""):
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname = kind, (len(data) if kind == tarfile.REGTYPE else 0), link
    archive.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)


def test_hostile_tar_members_get_reasons_not_exceptions(tmp_path):
    path = tmp_path / "evil-1.0.tar.gz"
    with tarfile.open(path, "w:gz") as archive:
        add(archive, "evil-1.0/ok.py")
        add(archive, "evil-1.0/../../etc/passwd.py")
        add(archive, "/abs/olute.py")
        add(archive, "evil-1.0/link.py", kind=tarfile.SYMTYPE, link="/etc/passwd")
        add(archive, "evil-1.0/hard.py", kind=tarfile.LNKTYPE, link="evil-1.0/ok.py")
        add(archive, "evil-1.0/fifo", kind=tarfile.FIFOTYPE)
        add(archive, "evil-1.0/big.py", b"#" * 5000)
        add(archive, "evil-1.0/ok.py", b"y = 2\n")  # the same path again
    repository = read_repository(path, max_file_bytes=4096)
    reasons = {skipped.path: skipped.reason for skipped in repository.skipped}
    assert [f.path for f in repository.files] == ["ok.py"] and repository.files[0].data == b"x = 1\n"
    assert reasons == {"evil-1.0/../../etc/passwd.py": "unsafe_path", "/abs/olute.py": "unsafe_path",
                       "link.py": "symlink", "hard.py": "hardlink", "fifo": "special_file", "big.py": "too_large",
                       "ok.py": "duplicate_path"}
    assert (repository.name, repository.version) == ("evil", "1.0")
    chosen = reject_files(repository)
    assert len(chosen.kept) + len(chosen.rejected) == 8


def test_total_bytes_and_file_count_caps_cut_in_path_order(tmp_path):
    path = tmp_path / "many.tar"
    with tarfile.open(path, "w") as archive:
        for index in reversed(range(6)):
            add(archive, f"many/m{index}.py", b"x" * 100)
    by_bytes = read_repository(path, max_total_bytes=250)
    assert [f.path for f in by_bytes.files] == ["m0.py", "m1.py"]
    assert {s.reason for s in by_bytes.skipped} == {"over_total_bytes"}
    by_count = read_repository(path, max_files=3)
    assert [f.path for f in by_count.files] == ["m0.py", "m1.py", "m2.py"]
    assert [s.reason for s in by_count.skipped] == ["over_file_count"] * 3


def test_hostile_zip_members_and_a_truncated_tar(tmp_path):
    path = tmp_path / "z.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("z/a.py", "a = 1\n")
        archive.writestr("z/../escape.py", "b = 2\n")
        link = zipfile.ZipInfo("z/link")
        link.external_attr = (0o120777 << 16)
        archive.writestr(link, "/etc/passwd")
    repository = read_repository(path)
    assert [f.path for f in repository.files] == ["a.py"]
    assert {s.reason for s in repository.skipped} == {"unsafe_path", "symlink"}

    whole = (REPOS / "pypi/six-1.16.0.tar.gz").read_bytes()
    cut = tmp_path / "six-1.16.0.tar.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    broken = read_repository(cut)  # what came before the break is kept, the break is a reason
    assert broken.files and broken.skipped[-1].reason == "unreadable_archive"


def test_a_directory_reads_like_an_archive(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("x = 1\n")
    (tmp_path / "pkg" / "link.py").symlink_to(tmp_path / "pkg" / "__init__.py")
    repository = read_repository(tmp_path)
    assert [f.path for f in repository.files] == ["pkg/__init__.py"]
    assert [(s.path, s.reason) for s in repository.skipped] == [("pkg/link.py", "symlink")]


# ---------------------------------------------------------------------------------------------
# rules on made-up files

@pytest.mark.parametrize("header,generated", [
    ("// Code generated by protoc-gen-go. DO NOT EDIT.\npackage x\n", True),
    ("# -*- coding: utf-8 -*-\n# Generated by the protocol buffer compiler.  DO NOT EDIT!\n", True),
    ("/* @generated */\n", True),
    ('__version__ = "1.0"  # DO NOT EDIT THIS LINE MANUALLY. LET bump2version UTILITY DO IT\n', False),
    ("# Note that not all values are present in this\n# autogenerated file.\n", False),
    ("# tables loaded from version.json,\n# generated by bin/update-tables.py, but not here\n", False),
])
def test_generated_headers(header, generated):
    assert has_generated_header(header) is generated


def test_names_decide_lockfiles_protobuf_and_vendored_folders():
    assert classify(RepoFile("package-lock.json", b"{}")) == "lockfile"
    assert classify(RepoFile("api/service_pb2.py", b"x = 1\n")) == "generated"
    assert classify(RepoFile("web/node_modules/left-pad/index.js", b"x\n")) == "vendored"
    assert classify(RepoFile("src/app.py", b"def f():\n    return 1\n")) is None


def test_an_unparseable_file_is_rejected_and_py2_print_is_tolerated():
    broken = RepoFile("broken.py", b"def f(:\n  ]]] )))\n" * 20)
    python2 = RepoFile("old.py", b"import sys\n" + b"def f(x):\n    return x + 1\n" * 40 + b'print "done"\n')
    chosen = reject_files(Repository("r", None, "-", (broken, python2)))
    result = parse_gate(chosen, ParseGate())
    assert result.selection.reason_of("broken.py") == UNPARSEABLE
    assert [f.path for f in result.selection.kept] == ["old.py"]
    assert (result.parsed, result.unparseable) == (2, 1)


# real archives outside code-repos: data/bench/code-license-extra (SOURCES.md there)

EXTRA = REPOS.parent / "code-license-extra" / "pypi"


@lru_cache(maxsize=None)
def extra_reasons(archive: str) -> dict[str, str | None]:
    repository = read_repository(EXTRA / archive)
    chosen = reject_files(repository)
    return {file.path: chosen.reason_of(file.path) for file in repository.files}


def test_a_package_bundled_under_its_own_name_is_vendored():
    reasons = extra_reasons("pycparser-2.21.tar.gz")
    # PLY under pycparser/ply/: never imports pycparser, its copyright names only David Beazley
    assert {path: why for path, why in reasons.items() if path.startswith("pycparser/ply/")} == {
        f"pycparser/ply/{name}.py": VENDORED for name in ("__init__", "cpp", "ctokens", "lex", "yacc", "ygen")}
    assert reasons["pycparser/c_parser.py"] is None  # the host, which imports `.ply`
    isort = extra_reasons("isort-5.12.0.tar.gz")
    # tomli with its own LICENSE under isort/_vendored/
    assert isort["isort/_vendored/tomli/_parser.py"] == VENDORED and isort["isort/main.py"] is None


def test_the_hosts_glue_in_a_vendoring_folder_is_kept_and_the_bundled_libraries_are_not():
    reasons = extra_reasons("requests-2.10.0.tar.gz")
    assert reasons["requests/packages/__init__.py"] is None  # requests' own stub: `from . import urllib3`
    assert reasons["requests/packages/urllib3/connectionpool.py"] == VENDORED
    assert reasons["requests/packages/urllib3/contrib/pyopenssl.py"] == VENDORED
    assert reasons["requests/packages/chardet/universaldetector.py"] == VENDORED


def test_a_table_automatically_created_by_a_tool_is_generated_not_minified():
    reasons = extra_reasons("pycparser-2.21.tar.gz")
    # "# lextab.py. This file automatically created by PLY (version 3.10). Don't edit!" then one long line
    assert reasons["pycparser/lextab.py"] == GENERATED
    assert has_generated_header("# lextab.py. This file automatically created by PLY (version 3.10). Don't edit!\n")
