"""The coordinates a probe reads: every direction the vectors span (exact), or their top
principal components (large designs).

With X the layer's vectors as rows (n x d) and X_c = X - mean, the probe is fitted on
``Z = X_c V / s`` where V (d x k) has orthonormal columns and s^2 is the layer's total variance
(``sum_j Var(x_j)``, ddof 1). Dividing by s makes the ridge penalties relative (the same alpha
means the same at every layer); a ridge coefficient b on Z is the direction ``w = V b / s`` in the
layer's d dimensions, and cosines between coefficients in Z are those between their directions.

**Exact** (at most ``exact_max_vectors`` vectors, or no more dimensions than ``n_components``):
V spans every direction in which the vectors vary (the eigenvectors of the smaller of
X_c X_c^T and X_c^T X_c with non-zero eigenvalue). Ridge penalises ||w||^2 and predicts with
x . w, and its solution lies in the span of its training rows; every vector lies in the span of
V, so the probe on Z gives exactly the predictions of the ridge probe on the raw vectors with
alpha * s^2, fold by fold. The basis only saves time: for 130 vectors in 4096 dimensions the
folds fit 129 coordinates instead of 4096.

**Reduced** (larger designs): V holds the top ``n_components`` principal components of the
magnitudes' centroids m[n] = mean_c x[n, c] (the eigenvectors of the centred centroids' Gram
matrix, as :func:`magdash.variability.measures.magnitude_axis` computes PC1, whose first one
is), and the probe is the ridge probe on the vectors' orthogonal projection onto that
subspace: the directions along which the magnitudes' mean vectors differ most, where a
magnitude code lives, with the carrier noise averaged down C-fold so that a weak code is not
lost below the noise (a PCA of single vectors would need the code's variance to clear the
noise bulk). The basis uses which vectors belong to one number token — the design — but never
the magnitudes' values or order, and the control task has the same grouping, so it favours
neither task. It is computed once per layer from all vectors, not refitted inside each fold
(the Gram matrix of 1,000 centroids costs a quarter of a second, times 25 folds): a held-out
carrier's vectors enter the centroids with weight 1/C, and a held-out magnitude's centroid is
among those that chose the subspace, though no label is. A held-out result then reads "the
code generalises to a context (or magnitude) whose unlabelled vectors helped choose the K
directions the probe may read"; the probe's weights are fitted on the training fold alone.
``variance_kept`` reports the share of the vectors' total variance the subspace holds (small:
the carrier noise is mostly outside it, by design).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg

# Eigenvalues below this fraction of the largest are the directions the vectors do not span
# (centring removes one; duplicated vectors others), whose eigenvectors are rounding noise.
_RANK_TOLERANCE = 1e-10
# Elements per block when the total variance of a large layer is summed.
_BLOCK_ELEMENTS = 4_000_000


@dataclass(frozen=True)
class FeatureBasis:
    """A layer's probe coordinates ``features`` (n x k, float64) and how to map back to d dimensions."""

    features: np.ndarray
    components: np.ndarray  # (k, d), orthonormal rows: V^T
    scale: float  # s, the square root of the layer's total variance
    exact: bool
    variance_kept: float  # share of the layer's total variance inside the basis

    @property
    def n_features(self) -> int:
        return self.features.shape[1]

    def direction(self, coefficients: np.ndarray) -> np.ndarray:
        """The unit vector in the layer's d dimensions of a ridge coefficient on the features
        (zero stays zero)."""
        vector = np.asarray(coefficients, dtype=np.float64) @ self.components
        norm = np.linalg.norm(vector)
        return vector / norm if norm > 0 else vector


def uses_exact(n_vectors: int, dim: int, exact_max_vectors: int, n_components: int) -> bool:
    """Whether a layer of ``n_vectors`` vectors in ``dim`` dimensions is probed exactly."""
    return n_vectors <= exact_max_vectors or min(n_vectors - 1, dim) <= n_components


def feature_basis(vectors: np.ndarray, centroids: np.ndarray, total_variance: float, *, exact_max_vectors: int,
                  n_components: int) -> FeatureBasis:
    """The probe coordinates of one layer's vectors.

    Args:
        vectors: (n_magnitudes, n_carriers, d), any float dtype.
        centroids, total_variance: their :func:`layer_moments`.
        exact_max_vectors, n_components: see :class:`~magdash.probes.probe_params.ProbeParams`.
    """
    rows = vectors.reshape(-1, vectors.shape[2])
    dim = rows.shape[1]
    if uses_exact(rows.shape[0], dim, exact_max_vectors, n_components):
        return _exact(rows)
    return _reduced(rows, centroids, total_variance, n_components)


