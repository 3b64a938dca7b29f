"""E5: does a number's corpus frequency explain its variability?

The paper (Cacioli, arXiv 2604.04469, E5) explains its anti-scalar variability by corpus
frequency: frequent (small) numbers occur in more varied contexts. E5 is, per layer, the
Spearman correlation of V_eucl(n) with log(count(n) + 1). Magnitude and frequency are confounded
(counts fall with n), so the paper cannot tell them apart; :func:`e5_correlation` adds the
partial correlation controlling for log n so that users can try.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from magdash.frequency.corpus import FrequencyError
from magdash.frequency.sources import FrequencySource, as_count_series
from magdash.params import DEFAULT_N_BOOT

E5_COLUMNS = ["layer", "rho", "p", "ci_low", "ci_high", "partial_rho", "partial_p", "n"]
E5_VERSION = "1"
"""Bumped whenever :func:`e5_correlation` can give another table for the same inputs (the cache key
of :mod:`magdash.runs.frequency_runs`)."""
MISSING_POLICIES = ("error", "zero")
# Resampled values per bootstrap chunk: bounds memory for long magnitude lists.
_BOOT_CHUNK_ELEMENTS = 2_000_000


def counts_for_magnitudes(
    magnitudes: Sequence[float] | np.ndarray,
    counts: FrequencySource | pd.DataFrame | pd.Series | dict,
    missing: str = "error",
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
            "them, or treat them as count 0 (missing='zero', --missing zero)"
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


def _bootstrap_rho(x: np.ndarray, y: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Spearman rho of n_boot resamples of the (x, y) pairs; NaN where a resample is constant."""
    n = x.size
    rhos = np.empty(n_boot)
    chunk = max(1, _BOOT_CHUNK_ELEMENTS // n)
    for start in range(0, n_boot, chunk):
        stop = min(start + chunk, n_boot)
        index = rng.integers(0, n, size=(stop - start, n))
        rhos[start:stop] = _row_pearson(_row_ranks(x[index]), _row_ranks(y[index]))
    return rhos


def _partial_spearman(x: np.ndarray, y: np.ndarray, z: np.ndarray) -> tuple[float, float]:
    """Rank-residual partial correlation of x and y given z, with its t-test p (df = n - 3)."""
    n = x.size
    rx, ry, rz = _row_ranks(x), _row_ranks(y), _row_ranks(z)
    design = np.column_stack([np.ones(n), rz])
    residual_x = rx - design @ np.linalg.lstsq(design, rx, rcond=None)[0]
    residual_y = ry - design @ np.linalg.lstsq(design, ry, rcond=None)[0]
    # Residuals that are round-off only (x or y a monotone function of z) have no correlation.
    scale = max(np.abs(rx - rx.mean()).max(initial=0.0), np.abs(ry - ry.mean()).max(initial=0.0), 1.0)
    if n < 4 or np.abs(residual_x).max() < 1e-9 * scale or np.abs(residual_y).max() < 1e-9 * scale:
        return math.nan, math.nan
    r = float(_row_pearson(residual_x, residual_y))
    if not math.isfinite(r):
        return math.nan, math.nan
    r = max(-1.0, min(1.0, r))
    if abs(r) == 1.0:
        return r, 0.0
    t = r * math.sqrt((n - 3) / (1.0 - r * r))
    return r, float(2.0 * stats.t.sf(abs(t), n - 3))


def e5_correlation(
    magnitudes: Sequence[float] | np.ndarray,
    values_by_layer: Mapping[int, np.ndarray] | np.ndarray,
    counts: FrequencySource | pd.DataFrame | pd.Series | dict,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = 0.95,
    seed: int = 0,
    missing: str = "error",
) -> pd.DataFrame:
    """E5 per layer: Spearman rho of V(n) with log(count(n) + 1), and the partial rho given log n.

    ``values_by_layer``: {layer: V of shape (n_magnitudes,)} or a 2-D array (n_layers,
    n_magnitudes) whose rows are layers 0, 1, .... ``counts``: a source, a number/count table, a
    Series or dict indexed by number; magnitudes missing from it follow ``missing`` (see
    :func:`counts_for_magnitudes`).

    Per layer, over the magnitudes whose V is finite (``n`` of them):

    - ``rho``, ``p``: Spearman's rho of V and log(count + 1) and its two-sided p (scipy's t
      approximation). Rank correlation ignores monotone transforms, so the log only names the
      paper's variable.
    - ``ci_low``, ``ci_high``: percentile bootstrap interval at ``confidence`` over ``n_boot``
      resamples of the magnitudes (pairs drawn with replacement); resamples with a constant
      variable have no rho and are left out. The generator is seeded with (seed, layer), so a
      layer's interval does not depend on which other layers are asked for.
    - ``partial_rho``, ``partial_p``: Spearman partial correlation controlling for log n: the
      ranks of V and of the count are each regressed (OLS) on the ranks of n, and the Pearson
      correlation of the two residuals is tested with t = r sqrt((n-3)/(1-r^2)), df = n - 3.
      If frequency only mirrors magnitude, it falls to about 0; NaN when either variable is a
      monotone function of n (nothing left to correlate).

    A layer where V is constant (e.g. the embedding layer, V = 0) has NaN everywhere but ``n``.
    """
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    if magnitudes.ndim != 1 or magnitudes.size == 0:
        raise FrequencyError("magnitudes must be a non-empty 1-D list")
    if not 0 < confidence < 1:
        raise FrequencyError(f"confidence must be between 0 and 1, got {confidence}")
    if n_boot < 0:
        raise FrequencyError(f"n_boot must be >= 0, got {n_boot}")
    if seed < 0:
        raise FrequencyError(f"seed must be >= 0, got {seed}")
    log_counts = np.log1p(counts_for_magnitudes(magnitudes, counts, missing))
    with np.errstate(divide="ignore", invalid="ignore"):  # log of 0 or of a negative magnitude
        log_n = np.log(magnitudes)
    tail = (1.0 - confidence) / 2.0 * 100.0
    rows = []
    for layer, values in sorted(_layer_values(values_by_layer, magnitudes.size).items()):
        keep = np.isfinite(values) & np.isfinite(log_n)
        x, y, z = log_counts[keep], values[keep], log_n[keep]
        n = int(keep.sum())
        rho = p = low = high = partial = partial_p = math.nan
        if n >= 3 and np.ptp(y) > 0 and np.ptp(x) > 0:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                result = stats.spearmanr(y, x)
            rho, p = float(result.statistic), float(result.pvalue)
            if n_boot > 0:
                rng = np.random.default_rng([int(seed), int(layer)])
                resampled = _bootstrap_rho(x, y, n_boot, rng)
                if np.isfinite(resampled).any():
                    low, high = (float(v) for v in np.nanpercentile(resampled, [tail, 100.0 - tail]))
            partial, partial_p = _partial_spearman(y, x, z)
        rows.append([layer, rho, p, low, high, partial, partial_p, n])
    return pd.DataFrame(rows, columns=E5_COLUMNS)


def e5_summary(table: pd.DataFrame, alpha: float = 0.05, conventions: str = "magdash") -> dict:
    """The E5 summary over the layers that have a rho (the paper reports the mean rho).

    ``significant_layers`` counts p < ``alpha`` of either sign under magdash's conventions, and
    only positive correlations (rho > 0 and p < ``alpha``) under the paper's
    (:mod:`magdash.variability.conventions`). ``median_rho`` and the ``best_layer`` (largest |rho|, the
    first on ties, with its ``best_rho`` and ``best_p``) are the paper's other two figures.
    """
    from magdash.variability.conventions import get_conventions

    positive_only = get_conventions(conventions).e5_positive_only
    finite = table[np.isfinite(table["rho"])]
    significant = finite["p"] < alpha
    if positive_only:
        significant &= finite["rho"] > 0
    best = finite.loc[finite["rho"].abs().idxmax()] if len(finite) else None
    return {
        "layers": int(len(table)),
        "layers_with_rho": int(len(finite)),
        "mean_rho": float(finite["rho"].mean()) if len(finite) else math.nan,
        "median_rho": float(finite["rho"].median()) if len(finite) else math.nan,
        "mean_partial_rho": float(np.nanmean(table["partial_rho"])) if np.isfinite(table["partial_rho"]).any() else math.nan,
        "significant_layers": int(significant.sum()),
        "significant_partial_layers": int((table["partial_p"] < alpha).sum()),
        "significance": "rho > 0 and p < alpha" if positive_only else "p < alpha",
        "best_layer": int(best["layer"]) if best is not None else None,
        "best_rho": float(best["rho"]) if best is not None else math.nan,
        "best_p": float(best["p"]) if best is not None else math.nan,
    }
