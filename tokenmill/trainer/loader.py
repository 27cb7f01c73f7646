"""loader: the samples a trainer consumes, as a pure function of the recipe, the manifest and
(global_step, dp_rank, dp_world_size, micro/global batch). No other state: a checkpoint's
data state is the global step plus the skip set.

- A *stream* is a source's documents (or those of one length bucket of it) concatenated in
  manifest order; sample j of a stream is its tokens [j*seq_len, j*seq_len + seq_len + 1),
  packed across document boundaries, with `cu_seqlens` marking where documents start.
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
  steps of G (recipe field global_batch, or the G the loader is given), so that a step never
  mixes two phases; the loader refuses any other G before serving a sample.
- Shards are memory-mapped and their .bin/.idx sha256 checked against the manifest the
  first time the loader opens them (when the loader is built); a failing shard is replaced
  by the next healthy shard of its source and recorded in the skip set.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from tokenmill.hashing import FMIX64_MULTIPLIERS, fmix64
from tokenmill.hashing import hash64
from tokenmill.hashing import sha256_file
from tokenmill.io import read_json, read_jsonl_zst
from tokenmill.shards.versions import TOMBSTONES, read_tombstones
from tokenmill.shards.megatron import MegatronReader
from tokenmill.trainer.recipe import BUCKETS, RecipeError, phase_samples, whole_step_problems

_ROUNDS = 4
(_C1, _C2), _MASK64 = FMIX64_MULTIPLIERS, (1 << 64) - 1
_SHA_CACHE: dict[tuple, str] = {}  # (path, size, mtime_ns) -> sha256, for every loader of the process


class LoaderError(RuntimeError):
    pass


def _cached_sha256(path: Path) -> str:
    stat = path.stat()
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _SHA_CACHE:
        _SHA_CACHE[key] = sha256_file(path)
    return _SHA_CACHE[key]


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
    shards: np.ndarray  # per document: index into Loader.shards
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


@dataclass(frozen=True)
class Sample:
    index: int
    phase: str
    source: str
    stream: str
    epoch: int
    position: int  # which sample of its stream (after the permutation)
    tokens: np.ndarray  # seq_len + 1 token ids (int64)
    cu_seqlens: np.ndarray  # document starts inside `tokens`, then len(tokens)


class Loader:
    def __init__(self, recipe: dict, manifest_path: str | os.PathLike, skip: tuple | list = (),
                 global_batch: int | None = None):
        """`global_batch`: the trainer's, when the recipe declares none (or the same one)."""
        self.recipe = recipe
        self.global_batch = None
        if global_batch is not None or "global_batch" in recipe:
            self.global_batch = self.checked_global_batch(recipe["global_batch"] if global_batch is None
                                                          else global_batch)
        self.manifest_path = Path(manifest_path)
        actual = sha256_file(self.manifest_path)
        if actual != recipe["manifest_sha256"]:
            raise RecipeError(f"recipe field manifest_sha256: pins {recipe['manifest_sha256']}, but "
                              f"{self.manifest_path} has sha256 {actual}")
        self.manifest = read_json(self.manifest_path)
        if self.manifest["tokenizer"]["sha256"] != recipe["tokenizer_sha256"]:
            raise RecipeError(f"recipe field tokenizer_sha256: pins {recipe['tokenizer_sha256']}, but the manifest's "
                              f"tokenizer has {self.manifest['tokenizer']['sha256']}")
        self.root = self.manifest_path.parent
        self.shards = self.manifest["shards"]
        self.tombstones = read_tombstones(self.manifest_path)
        self.skip_set = set(skip)
        self._healthy: dict[int, bool] = {}
        self._readers: dict[int, MegatronReader] = {}
        self.phases: list[Phase] = []
        first = 0
        for number, section in enumerate(recipe["phases"]):
            phase = self._plan_phase(number, section, first)
            self.phases.append(phase)
            first += phase.samples
        self.total_samples = first

    # -- shards -------------------------------------------------------------------------------------

    def _shard_ok(self, number: int) -> bool:
        """sha256 of the shard's .bin and .idx against the manifest, once per process."""
        shard = self.shards[number]
        if shard["path"] in self.skip_set:
            return False
        if number not in self._healthy:
            prefix = self.root / shard["path"]
            try:
                ok = (_cached_sha256(Path(f"{prefix}.bin")) == shard["bin_sha256"]
                      and _cached_sha256(Path(f"{prefix}.idx")) == shard["idx_sha256"])
            except OSError:
                ok = False
            self._healthy[number] = ok
            if not ok:
                self.skip_set.add(shard["path"])
        return self._healthy[number]

    def _reader(self, number: int) -> MegatronReader:
        if number not in self._readers:
            self._readers[number] = MegatronReader(self.root / self.shards[number]["path"])
        return self._readers[number]

    def _source_shards(self, source: str, where: str) -> list[int]:
        """The source's shards in manifest order, a failing one replaced by the next healthy one."""
        numbers = [i for i, shard in enumerate(self.shards) if shard["source"] == source]
        if not numbers and source in self.manifest["sources"]:
            reasons = [f"{shard['path']}: {'; '.join(shard['reasons'])}"
                       for shard in self.manifest.get("excluded_shards", []) if shard["source"] == source]
            raise RecipeError(f"recipe field {where}: every shard of {source!r} failed validation and was left "
                              f"out of the manifest ({', '.join(reasons)})")
        if not numbers:
            raise RecipeError(f"recipe field {where}: the manifest has no source {source!r} "
                              f"(it has {', '.join(sorted(self.manifest['sources']))})")
        deleted = [self.tombstones[self.shards[i]["path"]] for i in numbers if self.shards[i]["path"] in self.tombstones]
        if deleted:
            first = deleted[0]
            raise LoaderError(f"{len(deleted)} of {len(numbers)} shards of {source} were deleted on {first['date']} "
                              f"({first['reason']}); tombstone of {first['path']} (sha256 {first['bin_sha256'][:12]}..., "
                              f"{first['bin_bytes']} bytes) in {self.root / TOMBSTONES}")
        healthy = [self._shard_ok(i) for i in numbers]
        failed_share = healthy.count(False) / len(healthy)
        if failed_share > self.recipe["max_skipped_share"] or not any(healthy):
            bad = [self.shards[i]["path"] for i, ok in zip(numbers, healthy) if not ok]
            raise LoaderError(f"{len(bad)} of {len(numbers)} shards of {source} fail their sha256 check "
                              f"(max_skipped_share {self.recipe['max_skipped_share']}): {', '.join(bad)}")
        layout = []
        for position, number in enumerate(numbers):
            step = 0
            while not healthy[(position + step) % len(numbers)]:
                step += 1
            layout.append(numbers[(position + step) % len(numbers)])
        return layout

    # -- planning -----------------------------------------------------------------------------------

    def _streams(self, number: int, section: dict) -> list[Stream]:
        streams = []
        for source, weight in section["weights"].items():
            shard_numbers, documents, lengths = [], [], []
            for shard in self._source_shards(source, f"phases.{number}.weights.{source}"):
                shard_lengths = np.asarray(self._reader(shard).lengths, dtype=np.int64)
                shard_numbers.append(np.full(len(shard_lengths), shard, dtype=np.int32))
                documents.append(np.arange(len(shard_lengths), dtype=np.int64))
                lengths.append(shard_lengths)
            shard_numbers, documents, lengths = map(np.concatenate, (shard_numbers, documents, lengths))
            buckets = section["bucket_weights"].get(source) or {None: 1.0}
            for bucket, share in buckets.items():
                low, high = BUCKETS[bucket] if bucket else (0, np.inf)
                chosen = (lengths >= low) & (lengths < high)
                streams.append(Stream(source if bucket is None else f"{source}[{bucket}]", source, weight * share,
                                      shard_numbers[chosen], documents[chosen],
                                      np.concatenate([[0], np.cumsum(lengths[chosen])])))
        return streams

    def _plan_phase(self, number: int, section: dict, first: int) -> Phase:
        seq_len = section["seq_len"]
        streams = self._streams(number, section)
        samples = phase_samples(section)
        per_epoch = np.array([max(0, (s.tokens - 1) // seq_len) for s in streams], dtype=np.int64)
        max_epochs = np.array([section["max_epochs"].get(s.source, 1) for s in streams], dtype=np.float64)
        caps = np.floor(per_epoch * max_epochs).astype(np.int64)
        counts = plan_counts(samples, np.array([s.target for s in streams]), caps, f"phases.{number}")
        offsets = np.array([(_key(self.recipe["seed"], section["name"], s.name, "offset") >> 11) / float(1 << 53)
                            for s in streams])
        return Phase(number, section["name"], seq_len, first, samples, streams, per_epoch, max_epochs, counts,
                     offsets)

    # -- samples ------------------------------------------------------------------------------------

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

    def sample(self, index: int) -> Sample:
        phase, number, epoch, position = self.locate(index)
        stream = phase.streams[number]
        start, stop = position * phase.seq_len, position * phase.seq_len + phase.seq_len + 1
        first = int(np.searchsorted(stream.starts, start, side="right")) - 1
        last = int(np.searchsorted(stream.starts, stop - 1, side="right")) - 1
        tokens = self._contiguous(stream, first, last, start - int(stream.starts[first]), stop - start)
        if tokens is None:  # the sample spans shards (or a length bucket's gaps): document by document
            pieces = []
            for document in range(first, last + 1):
                begin = int(stream.starts[document])
                tokens = self._reader(int(stream.shards[document]))[int(stream.documents[document])]
                pieces.append(tokens[max(start - begin, 0):stop - begin])
            tokens = np.concatenate(pieces)
        tokens = tokens.astype(np.int64)
        cu_seqlens = np.concatenate([[0], stream.starts[first + 1:last + 1] - start, [len(tokens)]]).astype(np.int32)
        return Sample(index, phase.name, stream.source, stream.name, epoch, position, tokens, cu_seqlens)

    def _contiguous(self, stream: Stream, first: int, last: int, skip: int, count: int) -> np.ndarray | None:
        """One slice of a shard's tokens when documents first..last lie back to back in it."""
        shard = int(stream.shards[first])
        if int(stream.shards[last]) != shard:
            return None
        reader = self._reader(shard)
        begin, end = int(stream.documents[first]), int(stream.documents[last])
        size = reader.dtype.itemsize
        if (int(reader.pointers[end]) - int(reader.pointers[begin])) // size != int(stream.starts[last] - stream.starts[first]):
            return None
        offset = int(reader.pointers[begin]) // size + skip
        return reader.array[offset:offset + count]

    def checked_global_batch(self, global_batch: int | None = None) -> int:
        """The global batch steps are counted in: the one given, or else the recipe's (or the one
        the loader was built with); every phase must be whole steps of it."""
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
        if global_batch != self.global_batch:  # the loader's own was checked when it was built
            problems = whole_step_problems(self.recipe["phases"], int(global_batch))
            if problems:
                raise RecipeError(f"global batch {global_batch} does not make every phase whole steps:\n  "
                                  + "\n  ".join(problems))
        return global_batch

    def step_indices(self, global_step: int, dp_rank: int, dp_world_size: int,
                     global_batch: int | None = None) -> np.ndarray:
        global_batch = self.checked_global_batch(global_batch)
        if global_batch % dp_world_size:
            raise ValueError(f"global batch {global_batch} is not a multiple of dp_world_size {dp_world_size}")
        if not 0 <= dp_rank < dp_world_size:
            raise ValueError(f"dp_rank {dp_rank} is outside dp_world_size {dp_world_size}")
        return global_step * global_batch + dp_rank + dp_world_size * np.arange(global_batch // dp_world_size)

    def micro_batches(self, global_step: int, dp_rank: int, dp_world_size: int, micro_batch: int,
                      global_batch: int | None = None) -> list[dict]:
        """This rank's micro-batches of a step (all of one phase): tokens [micro_batch, seq_len + 1],
        the cu_seqlens of each sample, and the global sample indices."""
        indices = self.step_indices(global_step, dp_rank, dp_world_size, global_batch)
        if len(indices) % micro_batch:
            raise ValueError(f"{len(indices)} samples per rank is not a multiple of micro batch {micro_batch}")
        batches = []
        for chunk in np.split(indices, len(indices) // micro_batch):
            samples = [self.sample(int(i)) for i in chunk]
            batches.append({"indices": chunk, "tokens": np.stack([s.tokens for s in samples]),
                            "cu_seqlens": [s.cu_seqlens for s in samples]})
        return batches

    def iterate(self, start_step: int, dp_rank: int, dp_world_size: int, micro_batch: int,
                global_batch: int | None = None):
        """Micro-batches from `start_step` to the end of the recipe (the plain NumPy iterator); a bad
        global batch fails here, not at the first batch."""
        global_batch = self.checked_global_batch(global_batch)

        def batches():
            for step in range(start_step, self.total_samples // global_batch):
                yield from self.micro_batches(step, dp_rank, dp_world_size, micro_batch, global_batch)

        return batches()

    # -- audits -------------------------------------------------------------------------------------

    def replay(self) -> list[dict]:
        """Per phase and stream: recipe weight, planned and realized share, epochs; no shard I/O
        beyond the plan (the schedule of every sample is computed, nothing is read)."""
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

    def lineage(self, index: int, position: int) -> dict:
        """Where token `position` of sample `index` comes from: its document's doc_id, source, url,
        fetch time and licence (and those of the documents it derives from)."""
        phase, number, _, sample_position = self.locate(index)
        stream = phase.streams[number]
        if not 0 <= position <= phase.seq_len:
            raise IndexError(f"position {position} is outside a sample of {phase.seq_len + 1} tokens")
        offset = sample_position * phase.seq_len + position
        document = int(np.searchsorted(stream.starts, offset, side="right")) - 1
        shard = self.shards[int(stream.shards[document])]
        in_shard = int(stream.documents[document])
        docs = pq.read_table(self.root / f"{shard['path']}.docs.parquet").slice(in_shard, 1).to_pylist()[0]
        record = self._document(shard["source"], docs["snapshot_id"], docs["part"], docs["row"])
        chain = [record]
        while chain[-1].get("derived_from"):
            parent = self._find(shard["source"], chain[-1]["derived_from"])
            if parent is None or len(chain) > 16:
                break
            chain.append(parent)
        return {"index": index, "position": position, "token": int(self.sample(index).tokens[position]),
                "shard": shard["path"], "document_in_shard": in_shard,
                "token_in_document": offset - int(stream.starts[document]),
                **{key: record.get(key) for key in ("doc_id", "source", "url", "fetch_ts", "license_id",
                                                    "derived_from")},
                "derived_chain": [{key: r.get(key) for key in ("doc_id", "url", "fetch_ts", "license_id")}
                                  for r in chain[1:]]}

    def _docs_path(self, source: str, snapshot: str, part: str) -> Path:
        return self.root.parent.parent / "docs" / source / snapshot / f"{part}.jsonl.zst"

    def _document(self, source: str, snapshot: str, part: str, row: int) -> dict:
        for number, record in enumerate(read_jsonl_zst(self._docs_path(source, snapshot, part))):
            if number == row:
                return record
        raise LoaderError(f"{self._docs_path(source, snapshot, part)} has no row {row}")

    def _find(self, source: str, doc_id: str) -> dict | None:
        for path in sorted((self.root.parent.parent / "docs" / source).rglob("*.jsonl.zst")):
            for record in read_jsonl_zst(path):
                if record["doc_id"] == doc_id:
                    return record
        return None

    def megatron_blend(self, phase_name: str) -> list[tuple[float, str]]:
        """(weight, path prefix) per shard for Megatron's --data-path: each stream's planned share
        spread over its shards by tokens (length buckets are not expressible there)."""
        phase = next((p for p in self.phases if p.name == phase_name), None)
        if phase is None:
            raise RecipeError(f"recipe field phases: no phase named {phase_name!r}")
        weights: dict[str, float] = {}
        for number, stream in enumerate(phase.streams):
            share = phase.counts[number] / phase.samples
            per_shard = np.bincount(stream.shards, weights=np.diff(stream.starts), minlength=len(self.shards))
            for shard in np.flatnonzero(per_shard):
                path = str((self.root / self.shards[shard]["path"]).resolve())
                weights[path] = weights.get(path, 0.0) + share * per_shard[shard] / stream.tokens
        return [(weight, path) for path, weight in weights.items()]


def token_dataset(loader: Loader, start_step: int, dp_rank: int, dp_world_size: int, micro_batch: int,
                  global_batch: int | None = None):
    """A torch IterableDataset of this rank's micro-batches from `start_step` (tokens as int64
    tensors, cu_seqlens as int32 tensors)."""
    global_batch = loader.checked_global_batch(global_batch)
    import torch
    from torch.utils.data import IterableDataset

    class TokenDataset(IterableDataset):
        def __iter__(self):
            for batch in loader.iterate(start_step, dp_rank, dp_world_size, micro_batch, global_batch):
                yield {"indices": torch.from_numpy(batch["indices"]), "tokens": torch.from_numpy(batch["tokens"]),
                       "cu_seqlens": [torch.from_numpy(c) for c in batch["cu_seqlens"]]}

    return TokenDataset()


def sample_dataset(loader: Loader):
    """A map-style torch Dataset: item i is global sample i as {tokens, cu_seqlens}."""
    import torch
    from torch.utils.data import Dataset

    class SampleDataset(Dataset):
        def __len__(self):
            return loader.total_samples

        def __getitem__(self, index):
            sample = loader.sample(int(index))
            return {"tokens": torch.from_numpy(sample.tokens), "cu_seqlens": torch.from_numpy(sample.cu_seqlens)}

    return SampleDataset()

