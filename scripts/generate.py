"""generate: one part of a synthetic source, its source part's chosen documents rewritten under each
prompt template by a generator on transformers (CPU), every batch cached as it finishes."""

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.synth.rephrase import main

if __name__ == "__main__":
    main("transformers", description=__doc__)
