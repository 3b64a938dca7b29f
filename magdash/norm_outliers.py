"""Vectors of outsized norm: the one rule the store (which keeps every vector's norm as it is
written, like the Inf/NaN flags) and the analysis (which names flagged vectors in its warnings)
both apply (docs/science.md, "Artifacts the analysis looks for").

At each layer, a vector whose L2 norm exceeds ``OUTLIER_NORM_FACTOR`` (10) times the median norm
of that layer's vectors (of one stimulus set) is flagged. Number vectors of one layer differ in
norm by well under a factor of two in the models measured here; a factor of ten is what a
sequence's first position gives in decoders, where the model writes an attention sink (Xiao et
al. 2023, arXiv 2309.17453; "massive activations", Sun et al. 2024, arXiv 2402.17762): about
117x the other carriers' norm for SmolLM2 with the number at position 0. Such vectors make the
V of their magnitudes a thousand times the rest, and the PC1 of the centroids their axis.
Vectors holding Inf or NaN are not compared (their layer is left out whole, :mod:`magdash.overflow`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from magdash.params import ranges

OUTLIER_NORM_FACTOR = 10.0
"""A vector is an outlier when its norm exceeds this many times its layer's median norm."""


def vector_norms(vectors: np.ndarray) -> np.ndarray:
    """L2 norms over the last axis, the squares summed in float64 by ``einsum``'s buffered loop,
    so no float64 copy of the vectors is ever made (a write batch is 256 MB of float32, and the
    shard writers run beside the forward passes).

    Args:
        vectors: (n, n_layers, d) or (..., d) float vectors.
    Returns:
        float64 norms, the shape of ``vectors`` without its last axis.
    """
    vectors = np.asarray(vectors)
    return np.sqrt(np.einsum("...j,...j->...", vectors, vectors, dtype=np.float64))


def outsized(norms: np.ndarray, factor: float = OUTLIER_NORM_FACTOR) -> tuple[np.ndarray, float]:
    """Which of one layer's norms exceed ``factor`` x their median, and that median.

    Args:
        norms: every norm of one layer (any shape); non-finite ones are neither flagged nor
            part of the median.
        factor: the multiple of the median norm above which a vector is flagged.
    Returns:
        (mask of ``norms``' shape, the median); nothing is flagged when the median is not positive.
    """
    norms = np.asarray(norms, dtype=np.float64)
    finite = np.isfinite(norms)
    median = float(np.median(norms[finite])) if finite.any() else float("nan")
    if not median > 0:
        return np.zeros(norms.shape, dtype=bool), median
    return finite & (norms > factor * median), median


def outsized_warning(magnitudes: Sequence[int], layers: Sequence[int], largest_ratio: float, remedy: str) -> str:
    """What the analysis and the extraction say of one carrier's flagged vectors.

    Args:
        magnitudes: the magnitude of each flagged vector.
        layers: the layer of each flagged vector.
        largest_ratio: the largest norm / median among them.
        remedy: what the reader can do, appended after a semicolon.
    """
    return (f"{len(magnitudes)} vector(s) of magnitudes {ranges(magnitudes)} at layers {ranges(layers)} have a "
            f"norm over {OUTLIER_NORM_FACTOR:g}x their layer's median (up to {largest_ratio:,.0f}x), as at an "
            f"attention sink; {remedy}")
