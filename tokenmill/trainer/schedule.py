"""schedule: which sample of which stream every global sample index is, and which global indices
a step gives each data-parallel rank, as a pure function of the recipe and each source's
document lengths. Nothing here reads a token: the shards come in as a table of documents.

- A *stream* is a source's documents (or those of one length bucket of it) concatenated in
  manifest order; sample j of a stream is its tokens [j*seq_len, j*seq_len + seq_len + 1).
- A phase has tokens // seq_len samples. Each stream gets a count planned from its weight,
  capped at max_epochs passes (what a capped stream cannot take goes to the others in
  proportion to their weights). The streams are interleaved by stride scheduling: the k-th
  sample of a stream with count c sits at key (k + u) / c, u a keyed offset in [0, 1), and
  the phase is all keys in order. Over any window of n samples a stream's count is within
  two of n times its share.
- The k-th sample of a stream is epoch k // n, position k % n of a keyed permutation (a
  Feistel network with cycle walking) of the stream's n samples, new for every epoch.
- Data parallel: rank r of W takes global indices step*G + r, step*G + r + W, ... (G the
  global batch); the samples consumed by a step do not depend on W. Every phase must be whole
  steps of G (recipe field global_batch, or the G the trainer gives), so that a step never
  mixes two phases; any other G is refused before a sample is served.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from tokenmill.hashing import FMIX64_MULTIPLIERS, fmix64, hash64
from tokenmill.trainer.recipe import BUCKETS, RecipeError, phase_samples, whole_step_problems

_ROUNDS = 4
(_C1, _C2), _MASK64 = FMIX64_MULTIPLIERS, (1 << 64) - 1

# (source, recipe field naming it) -> per document of the source, in manifest order: the number
# of its shard, its number in that shard, its length in tokens
SourceDocuments = Callable[[str, str], tuple[np.ndarray, np.ndarray, np.ndarray]]


@functools.lru_cache(maxsize=65536)
def _key(*parts) -> int:
    return hash64("/".join(str(part) for part in parts))


@functools.lru_cache(maxsize=65536)
def _round_keys(key: int) -> tuple[int, ...]:
    return tuple(_key(key, "round", r) for r in range(_ROUNDS))


def _feistel_bits(n: int) -> int:
    """The smallest even number of bits (at least 2) that covers [0, n)."""
    return max(2, (max(n - 1, 1).bit_length() + 1) // 2 * 2)


def _fmix(z: int) -> int:
    """fmix64 on one Python int (the same bijection as tokenmill.dedup.minhash.fmix64)."""
    z ^= z >> 33
    z = (z * _C1) & _MASK64
    z ^= z >> 33
    z = (z * _C2) & _MASK64
    return z ^ (z >> 33)


def permute(position: int, n: int, key: int) -> int:
    """Where `keyed_permutation` sends one position (plain integers: faster for one value)."""
    half = _feistel_bits(n) // 2
    mask = (1 << half) - 1
    round_keys = _round_keys(key)
    value = position
    while True:
        left, right = value >> half, value & mask
        for round_key in round_keys:
            left, right = right, left ^ (_fmix(right ^ round_key) & mask)
        value = (left << half) | right
        if value < n:
            return value


def keyed_permutation(positions: np.ndarray, n: int, key: int) -> np.ndarray:
    """A bijection of [0, n) chosen by `key`, applied to `positions` (a Feistel network over
    the smallest even number of bits that covers n, cycle-walking back into range)."""
    positions = np.asarray(positions, dtype=np.uint64)
    bits = _feistel_bits(n)
    half, mask = np.uint64(bits // 2), np.uint64((1 << (bits // 2)) - 1)
    round_keys = [np.uint64(k) for k in _round_keys(key)]

    def feistel(values: np.ndarray) -> np.ndarray:
        left, right = values >> half, values & mask
        for round_key in round_keys:
            left, right = right, left ^ (fmix64(right ^ round_key) & mask)
        return (left << half) | right

    out = feistel(positions)
    outside = np.flatnonzero(out >= np.uint64(n))
    while len(outside):
        out[outside] = feistel(out[outside])
        outside = outside[out[outside] >= np.uint64(n)]
    return out.astype(np.int64)


def interleave(counts: np.ndarray, offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(stream, k) of every position of the merged sequence of keys (k + offsets[s]) / counts[s],
    ties to the lower stream. Each key's rank is counted directly (no sort); if rounding ever
    made two ranks collide, a stable sort gives the same order."""
    total = int(counts.sum())
    live = [s for s in range(len(counts)) if counts[s]]
    ranks = {}
    for s in live:
        k = np.arange(counts[s], dtype=np.float64)
        rank = k.copy()  # exact: counts stay far below 2**53
        scaled = np.empty_like(k)
        for other in live:
            if other != s:
                # keys of `other` below this key x = (k + u) / c: ceil(x c' - u'), or floor(x c' - u') + 1
                # for a lower stream (ties go to it); both lie in [0, c'] for x in [0, 1)
                ratio = counts[other] / counts[s]
                np.multiply(k, ratio, out=scaled)
                scaled += offsets[s] * ratio - offsets[other] + (1 if other < s else 0)
                (np.floor if other < s else np.ceil)(scaled, out=scaled)
                rank += scaled
        ranks[s] = rank.astype(np.int64)
    streams = np.full(total, -1, dtype=np.int32)
    if all(0 <= ranks[s][0] and ranks[s][-1] < total for s in live):
        for s in live:
            streams[ranks[s]] = s
    if (streams < 0).any():  # a collision left a position empty
        keys = np.concatenate([(np.arange(counts[s]) + offsets[s]) / counts[s] for s in live])
        owner = np.concatenate([np.full(counts[s], s) for s in live])
        order = np.lexsort([owner, keys])
        every = np.empty(total, dtype=np.int64)
        every[order] = np.arange(total)
        ranks = dict(zip(live, np.split(every, np.cumsum([counts[s] for s in live])[:-1])))
        for s in live:
            streams[ranks[s]] = s
    ks = np.empty(total, dtype=np.int64)
    for s in live:
        ks[ranks[s]] = np.arange(counts[s])
    return streams, ks


