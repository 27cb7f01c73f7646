# make demo: the system programs (apt-get where this user may, else the exact command to run, in
# the first seconds), virtualenv + pinned dependencies, blockml's loops compiled, then the whole
# graph on the bundled sample.
# make test: the same plus test dependencies, then the whole suite.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# --no-compile: a module's bytecode is written when it is first imported, instead of pip compiling
# every module of torch and transformers at install (~70-100 CPU-s, serial), most never imported.
# make demo then writes it for every module the graph imports; a virtualenv that other users share
# read-only is compiled once by its owner: .venv/bin/python -m compileall -q -j 0 .venv
PIP_INSTALL := $(BIN)/python -m pip --disable-pip-version-check install --no-compile

.PHONY: demo test test-unit clean-results

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' || { echo "tokenmill needs Python 3.11 (set PYTHON=python3.11)"; exit 1; }
	$(PYTHON) -m venv $(VENV) || { echo "could not create a virtualenv: on Debian, apt-get install python3-venv"; exit 1; }

$(VENV)/.runtime: requirements.txt pyproject.toml | $(BIN)/python
	$(PIP_INSTALL) -r requirements.txt
	$(PIP_INSTALL) --no-deps -e .
	touch $@

# blockml's walk, text features and forest in C, against the lexbor headers of the pinned selectolax
# (Cython and the headers are fetched into build/blockml); blockml's Python gives the same without it
BLOCKML_C := tokenmill/extract/_blockml$(shell $(PYTHON) -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
$(BLOCKML_C): tokenmill/extract/_blockml.pyx tokenmill/extract/_blockml_lxb.h scripts/build_blockml.sh $(VENV)/.runtime
	PYTHON=$(BIN)/python scripts/build_blockml.sh

$(VENV)/.test: requirements-test.txt $(VENV)/.runtime
	$(PIP_INSTALL) -r requirements-test.txt
	touch $@

demo:
	@$(PYTHON) -m tokenmill.system demo --install
	@$(MAKE) --no-print-directory $(VENV)/.runtime $(BLOCKML_C)
	$(BIN)/snakemake --cores all
	$(BIN)/python -m tokenmill where config/config.yaml

# Two workers (pytest-xdist); each finished run the tests read is built once (tests/conftest.py).
test:
	@$(PYTHON) -m tokenmill.system test --install
	@$(MAKE) --no-print-directory $(VENV)/.test $(BLOCKML_C)
	$(BIN)/python -m pytest -ra -n 2 $(PYTEST_ARGS)

# The inner loop: the unit tier, no Snakemake run (one stage: make test-unit PYTEST_ARGS="-k robots").
test-unit: $(VENV)/.test $(BLOCKML_C)
	$(BIN)/python -m pytest -ra -m unit -n 2 $(PYTEST_ARGS)

clean-results:
	rm -rf results .snakemake
