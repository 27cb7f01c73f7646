"""synthetic_inputs: the quality quantiles of the band of documents a synthetic source rewrites, per
language of one snapshot of the source it rewrites."""

import argparse
import json

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.plan import read_plan
from tokenmill.select.thresholds import score_files
from tokenmill.synth.inputs import band_thresholds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--plan", required=True, help="the plan of the snapshot rewritten")
    parser.add_argument("--band", required=True, help="the synthetic source's synthetic.quality_band, as JSON")
    parser.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    thresholds = band_thresholds(score_files(read_plan(args.plan)), json.loads(args.band), args.out)
    for lang, entry in thresholds["languages"].items():
        band = f"band {entry['low']:.6g} - {entry['high']:.6g}" if "low" in entry else "the band of all languages"
        print(f"{lang}: {entry['documents']} documents, {band}")


if __name__ == "__main__":
    main()
