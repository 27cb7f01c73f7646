"""loader: the samples a trainer consumes, as a pure function of the recipe, the manifest and
(global_step, dp_rank, dp_world_size, micro/global batch). No other state: a checkpoint's
data state is the global step plus the skip set.

`Loader` is the public face of three parts, each of which can be used and tested alone:
- tokenmill.trainer.schedule: which (phase, stream, epoch, position) every global sample is,
  and which global samples a step gives each data-parallel rank (reads no token);
- tokenmill.trainer.reader: the manifest the recipe pins, its shards checked and read as token
  arrays (tombstones, sha256 checks, the skip set);
- tokenmill.trainer.lineage: from a token back to its document and source URL.
Sample j of a stream is its tokens [j*seq_len, j*seq_len + seq_len + 1), packed across document
boundaries, with `cu_seqlens` marking where documents start.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from tokenmill.trainer.lineage import Lineage
from tokenmill.trainer.reader import LoaderError, ShardReader
from tokenmill.trainer.schedule import Phase, Schedule, Steps

# LoaderError is raised by the parts but caught by callers of the loader, who import it from here
__all__ = ["Loader", "LoaderError", "Sample", "sample_dataset", "token_dataset"]


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
        # built in this order so that a bad global batch is reported before a bad manifest, and a
        # bad manifest before any shard is opened
        self.steps = Steps(recipe, global_batch)
        self.reader = ShardReader(recipe, manifest_path, skip)
        self.schedule = Schedule(recipe, self.reader.source_documents,
                                 {name: entry.get("tier") for name, entry in self.reader.manifest["sources"].items()
                                  if entry.get("tier")}, self.reader.source_groups)
        self.token_lineage = Lineage(self.reader.root, self.reader.shards)
        # what trainers, the CLI and reports read; none of these is rebound after construction
        self.global_batch = self.steps.global_batch
        self.manifest_path, self.manifest, self.root = self.reader.manifest_path, self.reader.manifest, self.reader.root
        self.shards, self.tombstones, self.skip_set = self.reader.shards, self.reader.tombstones, self.reader.skip_set
        self.phases, self.total_samples = self.schedule.phases, self.schedule.total_samples

    def phase_of(self, index: int) -> Phase:
        return self.schedule.phase_of(index)

    def phase_named(self, name: str) -> Phase:
        return self.schedule.phase_named(name)

    def locate(self, index: int) -> tuple[Phase, int, int, int]:
        """(phase, stream number, epoch, position of the sample in its stream) of a global index."""
        return self.schedule.locate(index)

    def sample(self, index: int) -> Sample:
        phase, number, epoch, position = self.schedule.locate(index)
        stream = phase.streams[number]
        start = position * phase.seq_len
        tokens, cu_seqlens = self.reader.packed(stream, start, start + phase.seq_len + 1)
        return Sample(index, phase.name, stream.source, stream.name, epoch, position, tokens, cu_seqlens)

    def checked_global_batch(self, global_batch: int | None = None) -> int:
        """The global batch steps are counted in: the one given, or else the recipe's (or the one
        the loader was built with); every phase must be whole steps of it."""
        return self.steps.checked_global_batch(global_batch)

    def step_indices(self, global_step: int, dp_rank: int, dp_world_size: int,
                     global_batch: int | None = None) -> np.ndarray:
        return self.steps.indices(global_step, dp_rank, dp_world_size, global_batch)

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

    def replay(self) -> list[dict]:
        """Per phase and stream: recipe weight, planned and realized share, epochs; no shard I/O
        beyond the plan (the schedule of every sample is computed, nothing is read)."""
        return self.schedule.replay()

    def length_report(self) -> list[dict]:
        """Per phase and source: lengths of what its samples are cut from, long-token shares planned
        and realised, and samples of a single document or group (Schedule.length_report)."""
        return self.schedule.length_report()

    def lineage(self, index: int, position: int) -> dict:
        """Where token `position` of sample `index` comes from: its document's doc_id, source, url,
        fetch time and licence (and those of the documents it derives from)."""
        phase, number, _, sample_position = self.schedule.locate(index)
        if not 0 <= position <= phase.seq_len:
            raise IndexError(f"position {position} is outside a sample of {phase.seq_len + 1} tokens")
        origin = self.token_lineage.origin(phase.streams[number], sample_position * phase.seq_len + position)
        return {"index": index, "position": position, "token": int(self.sample(index).tokens[position]), **origin}

    def megatron_blend(self, phase_name: str) -> list[tuple[float, str]]:
        """(weight, path prefix) per shard for Megatron's --data-path: each stream's planned share
        spread over its shards by tokens (length buckets are not expressible there)."""
        return [(weight, str(self.reader.prefix(shard).resolve()))
                for shard, weight in self.schedule.shard_shares(phase_name).items()]


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

