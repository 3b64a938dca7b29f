"""Hypothesis verdicts over the core layers (Cacioli, arXiv 2604.04469).

For one model and one measure, with alpha_l the scaling exponent of core layer l:

- H1 variability grows with magnitude: alpha > 0 at a majority of core layers
  (a one-sample t-test of the alphas against 0 is reported alongside);
- H2 scalar variability: alpha inside the Weber window (default [0.8, 1.2], inclusive) at a
  majority of core layers (t-test against 1 reported alongside);
- H3 sub-scalar: alpha < 1 at a majority of core layers;
- H4 alpha changes with depth: Spearman correlation of alpha with layer index, significant at
  ``significance`` (default 0.05, two-sided). magdash's convention correlates over the core
  layers that have a fit, with an exact p for up to 8 layers; the paper's script correlates over
  every stored layer 0..L with scipy's asymptotic p, and any layer without a fit makes it NaN
  (``h4_layers`` says which layers were used).

"Majority" means strictly more than half of the core layers asked for. A core layer without a
fit (too few points, V = 0) counts as not supporting any hypothesis, so missing data can never
create support; the tests use the layers that have a fit.

The core layers share their stimuli, so they are not replications: the tests over them (H1's
and H2's t-tests, H4's Spearman, E4's Wilcoxon) are the paper's, kept under its conventions,
and their real size exceeds their nominal level. What leads is the mean core alpha with the
interval of the stimulus bootstrap (:mod:`magdash.variability.stimulus_bootstrap`): its resamples
of the core alphas (B, K) give ``mean_alpha_ci`` and ``mean_alpha_p`` here, and E4's difference
and ratio of the mean on- and off-axis alphas their intervals. A test whose points cannot reach
its level says so (``h4_reachable``, ``wilcoxon_reachable``; :mod:`magdash.significance`).

Across models, a programme verdict supports a hypothesis when a majority of the *trained*
models do (the paper's "at least 2 of 3"); an ``@random`` control is a reference for its model,
shown beside it and never counted (:func:`programme_verdict`). E3 refits without boundary
magnitudes; E4 compares the scaling of on-axis and off-axis variance.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.names import is_control_name
from magdash.params import DEFAULT_CI
from magdash.result_codec import stored_as
from magdash.significance import SIGNIFICANCE_LEVEL, can_reach, smallest_p
from magdash.variability.analysis_params import DEFAULT_BOUNDARY, DEFAULT_WINDOW, FitRules
from magdash.variability.fits import fit_scaling, percentile_interval
from magdash.variability.stimulus_bootstrap import mean_over_layers, summarise

HYPOTHESES = ("H1", "H2", "H3", "H4")


def _check_core(core_layers: Sequence[int], n_layers: int) -> list[int]:
    core = [int(layer) for layer in core_layers]
    if not core:
        raise AnalysisError("the core band is empty; choose at least one layer")
    outside = [layer for layer in core if not 0 <= layer < n_layers]
    if outside:
        raise AnalysisError(
            f"core layers {outside} do not exist; this model has layers 0..{n_layers - 1}"
        )
    return core


# Payloads cached before analysis version 10 (decoded for their metric rows) hold no stimulus bootstrap:
# they read back without an interval, a p or resamples, and their reachability follows from their layers.
NO_INTERVAL = stored_as(missing=lambda document: (math.nan, math.nan))
NO_P = stored_as(missing=lambda document: math.nan)
NO_RESAMPLES = stored_as(missing=lambda document: 0)


@dataclass(frozen=True)
class HypothesisResult:
    """H1–H4 for one model and one measure over its core layers.

    Attributes:
        core_layers: the core layers tested.
        n_valid: how many of them have a fit.
        mean_alpha: the mean alpha over the fitted core layers.
        mean_alpha_ci: its stimulus-bootstrap interval (low, high): the estimate that leads
            (:mod:`magdash.variability.stimulus_bootstrap`); NaN without a bootstrap.
        mean_alpha_p: the two-sided stimulus-bootstrap p of a mean core alpha of 0.
        n_resamples: the stimulus resamples the interval rests on.
        median_alpha: the median alpha over them.
        positive_layers: core layers with alpha > 0.
        h1: H1 (alpha > 0) is supported: at more than half the core layers.
        h1_t: the one-sample t of the core alphas against 0 (the layers share the stimuli: a nominal test).
        h1_p: its p-value.
        window: the Weber window of H2.
        in_window_layers: core layers whose alpha lies in the window.
        h2: H2 (alpha in the Weber window) is supported.
        h2_t: the one-sample t of the core alphas against 1.
        h2_p: its p-value.
        below_one_layers: core layers with alpha < 1.
        h3: H3 (alpha < 1) is supported.
        h4: H4 (alpha changes with depth) is supported: Spearman p < .05.
        h4_rho: the Spearman rho of alpha with the layer index.
        h4_p: its p-value (exact for a few layers).
        h4_layers: the layers H4 is computed over (the conventions decide).
        h4_reachable: whether a Spearman test over that many layers can give p below the level at all.
    """

    core_layers: list[int]
    n_valid: int
    mean_alpha: float
    mean_alpha_ci: tuple[float, float] = field(metadata=NO_INTERVAL)
    mean_alpha_p: float = field(metadata=NO_P)
    n_resamples: int = field(metadata=NO_RESAMPLES)
    median_alpha: float
    positive_layers: int
    h1: bool
    h1_t: float
    h1_p: float
    window: tuple[float, float]
    in_window_layers: int
    h2: bool
    h2_t: float
    h2_p: float
    below_one_layers: int
    h3: bool
    h4: bool
    h4_rho: float
    h4_p: float
    h4_layers: list[int]
    h4_reachable: bool = field(metadata=stored_as(
        missing=lambda document: can_reach("spearman", len(document["h4_layers"]))))

    def verdicts(self) -> dict[str, bool]:
        """H1-H4 -> supported or not."""
        return {"H1": self.h1, "H2": self.h2, "H3": self.h3, "H4": self.h4}


def _t_test(values: np.ndarray, popmean: float) -> tuple[float, float]:
    from scipy import stats

    if values.size < 2 or np.ptp(values) == 0:
        return math.nan, math.nan
    result = stats.ttest_1samp(values, popmean)
    return float(result.statistic), float(result.pvalue)


EXACT_SPEARMAN_MAX_N = 8


def spearman_trend(depth: np.ndarray, values: np.ndarray) -> tuple[float, float]:
    """Spearman rho of ``values`` with ``depth`` and its two-sided p-value.

    With few layers the usual t approximation is badly wrong (three layers in perfect order
    give p = 0, where the truth is 1/3), so up to ``EXACT_SPEARMAN_MAX_N`` points the p-value
    is exact: the share of all orderings of ``values`` whose |rho| is at least the observed; above
    it the asymptotic p is kept at or above 2 / n!, the exact p of a perfect ordering.
    """
    from scipy import stats

    result = stats.spearmanr(depth, values)
    rho, p_value = float(result.statistic), float(result.pvalue)
    n = values.size
    if n > EXACT_SPEARMAN_MAX_N or not math.isfinite(rho):
        return rho, _attainable(p_value, n)
    import itertools

    depth_ranks = stats.rankdata(depth)
    value_ranks = stats.rankdata(values)
    orderings = np.array(list(itertools.permutations(range(n))))
    permuted = value_ranks[orderings]
    centred_depth = depth_ranks - depth_ranks.mean()
    centred = permuted - permuted.mean(axis=1, keepdims=True)
    denominator = np.sqrt((centred_depth**2).sum() * (centred**2).sum(axis=1))
    rhos = (centred @ centred_depth) / denominator
    exact_p = float(np.mean(np.abs(rhos) >= abs(rho) - 1e-12))
    return rho, exact_p


def depth_trend_all_layers(alphas: np.ndarray) -> tuple[float, float]:
    """H4 as the paper's script computes it: Spearman of every layer's alpha with its index.

    scipy's asymptotic p, kept at or above 2 / n! (a perfect ordering's t is infinite and its p 0,
    which no test of n points gives); NaN when a layer has no fit or the alphas are all equal.
    """
    from scipy import stats

    alphas = np.asarray(alphas, dtype=np.float64)
    if alphas.size < 3 or not np.isfinite(alphas).all() or np.ptp(alphas) == 0:
        return math.nan, math.nan
    result = stats.spearmanr(np.arange(alphas.size), alphas)
    return float(result.statistic), _attainable(float(result.pvalue), alphas.size)


def _attainable(p_value: float, n: int) -> float:
    """The asymptotic p, never below what an exact test of ``n`` points can give: for a perfect
    ordering the t approximation's t is infinite and its p 0, where the exact p is 2 / n!."""
    return max(p_value, smallest_p("spearman", n)) if math.isfinite(p_value) else p_value


