"""Shard validation: the checks every shard must pass to be listed in the manifest.

The token checks read the `.bin` memory-mapped in fixed-size chunks, so a shard of any
size is checked in bounded memory: a running bincount gives the entropy and the largest
single token's share, and run lengths come from the positions where the token changes,
with the run still open at the end of a chunk carried into the next one.

The language check compares the shard's documents with the selected documents it was cut
from (those of its source and snapshot: shards are written per snapshot) by total variation
distance (half the L1 distance of the two language distributions: the share of the shard's
documents that would have to change language for the two to match). Shards are a uniformly
random sample of their selection (the shuffle is a keyed hash), so a small shard differs
from it by chance alone; its limit is the configured distance plus `lang_sampling_allowance`
times the distance expected of a random sample of its size.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tokenmill.shards.megatron import MegatronReader

CHUNK_TOKENS = 1 << 22
CHECKS = ("repeated_run", "token_entropy_bits", "top_token_share", "token_count", "lang_distance")


@dataclass(frozen=True)
class ValidationLimits:
    """The `shards.validation` config section."""

    max_repeated_run: int
    min_token_entropy_bits: float
    max_token_share: float
    max_lang_distance: float
    lang_sampling_allowance: float


@dataclass(frozen=True)
class TokenStatistics:
    bin_tokens: int
    index_tokens: int
    longest_run: int
    longest_run_token: int
    entropy_bits: float
    top_token: int
    top_token_share: float


def token_statistics(prefix: str | Path, chunk_tokens: int = CHUNK_TOKENS) -> TokenStatistics:
    """Run length, entropy and top token share of a shard's `.bin`, and its token counts
    as the `.bin` size and the `.idx` lengths give them."""
    reader = MegatronReader(prefix)
    tokens = reader.array
    counts = np.zeros(0, dtype=np.int64)
    longest, longest_token = 0, 0
    open_token, open_length = None, 0
    for start in range(0, len(tokens), chunk_tokens):
        block = np.asarray(tokens[start:start + chunk_tokens])
        block_counts = np.bincount(block.astype(np.int64, copy=False))
        if len(block_counts) > len(counts):
            counts = np.pad(counts, (0, len(block_counts) - len(counts)))
        counts[:len(block_counts)] += block_counts
        run_starts = np.concatenate(([0], np.flatnonzero(block[1:] != block[:-1]) + 1))
        run_lengths = np.diff(np.append(run_starts, len(block)))
        if open_length and block[0] == open_token:
            run_lengths[0] += open_length
        top = int(np.argmax(run_lengths))
        if run_lengths[top] > longest:
            longest, longest_token = int(run_lengths[top]), int(block[run_starts[top]])
        open_token, open_length = block[-1], int(run_lengths[-1])
    total = int(counts.sum())
    present = counts[counts > 0] / total if total else np.zeros(0)
    return TokenStatistics(
        bin_tokens=len(tokens),
        index_tokens=int(reader.lengths.sum(dtype=np.int64)),
        longest_run=longest,
        longest_run_token=longest_token,
        entropy_bits=float(-(present * np.log2(present)).sum()) if total else 0.0,
        top_token=int(np.argmax(counts)) if total else 0,
        top_token_share=float(counts.max() / total) if total else 0.0,
    )


def language_distance(shard_langs: Counter, selection_langs: Counter) -> float:
    """Total variation distance between the shard's and its selection's document languages."""
    shard_total, selection_total = sum(shard_langs.values()), sum(selection_langs.values())
    return 0.5 * sum(abs(shard_langs[lang] / shard_total - selection_langs[lang] / selection_total)
                     for lang in shard_langs.keys() | selection_langs.keys())


def expected_sampling_distance(shard_docs: int, selection_langs: Counter) -> float:
    """The distance expected between the selection and `shard_docs` documents drawn from it at
    random without replacement (each language's share is about normal, and the mean of
    |N(0, s²)| is s·sqrt(2/π)); zero when the shard holds the whole selection."""
    selection_docs = sum(selection_langs.values())
    if selection_docs <= 1:
        return 0.0
    finite_population = (selection_docs - shard_docs) / (selection_docs - 1)
    return 0.5 * math.sqrt(2 / math.pi) * sum(
        math.sqrt(share * (1 - share) / shard_docs * finite_population)
        for share in (count / selection_docs for count in selection_langs.values()))


def _rounded(number):
    """Six decimals are plenty for a person and keep the JSON short."""
    return round(number, 6) if isinstance(number, float) else number


def _check(value, limit, passed: bool, **extra) -> dict:
    return {"value": _rounded(value), "limit": _rounded(limit), "passed": bool(passed), **extra}


def validate_shard(prefix: str | Path, shard_langs: Counter, selection_langs: Counter,
                   limits: ValidationLimits) -> dict:
    """{"passed", "checks": {name: {"value", "limit", "passed"}}} for one written shard;
    `shard_langs` and `selection_langs` (the selected documents of its source and snapshot)
    count documents by language."""
    stats = token_statistics(prefix)
    distance = language_distance(shard_langs, selection_langs)
    allowed_distance = (limits.max_lang_distance + limits.lang_sampling_allowance
                        * expected_sampling_distance(sum(shard_langs.values()), selection_langs))
    checks = {
        "repeated_run": _check(stats.longest_run, limits.max_repeated_run,
                               stats.longest_run < limits.max_repeated_run, token=stats.longest_run_token),
        "token_entropy_bits": _check(stats.entropy_bits, limits.min_token_entropy_bits,
                                     stats.entropy_bits > limits.min_token_entropy_bits),
        "top_token_share": _check(stats.top_token_share, limits.max_token_share,
                                  stats.top_token_share <= limits.max_token_share, token=stats.top_token),
        "token_count": _check(stats.bin_tokens, stats.index_tokens, stats.bin_tokens == stats.index_tokens),
        "lang_distance": _check(distance, allowed_distance, distance <= allowed_distance),
    }
    return {"passed": all(check["passed"] for check in checks.values()), "checks": checks}


def failed_checks(validation: dict) -> list[str]:
    """`name=value (limit limit)` of every failing check, in check order."""
    return [f"{name}={check['value']} (limit {check['limit']})"
            for name, check in validation["checks"].items() if not check["passed"]]
