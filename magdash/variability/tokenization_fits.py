"""Alpha with the numbers' tokenization held apart from their magnitude.

A tokenizer that splits digits (SmolLM2, Gemma 3, Mistral in Cacioli 2026, arXiv 2604.04469)
keeps for 10, 20, ..., 1000 the token ``0``, and the number of tokens grows by one at 10, 100
and 1000: V at the kept token may step at each digit-count boundary (as reported for Llama,
arXiv 2603.28258), and a step that grows with n tilts the raw slope of log V on log n. Two
views separate them, on one layer's V(n) of one measure and the token count of each magnitude
(:func:`magdash.tokenization.per_magnitude`):

**Alpha within token-count strata** (:func:`strata_alphas`): the scaling fit
``log V = log k + alpha log n`` of :func:`magdash.variability.fits.fit_scaling` within each
stratum of magnitudes with the same token count, its rules unchanged (at least
:data:`~magdash.variability.fits.MIN_POINTS` points, else NaN with the reason).

**The adjusted alpha** (:func:`adjusted_alpha`): one OLS fit of all the points with the token
count as a categorical covariate (a level per count, a free step at each boundary),
optionally also the kept token's identity (a level per token id):

    log V(n) = c + alpha_adj log n + sum_{k != k0} gamma_k [tokens(n) = k]
               (+ sum_{t != t0} delta_t [kept(n) = t]) + e

k0 and t0 are the reference levels (the smallest token count and the smallest token id
present), so gamma_k is the step of stratum k over stratum k0 at equal n. Where a level is a
linear combination of the others (a kept token found in one stratum only, which its step
already absorbs) its column is left out, identity levels before token counts, and
``dropped_levels`` names it. By Frisch-Waugh-Lovell, with Z the intercept and level columns
and x~ = x - Z (Z'Z)^+ Z'x the part of x = log n that the levels do not explain (likewise y~
for y = log V):

    alpha_adj = x~'y~ / x~'x~,     RSS = y~'y~ - alpha_adj x~'y~,
    df = m - rank(Z) - 1,          se = sqrt(RSS / df / x~'x~),

p two-sided from t = alpha_adj / se with df degrees of freedom (the usual OLS standard error
of one coefficient, sigma^2 [(X'X)^-1]_alpha with X = [Z, x]). alpha_adj is the slope within
levels pooled over them: a level holding one magnitude fixes that point and informs nothing
about alpha (its parameter costs the degree of freedom its point brings); alpha is
unidentified when no level holds two magnitudes. A fit needs df >= 3, the raw fit's 5 points
for 2 parameters; at most :data:`MAX_PARAMETERS` columns (a kept token with hundreds of values,
e.g. WordPiece keeping most numbers whole, leaves nothing to estimate alpha from).

The points are those of the raw fit (:func:`~magdash.variability.fits.scaling_mask`): V <= 0
and non-finite V dropped, and for V_eucl and V_residual the 3 x median outlier rule over the
whole series, then split by stratum, so the strata, the adjusted and the raw fit see the same
points.

The interval follows :func:`~magdash.variability.fits.fit_scaling` exactly: the same
resamples (:func:`~magdash.variability.fits.resample_counts`: the stream and seed give the
same counts), each refitted by weighted least squares with the counts as weights (the
quadratic forms above with Z'WZ, solved by its pseudo-inverse, so a level not drawn simply
drops out; with the token count alone, the same sums about each level's weighted means), and
the same ``ci_method``: ``percentile``, ``studentized`` (se* from
df* = S_w - rank(Z'WZ) - 1; resamples with fewer distinct points than rank + 2 left out),
``bca`` (jackknife over the points) or ``t``. With one stratum and no identity the adjusted
fit *is* the raw fit, interval included.

:func:`tokenization_frames` runs both on every measure and layer of an analysis (with and
without the kept token's identity), as :func:`magdash.variability.analysis.run_analysis` does
when it is given the items' token facts.

Reading the outcomes: alpha_adj near the raw alpha, and strata alphas near it too, says the
exponent is not a tokenization artifact. alpha_adj far from the raw alpha, with steps gamma_k
growing with k, says the raw exponent carries the digit-count boundaries. Strata alphas that
differ in sign (as V_proj on SmolLM2 at block 20: 1-9 -0.06, 10-90 +0.12, 100-1000 -0.12)
say the within-stratum slopes disagree and no single alpha describes them; the adjusted alpha
is then their pooled average, to be read with the strata beside it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from magdash.errors import AnalysisError
from magdash.variability.analysis_params import FitRules
from magdash.variability.fits import (
    MIN_POINTS,
    ScalingFit,
    fit_scaling,
    percentile_interval,
    resample_counts,
    scaling_mask,
)

if TYPE_CHECKING:
    import pandas as pd

MIN_RESIDUAL_DF = MIN_POINTS - 2
"""Residual degrees of freedom an adjusted fit needs: the raw fit's 5 points for 2 parameters."""
MAX_PARAMETERS = 64
"""Columns of the adjusted fit's design at most (intercept, slope and one per extra level)."""
# A resample whose x~'x~ is below this share of its centred x'Wx has no slope left (rounding).
_IDENTIFIED = 1e-9
# An eigenvalue of Z'WZ below this share of the largest is zero (the columns are 0/1 indicators).
_EIGEN_TOLERANCE = 1e-10
# Bound on the floats of one block of resamples' Z'WZ products.
_BLOCK_FLOATS = 4_000_000


