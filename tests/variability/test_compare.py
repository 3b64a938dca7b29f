"""Model pairs: depth alignment, jointly resampled CI of alpha differences, Wilcoxon."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from magdash.errors import AnalysisError
from magdash.variability.analysis_params import FitRules
from magdash.variability.compare import align_by_depth, compare_models, slope_difference
from magdash.variability.fits import fit_scaling

MAGNITUDES = np.array(
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 150, 200, 300, 500,
     700, 1000],
    dtype=np.float64,
)  # fmt: skip


def _layers(rng, n_layers, alpha, noise=0.1):
    return MAGNITUDES[None, :] ** alpha * np.exp(rng.normal(0, noise, (n_layers, MAGNITUDES.size)))


def test_align_equal_depths_is_identity():
    table = align_by_depth(32, 32)
    assert list(table["layer_a"]) == list(range(33))
    assert list(table["layer_b"]) == list(range(33))
    np.testing.assert_allclose(table["gamma_a"], np.arange(33) / 32)


def test_align_different_depths_by_depth_fraction():
    deeper_to_shallower = align_by_depth(32, 16)
    # gamma = l/32; nearest layer of the 16-block model is floor(l/2 + 1/2)
    assert list(deeper_to_shallower["layer_b"][:6]) == [0, 1, 1, 2, 2, 3]
    assert deeper_to_shallower["layer_b"].iloc[-1] == 16
    shallower_to_deeper = align_by_depth(12, 24)
    assert list(shallower_to_deeper["layer_b"]) == [2 * layer for layer in range(13)]
    np.testing.assert_allclose(shallower_to_deeper["gamma_b"], shallower_to_deeper["gamma_a"])
    with pytest.raises(AnalysisError):
        align_by_depth(0, 4)


def test_joint_resampling_cancels_shared_noise(rng):
    """B = A x n^0.1 with the same noise: every joint resample gives exactly delta = -0.1."""
    values_a = _layers(rng, 1, -0.05)[0]
    values_b = values_a * MAGNITUDES**0.1
    alpha_a, alpha_b, delta, low, high = slope_difference(
        MAGNITUDES, values_a, values_b, rules=FitRules(drop_outliers=False, n_boot=500, seed=1)
    )
    assert delta == pytest.approx(-0.1)
    assert low == pytest.approx(-0.1) and high == pytest.approx(-0.1)
    assert alpha_a == pytest.approx(fit_scaling(MAGNITUDES, values_a, rules=FitRules(drop_outliers=False, n_boot=0)).alpha)


def test_difference_ci_covers_the_planted_difference(rng):
    values_a = _layers(rng, 1, -0.05, noise=0.05)[0]
    values_b = _layers(rng, 1, 0.10, noise=0.05)[0]
    _, _, delta, low, high = slope_difference(
        MAGNITUDES, values_a, values_b, rules=FitRules(drop_outliers=True, n_boot=2000, seed=0)
    )
    assert low < -0.15 < high and low < delta < high
    assert high - low < 0.1
    identical = slope_difference(MAGNITUDES, values_a, values_a, rules=FitRules(drop_outliers=True, n_boot=200))
    assert identical[2:] == (0.0, 0.0, 0.0)


def test_each_model_keeps_its_own_points(rng):
    values_a = _layers(rng, 1, -0.05)[0]
    values_b = values_a.copy()
    values_b[3] = 100.0  # an outlier in B only: dropped from B's fit, not from A's
    alpha_a, alpha_b, delta, low, high = slope_difference(
        MAGNITUDES, values_a, values_b, rules=FitRules(drop_outliers=True, n_boot=300)
    )
    keep_b = np.arange(26) != 3
    expected_b = fit_scaling(MAGNITUDES[keep_b], values_a[keep_b], rules=FitRules(drop_outliers=False, n_boot=0)).alpha
    assert alpha_b == pytest.approx(expected_b)
    assert delta == pytest.approx(alpha_a - expected_b)
    assert low <= delta <= high


def test_no_fit_in_either_model_gives_nan(rng):
    values_a = _layers(rng, 1, -0.05)[0]
    result = slope_difference(MAGNITUDES, values_a, np.zeros(26), rules=FitRules(drop_outliers=True, n_boot=100))
    assert math.isnan(result[1]) and math.isnan(result[2]) and math.isnan(result[3])


def test_compare_models_e6(rng):
    values_a = _layers(rng, 33, -0.05)
    values_b = _layers(rng, 33, -0.02)
    values_a[0] = values_b[0] = 0.0  # embeddings: no fit
    comparison = compare_models(
        MAGNITUDES, values_a, values_b, n_blocks_a=32, n_blocks_b=32, measure="eucl",
        rules=FitRules(drop_outliers=True, n_boot=300),
    )  # fmt: skip
    table = comparison.layers.set_index("layer_a")
    assert comparison.core_layers == list(range(16, 32))
    assert table["core"].sum() == 16
    assert table.loc[0, ["alpha_a", "delta"]].isna().all()
    assert table.loc[list(range(16, 32)), "ci_low"].notna().all()
    assert table.loc[list(range(0, 16)), "ci_low"].isna().all()  # bootstrap on core layers only
    core = table.loc[list(range(16, 32))]
    reference = stats.wilcoxon(core["alpha_a"], core["alpha_b"])
    assert comparison.wilcoxon_p == pytest.approx(reference.pvalue)
    assert comparison.n_pairs == 16
    assert comparison.mean_delta == pytest.approx(core["delta"].mean())
    assert comparison.mean_delta < 0
    everywhere = compare_models(
        MAGNITUDES, values_a, values_b, n_blocks_a=32, n_blocks_b=32, measure="eucl",
        rules=FitRules(drop_outliers=True, n_boot=50), bootstrap_layers="all",
    )  # fmt: skip
    assert everywhere.layers.loc[1:, "ci_low"].notna().all()


def test_the_comparison_sentence_names_the_level_its_intervals_were_made_at(rng):
    from magdash.presentation.variability_figures import comparison_sentence
    from magdash.variability.compare import ComparisonResult

    values = _layers(rng, 9, -0.05)
    item = compare_models(MAGNITUDES, values, _layers(rng, 9, 0.0), n_blocks_a=8, n_blocks_b=8, measure="eucl",
                          rules=FitRules(drop_outliers=True, n_boot=50, ci=0.9),
                          resampled_a=np.full((50, 4), -0.05), resampled_b=np.zeros((50, 4)))
    assert item.ci == 0.9
    result = ComparisonResult("a", "b", "paper", item.core_layers, {"eucl": item})
    assert "90% CI [" in comparison_sentence(result, "eucl") and "95%" not in comparison_sentence(result, "eucl")
    assert ComparisonResult.from_payload(result.to_payload()).measures["eucl"].ci == 0.9


def test_compare_models_of_different_depth(rng):
    values_a = _layers(rng, 9, -0.05)  # 8 blocks
    values_b = _layers(rng, 18, 0.0)  # 16 blocks + a post-norm layer
    comparison = compare_models(
        MAGNITUDES, values_a, values_b, n_blocks_a=8, n_blocks_b=16, measure="proj",
        rules=FitRules(drop_outliers=False, n_boot=0),
    )  # fmt: skip
    assert list(comparison.layers["layer_b"]) == [0, 2, 4, 6, 8, 10, 12, 14, 16]
    assert comparison.core_layers == [4, 5, 6, 7]
    row = comparison.layers.set_index("layer_a").loc[5]
    expected = fit_scaling(MAGNITUDES, values_b[10], rules=FitRules(drop_outliers=False, n_boot=0)).alpha
    assert row["alpha_b"] == pytest.approx(expected)


def test_compare_models_checks_inputs(rng):
    values = _layers(rng, 5, 0.0)
    with pytest.raises(AnalysisError, match="same magnitudes"):
        compare_models(MAGNITUDES, values, values[:, :10], n_blocks_a=4, n_blocks_b=4, measure="eucl",
                       rules=FitRules(drop_outliers=True))  # fmt: skip
    with pytest.raises(AnalysisError, match="outside"):
        compare_models(MAGNITUDES, values, values, n_blocks_a=4, n_blocks_b=4, measure="eucl",
                       rules=FitRules(drop_outliers=True), core_layers=[9])  # fmt: skip
    with pytest.raises(AnalysisError, match="bootstrap_layers"):
        compare_models(MAGNITUDES, values, values, n_blocks_a=4, n_blocks_b=4, measure="eucl",
                       rules=FitRules(drop_outliers=True), bootstrap_layers="some")  # fmt: skip
