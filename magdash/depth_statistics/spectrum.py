"""Covariance spectra of hidden states against the Marchenko-Pastur noise law.

Alpay & Kilictas (arXiv 2601.19942) describe a "liquid" regime whose covariance spectrum looks
like a Marchenko-Pastur (MP) bulk and a "solid" one with outlier eigenvalues above it. For N
centred vectors in R^d, the sample covariance S = Xc^T Xc / n with n = N - 1 degrees of freedom
(centring uses one) has p = min(d, n) non-zero eigenvalues. Pure noise of variance sigma^2 gives

    aspect ratio   q = d / n
    bulk edges     lambda_-+ = sigma^2 (1 -+ sqrt(q))^2
    density        f(x) = max(1, q) sqrt((lambda_+ - x)(x - lambda_-)) / (2 pi sigma^2 q x)

where f is the density of the non-zero eigenvalues: for q > 1 the d - n zero eigenvalues are
dropped and the rest follow the law of the companion n x n Gram matrix, whose edges are the
same. Spikes are eigenvalues above the largest-eigenvalue fluctuation of such noise:
Johnstone's (2001) Tracy-Widom scaling with Ma's (2012) half-integer corrections,

    a = sqrt(n - 1/2), b = sqrt(d - 1/2),  mu = (a + b)^2,  s = (a + b)(1/a + 1/b)^(1/3),
    threshold = sigma^2 (mu + t_level s) / n,   t_0.99 = 2.0234 (TW1 99% quantile),

and the Tracy-Widom margin is threshold - lambda_+.
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import scipy.linalg

from magdash.depth_statistics.depth_params import TRACY_WIDOM_1_QUANTILES

# Quantiles of the Tracy-Widom law of order 1 (real case), from Tracy & Widom's tables.
# Below this size an eigendecomposition takes well under a second with scipy: not worth
# importing torch (seconds) for its GPU or its faster CPU LAPACK.
LARGE_EIGEN_MIN_DIM = 1024
_MP_GRID_POINTS = 4097


@dataclass(frozen=True)
class SpectrumFit:
    """Marchenko-Pastur fit and shape summaries of one layer's covariance spectrum.

    ``largest_gap`` is the largest difference between consecutive eigenvalues (sorted
    descending) in units of the fitted sigma^2, and ``gap_rank`` the number of eigenvalues
    above it. ``converged`` is False when the robust fit stopped at its ``cap`` (half of the
    spectrum called spikes), ran out of iterations or had too few eigenvalues: the spectrum is
    then not an MP bulk with a few outliers, so there is no fit to report. ``sigma2``,
    ``mp_edge``, ``tw_margin`` and ``largest_gap`` are then NaN (the values the iteration
    stopped at depend on the stopping rule, not on the spectrum), :attr:`spike_count` is NaN
    rather than the cap, and :attr:`unfitted_reason` says why. ``n_spikes`` is where the
    iteration stopped and ``iterations`` how many rounds it ran.
    """

    dim: int
    n_dof: int
    rank: int
    q: float
    sigma2: float
    mp_edge: float
    tw_margin: float
    n_spikes: int
    largest_gap: float
    gap_rank: int
    effective_rank: float
    participation_ratio: float
    converged: bool
    cap: int = 0
    iterations: int = 0

    @property
    def spike_threshold(self) -> float:
        return self.mp_edge + self.tw_margin

    @property
    def capped(self) -> bool:
        """True when the fit stopped because the spike count reached the cap."""
        return self.cap > 0 and self.n_spikes >= self.cap

    @property
    def spike_count(self) -> float:
        """The spike count where the fit converged, NaN where it did not (never the cap)."""
        return float(self.n_spikes) if self.converged else math.nan

    @property
    def unfitted_reason(self) -> str:
        """Why there is no fit ("not fitted: ..."), or "" for a fit that converged."""
        if self.converged:
            return ""
        if self.n_dof < 1 or self.rank < 2:
            return f"not fitted: {self.rank} non-zero eigenvalue(s) from {self.n_dof + 1} vector(s)"
        if self.capped:
            return (f"not fitted: the stopping rule hit its cap after {self.iterations} iterations "
                    f"(half of the {self.rank} non-zero eigenvalues called spikes), so there is no bulk")
        return f"not fitted: the spike set still changed after {self.iterations} iterations"


def marchenko_pastur_edges(q: float, sigma2: float = 1.0) -> tuple[float, float]:
    """Lower and upper edges sigma^2 (1 -+ sqrt(q))^2 of the MP bulk."""
    root = math.sqrt(q)
    return sigma2 * (1.0 - root) ** 2, sigma2 * (1.0 + root) ** 2


def marchenko_pastur_density(x: np.ndarray, q: float, sigma2: float = 1.0) -> np.ndarray:
    """Density of the non-zero MP eigenvalues (integrates to 1 over the bulk, 0 outside)."""
    lower, upper = marchenko_pastur_edges(q, sigma2)
    x = np.asarray(x, dtype=np.float64)
    inside = (x > lower) & (x < upper)
    density = np.zeros_like(x)
    xi = x[inside]
    density[inside] = (
        max(1.0, q) * np.sqrt((upper - xi) * (xi - lower)) / (2.0 * math.pi * sigma2 * q * xi)
    )
    return density


@lru_cache(maxsize=256)
def _unit_mp_quadrature(q: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes x and weights of a quadrature over the non-zero MP law with sigma^2 = 1.

    The substitution x = lambda_- + (lambda_+ - lambda_-) sin^2(t), t in [0, pi/2], turns the
    density's square-root edges (and its 1/sqrt(x) pole at q = 1) into the smooth integrand
    sin^2 t cos^2 t / x(t), so the trapezoid rule on a uniform t grid is accurate to ~1e-7.
    """
    lower, upper = marchenko_pastur_edges(q)
    t = np.linspace(0.0, math.pi / 2, _MP_GRID_POINTS)
    x = lower + (upper - lower) * np.sin(t) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        integrand = np.where(
            x > 0, (upper - lower) ** 2 * (np.sin(t) * np.cos(t)) ** 2 / x, upper * np.cos(t) ** 2
        )
    weights = integrand.copy()
    weights[[0, -1]] /= 2
    return x, weights / weights.sum()


