"""The layout a newcomer walks: one name per rule for its script, logs, benchmarks and outputs
(tokenmill.layout), and a library without import cycles."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tokenmill import layout

ROOT = Path(__file__).resolve().parents[2]
_RULE = re.compile(r"^rule (\w+):\n(.*?)(?=^rule |\Z)", re.M | re.S)
# Folders named for what they hold, shared by two rules each (see tokenmill.layout).
SHARED_FOLDERS = {"plan": "plan/", "plan_snapshot": "plan/", "write_shards": "shards/", "manifest": "shards/",
                  "rulegraph": "report/", "report": "report/"}
# Outputs in a folder of their own name: minhash_cluster counts each snapshot's host_stats in its MPI
# job and writes them where the rule of that name wrote them before
OWN_FOLDER_OUTPUTS = {"host_stats"}


def _rules() -> dict[str, tuple[str, str]]:
    """rule name -> (its .smk file's stage name, its body)."""
    return {name: (path.stem, body) for path in sorted((ROOT / "rules").glob("*.smk"))
            for name, body in _RULE.findall(path.read_text(encoding="utf-8"))}


RULES = _rules()


def test_every_rule_is_a_stage_of_the_layout_and_back():
    stages = layout.STAGES + layout.ABLATION_STAGES
    assert sorted(RULES) == sorted(stage.name for stage in stages)
    declared = {name for stage in stages for name in stage.outputs}
    assert declared <= set(layout.OUTPUTS)
    assert set(layout.PART_OUTPUTS) <= set(layout.OUTPUTS)


@pytest.mark.parametrize("rule", sorted(RULES))
def test_a_rule_has_one_name_for_script_log_benchmark_and_outputs(rule):
    stage, body = RULES[rule]
    scripts = re.findall(r"\{SCRIPTS\}/(\w+)\.py", body)
    assert scripts in ([rule], []), f"{rule} runs {scripts}"
    assert scripts or "run:" in body, f"{rule} neither runs scripts/{rule}.py nor a run: block"
    logged = re.search(rf'\{{LOGS\}}/{rule}[/.]|part_log\("{rule}"', body)
    assert logged, f"{rule}'s log is not under logs/{rule}"
    if "localrule: True" not in body:
        assert re.search(rf'\{{BENCH\}}/{rule}[/.]|part_bench\("{rule}"', body), f"{rule} has no benchmark"
    folder = SHARED_FOLDERS.get(rule, f"{rule}/")
    for name in next(s for s in layout.STAGES + layout.ABLATION_STAGES if s.name == rule).outputs:
        expected = f"{name}/" if name in OWN_FOLDER_OUTPUTS else folder
        assert (layout.OUTPUTS[name] + "/").startswith(expected), f"{rule} writes {layout.OUTPUTS[name]}"


def test_every_script_belongs_to_a_rule():
    assert sorted(path.stem for path in (ROOT / "scripts").glob("*.py")) == \
        sorted(rule for rule, (_, body) in RULES.items() if f"{{SCRIPTS}}/{rule}.py" in body)


def _imports() -> dict[str, set[str]]:
    """tokenmill module -> the tokenmill modules it imports (at any depth of the file)."""
    modules = {}
    for path in sorted((ROOT / "tokenmill").rglob("*.py")):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        modules[name] = path
    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("tokenmill"):
                targets = [f"{node.module}.{alias.name}" for alias in node.names] + [node.module]
                found.add(next(t for t in targets if t in modules))
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names if alias.name in modules)
        graph[name] = found - {name}
    return graph


def test_the_library_has_no_import_cycles():
    graph = _imports()
    state: dict[str, str] = {}

    def visit(module, path):
        state[module] = "open"
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                pytest.fail("import cycle: " + " -> ".join(path[path.index(target):] + [target]))
            if target not in state:
                visit(target, path + [target])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])


# Modules every stage uses: they import only each other, never a stage (no upward imports).
PRIMITIVES = {"tokenmill.hashing", "tokenmill.io", "tokenmill.config", "tokenmill.layout", "tokenmill.progress",
              "tokenmill.faults", "tokenmill.unicode_script", "tokenmill.bloom", "tokenmill.sidecar",
              "tokenmill.timestamps"}


def test_shared_modules_import_no_stage():
    graph = _imports()
    assert {module: sorted(graph[module] - PRIMITIVES) for module in PRIMITIVES if graph[module] - PRIMITIVES} == {}
    assert graph["tokenmill.hashing"] == set() and graph["tokenmill.layout"] == set()


def test_only_the_mpi_jobs_initialise_mpi():
    """A SLURM job step not launched for MPI still carries the PMI settings of srun, and MPICH's
    MPI_Init, run by importing mpi4py, aborts there (the report job did, once it imported the
    serial union-find through a module of the MPI components). Every script of a rule without
    the `mpi` resource imports cleanly where PMI_FD points at no open descriptor."""
    mpi_scripts = {script for _, body in RULES.values() if "{resources.mpi}" in body
                   for script in re.findall(r"\{SCRIPTS\}/(\w+\.py)", body)}
    assert mpi_scripts == {"minhash_cluster.py", "cross_snapshot_index.py", "select.py", "chain_groups.py"}
    others = sorted(path for path in (ROOT / "scripts").glob("*.py") if path.name not in mpi_scripts)
    imports = ("import importlib.util, sys\n"
               f"for n, path in enumerate({[str(path) for path in others]!r}):\n"
               "    spec = importlib.util.spec_from_file_location(f'script{n}', path)\n"
               "    spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
               "print('mpi4py' in sys.modules)")
    for code, expected in ((imports, "False"), ("import mpi4py.MPI", None)):
        run = subprocess.run([sys.executable, "-P", "-c", code], cwd=ROOT, capture_output=True, text=True,
                             env={**os.environ, "PMI_FD": "99", "PYTHONPATH": str(ROOT)}, timeout=300)
        if expected is None:  # what the environment does to a script that does import it
            assert run.returncode != 0 and "PMI" in run.stderr + run.stdout
        else:
            assert run.returncode == 0 and run.stdout.strip() == expected, run.stderr[-2000:]
