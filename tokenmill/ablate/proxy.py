"""proxy: a small decoder LM trained on one candidate's tokens, the ablation stage's measuring stick.

Each candidate (a quality threshold, a mixture) trains the same proxy, from the same random
init, for the same token budget, through the project's own Loader; its held-out scores
(tokenmill.ablate.evaluation) then rank the candidates.

- Model: a Llama decoder (transformers' LlamaConfig + LlamaForCausalLM, RMSNorm, SwiGLU, RoPE)
  built from its config (never downloaded), tied input and output embeddings, the tokenizer's
  vocabulary, random init from the seed.
- Document masking: a sample packs several documents (Loader's cu_seqlens mark where each
  starts). A token attends only to earlier tokens of its own document (a block-diagonal causal
  4D mask, passed to the model as an additive float mask, which both the sdpa and the eager
  attention of transformers 5 take as given), and positions restart at 0 at each document start.
- Loss: next-token cross entropy, averaged over the micro-batch's counted labels. The label at
  a document boundary (the next document's first token, predicted from the previous
  document's end-of-document token) is not counted: nothing in the sample is its context.
- Optimizer: AdamW (betas 0.9/0.95), weight decay on matrices only (not on norms), a constant
  learning rate after an optional linear warmup: the literature ranks candidates with a small
  constant rate, as rankings flip with the rate and a decaying schedule ties the ranking to
  one budget. One micro-batch per optimizer step, fp32.
- Deterministic on the CPU: the seed, a fixed thread count and deterministic kernels give the
  same losses and weights to the last bit, and a run resumed from its state file ends with the
  weights and losses of an uninterrupted one.

Sizes: the defaults are a CPU demo's: 2 layers x 64 wide, 0.13M parameters besides the embedding
(1.2M with the demo's 16,384-token vocabulary), 256 steps of 8 x 128 tokens, about a minute on
one core (bench/bench_proxy.py). The literature's proxies, on GPUs, are 15-30M parameters trained
on about 1B tokens: DataDecide trains models of 4M to 1B parameters on 25 data recipes and finds
that small models' rankings, read through the likelihood of the correct answer, predict the 1B
ranking; RegMix fits its mixture regression on 512 models of 1M parameters and 1B tokens each.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a proxy is built from its config, never downloaded

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402
from transformers import LlamaConfig, LlamaForCausalLM  # noqa: E402

from tokenmill.io import atomic_output  # noqa: E402
from tokenmill.machine import deterministic_torch  # noqa: E402
from tokenmill.trainer.loader import Loader  # noqa: E402

transformers.logging.set_verbosity_error()

IGNORE_INDEX = -100  # a label cross entropy does not count
STATE_FORMAT = 1
# settings a resumed run may change: a longer budget continues a constant-rate run exactly
RESUMABLE_CHANGES = ("tokens", "checkpoint_every")
MAY_BE_ZERO = ("warmup_steps", "weight_decay")


@dataclass(frozen=True)
class ProxySettings:
    """The proxy's shape and training: the `ablate.proxy` config section, whose schema holds the
    defaults (the literature's GPU sizes; the demo config's are CPU-sized)."""

    layers: int
    hidden: int  # model width
    heads: int  # attention heads (as many key/value heads)
    intermediate: int  # SwiGLU width
    seq_len: int  # tokens per sample; every phase of the recipe the budget reaches has it
    micro_batch: int  # samples per optimizer step (the recipe's global_batch)
    learning_rate: float  # constant after the warmup
    warmup_steps: int  # linear from learning_rate / warmup_steps to learning_rate
    weight_decay: float  # AdamW's, on weight matrices and embeddings only
    tokens: int  # training budget in tokens: tokens // (seq_len * micro_batch) steps
    threads: int  # torch threads; the same count gives the same bits
    checkpoint_every: int  # steps between writes of the state file

    def __post_init__(self):
        problems = []
        for field in fields(self):
            value = getattr(self, field.name)
            kinds = (int, float) if field.type == "float" else (int,)
            if isinstance(value, bool) or not isinstance(value, kinds):
                problems.append(f"{field.name}: {value!r} is not of type {field.type}")
            elif field.name in MAY_BE_ZERO and value < 0:
                problems.append(f"{field.name}: {value!r} is negative")
            elif field.name not in MAY_BE_ZERO and value <= 0:
                problems.append(f"{field.name}: {value!r} is not positive")
        if not problems:
            if self.hidden % self.heads or (self.hidden // self.heads) % 2:
                problems.append(f"hidden: {self.hidden} is not {self.heads} heads of an even width "
                                "(RoPE rotates pairs)")
            if self.tokens < self.step_tokens:
                problems.append(f"tokens: {self.tokens} is less than one step of {self.step_tokens} "
                                f"(seq_len {self.seq_len} x micro_batch {self.micro_batch})")
        if problems:
            raise ValueError("invalid proxy settings:\n  " + "\n  ".join(problems))

    @classmethod
    def from_config(cls, config: dict) -> ProxySettings:
        """Settings from the `ablate.proxy` section as tokenmill.config.validate fills it: a missing or
        unknown key is an error."""
        names = {field.name for field in fields(cls)}
        unknown, missing = sorted(set(config) - names), sorted(names - set(config))
        if unknown or missing:
            raise ValueError(f"invalid proxy settings: unknown keys {unknown}, missing keys {missing}")
        return cls(**config)

    @property
    def step_tokens(self) -> int:
        return self.seq_len * self.micro_batch

    @property
    def steps(self) -> int:
        return self.tokens // self.step_tokens

    def learning_rate_at(self, step: int) -> float:
        if step < self.warmup_steps:
            return self.learning_rate * (step + 1) / self.warmup_steps
        return self.learning_rate


def build_model(settings: ProxySettings, vocab_size: int, seed: int) -> LlamaForCausalLM:
    """A randomly initialised proxy: the same settings, vocabulary and seed give the same weights."""
    config = LlamaConfig(vocab_size=vocab_size, hidden_size=settings.hidden, intermediate_size=settings.intermediate,
                         num_hidden_layers=settings.layers, num_attention_heads=settings.heads,
                         num_key_value_heads=settings.heads, max_position_embeddings=settings.seq_len,
                         tie_word_embeddings=True, use_cache=False, attn_implementation="sdpa",
                         bos_token_id=None, eos_token_id=None, pad_token_id=None)
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


def parameter_count(model: torch.nn.Module) -> int:
    """Parameters, the tied embedding counted once."""
    return sum(parameter.numel() for parameter in model.parameters())


def packed_batch(tokens: np.ndarray, cu_seqlens: list[np.ndarray]) -> dict[str, torch.Tensor]:
    """The model's inputs for a micro-batch of packed samples (Loader.micro_batches' tokens
    [micro, seq_len + 1] and cu_seqlens): input_ids and labels [micro, seq_len], position_ids
    restarting at each document start, and the additive block-diagonal causal attention mask
    [micro, 1, seq_len, seq_len] (0 where a token may attend, the float32 minimum elsewhere)."""
    tokens = torch.as_tensor(tokens, dtype=torch.long)
    micro, length = tokens.shape[0], tokens.shape[1] - 1
    positions = torch.arange(length)
    documents = torch.empty(micro, length, dtype=torch.long)
    document_starts = torch.empty(micro, length, dtype=torch.long)
    labels = tokens[:, 1:].clone()
    for row, starts in enumerate(cu_seqlens):
        starts = torch.as_tensor(np.asarray(starts), dtype=torch.long)
        documents[row] = torch.searchsorted(starts, positions, right=True) - 1
        document_starts[row] = starts[documents[row]]
        # label t is token t + 1: where that token starts a document, its context is another document
        inner_starts = starts[(starts > 0) & (starts <= length)]
        labels[row, inner_starts - 1] = IGNORE_INDEX
    causal = positions[None, :] <= positions[:, None]  # [query, key]
    allowed = causal & (documents[:, :, None] == documents[:, None, :])
    mask = torch.zeros(micro, 1, length, length).masked_fill(~allowed[:, None], torch.finfo(torch.float32).min)
    return {"input_ids": tokens[:, :-1], "attention_mask": mask, "position_ids": positions - document_starts,
            "labels": labels}


def next_token_loss(model: LlamaForCausalLM, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Mean cross entropy (nats per token) over the batch's counted labels (packed_batch)."""
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                   position_ids=batch["position_ids"]).logits
    return torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch["labels"].reshape(-1),
                                             ignore_index=IGNORE_INDEX)