def tracy_widom_threshold(dim: int, n_dof: int, level: float = 0.99) -> float:
    """Largest-eigenvalue threshold of a null covariance with sigma^2 = 1 at the given level."""
    if level not in TRACY_WIDOM_1_QUANTILES:
        raise ValueError(f"Tracy-Widom level must be one of {sorted(TRACY_WIDOM_1_QUANTILES)}")
    a, b = math.sqrt(n_dof - 0.5), math.sqrt(dim - 0.5)
    mu = (a + b) ** 2
    scale = (a + b) * (1.0 / a + 1.0 / b) ** (1.0 / 3.0)
    return (mu + TRACY_WIDOM_1_QUANTILES[level] * scale) / n_dof


def effective_rank(eigenvalues: np.ndarray) -> float:
    """Roy & Vetterli (2007): exp of the Shannon entropy of the normalised eigenvalues."""
    lam = np.asarray(eigenvalues, dtype=np.float64)
    lam = lam[lam > 0]
    if lam.size == 0:
        return math.nan
    p = lam / lam.sum()
    return float(np.exp(-np.sum(p * np.log(p))))


def participation_ratio(eigenvalues: np.ndarray) -> float:
    """(sum lambda)^2 / sum lambda^2: d for an isotropic spectrum, 1 for a single direction."""
    lam = np.asarray(eigenvalues, dtype=np.float64)
    squares = float(np.sum(lam**2))
    return float(lam.sum() ** 2 / squares) if squares > 0 else math.nan


