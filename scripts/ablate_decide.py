"""ablate_decide: the ablation's decision from its proxies' runs: the best threshold with its seed
spread, the mixture regression and its proposed recipe, the page that shows them
(tokenmill.ablate.decide)."""

import argparse
import json

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.ablate.decide import decide
from tokenmill.io import atomic_output


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("runs", nargs="+", help="the proxies' run files (ablate_train)")
    parser.add_argument("--version", required=True)
    parser.add_argument("--manifest", required=True, help="the version's manifest (the proposed recipe pins it)")
    parser.add_argument("--settings", required=True, help="tokenmill.ablate.candidates.decide_settings, as JSON")
    parser.add_argument("--out", required=True, help="the decision's folder")
    args = parser.parse_args(argv)
    with atomic_output(args.out, directory=True) as folder:
        decision = decide(args.runs, json.loads(args.settings), args.version, args.manifest, str(folder))
    for kind in ("thresholds", "mixtures"):
        if decision[kind] is not None:
            print(kind, json.dumps({key: value for key, value in decision[kind].items() if key != "runs"}, indent=1))


if __name__ == "__main__":
    main()
