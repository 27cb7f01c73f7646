"""annotate: sampled documents scored 0-5 for educational value by a generator on transformers (the
FineWeb-Edu rubric), the parsed scores written as quality labels."""

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.synth.annotate import main

if __name__ == "__main__":
    main("transformers", description=__doc__)