def build_optimizer(model: torch.nn.Module, settings: ProxySettings) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices (the embedding among them), none on norm gains."""
    matrices = [parameter for parameter in model.parameters() if parameter.ndim >= 2]
    vectors = [parameter for parameter in model.parameters() if parameter.ndim < 2]
    return torch.optim.AdamW([{"params": matrices, "weight_decay": settings.weight_decay},
                              {"params": vectors, "weight_decay": 0.0}],
                             lr=settings.learning_rate, betas=(0.9, 0.95), eps=1e-8)


def training_step(model: LlamaForCausalLM, optimizer: torch.optim.Optimizer, batch: dict[str, torch.Tensor],
                  learning_rate: float) -> float:
    """One optimizer step on one micro-batch; its loss in nats per token."""
    for group in optimizer.param_groups:
        group["lr"] = learning_rate
    optimizer.zero_grad(set_to_none=True)
    loss = next_token_loss(model, batch)
    loss.backward()
    optimizer.step()
    return loss.item()


def vocab_size(loader: Loader) -> int:
    """The vocabulary of the tokenizer the loader's manifest pins (its manifest entry, else the file)."""
    tokenizer = loader.manifest["tokenizer"]
    if "vocab_size" in tokenizer:
        return int(tokenizer["vocab_size"])
    return Tokenizer.from_file(str(Path(loader.root) / tokenizer["path"])).get_vocab_size()