def fit_spectrum(
    eigenvalues: np.ndarray, dim: int, count: int, *, level: float = 0.99, max_iter: int = 100
) -> SpectrumFit:
    """Robust MP fit, spike count and shape summaries of the non-zero eigenvalues.

    sigma^2 is fitted to the bulk only, so spikes cannot inflate it: starting with every
    eigenvalue in the bulk, sigma^2 = mean(bulk) / E_MP[x] (E_MP[x] = max(1, q) for the
    non-zero eigenvalues at sigma^2 = 1), the eigenvalues above the Tracy-Widom threshold become
    spikes and leave the bulk, and this repeats until the spike set stops changing. Each round
    can only lower the bulk mean, so the spike count grows monotonically and the loop ends; it
    is capped at half of the spectrum (``converged`` False), beyond which "bulk" is
    meaningless, and a fit that did not converge reports no sigma^2, edge, margin or gap (NaN:
    :class:`SpectrumFit`). The mean/MP-mean relation is used rather than the median: on pure noise the
    median-based sigma^2 fluctuates twice as much (about 1% at d, N ~ 300), which pushed the
    false-spike rate to 2% at the nominal 1% level, while the bulk mean, positively correlated
    with the largest eigenvalue, keeps it at about 0.8% (see tests/test_phase.py).
    """
    lam = np.asarray(eigenvalues, dtype=np.float64)
    lam = np.sort(lam[np.isfinite(lam) & (lam > 0)])[::-1]
    n_dof = count - 1
    nan = math.nan
    if n_dof < 1 or lam.size < 2 or dim < 1:
        return SpectrumFit(dim, max(n_dof, 0), int(lam.size), nan, nan, nan, nan, 0, nan, 0,
                           effective_rank(lam), participation_ratio(lam), False)
    q = dim / n_dof
    unit_mean = max(1.0, q)
    unit_threshold = tracy_widom_threshold(dim, n_dof, level)
    cap = lam.size // 2
    n_spikes, converged, iterations, sigma2 = 0, False, 0, nan
    while iterations < max_iter:
        iterations += 1
        sigma2 = float(np.mean(lam[n_spikes:])) / unit_mean
        found = min(int(np.count_nonzero(lam > sigma2 * unit_threshold)), cap)
        if found == n_spikes:
            converged = found < cap
            break
        n_spikes = found
    gaps = lam[:-1] - lam[1:]
    gap_index = int(np.argmax(gaps))
    if not converged:
        sigma2 = nan
    edge = marchenko_pastur_edges(q, sigma2)[1]
    return SpectrumFit(
        dim=dim,
        n_dof=n_dof,
        rank=int(lam.size),
        q=q,
        sigma2=sigma2,
        mp_edge=edge,
        tw_margin=sigma2 * unit_threshold - edge,
        n_spikes=n_spikes,
        largest_gap=float(gaps[gap_index] / sigma2),
        gap_rank=gap_index + 1,
        effective_rank=effective_rank(lam),
        participation_ratio=participation_ratio(lam),
        converged=converged,
        cap=cap,
        iterations=iterations,
    )


def isotropic_spectrum_baseline(dim: int, count: int) -> dict[str, float]:
    """Expected spectrum summaries of N = count isotropic Gaussian vectors in R^dim (MP law).

    With m = min(d, n) non-zero eigenvalues following the MP law (sigma^2 = 1):
    participation ratio = m E[x]^2 / E[x^2] = d / (1 + q) and effective rank =
    m E[x] exp(-E[x log x] / E[x]), evaluated by quadrature; no spikes.
    """
    n_dof = count - 1
    if n_dof < 1:
        return {"n_spikes": 0.0, "effective_rank": math.nan, "participation_ratio": math.nan}
    q = dim / n_dof
    x, weights = _unit_mp_quadrature(float(q))
    mean_x = float(np.sum(weights * x))
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_xlogx = float(np.sum(weights * np.where(x > 0, x * np.log(x), 0.0)))
    m = min(dim, n_dof)
    return {
        "n_spikes": 0.0,
        "effective_rank": m * mean_x * math.exp(-mean_xlogx / mean_x),
        "participation_ratio": dim / (1.0 + q),
    }


