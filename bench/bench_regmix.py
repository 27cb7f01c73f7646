"""Side-by-side: tokenmill.ablate.mixture's regressions against the bare LightGBM call, a plain
linear fit and RegMix's own notebook, on RegMix's published proxy runs (data/bench/regmix-runs).

Each is fitted on the 512 training runs (1M-parameter models) to their Pile-CC validation loss and
ranks the unseen test mixtures: 256 trained at 1M and at 60M parameters, 64 at 1B. Reported: the
Spearman rank correlation of predicted and actual loss at each scale, the 5-fold cross-validated
rank correlation on the training runs (what the pipeline reports when it has no test set), and the
fit's time on one core. Then `propose` on the LightGBM fit, with RegMix's token shares and its
15-epoch bound as caps, beside RegMix's published mixture for its 1B model.

usage: python bench/bench_regmix.py [--samples 100000] [--top 100] [--tiny]
(--tiny: 10,000 candidate mixtures for propose)
"""

from __future__ import annotations

import argparse
import platform
import time

import lightgbm
import numpy as np
import pandas as pd

from common import REPO, add_tiny_option, pin_to_one_cpu  # also puts the repository on the import path
from tokenmill.ablate.mixture import (LIGHTGBM_PARAMS, cross_validated_rank_correlation, fit, propose,
                                      rank_correlation)

RUNS = REPO / "data/bench/regmix-runs"
TARGET = "metric/the_pile_pile_cc_val_loss"
SCALES = ("1m", "60m", "1B")
DOMAIN_PREFIX = "train_the_pile_"
# RegMix's token share of each Pile training domain (mixture_config/synthesize_mixture.py,
# get_token_distribution, at the commit of data/bench/regmix-runs); its runs are sampled around them.
REGMIX_TOKEN_SHARES = {
    "arxiv": 0.113285273, "freelaw": 0.079608651, "nih_exporter": 0.003913491, "pubmed_central": 0.185375901,
    "wikipedia_en": 0.051081359, "dm_mathematics": 0.015962925, "github": 0.101750772, "philpapers": 0.003707518,
    "stackexchange": 0.066529351, "enron_emails": 0.001750772, "gutenberg_pg_19": 0.027085479,
    "pile_cc": 0.236869207, "ubuntu_irc": 0.01184346, "europarl": 0.007929969, "hackernews": 0.008032956,
    "pubmed_abstracts": 0.038825953, "uspto_backgrounds": 0.046446962}
# RegMix's MAXIMUM_USAGE: no domain is read more than 15 times over by the large model
REGMIX_MAXIMUM_USAGE = 15
# The mixture RegMix trained its 1B model with for Pile-CC (mixture_config/config_1b/regmix.yaml), 4 decimals
REGMIX_PUBLISHED = {
    "arxiv": 0.0012, "freelaw": 0.0015, "nih_exporter": 0.0012, "pubmed_central": 0.0031, "wikipedia_en": 0.0159,
    "dm_mathematics": 0.0003, "github": 0.0002, "philpapers": 0.0000, "stackexchange": 0.0003,
    "enron_emails": 0.0017, "gutenberg_pg_19": 0.0016, "pile_cc": 0.8701, "ubuntu_irc": 0.0642,
    "europarl": 0.0000, "hackernews": 0.0119, "pubmed_abstracts": 0.0242, "uspto_backgrounds": 0.0025}


