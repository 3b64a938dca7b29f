"""Distribution fits of count against number, as in the paper's Appendix E (arXiv 2604.04469).

Points: numbers n >= 1 with a positive count c(n) (zeros and n = 0 have no logarithm and the
paper fits only non-zero counts). p(n) = c(n) / sum c over those points, N points.

- power law   p(n) = a n^(-s)       least squares on the proportions, s in [0, 5];
- exponential p(n) = a exp(-lambda n) least squares on the proportions, lambda in [0, 1];
- log-log OLS ln c(n) = b - s ln n, ordinary least squares in log space (the slope is -s; the
  paper reports s).

The power-law exponent is called s (as Zipf's exponent is), never alpha, which in magdash names
only the exponent of variability's scaling with magnitude (:mod:`magdash.variability`).

For the two curve fits R^2 = 1 - SS_res / SS_tot on the proportions and
AIC = N ln(SS_res / N) + 2k with k = 2 (the Gaussian least-squares AIC without constants), as
the paper computed them; the lower AIC of the two is the better model. For the log-log line
R^2 and AIC are computed the same way but in log-count space, so its AIC is not comparable
with the other two (the table says which space each row lives in).

Both curve fits are solved by variable projection: for a fixed shape f (n^(-s) or
exp(-lambda n)) the best amplitude is a = <p, f> / <f, f> and SS_res = <p, p> - <p, f>^2 / <f, f>,
so only the shape parameter is searched: a grid over its range, then a bounded scalar search
around the best grid point. This finds the global least-squares optimum within the bounds
without depending on a starting value. On the paper's counts (``openwebtext-500k``) it gives
s = 0.773 (R^2 .860), lambda = 0.0798 (R^2 .881, lower AIC) and a log-log exponent of 1.349
(R^2 .832), the paper's figures.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
from scipy.optimize import minimize_scalar

from magdash.frequency.corpus import FrequencyError
from magdash.frequency.sources import FrequencySource, as_count_series

POWER_LAW_BOUNDS = (0.0, 5.0)
EXPONENTIAL_BOUNDS = (0.0, 1.0)
_GRID_POINTS = 2001
MIN_FIT_POINTS = 3

FIT_COLUMNS = [
    "model", "formula", "parameter_name", "parameter", "amplitude", "r2", "aic", "n_points", "space", "best_aic",
]


def _fit_points(counts) -> tuple[np.ndarray, np.ndarray]:
    series = as_count_series(counts)
    keep = (series.index.to_numpy() >= 1) & (series.to_numpy() > 0)
    numbers = series.index.to_numpy()[keep].astype(np.float64)
    values = series.to_numpy()[keep].astype(np.float64)
    if numbers.size < MIN_FIT_POINTS:
        raise FrequencyError(
            f"the fits need at least {MIN_FIT_POINTS} numbers >= 1 with a positive count; this source has {numbers.size}"
        )
    return numbers, values


def _projected_fit(
    proportions: np.ndarray, shape: Callable[[float], np.ndarray], bounds: tuple[float, float]
) -> tuple[float, float, float]:
    """(shape parameter, amplitude, SS_res) of the least-squares fit a * shape(parameter)."""

    def residual_ss(parameter: float) -> float:
        f = shape(parameter)
        ff = f @ f
        if not np.isfinite(ff) or ff == 0:
            return np.inf
        return float(proportions @ proportions - (proportions @ f) ** 2 / ff)

    grid = np.linspace(*bounds, _GRID_POINTS)
    values = np.array([residual_ss(p) for p in grid])
    best = int(np.argmin(values))
    low, high = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    result = minimize_scalar(residual_ss, bounds=(low, high), method="bounded", options={"xatol": 1e-12})
    parameter = float(result.x) if result.fun <= values[best] else float(grid[best])
    f = shape(parameter)
    amplitude = float((proportions @ f) / (f @ f))
    residual = proportions - amplitude * f
    return parameter, amplitude, float(residual @ residual)


def _r2_aic(observed: np.ndarray, residual_ss: float, k: int = 2) -> tuple[float, float]:
    total_ss = float(((observed - observed.mean()) ** 2).sum())
    n = observed.size
    r2 = 1.0 - residual_ss / total_ss if total_ss > 0 else np.nan
    aic = n * np.log(residual_ss / n) + 2 * k if residual_ss > 0 else -np.inf
    return r2, aic


def fit_distributions(counts: FrequencySource | pd.DataFrame | pd.Series | dict) -> pd.DataFrame:
    """The three fits as a table with columns :data:`FIT_COLUMNS` (one row per model)."""
    numbers, values = _fit_points(counts)
    proportions = values / values.sum()
    rows = []
    exponent, a_pl, ss_pl = _projected_fit(proportions, lambda p: numbers ** (-p), POWER_LAW_BOUNDS)
    r2, aic = _r2_aic(proportions, ss_pl)
    rows.append(["power_law", "p(n) = a n^(-s)", "s", exponent, a_pl, r2, aic, numbers.size, "proportions"])
    lam, a_exp, ss_exp = _projected_fit(proportions, lambda p: np.exp(-p * numbers), EXPONENTIAL_BOUNDS)
    r2, aic = _r2_aic(proportions, ss_exp)
    rows.append(["exponential", "p(n) = a exp(-lambda n)", "lambda", lam, a_exp, r2, aic, numbers.size, "proportions"])
    log_n, log_c = np.log(numbers), np.log(values)
    slope, intercept = np.polyfit(log_n, log_c, 1)
    residual = log_c - (intercept + slope * log_n)
    r2, aic = _r2_aic(log_c, float(residual @ residual))
    # Amplitude on the proportion scale, so every row's curve can be drawn on one plot.
    rows.append([
        "loglog_ols", "ln c(n) = b - s ln n (OLS)", "s", -slope, np.exp(intercept) / values.sum(),
        r2, aic, numbers.size, "log counts",
    ])
    table = pd.DataFrame(rows, columns=FIT_COLUMNS[:-1])
    curve_aics = table.loc[table["space"] == "proportions", "aic"]
    table["best_aic"] = table.index == curve_aics.idxmin()
    return table


def distribution_plot_data(
    counts: FrequencySource | pd.DataFrame | pd.Series | dict, fits: pd.DataFrame | None = None
) -> pd.DataFrame:
    """number, count, proportion, and each fit's predicted proportion (columns named by model).

    Proportions are of the total over the fitted points (n >= 1, count > 0), like the fits;
    rows with count 0 are kept (proportion 0) so a log-log plot can drop them explicitly.
    """
    series = as_count_series(counts)
    numbers = series.index.to_numpy()
    values = series.to_numpy().astype(np.float64)
    fitted_total = values[(numbers >= 1) & (values > 0)].sum()
    fits = fit_distributions(series) if fits is None else fits
    frame = pd.DataFrame({"number": numbers, "count": series.to_numpy(), "proportion": values / fitted_total})
    n = numbers.astype(np.float64)
    with np.errstate(divide="ignore", over="ignore"):
        for model, amplitude, parameter in zip(fits["model"].astype(str), fits["amplitude"].to_numpy(np.float64),
                                               fits["parameter"].to_numpy(np.float64), strict=True):
            curve = amplitude * np.exp(-parameter * n) if model == "exponential" else amplitude * n ** (-parameter)
            frame[model] = np.where(n >= 1, curve, np.nan)
    return frame
