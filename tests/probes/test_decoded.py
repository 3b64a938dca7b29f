"""Decoded scalar variability on hand-computed and exact power-law cases; no spread fitted where
the carriers' predictions differ by rounding only; the constant-error null of the exponent."""

from __future__ import annotations

import math

import numpy as np
import pytest

from magdash.probes.decoded import (
    DecodedSpread,
    PermutationDraws,
    constant_error_null,
    decoded_scaling,
    decoded_spread,
    null_p,
)
from magdash.probes.scores import BootstrapDraws

MAGNITUDES = np.array([2.0, 5, 10, 50, 100, 500])


def spread_of(sd: np.ndarray, centre: np.ndarray | None = None) -> DecodedSpread:
    """A log read-out's spread with SD ``sd``, calibrated unless ``centre`` says otherwise."""
    centre = np.log(MAGNITUDES) if centre is None else centre
    return DecodedSpread(mean=np.exp(centre), sd=sd, weber=sd / MAGNITUDES, centre=centre)


def test_spread_by_hand():
    predictions = np.log(np.array([[1.0, 2, 3], [10, 10, 10]]))
    spread = decoded_spread(predictions, np.array([2.0, 10.0]), "log")
    np.testing.assert_allclose(spread.mean, [2.0, 10.0])
    np.testing.assert_allclose(spread.sd, [1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(spread.weber, [0.5, 0.0], atol=1e-12)
    np.testing.assert_allclose(spread.centre, [np.log(6.0) / 3, np.log(10.0)])
    linear = decoded_spread(np.array([[-1.0, 1.0, 3.0], [5.0, 6.0, 7.0]]), np.array([1.0, 6.0]), "linear")
    assert linear.mean[0] == 1.0 and linear.sd[0] == 2.0 and linear.weber[0] == 2.0
    assert (linear.centre == 0).all()


def test_predictions_equal_but_for_rounding_have_no_spread():
    # As at a decoder's embedding layer: every carrier the same vector, the folds' predictions
    # differing in their last digits only.
    exact = np.repeat(np.log(MAGNITUDES)[:, None], 5, axis=1)
    rounded = exact * (1.0 + 1e-15 * np.random.default_rng(0).standard_normal(exact.shape))
    assert np.ptp(rounded, axis=1).max() > 0
    spread = decoded_spread(rounded, MAGNITUDES, "log")
    assert (spread.sd == 0).all() and (spread.weber == 0).all()
    point, replicates = decoded_scaling(spread, MAGNITUDES, BootstrapDraws(50, 0).counts(MAGNITUDES.size))
    assert point["n_points"] == 0 and math.isnan(point["beta"]) and math.isnan(point["weber_mean"])
    assert "do not differ between carriers beyond rounding" in point["note"]
    assert np.isnan(replicates["beta"]).all() and np.isnan(replicates["weber_mean"]).all()
    assert math.isnan(constant_error_null(spread, MAGNITUDES, PermutationDraws(100, 0))[0])
    # a spread just above the resolution is a spread
    rounded[0, 0] += 1e-6
    assert decoded_spread(rounded, MAGNITUDES, "log").sd[0] > 0


@pytest.mark.parametrize("beta", [1.0, 0.0, -0.5, 0.3])
def test_an_exact_power_law_gives_its_exponent_in_every_resample(beta):
    sd = 0.2 * MAGNITUDES ** beta
    counts = BootstrapDraws(300, seed=0).counts(MAGNITUDES.size)
    point, replicates = decoded_scaling(spread_of(sd), MAGNITUDES, counts)
    assert point["beta"] == pytest.approx(beta, abs=1e-12) and point["intercept"] == pytest.approx(math.log(0.2))
    assert point["calibration"] == pytest.approx(1.0) and point["n_points"] == MAGNITUDES.size
    assert point["weber_mean"] == pytest.approx(np.mean(sd / MAGNITUDES)) and point["note"] == ""
    defined = np.isfinite(replicates["beta"])
    assert defined.mean() > 0.9  # a draw of one magnitude only has no slope
    np.testing.assert_allclose(replicates["beta"][defined], beta, atol=1e-9)
    chosen = np.repeat(np.arange(MAGNITUDES.size), counts[0].astype(int))
    assert replicates["weber_mean"][0] == pytest.approx(np.mean((sd / MAGNITUDES)[chosen]))


def test_zero_spread_is_left_out_of_the_slope_and_the_mean_and_too_few_points_give_none():
    sd = np.array([0.0, 1.0, 2.0, 0.0, 20.0, 0.0])
    point, _ = decoded_scaling(spread_of(sd), MAGNITUDES, np.ones((1, MAGNITUDES.size)))
    assert point["n_points"] == 3
    assert point["beta"] == pytest.approx(np.polyfit(np.log([5, 10, 100]), np.log([1, 2, 20]), 1)[0])
    assert point["weber_mean"] == pytest.approx(np.mean([1 / 5, 2 / 10, 20 / 100]))
    sd[1] = 0.0
    point, replicates = decoded_scaling(spread_of(sd), MAGNITUDES, np.ones((4, MAGNITUDES.size)))
    assert point["n_points"] == 2 and math.isnan(point["beta"]) and np.isnan(replicates["beta"]).all()
    assert point["note"] == "only 2 magnitude(s) have a decoded spread between carriers beyond rounding; the fit needs 3"


def test_a_constant_error_ratio_gives_the_null_whatever_the_calibration():
    # ln n-hat = a_n + e, e of the same spread s at every n: SD(n-hat) = e^a_n s, so beta is the
    # slope of a_n on ln n, here 0.8 (a miscalibrated read-out), and it is its own null.
    centre = 0.8 * np.log(MAGNITUDES) + 0.3
    sd = np.exp(centre) * 0.2
    spread = spread_of(sd, centre)
    point, _ = decoded_scaling(spread, MAGNITUDES, np.ones((1, MAGNITUDES.size)))
    beta_null, null_betas = constant_error_null(spread, MAGNITUDES, PermutationDraws(500, 1))
    assert point["beta"] == pytest.approx(0.8) and beta_null == pytest.approx(0.8)
    np.testing.assert_allclose(null_betas, 0.8, atol=1e-12)  # every permutation of equal spreads is the same
    assert null_p(point["beta"], beta_null, null_betas) == 1.0


def test_an_error_that_grows_with_n_on_the_read_out_scale_is_told_from_the_null():
    # ln s_n = 0.5 ln n: the log-scale error grows with n, beta = 1 + 0.5 against a null of 1.
    magnitudes = np.geomspace(2, 1000, 12)
    centre = np.log(magnitudes)
    sd = np.exp(centre) * 0.05 * magnitudes ** 0.5
    spread = DecodedSpread(mean=magnitudes, sd=sd, weber=sd / magnitudes, centre=centre)
    point, _ = decoded_scaling(spread, magnitudes, np.ones((1, magnitudes.size)))
    beta_null, null_betas = constant_error_null(spread, magnitudes, PermutationDraws(2000, 2))
    assert point["beta"] == pytest.approx(1.5) and beta_null == pytest.approx(1.0)
    assert null_betas.mean() == pytest.approx(1.0, abs=0.02)  # the null's mean is beta_null
    assert null_p(point["beta"], beta_null, null_betas) == pytest.approx(1 / 2001)  # only the identity is as far


def test_permutations_are_drawn_once_per_size_and_are_permutations():
    draws = PermutationDraws(50, seed=3)
    orders = draws.orders(7)
    assert orders.shape == (50, 7) and draws.orders(7) is orders
    assert (np.sort(orders, axis=1) == np.arange(7)).all()
    assert len({tuple(row) for row in orders}) > 40  # not one permutation repeated
    np.testing.assert_array_equal(PermutationDraws(50, seed=3).orders(7), orders)  # seeded


def test_the_permutation_p_by_hand():
    null_betas = np.array([0.9, 1.1, 1.2, 0.7, 1.0])
    assert null_p(1.25, 1.0, null_betas) == pytest.approx(2 / 6)  # 0.7 is as far from 1
    assert null_p(1.2, 1.0, null_betas) == pytest.approx(3 / 6)  # 1.2 ties with itself
    assert null_p(1.05, 1.0, null_betas) == pytest.approx(5 / 6)
    assert math.isnan(null_p(1.0, 1.0, np.empty(0))) and math.isnan(null_p(math.nan, 1.0, null_betas))
