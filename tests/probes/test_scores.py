"""Held-out scores against scikit-learn and scipy, and their bootstrap over magnitudes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import r2_score

from magdash.probes.scores import (
    BootstrapDraws,
    held_out_scores,
    magnitude_sums,
    percentile_interval,
    scores_from_sums,
    tied_within_resolution,
)

MAGNITUDES = np.array([1.0, 2, 4, 8, 16, 32, 64])


def predictions(seed=0, carriers=3):
    rng = np.random.default_rng(seed)
    log_values = np.log(MAGNITUDES)[:, None] + rng.normal(0, 0.3, (MAGNITUDES.size, carriers))
    linear_values = MAGNITUDES[:, None] + rng.normal(0, 6.0, (MAGNITUDES.size, carriers))  # some <= 0
    return np.stack([log_values, linear_values], axis=2)


def test_point_scores_match_sklearn_and_scipy():
    p = predictions()
    labels = np.column_stack([np.log(MAGNITUDES), MAGNITUDES])
    reference = np.column_stack([MAGNITUDES, MAGNITUDES])
    point, replicates = held_out_scores(p, labels, reference, ("log", "linear"), np.zeros((0, MAGNITUDES.size)))
    assert all(values.shape == (0, 2) for values in replicates.values())
    for column in range(2):
        truth, pred = np.repeat(labels[:, column], 3), p[:, :, column].ravel()
        assert point["r2"][column] == pytest.approx(r2_score(truth, pred), rel=1e-12)
        assert point["spearman"][column] == pytest.approx(stats.spearmanr(truth, pred).statistic, rel=1e-12)
    log_error = np.abs(p[:, :, 0] - np.log(MAGNITUDES)[:, None]).mean()
    assert point["error_log"][0] == pytest.approx(log_error, rel=1e-12) and point["share_nonpositive"][0] == 0
    decoded = p[:, :, 1]
    positive = decoded > 0
    assert 0 < (~positive).sum() < positive.size
    expected = np.abs(np.log(decoded[positive]) - np.log(np.broadcast_to(MAGNITUDES[:, None], decoded.shape)[positive]))
    assert point["error_log"][1] == pytest.approx(expected.mean(), rel=1e-12)
    assert point["share_nonpositive"][1] == pytest.approx((~positive).mean())


def test_predictions_equal_but_for_rounding_rank_as_ties():
    # Every carrier of a number gets the same prediction (one vector per number token), as another
    # machine's BLAS computes it: the last digits differ from carrier to carrier.
    exact = np.repeat(np.log(MAGNITUDES)[:, None], 3, axis=1)
    rounding = exact * (1 + np.array([0.0, 2e-16, -4e-16]))[None, :]
    wobble = rounding.copy()
    wobble[2] += 0.1  # and one number predicted off, so rho is not 1
    exact[2] += 0.1
    labels = np.column_stack([np.log(MAGNITUDES)])
    reference = np.column_stack([MAGNITUDES])
    no_draws = np.zeros((0, MAGNITUDES.size))
    tied, _ = held_out_scores(exact[:, :, None], labels, reference, ("log",), no_draws)
    rounded, _ = held_out_scores(wobble[:, :, None], labels, reference, ("log",), no_draws)
    truth = np.repeat(labels[:, 0], 3)
    assert tied["spearman"][0] == pytest.approx(stats.spearmanr(truth, exact.ravel()).statistic, rel=1e-12)
    assert rounded["spearman"][0] == tied["spearman"][0]
    assert stats.spearmanr(truth, wobble.ravel()).statistic != tied["spearman"][0]  # scipy ranks the rounding
    # Predictions that differ by more than the resolution keep their order.
    assert np.array_equal(np.argsort(tied_within_resolution(np.array([1.0, 1.0 + 1e-6, 0.5]))), [2, 0, 1])


def test_a_bootstrap_replicate_is_the_score_of_the_resampled_magnitudes():
    p = predictions(seed=2)
    labels = np.log(MAGNITUDES)[:, None]
    counts = BootstrapDraws(5, seed=4).counts(MAGNITUDES.size)
    _, replicates = held_out_scores(p[:, :, :1], labels, MAGNITUDES[:, None], ("log",), counts)
    for draw in range(5):
        chosen = np.repeat(np.arange(MAGNITUDES.size), counts[draw].astype(int))
        truth, pred = np.repeat(labels[chosen, 0], 3), p[chosen, :, 0].ravel()
        if np.ptp(truth) > 0:
            assert replicates["r2"][draw, 0] == pytest.approx(r2_score(truth, pred), rel=1e-10)
        assert replicates["error_log"][draw, 0] == pytest.approx(np.abs(pred - truth).mean(), rel=1e-10)


def test_spearman_replicates_use_the_ranks_of_all_predictions():
    p = predictions(seed=5)[:, :, :1]
    labels = np.log(MAGNITUDES)[:, None]
    sums = magnitude_sums(p, labels, MAGNITUDES[:, None], ("log",))
    weights = np.array([2.0, 0, 1, 1, 0, 2, 1])
    totals = np.einsum("m,mcs->cs", weights, sums)
    ranks = stats.rankdata(p.ravel()).reshape(p.shape[:2])
    label_ranks = stats.rankdata(np.repeat(labels[:, 0], 3)).reshape(p.shape[:2])
    rows = np.repeat(np.arange(MAGNITUDES.size), weights.astype(int))
    expected = np.corrcoef(ranks[rows].ravel(), label_ranks[rows].ravel())[0, 1]
    assert scores_from_sums(totals)["spearman"][0] == pytest.approx(expected, rel=1e-10)


def test_draws_resample_magnitudes_reproducibly():
    draws = BootstrapDraws(200, seed=1)
    counts = draws.counts(7)
    assert counts.shape == (200, 7) and (counts.sum(axis=1) == 7).all()
    assert draws.counts(7) is counts
    np.testing.assert_array_equal(BootstrapDraws(200, seed=1).counts(7), counts)
    assert not np.array_equal(BootstrapDraws(200, seed=2).counts(7), counts)
    assert BootstrapDraws(0, seed=1).counts(7).shape == (0, 7)


def test_percentile_interval_matches_numpy_and_skips_undefined_draws():
    values = np.random.default_rng(0).standard_normal((1001, 3))
    values[:50, 1] = np.nan
    values[:, 2] = np.nan
    low, high = percentile_interval(values, 0.9)
    np.testing.assert_allclose(low[:2], np.nanquantile(values[:, :2], 0.05, axis=0), rtol=1e-12)
    np.testing.assert_allclose(high[:2], np.nanquantile(values[:, :2], 0.95, axis=0), rtol=1e-12)
    assert math.isnan(low[2]) and math.isnan(high[2])
    assert all(np.isnan(bound).all() for bound in percentile_interval(np.zeros((0, 2)), 0.95))