def evaluate_hypotheses(
    alphas: np.ndarray,
    core_layers: Sequence[int],
    *,
    window: tuple[float, float] = DEFAULT_WINDOW,
    significance: float = SIGNIFICANCE_LEVEL,
    h4_all_layers: bool = False,
    h4_exact_p: bool = True,
    resampled: np.ndarray | None = None,
    ci: float = DEFAULT_CI,
) -> HypothesisResult:
    """H1–H4 from ``alphas`` indexed by layer (NaN = no fit) over ``core_layers``.

    ``h4_all_layers`` and ``h4_exact_p`` choose the H4 convention (module docstring).
    ``resampled`` (B, K) holds the core layers' alphas in each stimulus resample, in the order of
    ``core_layers`` (:func:`magdash.variability.stimulus_bootstrap.resampled_alphas`); from them the
    mean core alpha's interval at level ``ci`` and its p. None: no interval (NaN).
    """
    from scipy import stats

    low, high = float(window[0]), float(window[1])
    if not low <= high:
        raise AnalysisError(f"the Weber window must be LOW,HIGH with LOW <= HIGH, got {window}")
    alphas = np.asarray(alphas, dtype=np.float64)
    core = _check_core(core_layers, alphas.size)
    core_values = alphas[core]
    valid = np.isfinite(core_values)
    fitted = core_values[valid]
    mean_alpha = float(fitted.mean()) if fitted.size else math.nan
    if resampled is not None and np.shape(resampled)[1] != len(core):
        raise AnalysisError(f"resampled alphas of {np.shape(resampled)[1]} layers for {len(core)} core layers")
    lead = summarise(None if resampled is None else mean_over_layers(resampled, valid), mean_alpha, ci)
    majority = len(core) / 2.0
    positive = int(np.count_nonzero(fitted > 0))
    in_window = int(np.count_nonzero((fitted >= low) & (fitted <= high)))
    below_one = int(np.count_nonzero(fitted < 1))
    h1_t, h1_p = _t_test(fitted, 0.0)
    h2_t, h2_p = _t_test(fitted, 1.0)
    rho = rho_p = math.nan
    if h4_all_layers:
        h4_layers = list(range(alphas.size))
        rho, rho_p = depth_trend_all_layers(alphas)
    else:
        h4_layers = [layer for layer, ok in zip(core, valid, strict=True) if ok]
        if fitted.size >= 3 and np.ptp(fitted) > 0:
            depth = np.asarray(h4_layers, dtype=np.float64)
            if h4_exact_p:
                rho, rho_p = spearman_trend(depth, fitted)
            else:
                result = stats.spearmanr(depth, fitted)
                rho, rho_p = float(result.statistic), float(result.pvalue)
    return HypothesisResult(
        core_layers=core,
        n_valid=int(fitted.size),
        mean_alpha=mean_alpha,
        mean_alpha_ci=lead.ci,
        mean_alpha_p=lead.p,
        n_resamples=lead.n_resamples,
        median_alpha=float(np.median(fitted)) if fitted.size else math.nan,
        positive_layers=positive,
        h1=positive > majority,
        h1_t=h1_t,
        h1_p=h1_p,
        window=(low, high),
        in_window_layers=in_window,
        h2=in_window > majority,
        h2_t=h2_t,
        h2_p=h2_p,
        below_one_layers=below_one,
        h3=below_one > majority,
        h4=bool(math.isfinite(rho_p) and rho_p < significance),
        h4_rho=rho,
        h4_p=rho_p,
        h4_layers=h4_layers,
        h4_reachable=can_reach("spearman", len(h4_layers), significance),
    )


