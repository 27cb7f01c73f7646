"""mixture: choosing a data mixture from proxy runs, after RegMix (Liu et al. 2024, "RegMix: Data
Mixture as Regression for Language Model Pre-training"; code: github.com/sail-sg/regmix).

A mixture is a weight per source (its share of the tokens a training phase reads, summing to 1).
The search has three steps, each a function here; the proxy training between them is not:

1. `sample_mixtures`: candidate mixtures for the proxy runs, Dirichlet draws around each source's
   natural token share, as RegMix's `mixture_config/synthesize_mixture.py` draws them.
2. `fit`: a regression from a run's mixture to the metric it reached (a loss: lower is better),
   LightGBM as in RegMix's `regression_fitting/regression.ipynb`, or, with few runs, the
   log-linear mixing law of Data Mixing Laws (Ye et al. 2024). `rank_correlation` and
   `cross_validated_rank_correlation` say how well a fit ranks mixtures it did not see, which is
   all the search needs of it.
3. `propose`: the mixture to train with, the mean of the best-predicted of many sampled mixtures.

Everything is deterministic: the same arguments give the same mixtures and predictions to the last
bit (on the same machine and library versions), and mixtures are rounded to `WEIGHT_UNIT` so that
their JSON is byte-identical. No torch, no Snakemake.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

# Mixture weights are multiples of this (6 decimals) and sum to exactly 1 in these units.
WEIGHT_UNIT = 1e-6
_UNITS_PER_MIXTURE = 1_000_000

# RegMix's synthesize_mixture.py: the Dirichlet strength (alpha = centre x strength) spans 0.1 to
# 5.0, so that a small strength gives sparse, extreme mixtures (one or two sources take almost
# everything) and a large one mixtures close to the centre; the centre is the natural shares with
# temperature 0.5, which lifts small sources; weights under 2e-4 are dropped (a proxy run reads
# too few of their tokens for them to tell).
DEFAULT_CONCENTRATION = (0.1, 5.0)
DEFAULT_TEMPERATURE = 0.5
DEFAULT_MIN_WEIGHT = 2e-4

# Rejection sampling against caps gives up when fewer than this share of draws fit the caps.
_MIN_ACCEPTANCE = 0.01
_DRAWS_PER_BATCH = 65_536

# RegMix's LightGBM settings (regression.ipynb) without its early stopping, which watched the test
# set it then scored; on RegMix's own runs, 1,000 rounds at this rate rank the unseen mixtures as
# well as early stopping on a held-out eighth of the training runs (bench/bench_regmix.py).
LIGHTGBM_PARAMS = {"objective": "regression", "n_estimators": 1000, "learning_rate": 0.01}
# LightGBM's default min_child_samples is 20: with fewer than two leaves' worth of runs no tree splits
# and every prediction is the same.
LIGHTGBM_MIN_RUNS = 40
# "auto" takes LightGBM from this many runs on: on RegMix's 1M runs (17 sources), subsets of 64 runs
# rank the unseen test mixtures better with the log-linear law (Spearman 0.91 against 0.88, mean of
# 5 subsets) and subsets of 96 better with LightGBM (0.95 against 0.94).
AUTO_LIGHTGBM_MIN_RUNS = 96

METHODS = ("auto", "lightgbm", "loglinear")


def _check_sources(natural: Mapping[str, float]) -> tuple[list[str], np.ndarray]:
    """The sources in sorted order (so that a dict's order changes nothing) and their natural
    shares, normalised to sum to 1."""
    if not natural:
        raise ValueError("natural: no sources")
    sources = sorted(natural)
    shares = np.array([float(natural[source]) for source in sources])
    if not np.all(np.isfinite(shares)) or np.any(shares <= 0):
        raise ValueError(f"natural: every source needs a positive token share, got {dict(natural)}")
    return sources, shares / shares.sum()


def _cap_vector(sources: Sequence[str], caps: Mapping[str, float] | None) -> np.ndarray:
    """Each source's maximum weight (1 where `caps` has none)."""
    caps = dict(caps or {})
    unknown = sorted(set(caps) - set(sources))
    if unknown:
        raise ValueError(f"caps: sources not in natural: {unknown}")
    vector = np.array([min(float(caps.get(source, 1.0)), 1.0) for source in sources])
    if np.any(vector < 0) or vector.sum() < 1:
        raise ValueError(f"caps: the weights they allow sum to {vector.sum():.6f} < 1, so no mixture fits them: {caps}")
    return vector


def _round_mixtures(weights: np.ndarray) -> np.ndarray:
    """Rows rounded to multiples of WEIGHT_UNIT that sum to exactly 1 in those units (largest
    remainder: each weight moves by less than one unit, ties to the lower column)."""
    scaled = weights * _UNITS_PER_MIXTURE
    units = np.floor(scaled)
    remainder = scaled - units
    missing = _UNITS_PER_MIXTURE - units.sum(axis=1)
    rank = np.argsort(np.argsort(-remainder, axis=1, kind="stable"), axis=1, kind="stable")
    units += rank < missing[:, None]
    return units / _UNITS_PER_MIXTURE


def _dirichlet_rows(centre: np.ndarray, strengths: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One Dirichlet(centre x strength) draw per strength. Drawn in log space (log Gamma(a) =
    log Gamma(a + 1) + log(U) / a) because alphas of 1e-4 and less underflow a plain Gamma draw to 0."""
    alpha = centre[None, :] * strengths[:, None]
    log_gamma = np.log(rng.standard_gamma(alpha + 1.0)) + np.log(rng.random(alpha.shape)) / alpha
    log_gamma -= log_gamma.max(axis=1, keepdims=True)
    weights = np.exp(log_gamma)
    return weights / weights.sum(axis=1, keepdims=True)


def _sample_matrix(shares: np.ndarray, cap_vector: np.ndarray, count: int, rng: np.random.Generator,
                   concentration: tuple[float, float], temperature: float, min_weight: float) -> np.ndarray:
    """`count` rounded mixtures, one a row, columns as `shares`; see sample_mixtures."""
    low, high = concentration
    if not 0 < low <= high:
        raise ValueError(f"concentration: need 0 < low <= high, got {concentration}")
    if not 0 < temperature <= 1:
        raise ValueError(f"temperature: need 0 < temperature <= 1, got {temperature}")
    centre = shares ** temperature
    centre /= centre.sum()
    # one rounding unit of room, so that rounding never lifts an accepted weight above its cap
    room = cap_vector - WEIGHT_UNIT
    accepted, drawn, kept = [np.empty((0, len(shares)))], 0, 0
    while kept < count:
        if drawn >= _DRAWS_PER_BATCH and kept < _MIN_ACCEPTANCE * drawn:
            raise ValueError(f"caps: only {kept} of {drawn} sampled mixtures fit them; loosen the tightest caps "
                             f"(raise max_epochs or lower the phase's tokens)")
        strengths = np.exp(rng.uniform(np.log(low), np.log(high), _DRAWS_PER_BATCH))
        weights = _dirichlet_rows(centre, strengths, rng)
        weights[weights < min_weight] = 0.0
        weights /= weights.sum(axis=1, keepdims=True)
        fits = np.all((weights <= room) | (weights == 0), axis=1)
        drawn += len(weights)
        accepted.append(weights[fits])
        kept += int(fits.sum())
    return _round_mixtures(np.concatenate(accepted)[:count])


def sample_mixtures(natural: Mapping[str, float], count: int, seed: int,
                    concentration: tuple[float, float] = DEFAULT_CONCENTRATION,
                    caps: Mapping[str, float] | None = None, temperature: float = DEFAULT_TEMPERATURE,
                    min_weight: float = DEFAULT_MIN_WEIGHT) -> list[dict[str, float]]:
    """`count` candidate mixtures for proxy runs, RegMix's way.

    natural: each source's natural share of the tokens (shares or token counts: they are
      normalised); every source needs a positive share.
    count: how many mixtures.
    seed: the seed of a numpy PCG64 Generator; the same arguments give the same mixtures, bit for bit.
    concentration: (low, high) range of the Dirichlet strength; each mixture draws its strength
      log-uniformly in it and is Dirichlet(centre x strength). A low strength gives sparse, extreme
      mixtures, a high one mixtures near the centre. (x, x) fixes it.
    caps: a source's maximum weight, e.g. max_epochs x source_tokens / phase_tokens; sources
      without one are uncapped. Mixtures that break a cap are rejected and drawn again (as RegMix
      does), so that the kept ones follow the Dirichlet restricted to the caps rather than piling
      up on them; ValueError when the caps allow no mixture or reject 99% of the draws.
    temperature: the centre is natural ** temperature, normalised; below 1 it lifts small sources.
    min_weight: weights below it become 0 before the mixture is normalised again.

    Returns mixtures as {source: weight} in sorted source order, weights multiples of 1e-6 that sum
    to 1 (exactly, in units of 1e-6). The first n mixtures of a larger count are the same n.
    """
    if count < 0:
        raise ValueError(f"count: need >= 0, got {count}")
    sources, shares = _check_sources(natural)
    matrix = _sample_matrix(shares, _cap_vector(sources, caps), count, np.random.default_rng(seed),
                            concentration, temperature, min_weight)
    return [dict(zip(sources, row.tolist())) for row in matrix]


def weight_matrix(mixtures: Sequence[Mapping[str, float]], sources: Sequence[str]) -> np.ndarray:
    """Mixtures as a [len(mixtures), len(sources)] array of weights, columns in `sources`' order; a
    source a mixture lacks has weight 0."""
    unknown = sorted({source for mixture in mixtures for source in mixture} - set(sources))
    if unknown:
        raise ValueError(f"mixtures name sources not in sources: {unknown}")
    return np.array([[float(mixture.get(source, 0.0)) for source in sources] for mixture in mixtures],
                    dtype=np.float64).reshape(len(mixtures), len(sources))


@dataclass(frozen=True)
class MixtureModel:
    """A fitted map from mixture weights to the metric.

    method: "lightgbm" or "loglinear" (what "auto" chose).
    sources: the source of each weight column, when fit was told; propose then orders its
      candidates' columns this way.
    n_runs: how many runs it was fitted on.
    """

    method: str
    sources: tuple[str, ...] | None
    n_runs: int
    _regressor: Any = None  # lightgbm: the LGBMRegressor
    _offset: float = 0.0  # loglinear: c
    _exponents: np.ndarray | None = None  # loglinear: t

    def predict(self, weights: np.ndarray) -> np.ndarray:
        """The predicted metric (the fitted metric's units) of each row of `weights`, a
        [n_mixtures, n_sources] array with fit's columns."""
        weights = _as_weights(weights)
        if self.method == "lightgbm":
            return self._regressor.predict(weights)
        return self._offset + np.exp(weights @ self._exponents)


def _as_weights(weights: np.ndarray) -> np.ndarray:
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 2:
        raise ValueError(f"weights: need a [n_mixtures, n_sources] array, got shape {weights.shape}")
    return weights


def _resolve_method(method: str, n_runs: int) -> str:
    if method not in METHODS:
        raise ValueError(f"method: one of {METHODS}, got {method!r}")
    if method == "auto":
        return "lightgbm" if n_runs >= AUTO_LIGHTGBM_MIN_RUNS else "loglinear"
    return method


def _fit_lightgbm(weights: np.ndarray, metric: np.ndarray, seed: int):
    import lightgbm  # here, so that the log-linear fit and the samplers do without it

    if len(metric) < LIGHTGBM_MIN_RUNS:
        raise ValueError(f"lightgbm: {len(metric)} runs; it needs at least {LIGHTGBM_MIN_RUNS} "
                         f"(use method='loglinear' or 'auto')")
    # one thread and deterministic=True: the same runs give the same trees, bit for bit
    regressor = lightgbm.LGBMRegressor(**LIGHTGBM_PARAMS, random_state=seed, deterministic=True, n_jobs=1,
                                       force_col_wise=True, verbosity=-1)
    return regressor.fit(weights, metric)


# The log-linear fit's ridge on its exponents, per run: few runs (the pipeline's own searches) leave
# a least-squares fit free to give a source seen at a few small weights any exponent. On random
# 16-run subsets of RegMix's 512 (mean of 5), ranking its 1M test: 0.25 without, 0.85 at 0.001,
# 0.87 at 0.01; on all 512 it costs 0.953 -> 0.938 at 1M, 0.983 -> 0.989 at 1B (lightgbm from 96 runs).
LOGLINEAR_RIDGE = 0.01


def _fit_loglinear(weights: np.ndarray, metric: np.ndarray) -> tuple[float, np.ndarray]:
    """Data Mixing Laws' form, metric = c + k exp(sum_j t_j w_j), with k folded into t (the weights
    sum to 1, so log k adds to every t_j alike): for a given c, t is the ridge fit (LOGLINEAR_RIDGE
    x runs, on the centred weights, the intercept free) of log(metric - c); c is the one that
    minimises the squared error in the metric's own units, searched below the smallest metric. A
    profile fit, not a joint non-linear least squares."""
    lowest, spread = float(metric.min()), float(np.ptp(metric))
    if spread == 0:
        raise ValueError("loglinear: every run reached the same metric; nothing to fit")
    centre = weights.mean(axis=0)
    centred = weights - centre
    normal = centred.T @ centred + LOGLINEAR_RIDGE * len(metric) * np.eye(weights.shape[1])

    def exponents(offset: float) -> np.ndarray:
        logs = np.log(metric - offset)
        slopes = np.linalg.solve(normal, centred.T @ (logs - logs.mean()))
        return slopes + (logs.mean() - centre @ slopes)  # the intercept folded in: each row sums to 1

    def squared_error(offset: float) -> float:
        return float(np.sum((offset + np.exp(weights @ exponents(offset)) - metric) ** 2))

    # scipy here, not at the top: the workflow imports this module to parse the ablate section, and
    # scipy.optimize and scipy.stats cost 0.6 s at every Snakemake start (each SLURM job's among them)
    from scipy.optimize import minimize_scalar

    # a very low c makes the law nearly linear in the weights; c at the smallest metric, a log of 0
    search = minimize_scalar(squared_error, bounds=(lowest - 10 * spread, lowest - 1e-6 * spread), method="bounded")
    return float(search.x), exponents(float(search.x))


def fit(weights: np.ndarray, metric: np.ndarray, method: str = "auto", seed: int = 0,
        sources: Sequence[str] | None = None) -> MixtureModel:
    """A regression from the runs' mixtures to the metric they reached.

    weights: [n_runs, n_sources] mixture weights (each row sums to 1), columns named by `sources`.
    metric: [n_runs] what each run reached, a loss (lower is better), in its own units (nats per
      token for a validation loss).
    method: "lightgbm": LightGBM's regressor with RegMix's settings (LIGHTGBM_PARAMS: 1,000 rounds at
        learning rate 0.01, squared error), one thread, deterministic; needs LIGHTGBM_MIN_RUNS runs.
      "loglinear": Data Mixing Laws' law metric = c + exp(sum_j t_j w_j), for few runs (see
        _fit_loglinear). It ranks mixtures well but is monotone along every line through the
        simplex, so its predicted optimum is a corner: propose then pushes the best sources to
        their caps rather than finding an optimum inside.
      "auto": lightgbm from AUTO_LIGHTGBM_MIN_RUNS runs on, else loglinear.
    seed: LightGBM's seed (the log-linear fit draws nothing).
    sources: the name of each column; propose then maps its candidates onto them.
    """
    weights = _as_weights(weights)
    metric = np.asarray(metric, dtype=np.float64).reshape(-1)
    if len(metric) != len(weights):
        raise ValueError(f"{len(weights)} mixtures but {len(metric)} metrics")
    if not np.all(np.isfinite(metric)) or not np.all(np.isfinite(weights)):
        raise ValueError("weights and metric must be finite")
    if sources is not None and len(sources) != weights.shape[1]:
        raise ValueError(f"{len(sources)} sources named for {weights.shape[1]} weight columns")
    chosen = _resolve_method(method, len(metric))
    names = tuple(sources) if sources is not None else None
    if chosen == "lightgbm":
        return MixtureModel(chosen, names, len(metric), _regressor=_fit_lightgbm(weights, metric, seed))
    offset, exponents = _fit_loglinear(weights, metric)
    return MixtureModel(chosen, names, len(metric), _offset=offset, _exponents=exponents)


def rank_correlation(predicted: np.ndarray, actual: np.ndarray) -> float:
    """Spearman's rank correlation of predicted and actual metrics, -1 to 1 (NaN when either is
    constant)."""
    from scipy.stats import spearmanr  # not at the top: see _fit_loglinear

    return float(spearmanr(np.asarray(predicted, dtype=np.float64), np.asarray(actual, dtype=np.float64))[0])


def cross_validated_rank_correlation(weights: np.ndarray, metric: np.ndarray, method: str = "auto",
                                     folds: int = 5, seed: int = 0) -> float:
    """How well `fit` ranks mixtures it did not see, when there is no separate test set: the runs
    are shuffled (seed) into `folds` folds, each fold predicted by a fit on the others, and the
    rank correlation taken once over all these out-of-fold predictions (per-fold correlations of a
    few runs each would be mostly noise). "auto" is decided on all the runs, so that the figure is
    that of the method a fit on all of them uses."""
    weights = _as_weights(weights)
    metric = np.asarray(metric, dtype=np.float64).reshape(-1)
    if not 2 <= folds <= len(metric):
        raise ValueError(f"folds: need 2 <= folds <= {len(metric)} runs, got {folds}")
    chosen = _resolve_method(method, len(metric))
    order = np.random.default_rng(seed).permutation(len(metric))
    predicted = np.empty_like(metric)
    for held_out in np.array_split(order, folds):
        training = np.setdiff1d(order, held_out)
        model = fit(weights[training], metric[training], chosen, seed)
        predicted[held_out] = model.predict(weights[held_out])
    return rank_correlation(predicted, metric)


def propose(model: MixtureModel, natural: Mapping[str, float], seed: int, caps: Mapping[str, float] | None = None,
            samples: int = 100_000, top: int = 100, concentration: tuple[float, float] = DEFAULT_CONCENTRATION,
            temperature: float = DEFAULT_TEMPERATURE, min_weight: float = DEFAULT_MIN_WEIGHT) -> dict[str, float]:
    """RegMix's optimum: `samples` mixtures drawn as sample_mixtures draws them (same seed, same
    candidates), the `top` with the lowest predicted metric averaged. The average of mixtures
    within the caps is within them too. RegMix averages its 128 best of 100,000.

    model: a fit on weight columns named by model.sources, or, without names, in sorted source order.
    natural, caps, concentration, temperature, min_weight: as sample_mixtures.

    Returns {source: weight} in sorted source order, weights multiples of 1e-6 summing to 1.
    """
    if not 1 <= top <= samples:
        raise ValueError(f"need 1 <= top <= samples, got top={top}, samples={samples}")
    sources, shares = _check_sources(natural)
    columns = list(model.sources) if model.sources is not None else sources
    if sorted(columns) != sources:
        raise ValueError(f"the model's sources {columns} are not natural's {sources}")
    candidates = _sample_matrix(shares, _cap_vector(sources, caps), samples, np.random.default_rng(seed),
                                concentration, temperature, min_weight)
    predicted = model.predict(candidates[:, [sources.index(source) for source in columns]])
    best = candidates[np.argsort(predicted, kind="stable")[:top]]
    return dict(zip(sources, _round_mixtures(best.mean(axis=0, keepdims=True))[0].tolist()))
