"""Proxy ablations recover a planted quality ordering (issue 63): from a finished demo run's real
text, pools with 0 %, 25 %, 50 % and 100 % of their documents degraded train the ablation stage's
proxies (tokenmill.ablate.proxy through the Loader), and the proxies' bits per byte on held-out
clean text must rise with the share degraded, on every seed.

- Held-out text: a tenth of the run's documents (by keyed hash of shard path and document
  number), decoded with the run's tokenizer. No pool holds them.
- Pools: the other documents. The pool of share f degrades the first f of them in a keyed-hash
  order, so the 25 % pool's degraded documents are among the 50 % pool's, and those among the
  100 % pool's; a document is degraded the same way in every pool. Each pool is shards and a
  manifest of its own, in a temporary folder.
- Degradations (--degradation), each keeping a document's length in tokens and its end-of-document
  token, so every pool holds the same tokens per source and trains on the same sample order:
  shuffle: its tokens in random order (the unigram distribution kept, the order gone);
  noise: NOISE_SHARE of its tokens replaced by random tokens of the vocabulary;
  repeat: its first line (at most REPEAT_MAX_TOKENS tokens) repeated to its length, boilerplate.
  A new degradation is a function of DEGRADATIONS.
- Proxies: the demo config's `ablate.proxy` (2 layers x 64, 8 x 128 tokens a step, learning rate
  1e-3) for --tokens tokens, each source at its natural token share (proxy_recipe, the recipe the
  pipeline's candidates train with); seed s is both the proxy's init and the recipe's sample order.
  The clean pool's proxies are trained once and shared by the degradations.
- Scored: bits per byte on the held-out text (tokenmill.ablate.evaluation.evaluate). No multiple
  choice: at this size its answers are near chance.
Times are CPU time of this process (getrusage), on one core: the pools, the proxies' training
and their evaluation, per degradation with the clean pool's proxies counted in each.

usage: python bench/bench_ablate.py [--run DIR] [--degradation NAME|all ...] [--seeds N] [--tokens N] [--tiny]
(DIR: the root of a finished demo run, the folder holding results/, default the repository root:
run `make demo` first; --tiny: 4 steps, one seed, shuffle only)
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from common import REPO, add_tiny_option, pin_to_one_cpu  # also puts the repository on the import path

from tokenizers import Tokenizer  # noqa: E402

from tokenmill.ablate.candidates import natural_shares, proxy_recipe  # noqa: E402
from tokenmill.ablate.evaluation import evaluate  # noqa: E402
from tokenmill.ablate.proxy import ProxySettings, train_proxy  # noqa: E402
from tokenmill.hashing import keyed_hash64, seed_key, sha256_file  # noqa: E402
from tokenmill.io import read_json, write_json  # noqa: E402
from tokenmill.shards.megatron import CODE_DTYPES, MegatronReader, MegatronWriter  # noqa: E402
from tokenmill.trainer.loader import Loader  # noqa: E402

DEMO_MANIFEST = Path("results/shards/demo-v0/manifest.json")
POOL_SEED = 0  # keys the held-out draw, the order documents are degraded in, and each degraded document
HOLDOUT_SHARE = 0.1
SHARES_DEGRADED = (0.0, 0.25, 0.5, 1.0)
NOISE_SHARE = 0.3
REPEAT_MAX_TOKENS = 32  # a repeated line longer than this is cut, so that its copies fall within a sample's context
MAX_EPOCHS = 4  # the schema's ablate.max_epochs
# the demo config's ablate.proxy, but for its budget (--tokens) and one thread (one core, the same bits)
PROXY = {"layers": 2, "hidden": 64, "heads": 4, "intermediate": 256, "seq_len": 128, "micro_batch": 8,
         "learning_rate": 0.001, "warmup_steps": 16, "weight_decay": 0.1, "threads": 1}
STEP_TOKENS = PROXY["seq_len"] * PROXY["micro_batch"]
DEFAULT_TOKENS = 256 * STEP_TOKENS
TINY_STEPS = 4
TINY_HELD_OUT_TEXTS = 4  # scoring all held-out text takes seconds a proxy


@dataclass(frozen=True)
class Vocabulary:
    """What degradations need of the tokenizer: the ids a random token is drawn from (the special
    tokens left out) and, per id, whether its text ends a line."""

    ordinary_ids: np.ndarray
    ends_line: np.ndarray

    @classmethod
    def of(cls, tokenizer: Tokenizer) -> Vocabulary:
        size = tokenizer.get_vocab_size()
        special = set(tokenizer.get_added_tokens_decoder())
        ordinary = np.array([i for i in range(size) if i not in special], dtype=np.int64)
        ends_line = np.array([i not in special and "\n" in tokenizer.decode([i]) for i in range(size)])
        return cls(ordinary, ends_line)


def shuffled(body: np.ndarray, rng: np.random.Generator, vocabulary: Vocabulary) -> np.ndarray:
    return rng.permutation(body)


def noised(body: np.ndarray, rng: np.random.Generator, vocabulary: Vocabulary) -> np.ndarray:
    replaced = rng.random(len(body)) < NOISE_SHARE
    out = body.copy()
    out[replaced] = rng.choice(vocabulary.ordinary_ids, size=int(replaced.sum()))
    return out


def repeated(body: np.ndarray, rng: np.random.Generator, vocabulary: Vocabulary) -> np.ndarray:
    line_ends = np.flatnonzero(vocabulary.ends_line[body])
    line = body[:min(line_ends[0] + 1 if len(line_ends) else len(body), REPEAT_MAX_TOKENS)]
    return np.resize(line, len(body))


# name -> (what it does, for the table; the function: a document's tokens before its end-of-document token
# -> as many tokens)
DEGRADATIONS: dict[str, tuple[str, Callable[[np.ndarray, np.random.Generator, Vocabulary], np.ndarray]]] = {
    "shuffle": ("each degraded document's tokens in random order", shuffled),
    "noise": (f"{NOISE_SHARE:.0%} of each degraded document's tokens replaced by random ones", noised),
    "repeat": (f"each degraded document is its first line (at most {REPEAT_MAX_TOKENS} tokens) repeated", repeated),
}


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def document_name(shard: dict, number: int) -> str:
    return f"{shard['path']}#{number}"


class Run:
    """The demo run's documents, split into the held-out ones and the pool's."""

    def __init__(self, manifest_path: Path):
        self.manifest_path = manifest_path
        self.manifest = read_json(manifest_path)
        self.tokenizer_path = manifest_path.parent / self.manifest["tokenizer"]["path"]
        self.readers = [MegatronReader(manifest_path.parent / shard["path"]) for shard in self.manifest["shards"]]
        key = seed_key(POOL_SEED)
        held_out, self.pool = [], []
        for shard_number, (shard, reader) in enumerate(zip(self.manifest["shards"], self.readers)):
            for number in range(len(reader)):
                draw = keyed_hash64(key, f"holdout:{document_name(shard, number)}") / 2 ** 64
                (held_out if draw < HOLDOUT_SHARE else self.pool).append((shard_number, number))
        tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
        eod = self.manifest["tokenizer"]["eod_id"]
        self.held_out_texts = [tokenizer.decode([int(t) for t in self.readers[s][n] if t != eod]) for s, n in held_out]
        self.vocabulary = Vocabulary.of(tokenizer)
        # the order documents are degraded in: a pool of share f degrades the first f of it
        self.degrade_order = sorted(self.pool, key=lambda doc: keyed_hash64(
            key, f"degrade:{document_name(self.manifest['shards'][doc[0]], doc[1])}"))

    def write_pool(self, out: Path, share: float, degradation: str | None) -> dict:
        """The pool with `share` of its documents degraded by `degradation` (None for share 0): its
        shards (the run's shard paths under `out`, the held-out documents left out) and manifest;
        the manifest's path, its documents, how many are degraded and its tokens."""
        degraded = set(self.degrade_order[:round(share * len(self.pool))])
        by_shard: dict[int, list[int]] = {}
        for shard_number, number in self.pool:
            by_shard.setdefault(shard_number, []).append(number)
        shards = []
        for shard_number, numbers in sorted(by_shard.items()):
            shard, reader = self.manifest["shards"][shard_number], self.readers[shard_number]
            prefix = out / shard["path"]
            prefix.parent.mkdir(parents=True, exist_ok=True)
            writer = MegatronWriter(prefix, CODE_DTYPES[shard["dtype_code"]])
            for number in numbers:
                tokens = np.asarray(reader[number], dtype=np.int64)
                if (shard_number, number) in degraded:
                    # the same degraded copy of a document in every pool that degrades it
                    rng = np.random.default_rng(keyed_hash64(seed_key(POOL_SEED), document_name(shard, number)))
                    tokens = np.append(DEGRADATIONS[degradation][1](tokens[:-1], rng, self.vocabulary), tokens[-1])
                writer.add(tokens)
            writer.close()
            # no .docs.parquet: a degraded document has no source record, and proxies never ask a token's lineage
            shards.append({**shard, "n_docs": len(numbers), "n_tokens": writer.n_tokens,
                           "bin_sha256": sha256_file(f"{prefix}.bin"), "bin_bytes": os.path.getsize(f"{prefix}.bin"),
                           "idx_sha256": sha256_file(f"{prefix}.idx")})
        sources: dict[str, dict] = {}
        for shard in shards:
            totals = sources.setdefault(shard["source"], {"tier": self.manifest["sources"][shard["source"]]["tier"],
                                                          "shards": 0, "n_docs": 0, "n_tokens": 0,
                                                          "excluded_shards": 0})
            totals["shards"] += 1
            totals["n_docs"] += shard["n_docs"]
            totals["n_tokens"] += shard["n_tokens"]
        tokenizer = {**self.manifest["tokenizer"], "path": os.path.relpath(self.tokenizer_path, out)}
        manifest = {**self.manifest, "version": f"{self.manifest['version']}.{out.name}", "tokenizer": tokenizer,
                    "sources": dict(sorted(sources.items())), "n_docs": sum(s["n_docs"] for s in shards),
                    "n_tokens": sum(s["n_tokens"] for s in shards), "shards": shards, "excluded_shards": []}
        write_json(out / "manifest.json", manifest)
        return {"manifest_path": out / "manifest.json", "documents": len(self.pool), "degraded": len(degraded),
                "tokens": manifest["n_tokens"]}


def proxy_bits_per_byte(manifest_path: Path, name: str, proxy: dict, seed: int, tokenizer_path: Path,
                        texts: list[str], state_dir: Path, seconds: dict[str, float]) -> float:
    """Train the proxy of `seed` on the pool's manifest and score it on `texts`; its training and
    evaluation CPU time added to `seconds`."""
    began = cpu_seconds()
    recipe = proxy_recipe(f"bench-ablate-{name}", manifest_path, natural_shares(read_json(manifest_path)),
                          MAX_EPOCHS, proxy, seed)
    model, _ = train_proxy(Loader(recipe, manifest_path), ProxySettings.from_config(proxy), seed,
                           state_dir / f"{name}-seed{seed}.pt")
    trained = cpu_seconds()
    scores = evaluate(model, tokenizer_path, texts, [], proxy["seq_len"])
    seconds["proxies"] += trained - began
    seconds["evaluation"] += cpu_seconds() - trained
    return scores["bits_per_byte"]


def pool_label(share: float) -> str:
    return "clean (0 %)" if share == 0 else f"{share:.0%} degraded".replace("%", " %")


def report(degradation: str, pools: dict[float, dict], bpb: dict[float, dict[int, float]], seeds: list[int],
           seconds: dict[str, float]) -> None:
    """The table of one degradation's pools by seed, whether the ordering holds on every seed, its CPU time."""
    print(f"\ndegradation: {degradation} ({DEGRADATIONS[degradation][0]})")
    print(f"{'pool':<16}{'documents degraded':>20}{'tokens':>10}"
          + "".join(f"{f'seed {seed} bpb':>13}" for seed in seeds) + f"{'mean':>9}")
    for share, pool in pools.items():
        values = [bpb[share][seed] for seed in seeds]
        degraded = f"{pool['degraded']} / {pool['documents']}"
        print(f"{pool_label(share):<16}{degraded:>20}{pool['tokens']:>10,}"
              + "".join(f"{value:>13.4f}" for value in values) + f"{np.mean(values):>9.4f}")
    shares = list(pools)
    steps = {seed: [bpb[later][seed] - bpb[earlier][seed] for earlier, later in zip(shares, shares[1:])]
             for seed in seeds}
    recovered = all(step > 0 for seed_steps in steps.values() for step in seed_steps)
    smallest = min((step, seed, number) for seed, seed_steps in steps.items() for number, step in enumerate(seed_steps))
    spread = max(max(bpb[share].values()) - min(bpb[share].values()) for share in shares)
    ordering = " < ".join(format(share, "g") for share in shares)
    print(f"{degradation}: bits per byte rise with the share degraded ({ordering}) on every seed: "
          f"{'RECOVERED' if recovered else 'NOT RECOVERED'}")
    print(f"{degradation}: smallest rise between neighbouring pools {smallest[0]:+.4f} bpb (seed {smallest[1]}, "
          f"{format(shares[smallest[2]], 'g')} -> {format(shares[smallest[2] + 1], 'g')}); largest spread of one "
          f"pool across seeds {spread:.4f} bpb")
    total = sum(seconds.values())
    print(f"{degradation}: {total / 60:.2f} CPU-minutes, the whole ablation (writing the pools {seconds['pools']:.1f} "
          f"CPU-s, training the proxies {seconds['proxies']:.1f}, evaluating them {seconds['evaluation']:.1f}; the "
          "clean pool's proxies included)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", metavar="DIR", default=str(REPO),
                        help="the root of a finished demo run (the folder holding results/; default the repository)")
    parser.add_argument("--degradation", action="append", choices=[*DEGRADATIONS, "all"],
                        help="repeatable; default all")
    parser.add_argument("--seeds", type=int, default=2, help="proxies per pool, seeds 1..N")
    parser.add_argument("--tokens", type=int, default=DEFAULT_TOKENS, help="each proxy's training budget")
    add_tiny_option(parser)
    args = parser.parse_args()
    degradations = args.degradation or ["all"]
    if args.tiny:
        degradations, args.seeds, args.tokens = ["shuffle"], 1, TINY_STEPS * STEP_TOKENS
    if "all" in degradations:
        degradations = list(DEGRADATIONS)
    manifest_path = Path(args.run) / DEMO_MANIFEST
    if not manifest_path.is_file():
        sys.exit(f"{manifest_path} is missing: run `make demo` first, or pass --run the root of a finished demo run")
    pin_to_one_cpu()
    seeds = list(range(1, args.seeds + 1))
    # the state file written once, at the end: nothing here resumes a proxy
    proxy = {**PROXY, "tokens": args.tokens, "checkpoint_every": max(1, args.tokens // STEP_TOKENS)}
    began = cpu_seconds()
    run = Run(manifest_path)
    split_seconds = cpu_seconds() - began
    texts = run.held_out_texts[:TINY_HELD_OUT_TEXTS] if args.tiny else run.held_out_texts
    print(f"{manifest_path}: {len(run.held_out_texts)} documents held out, {len(run.pool)} in each pool "
          f"({split_seconds:.1f} CPU-s to split and decode); scored on {len(texts)} of them "
          f"({sum(len(text.encode('utf-8')) for text in texts):,} bytes of text)")
    print(f"proxy: {proxy['layers']} layers x {proxy['hidden']}, {proxy['tokens']:,} tokens "
          f"({proxy['tokens'] // STEP_TOKENS} steps of {proxy['micro_batch']} x "
          f"{proxy['seq_len']}), learning rate {proxy['learning_rate']}, seeds {seeds}; one core, CPU time")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        clean_seconds = {"pools": 0.0, "proxies": 0.0, "evaluation": 0.0}
        began = cpu_seconds()
        clean = run.write_pool(work / "clean", 0.0, None)
        clean_seconds["pools"] += cpu_seconds() - began
        clean_bpb = {seed: proxy_bits_per_byte(clean["manifest_path"], "clean", proxy, seed, run.tokenizer_path, texts,
                                               work, clean_seconds) for seed in seeds}
        for degradation in degradations:
            seconds = dict(clean_seconds)
            pools, bpb = {0.0: clean}, {0.0: clean_bpb}
            for share in SHARES_DEGRADED[1:]:
                name = f"{degradation}-{share:g}"
                began = cpu_seconds()
                pools[share] = run.write_pool(work / name, share, degradation)
                seconds["pools"] += cpu_seconds() - began
                bpb[share] = {seed: proxy_bits_per_byte(pools[share]["manifest_path"], name, proxy, seed,
                                                        run.tokenizer_path, texts, work, seconds) for seed in seeds}
            report(degradation, pools, bpb, seeds, seconds)


if __name__ == "__main__":
    main()
