"""Job processes answer pyarrow's pandas probe without importing pandas (tokenmill.job)."""

import ast
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONVERT = "import pyarrow as pa; pa.table({'a': [1], 'b': ['x']}); print('pandas' in sys.modules)"


def python(code: str) -> str:
    return subprocess.run([sys.executable, "-P", "-c", code], cwd=REPO, check=True, capture_output=True,
                          text=True).stdout.split()


def test_a_job_converts_lists_to_arrow_without_importing_pandas_and_can_still_use_it():
    assert python(f"import sys; {CONVERT}") == ["True"]  # what pyarrow does unaided
    assert python(f"import sys, tokenmill.job; {CONVERT}; "
                  "print(type(pa.table({'a': [1]}).to_pandas()).__name__)") == ["False", "DataFrame"]


def test_every_job_script_imports_tokenmill_job_before_the_rest_of_tokenmill():
    for script in sorted((REPO / "scripts").glob("*.py")):
        imports = [node for node in ast.parse(script.read_text()).body if isinstance(node, (ast.Import, ast.ImportFrom))]
        names = [node.names[0].name if isinstance(node, ast.Import) else node.module for node in imports]
        first = next(name for name in names if name.startswith("tokenmill"))
        assert first == "tokenmill.job", f"{script.name}: {first} is imported before tokenmill.job"
