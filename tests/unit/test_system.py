"""What a run needs outside its virtualenv: found before the first job, with the command that
installs it (apt-get, a module, the conda environment)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import demo_config
from tokenmill.config import validate
from tokenmill.system import FOR_TARGET, TESSERACT, advice, missing, requirements


def path_without(tmp_path: Path, *hidden: str) -> str:
    """A PATH that finds every program of this one except `hidden` (links in one folder)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for directory in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            target = os.path.join(directory, name)
            if name not in hidden and not (folder / name).exists() and os.access(target, os.X_OK):
                (folder / name).symlink_to(target)
    return str(folder)


def test_only_a_run_with_ocr_jobs_needs_tesseract_and_its_language_packs():
    config = validate({**demo_config(), "extract": {"ocr": {"languages": "eng+deu+chi_sim"}}})
    assert requirements(config, {"extract", "score"}) == []
    needed = requirements(config, {"extract", "ocr"})
    assert [r.debian for r in needed] == ["tesseract-ocr", "tesseract-ocr-deu", "tesseract-ocr-chi-sim"]


def test_a_hidden_tesseract_is_missing_and_the_advice_names_every_way_to_get_it(tmp_path, monkeypatch):
    if missing([TESSERACT]):
        pytest.skip("tesseract is not installed here")
    monkeypatch.setenv("PATH", path_without(tmp_path, "tesseract"))
    absent = missing(FOR_TARGET["demo"])
    assert absent == [TESSERACT]
    text = advice(absent)
    assert "apt-get install -y tesseract-ocr" in text
    assert "module load tesseract" in text
    assert "mamba env create -f envs/tokenmill.yaml" in text
    assert Path("envs/tokenmill.yaml").read_text().count("tesseract") >= 1  # the conda env it names has it


def test_a_language_pack_tesseract_lacks_is_named_with_its_package(tmp_path):
    if missing([TESSERACT]):
        pytest.skip("tesseract is not installed here")
    config = validate({**demo_config(), "extract": {"ocr": {"languages": "eng+zzz"}}})
    absent = missing(requirements(config, {"ocr"}))
    assert [r.debian for r in absent] == ["tesseract-ocr-zzz"]
    assert "apt-get install -y tesseract-ocr-zzz" in advice(absent)
