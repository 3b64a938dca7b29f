"""Synthetic studies with a planted alpha: the generative model behind the design simulator.

The model (for V_eucl, the primary measure; Cacioli 2026). In core layer l, the vector of
magnitude n in carrier c is

    x[n, c] = mu(n) + sigma_l(n) z[n, c],   z ~ N(0, I_d) with d = d_l,
    log sigma_l(n) = beta_l + alpha_l log n + u_l(n),
    u_l(n) = tau_l (sqrt(rho) w(n) + sqrt(1 - rho) e_l(n)),   w, e ~ N(0, 1).

So V_eucl(n) = sigma_l(n) g_l(n), where g = mean_c ||z_c - zbar|| depends only on the number of
carriers C and the dimension d, and

    log V_eucl(n) = beta_l + alpha_l log n + u_l(n) + log g_l(n)       (*)

is a straight line in log n with two kinds of scatter: u, the magnitude-level spread that more
carriers do not average away, and log g, the carrier-level scatter, which shrinks as C grows.
Both are correlated across layers with the same rho (the same magnitude, in the same sentences,
is unusual at every depth): u through the shared w(n); log g through a Gaussian copula,
``log g_l(n) = G_l^-1(Phi(sqrt(rho) w'(n) + sqrt(1 - rho) e'_l(n)))`` with G_l the exact
distribution of log g for (C, d_l), which keeps each layer's law of g exact.

Calibration from a stored model (:func:`calibrate`), per core layer: d_l is the participation
ratio of the carrier deviations ``(x[n,c] - m[n]) / V_eucl(n)`` pooled over magnitudes,
``(sum lambda)^2 / sum lambda^2``, which gives an isotropic Gaussian the same relative
fluctuation of the squared norm (2 / d) as the model's anisotropic one; tau_l^2 is the residual
variance of log V_eucl around the layer's OLS fit minus Var(log g) at the stored C and d_l
(floored at 0); rho is the mean correlation of those residuals between core layers (floored at
0, capped at 0.95). beta_l is the fitted intercept. The stored model's own alpha is not used: alpha is planted.

Two ways to draw a study, with the same law for V_eucl: :func:`draw_log_v` draws (*) directly,
log g from a pool of exact draws of g for (C, d) (fast: a study is a few arrays), and
:func:`draw_vectors` draws the vectors x themselves, for the analysis engine
(:func:`magdash.variability.analysis.run_analysis`), with the same law in each layer (its
carrier noise is drawn afresh in every layer: only u is shared, so it is for per-layer checks
such as the coverage of a layer's CI). :func:`fit_alphas` is the analysis's OLS of
log V on log n with its 3x-median outlier rule and 5-point minimum, vectorised over studies and
layers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import special

from magdash.errors import AnalysisError
from magdash.variability.analysis_params import FitRules
from magdash.variability.fits import MIN_POINTS

MAX_DIMENSION = 1024
"""d above this changes Var(log g) by less than the pool's Monte Carlo error; it is capped."""
_POOL_SIZE = 20_000
_POOL_ELEMENTS = 40_000_000