def programme_verdict(results: Mapping[str, HypothesisResult]) -> pd.DataFrame:
    """Across trained models: per hypothesis, how many support it and whether a majority does.

    ``results`` maps model name to its :class:`HypothesisResult` for one measure. ``@random``
    controls (:func:`magdash.names.is_control_name`) are references for their models, never voters:
    they are left out of the count. Columns: hypothesis, supporting_models, n_models (the trained
    models counted), supported, models (names that support it).
    """
    trained = {name: result for name, result in results.items() if not is_control_name(name)}
    if not trained:
        raise AnalysisError(
            "a programme verdict needs at least one analysed trained model; @random controls are references, "
            "not voters" if results else "a programme verdict needs at least one analysed model")
    rows = []
    for hypothesis in HYPOTHESES:
        supporters = [name for name, result in trained.items() if result.verdicts()[hypothesis]]
        rows.append(
            {
                "hypothesis": hypothesis,
                "supporting_models": len(supporters),
                "n_models": len(trained),
                "supported": len(supporters) > len(trained) / 2.0,
                "models": ", ".join(supporters),
            }
        )
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class BoundarySensitivity:
    """E3: the core-layer alphas refitted without the boundary magnitudes."""

    boundary: list[float]
    dropped: list[float]
    layers: list[int]
    alpha_with: list[float]
    alpha_without: list[float]
    mean_alpha_with: float
    mean_alpha_without: float
    mean_shift: float


