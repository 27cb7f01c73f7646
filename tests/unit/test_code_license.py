"""Licence detection on the 26 real release tarballs of data/bench/code-repos (see its SOURCES.md)."""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path

import pytest

from tokenmill.code.license import (NOASSERTION, deduplicated, detect_license, equivalent, license_class,
                                    license_read_size, repository_license)
from tokenmill.code.repository import read_repository

DATA = Path(__file__).resolve().parents[2] / "data" / "bench" / "code-repos"
GROUND_TRUTH = {row["file"]: row for row in csv.DictReader(open(DATA / "ground_truth.tsv", encoding="utf-8"),
                                                            delimiter="\t")}
CLASS_OF_TRUTH = {"MIT": "permissive", "BSD-3-Clause": "permissive", "Apache-2.0 OR BSD-2-Clause": "permissive",
                  "Apache-2.0 AND BSD-3-Clause": "permissive", "MPL-2.0": "weak_copyleft",
                  "LGPL-2.1-or-later": "weak_copyleft", "GPL-2.0-or-later": "copyleft", "GPL-3.0-or-later": "copyleft"}


@cache
def repository_files(name: str) -> dict[str, bytes]:
    """Every file of the tarball under its top folder."""
    return {file.path: file.data for file in read_repository(DATA / name).files}


@cache
def detected(name: str):
    return repository_license(read_repository(DATA / name))


def tarball(project: str) -> str:
    return next(name for name in GROUND_TRUTH if Path(name).name.startswith(project))


@pytest.mark.parametrize("name", sorted(GROUND_TRUTH))
def test_every_repository_gets_its_ground_truth_expression_and_class(name):
    truth = GROUND_TRUTH[name]["spdx"]
    result = detected(name)
    assert equivalent(result.expression, truth), (result.expression, truth, result.evidence)
    assert result.license_class == CLASS_OF_TRUTH[truth]


@pytest.mark.parametrize("project, expected", [
    ("Unidecode", "GPL-2.0-or-later"),  # GPL v2 text + "GPL" + classifier GPLv2+
    ("asciinema", "GPL-3.0-or-later"),  # GPL v3 text + "GNU GPLv3" + classifier GPLv3+
    ("chardet", "LGPL-2.1-or-later"),  # LGPL 2.1 text + "LGPL" + classifier LGPLv2+
    ("python-dateutil", "Apache-2.0 AND BSD-3-Clause"),  # both texts in one file; "Dual License"
    ("packaging-23.0", "Apache-2.0 OR BSD-2-Clause"),  # a pointer file offering either of two files
    ("packaging-23.1", "Apache-2.0 OR BSD-2-Clause"),
    ("idna-3.4", "BSD-3-Clause"),  # classifier only
    ("pyparsing", "MIT"),  # classifier only
    ("tomli-2.0.0", "MIT"),  # classifier only
])
def test_vague_metadata_is_settled_by_the_licence_text(project, expected):
    assert detected(tarball(project)).expression == expected


def test_the_gnu_or_later_comes_from_the_classifier_not_the_text():
    evidence = detected(tarball("Unidecode")).evidence
    license_file = next(item for item in evidence if item.source == "LICENSE")
    assert license_file.expression == "GPL-2.0-only"  # the text alone cannot say "or later"
    assert any(item.kind == "classifier" and item.expression == "GPL-2.0-or-later" for item in evidence)


def test_poetry_core_vendored_and_fixture_licences_stay_with_their_folders():
    result = detected(tarball("poetry_core"))
    assert result.expression == "MIT"
    assert [item.source for item in result.evidence if item.kind == "license_file"] == ["LICENSE"]
    assert result.path_licenses["src/poetry/core/_vendor/packaging/"] == "Apache-2.0 OR BSD-2-Clause"
    # the vendored licence that agrees with the repository's, and the test fixtures' MIT copies, are not listed
    assert not any(scope.startswith("tests/") or "/attrs/" in scope for scope in result.path_licenses)


def test_a_file_whose_tag_names_another_licence_is_listed():
    result = detected(tarball("poetry_core"))
    assert (result.file_licenses["src/poetry/core/_vendor/lark/__pyinstaller/hook-lark.py"]
            == "GPL-2.0-or-later WITH Bootloader-exception")
    assert result.file_licenses["src/poetry/core/_vendor/lark/tools/standalone.py"] == "MPL-2.0"  # a header grant
    # attrs' 50 `SPDX-License-Identifier: MIT` tags agree with the repository: none listed
    assert detected(tarball("attrs")).file_licenses == {}


def test_a_spdx_tag_overrides_in_a_made_up_repository():
    files = {"LICENSE": repository_files(tarball("six-1.16.0"))["LICENSE"],
             "pkg/core.py": b"# SPDX-License-Identifier: MIT\nx = 1\n",
             "pkg/gpl_part.c": b"/* SPDX-License-Identifier: GPL-2.0-only */\nint x;\n",
             "pkg/dual.py": b"# SPDX-License-Identifier: MIT OR Apache-2.0\n"}
    result = detect_license(files)
    assert result.expression == "MIT"
    assert result.file_licenses == {"pkg/gpl_part.c": "GPL-2.0-only", "pkg/dual.py": "MIT OR Apache-2.0"}