def plan_counts(samples: int, target: np.ndarray, caps: np.ndarray, where: str) -> np.ndarray:
    """Samples per stream: `samples` shared by `target` weight, none above its cap; a capped
    stream's excess goes to the others in proportion to their weights (largest remainder)."""
    counts = np.zeros(len(target), dtype=np.int64)
    active = target > 0
    remaining = samples
    while remaining:
        if not active.any() or target[active].sum() == 0:
            raise RecipeError(f"recipe field {where}.tokens: {samples} samples, but max_epochs allow only "
                              f"{int(caps[target > 0].sum())} from its sources")
        share = np.where(active, remaining * target / target[active].sum(), 0.0)
        over = active & (share > caps)
        if not over.any():
            break
        counts[over] = caps[over]
        remaining -= int(caps[over].sum())
        active &= ~over
    else:
        return counts
    base = np.floor(share).astype(np.int64) * active
    fraction = np.where(active & (base < caps), share - base, -1.0)
    for s in sorted(range(len(target)), key=lambda s: (-fraction[s], s))[:remaining - int(base.sum())]:
        base[s] += 1
    return counts + base


@dataclass
class Stream:
    name: str  # the source, or source[bucket]
    source: str
    target: float  # weight in the recipe
    shards: np.ndarray  # per document: the number of its shard in the manifest
    documents: np.ndarray  # per document: its number in that shard
    starts: np.ndarray  # token offset of each document in the stream, and the total at the end

    @property
    def tokens(self) -> int:
        return int(self.starts[-1])


@dataclass
class Phase:
    number: int
    name: str
    seq_len: int
    first: int  # global index of its first sample
    samples: int
    streams: list
    per_epoch: np.ndarray
    max_epochs: np.ndarray
    counts: np.ndarray
    offsets: np.ndarray
    _schedule: tuple | None = field(default=None, repr=False)

    def schedule(self) -> tuple[np.ndarray, np.ndarray]:
        if self._schedule is None:
            self._schedule = interleave(self.counts, self.offsets)
        return self._schedule