def symmetric_eigenvalues(matrix: np.ndarray) -> np.ndarray:
    """Eigenvalues (ascending, float64) of a symmetric matrix, on a CUDA GPU when one is there.

    Large matrices go through torch.linalg.eigvalsh (imported here, lazily, and only for them,
    so browsing small models never loads torch): on a CUDA GPU when one is present, otherwise
    on the CPU with torch's LAPACK (MKL on x86), which measured 2.3 s single-threaded for a
    4096 x 4096 float64 matrix against 5.9 s for numpy/scipy's OpenBLAS and, unlike OpenBLAS,
    does not slow down several-fold when the cores are shared. Without torch, scipy is used.
    """
    matrix = np.ascontiguousarray(matrix, dtype=np.float64)
    if matrix.shape[0] >= LARGE_EIGEN_MIN_DIM and importlib.util.find_spec("torch") is not None:
        import torch

        tensor = torch.from_numpy(matrix)
        if torch.cuda.is_available():
            tensor = tensor.cuda()
        return torch.linalg.eigvalsh(tensor).cpu().numpy()
    return scipy.linalg.eigvalsh(matrix, check_finite=False)


def gram_eigenvalues(vectors: np.ndarray) -> np.ndarray:
    """Non-zero covariance eigenvalues (descending) from the N x N Gram matrix.

    Xc Xc^T / (N - 1) and Xc^T Xc / (N - 1) share their non-zero eigenvalues, and the Gram
    matrix is the smaller one when N < d. Centring leaves rank at most N - 1, so at most that
    many eigenvalues are returned; those below float32's resolution (e.g. from repeated vectors:
    :func:`_nonzero_descending`) are dropped.
    """
    centred = np.asarray(vectors, dtype=np.float64)
    centred = centred - centred.mean(axis=0)
    count = centred.shape[0]
    gram = centred @ centred.T / (count - 1)
    variances = np.einsum("ij,ij->j", centred, centred) / (count - 1)
    return _nonzero_descending(symmetric_eigenvalues(gram), min(count - 1, centred.shape[1]), variances)


def covariance_eigenvalues(covariance: np.ndarray, count: int) -> np.ndarray:
    """Non-zero eigenvalues (descending) of a d x d sample covariance of ``count`` vectors."""
    return _nonzero_descending(symmetric_eigenvalues(covariance), min(count - 1, len(covariance)),
                               np.diag(covariance))


def _nonzero_descending(ascending: np.ndarray, max_rank: int, variances: np.ndarray) -> np.ndarray:
    """The eigenvalues above the resolution of float32 vectors, descending, at most ``max_rank``.

    The stored vectors are float32 (and the covariance path multiplies them in float32), so
    the rounding in a covariance entry is about float32's epsilon times the variances it joins,
    and the eigenvalues of a rank-deficient layer's null space (N > d vectors spanning fewer
    than d directions, as the embeddings do, one vector per distinct token) come out near 1e-9
    of the total variance instead of zero. Kept, hundreds of them became the Marchenko-Pastur
    fit's bulk and made every real eigenvalue a spike. They are cut at epsilon_32 x d x the
    median per-dimension variance (``variances``): the median, so that a few massive dimensions,
    whose variance can be 1e7 times the rest, do not raise the cut into the real bulk. The
    float64 cut (size x epsilon x the largest) still applies when it is the larger.
    """
    values = np.asarray(ascending, dtype=np.float64)
    lam = values[::-1][: max(max_rank, 0)]
    if lam.size == 0:
        return lam
    resolution = len(variances) * float(np.median(variances)) * float(np.finfo(np.float32).eps)
    tolerance = max(lam[0] * max(len(values), 1) * np.finfo(np.float64).eps, resolution)
    return lam[lam > tolerance]
