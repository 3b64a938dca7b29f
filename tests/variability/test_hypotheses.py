"""H1–H4, programme verdicts, E3 and E4 on hand-built alphas and planted data."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from magdash.errors import AnalysisError
from magdash.params import parse_layers
from magdash.variability.analysis_params import default_core_layers
from magdash.variability.hypotheses import (
    axis_specificity,
    boundary_sensitivity,
    evaluate_hypotheses,
    paired_wilcoxon,
    programme_verdict,
)

MAGNITUDES = np.array(
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 150, 200, 300, 500,
     700, 1000],
    dtype=np.float64,
)  # fmt: skip


def test_default_core_layers():
    assert default_core_layers(32) == list(range(16, 32))
    assert default_core_layers(3) == [1, 2]
    assert default_core_layers(6) == [3, 4, 5]
    with pytest.raises(AnalysisError):
        default_core_layers(1)


def test_parse_layers():
    assert parse_layers("16-31") == list(range(16, 32))
    assert parse_layers("4,6, 8") == [4, 6, 8]
    for bad in ("a-b", "", "-3"):
        with pytest.raises(AnalysisError):
            parse_layers(bad)


def test_hypotheses_hand_computed():
    # layers 0..5; core 2..5 with alphas 0.9, 1.1, 1.0, -0.2 (layers 0-1 outside the band)
    alphas = np.array([np.nan, 5.0, 0.9, 1.1, 1.0, -0.2])
    result = evaluate_hypotheses(alphas, [2, 3, 4, 5])
    core = np.array([0.9, 1.1, 1.0, -0.2])
    assert result.positive_layers == 3 and result.h1  # 3 of 4 > 2
    assert result.in_window_layers == 3 and result.h2  # 0.9, 1.1, 1.0 inside [0.8, 1.2]
    assert result.below_one_layers == 2 and not result.h3  # 2 of 4 is not a majority
    assert result.mean_alpha == pytest.approx(core.mean())
    assert result.median_alpha == pytest.approx(np.median(core))
    t0 = stats.ttest_1samp(core, 0.0)
    t1 = stats.ttest_1samp(core, 1.0)
    assert (result.h1_t, result.h1_p) == pytest.approx((t0.statistic, t0.pvalue))
    assert (result.h2_t, result.h2_p) == pytest.approx((t1.statistic, t1.pvalue))
    rho = stats.spearmanr([2, 3, 4, 5], core).statistic
    # exact p over the 24 orderings of four layers, enumerated independently
    orderings = [stats.spearmanr([2, 3, 4, 5], core[list(p)]).statistic for p in itertools.permutations(range(4))]
    exact_p = np.mean(np.abs(orderings) >= abs(rho) - 1e-12)
    assert (result.h4_rho, result.h4_p) == pytest.approx((rho, exact_p))
    assert result.verdicts() == {"H1": True, "H2": True, "H3": False, "H4": False}


def test_window_is_configurable_and_inclusive():
    alphas = np.array([0.5, 0.6, 0.7])
    assert not evaluate_hypotheses(alphas, [0, 1, 2]).h2
    wide = evaluate_hypotheses(alphas, [0, 1, 2], window=(0.5, 0.6))
    assert wide.in_window_layers == 2 and wide.h2 and wide.window == (0.5, 0.6)
    with pytest.raises(AnalysisError, match="LOW <= HIGH"):
        evaluate_hypotheses(alphas, [0, 1, 2], window=(1.2, 0.8))


def test_h4_detects_a_depth_trend():
    layers = list(range(16, 32))
    alphas = np.full(33, np.nan)
    alphas[16:32] = np.linspace(-0.2, 0.1, 16)
    result = evaluate_hypotheses(alphas, layers)
    assert result.h4 and result.h4_rho == pytest.approx(1.0)
    flat = np.full(33, -0.05)
    assert not evaluate_hypotheses(flat, layers).h4


def test_missing_layers_count_against_a_majority():
    # 4 core layers, 2 positive, 2 without a fit: 2 of 4 is not a majority
    alphas = np.array([0.1, 0.2, np.nan, np.nan])
    result = evaluate_hypotheses(alphas, [0, 1, 2, 3])
    assert result.n_valid == 2 and result.positive_layers == 2 and not result.h1
    none = evaluate_hypotheses(np.full(4, np.nan), [0, 1, 2, 3])
    assert math.isnan(none.mean_alpha) and not any(none.verdicts().values())


def test_core_layer_checks():
    with pytest.raises(AnalysisError, match="do not exist"):
        evaluate_hypotheses(np.zeros(5), [3, 4, 5])
    with pytest.raises(AnalysisError, match="empty"):
        evaluate_hypotheses(np.zeros(5), [])


def test_programme_verdict_needs_a_majority_of_models():
    supportive = evaluate_hypotheses(np.array([0.9, 1.0, 1.1]), [0, 1, 2])
    against = evaluate_hypotheses(np.array([-0.1, -0.05, -0.02]), [0, 1, 2])
    frame = programme_verdict({"a": supportive, "b": supportive, "c": against}).set_index("hypothesis")
    assert frame.loc["H1", "supporting_models"] == 2 and frame.loc["H1", "supported"]
    assert frame.loc["H1", "models"] == "a, b"
    assert frame.loc["H3", "supporting_models"] == 1 and not frame.loc["H3", "supported"]
    two = programme_verdict({"a": supportive, "c": against}).set_index("hypothesis")
    assert not two.loc["H1", "supported"]  # 1 of 2 is not a majority
    with pytest.raises(AnalysisError):
        programme_verdict({})


def test_random_controls_are_references_not_voters():
    """Two @random controls that support H1 cannot outvote one trained model that does not."""
    supportive = evaluate_hypotheses(np.array([0.002, 0.001, 0.0005]), [0, 1, 2])  # alpha ~ 0, all > 0
    against = evaluate_hypotheses(np.array([-0.1, -0.05, -0.02]), [0, 1, 2])
    results = {"minilm": against, "minilm@random": supportive, "smollm2@random:7": supportive}
    frame = programme_verdict(results).set_index("hypothesis")
    assert frame.loc["H1", "n_models"] == 1 and frame.loc["H1", "supporting_models"] == 0
    assert not frame.loc["H1", "supported"] and frame.loc["H3", "models"] == "minilm"
    with pytest.raises(AnalysisError, match="trained model"):
        programme_verdict({"minilm@random": supportive})


def test_e3_refit_without_boundary_magnitudes():
    # exact power law n^-0.05 except distorted boundary magnitudes 9, 10 and 100
    values = np.tile(MAGNITUDES**-0.05, (4, 1))
    values[:, np.isin(MAGNITUDES, [9, 10, 100])] *= 1.5
    result = boundary_sensitivity(MAGNITUDES, values, [2, 3], drop_outliers=True)
    assert result.dropped == [9.0, 10.0, 100.0]
    np.testing.assert_allclose(result.alpha_without, [-0.05, -0.05], atol=1e-12)
    assert all(abs(a + 0.05) > 1e-3 for a in result.alpha_with)
    assert result.mean_shift == pytest.approx(result.mean_alpha_without - result.mean_alpha_with)
    # a configurable set; magnitudes absent from the stimuli are ignored
    other = boundary_sensitivity(MAGNITUDES, values, [2], drop_outliers=False, boundary=(7, 12345))
    assert other.dropped == [7.0] and other.boundary == [7.0, 12345.0]


def test_e4_on_versus_off_axis():
    layers = 6
    core = [2, 3, 4, 5]
    slopes_on = np.array([-0.4, -0.35, -0.45, -0.38, -0.41, -0.39])
    on = MAGNITUDES[None, :] ** slopes_on[:, None]
    off = np.tile(MAGNITUDES**-0.1, (layers, 1))
    result = axis_specificity(MAGNITUDES, on, off, core)
    np.testing.assert_allclose(result.alpha_on, slopes_on[core], atol=1e-12)
    np.testing.assert_allclose(result.alpha_off, [-0.1] * 4, atol=1e-12)
    assert result.ratio == pytest.approx(slopes_on[core].mean() / -0.1)
    reference = stats.wilcoxon(slopes_on[core], [-0.1] * 4)
    assert result.wilcoxon_p == pytest.approx(reference.pvalue)
    assert result.n_pairs == 4
    # a layer without variance (embeddings) gives no alpha and drops out of the test
    on[3] = 0.0
    dropped = axis_specificity(MAGNITUDES, on, off, core)
    assert math.isnan(dropped.alpha_on[1]) and dropped.n_pairs == 3


def test_paired_wilcoxon_edge_cases():
    assert math.isnan(paired_wilcoxon([1.0], [2.0])[1])
    assert math.isnan(paired_wilcoxon([1.0, 2.0], [1.0, 2.0])[1])  # all differences zero
    statistic, p_value, n_pairs = paired_wilcoxon([1.0, 2.0, np.nan, 4.0, 6.0], [0.0, 0.5, 1.0, 1.0, 1.0])
    reference = stats.wilcoxon([1.0, 2.0, 4.0, 6.0], [0.0, 0.5, 1.0, 1.0])
    assert n_pairs == 4 and p_value == pytest.approx(reference.pvalue)
    assert statistic == pytest.approx(reference.statistic)


def test_spearman_trend_is_exact_for_few_layers():
    from magdash.variability.hypotheses import spearman_trend

    rho, p = spearman_trend(np.array([3.0, 4.0, 5.0]), np.array([-0.04, -0.03, -0.02]))
    assert rho == pytest.approx(1.0)
    assert p == pytest.approx(2 / 6)  # two of the six orderings reach |rho| = 1
    rho, p = spearman_trend(np.arange(5.0), np.array([0.1, 0.3, 0.2, 0.5, 0.4]))
    assert rho == pytest.approx(0.8)
    assert p == pytest.approx(16 / 120)  # sum d^2 <= 4 (8 orderings) or >= 36 (8 more) out of 5!
    many = np.arange(20.0)
    rho, p = spearman_trend(many, many**2)
    # Above 8 layers the asymptotic p, whose t is infinite for a perfect ordering (p = 0), is kept
    # at the exact p of a perfect ordering, 2 / 20!: a p of 0 is one no test can give.
    assert rho == pytest.approx(1.0) and p == pytest.approx(2 / math.factorial(20), rel=1e-12)
    pairs_swapped = np.array([1.0, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 14])
    rho, p = spearman_trend(np.arange(15.0), pairs_swapped)  # a near-perfect ordering keeps its own p
    assert rho == pytest.approx(0.975) and p == pytest.approx(stats.spearmanr(np.arange(15), pairs_swapped).pvalue)


def test_three_ordered_core_layers_do_not_support_h4():
    result = evaluate_hypotheses(np.array([0.0, 0.0, 0.0, -0.04, -0.03, -0.02]), [3, 4, 5])
    assert result.h4_rho == pytest.approx(1.0)
    assert not result.h4 and result.h4_p == pytest.approx(1 / 3)
