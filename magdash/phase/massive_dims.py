"""Massive-activation dimensions of hidden states, and the vectors without them or standardised.

Decoder LMs carry a few hidden dimensions whose activations are orders of magnitude larger
than the rest ("massive activations", Sun, Chen, Kolter & Liu 2024, arXiv 2402.17762). They
dominate any norm of h: Omega = 1 - ||h||_1 / (sqrt(d) ||h||_2) of a vector with k such
coordinates is close to that of a k-sparse vector whatever the other d - k coordinates do,
so a high Omega can be k coordinates rather than a sparse "object".

Rule (per layer, over the layer's N vectors h_i): with a_j = mean_i |h_ij|, dimension j is
massive when

    a_j > MASSIVE_RATIO x median_j a_j,        MASSIVE_RATIO = 10 by default.

For isotropic noise a_j varies by a few percent across j, so 10x never fires on noise, while
massive activations are 100-1000x the median (Sun et al.). The share of ||h||^2 they hold is
sum_{j in M} E[h_j^2] / sum_j E[h_j^2] (a ratio of means over the layer's vectors).

Three views of the vectors (:data:`MASSIVE_MODES`):

- ``keep``: the raw vectors (what the paper measures);
- ``drop``: the massive dimensions removed, h in R^(d - |M|);
- ``standardise``: every dimension z-scored over the layer's vectors, z_j = (h_j - mu_j) / s_j
  (s_j the SD, ddof = 1); dimensions with s_j = 0 carry no information and are removed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from magdash.errors import AnalysisError

MASSIVE_RATIO = 10.0
MASSIVE_MODES = ("keep", "drop", "standardise")
MASSIVE_DEFAULT = "keep"
MASSIVE_LABELS = {"keep": "raw", "drop": "massive dimensions dropped", "standardise": "per-dimension standardised"}
"""How each view is named in tables, charts and sentences."""


def check_massive(mode: str, ratio: float) -> None:
    """Clear errors for an unknown view or a multiple that cannot separate anything."""
    if mode not in MASSIVE_MODES:
        raise AnalysisError(f"massive= must be one of {', '.join(MASSIVE_MODES)}, got {mode!r}", parameters=("massive",))
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float, np.floating, np.integer)) \
            or not math.isfinite(ratio) or ratio <= 1:
        raise AnalysisError(f"the massive-activation multiple must be a number above 1, got {ratio!r}")


@dataclass(frozen=True)
class DimensionStats:
    """Per-dimension statistics of a layer's vectors (float64, shape (d,) each)."""

    count: int
    abs_mean: np.ndarray  # mean |h_j|
    mean: np.ndarray  # mean h_j
    square_mean: np.ndarray  # mean h_j^2

    @property
    def sd(self) -> np.ndarray:
        """SD of every dimension (ddof = 1; 0 for fewer than two vectors)."""
        if self.count < 2:
            return np.zeros_like(self.mean)
        variance = (self.square_mean - self.mean**2) * (self.count / (self.count - 1))
        return np.sqrt(np.maximum(variance, 0.0))

    @classmethod
    def of(cls, vectors: np.ndarray) -> DimensionStats:
        array = np.asarray(vectors, dtype=np.float64)
        if array.ndim != 2 or array.shape[0] == 0:
            raise AnalysisError(f"per-dimension statistics need vectors of shape (n, d), got {array.shape}")
        return cls(array.shape[0], np.abs(array).mean(axis=0), array.mean(axis=0), (array**2).mean(axis=0))


def find_massive(abs_mean: np.ndarray, ratio: float = MASSIVE_RATIO) -> np.ndarray:
    """Indices of the massive dimensions, largest mean |h_j| first (see the module rule)."""
    magnitude = np.asarray(abs_mean, dtype=np.float64)
    if magnitude.size == 0:
        return np.zeros(0, dtype=np.int64)
    median = float(np.median(magnitude))
    if not median > 0:  # most dimensions are exactly zero: no typical scale to compare with
        return np.zeros(0, dtype=np.int64)
    massive = np.flatnonzero(magnitude > ratio * median)
    return massive[np.argsort(-magnitude[massive], kind="stable")].astype(np.int64)


def massive_share(square_mean: np.ndarray, indices: np.ndarray) -> float:
    """sum_{j in M} E[h_j^2] / sum_j E[h_j^2]: the share of E||h||^2 in the massive dimensions."""
    squares = np.asarray(square_mean, dtype=np.float64)
    total = float(squares.sum())
    return float(squares[np.asarray(indices, dtype=np.int64)].sum() / total) if total > 0 else math.nan


@dataclass(frozen=True)
class Adjustment:
    """How to turn a layer's raw vectors into one of the :data:`MASSIVE_MODES` views."""

    mode: str
    keep: np.ndarray | None = None  # dimensions kept (drop, standardise); None: all
    centre: np.ndarray | None = None  # standardise: mu_j of the kept dimensions
    scale: np.ndarray | None = None  # standardise: s_j of the kept dimensions

    @classmethod
    def for_stats(cls, mode: str, stats: DimensionStats, ratio: float = MASSIVE_RATIO) -> Adjustment:
        check_massive(mode, ratio)
        if mode == "keep":
            return cls(mode)
        if mode == "drop":
            keep = np.setdiff1d(np.arange(stats.abs_mean.size), find_massive(stats.abs_mean, ratio))
            return cls(mode, keep)
        sd = stats.sd
        keep = np.flatnonzero(sd > 0)
        return cls(mode, keep, stats.mean[keep], sd[keep])

    def dim(self, raw_dim: int) -> int:
        return raw_dim if self.keep is None else int(self.keep.size)

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        """The view of a batch (n, d) of raw vectors, float32 (the accumulators' precision)."""
        if self.keep is None:
            return vectors
        kept = np.asarray(vectors)[:, self.keep]
        if self.scale is None:
            return kept
        return ((kept - self.centre) / self.scale).astype(np.float32)
