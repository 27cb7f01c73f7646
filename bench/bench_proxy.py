"""Proxy training (tokenmill.ablate.proxy.train_proxy) against a plain training loop, one core.

The proxy of the demo config's ablate.proxy (2 layers x 64, micro-batch 8 x 128 tokens; one thread)
trains --steps steps on a manifest's sources at their natural token shares:
- tokenmill: `train_proxy` through the Loader (each step's samples read from the shards,
  document masks built, the state file written every checkpoint_every steps and at the end);
- plain loop: the same model, optimizer and steps on the same batches (tokens, document masks,
  labels) built in memory before the clock starts: no loader, no state file. Its losses must be
  tokenmill's to the bit;
- plain loop, causal mask only: the same without document masking (the model's own causal
  attention, positions 0..seq_len-1), to show what the document mask costs.
Each method runs --repeats times, the methods in turn; the table gives the median and the best
run, and the time the loader's samples and masks take alone (read once, untimed by the plain
loops), the part of tokenmill's overhead that no contention on the machine blurs. Then the
proxy's parameter count and its model FLOPs rate (6 x parameters per token: the matrix
multiplications of the forward and backward passes, attention's own left out).

usage: python bench/bench_proxy.py [MANIFEST] [--steps N] [--repeats N] [--tiny]
(MANIFEST: results/shards/demo-v0/manifest.json, run `make demo` first; --tiny: 3 steps, once)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from common import REPO, add_tiny_option, pin_to_one_cpu  # puts the repository on the import path

import torch  # noqa: E402
import yaml  # noqa: E402

from tokenmill.ablate.proxy import (ProxySettings, build_model, build_optimizer, packed_batch,  # noqa: E402
                                    parameter_count, train_proxy, training_step, vocab_size)
from tokenmill.config import validate  # noqa: E402
from tokenmill.hashing import sha256_file  # noqa: E402
from tokenmill.io import read_json  # noqa: E402
from tokenmill.machine import deterministic_torch  # noqa: E402
from tokenmill.trainer.loader import Loader  # noqa: E402
from tokenmill.trainer.recipe import validate_recipe  # noqa: E402

SEED = 1
OURS = "tokenmill train_proxy (loader, masks, state file)"
PLAIN = "plain loop, same batches in memory"
CAUSAL = "plain loop, causal mask only"


def natural_recipe(manifest: Path, settings: ProxySettings) -> dict:
    """One phase of the settings' budget over every source of the manifest at its token share."""
    sources = read_json(manifest)["sources"]
    total = sum(entry["n_tokens"] for entry in sources.values())
    names = sorted(sources)
    weights = {name: sources[name]["n_tokens"] / total for name in names[:-1]}
    weights[names[-1]] = 1 - sum(weights.values())  # the shares sum to 1 exactly
    return validate_recipe({
        "recipe_id": "bench-proxy", "manifest_sha256": sha256_file(manifest),
        "tokenizer_sha256": read_json(manifest)["tokenizer"]["sha256"], "seed": SEED,
        "global_batch": settings.micro_batch,
        "phases": [{"name": "main", "tokens": settings.tokens, "seq_len": settings.seq_len, "weights": weights,
                    "max_epochs": {name: 1e6 for name in names}}]})


def plain_loop(settings: ProxySettings, vocabulary: int, batches: list[dict]) -> list[float]:
    """The training of train_proxy on batches already in memory: its losses."""
    deterministic_torch(SEED, settings.threads)
    model = build_model(settings, vocabulary, SEED).train()
    optimizer = build_optimizer(model, settings)
    return [training_step(model, optimizer, batch, settings.learning_rate_at(step))
            for step, batch in enumerate(batches)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("manifest", nargs="?", default=str(REPO / "results" / "shards" / "demo-v0" / "manifest.json"))
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    add_tiny_option(parser)
    args = parser.parse_args()
    if args.tiny:
        args.steps, args.repeats = 3, 1
    manifest = Path(args.manifest)
    if not manifest.is_file():
        sys.exit(f"{manifest} is missing: run `make demo` first, or name a manifest")
    pin_to_one_cpu()
    demo = validate(yaml.safe_load((REPO / "config" / "config.yaml").read_text()))["ablate"]["proxy"]
    settings = ProxySettings.from_config({**demo, "tokens": args.steps * demo["seq_len"] * demo["micro_batch"],
                                          "threads": 1})
    loader = Loader(natural_recipe(manifest, settings), manifest)
    # as train_proxy does: threads beyond the one CPU spin against each other (100 ms a mask, not 1)
    torch.set_num_threads(settings.threads)
    vocabulary = vocab_size(loader)
    began = time.perf_counter()
    micro_batches = [loader.micro_batches(step, 0, 1, settings.micro_batch, settings.micro_batch)[0]
                     for step in range(settings.steps)]
    masked = [packed_batch(batch["tokens"], batch["cu_seqlens"]) for batch in micro_batches]
    batch_seconds = time.perf_counter() - began
    causal = [{"input_ids": batch["input_ids"], "attention_mask": None, "position_ids": None,
               "labels": torch.as_tensor(micro["tokens"][:, 1:])} for batch, micro in zip(masked, micro_batches)]

    losses = {}
    with tempfile.TemporaryDirectory() as tmp:
        runs = {OURS: lambda number: train_proxy(loader, settings, SEED, Path(tmp) / f"state-{number}.pt")[1],
                PLAIN: lambda number: plain_loop(settings, vocabulary, masked),
                CAUSAL: lambda number: plain_loop(settings, vocabulary, causal)}
        seconds = {name: [] for name in runs}
        for number in range(args.repeats):
            for name, run in runs.items():
                began = time.perf_counter()
                losses[name] = run(number)  # a state file of its own each time: none is resumed
                seconds[name].append(time.perf_counter() - began)

    tokens = settings.steps * settings.step_tokens
    parameters = parameter_count(build_model(settings, vocabulary, SEED))
    ours, plain = statistics.median(seconds[OURS]), statistics.median(seconds[PLAIN])
    print(f"{settings.steps} steps of {settings.micro_batch} x {settings.seq_len} tokens ({tokens} tokens) of "
          f"{manifest}, one core, median of {args.repeats}")
    print(f"{'method':<52}{'seconds':>9}{'tokens/s/core':>15}{'time x plain':>14}{'best s':>8}{'best x plain':>14}")
    for name, times in seconds.items():
        median = statistics.median(times)
        print(f"{name:<52}{median:>9.2f}{tokens / median:>15.0f}{median / plain:>14.2f}{min(times):>8.2f}"
              f"{min(times) / min(seconds[PLAIN]):>14.2f}")
    print(f"the loader's samples and their document masks alone: {batch_seconds:.2f} s "
          f"({batch_seconds / plain:.1%} of the plain loop's time)")
    print(f"the same losses as the plain loop, to the bit: {losses[PLAIN] == losses[OURS]}")
    embedding = vocabulary * settings.hidden
    print(f"proxy: {parameters:,} parameters ({parameters - embedding:,} besides the tied {vocabulary} x "
          f"{settings.hidden} embedding); 6N = {6 * parameters / 1e6:.1f} MFLOP a token; tokenmill "
          f"{6 * parameters * tokens / ours / 1e9:.2f} GFLOP/s")
    print(f"loss: step 1 {losses[OURS][0]:.3f}, step {settings.steps} {losses[OURS][-1]:.3f} (nats a token)")


if __name__ == "__main__":
    main()
