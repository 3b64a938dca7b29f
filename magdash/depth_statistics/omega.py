"""Object integrity Omega, its isotropic-Gaussian baseline and its distribution per layer.

Alpay & Kilictas (arXiv 2601.19942) define the object integrity of a hidden state h in R^d as

    Omega(h) = 1 - ||h||_1 / (sqrt(d) ||h||_2),        0 <= Omega <= 1 - 1/sqrt(d).

Omega is 0 for a vector whose coordinates all have the same magnitude (maximally "diffuse")
and 1 - 1/sqrt(d) for a one-hot vector (maximally "object-like"). The order parameter at depth
gamma is the layer mean m(gamma) = E[Omega]. Bimodality of the per-layer distribution is tested
with Hartigan & Hartigan's dip test.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy.special import gammaln

from magdash.errors import AnalysisError

OMEGA_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)
# Omega lies in [0, 1); fixed edges make the histograms of all layers and models comparable.
OMEGA_HISTOGRAM_EDGES = np.linspace(0.0, 1.0, 101)


def omega(vectors: np.ndarray) -> np.ndarray:
    """Omega(h) = 1 - ||h||_1 / (sqrt(d) ||h||_2) along the last axis.

    Norms are accumulated in float64 so float32/float16 hidden states with large coordinates
    neither overflow nor lose digits. A zero vector has no direction: its Omega is NaN.
    """
    array = np.asarray(vectors)
    if array.ndim == 0 or array.shape[-1] == 0:
        raise AnalysisError("Omega needs vectors with at least one coordinate")
    dim = array.shape[-1]
    l1 = np.abs(array).sum(axis=-1, dtype=np.float64)
    l2 = np.sqrt(np.einsum("...i,...i->...", array, array, dtype=np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1.0 - l1 / (math.sqrt(dim) * l2)


def isotropic_omega_mean(dim: int) -> float:
    """Exact E[Omega] for h ~ N(0, sigma^2 I_d) (any sigma).

    Omega depends only on the direction u = h/||h||, uniform on the sphere, and
    ||h||_1/||h||_2 = ||u||_1 with E|u_1| = Gamma(d/2) / (sqrt(pi) Gamma((d+1)/2)), so

        E[Omega] = 1 - sqrt(d/pi) Gamma(d/2) / Gamma((d+1)/2)  ->  1 - sqrt(2/pi) ~ 0.2021.
    """
    if dim < 1:
        raise AnalysisError(f"dimension must be positive, got {dim}")
    return 1.0 - math.sqrt(dim / math.pi) * math.exp(gammaln(dim / 2) - gammaln((dim + 1) / 2))


def isotropic_omega_std(dim: int) -> float:
    """Exact standard deviation of Omega for an isotropic Gaussian vector in R^d.

    With u uniform on the sphere, E[u_i^2] = 1/d and E|u_i u_j| = E|g_i g_j| / E||g||^2 =
    2/(pi d) for i != j, so Var ||u||_1 = 1 + 2(d-1)/pi - (E||u||_1)^2 and
    sd(Omega) = sd(||u||_1)/sqrt(d), of order 1/sqrt(d).
    """
    mean_l1 = math.sqrt(dim) * (1.0 - isotropic_omega_mean(dim))
    variance = 1.0 + 2.0 * (dim - 1) / math.pi - mean_l1**2
    return math.sqrt(max(variance, 0.0) / dim)


@dataclass(frozen=True)
class OmegaSummary:
    """Distribution of Omega over the vectors of one layer (non-finite values left out)."""

    n: int
    mean: float
    std: float
    quantiles: dict[float, float]
    histogram: np.ndarray  # counts over OMEGA_HISTOGRAM_EDGES
    dip: float
    dip_p: float


def summarize_omega(values: np.ndarray) -> OmegaSummary:
    """Mean, SD (ddof=1), quantiles, histogram and dip test of a layer's Omega values."""
    finite = np.asarray(values, dtype=np.float64).ravel()
    finite = finite[np.isfinite(finite)]
    n = int(finite.size)
    if n == 0:
        nan = math.nan
        return OmegaSummary(0, nan, nan, dict.fromkeys(OMEGA_QUANTILES, nan),
                            np.zeros(OMEGA_HISTOGRAM_EDGES.size - 1, dtype=np.int64), nan, nan)
    dip, dip_p = dip_test(finite)
    return OmegaSummary(
        n=n,
        mean=float(finite.mean()),
        std=float(finite.std(ddof=1)) if n > 1 else math.nan,
        quantiles=dict(zip(OMEGA_QUANTILES, np.quantile(finite, OMEGA_QUANTILES).tolist(), strict=True)),
        histogram=np.histogram(finite, bins=OMEGA_HISTOGRAM_EDGES)[0],
        dip=dip,
        dip_p=dip_p,
    )


def dip_test(values: np.ndarray) -> tuple[float, float]:
    """Hartigan's dip statistic and its p-value (null: unimodal), NaN for fewer than 4 values.

    The p-value interpolates the tabulated null distribution of sqrt(n) * dip (the `diptest`
    package); beyond its largest table row (n = 72,000) the sqrt(n)-scaled statistic is
    asymptotically distributed, so the last row is used and the package's warning silenced.
    """
    try:
        import diptest
    except ImportError as error:  # pragma: no cover - diptest is a declared dependency
        raise AnalysisError(
            "the dip test needs the 'diptest' package: install it with `pip install diptest`"
        ) from error
    sample = np.asarray(values, dtype=np.float64).ravel()
    if sample.size < 4:
        return math.nan, math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        result: tuple[float, float] = diptest.diptest(sample)  # pyright: ignore[reportAssignmentType] - diptest is unannotated; without full_output it returns (dip, p)
    dip, p_value = result
    return float(dip), float(p_value)
