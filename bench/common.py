"""What the benchmarks share: the repository on the import path, a timer, the sample texts."""

from __future__ import annotations

import glob
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tokenmill.extract import PartInfo, extract_part  # noqa: E402
from tokenmill.io import read_jsonl_zst  # noqa: E402

EXTRACT_SETTINGS = {"max_bytes": 8 << 20, "fast": False, "favor_precision": True, "include_tables": True,
                    "zstd_level": 6, "fields": {"text": "text", "id": "id", "url": "url", "fetch_ts": "created"}}


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def sample_texts(tmp: Path, repeat: int = 4) -> list[str]:
    """Every document extracted from the bundled WARCs and JSONL, `repeat` times over."""
    texts = []
    inputs = [(p, "warc") for p in sorted(glob.glob(str(REPO / "data/sample/warc/*/*.warc*")))]
    inputs += [(p, "jsonl") for p in sorted(glob.glob(str(REPO / "data/sample/jsonl/*/*.jsonl.gz")))]
    for i, (path, kind) in enumerate(inputs):
        out = tmp / f"{i}.jsonl.zst"
        extract_part(path, kind, PartInfo("s", "x", str(i), "crawl", "x"), EXTRACT_SETTINGS, str(out),
                     str(tmp / f"{i}.q.jsonl.zst"), str(tmp / f"{i}.json"))
        texts += [doc["text"] for doc in read_jsonl_zst(out)]
    return texts * repeat
