"""schedule: which sample of which stream every global sample index is, and which global indices
a step gives each data-parallel rank, as a pure function of the recipe and each source's
document lengths. Nothing here reads a token: the shards come in as a table of documents.

- A *stream* is a source's documents (or those of one length bucket of it) concatenated in
  manifest order; sample j of a stream is its tokens [j*seq_len, j*seq_len + seq_len + 1).
  In a phase that keeps groups whole (`groups`), the stream is the source's groups instead (a
  document of no group is a group of one), each group's documents in their group order and the
  groups in a keyed order of their ids, new for every phase; a length bucket takes a group by
  its whole length.
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
# Where a phase names no long_share, the length from which the report counts a unit as long (tokens):
# the and ProLong's line between long-context material and the rest
LONG_TOKENS = 16384
(_C1, _C2), _MASK64 = FMIX64_MULTIPLIERS, (1 << 64) - 1

# (source, recipe field naming it) -> per document of the source, in manifest order: the number
# of its shard, its number in that shard, its length in tokens
SourceDocuments = Callable[[str, str], tuple[np.ndarray, np.ndarray, np.ndarray]]
# (source, recipe field naming it) -> per document of the source, in manifest order: its group's
# id (a document of no group: an id of its own) and its place in the group
SourceGroups = Callable[[str, str], tuple[list[str], np.ndarray]]


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


def length_streams(section: dict, source: str) -> list[tuple[str | None, tuple[float, float], float]]:
    """(bucket name, [low, high) tokens, share of the source's weight) of each stream a phase
    makes of a source: its bucket_weights' buckets; else, where the phase asks for long_share,
    its long documents (groups, where the phase keeps them whole) and its short ones; else one."""
    buckets = section["bucket_weights"].get(source)
    if buckets:
        return [(bucket, BUCKETS[bucket], share) for bucket, share in buckets.items()]
    long_share = section.get("long_share")
    if long_share:
        least = long_share["min_tokens"]
        return [("long", (least, np.inf), long_share["share"]), ("short", (0, least), 1.0 - long_share["share"])]
    return [(None, (0, np.inf), 1.0)]


def unit_starts(stream: Stream) -> np.ndarray:
    """Where the units a stream's samples are cut from start (its groups, where its phase keeps
    them whole, else its documents), and its length at the end."""
    return stream.group_starts if stream.group_starts is not None else stream.starts


def single_unit_share(stream: Stream, seq_len: int, samples: int) -> float:
    """The share of a stream's samples (tokens [j*seq_len, j*seq_len + seq_len + 1)) inside which
    no unit starts: each unit start b > 0 lies inside exactly sample (b - 1) // seq_len."""
    if not samples:
        return 0.0
    inner = unit_starts(stream)[1:-1]
    holding = np.unique((inner[inner > 0] - 1) // seq_len)
    return 1.0 - int((holding < samples).sum()) / samples


def source_counts(samples: int, streams: list, caps: np.ndarray, where: str) -> np.ndarray:
    """Samples per stream: each source's share of `samples` first (plan_counts over the sources,
    each capped at what its streams can take), then each source's samples over its streams (its
    length buckets) by their weights, a capped bucket's excess going to the source's other
    buckets. A source keeps its weight's share however its buckets are capped."""
    targets = np.array([stream.target for stream in streams], dtype=np.float64)
    sources = list(dict.fromkeys(stream.source for stream in streams))
    source_of = np.array([sources.index(stream.source) for stream in streams], dtype=np.int64)
    takes = np.where(targets > 0, caps, 0)  # a bucket of weight 0 takes none of its source's samples
    per_source = plan_counts(samples, np.bincount(source_of, weights=targets, minlength=len(sources)),
                             np.bincount(source_of, weights=takes, minlength=len(sources)).astype(np.int64), where)
    counts = np.zeros(len(streams), dtype=np.int64)
    for source, count in enumerate(per_source):
        members = np.flatnonzero(source_of == source)
        counts[members] = plan_counts(int(count), targets[members], caps[members], where)
    return counts


@dataclass
class Stream:
    name: str  # the source, or source[bucket]
    source: str
    target: float  # weight in the recipe
    shards: np.ndarray  # per document: the number of its shard in the manifest
    documents: np.ndarray  # per document: its number in that shard
    starts: np.ndarray  # token offset of each document in the stream, and the total at the end
    # in a phase that keeps groups whole: the token offset of each group, and the total at the end
    group_starts: np.ndarray | None = None
    mask_groups: bool = False  # cu_seqlens marks where groups start, not documents

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

    @property
    def keeps_groups(self) -> bool:
        return any(stream.group_starts is not None for stream in self.streams)

    def schedule(self) -> tuple[np.ndarray, np.ndarray]:
        if self._schedule is None:
            self._schedule = interleave(self.counts, self.offsets)
        return self._schedule


class Schedule:
    """The recipe's phases over the documents `source_documents` gives for each source, and
    where each global sample index lies in them."""

    def __init__(self, recipe: dict, source_documents: SourceDocuments, source_tiers: dict[str, str] | None = None,
                 source_groups: SourceGroups | None = None):
        """`source_tiers`: source -> tier (the manifest's), for the phases' max_tier_share;
        `source_groups`: the documents' groups, for the phases that keep groups whole."""
        self.recipe = recipe
        self.source_tiers = source_tiers or {}
        self.source_groups = source_groups
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
            where = f"phases.{number}.weights.{source}"
            shard_numbers, documents, lengths = source_documents(source, where)
            if section["groups"]:
                order, unit_of = self._group_order(section["name"], source, where)
                shard_numbers, documents, lengths, unit_of = (shard_numbers[order], documents[order], lengths[order],
                                                              unit_of[order])
            else:
                unit_of = np.arange(len(lengths))
            unit_lengths = np.bincount(unit_of, weights=lengths).astype(np.int64) if len(lengths) else lengths
            for bucket, (low, high), share in length_streams(section, source):
                chosen = ((unit_lengths >= low) & (unit_lengths < high))[unit_of]
                starts = np.concatenate([[0], np.cumsum(lengths[chosen])])
                group_starts = None
                if section["groups"]:
                    units = unit_of[chosen]
                    first = np.concatenate([[True], units[1:] != units[:-1]]) if len(units) else units.astype(bool)
                    group_starts = np.concatenate([starts[:-1][first], starts[-1:]])
                streams.append(Stream(source if bucket is None else f"{source}[{bucket}]", source, weight * share,
                                      shard_numbers[chosen], documents[chosen], starts, group_starts,
                                      section["mask"] == "group"))
        return streams

    def _group_order(self, phase: str, source: str, where: str) -> tuple[np.ndarray, np.ndarray]:
        """The source's documents (by manifest number) in a phase that keeps groups whole: groups in
        the keyed order of their ids, each group's documents by their place in it (then manifest
        order); and the number of each one's group in that order."""
        if self.source_groups is None:
            raise RecipeError(f"recipe field {where}: the phase keeps groups whole, but no group of the "
                              f"manifest's documents was given")
        group_ids, positions = self.source_groups(source, where)
        names, group_of = np.unique(np.asarray(group_ids, dtype=object), return_inverse=True)
        prefix = f"{self.recipe['seed']}/{phase}/{source}/group/"
        keys = np.array([hash64(prefix + name) for name in names], dtype=np.uint64)
        rank = np.empty(len(names), dtype=np.int64)
        rank[np.lexsort((names.astype(str), keys))] = np.arange(len(names))
        order = np.lexsort((np.arange(len(group_of)), np.asarray(positions, dtype=np.int64), rank[group_of]))
        return order, rank[group_of]

    def _plan_phase(self, number: int, section: dict, first: int, source_documents: SourceDocuments) -> Phase:
        seq_len = section["seq_len"]
        streams = self._streams(number, section, source_documents)
        samples = phase_samples(section)
        per_epoch = np.array([max(0, (s.tokens - 1) // seq_len) for s in streams], dtype=np.int64)
        max_epochs = np.array([section["max_epochs"].get(s.source, 1) for s in streams], dtype=np.float64)
        caps = np.floor(per_epoch * max_epochs).astype(np.int64)
        self._cap_tiers(number, section, streams, samples, caps)
        counts = source_counts(samples, streams, caps, f"phases.{number}")
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

    def phase_named(self, name: str) -> Phase:
        phase = next((phase for phase in self.phases if phase.name == name), None)
        if phase is None:
            raise RecipeError(f"recipe field phases: no phase named {name!r}")
        return phase

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

    def length_report(self) -> list[dict]:
        """Per phase and source: its weight and realised share of the phase; the lengths of the
        units its samples are cut from (documents, or whole groups where the phase keeps them):
        p50/p90/p99/max tokens; the share of its tokens from units of at least `long_tokens`
        (long_share's min_tokens, else LONG_TOKENS): natural (in the shards), planned (long_share's
        share, else natural) and realised (the samples' streams); the share of its samples that
        hold a single unit. Samples are packed, so none is padded."""
        rows = []
        for phase in self.phases:
            section = self.recipe["phases"][phase.number]
            long_tokens = (section.get("long_share") or {}).get("min_tokens", LONG_TOKENS)
            by_source: dict[str, list[int]] = {}
            for number, stream in enumerate(phase.streams):
                by_source.setdefault(stream.source, []).append(number)
            for source, numbers in by_source.items():
                lengths = [np.diff(unit_starts(phase.streams[n])) for n in numbers]
                units = np.concatenate(lengths)
                samples = int(phase.counts[numbers].sum())

                def per_sample(shares: list[float]) -> float:  # the streams' shares, weighted by their samples
                    return sum(int(phase.counts[n]) * share for n, share in zip(numbers, shares)) / samples if samples else 0.0

                tokens = max(int(units.sum()), 1)
                long_of = [int(part[part >= long_tokens].sum()) / max(int(part.sum()), 1) for part in lengths]
                single = [single_unit_share(phase.streams[n], phase.seq_len, int(phase.per_epoch[n])) for n in numbers]
                natural = int(units[units >= long_tokens].sum()) / tokens
                percentiles = np.percentile(units, [50, 90, 99]) if len(units) else np.zeros(3)
                rows.append({
                    "phase": phase.name, "source": source, "seq_len": phase.seq_len,
                    "weight": float(sum(phase.streams[n].target for n in numbers)),
                    "realized": samples / phase.samples, "units": len(units),
                    **{f"p{q}": int(value) for q, value in zip((50, 90, 99), percentiles)},
                    "max": int(units.max()) if len(units) else 0, "long_tokens": long_tokens,
                    "long_natural": natural,
                    "long_planned": section["long_share"]["share"] if section.get("long_share")
                    and source not in section["bucket_weights"] else natural,
                    "long_realized": per_sample(long_of), "single_unit": per_sample(single),
                    "padding": 0.0})
        return rows

    def shard_shares(self, phase_name: str) -> dict[int, float]:
        """Each shard's share of a phase's samples (by shard number): each stream's planned share
        spread over its shards by tokens."""
        phase = self.phase_named(phase_name)
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
