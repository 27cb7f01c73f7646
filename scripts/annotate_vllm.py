"""annotate_vllm: sampled documents scored 0-5 for educational value by a generator on vLLM (a GPU),
the parsed scores written as quality labels."""

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.synth.annotate import main

if __name__ == "__main__":
    main("vllm", description=__doc__)
