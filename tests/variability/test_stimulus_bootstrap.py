"""Inference at the unit of replication: the stimulus bootstrap against explicit resamples, and
planted studies where layers that share their stimuli make a per-layer test reject."""

from __future__ import annotations

import math

import numpy as np
import pytest

from magdash.errors import AnalysisError
from magdash.significance import smallest_p
from magdash.stimuli import PAPER_MAGNITUDES
from magdash.variability.analysis import core_resamples, stimulus_resamples
from magdash.variability.analysis_params import AnalysisParams, FitRules
from magdash.variability.compare import ModelComparison, compare_models
from magdash.variability.fits import fit_scaling, scaling_mask
from magdash.variability.hypotheses import evaluate_hypotheses
from magdash.variability.measures import MEASURES, LayerVectors
from magdash.variability.stimulus_bootstrap import (
    StimulusDraws,
    bootstrap_p,
    draw_stimuli,
    mean_over_layers,
    resampled_alphas,
    summarise,
)

MAGNITUDES = np.array(PAPER_MAGNITUDES, dtype=np.float64)
N_BLOCKS = 30
CORE = list(range(15, 30))  # floor(30 / 2) .. 29: 15 core layers


def planted_model(rng, alpha: float, *, log_shift: np.ndarray | None = None, dim: int = 16,
                  shared: float = 0.95) -> list[np.ndarray]:
    """31 layers of (26, 5, dim) vectors with V proportional to n^alpha times exp(log_shift(n)).

    The carriers' noise is one draw shared by every layer (weight ``shared``) plus a little of each
    layer's own: adjacent layers see the same sentences, as in a real model, so their alphas agree.
    """
    common = rng.standard_normal((MAGNITUDES.size, 5, dim))
    log_sigma = alpha * np.log(MAGNITUDES) + (0.0 if log_shift is None else log_shift)
    centre = np.outer(np.log(MAGNITUDES), np.ones(dim))[:, None, :]
    layers = []
    for _ in range(N_BLOCKS + 1):
        noise = math.sqrt(shared) * common + math.sqrt(1 - shared) * rng.standard_normal(common.shape)
        layers.append(centre + np.exp(log_sigma)[:, None, None] * noise)
    return layers


def compared(first: list[np.ndarray], second: list[np.ndarray], n_boot: int = 200) -> ModelComparison:
    """V_eucl of the two models compared over the core band, with the stimulus bootstrap of both."""
    params = AnalysisParams(n_boot=n_boot, measures=("eucl",))
    resampled = [stimulus_resamples(((layer, layers[layer]) for layer in CORE), MAGNITUDES, params)["eucl"]
                 for layers in (first, second)]
    values = [np.stack([MEASURES["eucl"](layer) for layer in layers]) for layers in (first, second)]
    return compare_models(MAGNITUDES, *values, n_blocks_a=N_BLOCKS, n_blocks_b=N_BLOCKS, measure="eucl",
                          rules=FitRules(drop_outliers=True, n_boot=0),
                          resampled_a=core_resamples(resampled[0], CORE, n_boot),
                          resampled_b=core_resamples(resampled[1], CORE, n_boot))


def test_draws_resample_every_carrier_and_magnitude_and_share_the_magnitudes_across_carrier_counts():
    draws = draw_stimuli(26, 5, 300, seed=3)
    assert draws.magnitudes.shape == (300, 26) and draws.carriers.shape == (300, 5)
    assert (draws.magnitudes.sum(axis=1) == 26).all() and (draws.carriers.sum(axis=1) == 5).all()
    assert (draws.magnitudes == 0).any() and (draws.magnitudes > 1).any()  # with replacement
    # A number-format variant on three carriers pairs the same magnitude draws.
    np.testing.assert_array_equal(draw_stimuli(26, 3, 300, seed=3).magnitudes, draws.magnitudes)
    assert not np.array_equal(draw_stimuli(26, 5, 300, seed=4).magnitudes, draws.magnitudes)
    distinct, which = draws.distinct_carriers
    np.testing.assert_array_equal(distinct[which], draws.carriers)
    with pytest.raises(AnalysisError, match="at least 2 carriers"):
        draw_stimuli(26, 1, 10, seed=0)


def test_a_resampled_alpha_is_the_fit_of_the_resampled_stimuli(rng):
    x = planted_model(rng, -0.1)[20]
    layer = LayerVectors(x)
    draws = draw_stimuli(26, 5, 40, seed=1)
    alphas = resampled_alphas(MAGNITUDES, layer.moments(), "eucl", draws, rules=FitRules(drop_outliers=True))
    checked = 0
    for row in range(40):
        carriers = np.repeat(np.arange(5), draws.carriers[row])
        if np.unique(carriers).size < 2:
            assert math.isnan(alphas[row])  # one carrier drawn: V = 0, no fit
            continue
        v = MEASURES["eucl"](x[:, carriers])
        kept, _ = scaling_mask(MAGNITUDES, v, rules=FitRules(drop_outliers=True))
        drawn = np.repeat(np.arange(26), draws.magnitudes[row])
        drawn = drawn[kept[drawn]]
        expected = np.polyfit(np.log(MAGNITUDES[drawn]), np.log(v[drawn]), 1)[0]
        assert alphas[row] == pytest.approx(expected, abs=1e-10)
        checked += 1
    assert checked >= 35
    everything = StimulusDraws(np.ones((1, 5), dtype=np.int32), np.ones((1, 26), dtype=np.int32))
    for measure in ("eucl", "residual", "proj", "on_axis"):
        own = fit_scaling(MAGNITUDES, MEASURES[measure](x), rules=FitRules(drop_outliers=measure in ("eucl", "residual"), n_boot=0))
        again = resampled_alphas(MAGNITUDES, layer.moments(), measure, everything,
                                 rules=FitRules(drop_outliers=measure in ("eucl", "residual")))
        assert again[0] == pytest.approx(own.alpha, abs=1e-12), measure


