"""Quality classifier for the GPU: a small byte-level transformer encoder trained on the
same labels as the fastText model, scoring documents batched by length, in bf16 on CUDA
and in float32 on the CPU when no GPU exists.

Bytes (not a learned tokenizer) are the input so that the model depends on nothing that
is trained downstream of selection. A strided convolution merges each `patch_bytes` bytes into
one position before attention, whose cost grows with the square of the positions: the model is
trained in every run, and this is most of a small run's fixed cost. On the CPU the thread count
is fixed, so scores are byte-identical from run to run; GPU scores differ from CPU scores in the
last bits.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa
import torch
from torch import nn

from tokenmill.io import atomic_output, read_jsonl_zst, write_json, write_part_rows
from tokenmill.machine import deterministic_torch
from tokenmill.quality.fasttext import POSITIVE, label_languages, prepare, read_labelled

PAD = 256
SCHEMA = pa.schema([("part", pa.string()), ("row", pa.int64()), ("doc_id", pa.string()),
                    ("quality_encoder", pa.float32())])


@dataclass(frozen=True)
class EncoderSettings:
    """The `quality.encoder` config section but parts_per_job (the schema holds the defaults)."""

    dim: int
    layers: int
    heads: int
    max_bytes: int
    patch_bytes: int
    epochs: int
    batch_size: int
    lr: float
    seed: int
    threads: int


class ByteEncoder(nn.Module):
    def __init__(self, settings: EncoderSettings):
        super().__init__()
        self.patch_bytes = settings.patch_bytes
        self.heads = settings.heads
        self.embed = nn.Embedding(PAD + 1, settings.dim, padding_idx=PAD)
        self.patch = nn.Conv1d(settings.dim, settings.dim, settings.patch_bytes, stride=settings.patch_bytes)
        self.position = nn.Embedding(-(-settings.max_bytes // settings.patch_bytes), settings.dim)
        layer = nn.TransformerEncoderLayer(settings.dim, settings.heads, 4 * settings.dim, dropout=0.0,
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, settings.layers, enable_nested_tensor=False)
        self.head = nn.Linear(settings.dim, 1)

    def forward(self, ids: torch.Tensor, padding: torch.Tensor) -> torch.Tensor:
        """`ids` (batch × bytes) padded with PAD at the end to a multiple of patch_bytes (_batch)."""
        patches = self.patch(self.embed(ids).transpose(1, 2)).transpose(1, 2)
        empty_patches = padding.view(ids.shape[0], -1, self.patch_bytes).all(-1)  # padding bytes only
        positions = torch.arange(patches.shape[1], device=ids.device)
        hidden = self.encoder(patches + self.position(positions), mask=self.attention_mask(empty_patches))
        keep = (~empty_patches).unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * keep).sum(1) / keep.sum(1).clamp(min=1)
        return self.head(pooled).squeeze(-1)

    def attention_mask(self, empty_patches: torch.Tensor) -> torch.Tensor:
        """The padding patches as an attention mask (batch × heads, patches, patches) rather than a
        key padding mask, which attention turns into the same mask: torch checks a key padding
        mask's shape with torch._check_with, whose first call imports sympy: 0.5 of the 2.4 CPU-s
        of a small scoring job, with bytecode cached."""
        batch, patches = empty_patches.shape
        return (empty_patches[:, None, None, :].expand(batch, self.heads, patches, patches)
                .reshape(batch * self.heads, patches, patches))


def encode_bytes(text: str, max_bytes: int) -> np.ndarray:
    """The bytes the encoder reads of a text (a byte each: a chunk holds every document's until its batches run)."""
    data = prepare(text, 4 * max_bytes).encode("utf-8")[:max_bytes]
    return np.frombuffer(data, dtype=np.uint8) if data else np.array([ord(" ")], dtype=np.uint8)


def _batch(arrays: list[np.ndarray], device: torch.device, patch_bytes: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = -(-max(len(a) for a in arrays) // patch_bytes) * patch_bytes
    ids = np.full((len(arrays), width), PAD, dtype=np.int64)
    for row, array in enumerate(arrays):
        ids[row, : len(array)] = array
    ids_tensor = torch.from_numpy(ids).to(device)
    return ids_tensor, ids_tensor == PAD


def train_encoder(labelled_path: str, model_path: str, metrics_path: str, settings: EncoderSettings) -> dict:
    """Train on the labelled `train` split on the CPU (small and deterministic); report test accuracy."""
    deterministic_torch(settings.seed, settings.threads)
    records = read_labelled(labelled_path)
    train = [r for r in records if r["split"] == "train"]
    test = [r for r in records if r["split"] == "test"]
    inputs = [encode_bytes(r["text"], settings.max_bytes) for r in train]
    targets = torch.tensor([1.0 if r["label"] == POSITIVE else 0.0 for r in train])
    model = ByteEncoder(settings)
    optimizer = torch.optim.AdamW(model.parameters(), lr=settings.lr)
    loss_fn = nn.BCEWithLogitsLoss()
    generator = torch.Generator().manual_seed(settings.seed)
    device = torch.device("cpu")
    for _ in range(settings.epochs):
        order = torch.randperm(len(train), generator=generator).tolist()
        for start in range(0, len(order), settings.batch_size):
            chosen = order[start:start + settings.batch_size]
            ids, padding = _batch([inputs[i] for i in chosen], device, settings.patch_bytes)
            optimizer.zero_grad()
            loss = loss_fn(model(ids, padding), targets[chosen])
            loss.backward()
            optimizer.step()
    scores = score_texts(model, [r["text"] for r in test], settings, device)
    correct = int(sum((s >= 0.5) == (r["label"] == POSITIVE) for s, r in zip(scores, test)))
    buffer = io.BytesIO()  # saved to memory first: torch names the archive after a file's (temporary) name
    torch.save({"settings": asdict(settings), "state_dict": model.state_dict()}, buffer)
    with atomic_output(model_path) as temp:
        temp.write_bytes(buffer.getvalue())
    metrics = {"train_documents": len(train), "test_documents": len(test),
               "test_accuracy": correct / len(test) if test else None, "languages": label_languages(records),
               "settings": asdict(settings)}
    write_json(metrics_path, metrics)
    return metrics


def load_encoder(model_path: str, device: torch.device) -> tuple[ByteEncoder, EncoderSettings]:
    checkpoint = torch.load(model_path, map_location=device, weights_only=True)
    settings = EncoderSettings(**checkpoint["settings"])
    model = ByteEncoder(settings)
    model.load_state_dict(checkpoint["state_dict"])
    return model.to(device).eval(), settings


@torch.inference_mode()
def score_texts(model: ByteEncoder, texts: Iterable[str], settings: EncoderSettings, device: torch.device,
                batch_tokens: int = 65_536) -> np.ndarray:
    """Probability of the positive class; documents are batched by length (sorted, so a
    batch pads little), in bf16 autocast on CUDA. Only each text's first max_bytes are kept
    while `texts` is read."""
    model.eval()
    # The inference "fast path" of nn.MultiheadAttention has a slow masked softmax on the
    # CPU (about 3x slower than the regular path here); the regular path is exact too.
    torch.backends.mha.set_fastpath_enabled(False)
    arrays = [encode_bytes(t, settings.max_bytes) for t in texts]
    order = sorted(range(len(arrays)), key=lambda i: (len(arrays[i]), i))
    scores = np.zeros(len(arrays), dtype=np.float32)
    start = 0
    while start < len(order):
        stop = start + 1
        while stop < len(order) and (stop - start + 1) * len(arrays[order[stop]]) <= batch_tokens:
            stop += 1
        chosen = order[start:stop]
        ids, padding = _batch([arrays[i] for i in chosen], device, settings.patch_bytes)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=device.type == "cuda"):
            logits = model(ids, padding)
        scores[chosen] = torch.sigmoid(logits.float()).cpu().numpy()
        start = stop
    return scores


def pick_device() -> torch.device:
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def score_encoder_parts(parts: list[tuple[str, str]], model_path: str, out_path: str) -> dict:
    """Score every document of several parts ((name, docs path) pairs) in one pass, so that
    length batches span parts; one output file with each document's part and row."""
    device = pick_device()
    model, settings = load_encoder(model_path, device)
    if device.type == "cpu":
        deterministic_torch(settings.seed, settings.threads)
    names, rows, doc_ids = [], [], []

    def texts() -> Iterator[str]:  # a text is dropped once its bytes are taken: a chunk never holds its texts
        for name, docs_path in parts:
            for row, doc in enumerate(read_jsonl_zst(docs_path)):
                names.append(name)
                rows.append(row)
                doc_ids.append(doc["doc_id"])
                yield doc["text"]

    scores = score_texts(model, texts(), settings, device)
    write_part_rows(out_path, pa.Table.from_pydict(
        {"part": names, "row": rows, "doc_id": doc_ids, "quality_encoder": scores}, schema=SCHEMA))
    return {"parts": len(parts), "documents": len(doc_ids), "device": str(device),
            "gpu": torch.cuda.get_device_name(0) if device.type == "cuda" else None}
