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
    # --nolock: the running workflow holds the lock of this working directory; this call only reads
    # the graph. --workflow-profile none: not profiles/default's SQLite metadata file, which the
    # running head writes to (a SLURM head's array submissions): opening it there failed with
    # "database is locked", failing this job, or the head's next submission.
    graph = subprocess.run([sys.executable, "-m", "snakemake", "--snakefile", args.snakefile, "--configfiles",
                            *args.configfiles, "--rulegraph", "--nolock", "--workflow-profile", "none"],
                           capture_output=True, text=True)
    if graph.returncode:
        raise SystemExit(f"snakemake --rulegraph failed ({graph.returncode}):\n{graph.stderr[-4000:]}")
    with atomic_output(args.out) as temp:
        temp.write_text(rulegraph_svg(graph.stdout), encoding="utf-8")


if __name__ == "__main__":
    main()