def test_bootstrap_p_counts_the_other_side_and_cannot_go_below_its_floor():
    samples = np.array([-0.3, 0.1, 0.2, 0.3, 0.4, np.nan, 0.5, 0.6, 0.7, 0.0])
    # estimate > 0: 2 of 9 finite resamples at or below 0
    assert bootstrap_p(samples, 0.4) == pytest.approx(2 * 3 / 10)
    assert bootstrap_p(-samples, -0.4) == pytest.approx(2 * 3 / 10)
    all_positive = np.linspace(0.1, 1.0, 999)
    assert bootstrap_p(all_positive, 0.5) == pytest.approx(smallest_p("bootstrap", 999))
    assert bootstrap_p(samples, 0.0) == 1.0 and math.isnan(bootstrap_p(np.array([np.nan]), 0.3))
    summary = summarise(all_positive, 0.5, 0.9)
    assert summary.n_resamples == 999 and summary.ci[0] == pytest.approx(np.percentile(all_positive, 5))
    assert math.isnan(summarise(None, 0.5, 0.95).ci[0])


def test_a_resample_without_a_fit_at_some_core_layer_is_left_out_of_the_mean():
    alphas = np.array([[0.1, 0.3, np.nan], [np.nan, 0.2, 0.4], [0.2, 0.2, 0.2]])
    means = mean_over_layers(alphas, np.array([True, True, False]))  # the third layer has no fit of its own
    np.testing.assert_allclose(means, [0.2, np.nan, 0.2])


def test_layers_that_share_two_stimuli_make_the_wilcoxon_reject_and_the_stimulus_bootstrap_does_not():
    """The model differs from its control only at two magnitudes (9 and 10, V e^0.8 higher in every
    layer): all 15 core layers agree, so the per-layer Wilcoxon rejects at its floor; the stimulus
    bootstrap sees that two stimuli carry the difference."""
    rng = np.random.default_rng(7)
    bump = np.where(np.isin(MAGNITUDES, (9, 10)), 0.8, 0.0)
    comparison = compared(planted_model(rng, -0.05, log_shift=bump), planted_model(rng, -0.05))
    assert comparison.n_pairs == 15 and comparison.wilcoxon_reachable
    assert comparison.wilcoxon_p < 1e-3
    low, high = comparison.mean_delta_ci
    assert low < 0 < high and comparison.mean_delta_p > 0.05
    assert comparison.n_resamples >= 190


def test_a_real_difference_of_alpha_is_found_by_both():
    rng = np.random.default_rng(8)
    comparison = compared(planted_model(rng, -0.05), planted_model(rng, -0.15))
    assert comparison.mean_delta == pytest.approx(0.1, abs=0.03)
    assert comparison.wilcoxon_p < 1e-3
    low, high = comparison.mean_delta_ci
    assert 0 < low < 0.1 < high and comparison.mean_delta_p < 0.05


def test_h1_over_correlated_layers_rejects_where_the_stimulus_interval_covers_zero():
    """alpha = 0 with one stimulus-level effect shared by every layer (the magnitudes' own
    scatter, drawn once): the t-test over 15 core layers rejects, the stimulus interval does not."""
    rng = np.random.default_rng(11)
    layers = planted_model(rng, 0.0, log_shift=0.15 * rng.standard_normal(MAGNITUDES.size))
    params = AnalysisParams(n_boot=200, measures=("eucl",))
    resampled = stimulus_resamples(((layer, layers[layer]) for layer in CORE), MAGNITUDES, params)["eucl"]
    alphas = np.array([fit_scaling(MAGNITUDES, MEASURES["eucl"](x), rules=FitRules(drop_outliers=True, n_boot=0)).alpha
                       for x in layers])
    result = evaluate_hypotheses(alphas, CORE, resampled=core_resamples(resampled, CORE, 200))
    assert result.h1_p < 1e-3
    low, high = result.mean_alpha_ci
    assert low < 0 < high and result.mean_alpha_p > 0.05 and low < result.mean_alpha < high


@pytest.mark.slow
def test_the_stimulus_bootstrap_keeps_its_level_where_the_layerwise_wilcoxon_does_not():
    """Over 40 planted studies with no difference in alpha (each model's magnitudes scattered once,
    for all its layers), the Wilcoxon over 15 core layers rejects in most, the stimulus bootstrap in
    few; with a difference of 0.1 both find it in nearly all."""
    rejections = {"null": [0, 0], "effect": [0, 0]}
    for study in range(40):
        rng = np.random.default_rng(1000 + study)
        for case, delta in (("null", 0.0), ("effect", 0.1)):
            first = planted_model(rng, -0.05, log_shift=0.1 * rng.standard_normal(MAGNITUDES.size))
            second = planted_model(rng, -0.05 - delta, log_shift=0.1 * rng.standard_normal(MAGNITUDES.size))
            comparison = compared(first, second)
            low, high = comparison.mean_delta_ci
            rejections[case][0] += comparison.wilcoxon_p < 0.05
            rejections[case][1] += not low <= 0 <= high
    assert rejections["null"][0] >= 28  # the layerwise test: a real size far above 0.05
    assert rejections["null"][1] <= 6  # the stimulus bootstrap: about its level (binomial slack)
    assert min(rejections["effect"]) >= 36