def boundary_sensitivity(
    magnitudes: np.ndarray,
    values: np.ndarray,
    core_layers: Sequence[int],
    *,
    drop_outliers: bool,
    boundary: Sequence[float] = DEFAULT_BOUNDARY,
    refit_drop_outliers: bool | None = None,
) -> BoundarySensitivity:
    """E3: refit each core layer after removing the boundary magnitudes (default 9, 10, 100).

    ``values`` has shape (n_layers, n_magnitudes). By default both fits apply the same point
    rules (``drop_outliers``, V > 0, >= 5 points), the outlier median taken over the points
    that remain, so that only the boundary set differs between them. The paper's script
    refits without the outlier rule and compares with the core alphas fitted with it:
    ``refit_drop_outliers=False``. Boundary magnitudes absent from the stimuli are ignored;
    ``dropped`` lists those removed.
    """
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    core = _check_core(core_layers, values.shape[0])
    boundary_values = [float(b) for b in boundary]
    is_boundary = np.isin(magnitudes, boundary_values)
    keep = ~is_boundary
    # The default outlier factor, whatever the analysis's: E3 has always refitted with the paper's 3.
    with_rules = FitRules(drop_outliers=drop_outliers, n_boot=0)
    with_fit = [fit_scaling(magnitudes, values[layer], rules=with_rules).alpha for layer in core]
    refit_rules = with_rules.with_outlier_rule(drop_outliers if refit_drop_outliers is None else refit_drop_outliers)
    without_fit = [fit_scaling(magnitudes[keep], values[layer][keep], rules=refit_rules).alpha for layer in core]
    mean_with = _nanmean(with_fit)
    mean_without = _nanmean(without_fit)
    return BoundarySensitivity(
        boundary=boundary_values,
        dropped=[float(m) for m in magnitudes[is_boundary]],
        layers=core,
        alpha_with=with_fit,
        alpha_without=without_fit,
        mean_alpha_with=mean_with,
        mean_alpha_without=mean_without,
        mean_shift=mean_without - mean_with,
    )


def _nanmean(values: Sequence[float]) -> float:
    array = np.asarray(values, dtype=np.float64)
    finite = array[np.isfinite(array)]
    return float(finite.mean()) if finite.size else math.nan


@dataclass(frozen=True)
class AxisSpecificity:
    """E4: scaling of the variance on the magnitude axis (PC1) versus off it.

    Attributes:
        layers: the core layers.
        alpha_on: alpha of the on-axis variance per core layer.
        alpha_off: alpha of the off-axis variance per core layer.
        mean_alpha_on: their means over the layers with a fit.
        mean_alpha_off: likewise off the axis.
        ratio: mean on / mean off (the paper's 4.35x).
        ratio_ci: the ratio's stimulus-bootstrap interval (low, high): the estimate that leads.
        mean_difference: mean on - mean off.
        difference_ci: its stimulus-bootstrap interval.
        difference_p: the two-sided stimulus-bootstrap p of a difference of 0.
        n_resamples: the stimulus resamples the intervals rest on.
        wilcoxon_statistic: the Wilcoxon signed-rank statistic of the paired core alphas (the paper's test, over
            layers that share the stimuli).
        wilcoxon_p: its p.
        n_pairs: the layers paired.
        wilcoxon_reachable: whether that many pairs can give p below the level at all.
    """

    layers: list[int]
    alpha_on: list[float]
    alpha_off: list[float]
    mean_alpha_on: float
    mean_alpha_off: float
    ratio: float
    ratio_ci: tuple[float, float] = field(metadata=NO_INTERVAL)
    mean_difference: float = field(metadata=stored_as(
        missing=lambda document: document["mean_alpha_on"] - document["mean_alpha_off"]))
    difference_ci: tuple[float, float] = field(metadata=NO_INTERVAL)
    difference_p: float = field(metadata=NO_P)
    n_resamples: int = field(metadata=NO_RESAMPLES)
    wilcoxon_statistic: float
    wilcoxon_p: float
    n_pairs: int
    wilcoxon_reachable: bool = field(metadata=stored_as(
        missing=lambda document: can_reach("wilcoxon", document["n_pairs"])))


