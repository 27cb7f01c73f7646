"""Quality classifiers' scoring throughput on one core: fastText (target >= 3,000 documents
per second per core) and the byte-level encoder on the CPU (and on a GPU when one exists).

Trains both models from the bundled labels (default settings), then scores every document
extracted from the sample (repeated 4 times), timing only the scoring. Then the encoder's
training, which every run does: CPU seconds and k-fold accuracy over all the bundled labels (each
fold the test split in turn) with the schema's patch_bytes and max_bytes against a position per
byte over 512 bytes (the encoder's size before patches).

usage: python bench/bench_quality.py [--tiny]
(--tiny: the encoder trained for one epoch, the JSONL sample documents scored once, 2 folds over the
first TINY_LABELS labels)
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import os
import resource
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from common import REPO, add_tiny_option, sample_texts, timed  # noqa: E402 (puts the repository on the path)

import fasttext  # noqa: E402
import torch  # noqa: E402

from tokenmill.config import schema_settings  # noqa: E402
from tokenmill.quality.fasttext import FastTextSettings, positive_probability, read_labelled, train_fasttext  # noqa: E402
from tokenmill.quality.encoder import EncoderSettings, load_encoder, pick_device, score_texts, train_encoder  # noqa: E402

LABELS = str(REPO / "data" / "sample" / "quality" / "aeb-quality-labels.jsonl.gz")
FOLDS = 5
TINY_LABELS = 60  # --tiny: the folds only have to run


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def encoder_folds(records: list[dict], settings: EncoderSettings, folds: int, tmp_path: Path) -> tuple[float, float]:
    """(training CPU seconds per fold, accuracy over every label): each label is in the test split of
    one fold and trains the other folds' models. A page's labels (its gold body, hq, and the rest of
    the page, lq) share a fold: the n-th page of the file is in fold n mod folds."""
    correct, cpu = 0.0, 0.0
    pages = {url: number for number, url in enumerate(dict.fromkeys(record["url"] for record in records))}
    for fold in range(folds):
        labels = tmp_path / f"fold-{fold}.jsonl.gz"
        with gzip.open(labels, "wt", encoding="utf-8") as handle:
            for record in records:
                split = "test" if pages[record["url"]] % folds == fold else "train"
                handle.write(json.dumps({**record, "split": split}) + "\n")
        start = cpu_seconds()
        metrics = train_encoder(str(labels), str(tmp_path / "fold.pt"), str(tmp_path / "fold.json"), settings)
        cpu += cpu_seconds() - start
        correct += metrics["test_accuracy"] * metrics["test_documents"]
    return cpu / folds, correct / len(records)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_tiny_option(parser)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        texts = sample_texts(tmp_path, repeat=1 if args.tiny else 4, tiny=args.tiny)
        chars = sum(len(t) for t in texts)
        fasttext_settings = schema_settings(FastTextSettings, "quality.fasttext")
        fasttext_metrics = train_fasttext(LABELS, str(tmp_path / "ft.bin"), str(tmp_path / "ft.json"), fasttext_settings)
        encoder_settings = schema_settings(EncoderSettings, "quality.encoder")
        encoder_settings = dataclasses.replace(encoder_settings, threads=1, epochs=1 if args.tiny else encoder_settings.epochs)
        encoder_metrics = train_encoder(LABELS, str(tmp_path / "enc.pt"), str(tmp_path / "enc.json"), encoder_settings)
        model = fasttext.load_model(str(tmp_path / "ft.bin"))
        seconds = timed(lambda: positive_probability(model, texts, fasttext_settings.max_chars))
        print(f"{len(texts)} real documents ({chars / len(texts):.0f} characters on average)")
        print(f"fastText (held-out accuracy {fasttext_metrics['test_accuracy']:.3f}): "
              f"{len(texts) / seconds:.0f} docs/s/core")
        torch.set_num_threads(1)
        cpu_model, settings = load_encoder(str(tmp_path / "enc.pt"), torch.device("cpu"))
        seconds = timed(lambda: score_texts(cpu_model, texts, settings, torch.device("cpu")))
        print(f"encoder on CPU, 1 thread (held-out accuracy {encoder_metrics['test_accuracy']:.3f}, "
              f"first {settings.max_bytes} bytes): {len(texts) / seconds:.0f} docs/s/core")
        device = pick_device()
        if device.type == "cuda":
            gpu_model, settings = load_encoder(str(tmp_path / "enc.pt"), device)
            score_texts(gpu_model, texts[:256], settings, device)  # warm-up
            torch.cuda.synchronize()
            seconds = timed(lambda: (score_texts(gpu_model, texts, settings, device), torch.cuda.synchronize()))
            print(f"encoder on {torch.cuda.get_device_name(0)}, bf16: {len(texts) / seconds:.0f} docs/s/GPU")
        else:
            print("no CUDA device: encoder GPU figure not measured")
        folds = 2 if args.tiny else FOLDS
        records = read_labelled(LABELS)[:TINY_LABELS if args.tiny else None]
        print(f"encoder training, 1 thread, {folds}-fold over the {len(records)} bundled labels")
        schema = (encoder_settings.patch_bytes, encoder_settings.max_bytes)
        for label, (patch, max_bytes) in ((f"patch_bytes {schema[0]}, max_bytes {schema[1]} (the schema's)", schema),
                                          ("patch_bytes 1, max_bytes 512 (a position per byte)", (1, 512))):
            cpu, accuracy = encoder_folds(records, dataclasses.replace(encoder_settings, patch_bytes=patch, max_bytes=max_bytes),
                                          folds, tmp_path)
            print(f"  {label:<52} {cpu:6.1f} CPU s per training, accuracy {accuracy:.3f}")


if __name__ == "__main__":
    main()
