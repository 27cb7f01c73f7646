"""The vLLM engine of generation (rules generate_vllm and annotate_vllm, on the gpu partition): the
same model directory, prompts and cache as the transformers engine (tokenmill.synth.generator),
with vLLM's batching on a GPU. vllm is an optional package, installed where these rules run; a
job asked to use it where it is absent stops saying so."""

from __future__ import annotations

import importlib.util
from importlib import metadata

from transformers import AutoConfig

from tokenmill.synth.generator import Sampling, checked_model_dir, load_tokenizer


class GeneratorUnavailable(RuntimeError):
    """The engine a config asks for cannot run here."""


class VllmGenerator:
    """A model directory served by vLLM, loaded once."""

    def __init__(self, path: str, sha256: str, gpu_memory_utilization: float, seed: int):
        from vllm import LLM

        self.path, self.sha256 = path, sha256
        self.tokenizer = load_tokenizer(path)
        config = AutoConfig.from_pretrained(path, local_files_only=True)
        self.context = getattr(config, "max_position_embeddings", None) or getattr(config, "n_positions")
        self._llm = LLM(model=path, tokenizer=path, seed=seed, gpu_memory_utilization=gpu_memory_utilization,
                        max_model_len=self.context)

    @property
    def engine(self) -> str:
        return f"vllm-{metadata.version('vllm')}"

    @property
    def device(self) -> dict:
        import torch

        return {"label": f"cuda ({torch.cuda.get_device_name(0)})", "kind": "gpu", "units": 1}

    def complete(self, prompts: list[str], sampling: Sampling, seed: int) -> list[dict]:
        """One output per prompt, as Generator.complete; each prompt sampled with its own seed."""
        from vllm import SamplingParams

        temperature = 0.0 if sampling.greedy else sampling.temperature
        params = [SamplingParams(temperature=temperature, top_p=1.0 if sampling.greedy else sampling.top_p,
                                 max_tokens=sampling.max_new_tokens, repetition_penalty=sampling.repetition_penalty,
                                 seed=(seed + number) % 2**63) for number in range(len(prompts))]
        results = []
        for request in self._llm.generate(prompts, params, use_tqdm=False):
            output = request.outputs[0]
            results.append({"text": output.text, "finish": "stop" if output.finish_reason == "stop" else "length",
                            "prompt_tokens": len(request.prompt_token_ids), "new_tokens": len(output.token_ids)})
        return results


def vllm_generator(path: str, expected_sha256: str | None, gpu_memory_utilization: float, seed: int = 0,
                   key: str = "generator.path") -> VllmGenerator:
    """The model directory on vLLM, or GeneratorUnavailable when the vllm package is not installed."""
    if importlib.util.find_spec("vllm") is None:
        raise GeneratorUnavailable(f"{key}: the vllm engine needs the vllm package where this rule runs (the gpu "
                                   "partition: pip install vllm); it is not installed in this environment")
    return VllmGenerator(path, checked_model_dir(path, expected_sha256, key), gpu_memory_utilization, seed)