@dataclass(frozen=True)
class StratumFit:
    """The scaling fit within one stratum of magnitudes (one token count).

    ``stratum`` is the stratum's label (its token count), ``n_magnitudes`` how many magnitudes
    it holds before the point rules and ``smallest``/``largest`` their range; ``fit`` is the
    :class:`~magdash.variability.fits.ScalingFit` (``n_outliers`` the stratum's points the
    outlier rule dropped); ``reason`` says why there is no fit ("" when there is one).
    """

    stratum: Hashable
    n_magnitudes: int
    smallest: float
    largest: float
    fit: ScalingFit
    reason: str

    @property
    def has_fit(self) -> bool:
        return self.fit.has_fit


@dataclass(frozen=True)
class AdjustedFit:
    """The adjusted alpha (module docstring) and what it was estimated beside.

    ``intercept`` is c (log k at the reference levels); ``steps`` gamma_k by token count and
    ``identity_effects`` delta_t by kept token, each relative to its reference level
    (``reference``, ``identity_reference``); ``dropped_levels`` the levels left out as
    collinear; ``n_parameters`` the design's rank (slope included) and ``df`` the residual
    degrees of freedom. All floats are NaN when there is no fit, and ``reason`` says why.
    """

    alpha: float
    se: float
    p: float
    ci_low: float
    ci_high: float
    intercept: float
    r2: float
    reference: str
    steps: dict[str, float]
    identity_reference: str
    identity_effects: dict[str, float]
    dropped_levels: tuple[str, ...]
    n_points: int
    n_outliers: int
    n_parameters: int
    df: int
    reason: str

    @property
    def has_fit(self) -> bool:
        return math.isfinite(self.alpha)


def strata_alphas(
    magnitudes: np.ndarray,
    values: np.ndarray,
    strata: Sequence[Hashable],
    *,
    rules: FitRules,
) -> list[StratumFit]:
    """The scaling fit within each stratum, in increasing stratum order.

    Args:
        magnitudes: n of each point (1-D).
        values: V(n) of one layer and measure, aligned with ``magnitudes``.
        strata: each magnitude's stratum: its token count (or any label: digits, a format).
        rules: as in :func:`~magdash.variability.fits.fit_scaling`; the outlier rule (V_eucl,
            V_residual) applies over the whole series, before it is split.
    """
    magnitudes, values, labels = _series(magnitudes, values, strata, "strata")
    keep, _ = scaling_mask(magnitudes, values, rules=rules)
    within = rules.with_outlier_rule(False)
    dropped_by_rule = ~keep & scaling_mask(magnitudes, values, rules=within)[0]
    fits = []
    for level in _levels(labels):
        members = np.array([label == level for label in labels], dtype=bool)
        used = members & keep
        fit = fit_scaling(magnitudes[used], values[used], rules=within)
        fit = dataclasses.replace(fit, n_outliers=int(np.count_nonzero(members & dropped_by_rule)))
        reason = "" if fit.has_fit else _too_few(fit.n_points, int(np.count_nonzero(members)))
        fits.append(StratumFit(
            stratum=level,
            n_magnitudes=int(np.count_nonzero(members)),
            smallest=float(magnitudes[members].min()),
            largest=float(magnitudes[members].max()),
            fit=fit,
            reason=reason,
        ))
    return fits