class Schedule:
    """The recipe's phases over the documents `source_documents` gives for each source, and
    where each global sample index lies in them."""

    def __init__(self, recipe: dict, source_documents: SourceDocuments, source_tiers: dict[str, str] | None = None):
        """`source_tiers`: source -> tier (the manifest's), for the phases' max_tier_share."""
        self.recipe = recipe
        self.source_tiers = source_tiers or {}
        self.phases: list[Phase] = []
        first = 0
        for number, section in enumerate(recipe["phases"]):
            phase = self._plan_phase(number, section, first, source_documents)
            self.phases.append(phase)
            first += phase.samples
        self.total_samples = first

    def _streams(self, number: int, section: dict, source_documents: SourceDocuments) -> list[Stream]:
        streams = []
        for source, weight in section["weights"].items():
            shard_numbers, documents, lengths = source_documents(source, f"phases.{number}.weights.{source}")
            buckets = section["bucket_weights"].get(source) or {None: 1.0}
            for bucket, share in buckets.items():
                low, high = BUCKETS[bucket] if bucket else (0, np.inf)
                chosen = (lengths >= low) & (lengths < high)
                streams.append(Stream(source if bucket is None else f"{source}[{bucket}]", source, weight * share,
                                      shard_numbers[chosen], documents[chosen],
                                      np.concatenate([[0], np.cumsum(lengths[chosen])])))
        return streams

    def _plan_phase(self, number: int, section: dict, first: int, source_documents: SourceDocuments) -> Phase:
        seq_len = section["seq_len"]
        streams = self._streams(number, section, source_documents)
        samples = phase_samples(section)
        per_epoch = np.array([max(0, (s.tokens - 1) // seq_len) for s in streams], dtype=np.int64)
        max_epochs = np.array([section["max_epochs"].get(s.source, 1) for s in streams], dtype=np.float64)
        caps = np.floor(per_epoch * max_epochs).astype(np.int64)
        self._cap_tiers(number, section, streams, samples, caps)
        counts = plan_counts(samples, np.array([s.target for s in streams]), caps, f"phases.{number}")
        offsets = np.array([(_key(self.recipe["seed"], section["name"], s.name, "offset") >> 11) / float(1 << 53)
                            for s in streams])
        return Phase(number, section["name"], seq_len, first, samples, streams, per_epoch, max_epochs, counts,
                     offsets)

    def _cap_tiers(self, number: int, section: dict, streams: list[Stream], samples: int, caps: np.ndarray) -> None:
        """Cap each stream of a tier under max_tier_share at its weight's part of the tier's samples,
        so that no redistribution takes the tier past its share."""
        for tier, share in section["max_tier_share"].items():
            members = []
            for position, stream in enumerate(streams):
                if stream.source not in self.source_tiers:
                    raise RecipeError(f"recipe field phases.{number}.max_tier_share: the manifest names no tier for "
                                      f"source {stream.source} (rebuild it with this tokenmill)")
                if self.source_tiers[stream.source] == tier:
                    members.append(position)
            weight = sum(streams[position].target for position in members)
            if weight > share + 1e-9:
                raise RecipeError(f"recipe field phases.{number}.max_tier_share.{tier}: the weights give the {tier} "
                                  f"sources {weight:.6g} of the phase, more than its cap {share}")
            allowed = int(np.floor(share * samples))
            for position in members:
                caps[position] = min(caps[position], int(np.floor(allowed * streams[position].target / weight)))

    def phase_of(self, index: int) -> Phase:
        if not 0 <= index < self.total_samples:
            raise IndexError(f"sample {index} is outside the recipe's {self.total_samples} samples")
        for phase in self.phases:
            if index < phase.first + phase.samples:
                return phase
        raise AssertionError("unreachable")

    def locate(self, index: int) -> tuple[Phase, int, int, int]:
        """(phase, stream number, epoch, position of the sample in its stream) of a global index."""
        phase = self.phase_of(index)
        streams, ks = phase.schedule()
        stream, k = int(streams[index - phase.first]), int(ks[index - phase.first])
        epoch, offset = divmod(k, int(phase.per_epoch[stream]))
        key = _key(self.recipe["seed"], phase.name, phase.streams[stream].name, "epoch", epoch)
        return phase, stream, epoch, permute(offset, int(phase.per_epoch[stream]), key)

    def replay(self) -> list[dict]:
        """Per phase and stream: recipe weight, planned and realized share, epochs (the schedule of
        every sample is computed, no token is read)."""
        rows = []
        for phase in self.phases:
            streams, _ = phase.schedule()
            realized = np.bincount(streams, minlength=len(phase.streams))
            for number, stream in enumerate(phase.streams):
                planned = phase.counts[number] / phase.samples
                rows.append({"phase": phase.name, "stream": stream.name, "weight": stream.target,
                             "planned": planned, "realized": realized[number] / phase.samples,
                             "relative_error": abs(realized[number] / phase.samples - planned) / planned if planned else 0.0,
                             "samples": int(realized[number]), "per_epoch": int(phase.per_epoch[number]),
                             "epochs": realized[number] / phase.per_epoch[number] if phase.per_epoch[number] else 0.0,
                             "max_epochs": float(phase.max_epochs[number])})
        return rows

    def shard_shares(self, phase_name: str) -> dict[int, float]:
        """Each shard's share of a phase's samples (by shard number): each stream's planned share
        spread over its shards by tokens."""
        phase = next((p for p in self.phases if p.name == phase_name), None)
        if phase is None:
            raise RecipeError(f"recipe field phases: no phase named {phase_name!r}")
        shares: dict[int, float] = {}
        for number, stream in enumerate(phase.streams):
            share = phase.counts[number] / phase.samples
            per_shard = np.bincount(stream.shards, weights=np.diff(stream.starts))
            for shard in np.flatnonzero(per_shard):
                shares[int(shard)] = shares.get(int(shard), 0.0) + share * per_shard[shard] / stream.tokens
        return shares


class Steps:
    """The global batch G steps are counted in, and the global sample indices a step gives each
    data-parallel rank."""

    def __init__(self, recipe: dict, global_batch: int | None = None):
        """`global_batch`: the trainer's, when the recipe declares none (or the same one)."""
        self.recipe = recipe
        self.global_batch = None
        if global_batch is not None or "global_batch" in recipe:
            self.global_batch = self.checked_global_batch(recipe["global_batch"] if global_batch is None
                                                          else global_batch)

    def checked_global_batch(self, global_batch: int | None = None) -> int:
        """The global batch steps are counted in: the one given, or else the recipe's (or the one
        these steps were built with); every phase must be whole steps of it."""
        if global_batch is None:
            if self.global_batch is None:
                raise ValueError("no global batch: set recipe field global_batch or pass global_batch")
            return self.global_batch
        if not isinstance(global_batch, (int, np.integer)) or global_batch < 1:
            raise ValueError(f"global batch {global_batch!r} is not a positive integer")
        declared = self.recipe.get("global_batch")
        if declared is not None and global_batch != declared:
            raise RecipeError(f"recipe field global_batch: the recipe declares {declared}, "
                              f"but the trainer asks for global batch {global_batch}")
        if self.global_batch is not None and global_batch != self.global_batch:
            raise ValueError(f"the loader was built for global batch {self.global_batch}, "
                             f"but the trainer asks for global batch {global_batch}")
        if global_batch != self.global_batch:  # the one built with was checked when it was set
            problems = whole_step_problems(self.recipe["phases"], int(global_batch))
            if problems:
                raise RecipeError(f"global batch {global_batch} does not make every phase whole steps:\n  "
                                  + "\n  ".join(problems))
        return global_batch

    def indices(self, global_step: int, dp_rank: int, dp_world_size: int,
                global_batch: int | None = None) -> np.ndarray:
        global_batch = self.checked_global_batch(global_batch)
        if global_batch % dp_world_size:
            raise ValueError(f"global batch {global_batch} is not a multiple of dp_world_size {dp_world_size}")
        if not 0 <= dp_rank < dp_world_size:
            raise ValueError(f"dp_rank {dp_rank} is outside dp_world_size {dp_world_size}")
        return global_step * global_batch + dp_rank + dp_world_size * np.arange(global_batch // dp_world_size)
