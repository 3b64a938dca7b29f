"""Scaling fits of variability against magnitude (Cacioli, arXiv 2604.04469).

The scaling law is ``V(n) = k n^alpha``, fitted as the straight line
``log V = log k + alpha log n`` by ordinary least squares. Scalar variability (Weber's law)
is alpha = 1; the paper finds alpha slightly below 0 ("anti-scalar").

Points entering a fit (:func:`scaling_mask`): a magnitude needs a finite V; with
``drop_outliers`` (the paper uses it for V_eucl and V_residual, not V_proj), V(n) above
3 x the layer's median V is dropped (the median over all of the layer's finite V, as in the
paper's script; skipped when that median is not positive); V <= 0 is dropped (log V undefined,
e.g. a context-free embedding layer); n <= 0 is dropped (log n undefined). Fewer than 5 points
left gives no fit: every number is NaN and ``n_points`` says how many there were.

Bootstrap (percentile CI, default 10,000 resamples, fixed seed): resample the (log n, log V)
pairs with replacement. Each resample is a row of counts ``w`` (how often each point was
drawn), and its OLS slope has the closed form

    S_w = sum w,  sxx = sum w x^2 - (sum w x)^2 / S_w,  sxy = sum w x y - (sum w x)(sum w y) / S_w,
    alpha* = sxy / sxx,

so all resamples come from the products ``W @ [1, x, y, x^2, xy]`` instead of a Python loop.
A resample that drew a single distinct log n has no slope (NaN) and is left out of the
percentiles (``nanpercentile``).

The interval (``ci_method``, :data:`~magdash.variability.analysis_params.CI_METHODS`) from the same resamples:

- ``"percentile"`` (the paper's): the 2.5 and 97.5 percentiles of alpha*. On 26 magnitudes it
  covers a planted alpha only about 92-93% of the time (it ignores that a resample of n points
  has fewer distinct points than the sample: its slopes vary too little);
- ``"studentized"`` (bootstrap-t, magdash's default; Efron & Tibshirani 1993, ch. 12): each
  resample also gives the OLS standard error se* of its slope, from the weighted residual sum of
  squares ``syy - alpha* sxy`` over ``S_w - 2`` degrees of freedom, and
  ``t* = (alpha* - alpha) / se*``; the interval is
  ``[alpha - q_{1-a/2}(t*) se, alpha - q_{a/2}(t*) se]`` with the sample's se. Resamples with
  fewer than 3 distinct log n (no residual) are left out;
- ``"bca"`` (bias-corrected and accelerated; Efron 1987): the percentiles shifted by the bias
  correction ``z0 = Phi^-1(share of alpha* < alpha)`` and the acceleration
  ``a = sum (m - alpha_(i))^3 / (6 (sum (m - alpha_(i))^2)^(3/2))`` from the leave-one-out
  slopes alpha_(i) and their mean m;
- ``"t"``: no resampling, ``alpha +- t_{m-2, 1-a/2} se`` (exact for Gaussian residuals).

Measured coverage of a planted alpha over 1,000 simulated studies is in ``docs/science.md``.

Which indices are drawn is the bootstrap *stream*: ``"generator"`` (magdash's convention) draws
them from ``numpy.random.default_rng(seed)``; ``"legacy"`` (the paper's) from a fresh
``numpy.random.RandomState(seed)`` per fitted series, resample after resample, each
``randint(0, n, n)``: the same indices as the paper's loop, so the same CI.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.variability.analysis_params import (
    BOOTSTRAP_STREAMS,
    LEGACY_SEED_LIMIT,
    OUTLIER_FACTOR,
    FitRules,
)

MIN_POINTS = 5

# Resample rows per chunk are chosen so a chunk holds about this many counts (bounded memory).
_BOOT_CHUNK_ELEMENTS = 1_000_000


@dataclass(frozen=True)
class ScalingFit:
    """One fit of log V on log n. All floats are NaN when there is no fit (``n_points`` < 5)."""

    alpha: float
    intercept: float
    r2: float
    p: float
    se: float
    alpha_theil_sen: float
    ci_low: float
    ci_high: float
    n_points: int
    n_outliers: int = 0

    @classmethod
    def missing(cls, n_points: int, n_outliers: int = 0) -> ScalingFit:
        nan = math.nan
        return cls(nan, nan, nan, nan, nan, nan, nan, nan, int(n_points), int(n_outliers))

    @property
    def has_fit(self) -> bool:
        return math.isfinite(self.alpha)


@dataclass(frozen=True)
class LineFit:
    """Ordinary least squares y = intercept + slope x, with the statistics of ``linregress``."""

    slope: float
    intercept: float
    r2: float
    p: float
    se: float


def outlier_mask(values: np.ndarray, factor: float = OUTLIER_FACTOR) -> np.ndarray:
    """True where V(n) <= factor x the median of the finite V (the paper's 3x-median rule), along the
    last axis: each row of a 2-D array (the resamples of the stimulus bootstrap) has its own median.

    When the median is not positive (e.g. mostly zero V), or there is no finite V, no point is
    called an outlier.
    """
    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a row without finite V: no median, no rule
        median = np.nanmedian(np.where(finite, values, np.nan), axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        return ~finite | (values <= factor * median) | ~(median > 0)


def scaling_mask(magnitudes: np.ndarray, values: np.ndarray, *, rules: FitRules) -> tuple[np.ndarray, int]:
    """Points usable in a log-log fit, and how many were dropped by the outlier rule alone.

    Args:
        magnitudes: n of each point (1-D).
        values: V(n), aligned with ``magnitudes``.
        rules: the fit's rules (their ``drop_outliers`` and ``outlier_factor`` decide the points).
    """
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if magnitudes.shape != values.shape or values.ndim != 1:
        raise AnalysisError(
            f"magnitudes {magnitudes.shape} and values {values.shape} must be 1-D of equal length"
        )
    usable = np.isfinite(values) & np.isfinite(magnitudes) & (magnitudes > 0) & (values > 0)
    if not rules.drop_outliers:
        return usable, 0
    not_outlier = outlier_mask(values, rules.outlier_factor)
    return usable & not_outlier, int(np.count_nonzero(usable & ~not_outlier))


def _centred_sums(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float] | None:
    """(Sxx, Syy, Sxy) about the means; None where no line can be fitted (n < 3 or constant x)."""
    if x.size < 3:
        return None
    xc = x - x.mean()
    yc = y - y.mean()
    sxx = float(xc @ xc)
    if sxx == 0:
        return None
    return sxx, float(yc @ yc), float(xc @ yc)


def scaling_alpha(magnitudes: np.ndarray, values: np.ndarray, *, rules: FitRules) -> float:
    """The OLS alpha of :func:`fit_scaling` alone, by the same point rules (NaN where it has no
    fit), for checks that refit many times and need no p, R^2, Theil–Sen slope or interval
    (``rules``' bootstrap is not used)."""
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    keep, _ = scaling_mask(magnitudes, values, rules=rules)
    if np.count_nonzero(keep) < MIN_POINTS:
        return math.nan
    sums = _centred_sums(np.log(magnitudes[keep]), np.log(values[keep]))
    return math.nan if sums is None else sums[2] / sums[0]


def ols(x: np.ndarray, y: np.ndarray) -> LineFit:
    """OLS line with R^2, two-sided p of the slope (t with n-2 df) and the slope's SE.

    Agrees with ``scipy.stats.linregress``; a constant y gives slope 0, R^2 0, p 1.
    """
    from scipy import stats

    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = x.size
    sums = _centred_sums(x, y)
    if sums is None:
        nan = math.nan
        return LineFit(nan, nan, nan, nan, nan)
    sxx, syy, sxy = sums
    slope = sxy / sxx
    intercept = float(y.mean() - slope * x.mean())
    df = n - 2
    if syy == 0:
        return LineFit(slope, intercept, 0.0, 1.0, 0.0)
    r2 = min(1.0, sxy * sxy / (sxx * syy))
    se = math.sqrt(max(0.0, (1.0 - r2) * syy / sxx / df))
    p = 0.0 if se == 0 else float(2.0 * stats.t.sf(abs(slope / se), df))
    return LineFit(slope, intercept, r2, p, se)


def theil_sen(x: np.ndarray, y: np.ndarray) -> float:
    """Theil–Sen slope: the median of the slopes of all point pairs with different x."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    first, second = np.triu_indices(x.size, k=1)
    dx = x[second] - x[first]
    distinct = dx != 0
    if not distinct.any():
        return math.nan
    return float(np.median((y[second] - y[first])[distinct] / dx[distinct]))


def _index_draws(seed: int, stream: str):
    """``draw(rows, n)``: the next ``rows`` resamples of n indices from the chosen stream."""
    if stream == "generator":
        generator = np.random.default_rng(seed)
        return lambda rows, n: generator.integers(0, n, size=(rows, n))
    if stream == "legacy":
        if not 0 <= seed < LEGACY_SEED_LIMIT:
            raise AnalysisError(f"the paper's bootstrap takes seeds from 0 to {LEGACY_SEED_LIMIT - 1}, got {seed}")
        # Drawing (rows, n) at once consumes the stream exactly as rows calls of randint(0, n, n).
        legacy = np.random.RandomState(seed)
        return lambda rows, n: legacy.randint(0, n, size=(rows, n))
    raise AnalysisError(f"unknown bootstrap stream {stream!r}; choose from {', '.join(BOOTSTRAP_STREAMS)}")


def resample_counts(n_points: int, n_boot: int, seed: int, *, stream: str = "generator") -> Iterator[np.ndarray]:
    """Bootstrap resamples as count matrices, in chunks of rows of shape (b, n_points).

    Row r holds how many times each point was drawn in resample r (n_points draws with
    replacement, uniform). The indices come from ``stream`` (module docstring) drawn chunk by
    chunk, so the same (n_points, n_boot, seed, stream) always gives the same resamples.
    """
    draw = _index_draws(seed, stream)
    step = max(1, min(n_boot, _BOOT_CHUNK_ELEMENTS // max(1, n_points)))
    done = 0
    while done < n_boot:
        rows = min(step, n_boot - done)
        yield index_counts(draw(rows, n_points), n_points).astype(np.float64)
        done += rows


def index_counts(indices: np.ndarray, n_points: int) -> np.ndarray:
    """(b, n_points): how many times each point is drawn in each row of ``indices`` (b, k) of draws
    from 0..n_points-1.

    Args:
        indices: the drawn indices, one resample a row.
        n_points: how many points there are to draw from.
    """
    rows = indices.shape[0]
    offsets = indices + (np.arange(rows) * n_points)[:, np.newaxis]
    return np.bincount(offsets.ravel(), minlength=rows * n_points).reshape(rows, n_points)


def weighted_slopes(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """OLS slope of y on x for each row of non-negative ``weights`` (b, n); NaN if degenerate.

    A row is degenerate when its positive weights cover fewer than two distinct x values.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    # Centring on the full-sample means keeps the moment differences free of cancellation.
    xc = x - x.mean()
    yc = y - y.mean()
    # einsum's own loops, not BLAS: a threaded BLAS call on these thin products costs more in
    # thread wake-ups than in arithmetic, and far more when other processes share the cores.
    total, sum_x, sum_y, sum_xx, sum_xy = (
        np.einsum("bn,n->b", weights, column)
        for column in (np.ones_like(xc), xc, yc, xc * xc, xc * yc)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        sxx = sum_xx - sum_x * sum_x / total
        sxy = sum_xy - sum_x * sum_y / total
        slopes = sxy / sxx
    slopes[_distinct_drawn(x, weights) < 2] = np.nan
    return slopes


def weighted_row_slopes(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """OLS slope of row r of ``y`` (b, n) on x with row r of ``weights`` (b, n); NaN if degenerate.

    :func:`weighted_slopes` with a y of its own in every row (a resample that also redrew what y
    is computed from), from ``(S sxy - sx sy) / (S sxx - sx^2)`` over the weighted sums. Entries of y
    under a zero weight are ignored, whatever they hold. x is centred; y is not, so it should be of
    moderate size (a logarithm), as its cancellation error grows with its mean over its spread.
    """
    x = np.asarray(x, dtype=np.float64)
    weights = np.asarray(weights, dtype=np.float64)
    weighted_y = weights * np.where(weights > 0, np.asarray(y, dtype=np.float64), 0.0)
    xc = x - x.mean()
    total = weights.sum(axis=1)
    sum_x = np.einsum("bn,n->b", weights, xc)
    sum_xx = np.einsum("bn,n->b", weights, xc * xc)
    sum_y = weighted_y.sum(axis=1)
    sum_xy = np.einsum("bn,n->b", weighted_y, xc)
    with np.errstate(divide="ignore", invalid="ignore"):
        slopes = (total * sum_xy - sum_x * sum_y) / (total * sum_xx - sum_x * sum_x)
    slopes[_distinct_drawn(x, weights) < 2] = np.nan
    return slopes


def weighted_slopes_and_se(x: np.ndarray, y: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """OLS slope and its standard error for each row of counts ``weights`` (b, n).

    ``se = sqrt((syy - slope sxy) / (S_w - 2) / sxx)`` with the weighted sums of
    :func:`weighted_slopes`; NaN for rows with fewer than 3 distinct x drawn.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    xc = x - x.mean()
    yc = y - y.mean()
    total, sum_x, sum_y, sum_xx, sum_xy, sum_yy = (
        np.einsum("bn,n->b", weights, column)
        for column in (np.ones_like(xc), xc, yc, xc * xc, xc * yc, yc * yc)
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        sxx = sum_xx - sum_x * sum_x / total
        sxy = sum_xy - sum_x * sum_y / total
        syy = sum_yy - sum_y * sum_y / total
        slopes = sxy / sxx
        se = np.sqrt(np.maximum(syy - slopes * sxy, 0.0) / (total - 2) / sxx)
    degenerate = _distinct_drawn(x, weights) < 3
    slopes[degenerate] = np.nan
    se[degenerate] = np.nan
    return slopes, se


def _distinct_drawn(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """How many distinct x values carry positive weight in each row."""
    unique, group = np.unique(x, return_inverse=True)
    drawn = weights > 0
    if unique.size == x.size:
        return np.count_nonzero(drawn, axis=1)
    membership = np.zeros((x.size, unique.size))
    membership[np.arange(x.size), group] = 1.0
    return np.count_nonzero(drawn.astype(np.float64) @ membership, axis=1)


def bootstrap_slopes(
    x: np.ndarray, y: np.ndarray, *, n_boot: int, seed: int, stream: str = "generator"
) -> np.ndarray:
    """``n_boot`` bootstrap OLS slopes of y on x (resampling the (x, y) pairs); NaN if degenerate."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    return np.concatenate(
        [weighted_slopes(x, y, counts) for counts in resample_counts(x.size, n_boot, seed, stream=stream)]
    )


def percentile_interval(samples: np.ndarray, ci: float) -> tuple[float, float]:
    """Percentile interval of the finite ``samples`` at coverage ``ci`` (NaN if none)."""
    if not 0 < ci < 1:
        raise AnalysisError(f"the confidence level must lie between 0 and 1, got {ci}")
    samples = np.asarray(samples, dtype=np.float64)
    if not np.isfinite(samples).any():
        return math.nan, math.nan
    tail = 100.0 * (1.0 - ci) / 2.0
    low, high = np.nanpercentile(samples, [tail, 100.0 - tail])
    return float(low), float(high)


def studentized_interval(x: np.ndarray, y: np.ndarray, line: LineFit, rules: FitRules) -> tuple[float, float]:
    """The bootstrap-t interval of the slope of ``line`` (module docstring), from ``rules``' resamples at their level."""
    ci = rules.ci
    t_stats = []
    for counts in resample_counts(x.size, rules.n_boot, rules.seed, stream=rules.stream):
        slopes, se = weighted_slopes_and_se(x, y, counts)
        with np.errstate(divide="ignore", invalid="ignore"):
            t_stats.append((slopes - line.slope) / se)
    t_stats = np.concatenate(t_stats)
    t_stats = t_stats[~np.isnan(t_stats)]
    if t_stats.size == 0 or not line.se > 0:
        return line.slope, line.slope
    tail = 100.0 * (1.0 - ci) / 2.0
    low_q, high_q = np.percentile(t_stats, [tail, 100.0 - tail])
    return float(line.slope - high_q * line.se), float(line.slope - low_q * line.se)


def bca_interval(x: np.ndarray, y: np.ndarray, slope: float, rules: FitRules) -> tuple[float, float]:
    """The bias-corrected and accelerated percentile interval (module docstring), from ``rules``' resamples
    at their level."""
    from scipy import stats

    ci = rules.ci
    slopes = bootstrap_slopes(x, y, n_boot=rules.n_boot, seed=rules.seed, stream=rules.stream)
    slopes = slopes[np.isfinite(slopes)]
    if slopes.size == 0:
        return math.nan, math.nan
    share = (np.count_nonzero(slopes < slope) + 0.5 * np.count_nonzero(slopes == slope)) / slopes.size
    z0 = stats.norm.ppf(min(max(share, 0.5 / slopes.size), 1.0 - 0.5 / slopes.size))
    keep = ~np.eye(x.size, dtype=bool)
    jackknife = weighted_slopes(x, y, keep.astype(np.float64))
    deviation = np.nanmean(jackknife) - jackknife
    spread = float(np.nansum(deviation**2))
    acceleration = float(np.nansum(deviation**3)) / (6.0 * spread**1.5) if spread > 0 else 0.0
    z = stats.norm.ppf([(1.0 - ci) / 2.0, (1.0 + ci) / 2.0])
    adjusted = stats.norm.cdf(z0 + (z0 + z) / (1.0 - acceleration * (z0 + z)))
    low, high = np.percentile(slopes, 100.0 * adjusted)
    return float(low), float(high)


def fit_scaling(magnitudes: np.ndarray, values: np.ndarray, *, rules: FitRules) -> ScalingFit:
    """Fit log V = log k + alpha log n: OLS, Theil–Sen and a confidence interval.

    ``rules.n_boot`` 0 skips the interval (CI NaN), whatever the method. See the module docstring
    and :class:`~magdash.variability.analysis_params.FitRules` for the point rules, the bootstrap
    ``stream`` and the ``ci_method``.

    Args:
        magnitudes: n of each point (1-D).
        values: V(n), aligned with ``magnitudes``.
        rules: which points enter the fit and how its interval is formed.
    """
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    keep, n_outliers = scaling_mask(magnitudes, values, rules=rules)
    n_points = int(np.count_nonzero(keep))
    if n_points < MIN_POINTS:
        return ScalingFit.missing(n_points, n_outliers)
    log_n = np.log(magnitudes[keep])
    log_v = np.log(values[keep])
    line = ols(log_n, log_v)
    if not math.isfinite(line.slope):
        return ScalingFit.missing(n_points, n_outliers)
    ci_low = ci_high = math.nan
    if rules.n_boot > 0:
        ci_low, ci_high = _interval(log_n, log_v, line, rules)
    return ScalingFit(
        alpha=line.slope,
        intercept=line.intercept,
        r2=line.r2,
        p=line.p,
        se=line.se,
        alpha_theil_sen=theil_sen(log_n, log_v),
        ci_low=ci_low,
        ci_high=ci_high,
        n_points=n_points,
        n_outliers=n_outliers,
    )


def _interval(x: np.ndarray, y: np.ndarray, line: LineFit, rules: FitRules) -> tuple[float, float]:
    from scipy import stats

    ci, method = rules.ci, rules.ci_method
    if not 0 < ci < 1:
        raise AnalysisError(f"the confidence level must lie between 0 and 1, got {ci}")
    if method == "t":
        half = float(stats.t.ppf((1.0 + ci) / 2.0, x.size - 2)) * line.se
        return line.slope - half, line.slope + half
    if method == "studentized":
        return studentized_interval(x, y, line, rules)
    if method == "bca":
        return bca_interval(x, y, line.slope, rules)
    return percentile_interval(bootstrap_slopes(x, y, n_boot=rules.n_boot, seed=rules.seed, stream=rules.stream), ci)


NOISE_MODELS = ("constant", "scalar", "log_scalar", "power_law")

_FORMULAS = {
    "constant": "V = c",
    "scalar": "V = k n",
    "log_scalar": "V = k log n + c",
    "power_law": "V = k n^alpha",
}

NOISE_SCORINGS = ("gaussian", "paper")
# Parameters counted by each scoring: "gaussian" counts the mean parameters plus the residual
# variance; the paper's script counts the mean parameters only, and the power law as two.
_N_PARAMS = {
    "gaussian": {"constant": 2, "scalar": 2, "log_scalar": 3, "power_law": 3},
    "paper": {"constant": 1, "scalar": 1, "log_scalar": 2, "power_law": 2},
}

NOISE_MODEL_COLUMNS = [
    "model", "formula", "k", "c", "alpha", "n_params", "n_points", "rss", "aicc",
    "delta_aicc", "weight",
]


def aicc_gaussian(rss: float, n_points: int, n_params: int) -> float:
    """AICc of a least-squares fit with Gaussian residuals of unknown variance.

    ``log L = -n/2 (log(2 pi RSS / n) + 1)`` at the MLE sigma^2 = RSS/n;
    ``AICc = -2 log L + 2k + 2k(k+1)/(n-k-1)``, with k counting sigma. NaN when n <= k + 1.
    An exact fit (RSS = 0) is scored with the smallest positive RSS so it stays comparable.
    """
    if n_points - n_params - 1 <= 0 or not math.isfinite(rss):
        return math.nan
    rss = max(rss, np.finfo(np.float64).tiny)
    log_likelihood = -0.5 * n_points * (math.log(2.0 * math.pi * rss / n_points) + 1.0)
    penalty = 2.0 * n_params + 2.0 * n_params * (n_params + 1) / (n_points - n_params - 1)
    return -2.0 * log_likelihood + penalty


def aicc_paper(rss: float, n_points: int, n_params: int) -> float:
    """AICc as the paper's script scores it: ``n log(RSS/n + 1e-30) + 2k + 2k(k+1)/max(n-k-1, 1)``.

    The constant terms of the Gaussian likelihood are left out (they cancel between models of
    the same points) and k does not count the residual variance.
    """
    if not math.isfinite(rss):
        return math.nan
    penalty = 2.0 * n_params + 2.0 * n_params * (n_params + 1) / max(n_points - n_params - 1, 1)
    return n_points * math.log(rss / n_points + 1e-30) + penalty


_AICC = {"gaussian": aicc_gaussian, "paper": aicc_paper}


def compare_noise_models(
    magnitudes: np.ndarray,
    values: np.ndarray,
    *,
    mask: np.ndarray | None = None,
    scoring: str = "gaussian",
) -> pd.DataFrame:
    """Descriptive AICc comparison of four noise models of V against n (one row per model).

    - constant    V = c
    - scalar      V = k n                 (least squares through the origin)
    - log_scalar  V = k log n + c         (OLS)
    - power_law   V = k n^alpha           (OLS of log V on log n, as the paper fits it)

    To make the likelihoods comparable, all four are scored on the same data, V on its own
    scale, with i.i.d. Gaussian residuals: RSS is always sum (V - V_hat)^2; the power law's
    prediction is back-transformed, ``V_hat = exp(intercept) n^alpha``. The power law is
    therefore not the V-scale least-squares fit, which makes its AICc slightly pessimistic;
    this follows the paper's script. ``weight`` is the Akaike weight, ``delta_aicc`` the
    distance to the best model. Points: ``mask`` (default all), V > 0 and n > 0; fewer than 5
    gives NaN scores. Columns: :data:`NOISE_MODEL_COLUMNS`.

    ``scoring="gaussian"`` (magdash): :func:`aicc_gaussian`, parameter counts including the
    residual variance (constant 2, scalar 2, log_scalar 3, power_law 3), scalar k by least
    squares through the origin. ``scoring="paper"``: :func:`aicc_paper`, counts 1, 1, 2, 2,
    and the scalar k as the paper's script fits it, mean(V / n). With an outlier the two can
    pick different best models.
    """
    rows = noise_model_rows(magnitudes, values, mask=mask, scoring=scoring)
    return pd.DataFrame(rows, columns=NOISE_MODEL_COLUMNS)


def noise_model_rows(
    magnitudes: np.ndarray,
    values: np.ndarray,
    *,
    mask: np.ndarray | None = None,
    scoring: str = "gaussian",
) -> list[dict[str, Any]]:
    """The rows of :func:`compare_noise_models` as dicts (cheap to collect over many layers)."""
    if scoring not in NOISE_SCORINGS:
        raise AnalysisError(f"unknown noise-model scoring {scoring!r}; choose from {', '.join(NOISE_SCORINGS)}")
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(values) & (values > 0) & np.isfinite(magnitudes) & (magnitudes > 0)
    if mask is not None:
        keep &= np.asarray(mask, dtype=bool)
    n = int(np.count_nonzero(keep))
    nan = math.nan
    if n < MIN_POINTS:
        return _noise_rows({name: (nan, nan, nan, nan) for name in NOISE_MODELS}, n, scoring)
    mags = magnitudes[keep]
    v = values[keep]
    log_n = np.log(mags)
    constant = float(v.mean())
    k_scalar = float((v / mags).mean()) if scoring == "paper" else float(v @ mags / (mags @ mags))
    log_line = ols(log_n, v)
    power = ols(log_n, np.log(v))
    k_power = math.exp(power.intercept)
    fitted = {  # name: (k, c, alpha, rss)
        "constant": (nan, constant, nan, _rss(v, constant)),
        "scalar": (k_scalar, nan, nan, _rss(v, k_scalar * mags)),
        "log_scalar": (
            log_line.slope,
            log_line.intercept,
            nan,
            _rss(v, log_line.slope * log_n + log_line.intercept),
        ),
        "power_law": (k_power, nan, power.slope, _rss(v, k_power * mags**power.slope)),
    }
    return _noise_rows(fitted, n, scoring)


def _rss(observed: np.ndarray, predicted: np.ndarray | float) -> float:
    residuals = observed - predicted
    return float(residuals @ residuals)


def _noise_rows(
    fitted: dict[str, tuple[float, float, float, float]], n_points: int, scoring: str
) -> list[dict[str, Any]]:
    rows = []
    aicc = _AICC[scoring]
    for name in NOISE_MODELS:
        k, c, alpha, rss = fitted[name]
        n_params = _N_PARAMS[scoring][name]
        rows.append(
            {
                "model": name,
                "formula": _FORMULAS[name],
                "k": k,
                "c": c,
                "alpha": alpha,
                "n_params": n_params,
                "n_points": n_points,
                "rss": rss,
                "aicc": aicc(rss, n_points, n_params),
                "delta_aicc": math.nan,
                "weight": math.nan,
            }
        )
    scores = [row["aicc"] for row in rows if math.isfinite(row["aicc"])]
    if scores:
        best = min(scores)
        relative = {
            row["model"]: math.exp(-0.5 * (row["aicc"] - best))
            for row in rows
            if math.isfinite(row["aicc"])
        }
        total = sum(relative.values())
        for row in rows:
            if row["model"] in relative:
                row["delta_aicc"] = row["aicc"] - best
                row["weight"] = relative[row["model"]] / total
    return rows