def _too_few(n_points: int, n_magnitudes: int) -> str:
    if n_points < MIN_POINTS:
        kept = "" if n_points == n_magnitudes else f" of {n_magnitudes} (V <= 0, not finite, or an outlier)"
        return f"{n_points} point{'s' if n_points != 1 else ''}{kept}: a fit needs {MIN_POINTS}"
    return "its points share one magnitude: no slope"


def adjusted_alpha(
    magnitudes: np.ndarray,
    values: np.ndarray,
    strata: Sequence[Hashable],
    identities: Sequence[Hashable] | None = None,
    *,
    rules: FitRules,
) -> AdjustedFit:
    """alpha_adj of ``log V = c + alpha_adj log n + sum_k gamma_k [tokens(n) = k] (+ identity)``.

    Args:
        magnitudes: n of each point (1-D).
        values: V(n) of one layer and measure, aligned with ``magnitudes``.
        strata: each magnitude's token count (a categorical covariate: one step per level).
        identities: each magnitude's kept token id (a second categorical covariate), or None.
        rules: as in :func:`~magdash.variability.fits.fit_scaling` (the outlier rule as in the raw
            fit; ``n_boot`` 0 skips the interval, whatever the method, as there).

    The model, its estimates and the interval are in the module docstring.
    """
    from scipy import stats

    if not 0 < rules.ci < 1:
        raise AnalysisError(f"the confidence level must lie between 0 and 1, got {rules.ci}")
    magnitudes, values, labels = _series(magnitudes, values, strata, "strata")
    tokens = None if identities is None else _series(magnitudes, values, identities, "identities")[2]
    keep, n_outliers = scaling_mask(magnitudes, values, rules=rules)
    n_points = int(np.count_nonzero(keep))
    kept = np.flatnonzero(keep)
    labels = [labels[i] for i in kept]
    tokens = None if tokens is None else [tokens[i] for i in kept]
    reference = str(_levels(labels)[0]) if labels else ""
    identity_reference = str(_levels(tokens)[0]) if tokens else ""
    missing = _missing_adjusted(n_points, n_outliers, reference, identity_reference)
    if n_points < MIN_POINTS:
        return dataclasses.replace(missing, reason=_too_few(n_points, magnitudes.size))
    count_columns = _level_columns(labels, "tokens")
    identity_columns = [] if tokens is None else _level_columns(tokens, "kept")
    candidates = count_columns + identity_columns
    if len(candidates) + 2 > MAX_PARAMETERS:
        return dataclasses.replace(missing, reason=(
            f"{len(count_columns) + 1} token counts and {len(identity_columns) + 1} kept tokens make "
            f"{len(candidates) + 2} parameters (intercept, slope, one per level beyond the first): at most "
            f"{MAX_PARAMETERS}, too many levels to estimate alpha beside them"
        ))
    x = np.log(magnitudes[keep])
    y = np.log(values[keep])
    design, names, dropped = _independent_columns(candidates, n_points)
    ones = np.ones((1, n_points))
    alpha, se, _, rss, _ = (float(value[0]) for value in _weighted_fits(x, y, design, ones))
    rank = design.shape[1] + 1
    df = n_points - rank
    missing = dataclasses.replace(missing, dropped_levels=dropped, n_parameters=rank, df=df)
    if not math.isfinite(alpha):
        return dataclasses.replace(missing, reason=(
            "log n is constant within every level of the covariates (no level holds two magnitudes): no slope"
        ))
    if df < MIN_RESIDUAL_DF:
        return dataclasses.replace(missing, reason=(
            f"{n_points} points for {rank} parameters: the fit needs {rank + MIN_RESIDUAL_DF} "
            f"({MIN_RESIDUAL_DF} residual degrees of freedom, as the raw fit's {MIN_POINTS} points for 2)"
        ))
    coefficients = np.linalg.lstsq(np.column_stack([design, x]), y, rcond=None)[0]
    centred = y - y.mean()
    total = float(centred @ centred)
    r2 = 1.0 - rss / total if total > 0 else 0.0
    p = 0.0 if se == 0 else float(2.0 * stats.t.sf(abs(alpha / se), df))
    ci_low = ci_high = math.nan
    if rules.n_boot > 0:
        ci_low, ci_high = _interval(x, y, design, alpha, se, df, rules)
    effects = dict(zip(names, coefficients[1:-1].tolist(), strict=True))
    return AdjustedFit(
        alpha=alpha,
        se=se,
        p=p,
        ci_low=ci_low,
        ci_high=ci_high,
        intercept=float(coefficients[0]),
        r2=r2,
        reference=reference,
        steps={name[1]: value for name, value in effects.items() if name[0] == "tokens"},
        identity_reference=identity_reference,
        identity_effects={name[1]: value for name, value in effects.items() if name[0] == "kept"},
        dropped_levels=dropped,
        n_points=n_points,
        n_outliers=n_outliers,
        n_parameters=rank,
        df=df,
        reason="",
    )


