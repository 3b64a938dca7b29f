"""The study-design simulator: what can a study of this size detect?

Synthetic studies are drawn from the generative model of :mod:`magdash.controls.simulate` with
a planted alpha and noise calibrated from a model's vectors (:func:`calibrate`; over a store and cached:
:func:`magdash.runs.design_runs.run_design`), for a design
(:class:`DesignParams`: magnitudes, carriers, core layers), and analysed as the analysis engine
fits V_eucl (OLS of log V on log n with the 3x-median outlier rule, bootstrap off). Outputs:

- H1 power: the share of studies whose one-sample t-test of the core alphas against 0 gives
  t > 0 and two-sided p < ``level`` (:mod:`magdash.variability.hypotheses`), over a grid of true
  alphas from 0; its value at alpha = 0 is the test's real size (nominal: ``level / 2``, one
  side). Core layers share magnitude
  effects (rho), so their alphas are correlated and the t-test over-rejects under the null; the
  *size-adjusted* power (:func:`size_adjusted_rate`) uses the critical t that the simulated null
  itself exceeds in a share ``level / 2`` of studies, so that it has the nominal size. The majority rule (alpha > 0 at
  more than half the core layers) is given too.
- E6 power (two models differing by delta alpha in every core layer, drawn independently):
  the Wilcoxon signed-rank test of the paired core alphas (two-sided p < ``level``; and
  size-adjusted as above on |W+ - K(K+1)/4|), and the layerwise joint bootstrap: the share of
  core layers whose ``n_boot``-resample percentile CI of delta, resampling the magnitudes of
  both models jointly (:mod:`magdash.variability.compare`), excludes 0.
- The expected 95% CI half-width of alpha per layer, ``t_{m-2, .975} se`` (the interval the
  studentized bootstrap approximates), as the number of carriers and of magnitudes (spread
  geometrically over the design's range) grow.
- The minimal detectable alpha at ``power_target`` (default 80%): where the power curve first
  crosses it, linearly interpolated; its Monte Carlo band is where the curve's band crosses.

Every rate has a 95% Wilson interval over the ``n_studies`` studies (the Monte Carlo error),
every mean a +-1.96 SE band. Everything is drawn from ``numpy.random.default_rng`` streams
seeded by ``seed`` and the grid point, so a result is reproducible point by point.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from magdash.controls.controls_params import CALIBRATION_MEASURE, DesignParams
from magdash.controls.simulate import MAX_DIMENSION, Calibration, CarrierScatter, draw_log_v, fit_alphas
from magdash.errors import AnalysisError
from magdash.formatting import format_number
from magdash.params import ProgressCallback
from magdash.result_codec import PayloadCodec, not_stored, stored_as, to_document
from magdash.variability.analysis_params import OUTLIER_FACTOR
from magdash.variability.fits import resample_counts, scaling_mask
from magdash.variability.html_summary import html_summary

log = logging.getLogger(__name__)

DESIGN_VERSION = "4"
"""Bump whenever a change to the simulator can change a cached design result."""

def wilson(successes: np.ndarray | float, n: int, z: float = 1.96) -> tuple[np.ndarray, np.ndarray]:
    """The Wilson score interval of a binomial rate (Wilson 1927)."""
    rate = np.asarray(successes, dtype=np.float64) / n
    centre = (rate + z * z / (2 * n)) / (1 + z * z / n)
    half = z * np.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def t_statistics(alphas: np.ndarray) -> np.ndarray:
    """One-sample t of each study's core alphas (studies, layers) against 0."""
    k = np.count_nonzero(np.isfinite(alphas), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.nanmean(alphas, axis=1) / (np.nanstd(alphas, axis=1, ddof=1) / np.sqrt(k))


def size_adjusted_rate(null: np.ndarray, statistics: np.ndarray, level: float) -> float:
    """The rejection rate of ``statistics`` by the test whose critical value gives the simulated
    ``null`` exactly the size ``level``: reject above c = the null's (1 - level) quantile, and at
    c with the probability that makes up the rest (a randomised test, as a discrete statistic
    such as Wilcoxon's W needs: with many tied nulls at the maximum no plain cut has the size)."""
    null = np.asarray(null, dtype=np.float64)
    null = null[np.isfinite(null)]
    statistics = np.asarray(statistics, dtype=np.float64)
    if null.size == 0:
        return math.nan
    cut = float(np.quantile(null, 1 - level))
    above, at = np.mean(null > cut), np.mean(null == cut)
    share = (level - above) / at if at > 0 else 0.0
    return float(np.mean(statistics > cut) + min(max(share, 0.0), 1.0) * np.mean(statistics == cut))


def signed_rank(differences: np.ndarray) -> np.ndarray:
    """Wilcoxon's W+ - K(K+1)/4 per row (its distance from the null mean; no zeros, no ties)."""
    ranks = stats.rankdata(np.abs(differences), axis=1)
    k = differences.shape[1]
    return (ranks * (differences > 0)).sum(axis=1) - k * (k + 1) / 4


@dataclass
class DesignResult(PayloadCodec):
    """The simulator's curves (module docstring) for one calibration and design.

    Attributes:
        params: the design simulated.
        calibration: the noise calibrated on the model.
        n_layers: core layers per simulated study.
        n_magnitudes: magnitudes per simulated study.
        h1: the H1 power curve over true alphas, with Monte Carlo bands.
        e6: the E6 power curve over true deltas.
        ci_width: the CI half-width of alpha as carriers and magnitudes grow.
        minimal_alpha: the minimal detectable alpha at the target power, raw and size-adjusted, with bands.
        from_cache: whether the result was read from the store's cache.
    """

    params: DesignParams
    calibration: Calibration
    n_layers: int
    n_magnitudes: int
    h1: pd.DataFrame = field(metadata=stored_as(key="h1_power", frame="records"))
    e6: pd.DataFrame = field(metadata=stored_as(key="e6_power", frame="records"))
    ci_width: pd.DataFrame = field(metadata=stored_as(key="ci_half_width", frame="records"))
    minimal_alpha: dict[str, float] = field(metadata=stored_as(key="minimal_detectable_alpha"))
    from_cache: bool = field(default=False, metadata=not_stored(True))

    # The payload is the --json document, minimal alpha before the curves.
    _payload_order = ("params", "calibration", "n_layers", "n_magnitudes", "minimal_alpha")

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``design --json`` shape, which the cache's payload holds too: params, calibration,
        minimal alpha and every curve as records."""
        return to_document(self)

    def summary(self) -> dict[str, float]:
        """The answers at the design's alpha and delta (both are points of the curves)."""
        h1 = self.h1.iloc[int((self.h1["alpha"] - abs(self.params.alpha)).abs().argmin())]
        e6 = self.e6.iloc[int((self.e6["delta"] - abs(self.params.delta)).abs().argmin())]
        width = self.ci_width[(self.ci_width["factor"] == "design")]
        return {
            "alpha": float(h1["alpha"]),
            "h1_power": float(h1["power"]),
            "h1_size": float(self.h1.iloc[0]["power"]),
            "h1_power_size_adjusted": float(h1["power_size_adjusted"]),
            "delta": float(e6["delta"]),
            "e6_wilcoxon_power": float(e6["wilcoxon"]),
            "e6_wilcoxon_size": float(self.e6.iloc[0]["wilcoxon"]),
            "e6_bootstrap_layer_power": float(e6["bootstrap_layers"]),
            "ci_half_width": float(width["half_width"].iloc[0]) if len(width) else math.nan,
            **{f"minimal_alpha_{k}": v for k, v in self.minimal_alpha.items()},
        }

    def _repr_html_(self) -> str:
        """The notebook's view: the design, what it calibrated on, its power and the minimal detectable alpha."""
        answers = self.summary()
        p = self.params
        facts = [
            ("design", f"{self.n_magnitudes} magnitudes ({p.magnitudes}) x {p.n_carriers} carriers, "
                       f"{self.n_layers} core layers, {p.n_studies:,} simulated studies a point"),
            ("calibrated on", self.calibration.source),
            (f"power of H1 at alpha = {format_number(answers['alpha'])}",
             f"{format_number(answers['h1_power'], '.3f')} (size {format_number(answers['h1_size'], '.3f')}; "
             f"size-adjusted {format_number(answers['h1_power_size_adjusted'], '.3f')})"),
            (f"power of E6 at delta = {format_number(answers['delta'])}",
             f"Wilcoxon {format_number(answers['e6_wilcoxon_power'], '.3f')}, per-layer bootstrap "
             f"{format_number(answers['e6_bootstrap_layer_power'], '.3f')}"),
            (f"minimal alpha detected with power {format_number(p.power_target, 'g')}",
             f"{format_number(self.minimal_alpha['nominal'])} (size-adjusted "
             f"{format_number(self.minimal_alpha['size_adjusted'])})"),
            ("CI half-width of the mean core alpha", format_number(answers["ci_half_width"])),
        ]
        notes = ["curves: .h1, .e6, .ci_width; charts: magdash.charts.h1_power, .e6_power, .ci_width"]
        return html_summary("Study design", facts, notes=notes)


class Simulator:
    """Draws and analyses studies of one design under one calibration (module docstring)."""

    def __init__(self, calibration: Calibration, params: DesignParams):
        self.calibration = calibration
        self.params = params
        self.magnitudes = params.magnitude_values()
        self.n_layers = params.n_layers or calibration.n_layers
        if self.n_layers < 2:
            raise AnalysisError("a design needs at least 2 core layers for the tests over layers")
        self.scatter = CarrierScatter(params.seed)

    def _rng(self, *stream: int) -> np.random.Generator:
        return np.random.default_rng([self.params.seed, *stream])

    def log_v(self, alpha: float | np.ndarray, stream: Sequence[int], *, n_carriers: int | None = None,
              magnitudes: np.ndarray | None = None) -> np.ndarray:
        return draw_log_v(
            self.calibration,
            self.magnitudes if magnitudes is None else magnitudes,
            alpha=alpha,
            n_carriers=n_carriers or self.params.n_carriers,
            n_layers=self.n_layers,
            n_studies=self.params.n_studies,
            rng=self._rng(*stream),
            scatter=self.scatter,
        )

    def alphas(self, alpha: float, stream: Sequence[int]) -> np.ndarray:
        return fit_alphas(self.magnitudes, self.log_v(alpha, stream)).alpha

    def spreads(self) -> tuple[float, float]:
        """The spread across studies of one layer's alpha and of the mean core alpha (the pilot
        at alpha = 0 that sets the automatic grid ends)."""
        alphas = self.alphas(0.0, (9, 0))
        return float(np.nanstd(alphas, ddof=1)), float(np.nanstd(np.nanmean(alphas, axis=1), ddof=1))

    def h1_curve(self, grid: np.ndarray, progress: ProgressCallback | None = None) -> pd.DataFrame:
        n = self.params.n_studies
        level = self.params.level
        critical = stats.t.ppf(1 - level / 2, self.n_layers - 1)
        rows, null_t = [], None
        for index, alpha in enumerate(grid):
            alphas = self.alphas(float(alpha), (1, index))
            t = t_statistics(alphas)
            if null_t is None:
                null_t = t
            reject = np.count_nonzero(t > critical)
            reject_adjusted = size_adjusted_rate(null_t, t, level / 2) * n
            majority = np.count_nonzero(np.count_nonzero(alphas > 0, axis=1) * 2 > self.n_layers)
            low, high = wilson(reject, n)
            low_a, high_a = wilson(reject_adjusted, n)
            rows.append({
                "alpha": float(alpha), "power": reject / n, "power_low": float(low), "power_high": float(high),
                "power_size_adjusted": reject_adjusted / n, "size_adjusted_low": float(low_a),
                "size_adjusted_high": float(high_a), "majority": majority / n,
                "mean_alpha": float(np.nanmean(alphas)),
            })
            if progress is not None:
                progress(index + 1, len(grid))
        return pd.DataFrame(rows)

    def _bootstrap_share(self, log_a: np.ndarray, log_b: np.ndarray, stream: Sequence[int]) -> np.ndarray:
        """Per study: the share of core layers whose joint-bootstrap CI of delta excludes 0.

        Resample r weighs the points of every study and layer by the same counts ``W[r]`` (the
        magnitudes are resampled jointly for both models), so each weighted sum is one matrix
        product ``W @ (mask * feature)`` over all studies and layers at once.
        """
        x = np.log(self.magnitudes)
        xc = x - x.mean()
        seed = int(self._rng(*stream).integers(2**31))
        counts = np.concatenate(list(resample_counts(x.size, self.params.n_boot, seed)))  # (b, n)
        slopes = []
        for log_v in (log_a, log_b):
            mask = _kept(log_v).astype(np.float64)  # (s, k, n)
            y = np.where(mask > 0, log_v, 0.0)
            y = y - (mask * y).sum(axis=-1, keepdims=True) / mask.sum(axis=-1, keepdims=True)
            flat = mask.reshape(-1, x.size).T  # (n, s*k)
            total = counts @ flat
            sx = counts @ (flat * xc[:, None])
            sy = counts @ (flat * y.reshape(-1, x.size).T)
            sxx = counts @ (flat * (xc * xc)[:, None]) - sx * sx / total
            sxy = counts @ (flat * xc[:, None] * y.reshape(-1, x.size).T) - sx * sy / total
            with np.errstate(divide="ignore", invalid="ignore"):
                slopes.append(sxy / sxx)  # (b, s*k)
        delta = slopes[0] - slopes[1]
        tail = 100 * self.params.level / 2
        quantile = np.nanpercentile if np.isnan(delta).any() else np.percentile
        low, high = quantile(delta, [tail, 100 - tail], axis=0)
        excludes = ((low > 0) | (high < 0)).reshape(log_a.shape[0], log_a.shape[1])
        return excludes.mean(axis=1)

    def e6_curve(self, grid: np.ndarray, progress: ProgressCallback | None = None) -> pd.DataFrame:
        n = self.params.n_studies
        base = self.params.alpha
        rows, null_w = [], None
        for index, delta in enumerate(grid):
            log_a = self.log_v(base, (2, index, 0))
            log_b = self.log_v(base - float(delta), (2, index, 1))
            alphas_a = fit_alphas(self.magnitudes, log_a).alpha
            alphas_b = fit_alphas(self.magnitudes, log_b).alpha
            differences = alphas_a - alphas_b
            p = stats.wilcoxon(differences, axis=1, nan_policy="omit").pvalue
            reject = np.count_nonzero(p < self.params.level)
            w = np.abs(signed_rank(differences))
            if null_w is None:
                null_w = w
            reject_adjusted = size_adjusted_rate(null_w, w, self.params.level) * n
            low, high = wilson(reject, n)
            row = {
                "delta": float(delta), "wilcoxon": reject / n, "wilcoxon_low": float(low),
                "wilcoxon_high": float(high), "wilcoxon_size_adjusted": reject_adjusted / n,
            }
            if self.params.n_boot > 0:
                share = self._bootstrap_share(log_a, log_b, (3, index))
                mean, se = float(np.mean(share)), float(np.std(share, ddof=1) / math.sqrt(n))
                majority = np.count_nonzero(share > 0.5)
                m_low, m_high = wilson(majority, n)
                row.update({
                    "bootstrap_layers": mean, "bootstrap_layers_low": mean - 1.96 * se,
                    "bootstrap_layers_high": mean + 1.96 * se, "bootstrap_majority": majority / n,
                    "bootstrap_majority_low": float(m_low), "bootstrap_majority_high": float(m_high),
                })
            else:
                row.update(dict.fromkeys(
                    ("bootstrap_layers", "bootstrap_layers_low", "bootstrap_layers_high", "bootstrap_majority",
                     "bootstrap_majority_low", "bootstrap_majority_high"), math.nan))
            rows.append(row)
            if progress is not None:
                progress(index + 1, len(grid))
        return pd.DataFrame(rows)

    def ci_widths(self) -> pd.DataFrame:
        low, high = float(self.magnitudes.min()), float(self.magnitudes.max())
        settings = [("design", len(self.magnitudes), self.params.n_carriers, self.magnitudes)]
        settings += [("carriers", c, c, self.magnitudes) for c in self.params.carrier_grid]
        for m in self.params.magnitude_grid:
            spread = np.unique(np.rint(np.geomspace(max(low, 1.0), high, m)))
            settings.append(("magnitudes", int(spread.size), self.params.n_carriers, spread))
        rows = []
        for index, (factor, value, carriers, magnitudes) in enumerate(settings):
            fits = fit_alphas(magnitudes, self.log_v(self.params.alpha, (4, index), n_carriers=carriers,
                                                     magnitudes=magnitudes))
            half = stats.t.ppf(0.975, fits.n_points - 2) * fits.se
            half = half[np.isfinite(half)]
            mean = float(half.mean()) if half.size else math.nan
            se = float(half.std(ddof=1) / math.sqrt(half.size)) if half.size > 1 else math.nan
            rows.append({"factor": factor, "value": int(value), "n_carriers": int(carriers),
                         "n_magnitudes": int(len(magnitudes)), "half_width": mean,
                         "half_width_low": mean - 1.96 * se, "half_width_high": mean + 1.96 * se})
        return pd.DataFrame(rows)


def _kept(log_v: np.ndarray) -> np.ndarray:
    """The analysis's points: finite V not above 3x the median V of its row."""
    finite = np.isfinite(log_v)
    median = np.nanmedian(np.exp(log_v), axis=-1, keepdims=True)
    return finite & ~(np.exp(log_v) > OUTLIER_FACTOR * median)


def _grid(end: float, n_points: int, chosen: float) -> np.ndarray:
    """0 .. end in ``n_points`` steps, plus the design's own value (so it is simulated exactly)."""
    return np.unique(np.append(np.linspace(0.0, end, n_points), abs(chosen)))


def crossing(x: np.ndarray, y: np.ndarray, target: float) -> float:
    """The first x where y reaches ``target`` (linear interpolation); NaN if it never does."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    above = np.flatnonzero(y >= target)
    if above.size == 0:
        return math.nan
    first = int(above[0])
    if first == 0:
        return float(x[0])
    x0, x1, y0, y1 = x[first - 1], x[first], y[first - 1], y[first]
    return float(x0 + (target - y0) * (x1 - x0) / (y1 - y0))


def simulate_design(
    calibration: Calibration, params: DesignParams, progress: ProgressCallback | None = None
) -> DesignResult:
    """Every output of the simulator (module docstring) for a calibration and a design."""
    simulator = Simulator(calibration, params)
    layer_spread, mean_spread = simulator.spreads()
    alpha_max = params.alpha_max or 8 * mean_spread
    delta_max = params.delta_max or 4 * math.sqrt(2) * layer_spread
    total = 2 * params.n_points + 3
    done = [0]

    def step(_done: int, _total: int) -> None:
        done[0] += 1
        if progress is not None:
            progress(done[0], total)

    h1 = simulator.h1_curve(_grid(alpha_max, params.n_points, params.alpha), step)
    e6 = simulator.e6_curve(_grid(delta_max, params.n_points, params.delta), step)
    widths = simulator.ci_widths()
    step(0, 0)
    target = params.power_target
    minimal = {
        "nominal": crossing(h1["alpha"], h1["power"], target),
        "nominal_low": crossing(h1["alpha"], h1["power_high"], target),
        "nominal_high": crossing(h1["alpha"], h1["power_low"], target),
        "size_adjusted": crossing(h1["alpha"], h1["power_size_adjusted"], target),
        "size_adjusted_low": crossing(h1["alpha"], h1["size_adjusted_high"], target),
        "size_adjusted_high": crossing(h1["alpha"], h1["size_adjusted_low"], target),
    }
    return DesignResult(params, calibration, simulator.n_layers, simulator.magnitudes.size, h1, e6, widths, minimal)


# -- calibration from a stored model ---------------------------------------------------------


def participation_ratio(deviations: np.ndarray) -> float:
    """(sum lambda)^2 / sum lambda^2 of the rows' second-moment matrix, from the smaller Gram
    (in the rows' own precision, then summed in float64)."""
    rows = np.asarray(deviations)
    gram = (rows @ rows.T if rows.shape[0] <= rows.shape[1] else rows.T @ rows).astype(np.float64)
    total = float(np.trace(gram))
    squares = float(np.sum(gram * gram))
    return total * total / squares if squares > 0 else math.nan


def calibrate(result, layers: Iterable[tuple[int, np.ndarray]], n_carriers: int) -> Calibration:
    """The noise of a model's core layers (:mod:`magdash.controls.simulate`) from its analysis.

    Args:
        result: the model's :class:`~magdash.variability.analysis.AnalysisResult` of V_eucl
            (its V, fits and core band).
        layers: (layer, vectors of shape (n_magnitudes, n_carriers, d)) for the core layers, in
            order; each is dropped once used.
        n_carriers: the stimulus set's carriers.
    """
    log_n = np.log(result.magnitudes)
    scatter = CarrierScatter()
    dims, taus, intercepts, residuals = [], [], [], []
    for layer, x in layers:
        v = result.values[CALIBRATION_MEASURE][layer]
        fit = result.fit(CALIBRATION_MEASURE, layer)
        keep, _ = scaling_mask(result.magnitudes, v, rules=result.params.fit_rules(drop_outliers=True))
        if not fit.has_fit or not np.isfinite(x).all():
            continue
        # float32: a 1000 x 20 x 4096 layer needs no float64 copy for a ratio
        deviations = (x - x.mean(axis=1, keepdims=True, dtype=np.float64).astype(np.float32))[keep]
        deviations /= v[keep][:, None, None].astype(np.float32)
        dimension = participation_ratio(deviations.reshape(-1, x.shape[2]))
        dimension = int(min(MAX_DIMENSION, max(1, round(dimension)))) if math.isfinite(dimension) else 1
        residual = np.full(v.shape, np.nan)
        residual[keep] = np.log(v[keep]) - fit.intercept - fit.alpha * log_n[keep]
        spread = float(np.nansum(residual**2) / (np.count_nonzero(keep) - 2))
        taus.append(math.sqrt(max(0.0, spread - scatter.variance(n_carriers, dimension))))
        dims.append(dimension)
        intercepts.append(fit.intercept)
        residuals.append(residual)
        del x, deviations
    if len(taus) < 2:
        raise AnalysisError(
            f"{result.model!r} has fewer than 2 core layers with a fit of V_eucl; the simulator needs them to calibrate"
        )
    matrix = np.array(residuals)
    both = np.isfinite(matrix).all(axis=0)
    correlation = np.corrcoef(matrix[:, both]) if np.count_nonzero(both) >= 3 else np.eye(len(taus))
    off_diagonal = correlation[~np.eye(len(taus), dtype=bool)]
    rho = float(np.clip(np.nanmean(off_diagonal), 0.0, 0.95)) if off_diagonal.size else 0.0
    return Calibration(tuple(taus), tuple(dims), tuple(intercepts), rho, n_carriers,
                       source=f"{result.model} on {result.stimuli}")
