"""Synthetic rephrasing on one core: the demo generator (a small GPT-2 trained on 120 of the
sample's real articles) rephrases the other 61 under the Wikipedia template, through
tokenmill's `generate` (content-defined batches, each cached once written), side by side with bare
transformers `model.generate` on the same batches and on one prompt at a time. Then the
quality checks on what it wrote: failures by reason, grounding, diversity against the
sources, and the real-vs-synthetic distinguisher's AUC.

usage: python bench/bench_synth.py [--tiny]   (--tiny: 5 training steps, 8 sources, 16 new tokens)
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import tempfile
import time
from collections import Counter
from statistics import mean

from common import REPO, add_tiny_option, pin_to_one_cpu  # puts the repository on the import path

import torch  # noqa: E402

from tokenmill.config import schema_settings  # noqa: E402

from tokenmill.synth.generator import (Sampling, TrainSettings, batches, build_prompt, generate,  # noqa: E402
                                       generation_options, load_generator, train_generator)
from tokenmill.synth.quality import distinguisher_auc, failure_reason, grounding, type_token_ratio  # noqa: E402
from tokenmill.synth.templates import TEMPLATES  # noqa: E402

GOLD = REPO / "data" / "sample" / "gold" / "aeb-ground-truth.json.gz"
BATCH = 8


def bare_generate(generator, prompts: list[str], sampling: Sampling, batch: int) -> tuple[int, float]:
    """transformers alone: (new tokens, seconds) over `prompts` in batches of their given order."""
    tokenizer, model, tokens, seconds = generator.tokenizer, generator.model, 0, 0.0
    for start in range(0, len(prompts), batch):
        encoded = tokenizer(prompts[start:start + batch], return_tensors="pt", padding=True, add_special_tokens=False)
        began = time.perf_counter()
        with torch.no_grad():
            output = model.generate(**encoded, **generation_options(generator, sampling))
        seconds += time.perf_counter() - began
        for row in output[:, encoded["input_ids"].shape[1]:].tolist():
            tokens += row.index(tokenizer.eos_token_id) if tokenizer.eos_token_id in row else len(row)
    return tokens, seconds


def average(values) -> str:
    """Mean of the values that are not None (a text without words has none), to 3 places."""
    present = [value for value in values if value is not None]
    return f"{mean(present):.3f} over {len(present)}" if present else "none (no output has words)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_tiny_option(parser)
    args = parser.parse_args()
    cpu = pin_to_one_cpu()
    with gzip.open(GOLD, "rt", encoding="utf-8") as handle:
        gold = json.load(handle)
    texts = [gold[key]["articleBody"] for key in sorted(gold)]
    train_texts, sources = texts[:120], texts[120:128] if args.tiny else texts[120:]
    settings = schema_settings(TrainSettings, "synthetic.train")
    settings = dataclasses.replace(settings, steps=5) if args.tiny else settings
    # greedy (the schema's) for speed; seeded sampling with a repetition penalty for quality, because
    # greedy decoding of so small a model writes blank lines
    speed_sampling = dataclasses.replace(schema_settings(Sampling, "synthetic.annotate.sampling"),
                                         max_new_tokens=16 if args.tiny else 128, repetition_penalty=1.2)
    sampling = dataclasses.replace(speed_sampling, greedy=False, temperature=0.8, top_p=0.95)
    with tempfile.TemporaryDirectory() as tmp:
        began = time.process_time()
        record = train_generator(train_texts, f"{tmp}/model", settings)
        train_seconds = time.process_time() - began
        generator = load_generator(f"{tmp}/model", record["sha256"])
        prompts = [build_prompt(generator, TEMPLATES["wikipedia"], text, sampling.max_new_tokens).text for text in sources]
        keys = [f"{i:03d}" for i in range(len(prompts))]
        # speed on greedy decoding, where both sides must write the same tokens; quality on seeded sampling
        stats, measured = {}, {}
        began = time.perf_counter()
        greedy = generate(generator, keys, prompts.__getitem__, speed_sampling, BATCH, f"{tmp}/greedy", stats, measured)
        whole_call = time.perf_counter() - began  # prompt lengths, digests and cache writes included
        model_seconds = sum(device["seconds"] for device in measured["devices"].values())
        # the same requests again (a job rerun after its inputs were rewritten), then with one request more
        began = time.perf_counter()
        rerun: dict = {}
        generate(generator, keys, prompts.__getitem__, speed_sampling, BATCH, f"{tmp}/greedy", measured=rerun)
        rerun_call = time.perf_counter() - began
        grown: dict = {}
        extra = build_prompt(generator, TEMPLATES["wikipedia"], train_texts[0], sampling.max_new_tokens).text
        generate(generator, keys + ["extra"], (prompts + [extra]).__getitem__, speed_sampling, BATCH, f"{tmp}/greedy",
                 measured=grown)
        lengths = [len(generator.tokenizer(prompt, add_special_tokens=False)["input_ids"]) for prompt in prompts]
        bare_batched = (0, 0.0)  # bare transformers on tokenmill's batches (content-defined, of BATCH on average)
        for members in batches(keys, lengths, BATCH):
            tokens, seconds = bare_generate(generator, [prompts[i] for i in members], speed_sampling, len(members))
            bare_batched = (bare_batched[0] + tokens, bare_batched[1] + seconds)
        assert bare_batched[0] == stats["new_tokens"], "bare transformers wrote other tokens on the same batches"
        bare_single = bare_generate(generator, prompts[:max(2, len(prompts) // 4)], speed_sampling, 1)
        outputs = generate(generator, keys, prompts.__getitem__, sampling, BATCH, f"{tmp}/sampled")
    print(f"demo generator: GPT-2, {settings.layers} layers x {settings.dim}, {record['parameters']:,} parameters, "
          f"{settings.steps} steps on {record['documents']} real articles ({record['tokens']:,} tokens): "
          f"loss {record['loss_first']} -> {record['loss_last']}, {train_seconds:.1f} CPU-s; CPU {cpu}")
    print(f"{len(sources)} sources, wikipedia template, batch {BATCH}; speed: greedy, {speed_sampling.max_new_tokens} "
          f"new tokens at most, repetition penalty {speed_sampling.repetition_penalty}")
    print("engine                                   new tokens   seconds   tokens/s/core")
    rows = [("tokenmill generate (cached batches)", stats["new_tokens"], whole_call),
            ("bare transformers, same batches", *bare_batched),
            ("bare transformers, one prompt at a time", *bare_single)]
    for name, tokens, seconds in rows:
        print(f"{name:40s} {tokens:10,d} {seconds:9.2f} {tokens / seconds:15,.1f}")
    print(f"tokenmill / bare same batches: {rows[0][1] / rows[0][2] / (rows[1][1] / rows[1][2]):.2f}x the tokens/s "
          f"(the whole call; its model calls alone {stats['new_tokens'] / model_seconds:,.1f} tokens/s)")
    print(f"rerun of the same requests: {rerun['cached_batches']}/{stats['batches']} batches from the cache, "
          f"{rerun_call:.2f} s against {whole_call:.2f} s generating ({whole_call / rerun_call:.1f}x); one request "
          f"more: {grown['generated_batches']} of {grown['generated_batches'] + grown['cached_batches']} batches generated")
    failures = Counter(failure_reason(o["text"], o["finish"]) or "ok" for o in outputs)
    greedy_failures = Counter(failure_reason(o["text"], o["finish"]) or "ok" for o in greedy)
    print(f"quality of the generated text ({sampling}):")
    print(f"  failures: {dict(sorted(failures.items()))} (greedy: {dict(sorted(greedy_failures.items()))})")
    grounded = [grounding(output["text"], source) for output, source in zip(outputs, sources)]
    print(f"  grounding (share of content words in the source): {average(grounded)}")
    print(f"  type-token ratio: synthetic {average(type_token_ratio(o['text']) for o in outputs)}, "
          f"sources {average(type_token_ratio(s) for s in sources)}")
    auc = distinguisher_auc(sources, [o["text"] for o in outputs])
    print(f"  real-vs-synthetic distinguisher AUC (fastText, held-out halves): {auc['auc']:.3f}")


if __name__ == "__main__":
    main()
