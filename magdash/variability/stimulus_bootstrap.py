"""Inference at the unit of replication: the stimulus bootstrap of a model's mean core alpha.

The core layers of one model see the same sentences: the same magnitudes in the same carriers.
A magnitude that happens to sit high in V at one layer sits high at the next, so the alphas of
adjacent layers agree far more than independent measurements would, and a test that treats the
layers as replications (a t-test or a Wilcoxon signed-rank test over the core layers, the paper's
H1 and E6, Cacioli 2026, arXiv 2604.04469) counts one observation many times: with the layer
correlation of MiniLM its real size is about 0.41 (t-test, 16 layers) to 0.80 (Wilcoxon) for a
nominal 0.025-0.05 (the Design page's simulation, :mod:`magdash.controls.design`). What was
sampled, and what a replication would draw again, is the stimuli.

One resample b draws, with replacement and independently, C of the C carriers (counts
``w_b``, :func:`draw_stimuli`) and N of the N magnitudes (counts ``k_b``). At every core layer l
the measure is recomputed on the drawn carriers, V_b(n) (from the layer's
:class:`~magdash.variability.measures.CarrierMoments`, see :mod:`magdash.variability.measures`), the
layer's point rules are applied to it (V > 0, the 3x-median outlier rule over the magnitudes for
the measures that use it, at least 5 points), and alpha is refitted by OLS of log V_b on log n
with the magnitudes weighted by their counts ``k_b`` (:func:`resampled_alphas`):

    alpha_{l,b} = sum_n k_bn (x_n - xbar_b)(y_{l,bn} - ybar_{l,b}) / sum_n k_bn (x_n - xbar_b)^2,
    x = log n, y_l = log V_{l,b}, bars weighted by k_b.

Every layer of a resample uses the same draw, so the spread of the mean core alpha
``(1/K) sum_l alpha_{l,b}`` over the resamples carries the correlation between layers
(:func:`mean_over_layers`). Drawing both factors of a crossed design is the pigeonhole bootstrap
(Owen 2007, Ann. Appl. Stat. 1:2), which errs on the wide side; with 5 carriers the carrier draw
is a coarse one, which the interval's width shows. The magnitude axis u and the sentence offsets
s[c] stay the layer's own in every draw (the interval is conditional on them).

The estimate leads with its percentile interval (``ci`` level, :func:`summarise`), and a
two-sided bootstrap p of "0" (:func:`bootstrap_p`): twice the share of resamples on the other
side of 0 from the estimate, ``2 (1 + #) / (B + 1)``, at least ``2 / (B + 1)``
(:func:`magdash.significance.smallest_p` with ``"bootstrap"``). Two models on the same stimuli use
the same draws, so the difference of their mean core alphas, resample by resample, is a paired
statistic (:mod:`magdash.variability.compare`). A resample in which some fitted core layer has no
fit (one distinct carrier drawn: V = 0; too few points) is left out; ``n_resamples`` counts the
others.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from magdash.errors import AnalysisError
from magdash.variability.analysis_params import FitRules
from magdash.variability.fits import MIN_POINTS, index_counts, outlier_mask, percentile_interval, weighted_row_slopes
from magdash.variability.measures import MIN_CARRIERS, CarrierMoments, get_measure

# Resamples per chunk are chosen so that a chunk's (resamples, magnitudes, carriers) arrays hold
# about this many numbers (bounded memory for 1000 magnitudes x 20 carriers).
_CHUNK_ELEMENTS = 2_000_000


@dataclass(frozen=True)
class StimulusDraws:
    """The resamples of the stimuli: how many times each carrier and each magnitude was drawn.

    Attributes:
        carriers: (B, C) counts, each row summing to C.
        magnitudes: (B, N) counts, each row summing to N.
    """

    carriers: np.ndarray
    magnitudes: np.ndarray

    @property
    def n_boot(self) -> int:
        return int(self.magnitudes.shape[0])

    @cached_property
    def distinct_carriers(self) -> tuple[np.ndarray, np.ndarray]:
        """(the distinct rows of ``carriers``, the row of each resample among them): 5 carriers
        have 126 distinct draws, so V is computed 126 times, not B times."""
        distinct, which = np.unique(self.carriers, axis=0, return_inverse=True)
        return distinct, which.reshape(-1)


def _counts(generator: np.random.Generator, n_boot: int, n: int) -> np.ndarray:
    return index_counts(generator.integers(0, n, size=(n_boot, n)), n).astype(np.int32)


def draw_stimuli(n_magnitudes: int, n_carriers: int, n_boot: int, seed: int) -> StimulusDraws:
    """``n_boot`` draws of the magnitudes and the carriers, each with replacement.

    The magnitudes and the carriers come from two streams of ``numpy.random.default_rng`` seeded by
    (seed, 0) and (seed, 1): the magnitude draws depend on (N, B, seed) alone, so two stimulus sets
    of the same magnitudes (a number-format variant) get the same magnitude draws whatever their
    carriers.

    Args:
        n_magnitudes: N, the magnitudes of the stimulus set.
        n_carriers: C, its carriers (those analysed).
        n_boot: B, the resamples.
        seed: the bootstrap seed.
    """
    if n_boot < 1:
        raise AnalysisError(f"the stimulus bootstrap needs at least one resample, got n_boot={n_boot}")
    if n_magnitudes < 1 or n_carriers < MIN_CARRIERS:
        raise AnalysisError(f"the stimulus bootstrap needs magnitudes and at least {MIN_CARRIERS} carriers, got "
                            f"{n_magnitudes} and {n_carriers}")
    magnitudes = _counts(np.random.default_rng([seed, 0]), n_boot, n_magnitudes)
    carriers = _counts(np.random.default_rng([seed, 1]), n_boot, n_carriers)
    return StimulusDraws(carriers=carriers, magnitudes=magnitudes)


def resampled_alphas(
    magnitudes: np.ndarray,
    moments: CarrierMoments,
    measure: str,
    draws: StimulusDraws,
    *,
    rules: FitRules,
) -> np.ndarray:
    """Alpha of one layer and measure in every resample of the stimuli, (B,); NaN where a resample
    has no fit (module docstring).

    Args:
        magnitudes: the N magnitudes.
        moments: the layer's carrier moments (:meth:`magdash.variability.measures.LayerVectors.moments`).
        measure: a measure's name (:data:`magdash.variability.measures.MEASURES`).
        draws: the resamples (:func:`draw_stimuli`), of these N magnitudes and C carriers.
        rules: the fit's point rules (whether the outlier rule applies, its factor); each resample's
            alpha is the OLS slope, so the bootstrap fields are not used.
    """
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    n, c = moments.projections.shape
    if draws.magnitudes.shape[1] != n or draws.carriers.shape[1] != c or magnitudes.size != n:
        raise AnalysisError(
            f"draws of {draws.magnitudes.shape[1]} magnitudes x {draws.carriers.shape[1]} carriers for a layer of "
            f"{magnitudes.size} magnitudes x {c} carriers")
    chosen = get_measure(measure)
    positive = np.isfinite(magnitudes) & (magnitudes > 0)
    log_n = np.log(np.where(positive, magnitudes, 1.0))
    distinct, which = draws.distinct_carriers
    # V, the fit's points and log V depend on the carriers drawn alone: once per distinct draw.
    usable = np.empty((distinct.shape[0], n), dtype=bool)
    log_v = np.empty((distinct.shape[0], n))
    step = max(1, _CHUNK_ELEMENTS // max(1, n * c))
    for start in range(0, distinct.shape[0], step):
        rows = slice(start, min(start + step, distinct.shape[0]))
        values = chosen.on_drawn_carriers(moments, distinct[rows])
        usable[rows] = _fit_points(values, positive, rules)
        log_v[rows] = np.log(np.where(usable[rows], values, 1.0))
    enough = np.count_nonzero(usable, axis=1) >= MIN_POINTS
    out = np.empty(draws.n_boot)
    step = max(1, _CHUNK_ELEMENTS // max(1, n))
    for start in range(0, draws.n_boot, step):
        rows = slice(start, min(start + step, draws.n_boot))
        drawn = which[rows]
        slopes = weighted_row_slopes(log_n, log_v[drawn], draws.magnitudes[rows] * usable[drawn])
        slopes[~enough[drawn]] = np.nan
        out[rows] = slopes
    return out


def _fit_points(values: np.ndarray, positive: np.ndarray, rules: FitRules) -> np.ndarray:
    """Per row of V, the points a scaling fit keeps (:func:`magdash.variability.fits.scaling_mask`)."""
    with np.errstate(invalid="ignore"):
        usable = np.isfinite(values) & (values > 0) & positive[np.newaxis]
    return usable & outlier_mask(values, rules.outlier_factor) if rules.drop_outliers else usable


def layer_resamples(
    magnitudes: np.ndarray,
    moments: CarrierMoments,
    measures: Sequence[str],
    draws: StimulusDraws,
    *,
    outlier_rule: Collection[str],
    rules: FitRules,
) -> dict[str, np.ndarray]:
    """:func:`resampled_alphas` of one layer for each of ``measures``.

    Args:
        magnitudes: the N magnitudes.
        moments: the layer's carrier moments.
        measures: the measures' names.
        draws: the resamples.
        outlier_rule: the measures whose fits apply the 3x-median outlier rule.
        rules: the fits' point rules (the outlier factor; ``outlier_rule`` says where the rule applies).
    """
    return {
        measure: resampled_alphas(magnitudes, moments, measure, draws,
                                  rules=rules.with_outlier_rule(measure in outlier_rule))
        for measure in measures
    }


def mean_over_layers(alphas: np.ndarray, fitted: np.ndarray) -> np.ndarray:
    """The mean over the ``fitted`` layers of each resample's alphas, (B,); NaN for a resample in
    which one of them has no fit.

    Args:
        alphas: (B, K) resampled alphas of K layers.
        fitted: (K,) the layers whose own fit exists (those the estimate averages).
    """
    alphas = np.asarray(alphas, dtype=np.float64)
    fitted = np.asarray(fitted, dtype=bool)
    if not fitted.any():
        return np.full(alphas.shape[0], math.nan)
    return alphas[:, fitted].mean(axis=1)


def bootstrap_p(samples: np.ndarray, estimate: float) -> float:
    """Two-sided bootstrap p of "the statistic is 0": ``2 (1 + #) / (B + 1)``, # the finite
    resamples on the other side of 0 from ``estimate`` (0 counted as the other side), B the finite
    resamples; capped at 1. NaN without resamples or estimate; 1 for an estimate of exactly 0.

    Args:
        samples: the resampled statistic.
        estimate: the statistic on the data.
    """
    samples = np.asarray(samples, dtype=np.float64)
    samples = samples[np.isfinite(samples)]
    if samples.size == 0 or not math.isfinite(estimate):
        return math.nan
    if estimate == 0:
        return 1.0
    other = np.count_nonzero(samples <= 0) if estimate > 0 else np.count_nonzero(samples >= 0)
    return float(min(1.0, 2.0 * (1 + int(other)) / (samples.size + 1)))


@dataclass(frozen=True)
class BootstrapSummary:
    """A statistic with its stimulus-bootstrap interval and p.

    Attributes:
        estimate: the statistic on the data.
        ci: the percentile interval (low, high); NaN without resamples.
        p: the two-sided bootstrap p of 0 (:func:`bootstrap_p`).
        n_resamples: the resamples with a value.
    """

    estimate: float
    ci: tuple[float, float]
    p: float
    n_resamples: int


def summarise(samples: np.ndarray | None, estimate: float, ci: float) -> BootstrapSummary:
    """``estimate`` with the percentile interval at level ``ci`` and the bootstrap p of its resamples.

    Args:
        samples: the resampled statistic (NaN: no value), or None without a bootstrap.
        estimate: the statistic on the data.
        ci: the interval's level.
    """
    if samples is None:
        return BootstrapSummary(float(estimate), (math.nan, math.nan), math.nan, 0)
    samples = np.asarray(samples, dtype=np.float64)
    return BootstrapSummary(
        estimate=float(estimate),
        ci=percentile_interval(samples, ci),
        p=bootstrap_p(samples, estimate),
        n_resamples=int(np.count_nonzero(np.isfinite(samples))),
    )
