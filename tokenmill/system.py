"""What a run needs from the system outside its virtualenv, checked before anything runs.

Two callers: the Makefile (`python3 -m tokenmill.system --install ...`), before the virtualenv
exists, so this module imports the standard library only; and the workflow's main process
(`missing(requirements(config, rules))`), before the first job of a run that has OCR to do.

Where the user may install Debian packages (root, or sudo without a password, and apt-get),
the Makefile installs what is missing; elsewhere, a cluster login node without root, nothing is
installed and the message names the exact command, a module to load, and the conda environment
(envs/tokenmill.yaml), which carries the same programs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from typing import Callable


def python_has_venv() -> bool:
    # Debian's python3 lacks ensurepip until python3-venv is installed: `python3 -m venv` fails then.
    probe = subprocess.run([sys.executable, "-c", "import ensurepip, venv"], capture_output=True)
    return probe.returncode == 0


def python_has_headers() -> bool:
    # the C extension scripts/build_blockml.sh compiles includes the Python.h of the Python that
    # makes the virtualenv (a Debian python3 has it with python3-dev; pyenv's and conda's ship it)
    return os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))


def installed_tesseract_languages() -> set[str]:
    """The language packs `tesseract --list-langs` lists (none without tesseract)."""
    if shutil.which("tesseract") is None:
        return set()
    listed = subprocess.run(["tesseract", "--list-langs"], capture_output=True, text=True).stdout
    return set(listed.split("\n", 1)[-1].split())  # the first line is a header


@dataclass(frozen=True)
class Requirement:
    """A program (or a part of one) the run needs, and where each kind of machine gets it."""
    name: str              # what is missing, as the message says it
    why: str               # which setting or command needs it
    debian: str            # the Debian package
    module: str            # `module load` name on a cluster (names vary by site)
    conda: str             # the conda-forge package (envs/tokenmill.yaml)
    present: Callable[[], bool] = field(compare=False)  # whether this machine has it now


def on_path(program: str) -> Callable[[], bool]:
    return lambda: shutil.which(program) is not None


VENV = Requirement("venv", "the virtualenv of make demo / make test", "python3-venv", "python/3.11", "python=3.11",
                   python_has_venv)
TESSERACT = Requirement("tesseract", "OCR of scanned PDF pages (extract.ocr.engine: tesseract)", "tesseract-ocr",
                        "tesseract", "tesseract", on_path("tesseract"))
GCC = Requirement("gcc", "blockml's loops in C (scripts/build_blockml.sh, run by make)", "gcc", "gcc",
                  "c-compiler", on_path("gcc"))
PYTHON_HEADERS = Requirement("Python.h", "the same build: the headers of the Python that makes the virtualenv",
                             "python3-dev", "python/3.11", "python=3.11", python_has_headers)
CHROMIUM = Requirement("chromium", "the test that renders the report in a headless browser", "chromium",
                       "chromium", "chromium", on_path("chromium"))

# What each Makefile target needs (the demo config OCRs English pages with Tesseract).
FOR_TARGET = {"demo": (VENV, GCC, PYTHON_HEADERS, TESSERACT),
              "test": (VENV, GCC, PYTHON_HEADERS, TESSERACT, CHROMIUM)}


def tesseract_language(code: str) -> Requirement:
    """Tesseract's language pack `code` (`chi_sim`: Debian's tesseract-ocr-chi-sim)."""
    package = f"tesseract-ocr-{code.replace('_', '-').lower()}"
    return Requirement(f"tesseract language {code}", f"extract.ocr.languages names {code}", package,
                       "tesseract", f"tesseract (its tessdata has {code})",
                       lambda: code in installed_tesseract_languages())


def requirements(config: dict, rules) -> list[Requirement]:
    """The programs that the jobs of `rules` (the rule names a run is about to start) need under a
    validated config: Tesseract and its language packs for rule ocr (`eng` ships with the
    tesseract-ocr package)."""
    if "ocr" not in rules:
        return []
    languages = config["extract"]["ocr"]["languages"].split("+")
    return [TESSERACT] + [tesseract_language(code) for code in languages if code != "eng"]


def missing(needed) -> list[Requirement]:
    return [requirement for requirement in needed if not requirement.present()]


def may_install() -> bool:
    """apt-get is here and this user may run it: root, or sudo without a password."""
    if shutil.which("apt-get") is None:
        return False
    if os.geteuid() == 0:
        return True
    return shutil.which("sudo") is not None and subprocess.run(["sudo", "-n", "true"], capture_output=True).returncode == 0


def debian_packages(requirements) -> list[str]:
    return sorted({requirement.debian for requirement in requirements})


def apt_command(requirements) -> str:
    sudo = "" if os.geteuid() == 0 else "sudo "
    return f"{sudo}apt-get install -y {' '.join(debian_packages(requirements))}"


def advice(absent: list[Requirement]) -> str:
    """What to run to get `absent`: the apt command, a module, or the conda environment."""
    lines = ["tokenmill: the run needs programs this machine lacks:"]
    lines += [f"  {requirement.name}: {requirement.why}" for requirement in absent]
    lines += ["Install them, then start again:",
              f"  on Debian or Ubuntu:   {apt_command(absent)}",
              f"  on a cluster node:     module load {' '.join(sorted({r.module for r in absent}))}"
              "   (names vary: `module avail tesseract`)",
              "  or with conda/mamba:   mamba env create -f envs/tokenmill.yaml && conda activate tokenmill"
              f"   (conda-forge: {', '.join(sorted({r.conda for r in absent}))})"]
    return "\n".join(lines)


def install(absent: list[Requirement]) -> bool:
    """apt-get install the Debian packages of `absent`; the package lists are refreshed first
    (a fresh machine has none). True when every requirement is then present."""
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    packages = debian_packages(absent)
    print(f"tokenmill: installing {' '.join(packages)} with apt-get", file=sys.stderr)
    for command in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "--no-install-recommends", *packages]):
        if subprocess.run(sudo + command, env=env).returncode != 0:
            return False
    return not missing(absent)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m tokenmill.system", description=__doc__.split("\n\n")[0])
    parser.add_argument("target", choices=sorted(FOR_TARGET), help="what the Makefile is about to run")
    parser.add_argument("--install", action="store_true", help="apt-get install what is missing where this user may")
    args = parser.parse_args(argv)
    absent = missing(FOR_TARGET[args.target])
    if not absent:
        return 0
    if args.install and may_install() and install(absent):
        return 0
    print(advice(missing(absent)), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
