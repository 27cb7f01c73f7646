"""Quality classifier on CPU: a fastText supervised model (DCLM style), trained from a
labelled JSONL ({"label": "hq"|"lq", "split": "train"|"test", "text": ...} per line) and
scoring every document with the probability of the positive class."""

from __future__ import annotations

import gzip
import json
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import fasttext
import numpy as np
import pyarrow as pa

from tokenmill.io import atomic_output, write_json
from tokenmill.langid import bundled_model_path, predict

POSITIVE = "hq"
MAX_CHARS = 20_000  # of a document, read by training and scoring alike
SCHEMA = pa.schema([("doc_id", pa.string()), ("quality_fasttext", pa.float32())])


@dataclass(frozen=True)
class FastTextSettings:
    """The `quality.fasttext` config section (the schema holds its defaults), and two constants
    that are no config key (keyword-only, in their place: the metrics list the settings in order)."""

    epoch: int
    lr: float
    word_ngrams: int
    dim: int
    bucket: int
    min_count: int = field(default=1, kw_only=True)
    max_chars: int = field(default=MAX_CHARS, kw_only=True)
    seed: int


def prepare(text: str, max_chars: int) -> str:
    """One lower-cased line, as fastText reads it: every run of whitespace is one space."""
    return " ".join(text[:max_chars].lower().split())


def read_labelled(path: str) -> list[dict]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    for number, record in enumerate(records, start=1):
        if record.get("label") not in (POSITIVE, "lq") or record.get("split") not in ("train", "test"):
            raise ValueError(f"{path}:{number}: need label hq|lq and split train|test, got "
                             f"label={record.get('label')!r} split={record.get('split')!r}")
    return records


def check_label_counts(labels_path: str, min_labels: int) -> None:
    """Refuse annotate's labels when a class has fewer than `min_labels` train labels."""
    counts = Counter(label["label"] for label in read_labelled(labels_path) if label["split"] == "train")
    if min(counts["hq"], counts["lq"]) < min_labels:
        raise ValueError(f"quality.encoder.train_on: annotate parsed {counts['hq']} hq and {counts['lq']} lq train "
                         f"labels into {labels_path}, fewer than synthetic.annotate.min_labels ({min_labels}) of each: "
                         "annotate more documents (synthetic.annotate.max_docs) or with a generator that follows the "
                         "rubric")


# labels of each class a language needs among a classifier's training labels before the classifier
# may judge it: fewer say nothing of how the classifier reads that language
MIN_LANGUAGE_LABELS = 20


def label_languages(records: list[dict]) -> list[str]:
    """The languages (lid.176, bundled model) with at least MIN_LANGUAGE_LABELS train labels of each
    class: the languages a classifier trained on `records` may judge, and no other."""
    train = [record for record in records if record["split"] == "train"]
    langs, _ = predict([record["text"] for record in train], bundled_model_path(), 2000)
    counts = Counter((lang, record["label"]) for lang, record in zip(langs, train))
    return sorted(lang for lang in {lang for lang, _ in counts}
                  if min(counts[lang, POSITIVE], counts[lang, "lq"]) >= MIN_LANGUAGE_LABELS)


def train_fasttext(labelled_path: str, model_path: str, metrics_path: str, settings: FastTextSettings) -> dict:
    """Train on the `train` split with one thread (deterministic for a seed); report accuracy
    on the `test` split."""
    records = read_labelled(labelled_path)
    with tempfile.TemporaryDirectory() as tmp:
        train_file = Path(tmp) / "train.txt"
        train_file.write_text("".join(f"__label__{r['label']} {prepare(r['text'], settings.max_chars)}\n"
                                      for r in records if r["split"] == "train"), encoding="utf-8")
        model = fasttext.train_supervised(
            input=str(train_file), epoch=settings.epoch, lr=settings.lr, wordNgrams=settings.word_ngrams,
            dim=settings.dim, bucket=settings.bucket, minCount=settings.min_count, thread=1, seed=settings.seed,
            verbose=0)
    test = [r for r in records if r["split"] == "test"]
    scores = positive_probability(model, [r["text"] for r in test], settings.max_chars)
    correct = int(sum((score >= 0.5) == (r["label"] == POSITIVE) for score, r in zip(scores, test)))
    metrics = {"train_documents": sum(r["split"] == "train" for r in records), "test_documents": len(test),
               "test_accuracy": correct / len(test) if test else None, "languages": label_languages(records),
               "settings": asdict(settings)}
    with atomic_output(model_path) as temp:
        model.save_model(str(temp))
    write_json(metrics_path, metrics)
    return metrics


def positive_probability(model, texts: list[str], max_chars: int) -> np.ndarray:
    if not texts:
        return np.zeros(0, dtype=np.float32)
    labels, probs = model.predict([prepare(t, max_chars) for t in texts], k=2)
    out = np.empty(len(texts), dtype=np.float32)
    for i, (names, values) in enumerate(zip(labels, probs)):
        by_label = dict(zip(names, values))
        out[i] = min(1.0, float(by_label.get(f"__label__{POSITIVE}", 1.0 - by_label.get("__label__lq", 0.0))))
    return out


def quality_rows(docs: list[dict], model, max_chars: int) -> pa.Table:
    """One row of SCHEMA per document, in order."""
    return pa.Table.from_pydict({"doc_id": [doc["doc_id"] for doc in docs],
                                 "quality_fasttext": positive_probability(model, [doc["text"] for doc in docs],
                                                                          max_chars)}, schema=SCHEMA)
