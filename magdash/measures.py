"""Variability of a magnitude's representation across carrier sentences (Cacioli, arXiv 2604.04469).

Every measure takes the vectors of one layer, ``x`` of shape ``(n_magnitudes, n_carriers, d)``,
where ``x[n, c]`` is the hidden state at the number token of magnitude ``n`` in carrier ``c``,
and returns one value per magnitude, ``V`` of shape ``(n_magnitudes,)``. With ``C`` carriers and
the centroid ``m[n] = mean_c x[n, c]``:

- ``v_eucl``      V(n) = mean_c ||x[n,c] - m[n]||                    (primary, "raw")
- ``v_residual``  V_eucl after removing sentence identity: s[c] = mean_n x[n,c] - grand mean,
                  x'[n,c] = x[n,c] - s[c]                            (co-primary)
- ``v_proj``      V(n) = SD (ddof=1) over c of x[n,c] . u, u = PC1 of the centred centroids
                  of this layer (an SD, not a variance)
- ``v_pairwise``  mean over carrier pairs c < c' of ||x[n,c] - x[n,c']||
- ``v_trace``     sum_c ||x[n,c] - m[n]||^2 / (C - 1)  (trace of the carrier covariance)
- ``cv``          V_eucl(n) / ||m[n]||
- ``on_axis_variance``   variance (ddof=1) over c of (x[n,c] - m[n]) . u   (E4; = v_proj^2)
- ``off_axis_variance``  mean_c ||(x[n,c] - m[n]) - ((x[n,c] - m[n]) . u) u||^2   (E4)

Stored vectors are float32; every sum here runs in float64, one block of magnitudes at a time,
so that a 1000-magnitude layer never needs a full float64 copy in memory. The magnitude axis u
comes from an SVD of the small centroid matrix (n x d), never from a d x d covariance.

Adding a measure is one function with the signature ``f(x) -> V`` plus one entry in
:data:`MEASURES`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from magdash.errors import AnalysisError

Measure = Callable[[np.ndarray], np.ndarray]

# Float64 elements per block of magnitudes (about 32 MB): bounds the temporary copies.
_BLOCK_ELEMENTS = 4_000_000


def _check_layer(x: np.ndarray, min_carriers: int = 2) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 3:
        raise AnalysisError(
            f"expected layer vectors of shape (n_magnitudes, n_carriers, d), got shape {x.shape}"
        )
    if x.shape[1] < min_carriers:
        raise AnalysisError(
            f"variability needs at least {min_carriers} carrier sentences, got {x.shape[1]}"
        )
    return x


def _blocks(x: np.ndarray) -> Iterator[tuple[slice, np.ndarray]]:
    """Yield ``(rows, block)``: consecutive magnitudes of ``x`` as float64 arrays."""
    per_magnitude = max(1, x.shape[1] * x.shape[2])
    step = max(1, _BLOCK_ELEMENTS // per_magnitude)
    for start in range(0, x.shape[0], step):
        rows = slice(start, min(start + step, x.shape[0]))
        yield rows, np.asarray(x[rows], dtype=np.float64)


def _deviations(block: np.ndarray) -> np.ndarray:
    """x[n, c] - m[n] for a float64 block, exactly zero when a magnitude's carriers coincide.

    Subtracting the first carrier before averaging removes the large common part of the
    vectors first: identical vectors (a context-free embedding layer) then give exactly 0
    rather than rounding noise that a log-log fit would mistake for data.
    """
    shifted = block - block[:, :1]
    return shifted - shifted.mean(axis=1, keepdims=True)


def centroids(x: np.ndarray) -> np.ndarray:
    """Centroid of each magnitude over carriers, ``m[n] = mean_c x[n, c]``: shape (n, d), float64."""
    x = _check_layer(x, min_carriers=1)
    out = np.empty((x.shape[0], x.shape[2]), dtype=np.float64)
    for rows, block in _blocks(x):
        out[rows] = block.mean(axis=1)
    return out


def magnitude_axis(centroid_matrix: np.ndarray) -> np.ndarray:
    """PC1 of the centred centroids: the unit vector u of largest variance among ``m[n]``.

    Computed from the SVD of the (n x d) centred centroid matrix, ``M - mean = U S V^T``,
    ``u = V[0]``. The sign of a principal axis is arbitrary; here it is chosen so that the
    coordinate of the last centroid is at least that of the first (for ascending magnitudes,
    larger numbers lie on the positive side). Measures that use u only through squares or SDs
    do not depend on the sign.
    """
    centred = np.asarray(centroid_matrix, dtype=np.float64)
    centred = centred - centred.mean(axis=0, keepdims=True)
    if centred.shape[0] < 2 or not np.any(centred):
        # No spread between centroids: every direction is equally "PC1"; use a fixed one so the
        # projection measures stay defined (they then report the spread along that axis).
        axis = np.zeros(centred.shape[1])
        axis[0] = 1.0
        return axis
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    axis = vt[0]
    coordinates = centred @ axis
    if coordinates[-1] < coordinates[0]:
        axis = -axis
    return axis


def v_eucl(x: np.ndarray) -> np.ndarray:
    """V_eucl(n) = mean over carriers of the Euclidean distance to the magnitude's centroid."""
    x = _check_layer(x)
    out = np.empty(x.shape[0])
    for rows, block in _blocks(x):
        deviations = _deviations(block)
        out[rows] = np.sqrt(np.einsum("ncd,ncd->nc", deviations, deviations)).mean(axis=1)
    return out


def sentence_offsets(x: np.ndarray) -> np.ndarray:
    """Sentence identity s[c] = mean_n x[n, c] - grand mean: shape (n_carriers, d), float64."""
    x = _check_layer(x)
    carrier_sums = np.zeros((x.shape[1], x.shape[2]))
    for _, block in _blocks(x):
        carrier_sums += block.sum(axis=0)
    carrier_means = carrier_sums / x.shape[0]
    return carrier_means - carrier_means.mean(axis=0, keepdims=True)


