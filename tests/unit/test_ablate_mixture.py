"""The mixture search of the ablation stage: RegMix-style candidate mixtures, the regressions, and
the proposed optimum, on planted synthetic runs and on RegMix's published runs."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from tests.conftest import REPO
from tokenmill.ablate.mixture import (AUTO_LIGHTGBM_MIN_RUNS, LIGHTGBM_MIN_RUNS, WEIGHT_UNIT,
                                      cross_validated_rank_correlation, fit, propose, rank_correlation,
                                      sample_mixtures, weight_matrix)

NATURAL = {"web": 0.6, "code": 0.25, "b": 0.1, "tiny": 0.05}
SOURCES = sorted(NATURAL)
REGMIX_RUNS = REPO / "data/bench/regmix-runs"
PILE_CC_LOSS = "metric/the_pile_pile_cc_val_loss"


def regmix_runs(split: str, scale: str) -> tuple[list[str], np.ndarray, np.ndarray]:
    mixtures = pd.read_csv(REGMIX_RUNS / f"{split}_mixture_{scale}.csv")
    joined = mixtures.merge(pd.read_csv(REGMIX_RUNS / f"{split}_pile_loss_{scale}.csv"), on="index")
    columns = [column for column in mixtures.columns if column != "index"]
    return columns, joined[columns].to_numpy(np.float64), joined[PILE_CC_LOSS].to_numpy(np.float64)


def planted_runs(count: int, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Runs whose loss is lowest where source b takes about 70% of the mixture: convex in b's
    weight, a little worse with more of the tiny source, plus seeded noise."""
    weights = weight_matrix(sample_mixtures(NATURAL, count, seed=seed), SOURCES)
    b, tiny = weights[:, SOURCES.index("b")], weights[:, SOURCES.index("tiny")]
    noise = np.random.default_rng(seed).normal(0, 0.01, count)
    return weights, 3.0 + 1.5 * (b - 0.7) ** 2 + 0.3 * tiny + noise


def test_sample_mixtures_is_deterministic_sums_to_one_and_is_rounded():
    first = sample_mixtures(NATURAL, 200, seed=11)
    assert json.dumps(first) == json.dumps(sample_mixtures(dict(reversed(NATURAL.items())), 200, seed=11))
    assert sample_mixtures(NATURAL, 50, seed=11) == first[:50]
    assert sample_mixtures(NATURAL, 200, seed=12) != first
    units = np.rint(weight_matrix(first, SOURCES) / WEIGHT_UNIT)
    assert np.allclose(units * WEIGHT_UNIT, weight_matrix(first, SOURCES), rtol=0, atol=1e-12)
    assert (units.sum(axis=1) == 1_000_000).all()
    assert all(list(mixture) == SOURCES for mixture in first)
    # strengths down to 0.1 give sparse, extreme mixtures as well as ones near the natural shares
    weights = weight_matrix(first, SOURCES)
    assert (weights.max(axis=1) > 0.95).any() and (weights == 0).any()
    assert (np.abs(weights - np.array([NATURAL[s] for s in SOURCES])).sum(axis=1) < 0.2).any()


def test_sample_mixtures_respects_caps_by_rejection():
    caps = {"web": 0.5, "b": 0.2}
    weights = weight_matrix(sample_mixtures(NATURAL, 2000, seed=5, caps=caps), SOURCES)
    assert weights[:, SOURCES.index("web")].max() <= 0.5
    assert weights[:, SOURCES.index("b")].max() <= 0.2
    # rejected, not clipped: the kept mixtures do not pile up on the cap
    assert (weights[:, SOURCES.index("web")] == 0.5).sum() < 5
    assert np.allclose(weights.sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="sum to"):
        sample_mixtures(NATURAL, 10, seed=5, caps={source: 0.2 for source in SOURCES})
    with pytest.raises(ValueError, match="not in natural"):
        sample_mixtures(NATURAL, 10, seed=5, caps={"books": 0.5})


# exp of a linear function is lowest at a corner of the simplex: the log-linear law cannot place the
# optimum inside it, only say which source to push towards its cap
@pytest.mark.parametrize("method, runs, b_share", [("lightgbm", 200, (0.5, 0.9)), ("loglinear", 40, (0.9, 1.0))])
def test_propose_finds_a_planted_optimum(method, runs, b_share):
    weights, loss = planted_runs(runs)
    model = fit(weights, loss, method, seed=0, sources=SOURCES)
    assert model.method == method
    proposal = propose(model, NATURAL, seed=1, samples=10_000, top=50)
    assert max(proposal, key=proposal.get) == "b"
    assert b_share[0] < proposal["b"] <= b_share[1]
    assert proposal == propose(model, NATURAL, seed=1, samples=10_000, top=50)
    capped = propose(model, NATURAL, seed=1, caps={"b": 0.3}, samples=10_000, top=50)
    assert capped["b"] <= 0.3 and capped["b"] > 0.2
    assert sum(proposal.values()) == pytest.approx(1.0, abs=1e-12)


def test_propose_maps_the_model_columns_by_name():
    weights, loss = planted_runs(40)
    shuffled = [SOURCES[i] for i in (3, 1, 0, 2)]
    columns = [SOURCES.index(source) for source in shuffled]
    by_name = fit(weights[:, columns], loss, "loglinear", sources=shuffled)
    assert propose(by_name, NATURAL, seed=1, samples=5000) == propose(fit(weights, loss, "loglinear"), NATURAL,
                                                                     seed=1, samples=5000)


@pytest.mark.parametrize("method", ["lightgbm", "loglinear"])
def test_fit_is_deterministic(method):
    weights, loss = planted_runs(100)
    probe, _ = planted_runs(500, seed=9)
    first = fit(weights, loss, method, seed=4).predict(probe)
    assert np.array_equal(first, fit(weights, loss, method, seed=4).predict(probe))


def test_auto_takes_lightgbm_only_with_enough_runs():
    weights, loss = planted_runs(AUTO_LIGHTGBM_MIN_RUNS)
    assert fit(weights, loss).method == "lightgbm"
    assert fit(weights[:-1], loss[:-1]).method == "loglinear"
    with pytest.raises(ValueError, match="at least"):
        fit(weights[:LIGHTGBM_MIN_RUNS - 1], loss[:LIGHTGBM_MIN_RUNS - 1], "lightgbm")


def test_regmix_runs_ranked_as_the_paper_reports():
    columns, weights, loss = regmix_runs("train", "1m")
    _, test_weights, test_loss = regmix_runs("test", "1m")
    assert len(loss) == 512 and len(test_loss) == 256
    lightgbm = fit(weights, loss, "lightgbm", sources=columns)
    assert rank_correlation(lightgbm.predict(test_weights), test_loss) >= 0.98
    loglinear = fit(weights, loss, "loglinear", sources=columns)
    assert rank_correlation(loglinear.predict(test_weights), test_loss) >= 0.93
    # without a test set: mixtures each fold's fit did not see
    assert cross_validated_rank_correlation(weights, loss, "loglinear", folds=5, seed=0) >= 0.9
    assert rank_correlation(test_loss, -test_loss) == pytest.approx(-1.0)
