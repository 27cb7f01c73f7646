"""The generation engines by name: transformers on the CPU (tokenmill.synth.generator) and vLLM on a
GPU (tokenmill.synth.vllm), behind one interface (tokenizer, context, sha256, engine, device,
complete)."""

from __future__ import annotations

from tokenmill.synth.generator import load_generator
from tokenmill.synth.vllm import vllm_generator


def load_engine(engine: str, path: str, settings: dict, key: str, seed: int = 0):
    """The model at `path` on `engine` (transformers or vllm), pinned by `settings` (a
    synthetic.generators entry) where it pins one; errors name `key`."""
    if engine == "vllm":
        return vllm_generator(path, settings["sha256"], settings["gpu_memory_utilization"], seed, key=key)
    return load_generator(path, settings["sha256"], threads=settings["threads"], seed=seed, key=key)
