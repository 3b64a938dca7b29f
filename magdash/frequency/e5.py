"""E5: does a number's corpus frequency explain its variability?

The paper (Cacioli, arXiv 2604.04469, E5) explains its anti-scalar variability by corpus
frequency: frequent (small) numbers occur in more varied contexts. Its E5 is, per layer, the
Spearman correlation of V_eucl(n) with log(count(n) + 1). Magnitude and frequency are confounded
(counts fall with n), so any V that falls with n correlates with the count whatever frequency
does. The statistic that can tell them apart is the partial correlation given log n:
:func:`e5_correlation` gives it first, the paper's raw correlation beside it, and
:func:`e5_summary` leads with it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from magdash.frequency.corpus import FrequencyError
from magdash.frequency.e5_params import DEFAULT_MISSING, MISSING_POLICIES
from magdash.frequency.sources import FrequencySource, as_count_series
from magdash.params import DEFAULT_CI, DEFAULT_N_BOOT, seed_problem
from magdash.significance import SIGNIFICANCE_LEVEL, unreachable_note
from magdash.variability.fits import percentile_interval

E5_COLUMNS = [
    "layer", "partial_rho", "partial_p", "partial_ci_low", "partial_ci_high",
    "raw_rho", "raw_p", "raw_ci_low", "raw_ci_high", "n",
]
"""The columns of an E5 table, the decisive statistic (the partial correlation given log n) first."""
E5_VERSION = "2"
"""Bumped whenever :func:`e5_correlation` can give another table for the same inputs (the cache key
of :mod:`magdash.runs.frequency_runs`). 2: the partial correlation's bootstrap interval; the raw
correlation's columns are named ``raw_*``."""
# Resampled values per bootstrap chunk: bounds memory for long magnitude lists.
_BOOT_CHUNK_ELEMENTS = 2_000_000


def counts_for_magnitudes(
    magnitudes: Sequence[float] | np.ndarray,
    counts: FrequencySource | pd.DataFrame | pd.Series | dict,
    missing: str = DEFAULT_MISSING,
) -> np.ndarray:
    """count(n) for each magnitude, float64.

    A magnitude the source has no row for (including a non-integer one) raises
    :class:`FrequencyError` with ``missing="error"`` (the default: a silent 0 would be read as
    "rare"), or counts as 0 with ``missing="zero"``.
    """
    if missing not in MISSING_POLICIES:
        raise FrequencyError(f"missing must be one of {', '.join(MISSING_POLICIES)}, not {missing!r}")
    series = as_count_series(counts)
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    # Beyond int64 no source has a count (and the cast below would wrap around).
    integral = np.isfinite(magnitudes) & (magnitudes == np.round(magnitudes)) & (np.abs(magnitudes) < 2.0**63)
    keys = np.where(integral, magnitudes, -1).astype(np.int64)
    found = integral & np.isin(keys, series.index.to_numpy())
    if not found.all() and missing == "error":
        absent = [f"{m:g}" for m in magnitudes[~found]]
        shown = ", ".join(absent[:10]) + (" ..." if len(absent) > 10 else "")
        raise FrequencyError(
            f"the frequency source has no count for magnitude(s) {shown}; choose a source that covers "
            "them, or treat them as count 0 (missing='zero')",
            parameters=("missing",),
        )
    values = np.zeros(magnitudes.size)
    values[found] = series.reindex(keys[found]).to_numpy(dtype=np.float64)
    return values


def _layer_values(values_by_layer: Mapping[int, np.ndarray] | np.ndarray, n: int) -> dict[int, np.ndarray]:
    if isinstance(values_by_layer, Mapping):
        layers = {int(layer): np.asarray(v, dtype=np.float64) for layer, v in values_by_layer.items()}
    else:
        array = np.asarray(values_by_layer, dtype=np.float64)
        if array.ndim == 1:
            array = array[None, :]
        if array.ndim != 2:
            raise FrequencyError(f"values_by_layer must be 2-D (n_layers, n_magnitudes), got shape {array.shape}")
        layers = dict(enumerate(array))
    for layer, values in layers.items():
        if values.shape != (n,):
            raise FrequencyError(f"layer {layer}: {values.size} values for {n} magnitudes")
    return layers


def _row_ranks(x: np.ndarray) -> np.ndarray:
    return stats.rankdata(x, axis=-1)