@dataclass(frozen=True)
class Calibration:
    """Noise of the generative model per calibrated core layer (module docstring).

    ``tau`` and ``dimension`` (d_l) and ``intercept`` (beta_l) have one entry per layer;
    ``n_carriers`` is the C they were measured with; ``source`` says where they came from.
    """

    tau: tuple[float, ...]
    dimension: tuple[int, ...]
    intercept: tuple[float, ...]
    rho: float
    n_carriers: int
    source: str = "planted"

    def __post_init__(self) -> None:
        n = len(self.tau)
        if n == 0 or len(self.dimension) != n or len(self.intercept) != n:
            raise AnalysisError("a calibration needs tau, dimension and intercept for each of at least one layer")
        if min(self.tau) < 0 or min(self.dimension) < 1:
            raise AnalysisError("tau must be >= 0 and the dimension >= 1")
        if not 0 <= self.rho < 1:
            raise AnalysisError(f"rho must lie in [0, 1), got {self.rho}")
        object.__setattr__(self, "dimension", tuple(min(MAX_DIMENSION, int(d)) for d in self.dimension))

    @classmethod
    def planted(cls, n_layers: int, *, tau: float, dimension: int, rho: float = 0.0, n_carriers: int = 5) -> Calibration:
        """The same noise in every layer (for checks against theory)."""
        return cls((float(tau),) * n_layers, (int(dimension),) * n_layers, (0.0,) * n_layers, float(rho), n_carriers)

    @property
    def n_layers(self) -> int:
        return len(self.tau)

    def layers_for(self, n_layers: int) -> np.ndarray:
        """Which calibrated layer each of ``n_layers`` design layers copies: spread evenly."""
        if n_layers < 1:
            raise AnalysisError(f"a design needs at least one core layer, got {n_layers}")
        if n_layers == 1:
            return np.array([self.n_layers // 2])
        return np.rint(np.linspace(0, self.n_layers - 1, n_layers)).astype(int)


class CarrierScatter:
    """Exact draws of log g = log mean_c ||z_c - zbar|| for (C, d), pooled once per pair."""

    def __init__(self, seed: int = 0):
        self.seed = int(seed)
        self._pools: dict[tuple[int, int], np.ndarray] = {}
        self._sorted: dict[tuple[int, int], np.ndarray] = {}

    def pool(self, n_carriers: int, dimension: int) -> np.ndarray:
        key = (int(n_carriers), int(dimension))
        if key not in self._pools:
            if n_carriers < 2:
                raise AnalysisError(f"variability needs at least 2 carriers, got {n_carriers}")
            size = max(2_000, min(_POOL_SIZE, _POOL_ELEMENTS // (n_carriers * dimension)))
            generator = np.random.default_rng([self.seed, *key])
            pieces, done = [], 0
            step = max(1, _POOL_ELEMENTS // (8 * n_carriers * dimension))
            while done < size:
                rows = min(step, size - done)
                z = generator.standard_normal((rows, n_carriers, dimension))
                z -= z.mean(axis=1, keepdims=True)
                pieces.append(np.log(np.linalg.norm(z, axis=2).mean(axis=1)))
                done += rows
            self._pools[key] = np.concatenate(pieces)
        return self._pools[key]

    def variance(self, n_carriers: int, dimension: int) -> float:
        return float(np.var(self.pool(n_carriers, dimension), ddof=1))

    def quantiles(self, n_carriers: int, dimension: int, uniform: np.ndarray) -> np.ndarray:
        """log g at the probabilities ``uniform`` of its exact (pooled) distribution."""
        key = (int(n_carriers), int(dimension))
        if key not in self._sorted:
            self._sorted[key] = np.sort(self.pool(n_carriers, dimension))
        pool = self._sorted[key]
        index = np.minimum((uniform * pool.size).astype(np.int64), pool.size - 1)
        return pool[index]


def _structural(rng: np.random.Generator, tau: np.ndarray, rho: float, shape: tuple[int, int, int]) -> np.ndarray:
    """u (studies, layers, magnitudes): magnitude effects shared across layers with weight rho."""
    studies, layers, n = shape
    shared = rng.standard_normal((studies, 1, n))
    own = rng.standard_normal(shape)
    return tau[None, :, None] * (math.sqrt(rho) * shared + math.sqrt(1.0 - rho) * own)


def draw_log_v(
    calibration: Calibration,
    magnitudes: Sequence[float],
    *,
    alpha: float | np.ndarray,
    n_carriers: int,
    n_layers: int,
    n_studies: int,
    rng: np.random.Generator,
    scatter: CarrierScatter,
) -> np.ndarray:
    """log V_eucl of ``n_studies`` studies, shape (studies, layers, magnitudes), by (*)."""
    log_n = np.log(np.asarray(magnitudes, dtype=np.float64))
    chosen = calibration.layers_for(n_layers)
    tau = np.asarray(calibration.tau)[chosen]
    beta = np.asarray(calibration.intercept)[chosen]
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (n_layers,))
    shape = (n_studies, n_layers, log_n.size)
    log_v = beta[None, :, None] + alpha[None, :, None] * log_n[None, None, :]
    log_v = log_v + _structural(rng, tau, calibration.rho, shape)
    uniform = special.ndtr(_structural(rng, np.ones(n_layers), calibration.rho, shape))
    for position, layer in enumerate(chosen):
        log_v[:, position] += scatter.quantiles(n_carriers, calibration.dimension[layer], uniform[:, position])
    return log_v


def draw_vectors(
    calibration: Calibration,
    magnitudes: Sequence[float],
    *,
    alpha: float,
    n_carriers: int,
    n_layers: int,
    rng: np.random.Generator,
) -> list[np.ndarray]:
    """The vectors of one study, one (n_magnitudes, C, d_l) array per layer, by the model."""
    log_n = np.log(np.asarray(magnitudes, dtype=np.float64))
    chosen = calibration.layers_for(n_layers)
    tau = np.asarray(calibration.tau)[chosen]
    u = _structural(rng, tau, calibration.rho, (1, n_layers, log_n.size))[0]
    layers = []
    for position, layer in enumerate(chosen):
        d = calibration.dimension[layer]
        sigma = np.exp(calibration.intercept[layer] + alpha * log_n + u[position])
        centre = np.outer(log_n, np.linspace(1.0, 2.0, d))  # any centroids: V does not see them
        z = rng.standard_normal((log_n.size, n_carriers, d))
        layers.append(centre[:, None, :] + sigma[:, None, None] * z)
    return layers


@dataclass(frozen=True)
class AlphaFits:
    """OLS of log V on log n per (study, layer): slope, its SE and the points used."""

    alpha: np.ndarray
    se: np.ndarray
    n_points: np.ndarray


_EUCL_RULES = FitRules(drop_outliers=True, n_boot=0)
"""The engine's fit of V_eucl without an interval: the outlier rule at its default factor."""


def fit_alphas(magnitudes: Sequence[float], log_v: np.ndarray, *, rules: FitRules = _EUCL_RULES) -> AlphaFits:
    """The analysis's scaling fit over the last axis of ``log_v`` (any leading shape).

    Points: with ``rules.drop_outliers``, V above ``rules.outlier_factor`` x the median V of its row
    are dropped (:func:`magdash.variability.fits.outlier_mask`); fewer than 5 points gives NaN.
    The slope and SE equal :func:`magdash.variability.fits.ols` on the kept points (the bootstrap
    fields of ``rules`` are not used).
    """
    x = np.log(np.asarray(magnitudes, dtype=np.float64))
    log_v = np.asarray(log_v, dtype=np.float64)
    weights = np.isfinite(log_v).astype(np.float64)
    if rules.drop_outliers:
        # the median of V itself, as the analysis's rule takes it (with an even count of
        # magnitudes the median of log V would be the geometric mean of the middle two)
        median = np.nanmedian(np.exp(log_v), axis=-1, keepdims=True)
        weights *= ~(np.exp(log_v) > rules.outlier_factor * median)
    y = np.where(weights > 0, log_v, 0.0)
    count = weights.sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_x = (weights @ x) / count
        mean_y = (weights * y).sum(axis=-1) / count
        xc = x - mean_x[..., None]
        yc = y - mean_y[..., None]
        sxx = (weights * xc * xc).sum(axis=-1)
        sxy = (weights * xc * yc).sum(axis=-1)
        syy = (weights * yc * yc).sum(axis=-1)
        slope = sxy / sxx
        rss = np.maximum(syy - slope * sxy, 0.0)
        se = np.sqrt(rss / (count - 2) / sxx)
    bad = (count < MIN_POINTS) | ~(sxx > 0)
    slope = np.where(bad, np.nan, slope)
    se = np.where(bad, np.nan, se)
    return AlphaFits(slope, se, np.asarray(count).astype(int))