def axis_specificity(
    magnitudes: np.ndarray,
    on_axis: np.ndarray,
    off_axis: np.ndarray,
    core_layers: Sequence[int],
    *,
    resampled_on: np.ndarray | None = None,
    resampled_off: np.ndarray | None = None,
    ci: float = DEFAULT_CI,
) -> AxisSpecificity:
    """E4: alpha of on-axis and off-axis variance per core layer, their ratio and a Wilcoxon test.

    ``on_axis`` and ``off_axis`` have shape (n_layers, n_magnitudes) (see
    :func:`magdash.variability.measures.on_axis_variance`). Fits are plain OLS of log variance on log n
    (V > 0, >= 5 points, no outlier rule), as in the paper. Being variances, these alphas are
    twice those of the matching SDs. ``ratio`` = mean alpha_on / mean alpha_off over the core
    layers (the paper's 4.35x). The Wilcoxon signed-rank test pairs the two alphas over core
    layers where both exist (NaN with fewer than 2 pairs or no nonzero difference).
    ``resampled_on`` and ``resampled_off`` (B, K) hold the core layers' alphas in each stimulus resample
    (:mod:`magdash.variability.stimulus_bootstrap`), from which the difference and the ratio of the
    means get their intervals at level ``ci``; None: no intervals.
    """
    on_axis = np.asarray(on_axis, dtype=np.float64)
    off_axis = np.asarray(off_axis, dtype=np.float64)
    core = _check_core(core_layers, on_axis.shape[0])
    estimate = FitRules(n_boot=0)
    alpha_on = [fit_scaling(magnitudes, on_axis[layer], rules=estimate).alpha for layer in core]
    alpha_off = [fit_scaling(magnitudes, off_axis[layer], rules=estimate).alpha for layer in core]
    mean_on = _nanmean(alpha_on)
    mean_off = _nanmean(alpha_off)
    ratio = mean_on / mean_off if math.isfinite(mean_off) and mean_off != 0 else math.nan
    difference = ratio_samples = None
    if resampled_on is not None and resampled_off is not None:
        means_on = mean_over_layers(resampled_on, np.isfinite(alpha_on))
        means_off = mean_over_layers(resampled_off, np.isfinite(alpha_off))
        difference = means_on - means_off
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio_samples = np.where(means_off != 0, means_on / means_off, np.nan)
    differences = summarise(difference, mean_on - mean_off, ci)
    statistic, p_value, n_pairs = paired_wilcoxon(alpha_on, alpha_off)
    return AxisSpecificity(
        layers=core,
        alpha_on=alpha_on,
        alpha_off=alpha_off,
        mean_alpha_on=mean_on,
        mean_alpha_off=mean_off,
        ratio=ratio,
        ratio_ci=percentile_interval(ratio_samples, ci) if ratio_samples is not None else (math.nan, math.nan),
        mean_difference=mean_on - mean_off,
        difference_ci=differences.ci,
        difference_p=differences.p,
        n_resamples=differences.n_resamples,
        wilcoxon_statistic=statistic,
        wilcoxon_p=p_value,
        n_pairs=n_pairs,
        wilcoxon_reachable=can_reach("wilcoxon", n_pairs),
    )


def paired_wilcoxon(first: Sequence[float], second: Sequence[float]) -> tuple[float, float, int]:
    """Two-sided Wilcoxon signed-rank test over the pairs where both values are finite.

    Returns (statistic, p, n_pairs); statistic and p are NaN when fewer than 2 pairs remain or
    every difference is zero (the test is undefined).
    """
    from scipy import stats

    a = np.asarray(first, dtype=np.float64)
    b = np.asarray(second, dtype=np.float64)
    both = np.isfinite(a) & np.isfinite(b)
    n_pairs = int(np.count_nonzero(both))
    differences = a[both] - b[both]
    if n_pairs < 2 or not np.any(differences != 0):
        return math.nan, math.nan, n_pairs
    result = stats.wilcoxon(a[both], b[both])
    return float(result.statistic), float(result.pvalue), n_pairs
