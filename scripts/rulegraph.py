"""rulegraph: the workflow's rule graph (snakemake --rulegraph) drawn as SVG for the report."""

import argparse
import subprocess
import sys

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.io import atomic_output
from tokenmill.report.rulegraph import rulegraph_svg


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--snakefile", required=True)
    parser.add_argument("--configfiles", nargs="+", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    # --nolock: the running workflow holds the lock of this working directory; this call only reads the graph
    dot = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", args.snakefile, "--configfiles",
                          *args.configfiles, "--rulegraph", "--nolock"],
                         check=True, capture_output=True, text=True).stdout
    with atomic_output(args.out) as temp:
        temp.write_text(rulegraph_svg(dot), encoding="utf-8")


if __name__ == "__main__":
    main()
