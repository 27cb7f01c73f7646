"""ablate_candidate: one candidate of the ablation (a quality threshold's or a heuristic rule set's
pool of the version's documents, or a mixture over its manifest) and the recipe its proxies train on."""

import argparse
import json

import tokenmill.job  # noqa: F401  (first: see its docstring)
from tokenmill.ablate.candidates import build_mixture_candidate, build_pool_candidate, is_pool
from tokenmill.io import atomic_output, read_json
from tokenmill.plan import read_plan


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", required=True, help="the candidate: keep_top-<q>, rules-<name> or mixture-<n>")
    parser.add_argument("--version", required=True)
    parser.add_argument("--manifest", required=True, help="the version's manifest")
    parser.add_argument("--plan", required=True, help="the plan: each part's judge table and score files")
    parser.add_argument("--fasttext-metrics", required=True, help="train_quality_fasttext's metrics: its languages")
    parser.add_argument("--encoder-metrics", required=True, help="train_quality_encoder's metrics: its languages")
    parser.add_argument("--language-table", required=True, help="quality.language_table: per-language thresholds")
    parser.add_argument("--settings", required=True, help="tokenmill.ablate.candidates.candidate_settings, as JSON")
    parser.add_argument("--out", required=True, help="the candidate's folder")
    args = parser.parse_args(argv)
    settings = json.loads(args.settings)
    with atomic_output(args.out, directory=True) as folder:
        if is_pool(args.name):
            valid = {"fasttext": read_json(args.fasttext_metrics)["languages"],
                     "encoder": read_json(args.encoder_metrics)["languages"], "naturalness": None}
            candidate = build_pool_candidate(args.name, args.manifest, read_plan(args.plan, version=args.version),
                                             settings, valid, args.language_table, str(folder))
        else:
            candidate = build_mixture_candidate(args.name, args.manifest, settings, str(folder))
    print(json.dumps({key: candidate[key] for key in ("candidate", "kind", "tokens", "weights")}, indent=1))


if __name__ == "__main__":
    main()
