"""Side-by-side: the tokenmill loader against megatron-core's GPTDataset on the same shards.

Both read the demo run's shards (results/shards/demo-v0, run `make demo` first) for the
recipe's `anneal` phase (aeb_articles and govuk, seq_len 256) on one core:
- tokenmill: `Loader.sample(i)` for consecutive global indices of the phase (tokens and
  cu_seqlens of seq_len + 1 packed tokens);
- megatron-core 0.16.1: `GPTDataset` blended by the recipe's `--data-path` weights
  (`megatron_blend`), `dataset[i]`, once with its default attention mask and once without
  (`create_attention_mask=False`); its index building is not timed.
Then `replay`: the sampler's schedule for a phase of --replay-samples samples over the demo
sources (no shard reads), in samples per second.

usage: python bench/bench_loader.py [--samples N] [--replay-samples N]
"""

from __future__ import annotations

import argparse
import copy
import os
import tempfile
import time
import warnings
from pathlib import Path

from common import REPO

from tests.megatron_gpt import HFTokenizer, gpt_dataset  # noqa: E402
from tests.workflow.test_loader import recipe_for  # noqa: E402
from tokenmill.io import read_json  # noqa: E402
from tokenmill.loader import Loader  # noqa: E402


def rate(function, count: int) -> float:
    start = time.perf_counter()
    function()
    return count / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=5000)
    parser.add_argument("--replay-samples", type=int, default=20_000_000)
    args = parser.parse_args()
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    manifest = REPO / "results" / "shards" / "demo-v0" / "manifest.json"
    recipe = recipe_for(manifest)
    loader = Loader(recipe, manifest)
    phase = next(p for p in loader.phases if p.name == "anneal")
    count = min(args.samples, phase.samples)
    ours = rate(lambda: [loader.sample(phase.first + i) for i in range(count)], count)

    tokenizer = HFTokenizer(str(manifest.parent / "tokenizer.json"), read_json(manifest)["tokenizer"]["eod_id"])
    blend = loader.megatron_blend("anneal")
    results = [("tokenmill Loader.sample", ours)]
    for mask in (True, False):
        with tempfile.TemporaryDirectory() as workdir:
            dataset = gpt_dataset(blend, phase.seq_len, count, tokenizer, seed=recipe["seed"], workdir=Path(workdir),
                                  attention_mask=mask)
            results.append((f"megatron-core GPTDataset, attention mask {'on' if mask else 'off'}",
                            rate(lambda: [dataset[i] for i in range(count)], count)))

    print(f"{count} samples of {phase.seq_len} tokens from the demo shards, one core")
    print(f"{'method':<48}{'samples/s':>11}{'tokens/s':>13}{'tokenmill x':>13}")
    for name, samples_per_second in results:
        print(f"{name:<48}{samples_per_second:>11.0f}{samples_per_second * phase.seq_len:>13.0f}"
              f"{ours / samples_per_second:>13.2f}")

    big = copy.deepcopy(recipe)
    big["phases"] = [{"name": "replay", "seq_len": 8, "tokens": 8 * args.replay_samples,
                      "weights": {s: 1 / len(loader.manifest["sources"]) for s in sorted(loader.manifest["sources"])},
                      "max_epochs": {s: 1e9 for s in loader.manifest["sources"]}, "bucket_weights": {}}]
    big_loader = Loader(big, manifest)
    start = time.perf_counter()
    rows = big_loader.replay()
    seconds = time.perf_counter() - start
    print(f"replay: {big_loader.total_samples} samples over {len(rows)} streams in {seconds:.2f} s = "
          f"{big_loader.total_samples / seconds:,.0f} samples/s; worst relative error "
          f"{max(r['relative_error'] for r in rows):.1e}")


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main()
