"""A causal language model over documents, on HF transformers (CPU by default).

The model is a local directory in HF format (config, weights, tokenizer), pinned by the sha256 of
its files; nothing downloads. `train_generator` makes a small one from text, so that the demo
and the tests have a real model where no instruct model can be installed: its text is poor, and
the quality checks must say so. Any other model directory is used the same way.

Generation is deterministic: greedy decoding, or sampling seeded per batch, with a fixed thread
count; requests are batched in a fixed order (by prompt length, then key), and every finished
batch is a checkpoint file, so a killed job resumes where it stopped and ends with the bytes of
an uninterrupted run.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Iterator

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a model is a local directory, never a download

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import (AutoModelForCausalLM, AutoTokenizer, GPT2Config, GPT2LMHeadModel,  # noqa: E402
                          PreTrainedTokenizerFast)

from tokenmill.hashing import sha256_tree  # noqa: E402
from tokenmill.io import atomic_output, read_json, write_json  # noqa: E402
from tokenmill.tokenize import EOD_TOKEN, capped_texts, train_bpe  # noqa: E402

TRAINING_RECORD = "tokenmill_generator.json"
# A job's log says what the job did: no progress bars, no notice that a training document is
# longer than the model's context (training reads windows of it).
transformers.logging.set_verbosity_error()
transformers.logging.disable_progress_bar()


@dataclass(frozen=True)
class TrainSettings:
    """The `synthetic.train` config section: a GPT-2 of a few layers, a fixed number of steps."""

    vocab_size: int
    layers: int
    dim: int
    heads: int
    context: int
    steps: int
    batch_size: int
    lr: float
    seed: int
    threads: int
    max_chars: int


@dataclass(frozen=True)
class Sampling:
    """The `synthetic.sampling` config section: greedy, or temperature/top_p sampling seeded per
    batch; max_new_tokens per output; repetition_penalty > 1 makes a repeated token less likely
    (CTRL's penalty, in both modes)."""

    max_new_tokens: int
    greedy: bool
    temperature: float
    top_p: float
    repetition_penalty: float
    seed: int


@dataclass
class Generator:
    model: torch.nn.Module
    tokenizer: PreTrainedTokenizerFast
    sha256: str
    path: str

    @property
    def context(self) -> int:
        config = self.model.config
        return getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions")


def _deterministic(seed: int, threads: int) -> None:
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)


