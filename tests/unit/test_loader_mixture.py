"""The loader's arithmetic: keyed permutations, the stratified interleave, planned counts, recipes."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

from tests.conftest import REPO
from tokenmill.loader import interleave, keyed_permutation, permute, plan_counts
from tokenmill.recipe import RecipeError, validate_recipe


@pytest.mark.parametrize("n", [1, 2, 3, 5, 64, 1000, 4097])
def test_keyed_permutation_is_a_bijection_chosen_by_the_key(n):
    first = keyed_permutation(np.arange(n), n, key=7)
    assert sorted(first.tolist()) == list(range(n))
    assert [permute(i, n, 7) for i in range(n)] == first.tolist()  # the scalar path agrees
    assert keyed_permutation(np.arange(n), n, key=7).tolist() == first.tolist()
    if n >= 64:
        assert keyed_permutation(np.arange(n), n, key=8).tolist() != first.tolist()
        assert first.tolist() != list(range(n))


def test_interleave_keeps_every_window_within_two_of_its_share():
    counts = np.array([50_000, 30_000, 15_000, 4_999, 1])
    offsets = np.array([0.1, 0.7, 0.3, 0.99, 0.5])
    streams, ks = interleave(counts, offsets)
    total = counts.sum()
    assert np.bincount(streams).tolist() == counts.tolist()
    for s in range(len(counts)):  # each stream's samples come in order 0, 1, 2, ...
        assert ks[streams == s].tolist() == list(range(counts[s]))
    one_hot = np.eye(len(counts), dtype=np.int64)[streams]
    prefix = np.vstack([np.zeros(len(counts), np.int64), np.cumsum(one_hot, axis=0)])
    rng = np.random.default_rng(3)
    for window in (7, 100, 1000, 25_000):
        starts = rng.integers(0, total - window, 400)
        seen = prefix[starts + window] - prefix[starts]
        deviation = np.abs(seen - window * counts / total)
        assert deviation.max() <= 2.0, (window, deviation.max())


def test_interleave_breaks_exact_ties_deterministically():
    streams, _ = interleave(np.array([4, 4, 4]), np.array([0.5, 0.5, 0.5]))
    assert streams.tolist() == [0, 1, 2] * 4


def test_capped_streams_pass_their_share_to_the_others_in_proportion():
    counts = plan_counts(1000, np.array([0.5, 0.3, 0.2]), np.array([100, 10_000, 10_000]), "phases.0")
    assert counts.tolist() == [100, 540, 360]
    with pytest.raises(RecipeError, match=r"recipe field phases.1.tokens: 1000 samples, but max_epochs allow only 30"):
        plan_counts(1000, np.array([0.5, 0.5]), np.array([10, 20]), "phases.1")


@pytest.fixture
def demo_recipe() -> dict:
    return yaml.safe_load((REPO / "config" / "recipe.yaml").read_text())


@pytest.mark.parametrize("change, message", [
    (lambda r: r["phases"][0]["weights"].update(govuk=0.5), "recipe field phases.0.weights: weights sum to 1.4"),
    (lambda r: r["phases"][1].update(seq_lenn=3), "recipe field phases.1.seq_lenn: unknown key 'seq_lenn'"),
    (lambda r: r["phases"][0]["bucket_weights"].update(govuk={"2k-3k": 1.0}), "recipe field phases.0.bucket_weights.govuk"),
    (lambda r: r["phases"][1]["max_epochs"].update(dolma_crawl=2), "recipe field phases.1.max_epochs.dolma_crawl: not a source"),
    (lambda r: r.update(manifest_sha256="abc"), "recipe field manifest_sha256: 'abc' does not match"),
])
def test_a_bad_recipe_names_the_field(demo_recipe, change, message):
    recipe = copy.deepcopy(demo_recipe)
    change(recipe)
    with pytest.raises(RecipeError, match=message.replace("[", r"\[").replace(".", r"\.")):
        validate_recipe(recipe)
    assert validate_recipe(copy.deepcopy(demo_recipe))["max_skipped_share"] == 0.5
