"""Scaling fits: OLS, Theil–Sen, bootstrap, point rules and noise models."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from magdash.errors import AnalysisError
from magdash.variability.analysis_params import FitRules
from magdash.variability.fits import (
    NOISE_MODEL_COLUMNS,
    ScalingFit,
    aicc_gaussian,
    bootstrap_slopes,
    compare_noise_models,
    fit_scaling,
    ols,
    outlier_mask,
    percentile_interval,
    resample_counts,
    scaling_alpha,
    scaling_mask,
    theil_sen,
    weighted_row_slopes,
    weighted_slopes,
)

MAGNITUDES = np.array(
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 150, 200, 300, 500,
     700, 1000],
    dtype=np.float64,
)  # fmt: skip


def _noisy_power_law(rng, alpha=-0.05, noise=0.1):
    return MAGNITUDES**alpha * np.exp(rng.normal(0.0, noise, MAGNITUDES.size))


def test_ols_matches_linregress(rng):
    x = np.log(MAGNITUDES)
    y = 0.3 - 0.07 * x + rng.normal(0, 0.1, x.size)
    line = ols(x, y)
    reference = stats.linregress(x, y)
    assert line.slope == pytest.approx(reference.slope, rel=1e-12)
    assert line.intercept == pytest.approx(reference.intercept, rel=1e-12)
    assert line.r2 == pytest.approx(reference.rvalue**2, rel=1e-12)
    assert line.p == pytest.approx(reference.pvalue, rel=1e-9)
    assert line.se == pytest.approx(reference.stderr, rel=1e-12)


def test_ols_hand_computed_and_degenerate_cases():
    # y = 1 + 2x exactly: R^2 = 1, SE = 0, p = 0
    line = ols(np.array([0.0, 1.0, 2.0, 3.0]), np.array([1.0, 3.0, 5.0, 7.0]))
    assert (line.slope, line.intercept, line.r2, line.se, line.p) == (2.0, 1.0, 1.0, 0.0, 0.0)
    flat = ols(np.array([0.0, 1.0, 2.0]), np.array([4.0, 4.0, 4.0]))
    assert (flat.slope, flat.r2, flat.p, flat.se) == (0.0, 0.0, 1.0, 0.0)
    assert math.isnan(ols(np.array([1.0, 1.0, 1.0]), np.array([1.0, 2.0, 3.0])).slope)


def test_theil_sen_matches_scipy(rng):
    x = np.log(MAGNITUDES)
    y = -0.1 * x + rng.standard_t(2, x.size) * 0.2
    assert theil_sen(x, y) == pytest.approx(stats.theilslopes(y, x).slope, rel=1e-12)
    # hand case: slopes of pairs (0,1), (0,2), (1,2) are 1, 2, 3 -> median 2
    assert theil_sen(np.array([0.0, 1.0, 2.0]), np.array([0.0, 1.0, 4.0])) == 2.0
    # pairs with equal x are skipped, as in scipy
    x_tied = np.array([0.0, 0.0, 1.0, 2.0, 2.0])
    y_tied = np.array([0.0, 1.0, 3.0, 3.0, 5.0])
    assert theil_sen(x_tied, y_tied) == pytest.approx(stats.theilslopes(y_tied, x_tied).slope)


def test_fit_scaling_reports_ols_and_theil_sen(rng):
    values = _noisy_power_law(rng)
    fit = fit_scaling(MAGNITUDES, values, rules=FitRules(drop_outliers=True, n_boot=0))
    reference = stats.linregress(np.log(MAGNITUDES), np.log(values))
    assert fit.alpha == pytest.approx(reference.slope, rel=1e-12)
    assert fit.intercept == pytest.approx(reference.intercept, rel=1e-12)
    assert fit.n_points == 26 and fit.n_outliers == 0
    assert fit.alpha_theil_sen == pytest.approx(
        stats.theilslopes(np.log(values), np.log(MAGNITUDES)).slope, rel=1e-12
    )
    assert math.isnan(fit.ci_low) and math.isnan(fit.ci_high)


def test_bootstrap_equals_a_per_resample_loop(rng):
    """The vectorised bootstrap gives exactly the slopes of a loop over the same resamples."""
    values = _noisy_power_law(rng)
    x, y = np.log(MAGNITUDES), np.log(values)
    n_boot = 2000
    indices = np.random.default_rng(7).integers(0, x.size, size=(n_boot, x.size))
    looped = np.array([np.polyfit(x[i], y[i], 1)[0] for i in indices])
    vectorised = bootstrap_slopes(x, y, n_boot=n_boot, seed=7)
    np.testing.assert_allclose(vectorised, looped, rtol=1e-9, atol=1e-12)
    fit = fit_scaling(MAGNITUDES, values, rules=FitRules(drop_outliers=False, n_boot=n_boot, seed=7))
    assert fit.ci_low == pytest.approx(np.percentile(looped, 2.5), rel=1e-9)
    assert fit.ci_high == pytest.approx(np.percentile(looped, 97.5), rel=1e-9)
    assert fit.ci_low < fit.alpha < fit.ci_high


def test_bootstrap_is_seeded_and_chunking_does_not_matter(rng, monkeypatch):
    values = _noisy_power_law(rng)
    a = fit_scaling(MAGNITUDES, values, rules=FitRules(drop_outliers=False, n_boot=500, seed=3))
    b = fit_scaling(MAGNITUDES, values, rules=FitRules(drop_outliers=False, n_boot=500, seed=3))
    c = fit_scaling(MAGNITUDES, values, rules=FitRules(drop_outliers=False, n_boot=500, seed=4))
    assert a == b
    assert (a.ci_low, a.ci_high) != (c.ci_low, c.ci_high)
    counts = np.concatenate(list(resample_counts(26, 500, seed=3)))
    assert counts.shape == (500, 26) and np.all(counts.sum(axis=1) == 26)
    import magdash.variability.fits as fits_module

    monkeypatch.setattr(fits_module, "_BOOT_CHUNK_ELEMENTS", 26 * 7)  # chunks of 7 resamples
    chunked = np.concatenate(list(resample_counts(26, 500, seed=3)))
    np.testing.assert_array_equal(chunked, counts)


def test_degenerate_resamples_are_nan_and_left_out():
    x = np.array([0.0, 1.0, 2.0])
    y = np.array([0.0, 2.0, 4.0])
    weights = np.array([[3.0, 0.0, 0.0], [1.0, 1.0, 1.0], [0.0, 2.0, 1.0]])
    slopes = weighted_slopes(x, y, weights)
    assert math.isnan(slopes[0])
    np.testing.assert_allclose(slopes[1:], [2.0, 2.0])
    # duplicated x values: weight on two points with the same x is still degenerate
    x_dup = np.array([0.0, 0.0, 1.0])
    dup = weighted_slopes(x_dup, np.array([0.0, 1.0, 3.0]), np.array([[1.0, 2.0, 0.0], [1.0, 1.0, 1.0]]))
    assert math.isnan(dup[0]) and dup[1] == pytest.approx(2.5)
    low, high = percentile_interval(np.array([np.nan, 1.0, 2.0, 3.0]), 0.5)
    assert (low, high) == (1.5, 2.5)
    assert all(math.isnan(v) for v in percentile_interval(np.array([np.nan]), 0.95))
    with pytest.raises(AnalysisError):
        percentile_interval(np.array([1.0]), 1.5)


def test_fewer_than_five_points_gives_no_fit():
    values = np.array([1.0, 2.0, 3.0, 4.0, np.nan, 0.0, -1.0])
    fit = fit_scaling(np.arange(1.0, 8.0), values, rules=FitRules(drop_outliers=False, n_boot=100))
    assert fit.n_points == 4
    assert not fit.has_fit
    assert all(
        math.isnan(getattr(fit, name))
        for name in ("alpha", "intercept", "r2", "p", "se", "alpha_theil_sen", "ci_low", "ci_high")
    )
    five = fit_scaling(np.arange(1.0, 6.0), np.arange(1.0, 6.0), rules=FitRules(drop_outliers=False, n_boot=0))
    assert five.n_points == 5 and five.alpha == pytest.approx(1.0)


def test_layer_with_zero_variability_has_no_fit():
    fit = fit_scaling(MAGNITUDES, np.zeros(26), rules=FitRules(drop_outliers=True, n_boot=1000))
    assert fit == ScalingFit.missing(0)


def test_outlier_rule_three_times_median():
    magnitudes = np.arange(1.0, 12.0)
    values = np.ones(11)
    values[4] = 3.0  # exactly 3x the median: kept
    values[7] = 3.01  # above: dropped
    assert list(np.flatnonzero(~outlier_mask(values))) == [7]
    keep, n_outliers = scaling_mask(magnitudes, values, rules=FitRules(drop_outliers=True))
    assert n_outliers == 1 and keep.sum() == 10
    fit = fit_scaling(magnitudes, values, rules=FitRules(drop_outliers=True, n_boot=0))
    assert fit.n_points == 10 and fit.n_outliers == 1
    without_rule = fit_scaling(magnitudes, values, rules=FitRules(drop_outliers=False, n_boot=0))
    assert without_rule.n_points == 11 and without_rule.n_outliers == 0
    assert fit.alpha != without_rule.alpha
    # the median is taken over every finite V of the layer, zeros included
    mostly_zero = np.array([0.0, 0.0, 0.0, 1.0, 5.0])
    assert outlier_mask(mostly_zero).all()


def test_nonpositive_magnitudes_are_dropped():
    magnitudes = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 5.0])
    fit = fit_scaling(magnitudes, magnitudes**0.5 + (magnitudes == 0), rules=FitRules(drop_outliers=False, n_boot=0))
    assert fit.n_points == 5 and fit.alpha == pytest.approx(0.5)


def test_aicc_hand_computed():
    # n = 10, RSS = 2, k = 2: -2 log L = 10 (log(2 pi 0.2) + 1); penalty 2k + 2k(k+1)/(n-k-1)
    expected = 10 * (math.log(2 * math.pi * 0.2) + 1) + 4 + 12 / 7
    assert aicc_gaussian(2.0, 10, 2) == pytest.approx(expected)
    assert math.isnan(aicc_gaussian(1.0, 4, 3))


@pytest.mark.parametrize(
    ("truth", "make"),
    [
        ("constant", lambda n, e: 3.0 + 0.01 * e),
        ("scalar", lambda n, e: 0.2 * n * (1 + 0.01 * e)),
        ("log_scalar", lambda n, e: 2.0 + 0.5 * np.log(n) + 0.01 * e),
        ("power_law", lambda n, e: 2.0 * n**0.5 * (1 + 0.001 * e)),
    ],
)
def test_noise_models_pick_the_generating_model(truth, make, rng):
    values = make(MAGNITUDES, rng.normal(size=MAGNITUDES.size))
    frame = compare_noise_models(MAGNITUDES, values)
    assert list(frame.columns) == NOISE_MODEL_COLUMNS
    assert list(frame["model"]) == ["constant", "scalar", "log_scalar", "power_law"]
    best = frame.loc[frame["delta_aicc"].idxmin(), "model"]
    assert best == truth
    assert frame["weight"].sum() == pytest.approx(1.0)
    assert frame["delta_aicc"].min() == 0.0


def test_noise_model_parameters_and_missing_data():
    frame = compare_noise_models(MAGNITUDES, 2.0 * MAGNITUDES**-0.1).set_index("model")
    assert frame.loc["power_law", "alpha"] == pytest.approx(-0.1)
    assert frame.loc["power_law", "k"] == pytest.approx(2.0)
    assert frame.loc["scalar", "k"] == pytest.approx(
        np.sum(2.0 * MAGNITUDES**0.9) / np.sum(MAGNITUDES**2)
    )
    assert list(frame["n_params"]) == [2, 2, 3, 3]
    empty = compare_noise_models(MAGNITUDES[:4], np.ones(4))
    assert empty["aicc"].isna().all() and (empty["n_points"] == 4).all()
    masked = compare_noise_models(MAGNITUDES, np.ones(26), mask=MAGNITUDES < 50)
    assert (masked["n_points"] == 14).all()


def test_input_checks():
    with pytest.raises(AnalysisError, match="equal length"):
        fit_scaling(MAGNITUDES, np.ones(5), rules=FitRules(drop_outliers=False))
    with pytest.raises(AnalysisError, match=">= 0"):
        fit_scaling(MAGNITUDES, np.ones(26), rules=FitRules(drop_outliers=False, n_boot=-1))


@pytest.mark.parametrize("drop_outliers", [False, True])
def test_scaling_alpha_is_fit_scaling_s_alpha_by_the_same_point_rules(drop_outliers):
    rng = np.random.default_rng(11)
    n = np.arange(1.0, 27.0)
    cases = [
        2.0 * n ** 0.3 * np.exp(rng.normal(scale=0.1, size=n.size)),  # a planted alpha of 0.3
        np.where(n < 4, 100.0, 1.0) * n ** -0.2,  # three points 100x the rest: the outlier rule's case
        np.r_[np.zeros(22), 1.0, 2.0, 3.0, 4.0],  # four usable points: no fit
        np.full(n.size, 5.0),  # constant V: slope 0
    ]
    for values in cases:
        expected = fit_scaling(n, values, rules=FitRules(drop_outliers=drop_outliers, n_boot=0)).alpha
        got = scaling_alpha(n, values, rules=FitRules(drop_outliers=drop_outliers))
        assert got == expected or (np.isnan(got) and np.isnan(expected))
    assert scaling_alpha(n, cases[1], rules=FitRules(drop_outliers=True)) == pytest.approx(-0.2, abs=1e-12)
    assert abs(scaling_alpha(n, cases[1], rules=FitRules(drop_outliers=False)) + 0.2) > 0.5  # the rule is applied


def test_row_slopes_are_the_weighted_slopes_of_each_rows_own_y(rng):
    x = np.log(np.arange(1.0, 27.0))
    counts = np.concatenate(list(resample_counts(26, 50, seed=2)))
    y = 5.0 + rng.normal(size=(50, 26))
    slopes = weighted_row_slopes(x, y, counts)
    for row in (0, 17, 49):
        drawn = np.repeat(np.arange(26), counts[row].astype(int))
        assert slopes[row] == pytest.approx(np.polyfit(x[drawn], y[row, drawn], 1)[0], abs=1e-12)
    hidden = y.copy()
    hidden[counts == 0] = np.nan  # under a zero weight, whatever y holds is ignored
    np.testing.assert_allclose(weighted_row_slopes(x, hidden, counts), slopes, atol=1e-13)
    one_magnitude = np.zeros((1, 26))
    one_magnitude[0, 3] = 26
    assert math.isnan(weighted_row_slopes(x, y[:1], one_magnitude)[0])
