"""Imported first by every job script (scripts/*.py), before anything uses pyarrow.

The first time pyarrow converts a Python list (pa.array, pa.table, from_pylist: every side-car
writer), it imports pandas to ask whether the list is a pandas object: about 0.6 CPU-seconds, in
every one of a run's hundreds of job processes, and no job ever hands pyarrow a pandas object.
Here that question is answered "no pandas" once, without importing it. Only the probe is
skipped: a conversion that needs pandas (Table.to_pandas) still imports it. Library users'
processes, which may pass pandas objects, never import this module.
"""

import sys

import pyarrow as pa


class _NoPandas:
    """A module finder under which `import pandas` raises ImportError."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "pandas":
            raise ImportError("pandas is not probed in a tokenmill job")
        return None


def _answer_pandas_probe() -> None:
    if "pandas" in sys.modules:
        return
    sys.meta_path.insert(0, _NoPandas)
    try:
        pa.array([])  # pyarrow's probe fails, and it records "no pandas"
    finally:
        sys.meta_path.remove(_NoPandas)


_answer_pandas_probe()
