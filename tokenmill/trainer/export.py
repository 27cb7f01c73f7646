"""export: a phase that keeps groups whole, written as Megatron shards of one document per group.

Megatron's GPTDataset shuffles documents anew every epoch and finds where documents end by their
EOD tokens, so a group written as its documents would be scattered and split. Here each group
(a code repository's documents, a chain) is one document: its documents' tokens in the group's
order, the EOD that ends each of them dropped but the last. One shard per stream of the phase
(a source, or one length bucket of it), groups in the phase's keyed order; the blend gives each
shard its stream's planned share of the phase.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from tokenmill.io import atomic_output, write_json
from tokenmill.shards.megatron import CODE_DTYPES, MegatronWriter
from tokenmill.trainer.loader import Loader
from tokenmill.trainer.recipe import RecipeError

EXPORT_LISTING = "export.json"


def export_groups(loader: Loader, phase_name: str, out_dir: str | Path) -> list[tuple[float, str]]:
    """Write the phase's groups under `out_dir` (a directory written atomically): (weight, path
    prefix) per shard, Megatron's --data-path blend."""
    phase = loader.phase_named(phase_name)
    if not phase.keeps_groups:
        raise RecipeError(f"recipe field phases.{phase.number}.groups: phase {phase_name!r} does not keep groups "
                          f"whole; a per-group export needs groups: true")
    eod = loader.manifest["tokenizer"]["eod_id"]
    dtype = CODE_DTYPES[loader.shards[0]["dtype_code"]]
    out_dir = Path(out_dir)
    blend, listing = [], []
    with atomic_output(str(out_dir), directory=True) as temp:
        for number, stream in enumerate(phase.streams):
            share = phase.counts[number] / phase.samples
            if not share or not stream.tokens:
                continue
            name = f"{number:02d}-{re.sub(r'[^A-Za-z0-9_.-]', '_', stream.name)}"
            writer = MegatronWriter(Path(temp) / name, dtype)
            first_documents = np.searchsorted(stream.starts, stream.group_starts)
            for begin, end in zip(first_documents[:-1], first_documents[1:]):
                pieces = [loader.reader.document_tokens(int(stream.shards[d]), int(stream.documents[d]))
                          for d in range(begin, end)]
                inner = [piece[:-1] if len(piece) and piece[-1] == eod else piece for piece in pieces[:-1]]
                writer.add(np.concatenate(inner + pieces[-1:]))
            writer.close()
            blend.append((float(share), str(out_dir / name)))
            listing.append({"shard": name, "stream": stream.name, "share": float(share), "groups": len(writer.lengths),
                            "tokens": writer.n_tokens})
        write_json(Path(temp) / EXPORT_LISTING, {"recipe_id": loader.recipe["recipe_id"], "phase": phase_name,
                                                 "manifest_sha256": loader.recipe["manifest_sha256"],
                                                 "shards": listing})
    return blend