def _missing_adjusted(n_points: int, n_outliers: int, reference: str, identity_reference: str) -> AdjustedFit:
    nan = math.nan
    return AdjustedFit(
        alpha=nan, se=nan, p=nan, ci_low=nan, ci_high=nan, intercept=nan, r2=nan, reference=reference, steps={},
        identity_reference=identity_reference, identity_effects={}, dropped_levels=(), n_points=n_points,
        n_outliers=n_outliers, n_parameters=0, df=0, reason="",
    )


def _series(
    magnitudes: np.ndarray, values: np.ndarray, labels: Sequence[Hashable], what: str
) -> tuple[np.ndarray, np.ndarray, list[Hashable]]:
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    if magnitudes.ndim != 1 or magnitudes.shape != values.shape:
        raise AnalysisError(f"magnitudes {magnitudes.shape} and values {values.shape} must be 1-D of equal length")
    labels = list(np.asarray(labels).tolist()) if isinstance(labels, np.ndarray) else list(labels)
    if len(labels) != magnitudes.size:
        raise AnalysisError(f"{len(labels)} {what} for {magnitudes.size} magnitudes: give one per magnitude")
    return magnitudes, values, labels


def _levels(labels: Sequence[Hashable]) -> list[Hashable]:
    """The distinct labels, numbers in numeric order before the rest in text order."""
    def order(label: Hashable) -> tuple[int, float, str]:
        if isinstance(label, (int, float, np.integer, np.floating)) and not isinstance(label, bool):
            return 0, float(label), ""
        return 1, 0.0, str(label)

    return sorted(set(labels), key=order)


def _level_columns(labels: Sequence[Hashable], kind: str) -> list[tuple[tuple[str, str], np.ndarray]]:
    """An indicator column per level but the first (the reference), named (kind, level)."""
    return [
        ((kind, str(level)), np.array([label == level for label in labels], dtype=np.float64))
        for level in _levels(labels)[1:]
    ]


def _independent_columns(
    candidates: list[tuple[tuple[str, str], np.ndarray]], n_points: int
) -> tuple[np.ndarray, list[tuple[str, str]], tuple[str, ...]]:
    """The intercept and the candidate columns that are not combinations of those before them.

    Gram-Schmidt in the given order (token counts, then kept tokens): a column whose part
    orthogonal to the kept ones is below 1e-9 of its norm is left out, and named in the result.
    """
    basis = [np.full(n_points, 1.0 / math.sqrt(n_points))]
    columns = [np.ones(n_points)]
    names: list[tuple[str, str]] = []
    dropped: list[str] = []
    for name, column in candidates:
        residual = column.copy()
        for _ in range(2):  # twice: classical Gram-Schmidt loses orthogonality once
            residual -= np.column_stack(basis) @ (np.column_stack(basis).T @ residual)
        norm = float(np.linalg.norm(residual))
        if norm <= 1e-9 * float(np.linalg.norm(column)):
            dropped.append(f"{name[0]}={name[1]}")
            continue
        basis.append(residual / norm)
        columns.append(column)
        names.append(name)
    return np.column_stack(columns), names, tuple(dropped)


