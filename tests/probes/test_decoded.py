"""Decoded scalar variability on hand-computed and exact power-law cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from magdash.probes.decoded import decoded_scaling, decoded_spread
from magdash.probes.scores import BootstrapDraws

MAGNITUDES = np.array([2.0, 5, 10, 50, 100, 500])


def test_spread_by_hand():
    predictions = np.log(np.array([[1.0, 2, 3], [10, 10, 10]]))
    spread = decoded_spread(predictions, np.array([2.0, 10.0]), "log")
    np.testing.assert_allclose(spread["mean_decoded"], [2.0, 10.0])
    np.testing.assert_allclose(spread["sd_decoded"], [1.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(spread["weber_fraction"], [0.5, 0.0], atol=1e-12)
    linear = decoded_spread(np.array([[-1.0, 1.0, 3.0]]), np.array([1.0]), "linear")
    assert linear["mean_decoded"][0] == 1.0 and linear["sd_decoded"][0] == 2.0 and linear["weber_fraction"][0] == 2.0


@pytest.mark.parametrize("beta", [1.0, 0.0, -0.5, 0.3])
def test_an_exact_power_law_gives_its_exponent_in_every_resample(beta):
    sd = 0.2 * MAGNITUDES ** beta
    spread = {"mean_decoded": MAGNITUDES.copy(), "sd_decoded": sd, "weber_fraction": sd / MAGNITUDES}
    counts = BootstrapDraws(300, seed=0).counts(MAGNITUDES.size)
    point, replicates = decoded_scaling(spread, MAGNITUDES, counts)
    assert point["beta"] == pytest.approx(beta, abs=1e-12) and point["intercept"] == pytest.approx(math.log(0.2))
    assert point["calibration"] == pytest.approx(1.0) and point["n_points"] == MAGNITUDES.size
    assert point["weber_mean"] == pytest.approx(np.mean(sd / MAGNITUDES))
    defined = np.isfinite(replicates["beta"])
    assert defined.mean() > 0.9  # a draw of one magnitude only has no slope
    np.testing.assert_allclose(replicates["beta"][defined], beta, atol=1e-9)
    chosen = np.repeat(np.arange(MAGNITUDES.size), counts[0].astype(int))
    assert replicates["weber_mean"][0] == pytest.approx(np.mean((sd / MAGNITUDES)[chosen]))


def test_zero_spread_is_left_out_of_the_slope_and_too_few_points_give_none():
    sd = np.array([0.0, 1.0, 2.0, 0.0, 20.0, 0.0])
    spread = {"mean_decoded": MAGNITUDES.copy(), "sd_decoded": sd, "weber_fraction": sd / MAGNITUDES}
    point, _ = decoded_scaling(spread, MAGNITUDES, np.ones((1, MAGNITUDES.size)))
    assert point["n_points"] == 3
    assert point["beta"] == pytest.approx(np.polyfit(np.log([5, 10, 100]), np.log([1, 2, 20]), 1)[0])
    sd[1] = 0.0
    point, replicates = decoded_scaling(spread, MAGNITUDES, np.ones((4, MAGNITUDES.size)))
    assert point["n_points"] == 2 and math.isnan(point["beta"]) and np.isnan(replicates["beta"]).all()
