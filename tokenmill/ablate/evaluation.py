"""evaluation: a proxy's held-out scores, comparable across candidates and tokenizers.

- Bits per byte on held-out text: each text tokenized alone and scored in non-overlapping
  windows of seq_len predictions (a window's context starts at the window: no token sees more
  than seq_len tokens back, so a long text scores a little worse than with a sliding window, the
  same for every candidate). The first token of a text is context only: the proxies never learn
  to predict a document's first token (training does not count that label, as it has no
  context of its own document), so it is not scored, and the bytes before the second token are
  not counted. Negative log-likelihood in nats / ln 2 / UTF-8 bytes scored: per byte, not per
  token, so that tokenizers compare.
- Multiple choice (MMLU), likelihood-based: at proxy scale, accuracy is near chance and noisy,
  and the probability of the correct answer ranks data recipes best (DataDecide). Each answer is
  scored as the continuation " " + answer of the prompt "Question: ...\\nAnswer:" (the cloze
  form of OLMES, not answer letters, which small models cannot use), its log-likelihood summed
  over its tokens. `choice_probability` is the mean over items of the correct answer's share of
  the four answers' probabilities (a softmax of the summed log-likelihoods: DataDecide's and
  OLMES's CORRECT_PROB). MMLU's answers differ much in length, and a summed log-likelihood
  favours the short ones, so the same is also given length-normalised per character (the
  log-likelihood divided by the continuation's characters: OLMES's normalisation for MMLU),
  with the accuracy of both for reference.

Scoring is deterministic: the same model, inputs and thread count give the same bits.
"""

from __future__ import annotations

import math
import os
from typing import Iterable, Mapping, Sequence

import torch
from tokenizers import Tokenizer

from tokenmill.ablate.evalset import Choice

SEQUENCES_PER_BATCH = 8  # sequences per forward pass: logits of 8 x 128 tokens x 16k vocabulary are 67 MB


def _log_likelihoods(model: torch.nn.Module, sequences: Sequence[tuple[list[int], int]]) -> list[float]:
    """For each (tokens, scored): the summed log-probability in nats of the last `scored` tokens,
    each given the tokens before it. Sequences are right-padded in batches; under the causal
    mask a padding token is never context of a real one."""
    totals = []
    with torch.inference_mode():
        for first in range(0, len(sequences), SEQUENCES_PER_BATCH):
            batch = sequences[first:first + SEQUENCES_PER_BATCH]
            width = max(len(tokens) for tokens, _ in batch) - 1
            inputs = torch.zeros(len(batch), width, dtype=torch.long)
            for row, (tokens, _) in enumerate(batch):
                inputs[row, :len(tokens) - 1] = torch.tensor(tokens[:-1])
            log_probs = torch.log_softmax(model(input_ids=inputs).logits.float(), dim=-1)
            for row, (tokens, scored) in enumerate(batch):
                predicted = torch.arange(len(tokens) - 1 - scored, len(tokens) - 1)
                targets = torch.tensor(tokens[len(tokens) - scored:])
                totals.append(log_probs[row, predicted, targets].sum().item())
    return totals


def _text_scores(model: torch.nn.Module, tokenizer: Tokenizer, texts: Iterable[str],
                 seq_len: int) -> tuple[float, int, int]:
    """(negative log-likelihood in nats, UTF-8 bytes scored, tokens scored) of the texts."""
    windows, scored_bytes = [], 0
    for text in texts:
        encoding = tokenizer.encode(text, add_special_tokens=False)
        ids = encoding.ids
        if len(ids) < 2:
            continue  # a lone token is context only: nothing to score
        scored_bytes += len(text.encode("utf-8")) - len(text[:encoding.offsets[1][0]].encode("utf-8"))
        for start in range(0, len(ids) - 1, seq_len):
            window = ids[start:start + seq_len + 1]
            windows.append((window, len(window) - 1))
    nats = -sum(_log_likelihoods(model, windows))
    return nats, scored_bytes, sum(scored for _, scored in windows)


def bits_per_byte(model: torch.nn.Module, tokenizer: Tokenizer, texts: Iterable[str], seq_len: int) -> float:
    """Bits per UTF-8 byte of the texts under the model (see the module's docstring)."""
    nats, scored_bytes, _ = _text_scores(model, tokenizer, texts, seq_len)
    if not scored_bytes:
        raise ValueError("bits_per_byte: no text of two tokens or more to score")
    return nats / math.log(2) / scored_bytes


def choice_probability(model: torch.nn.Module, tokenizer: Tokenizer, items: Iterable[Choice | Mapping]) -> dict:
    """Mean over items of the correct answer's normalised probability, summed and per character
    (see the module's docstring), the accuracies of both, and the item count. A prompt too long
    for the model's positions loses its beginning."""
    items = [Choice.of(item) for item in items]
    if not items:
        raise ValueError("choice_probability: no items")
    context = model.config.max_position_embeddings
    sequences, characters = [], []
    for item in items:
        prompt = tokenizer.encode(f"Question: {item.question}\nAnswer:", add_special_tokens=False).ids
        for answer in item.choices:
            continuation = tokenizer.encode(f" {answer}", add_special_tokens=False).ids
            tokens = (prompt + continuation)[-(context + 1):]
            sequences.append((tokens, min(len(continuation), len(tokens) - 1)))
            characters.append(len(answer) + 1)
    log_likelihoods = torch.tensor(_log_likelihoods(model, sequences), dtype=torch.float64).view(len(items), -1)
    per_character = log_likelihoods / torch.tensor(characters, dtype=torch.float64).view(len(items), -1)
    correct = torch.tensor([item.answer for item in items])
    results = {}
    for suffix, scores in (("", log_likelihoods), ("_per_char", per_character)):
        shares = torch.softmax(scores, dim=1)
        results[f"choice_probability{suffix}"] = shares[torch.arange(len(items)), correct].mean().item()
        results[f"choice_accuracy{suffix}"] = (scores.argmax(dim=1) == correct).double().mean().item()
    return {**results, "items": len(items)}


def evaluate(model: torch.nn.Module, tokenizer_path: str | os.PathLike, texts: Iterable[str],
             items: Iterable[Choice | Mapping], seq_len: int) -> dict:
    """A proxy's scores: bits_per_byte on `texts`, choice_probability and choice_accuracy (summed
    and _per_char) on `items`, and what was scored (texts, text_bytes, text_tokens, items). A
    metric with nothing to score is None. Leaves the model in eval mode."""
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    texts, items = list(texts), list(items)
    model.eval()
    nats, scored_bytes, scored_tokens = _text_scores(model, tokenizer, texts, seq_len)
    scores = {"bits_per_byte": nats / math.log(2) / scored_bytes if scored_bytes else None,
              "texts": len(texts), "text_bytes": scored_bytes, "text_tokens": scored_tokens}
    if items:
        scores.update(choice_probability(model, tokenizer, items))
    else:
        scores.update({key: None for key in ("choice_probability", "choice_accuracy", "choice_probability_per_char",
                                             "choice_accuracy_per_char")}, items=0)
    return scores