def checked_steps(loader: Loader, settings: ProxySettings) -> int:
    """The budget's steps, once the loader's recipe is known to give them: one micro-batch per
    step (global_batch == micro_batch), samples of seq_len in every step, enough samples."""
    declared = loader.recipe.get("global_batch", loader.global_batch)
    if declared is not None and declared != settings.micro_batch:
        raise ValueError(f"proxy training takes one micro-batch per optimizer step: the recipe "
                         f"{loader.recipe['recipe_id']!r} has global_batch {declared}, the proxy's micro_batch is "
                         f"{settings.micro_batch}; build the candidate's recipe with global_batch "
                         f"{settings.micro_batch}")
    loader.checked_global_batch(settings.micro_batch)
    samples = settings.steps * settings.micro_batch
    if loader.total_samples < samples:
        raise ValueError(f"the recipe {loader.recipe['recipe_id']!r} has {loader.total_samples} samples, the proxy's "
                         f"budget of {settings.tokens} tokens needs {samples} of seq_len {settings.seq_len}: "
                         "give the recipe's phases at least that many tokens")
    for phase in loader.phases:
        if phase.first < samples and phase.seq_len != settings.seq_len:
            raise ValueError(f"phase {phase.name!r} of the recipe {loader.recipe['recipe_id']!r} has seq_len "
                             f"{phase.seq_len}; the proxy's is {settings.seq_len}")
    return settings.steps


def _run_identity(loader: Loader, settings: ProxySettings, seed: int, vocab: int) -> dict:
    """What a state file must match to be resumed: all but the settings a run may change."""
    kept = {key: value for key, value in asdict(settings).items() if key not in RESUMABLE_CHANGES}
    return {"format": STATE_FORMAT, "settings": kept, "seed": seed, "vocab_size": vocab,
            "recipe_id": loader.recipe["recipe_id"], "manifest_sha256": loader.recipe["manifest_sha256"],
            "recipe_seed": loader.recipe["seed"]}


def _save_state(state_path: str | os.PathLike, identity: dict, model: torch.nn.Module,
                optimizer: torch.optim.Optimizer, step: int, history: list[float]) -> None:
    with atomic_output(state_path) as temp:
        torch.save({"identity": identity, "step": step, "history": history, "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(), "torch_rng": torch.get_rng_state()}, temp)


def _restore_state(state_path: str | os.PathLike, identity: dict, model: torch.nn.Module,
                   optimizer: torch.optim.Optimizer, steps: int) -> tuple[int, list[float]]:
    state = torch.load(state_path, weights_only=True)
    if state["identity"] != identity:
        differing = sorted(key for key in identity if state["identity"].get(key) != identity[key])
        raise ValueError(f"{state_path} holds the state of another proxy run (it differs in {differing}): "
                         "remove it to train from step 0")
    if state["step"] > steps:
        raise ValueError(f"{state_path} is at step {state['step']}, past this budget's {steps} steps")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    torch.set_rng_state(state["torch_rng"])
    return state["step"], list(state["history"])


def train_proxy(loader: Loader, settings: ProxySettings, seed: int, state_path: str | os.PathLike,
                log: Callable[[str], None] | None = None) -> tuple[LlamaForCausalLM, list[float]]:
    """Train a proxy from step 0 for the settings' budget on the loader's samples (rank 0 of 1,
    global batch = micro batch); returns the model (in eval mode) and the training loss of every
    step (nats per token). Every `checkpoint_every` steps and at the end, the run's state (model,
    optimizer, step, losses, RNG) is written atomically to `state_path`; a run that finds it there
    resumes from it, and ends bit-identical to an uninterrupted run. `log` gets a line after each
    write. Sets torch's thread count and deterministic kernels for the process."""
    steps = checked_steps(loader, settings)
    deterministic_torch(seed, settings.threads)
    vocab = vocab_size(loader)
    model = build_model(settings, vocab, seed)
    optimizer = build_optimizer(model, settings)
    identity = _run_identity(loader, settings, seed, vocab)
    start, history = 0, []
    if Path(state_path).exists():
        start, history = _restore_state(state_path, identity, model, optimizer, steps)
        if log:
            log(f"proxy: resumed from {state_path} at step {start} of {steps}")
    model.train()
    for step in range(start, steps):
        micro_batch = loader.micro_batches(step, 0, 1, settings.micro_batch, settings.micro_batch)[0]
        batch = packed_batch(micro_batch["tokens"], micro_batch["cu_seqlens"])
        history.append(training_step(model, optimizer, batch, settings.learning_rate_at(step)))
        if (step + 1) % settings.checkpoint_every == 0 or step + 1 == steps:
            _save_state(state_path, identity, model, optimizer, step + 1, history)
            if log:
                recent = history[-settings.checkpoint_every:]
                log(f"proxy: step {step + 1} of {steps}, mean loss {sum(recent) / len(recent):.4f} over the last "
                    f"{len(recent)} steps, state written")
    model.eval()
    return model, history