def train_generator(texts: Iterable[str], out_dir: str, settings: TrainSettings) -> dict:
    """Train a byte-level BPE and a small GPT-2 on `texts` (language modelling over the stream of
    documents, each ended by EOD) and publish them as one model directory. The same texts and
    settings give the same files. Returns the training record (also in the directory)."""
    _deterministic(settings.seed, settings.threads)
    texts = list(capped_texts(texts, settings.max_chars))
    with atomic_output(out_dir, directory=True) as temp:
        train_bpe(texts, settings.vocab_size, 2, str(temp / "bpe.json"))
        tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(temp / "bpe.json"), eos_token=EOD_TOKEN,
                                            bos_token=EOD_TOKEN, pad_token=EOD_TOKEN, unk_token=EOD_TOKEN,
                                            model_max_length=settings.context)
        (temp / "bpe.json").unlink()
        eod = tokenizer.convert_tokens_to_ids(EOD_TOKEN)
        stream = []
        for ids in tokenizer(texts, add_special_tokens=False)["input_ids"]:
            stream.extend(ids + [eod])
        window = min(settings.context, len(stream) - 1)
        if window < 16:
            raise ValueError(f"train_generator: {len(stream)} tokens of text, too few to train on")
        tokens = torch.tensor(stream, dtype=torch.long)
        config = GPT2Config(vocab_size=len(tokenizer), n_positions=settings.context, n_embd=settings.dim,
                            n_layer=settings.layers, n_head=settings.heads, bos_token_id=eod, eos_token_id=eod,
                            pad_token_id=eod, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
        model = GPT2LMHeadModel(config)
        optimizer = torch.optim.AdamW(model.parameters(), lr=settings.lr)
        order = torch.Generator().manual_seed(settings.seed)
        losses = []
        model.train()
        for _ in range(settings.steps):
            starts = torch.randint(0, len(stream) - window, (settings.batch_size,), generator=order)
            batch = torch.stack([tokens[start:start + window] for start in starts.tolist()])
            optimizer.zero_grad()
            loss = model(input_ids=batch, labels=batch).loss
            loss.backward()
            optimizer.step()
            losses.append(round(loss.item(), 4))
        model.eval()
        model.save_pretrained(temp, safe_serialization=True)
        tokenizer.save_pretrained(temp)
        record = {"documents": len(texts), "chars": sum(map(len, texts)), "tokens": len(stream),
                  "parameters": sum(p.numel() for p in model.parameters()), "settings": asdict(settings),
                  "loss_first": losses[0], "loss_last": losses[-1],
                  "loss_by_tenth": [losses[min(len(losses) - 1, i * len(losses) // 10)] for i in range(10)]}
        write_json(temp / TRAINING_RECORD, record)
    return {**record, "sha256": sha256_tree(out_dir)}


def load_generator(path: str, expected_sha256: str | None = None, threads: int = 1, seed: int = 0,
                   key: str = "generator.path") -> Generator:
    """The model directory at `path` on the CPU in float32; a pinned sha256 that does not match
    is an error naming `key`."""
    if not Path(path, "config.json").is_file():
        raise ValueError(f"{key}: {path} is no model directory (it has no config.json)")
    actual = sha256_tree(path)
    if expected_sha256 and actual != expected_sha256:
        raise ValueError(f"{key}: {path} has sha256 {actual}, config pins {expected_sha256}")
    _deterministic(seed, threads)
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch.float32)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    tokenizer.padding_side = "left"  # a decoder-only model continues each prompt at its end
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return Generator(model, tokenizer, actual, path)


def build_prompt(generator: Generator, template: str, source_text: str, max_new_tokens: int) -> str:
    """The template around as much of the source as fits the model's context with room for
    `max_new_tokens`, cut at a token boundary; in the model's chat format where it has one."""
    tokenizer = generator.tokenizer

    def wrap(text: str) -> str:
        prompt = template.replace("{text}", text)
        if tokenizer.chat_template:
            return tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                                 add_generation_prompt=True)
        return prompt

    budget = generator.context - max_new_tokens - len(tokenizer(wrap(""), add_special_tokens=False)["input_ids"])
    if budget <= 0:
        raise ValueError(f"{generator.path}: context {generator.context} leaves no room for the source "
                         f"after the template and max_new_tokens {max_new_tokens}")
    offsets = tokenizer(source_text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    if len(offsets) > budget:
        source_text = source_text[:offsets[budget - 1][1]]
    return wrap(source_text)


def _batch_digest(generator: Generator, sampling: Sampling, batch: list[tuple[str, str]]) -> str:
    payload = json.dumps([generator.sha256, asdict(sampling), batch], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]


def generation_options(generator: Generator, sampling: Sampling) -> dict:
    """`model.generate`'s keyword arguments for `sampling`."""
    options = {"do_sample": False} if sampling.greedy else {
        "do_sample": True, "temperature": sampling.temperature, "top_p": sampling.top_p, "top_k": 0}
    return {**options, "repetition_penalty": sampling.repetition_penalty, "max_new_tokens": sampling.max_new_tokens,
            "pad_token_id": generator.tokenizer.pad_token_id, "eos_token_id": generator.tokenizer.eos_token_id}


def _generate_batch(generator: Generator, sampling: Sampling, batch: list[tuple[str, str]], digest: str) -> list[dict]:
    tokenizer, model = generator.tokenizer, generator.model
    encoded = tokenizer([prompt for _, prompt in batch], return_tensors="pt", padding=True, add_special_tokens=False)
    torch.manual_seed(sampling.seed ^ int(digest, 16))
    with torch.no_grad():
        output = model.generate(**encoded, **generation_options(generator, sampling))
    width = encoded["input_ids"].shape[1]
    results = []
    for (key, _), prompt_mask, new in zip(batch, encoded["attention_mask"], output[:, width:].tolist()):
        stopped = tokenizer.eos_token_id in new
        new = new[:new.index(tokenizer.eos_token_id)] if stopped else new
        results.append({"key": key, "text": tokenizer.decode(new, skip_special_tokens=True),
                        "finish": "stop" if stopped else "length", "prompt_tokens": int(prompt_mask.sum()),
                        "new_tokens": len(new)})
    return results


def generate(generator: Generator, requests: list[tuple[str, str]], sampling: Sampling, batch_size: int,
             checkpoint_dir: str, stats: dict | None = None) -> Iterator[dict]:
    """One output per (key, prompt) request, in request order: key, text, finish (stop: the
    model ended it; length: cut at max_new_tokens), prompt_tokens, new_tokens. Each batch is
    written to `checkpoint_dir` as it finishes and read back instead of generated again, so a
    killed run resumes. `stats` (a dict) receives batches, resumed_batches, new_tokens and
    seconds (of generation, the resumed batches' included)."""
    keys = [key for key, _ in requests]
    if len(set(keys)) != len(keys):
        raise ValueError("generate: request keys must be unique")
    lengths = {key: len(generator.tokenizer(prompt, add_special_tokens=False)["input_ids"]) for key, prompt in requests}
    ordered = sorted(requests, key=lambda request: (lengths[request[0]], request[0]))
    by_key = {}
    totals = {"batches": 0, "resumed_batches": 0, "new_tokens": 0, "seconds": 0.0}
    Path(checkpoint_dir).mkdir(parents=True, exist_ok=True)
    for number, start in enumerate(range(0, len(ordered), batch_size)):
        batch = ordered[start:start + batch_size]
        digest = _batch_digest(generator, sampling, batch)
        checkpoint = Path(checkpoint_dir) / f"batch-{number:06d}-{digest}.json"
        if checkpoint.is_file():
            done = read_json(checkpoint)
            totals["resumed_batches"] += 1
        else:
            began = time.perf_counter()
            done = {"outputs": _generate_batch(generator, sampling, batch, digest)}
            done["seconds"] = time.perf_counter() - began
            write_json(checkpoint, done)
        totals["batches"] += 1
        totals["seconds"] += done["seconds"]
        totals["new_tokens"] += sum(output["new_tokens"] for output in done["outputs"])
        by_key.update((output["key"], output) for output in done["outputs"])
    if stats is not None:
        stats.update(totals)
    for key in keys:
        yield by_key[key]