def load_runs(split: str, scale: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The domains, the runs' mixtures [runs, domains] and their Pile-CC loss, rows joined by index."""
    mixtures = pd.read_csv(RUNS / f"{split}_mixture_{scale}.csv")
    losses = pd.read_csv(RUNS / f"{split}_pile_loss_{scale}.csv")
    joined = mixtures.merge(losses[["index", TARGET]], on="index", validate="one_to_one")
    columns = [column for column in mixtures.columns if column != "index"]
    domains = [column.removeprefix(DOMAIN_PREFIX) for column in columns]
    return domains, joined[columns].to_numpy(np.float64), joined[TARGET].to_numpy(np.float64)


def fit_regmix_notebook(weights, loss, test_weights, test_loss):
    """RegMix's regression.ipynb: its settings, early-stopped (3 rounds) on the 1M test set that it
    is then scored on, so its 1M figure is optimistic."""
    regressor = lightgbm.LGBMRegressor(**LIGHTGBM_PARAMS, random_state=42, metric=["l1", "l2"], n_jobs=1,
                                       deterministic=True, force_col_wise=True, verbosity=-1)
    return regressor.fit(weights, loss, eval_X=(test_weights,), eval_y=(test_loss,), eval_metric="l2",
                         callbacks=[lightgbm.early_stopping(stopping_rounds=3, verbose=False)]).predict


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=100_000, help="candidate mixtures propose draws")
    parser.add_argument("--top", type=int, default=100, help="best-predicted candidates propose averages")
    parser.add_argument("--folds", type=int, default=5, help="folds of the cross-validated rank correlation")
    add_tiny_option(parser)
    args = parser.parse_args()
    if args.tiny:
        args.samples = 10_000
    pin_to_one_cpu()
    domains, weights, loss = load_runs("train", "1m")
    tests = {scale: load_runs("test", scale) for scale in SCALES}
    assert all(test_domains == domains for test_domains, _, _ in tests.values())

    def bare_lightgbm():
        return lightgbm.LGBMRegressor(random_state=0, n_jobs=1, deterministic=True, force_col_wise=True,
                                      verbosity=-1).fit(weights, loss).predict

    def plain_linear():
        coefficients = np.linalg.lstsq(weights, loss, rcond=None)[0]
        return lambda mixtures: mixtures @ coefficients

    contenders = [
        ("tokenmill lightgbm", lambda: fit(weights, loss, "lightgbm", sources=domains).predict, "lightgbm"),
        ("tokenmill loglinear", lambda: fit(weights, loss, "loglinear", sources=domains).predict, "loglinear"),
        ("bare LGBMRegressor(), defaults", bare_lightgbm, None),
        ("linear least squares", plain_linear, None),
        ("RegMix notebook (stops on 1M test)", lambda: fit_regmix_notebook(weights, loss, *tests["1m"][1:]), None),
    ]
    print(f"machine: {platform.processor() or platform.machine()}, one core; lightgbm {lightgbm.__version__}; "
          f"fitted on {len(loss)} runs of 1M-parameter models, {len(domains)} domains, target Pile-CC loss")
    print("Spearman rank correlation of predicted and actual loss on unseen mixtures "
          f"({', '.join(f'{scale}: {len(tests[scale][2])}' for scale in SCALES)}); "
          f"cv: {args.folds}-fold on the training runs")
    print(f"{'':36}{'1M':>8}{'60M':>8}{'1B':>8}{'cv':>8}{'fit s':>8}")
    for name, fitter, method in contenders:
        started = time.perf_counter()
        predict = fitter()
        fit_s = time.perf_counter() - started
        correlations = "".join(f"{rank_correlation(predict(test_weights), test_loss):>8.4f}"
                               for _, test_weights, test_loss in tests.values())
        cv = (f"{cross_validated_rank_correlation(weights, loss, method, args.folds, seed=0):>8.4f}"
              if method else f"{'':>8}")
        print(f"{name:36}{correlations}{cv}{fit_s:>8.2f}")

    model = fit(weights, loss, "lightgbm", sources=domains)
    caps = {domain: min(REGMIX_MAXIMUM_USAGE * share, 1.0) for domain, share in REGMIX_TOKEN_SHARES.items()}
    started = time.perf_counter()
    proposal = propose(model, REGMIX_TOKEN_SHARES, seed=0, caps=caps, samples=args.samples, top=args.top)
    propose_s = time.perf_counter() - started
    again = propose(model, REGMIX_TOKEN_SHARES, seed=0, caps=caps, samples=args.samples, top=args.top)
    assert again == proposal, "propose is not deterministic"
    assert all(proposal[domain] <= caps[domain] for domain in domains)

    def predicted(mixture: dict[str, float]) -> float:
        return float(model.predict(np.array([[mixture[domain] for domain in domains]]))[0])

    natural_total = sum(REGMIX_TOKEN_SHARES.values())
    natural = {domain: share / natural_total for domain, share in REGMIX_TOKEN_SHARES.items()}
    print(f"\npropose on the lightgbm fit: the mean of the {args.top} best of {args.samples:,} candidates, "
          f"caps {REGMIX_MAXIMUM_USAGE} x token share (RegMix's bound), {propose_s:.2f} s")
    print(f"{'domain':20}{'natural':>9}{'proposed':>10}{'RegMix 1B':>11}")
    for domain in sorted(domains, key=lambda name: -proposal[name]):
        print(f"{domain:20}{natural[domain]:>9.4f}{proposal[domain]:>10.4f}{REGMIX_PUBLISHED[domain]:>11.4f}")
    print(f"{'predicted Pile-CC loss':20}{predicted(natural):>9.3f}{predicted(proposal):>10.3f}"
          f"{predicted(REGMIX_PUBLISHED):>11.3f}")
    print(f"lowest Pile-CC loss among the training runs: {loss.min():.3f}; L1 distance proposed to RegMix's "
          f"published mixture: {sum(abs(proposal[d] - REGMIX_PUBLISHED[d]) for d in domains):.3f}")


if __name__ == "__main__":
    main()
