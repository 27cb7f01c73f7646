"""Quality classifiers' scoring throughput on one core: fastText (target >= 3,000 documents
per second per core) and the byte-level encoder on the CPU (and on a GPU when one exists).

Trains both models from the bundled labels (default settings), then scores every document
extracted from the sample (repeated 4 times), timing only the scoring.

usage: python bench/bench_quality.py [--tiny]
(--tiny: the encoder trained for one epoch, the JSONL sample documents scored once)
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from common import REPO, add_tiny_option, sample_texts, timed  # noqa: E402 (puts the repository on the path)

import fasttext  # noqa: E402
import torch  # noqa: E402

from tokenmill.config import schema_settings  # noqa: E402
from tokenmill.quality.fasttext import FastTextSettings, positive_probability, train_fasttext  # noqa: E402
from tokenmill.quality.encoder import EncoderSettings, load_encoder, pick_device, score_texts, train_encoder  # noqa: E402

LABELS = str(REPO / "data" / "sample" / "quality" / "aeb-quality-labels.jsonl.gz")


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


if __name__ == "__main__":
    main()