def test_manifests_decide_without_a_licence_file():
    assert detect_license({"package.json": b'{"name": "x", "license": "(MIT OR Apache-2.0)"}'}).expression \
        == "MIT OR Apache-2.0"
    assert detect_license({"Cargo.toml": b'[package]\nname = "x"\nlicense = "MIT/Apache-2.0"\n'}).expression \
        == NOASSERTION  # the old slash form is not SPDX
    assert detect_license({"pyproject.toml": b'[project]\nname = "x"\nlicense = "BSD-3-Clause"\n'}).expression \
        == "BSD-3-Clause"
    pkg_info = b"Metadata-Version: 2.1\nName: x\nLicense: GPL\nClassifier: License :: OSI Approved :: MIT License\n"
    assert detect_license({"PKG-INFO": pkg_info}).expression == "MIT"  # "GPL" names a family only


def test_nothing_says_is_noassertion_and_unknown():
    result = detect_license({"README.md": b"hello", "a.py": b"print(1)\n"})
    assert (result.expression, result.license_class) == (NOASSERTION, "unknown")


def test_only_licence_files_manifests_and_source_headers_are_read():
    assert license_read_size("LICENSE.APACHE") > 100_000
    assert license_read_size("src/x/typing_extensions.LICENSE") > 100_000
    assert license_read_size("PKG-INFO") > 100_000
    assert license_read_size("src/module.py") == 3000
    assert license_read_size("src/poetry/core/spdx/license.py") == 3000  # source, not a licence text
    assert license_read_size("docs/index.rst") == license_read_size("sub/PKG-INFO") == 0


@pytest.mark.parametrize("expression, expected", [
    ("MIT", "permissive"),
    ("MPL-2.0", "weak_copyleft"),
    ("GPL-3.0-or-later", "copyleft"),
    ("GPL-2.0+", "copyleft"),
    ("AGPL-3.0-only", "copyleft"),
    ("MIT OR GPL-3.0-only", "permissive"),  # a choice: the most permissive alternative
    ("LGPL-2.1-only OR GPL-2.0-only", "weak_copyleft"),
    ("MIT AND GPL-3.0-only", "copyleft"),  # both apply: the most restrictive part
    ("Apache-2.0 AND MPL-2.0", "weak_copyleft"),
    ("(MIT OR GPL-2.0-only) AND LGPL-3.0-only", "weak_copyleft"),
    ("GPL-2.0-or-later WITH Bootloader-exception", "copyleft"),
    ("MIT AND LicenseRef-proprietary", "unknown"),
    ("MIT OR LicenseRef-proprietary", "permissive"),
    (NOASSERTION, "unknown"),
    ("", "unknown"),
    ("not an ( expression", "unknown"),
])
def test_license_class(expression, expected):
    assert license_class(expression) == expected


def test_detection_is_deterministic():
    name = tarball("poetry_core")
    assert detect_license(repository_files(name)) == detect_license(dict(reversed(repository_files(name).items())))


# ---------------------------------------------------------------- real archives outside code-repos
# data/bench/code-license-extra (SOURCES.md there): each case was read wrong before issue 32

EXTRA = DATA.parent / "code-license-extra"
EXTRA_TRUTH = {row["file"]: row for row in csv.DictReader(open(EXTRA / "ground_truth.tsv", encoding="utf-8"),
                                                          delimiter="\t")}


@cache
def detected_extra(project: str):
    name = next(name for name in EXTRA_TRUTH if Path(name).name.startswith(project))
    return repository_license(read_repository(EXTRA / name)), EXTRA_TRUTH[name]["spdx"]


@pytest.mark.parametrize("project, license_class", [
    ("pyudev", "weak_copyleft"),  # LGPL-2.1 text, the FSF's address written "51 Franklin St"
    ("simplejson", "permissive"),  # "dual-licensed ... MIT license, or the Academic Free License" and both texts
    ("pycairo", "weak_copyleft"),  # a pointer file offering LGPL-2.1 or MPL-1.1, the manifest saying the same
    ("cryptography", "permissive"),  # a pointer offering LICENSE.APACHE or LICENSE.BSD; LICENSE.PSF binds too
])
def test_real_archives_get_their_ground_truth_expression_and_class(project, license_class):
    result, truth = detected_extra(project)
    assert equivalent(result.expression, truth), (result.expression, truth)
    assert result.license_class == license_class


def test_a_licence_text_with_another_address_is_matched_whole_and_its_mentions_are_not_read():
    result, _ = detected_extra("pyudev")
    copying = next(item for item in result.evidence if item.source == "COPYING")
    # the LGPL's own words name "the ordinary GNU General Public License, version 2": not a licence of pyudev
    assert copying.expression == "LGPL-2.1-only" and copying.score > 0.95
    assert result.expression == "LGPL-2.1-or-later"  # each licence once, widened by the sources' grants


def test_one_file_holding_two_texts_and_offering_a_choice_is_an_or():
    result, _ = detected_extra("simplejson")
    assert next(item for item in result.evidence if item.source == "LICENSE.txt").expression == "AFL-2.1 OR MIT"


def test_a_manifest_choice_stands_and_a_pointer_offers_only_the_files_it_names():
    assert detected_extra("pycairo")[0].expression == "LGPL-2.1-only OR MPL-1.1"
    assert detected_extra("cryptography")[0].expression == "PSF-2.0 AND (Apache-2.0 OR BSD-3-Clause)"


def test_identical_terms_are_said_once():
    assert deduplicated("GPL-2.0-only AND LGPL-2.1-or-later AND LGPL-2.1-or-later") == "GPL-2.0-only AND LGPL-2.1-or-later"
    assert license_class(deduplicated("LGPL-2.1-or-later AND LGPL-2.1-or-later")) == "weak_copyleft"