def v_residual(x: np.ndarray) -> np.ndarray:
    """V_eucl after subtracting each carrier's sentence offset s[c] from all its vectors.

    A sentence that shifts every number by the same vector inflates V_eucl at every magnitude
    equally; removing ``s[c]`` leaves only the magnitude-specific scatter.
    """
    x = _check_layer(x)
    offsets = sentence_offsets(x)
    out = np.empty(x.shape[0])
    for rows, block in _blocks(x):
        deviations = _deviations(block - offsets[np.newaxis])
        out[rows] = np.sqrt(np.einsum("ncd,ncd->nc", deviations, deviations)).mean(axis=1)
    return out


def _projections(x: np.ndarray, axis: np.ndarray | None) -> np.ndarray:
    """Coordinates (x[n, c] - m[n]) . u on the magnitude axis, shape (n, C).

    Centring does not change an SD or a variance over carriers; it makes them exactly 0 when
    the carriers coincide.
    """
    if axis is None:
        axis = magnitude_axis(centroids(x))
    out = np.empty(x.shape[:2])
    for rows, block in _blocks(x):
        out[rows] = _deviations(block) @ axis
    return out


def v_proj(x: np.ndarray, axis: np.ndarray | None = None) -> np.ndarray:
    """V_proj(n) = SD (ddof=1) over carriers of the projection of x[n, c] on PC1 of the centroids.

    ``axis`` may pass a precomputed :func:`magnitude_axis` to avoid a second SVD.
    """
    x = _check_layer(x)
    return _projections(x, axis).std(axis=1, ddof=1)


def v_pairwise(x: np.ndarray) -> np.ndarray:
    """Mean Euclidean distance over all carrier pairs c < c' of one magnitude.

    Distances come from the Gram matrix of the deviations from the centroid (translation does
    not change a distance, and centring first avoids cancellation between large norms).
    """
    x = _check_layer(x)
    n_carriers = x.shape[1]
    upper_i, upper_j = np.triu_indices(n_carriers, k=1)
    out = np.empty(x.shape[0])
    for rows, block in _blocks(x):
        deviations = _deviations(block)
        gram = deviations @ deviations.transpose(0, 2, 1)
        squared_norms = np.einsum("ncc->nc", gram)
        squared = (
            squared_norms[:, upper_i] + squared_norms[:, upper_j] - 2.0 * gram[:, upper_i, upper_j]
        )
        out[rows] = np.sqrt(np.clip(squared, 0.0, None)).mean(axis=1)
    return out


def v_trace(x: np.ndarray) -> np.ndarray:
    """Trace of the carrier covariance: sum_c ||x[n,c] - m[n]||^2 / (C - 1)."""
    x = _check_layer(x)
    out = np.empty(x.shape[0])
    for rows, block in _blocks(x):
        deviations = _deviations(block)
        out[rows] = np.einsum("ncd,ncd->n", deviations, deviations) / (x.shape[1] - 1)
    return out


def cv(x: np.ndarray) -> np.ndarray:
    """Coefficient of variation V_eucl(n) / ||m[n]|| (NaN where the centroid is the zero vector)."""
    x = _check_layer(x)
    norms = np.linalg.norm(centroids(x), axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(norms > 0, v_eucl(x) / norms, np.nan)


def on_axis_variance(x: np.ndarray, axis: np.ndarray | None = None) -> np.ndarray:
    """E4 on-axis variance: variance (ddof=1) over carriers of the deviations' PC1 coordinate."""
    x = _check_layer(x)
    return _projections(x, axis).var(axis=1, ddof=1)


def off_axis_variance(x: np.ndarray, axis: np.ndarray | None = None) -> np.ndarray:
    """E4 off-axis variance: mean over carriers of ||deviation||^2 minus its PC1 part squared.

    ``||e - (e.u) u||^2 = ||e||^2 - (e.u)^2`` for a unit vector u, so no d-dimensional residual
    is formed. Divides by C (a mean of squared norms), as the paper defines it.
    """
    x = _check_layer(x)
    if axis is None:
        axis = magnitude_axis(centroids(x))
    out = np.empty(x.shape[0])
    for rows, block in _blocks(x):
        deviations = _deviations(block)
        squared_norms = np.einsum("ncd,ncd->nc", deviations, deviations)
        on_axis = deviations @ axis
        out[rows] = np.clip(squared_norms - on_axis**2, 0.0, None).mean(axis=1)
    return out


MEASURES: dict[str, Measure] = {
    "eucl": v_eucl,
    "residual": v_residual,
    "proj": v_proj,
    "pairwise": v_pairwise,
    "trace": v_trace,
    "cv": cv,
    "on_axis": on_axis_variance,
    "off_axis": off_axis_variance,
}
"""Every variability measure by name; a new measure is one function ``f(x) -> V`` and one entry."""

AXIS_MEASURES = frozenset({"proj", "on_axis", "off_axis"})
"""Measures that accept ``axis=`` (a precomputed :func:`magnitude_axis`) to share one SVD."""


def compute_measure(name: str, x: np.ndarray, *, axis: np.ndarray | None = None) -> np.ndarray:
    """Compute the registered measure ``name`` on one layer, reusing ``axis`` where it applies."""
    try:
        function = MEASURES[name]
    except KeyError:
        known = ", ".join(sorted(MEASURES))
        raise AnalysisError(f"unknown measure {name!r}; choose from {known}") from None
    if name in AXIS_MEASURES and axis is not None:
        return function(x, axis=axis)
    return function(x)
