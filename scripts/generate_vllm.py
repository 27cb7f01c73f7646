"""generate_vllm: one part of a synthetic source, rewritten by a generator on vLLM (a GPU), every
batch cached as it finishes."""

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.synth.rephrase import main

if __name__ == "__main__":
    main("vllm", description=__doc__)