def _row_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a - a.mean(axis=-1, keepdims=True)
    b = b - b.mean(axis=-1, keepdims=True)
    denominator = np.sqrt((a * a).sum(axis=-1) * (b * b).sum(axis=-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, (a * b).sum(axis=-1) / denominator, np.nan)


def _row_residuals(ranks: np.ndarray, control: np.ndarray) -> np.ndarray:
    """What is left of each row of ``ranks`` after its OLS line on the same row of ``control``,
    NaN rows where nothing is left but round-off (the ranks a monotone function of the control)
    or the control is constant."""
    centred = ranks - ranks.mean(axis=-1, keepdims=True)
    control = control - control.mean(axis=-1, keepdims=True)
    spread = (control * control).sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        residual = centred - (centred * control).sum(axis=-1, keepdims=True) / spread * control
    scale = np.maximum(np.abs(centred).max(axis=-1, keepdims=True), 1.0)
    empty = (spread == 0) | (np.abs(residual).max(axis=-1, keepdims=True) < 1e-9 * scale)
    return np.where(empty, np.nan, residual)


def _row_partial_spearman(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> np.ndarray:
    """Partial Spearman correlation of the rows of x and y given z: the Pearson correlation of
    the ranks of x and of y, each residualised on the ranks of z (NaN where either residual is empty)."""
    control = _row_ranks(z)
    return _row_pearson(_row_residuals(_row_ranks(x), control), _row_residuals(_row_ranks(y), control))


def _partial_p(r: float, n: int) -> float:
    """Two-sided p of a partial correlation controlling one variable: t = r sqrt((n-3)/(1-r^2)), df = n - 3."""
    if not math.isfinite(r) or n < 4:
        return math.nan
    if abs(r) >= 1.0:
        return 0.0
    t = r * math.sqrt((n - 3) / (1.0 - r * r))
    return float(2.0 * stats.t.sf(abs(t), n - 3))


def _bootstrap_rhos(
    x: np.ndarray, y: np.ndarray, z: np.ndarray, n_boot: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Raw and partial Spearman rho of n_boot resamples of the (x, y, z) triples (the magnitudes
    drawn with replacement, one draw for both); NaN where a resample leaves nothing to correlate."""
    n = x.size
    raw, partial = np.empty(n_boot), np.empty(n_boot)
    chunk = max(1, _BOOT_CHUNK_ELEMENTS // n)
    for start in range(0, n_boot, chunk):
        stop = min(start + chunk, n_boot)
        index = rng.integers(0, n, size=(stop - start, n))
        # Ranked once: the raw rho and the partial one (as _row_partial_spearman forms it) share them.
        x_ranks, y_ranks, control = _row_ranks(x[index]), _row_ranks(y[index]), _row_ranks(z[index])
        raw[start:stop] = _row_pearson(x_ranks, y_ranks)
        partial[start:stop] = _row_pearson(_row_residuals(y_ranks, control), _row_residuals(x_ranks, control))
    return raw, partial


def e5_correlation(
    magnitudes: Sequence[float] | np.ndarray,
    values_by_layer: Mapping[int, np.ndarray] | np.ndarray,
    counts: FrequencySource | pd.DataFrame | pd.Series | dict,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = DEFAULT_CI,
    seed: int = 0,
    missing: str = DEFAULT_MISSING,
) -> pd.DataFrame:
    """E5 per layer: the partial Spearman rho of V(n) with log(count(n) + 1) given log n, and the raw rho.

    Args:
        magnitudes: the magnitudes n, one per value of a layer.
        values_by_layer: {layer: V of shape (n_magnitudes,)} or a 2-D array (n_layers, n_magnitudes)
            whose rows are layers 0, 1, ....
        counts: a source, a number/count table, a Series or dict indexed by number.
        n_boot: bootstrap resamples of the magnitudes for both intervals (0: none).
        confidence: the intervals' level.
        seed: the bootstrap's seed; layer l's generator is seeded with (seed, l), so a layer's
            intervals do not depend on which other layers are asked for.
        missing: what a magnitude without a count is (see :func:`counts_for_magnitudes`).

    Returns:
        One row per layer with :data:`E5_COLUMNS`, over the magnitudes whose V is finite (``n``):

        - ``partial_rho``, ``partial_p``: the partial Spearman correlation controlling for log n,
          the statistic that tests the frequency account (counts fall with n, so V falling with n
          gives a raw correlation whatever frequency does). The ranks of V and of the count are
          each regressed (OLS) on the ranks of n and the Pearson correlation r of the two
          residuals is tested with t = r sqrt((n-3)/(1-r^2)), df = n - 3 (the rank transform
          of a covariance analysis: Conover & Iman 1982, Biometrics 38:715). NaN when either variable is a monotone function of n
          (nothing left to correlate).
        - ``partial_ci_low``, ``partial_ci_high``: its percentile bootstrap interval at
          ``confidence`` over ``n_boot`` resamples of the magnitudes ((V, count, n) drawn together).
        - ``raw_rho``, ``raw_p``: Spearman's rho of V and log(count + 1), the paper's E5 (Cacioli,
          arXiv 2604.04469), and its two-sided p (scipy's t approximation). Rank correlation
          ignores monotone transforms, so the log only names the paper's variable.
        - ``raw_ci_low``, ``raw_ci_high``: its percentile interval from the same resamples.

        Resamples with nothing to correlate are left out of an interval. A layer where V is
        constant (e.g. the embedding layer, V = 0) has NaN everywhere but ``n``.
    """
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    if magnitudes.ndim != 1 or magnitudes.size == 0:
        raise FrequencyError("magnitudes must be a non-empty 1-D list")
    if not 0 < confidence < 1:
        raise FrequencyError(f"confidence must be between 0 and 1, got {confidence}")
    if n_boot < 0:
        raise FrequencyError(f"n_boot must be >= 0, got {n_boot}")
    if problem := seed_problem(seed):
        raise FrequencyError(problem)
    log_counts = np.log1p(counts_for_magnitudes(magnitudes, counts, missing))
    with np.errstate(divide="ignore", invalid="ignore"):  # log of 0 or of a negative magnitude
        log_n = np.log(magnitudes)
    rows = []
    for layer, values in sorted(_layer_values(values_by_layer, magnitudes.size).items()):
        keep = np.isfinite(values) & np.isfinite(log_n)
        x, y, z = log_counts[keep], values[keep], log_n[keep]
        n = int(keep.sum())
        raw = partial = (math.nan, math.nan, math.nan, math.nan)
        if n >= 3 and np.ptp(y) > 0 and np.ptp(x) > 0:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = stats.spearmanr(y, x)
            partial_rho = float(_row_partial_spearman(y, x, z))
            raw_ci = partial_ci = (math.nan, math.nan)
            if n_boot > 0:
                raw_boot, partial_boot = _bootstrap_rhos(x, y, z, n_boot, np.random.default_rng([int(seed), int(layer)]))
                raw_ci = percentile_interval(raw_boot, confidence)
                if math.isfinite(partial_rho):
                    partial_ci = percentile_interval(partial_boot, confidence)
            raw = (float(result.statistic), float(result.pvalue), *raw_ci)
            partial = (partial_rho, _partial_p(partial_rho, n), *partial_ci)
        rows.append([layer, *partial, *raw, n])
    return pd.DataFrame(rows, columns=E5_COLUMNS)


E5_STATISTICS = {"partial": "partial Spearman rho given log n", "raw": "raw Spearman rho"}
"""The two correlations of an E5 table, by column prefix, the decisive one first: the names
every page, report and command line print."""


def e5_summary(table: pd.DataFrame, level: float = SIGNIFICANCE_LEVEL, conventions: str = "magdash") -> dict:
    """The E5 summary over a table's layers, the partial correlation first (the paper reports the mean raw rho).

    Args:
        table: an :func:`e5_correlation` table (the layers to summarise).
        level: the two-sided significance level.
        conventions: ``magdash`` counts a layer significant at p < ``level`` of either sign; the
            paper's script (:mod:`magdash.variability.conventions`) only a positive correlation.

    Returns:
        ``layers``, ``significance`` (the rule as text), ``partial`` and ``raw``, each with
        ``layers_with_rho``, ``mean_rho``, ``median_rho``, ``significant_layers`` and the
        ``best_layer`` (largest |rho|, the first on ties) with its ``best_rho`` and ``best_p``;
        ``unreachable``: :func:`magdash.significance.unreachable_note` when so few magnitudes
        were correlated that an exact Spearman test could not reach ``level`` ("" otherwise).
    """
    from magdash.variability.conventions import get_conventions

    positive_only = get_conventions(conventions).e5_positive_only
    threshold = f"{level:g}".removeprefix("0")  # as papers print it: p < .05
    counted = int(table["n"].min()) if len(table) else 0
    return {
        "layers": int(len(table)),
        "significance": f"rho > 0 and p < {threshold}" if positive_only else f"p < {threshold}",
        **{prefix: _statistic_summary(table, prefix, level, positive_only) for prefix in E5_STATISTICS},
        "unreachable": unreachable_note("spearman", counted, level, unit="magnitudes") if len(table) else "",
    }


def _statistic_summary(table: pd.DataFrame, prefix: str, level: float, positive_only: bool) -> dict:
    rho, p = table[f"{prefix}_rho"], table[f"{prefix}_p"]
    finite = np.isfinite(rho.to_numpy(dtype=np.float64))
    significant = (p < level) & finite
    if positive_only:
        significant &= rho > 0
    best = rho[finite].abs().idxmax() if finite.any() else None
    return {
        "layers_with_rho": int(finite.sum()),
        "mean_rho": float(rho[finite].mean()) if finite.any() else math.nan,
        "median_rho": float(rho[finite].median()) if finite.any() else math.nan,
        "significant_layers": int(significant.sum()),
        "best_layer": int(table.loc[best, "layer"]) if best is not None else None,
        "best_rho": float(rho[best]) if best is not None else math.nan,
        "best_p": float(p[best]) if best is not None else math.nan,
    }
