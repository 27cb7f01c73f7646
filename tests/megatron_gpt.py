"""megatron-core's own GPTDataset over tokenmill shards (for the interop test and the loader bench)."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
    from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
    from megatron.core.datasets.megatron_tokenizer import MegatronLegacyTokenizer

from tokenmill.tokenize import load_tokenizer


class HFTokenizer(MegatronLegacyTokenizer):
    """The manifest's tokenizer.json as megatron-core's datasets expect a tokenizer."""

    def __init__(self, path: str, eod_id: int):
        super().__init__(path)
        self._tokenizer, _ = load_tokenizer(path)
        self._eod = eod_id

    def tokenize(self, text):
        return self._tokenizer.encode(text).ids

    def detokenize(self, ids):
        return self._tokenizer.decode(list(ids))

    @property
    def vocab(self):
        return self._tokenizer.get_vocab()

    @property
    def inv_vocab(self):
        return {i: t for t, i in self._tokenizer.get_vocab().items()}

    @property
    def vocab_size(self):
        return self._tokenizer.get_vocab_size()

    @property
    def eod(self):
        return self._eod


def gpt_dataset(blend: list[tuple[float, str]], seq_len: int, samples: int, tokenizer: HFTokenizer, seed: int,
                workdir: Path, attention_mask: bool = True):
    """The blended train dataset megatron-core builds from a --data-path blend. The shards are
    copied into `workdir` first: GPTDataset writes its index cache beside the shards it reads
    (with no path_to_cache, which would need a torch.distributed process group)."""
    prefixes = []
    for number, (_, prefix) in enumerate(blend):
        copy = Path(workdir) / f"shard-{number}"
        for suffix in (".bin", ".idx"):
            shutil.copyfile(f"{prefix}{suffix}", f"{copy}{suffix}")
        prefixes.append(str(copy))
    config = GPTDatasetConfig(random_seed=seed, sequence_length=seq_len,
                              blend=(prefixes, [weight for weight, _ in blend]),
                              split="100,0,0", path_to_cache=None, tokenizer=tokenizer,
                              reset_position_ids=False, reset_attention_mask=False, eod_mask_loss=False,
                              create_attention_mask=attention_mask)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        train, _, _ = BlendedMegatronDatasetBuilder(GPTDataset, [samples, 0, 0], lambda: True, config).build()
    return train