def _weighted_fits(
    x: np.ndarray, y: np.ndarray, design: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per row of ``weights`` (b, m): alpha, se, df, RSS and x~'Wx~ of the weighted fit of y on
    [design, x] (module docstring); alpha NaN where x~'Wx~ vanishes, se NaN where the row drew
    fewer distinct points than rank + 2 (no residual left)."""
    x = x - x.mean()  # the intercept absorbs the shift; centring spares the cancellation
    y = y - y.mean()
    groups = _one_factor_groups(design)
    if groups is None:
        within = _projection_sums(x, y, design)
        row_floats = design.shape[1] ** 2 + x.size
    else:
        within = _group_sums(x, y, groups)
        row_floats = 6 * (int(groups.max()) + 1) + x.size
    distinct = _distinct_points(np.column_stack([design, x]), weights)
    rows = max(1, _BLOCK_FLOATS // row_floats)
    out = [np.empty(weights.shape[0]) for _ in range(5)]
    for first in range(0, weights.shape[0], rows):
        w = weights[first:first + rows]
        xx, xy, yy, rank = within(w)
        total = w.sum(axis=1)
        mean_x = (w @ x) / total
        spread = w @ (x * x) - total * mean_x * mean_x
        with np.errstate(divide="ignore", invalid="ignore"):
            alpha = np.where(xx > _IDENTIFIED * spread, xy / xx, np.nan)
            rss = np.maximum(yy - alpha * xy, 0.0)
            df = total - rank - 1
            se = np.sqrt(rss / df / xx)
        se[distinct[first:first + rows] < rank + 2] = np.nan
        for target, value in zip(out, (alpha, se, df, rss, xx), strict=True):
            target[first:first + rows] = value
    return tuple(out)


def _one_factor_groups(design: np.ndarray) -> np.ndarray | None:
    """Each point's level when the design is an intercept and the indicators of one factor
    (every point in at most one non-reference level), else None."""
    indicators = design[:, 1:]
    if indicators.size and indicators.sum(axis=1).max() > 1:
        return None
    groups = np.zeros(design.shape[0], dtype=np.int64)
    if indicators.size:
        member = indicators.sum(axis=1) > 0
        groups[member] = indicators[member].argmax(axis=1) + 1
    return groups


def _group_sums(x: np.ndarray, y: np.ndarray, groups: np.ndarray):
    """``within(w) -> (x~'Wx~, x~'Wy~, y~'Wy~, rank)`` for one factor: the sums about each
    level's weighted means, added over the levels drawn (rank = levels drawn). The same
    numbers as :func:`_projection_sums`, without a matrix per resample."""
    n_levels = int(groups.max()) + 1
    membership = np.zeros((x.size, n_levels))
    membership[np.arange(x.size), groups] = 1.0
    columns = np.hstack([membership * column[:, np.newaxis] for column in (np.ones_like(x), x, y, x * x, x * y, y * y)])

    def within(w: np.ndarray):
        count, sum_x, sum_y, sum_xx, sum_xy, sum_yy = np.split(w @ columns, 6, axis=1)
        drawn = count > 0
        safe = np.where(drawn, count, 1.0)
        xx = (sum_xx - sum_x * sum_x / safe).sum(axis=1)
        xy = (sum_xy - sum_x * sum_y / safe).sum(axis=1)
        yy = (sum_yy - sum_y * sum_y / safe).sum(axis=1)
        return xx, xy, yy, np.count_nonzero(drawn, axis=1)

    return within


def _projection_sums(x: np.ndarray, y: np.ndarray, design: np.ndarray):
    """``within(w) -> (x~'Wx~, x~'Wy~, y~'Wy~, rank)`` for any design: x'Wx - x'WZ (Z'WZ)^+ Z'Wx
    and likewise, with the pseudo-inverse from the eigenvalues of Z'WZ (a level not drawn gives
    a zero eigenvalue and drops out) and rank the count of non-zero ones."""
    q = design.shape[1]
    products = (design[:, :, np.newaxis] * design[:, np.newaxis, :]).reshape(x.size, q * q)
    zx = design * x[:, np.newaxis]
    zy = design * y[:, np.newaxis]

    def within(w: np.ndarray):
        eigenvalues, vectors = np.linalg.eigh((w @ products).reshape(-1, q, q))
        zero = eigenvalues <= _EIGEN_TOLERANCE * eigenvalues[:, -1:]
        inverse = np.where(zero, 0.0, 1.0 / np.where(zero, 1.0, eigenvalues))
        along_x = np.einsum("bij,bi->bj", vectors, w @ zx)
        along_y = np.einsum("bij,bi->bj", vectors, w @ zy)
        xx = w @ (x * x) - np.einsum("bj,bj,bj->b", along_x, along_x, inverse)
        xy = w @ (x * y) - np.einsum("bj,bj,bj->b", along_x, along_y, inverse)
        yy = w @ (y * y) - np.einsum("bj,bj,bj->b", along_y, along_y, inverse)
        return xx, xy, yy, np.count_nonzero(~zero, axis=1)

    return within


def _distinct_points(points: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """How many distinct rows of ``points`` carry positive weight in each row of ``weights``."""
    _, group = np.unique(points, axis=0, return_inverse=True)
    group = group.ravel()
    if group.max() + 1 == points.shape[0]:  # every point distinct (one V per magnitude): no grouping
        return np.count_nonzero(weights > 0, axis=1)
    membership = np.zeros((points.shape[0], int(group.max()) + 1))
    membership[np.arange(points.shape[0]), group] = 1.0
    return np.count_nonzero((weights > 0).astype(np.float64) @ membership, axis=1)


def _interval(
    x: np.ndarray, y: np.ndarray, design: np.ndarray, alpha: float, se: float, df: int, rules: FitRules
) -> tuple[float, float]:
    """The interval of alpha_adj by ``rules.ci_method``, from the resamples of fit_scaling (module docstring)."""
    from scipy import stats

    ci, method = rules.ci, rules.ci_method
    if method == "t":
        half = float(stats.t.ppf((1.0 + ci) / 2.0, df)) * se
        return alpha - half, alpha + half
    alphas, ses = [], []
    for counts in resample_counts(x.size, rules.n_boot, rules.seed, stream=rules.stream):
        fitted = _weighted_fits(x, y, design, counts)
        alphas.append(fitted[0])
        ses.append(fitted[1])
    alphas = np.concatenate(alphas)
    if method == "percentile":
        return percentile_interval(alphas, ci)
    tail = 100.0 * (1.0 - ci) / 2.0
    if method == "studentized":
        with np.errstate(divide="ignore", invalid="ignore"):
            t_stats = (alphas - alpha) / np.concatenate(ses)
        t_stats = t_stats[~np.isnan(t_stats)]
        if t_stats.size == 0 or not se > 0:
            return alpha, alpha
        low_q, high_q = np.percentile(t_stats, [tail, 100.0 - tail])
        return float(alpha - high_q * se), float(alpha - low_q * se)
    return _bca(x, y, design, alpha, alphas[np.isfinite(alphas)], ci)


def _bca(x: np.ndarray, y: np.ndarray, design: np.ndarray, alpha: float, alphas: np.ndarray, ci: float):
    """BCa as :func:`magdash.variability.fits.bca_interval` forms it, the jackknife leaving out each point."""
    from scipy import stats

    if alphas.size == 0:
        return math.nan, math.nan
    share = (np.count_nonzero(alphas < alpha) + 0.5 * np.count_nonzero(alphas == alpha)) / alphas.size
    z0 = stats.norm.ppf(min(max(share, 0.5 / alphas.size), 1.0 - 0.5 / alphas.size))
    jackknife = _weighted_fits(x, y, design, (~np.eye(x.size, dtype=bool)).astype(np.float64))[0]
    deviation = np.nanmean(jackknife) - jackknife
    spread = float(np.nansum(deviation**2))
    acceleration = float(np.nansum(deviation**3)) / (6.0 * spread**1.5) if spread > 0 else 0.0
    z = stats.norm.ppf([(1.0 - ci) / 2.0, (1.0 + ci) / 2.0])
    adjusted = stats.norm.cdf(z0 + (z0 + z) / (1.0 - acceleration * (z0 + z)))
    low, high = np.percentile(alphas, 100.0 * adjusted)
    return float(low), float(high)


TOKENIZATION_COLUMNS = [
    "measure", "layer", "alpha_raw", "alpha", "ci_low", "ci_high", "se", "p", "r2", "n_points", "n_parameters",
    "df", "n_strata", "steps", "alpha_identity", "identity_ci_low", "identity_ci_high", "identity_se", "identity_p",
    "identity_reason", "reason",
]
"""Columns of :func:`tokenization_frames`' per-layer frame (the analysis adds label and core)."""

STRATA_COLUMNS = [
    "measure", "layer", "n_tokens", "n_magnitudes", "smallest", "largest", *(f.name for f in dataclasses.fields(ScalingFit)),
    "reason",
]
"""Columns of :func:`tokenization_frames`' per-stratum frame (the analysis adds label and core)."""


def tokenization_frames(
    magnitudes: np.ndarray,
    values: Mapping[str, np.ndarray],
    raw_alphas: Mapping[str, np.ndarray],
    token_counts: Sequence[int],
    kept_ids: Sequence[int],
    *,
    drop_outliers: Mapping[str, bool],
    bootstrap_layers: set[int],
    rules: FitRules,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`strata_alphas` and :func:`adjusted_alpha` (the token count alone, and with the kept
    token's identity) of every measure at every layer, as two frames.

    Args:
        magnitudes: n (1-D).
        values: per measure, V with shape (n_layers, n_magnitudes).
        raw_alphas: per measure, the raw fit's alpha by layer (set beside the adjusted one).
        token_counts: each magnitude's token count (:attr:`magdash.tokenization.MagnitudeTokens.n_tokens`).
        kept_ids: each magnitude's kept token id.
        drop_outliers: per measure, whether the 3 x median rule applies (as in its raw fit).
        bootstrap_layers: the layers whose fits get a bootstrap interval (the raw fits' layers).
        rules: as in :func:`~magdash.variability.fits.fit_scaling` (``drop_outliers`` above sets
            their outlier rule by measure).

    Returns the per-layer frame (:data:`TOKENIZATION_COLUMNS`: ``alpha`` adjusted for the token
    count, ``steps`` its gamma_k as JSON, ``alpha_identity`` adjusted for the kept token too) and
    the per-stratum frame (:data:`STRATA_COLUMNS`: one row per measure, layer and token count).
    """
    import pandas as pd

    counts = [int(count) for count in token_counts]
    identities = [int(token) for token in kept_ids]
    layer_rows, strata_rows = [], []
    for measure, series in values.items():
        measure_rules = rules.with_outlier_rule(drop_outliers[measure])
        for layer, row in enumerate(np.asarray(series, dtype=np.float64)):
            layer_rules = measure_rules if layer in bootstrap_layers else measure_rules.without_interval()
            adjusted = adjusted_alpha(magnitudes, row, counts, rules=layer_rules)
            with_identity = adjusted_alpha(magnitudes, row, counts, identities, rules=layer_rules)
            layer_rows.append({
                "measure": measure, "layer": layer, "alpha_raw": float(raw_alphas[measure][layer]),
                "alpha": adjusted.alpha, "ci_low": adjusted.ci_low, "ci_high": adjusted.ci_high, "se": adjusted.se,
                "p": adjusted.p, "r2": adjusted.r2, "n_points": adjusted.n_points,
                "n_parameters": adjusted.n_parameters, "df": adjusted.df,
                "n_strata": len(set(_kept_labels(magnitudes, row, counts, layer_rules))),
                "steps": json.dumps(adjusted.steps, sort_keys=True),
                "alpha_identity": with_identity.alpha, "identity_ci_low": with_identity.ci_low,
                "identity_ci_high": with_identity.ci_high, "identity_se": with_identity.se,
                "identity_p": with_identity.p, "identity_reason": with_identity.reason, "reason": adjusted.reason,
            })
            for stratum in strata_alphas(magnitudes, row, counts, rules=layer_rules):
                strata_rows.append({
                    "measure": measure, "layer": layer, "n_tokens": int(stratum.stratum),
                    "n_magnitudes": stratum.n_magnitudes, "smallest": stratum.smallest, "largest": stratum.largest,
                    **dataclasses.asdict(stratum.fit), "reason": stratum.reason,
                })
    return (pd.DataFrame(layer_rows, columns=TOKENIZATION_COLUMNS),
            pd.DataFrame(strata_rows, columns=STRATA_COLUMNS))


def _kept_labels(magnitudes: np.ndarray, values: np.ndarray, labels: list[int], rules: FitRules) -> list[int]:
    keep, _ = scaling_mask(np.asarray(magnitudes, dtype=np.float64), values, rules=rules)
    return [label for label, kept in zip(labels, keep, strict=True) if kept]
