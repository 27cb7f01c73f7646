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

megatron-core is a test dependency (requirements-test.txt), not in `make demo`'s virtualenv:
without it the GPTDataset rows are skipped, with a note saying so.

usage: python bench/bench_loader.py [--samples N] [--replay-samples N] [--tiny]
(--tiny: 50 samples, a replay of 10,000 samples)
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import sys
import tempfile
import warnings
from pathlib import Path

from common import REPO, add_tiny_option, pin_to_one_cpu, skipped, timed  # puts the repository on the import path
from tests.sample_data import recipe_for
from tokenmill.io import read_json
from tokenmill.trainer.loader import Loader
from tokenmill.trainer.recipe import validate_recipe


def rate(function, count: int) -> float:
    return count / timed(function)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=5000)
    parser.add_argument("--replay-samples", type=int, default=20_000_000)
    add_tiny_option(parser)
    args = parser.parse_args()
    if args.tiny:
        args.samples, args.replay_samples = 50, 10_000
    manifest = REPO / "results" / "shards" / "demo-v0" / "manifest.json"
    if not manifest.is_file():
        sys.exit(f"{manifest} is missing: run `make demo` first")
    pin_to_one_cpu()
    recipe = recipe_for(manifest)
    loader = Loader(recipe, manifest)
    phase = next(p for p in loader.phases if p.name == "anneal")
    count = min(args.samples, phase.samples)
    ours = rate(lambda: [loader.sample(phase.first + i) for i in range(count)], count)

    results = [("tokenmill Loader.sample", ours)]
    if importlib.util.find_spec("megatron") is None:
        skipped("megatron-core GPTDataset (megatron-core is a test dependency, not installed here)",
                "pip install -r requirements-test.txt, as `make test` does")
    else:
        from tests.megatron_gpt import HFTokenizer, gpt_dataset

        tokenizer = HFTokenizer(str(manifest.parent / "tokenizer.json"), read_json(manifest)["tokenizer"]["eod_id"])
        blend = loader.megatron_blend("anneal")
        for mask in (True, False):
            with tempfile.TemporaryDirectory() as workdir:
                dataset = gpt_dataset(blend, phase.seq_len, count, tokenizer, seed=recipe["seed"],
                                      workdir=Path(workdir), attention_mask=mask)
                results.append((f"megatron-core GPTDataset, attention mask {'on' if mask else 'off'}",
                                rate(lambda: [dataset[i] for i in range(count)], count)))

    print(f"{count} samples of {phase.seq_len} tokens from the demo shards, one core")
    print(f"{'method':<48}{'samples/s':>11}{'tokens/s':>13}{'tokenmill x':>13}")
    for name, samples_per_second in results:
        print(f"{name:<48}{samples_per_second:>11.0f}{samples_per_second * phase.seq_len:>13.0f}"
              f"{ours / samples_per_second:>13.2f}")

    big = copy.deepcopy(recipe)
    big.pop("global_batch", None)  # the replay phase's samples need not fill whole steps
    big["phases"] = [{"name": "replay", "seq_len": 8, "tokens": 8 * args.replay_samples,
                      "weights": {s: 1 / len(loader.manifest["sources"]) for s in sorted(loader.manifest["sources"])},
                      "max_epochs": {s: 1e9 for s in loader.manifest["sources"]}}]
    big_loader = Loader(validate_recipe(big), manifest)
    rows = []
    seconds = timed(lambda: rows.extend(big_loader.replay()))
    print(f"replay: {big_loader.total_samples} samples over {len(rows)} streams in {seconds:.2f} s = "
          f"{big_loader.total_samples / seconds:,.0f} samples/s; worst relative error "
          f"{max(r['relative_error'] for r in rows):.1e}")


if __name__ == "__main__":
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main()