def _top_eigenvectors(gram: np.ndarray, count: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``count`` largest eigenvalues (descending) of a symmetric matrix and their eigenvectors,
    dropping those the vectors do not span."""
    size = gram.shape[0]
    count = min(count, size)
    eigenvalues, vectors = scipy.linalg.eigh(gram, subset_by_index=[size - count, size - 1])
    eigenvalues, vectors = eigenvalues[::-1], vectors[:, ::-1]
    keep = eigenvalues > _RANK_TOLERANCE * max(eigenvalues[0], 0.0)
    return eigenvalues[keep], vectors[:, keep]


def centroid_components(centroids: np.ndarray, count: int) -> np.ndarray:
    """The top ``count`` principal axes of the centred centroids, (count, d) orthonormal rows,
    largest first; the first is :func:`~magdash.variability.measures.magnitude_axis` up to sign."""
    centred = np.asarray(centroids, dtype=np.float64)
    centred = centred - centred.mean(axis=0, keepdims=True)
    n, dim = centred.shape
    if n <= dim:
        eigenvalues, vectors = _top_eigenvectors(centred @ centred.T, count)
        return (centred.T @ vectors / np.sqrt(eigenvalues)).T
    return _top_eigenvectors(centred.T @ centred, count)[1].T


def _exact(rows: np.ndarray) -> FeatureBasis:
    centred = np.asarray(rows, dtype=np.float64)
    centred = centred - centred.mean(axis=0, keepdims=True)
    n, dim = centred.shape
    total = float(np.einsum("ij,ij->", centred, centred))
    if n <= dim:
        eigenvalues, vectors = _top_eigenvectors(centred @ centred.T, n)
        roots = np.sqrt(eigenvalues)
        components = (centred.T @ vectors / roots).T
        features = vectors * roots
    else:
        components = _top_eigenvectors(centred.T @ centred, dim)[1].T
        features = centred @ components.T
    scale = float(np.sqrt(total / max(n - 1, 1))) or 1.0
    return FeatureBasis(features / scale, components, scale, True, 1.0 if total > 0 else 0.0)


def layer_moments(vectors: np.ndarray) -> tuple[np.ndarray, float]:
    """The centroids m[n] (n_magnitudes, d) in float64 and the vectors' total variance
    sum_j Var(x_j) (ddof 1); NaN when a vector is not finite (its centroid is not either).

    The squares are taken about the first vector, not zero: residual streams have means far
    larger than their spread, and sum ||x||^2 - n ||mean||^2 would cancel most of its digits.
    Each vector's squared norm is summed in the vectors' precision (4096 terms: a relative error
    near 1e-6 in float32, for a number that only sets the units of the ridge penalty), the norms
    in float64, a block of magnitudes at a time, without a float64 copy of the layer.
    """
    n_magnitudes, n_carriers, dim = vectors.shape
    reference = np.array(vectors[0, 0], dtype=np.promote_types(vectors.dtype, np.float32))
    centroids = vectors.mean(axis=1, dtype=np.float64)
    if not np.isfinite(centroids).all():  # an Inf/NaN vector: the caller refuses the layer
        return centroids, math.nan
    step = max(1, _BLOCK_ELEMENTS // max(1, n_carriers * dim))
    precision = np.promote_types(vectors.dtype, np.float32)  # float16 squares would overflow
    squares = 0.0
    for start in range(0, n_magnitudes, step):
        block = (np.asarray(vectors[start:start + step], dtype=precision) - reference).reshape(-1, dim)
        squares += float(np.einsum("ij,ij->i", block, block).sum(dtype=np.float64))
    n = n_magnitudes * n_carriers
    shift = centroids.mean(axis=0) - reference
    return centroids, max(squares - n * float(shift @ shift), 0.0) / max(n - 1, 1)


def _reduced(rows: np.ndarray, centroids: np.ndarray, total: float, n_components: int) -> FeatureBasis:
    components = centroid_components(centroids, n_components)
    dtype = rows.dtype if rows.dtype in (np.float32, np.float64) else np.float64
    # In the vectors' own precision: a float64 copy of 20,000 x 4096 float32 vectors is 650 MB.
    features = np.asarray(rows @ components.T.astype(dtype), dtype=np.float64)
    features -= features.mean(axis=0)
    kept = float(features.var(axis=0, ddof=1).sum()) / total if total > 0 else 0.0
    scale = float(np.sqrt(total)) or 1.0
    return FeatureBasis(features / scale, components, scale, False, kept)
