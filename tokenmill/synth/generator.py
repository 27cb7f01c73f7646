"""A causal language model over documents, on HF transformers (CPU by default; vLLM in
tokenmill.synth.vllm).

The model is a local directory in HF format (config, weights, tokenizer), pinned by the sha256 of
its files; nothing downloads. `train_generator` makes a small one from text, so that the demo
and the tests have a real model where no instruct model can be installed: its text is poor, and
the quality checks must say so. Any other model directory is used the same way.

Generation is deterministic: greedy decoding, or sampling seeded per batch, with a fixed thread
count. Requests are sorted by prompt length (then key) and cut into content-defined batches: a
batch ends after a request whose key hashes to 0 modulo the batch size, so adding or removing a
request changes its own batch only. Every finished batch is a file in a cache folder named by a
digest of everything that shapes its outputs, so a killed job resumes where it stopped, and a job
rerun because something upstream was rewritten (same requests) generates nothing again.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterable

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a model is a local directory, never a download

import torch  # noqa: E402
import transformers  # noqa: E402
from transformers import (AutoModelForCausalLM, AutoTokenizer, GPT2Config, GPT2LMHeadModel,  # noqa: E402
                          PreTrainedTokenizerFast)

from tokenmill.hashing import hash64, sha256_tree  # noqa: E402
from tokenmill.io import atomic_output, read_json, write_json  # noqa: E402
from tokenmill.machine import add_device_time, cpu_model, deterministic_torch  # noqa: E402
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


class Generator:
    """A model directory loaded by transformers, on the CPU."""

    def __init__(self, model: torch.nn.Module, tokenizer: PreTrainedTokenizerFast, sha256: str, path: str,
                 threads: int):
        self.model, self.tokenizer, self.sha256, self.path, self.threads = model, tokenizer, sha256, path, threads

    @property
    def context(self) -> int:
        config = self.model.config
        return getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions")

    @property
    def engine(self) -> str:
        """What makes its outputs, for the cache digest: another version may write other tokens."""
        return f"transformers-{transformers.__version__}/torch-{torch.__version__}/threads-{self.threads}"

    @property
    def device(self) -> dict:
        """What it runs on: a label, its kind (cpu or gpu) and how many of them (threads, GPUs)."""
        return {"label": f"cpu ({cpu_model()}, {self.threads} thread{'s' if self.threads != 1 else ''})",
                "kind": "cpu", "units": self.threads}

    def complete(self, prompts: list[str], sampling: "Sampling", seed: int) -> list[dict]:
        """One output per prompt: text, finish (stop: the model ended it; length: cut at
        max_new_tokens), prompt_tokens, new_tokens."""
        tokenizer, model = self.tokenizer, self.model
        encoded = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        torch.manual_seed(seed)
        with torch.no_grad():
            output = model.generate(**encoded, **generation_options(self, sampling))
        width = encoded["input_ids"].shape[1]
        results = []
        for prompt_mask, new in zip(encoded["attention_mask"], output[:, width:].tolist()):
            stopped = tokenizer.eos_token_id in new
            new = new[:new.index(tokenizer.eos_token_id)] if stopped else new
            results.append({"text": tokenizer.decode(new, skip_special_tokens=True),
                            "finish": "stop" if stopped else "length", "prompt_tokens": int(prompt_mask.sum()),
                            "new_tokens": len(new)})
        return results


def train_generator(texts: Iterable[str], out_dir: str, settings: TrainSettings,
                    knowledge_cutoff: str | None = None) -> dict:
    """Train a byte-level BPE and a small GPT-2 on `texts` (language modelling over the stream of
    documents, each ended by EOD) and publish them as one model directory. The same texts and
    settings give the same files. Returns the training record (also in the directory), which
    holds `knowledge_cutoff` (the newest fetch time of the texts)."""
    deterministic_torch(settings.seed, settings.threads)
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
                  "knowledge_cutoff": knowledge_cutoff,
                  "parameters": sum(p.numel() for p in model.parameters()), "settings": asdict(settings),
                  "loss_first": losses[0], "loss_last": losses[-1],
                  "loss_by_tenth": [losses[min(len(losses) - 1, i * len(losses) // 10)] for i in range(10)]}
        write_json(temp / TRAINING_RECORD, record)
    return {**record, "sha256": sha256_tree(out_dir)}


def load_generator(path: str, expected_sha256: str | None = None, threads: int = 1, seed: int = 0,
                   key: str = "generator.path") -> Generator:
    """The model directory at `path` on the CPU in float32; a pinned sha256 that does not match
    is an error naming `key`."""
    actual = checked_model_dir(path, expected_sha256, key)
    deterministic_torch(seed, threads)
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch.float32)
    model.eval()
    return Generator(model, load_tokenizer(path), actual, path, threads)


def checked_model_dir(path: str, expected_sha256: str | None, key: str) -> str:
    """The sha256 of the model directory at `path` (sha256_tree); an error naming `key` when it is
    no model directory or differs from a pin."""
    if not Path(path, "config.json").is_file():
        raise ValueError(f"{key}: {path} is no model directory (it has no config.json)")
    actual = sha256_tree(path)
    if expected_sha256 and actual != expected_sha256:
        raise ValueError(f"{key}: {path} has sha256 {actual}, config pins {expected_sha256}")
    return actual


def load_tokenizer(path: str) -> PreTrainedTokenizerFast:
    """The model directory's tokenizer, padding on the left (a decoder-only model continues each
    prompt at its end)."""
    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    tokenizer.padding_side = "left"
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


@dataclass(frozen=True)
class Prompt:
    text: str
    source_chars: int  # how much of the source it holds (the rest did not fit the context)


def build_prompt(generator, template: str, source_text: str, max_new_tokens: int) -> Prompt:
    """The template around as much of the source as fits the model's context with room for
    `max_new_tokens`, cut at a token boundary; in the model's chat format where it has one."""
    tokenizer = generator.tokenizer

    def wrap(text: str) -> str:
        prompt = template.replace("{text}", text)
        if tokenizer.chat_template:
            return tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                                 add_generation_prompt=True)
        return prompt

    def length(prompt: str) -> int:
        return len(tokenizer(prompt, add_special_tokens=False)["input_ids"])

    room = generator.context - max_new_tokens
    budget = room - length(wrap(""))
    offsets = tokenizer(source_text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    # the source and the template tokenize apart a little differently than together: cut further until it fits
    while budget > 0:
        used = offsets[budget - 1][1] if len(offsets) > budget else len(source_text)
        prompt = wrap(source_text[:used])
        over = length(prompt) - room
        if over <= 0:
            return Prompt(prompt, used)
        budget -= over
    raise ValueError(f"{generator.path}: context {generator.context} leaves no room for the source "
                     f"after the template and max_new_tokens {max_new_tokens}")


def generation_options(generator: Generator, sampling: Sampling) -> dict:
    """`model.generate`'s keyword arguments for `sampling`."""
    options = {"do_sample": False} if sampling.greedy else {
        "do_sample": True, "temperature": sampling.temperature, "top_p": sampling.top_p, "top_k": 0}
    return {**options, "repetition_penalty": sampling.repetition_penalty, "max_new_tokens": sampling.max_new_tokens,
            "pad_token_id": generator.tokenizer.pad_token_id, "eos_token_id": generator.tokenizer.eos_token_id}


def batches(keys: list[str], lengths: list[int], batch_size: int) -> list[list[int]]:
    """The requests (their indices) in content-defined batches: sorted by prompt length, then key;
    a batch ends after a request whose key hashes to 0 modulo `batch_size`, or at twice that many
    requests. A request added or removed changes its own batch, and at most the forced ends after
    it up to the next natural one; every other batch, and so its cached outputs, stays as it was."""
    order = sorted(range(len(keys)), key=lambda i: (lengths[i], keys[i]))
    cut, current = [], []
    for index in order:
        current.append(index)
        if hash64(f"batch:{keys[index]}") % batch_size == 0 or len(current) >= 2 * batch_size:
            cut.append(current)
            current = []
    return cut + ([current] if current else [])


def _batch_digest(generator, sampling: Sampling, members: list[tuple[str, str]]) -> str:
    """What a batch's outputs are a function of: the model, the engine, the sampling and its
    requests (key, sha256 of the prompt)."""
    payload = json.dumps([generator.sha256, generator.engine, asdict(sampling), members], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


CACHE_SUFFIX = ".batch.json"


def generate(generator, keys: list[str], prompt_of: Callable[[int], str], sampling: Sampling, batch_size: int,
             cache_dir: str, stats: dict | None = None, measured: dict | None = None) -> list[dict]:
    """One output per request, in request order: key, text, finish (stop: the model ended it;
    length: cut at max_new_tokens), prompt_tokens, new_tokens. `prompt_of(i)` is request i's
    prompt, built when needed (twice: for its length, then for its batch), so that a part's
    prompts are never all held at once. `generator` is a Generator or a
    tokenmill.synth.vllm.VllmGenerator. A batch found in `cache_dir` is read instead of generated;
    every batch generated is written there as it finishes; batches of other requests are removed
    at the end, so the folder holds the outputs of these requests only. `stats` (a dict) receives
    what the outputs are (requests, batches, new_tokens), the same bytes however many batches came
    from the cache; `measured` what this call did and how fast: batches from the cache and
    generated, and per device (its label) its kind, units, the new tokens it generated and the
    seconds it took."""
    if len(set(keys)) != len(keys):
        raise ValueError("generate: request keys must be unique")
    lengths, prompt_shas = [], []
    for index in range(len(keys)):
        prompt = prompt_of(index)
        lengths.append(len(generator.tokenizer(prompt, add_special_tokens=False)["input_ids"]))
        prompt_shas.append(hashlib.sha256(prompt.encode("utf-8")).hexdigest())
    cache = Path(cache_dir)
    cache.mkdir(parents=True, exist_ok=True)
    outputs: list[dict | None] = [None] * len(keys)
    totals = {"requests": len(keys), "batches": 0, "new_tokens": 0}
    timing = {"cached_batches": 0, "generated_batches": 0, "devices": {}}
    used = set()
    for members in batches(keys, lengths, batch_size):
        digest = _batch_digest(generator, sampling, [(keys[i], prompt_shas[i]) for i in members])
        path = cache / f"{digest}{CACHE_SUFFIX}"
        used.add(path.name)
        if path.is_file():
            done = read_json(path)
            timing["cached_batches"] += 1
        else:
            began = time.perf_counter()
            done = {"outputs": generator.complete([prompt_of(i) for i in members], sampling,
                                                  sampling.seed ^ int(digest[:16], 16))}
            seconds = time.perf_counter() - began
            write_json(path, done)
            device = generator.device
            add_device_time(timing["devices"], device["label"], {
                "kind": device["kind"], "units": device["units"], "seconds": seconds,
                "new_tokens": sum(output["new_tokens"] for output in done["outputs"])})
            timing["generated_batches"] += 1
        totals["batches"] += 1
        totals["new_tokens"] += sum(output["new_tokens"] for output in done["outputs"])
        for index, output in zip(members, done["outputs"]):
            outputs[index] = {"key": keys[index], **output}
    for stale in cache.glob(f"*{CACHE_SUFFIX}"):
        if stale.name not in used:
            stale.unlink()
    if stats is not None:
        stats.update(totals)
    if measured is not None:
        measured.update(timing, tokens_per_second=tokens_per_second(timing["devices"]))
    return outputs


def tokens_per_second(devices: dict[str, dict]) -> dict[str, float | None]:
    """New tokens per second of generation, per device (generate's measured["devices"])."""
    return {device: round(value["new_tokens"] / value["seconds"], 3) if value["seconds"] else None
            for device, value in sorted(devices.items())}

