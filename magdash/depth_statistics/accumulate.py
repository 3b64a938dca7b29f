"""Online per-layer statistics of hidden-state vectors: count, mean, covariance, Omega values.

All-token mode sees every token position of a prompt set (tens of thousands of vectors per
layer), so the vectors themselves are not kept: each batch is folded into a running mean and
scatter matrix M2 = sum (x - mean)(x - mean)^T in float64 with Chan, Golub & LeVeque's
parallel update (Welford's update for a chunk instead of one vector):

    n = n_a + n_b,   delta = mean_b - mean_a,
    mean = mean_a + delta n_b / n,   M2 = M2_a + M2_b + delta delta^T n_a n_b / n,

with M2_b computed on the chunk centred on its own float64 mean, so no large offset cancels.
Incoming rows are buffered and merged once there are at least max(d, 4096) of them: the
d x d update then costs little next to the chunk product, and BLAS runs on tall chunks (for
d = 384, merging every ~500-row batch instead made accumulation several times slower). The chunk product itself is a
float32 BLAS product of the centred float32 rows (hidden states arrive in float32; this is
half the time of float64, and the eigenvalues differ from an all-float64 computation by
~1e-7 relative, measured on 10,000 4096-d vectors with 100x outlier dimensions), added into
the float64 M2, so precision is not lost as chunks accumulate.

Few vectors in high dimension (number-token vectors: 26 magnitudes x 5 carriers = 130 in
d >= 384) are the exception: while fewer than d vectors have arrived, the buffer has never
been merged and still holds them all, and the spectrum comes from the N x N Gram matrix of the
centred vectors instead of the d x d covariance (same non-zero eigenvalues, far smaller). The
buffer never exceeds max(d, 4096) rows plus one batch (for d >= 4096, half the memory of the
float64 scatter matrix itself).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg.blas

from magdash.depth_statistics.massive_dims import Adjustment, DimensionStats
from magdash.depth_statistics.omega import omega
from magdash.depth_statistics.spectrum import covariance_eigenvalues, gram_eigenvalues
from magdash.depth_statistics.unit_bootstrap import VECTOR_UNIT, default_units
from magdash.errors import AnalysisError
from magdash.jsonio import check_npz_payload
from magdash.overflow import nonfinite_rows

MIN_MERGE_ROWS = 4096

PHASE_VERSION = 6
"""Bump whenever a change to the phase code can change a cached sample: old entries die.
4: in all-token mode the model's BOS starts each chunk where its tokenizer adds none, and the
first position's token (the attention sink) is left out by default.
5: eigenvalues below float32's resolution (epsilon x d x the median variance) are dropped, so a rank-deficient
layer's rounding is no longer fitted as its Marchenko-Pastur bulk.
6: each vector's units (its text; or its magnitude and carrier) are kept with its Omega, so the bootstrap
resamples units, not vectors; a Marchenko-Pastur fit that did not converge reports no sigma², edge,
margin or gap."""


@dataclass
class LayerSample:
    """What the phase diagnostics need from one layer: its cacheable sufficient statistics."""

    layer: int
    dim: int
    count: int
    eigenvalues: np.ndarray  # non-zero covariance eigenvalues (ddof=1), descending, float64
    omegas: np.ndarray  # Omega of every vector, float32, in arrival order
    nonfinite: int = 0  # vectors left out for holding Inf or NaN (magdash.overflow)
    first_position: int = 0  # all-token mode: tokens left out for standing at a sequence's first position
    # Per-dimension statistics of the layer's raw vectors (before any magdash.depth_statistics.massive_dims
    # view), from which the massive dimensions are found; None for a layer without vectors.
    raw: DimensionStats | None = None
    # Each Omega's independent units (magdash.depth_statistics.unit_bootstrap), (count, len(unit_names)) codes naming
    # the same unit at every layer: its text (("chunk",) or ("prompt",)) or its magnitude and carrier.
    # None: each vector its own unit.
    units: np.ndarray | None = None
    unit_names: tuple[str, ...] = ()

    def unit_codes(self) -> tuple[np.ndarray, tuple[str, ...]]:
        """The Omegas' unit codes and the factors' names; each vector its own unit when none were recorded."""
        if self.units is None:
            return default_units(len(self.omegas)), (VECTOR_UNIT,)
        return self.units, self.unit_names


@dataclass
class LayerAccumulator:
    """Running count, mean, scatter matrix and Omega values of one layer's vectors, and with
    ``unit_names`` the vectors' units (:mod:`magdash.depth_statistics.unit_bootstrap`)."""

    dim: int
    unit_names: tuple[str, ...] = ()
    count: int = 0
    mean: np.ndarray = field(init=False, repr=False)
    scatter: np.ndarray | None = field(default=None, repr=False)  # float64 M2, once merged
    _pending: list[np.ndarray] = field(default_factory=list, repr=False)
    _pending_rows: int = 0
    _omegas: list[np.ndarray] = field(default_factory=list, repr=False)
    _units: list[np.ndarray] = field(default_factory=list, repr=False)
    nonfinite: int = 0
    # Per-dimension sums of h_j, |h_j| and h_j^2 (float64), for DimensionStats.
    _sums: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.dim < 1:
            raise AnalysisError(f"vector dimension must be positive, got {self.dim}")
        self.mean = np.zeros(self.dim, dtype=np.float64)
        self._sums = np.zeros((3, self.dim), dtype=np.float64)

    def add(self, vectors: np.ndarray, units: np.ndarray | None = None) -> None:
        """Fold a batch of vectors of shape (n, d) into the statistics.

        ``units``: each vector's unit codes, shape (n, len(unit_names)) (:attr:`LayerSample.units`),
        required when the accumulator has ``unit_names`` and refused otherwise. Vectors holding Inf or NaN are counted in ``nonfinite`` and
        left out, so one overflowed token cannot poison the layer's statistics; the layer is
        then flagged downstream.
        """
        batch = np.asarray(vectors)
        if batch.ndim != 2 or batch.shape[1] != self.dim:
            raise AnalysisError(
                f"expected vectors of shape (n, {self.dim}), got {tuple(batch.shape)}"
            )
        codes = self._checked_units(units, batch.shape[0])
        if batch.shape[0] == 0:
            return
        batch = batch.astype(np.float32, copy=True)
        bad = nonfinite_rows(batch)
        if bad.any():
            self.nonfinite += int(bad.sum())
            batch = batch[~bad]
            codes = None if codes is None else codes[~bad]
            if batch.shape[0] == 0:
                return
        self._omegas.append(omega(batch).astype(np.float32))
        if codes is not None:
            self._units.append(codes)
        self._sums[0] += batch.sum(axis=0, dtype=np.float64)
        self._sums[1] += np.abs(batch).sum(axis=0, dtype=np.float64)
        self._sums[2] += np.einsum("ij,ij->j", batch, batch, dtype=np.float64)
        self._pending.append(batch)
        self._pending_rows += batch.shape[0]
        if self._pending_rows >= max(self.dim, MIN_MERGE_ROWS):
            self._merge_pending()

    def _checked_units(self, units: np.ndarray | None, rows: int) -> np.ndarray | None:
        if not self.unit_names:
            if units is not None:
                raise AnalysisError("units were given to an accumulator without unit_names")
            return None
        if units is None:
            raise AnalysisError(f"every batch needs its vectors' units ({', '.join(self.unit_names)})")
        codes = np.asarray(units, dtype=np.int64)
        if codes.shape != (rows, len(self.unit_names)):
            raise AnalysisError(f"expected unit codes of shape ({rows}, {len(self.unit_names)}), got {codes.shape}")
        return codes

    @property
    def total(self) -> int:
        """Vectors seen so far, merged or still buffered."""
        return self.count + self._pending_rows

    @property
    def keeps_vectors(self) -> bool:
        """True while every vector seen is still held (nothing merged yet)."""
        return self.scatter is None

    def omegas(self) -> np.ndarray:
        if not self._omegas:
            return np.zeros(0, dtype=np.float32)
        return np.concatenate(self._omegas)

    def units(self) -> np.ndarray | None:
        """Each Omega's unit codes (count, len(unit_names)); None without ``unit_names``."""
        if not self.unit_names:
            return None
        if not self._units:
            return np.zeros((0, len(self.unit_names)), dtype=np.int64)
        return np.concatenate(self._units)

    def covariance(self) -> np.ndarray:
        """Sample covariance (ddof=1) of every vector seen, float64 (d, d)."""
        self._merge_pending()
        if self.count < 2 or self.scatter is None:
            raise AnalysisError("a covariance needs at least two vectors")
        return self.scatter / (self.count - 1)

    def eigenvalues(self) -> np.ndarray:
        """Non-zero covariance eigenvalues, descending: Gram path while N < d, else d x d."""
        if self.total < 2:
            return np.zeros(0)
        if self.keeps_vectors and self.total < self.dim:
            return gram_eigenvalues(np.concatenate(self._pending))
        return covariance_eigenvalues(self.covariance(), self.count)

    def dimension_stats(self) -> DimensionStats | None:
        """Mean h_j, |h_j| and h_j^2 of every vector seen; None before any."""
        total = self.total
        if total == 0:
            return None
        means = self._sums / total
        return DimensionStats(total, abs_mean=means[1], mean=means[0], square_mean=means[2])

    def finish(self, layer: int) -> LayerSample:
        if self.total == 0 and self.nonfinite:
            # Every vector overflowed: nothing to summarise, the layer is only flagged.
            return LayerSample(layer, self.dim, 0, np.zeros(0), np.zeros(0, dtype=np.float32), self.nonfinite)
        return LayerSample(layer, self.dim, self.total, self.eigenvalues(), self.omegas(), self.nonfinite,
                           raw=self.dimension_stats(), units=self.units(), unit_names=self.unit_names)

    def _merge_pending(self) -> None:
        if not self._pending:
            return
        chunk = np.concatenate(self._pending) if len(self._pending) > 1 else self._pending[0]
        self._pending, self._pending_rows = [], 0
        chunk_mean = chunk.mean(axis=0, dtype=np.float64)
        centred = chunk - chunk_mean.astype(np.float32)
        chunk_scatter = centred.T @ centred  # numpy calls BLAS syrk for X^T X
        scatter = self.scatter if self.scatter is not None else np.zeros((self.dim, self.dim), dtype=np.float64)
        scatter += chunk_scatter
        self.scatter = scatter
        n_a, n_b = self.count, chunk.shape[0]
        total = n_a + n_b
        delta = chunk_mean - self.mean
        if n_a:
            # Rank-one update in place, no d x d temporaries. BLAS wants column-major storage:
            # the transposed view of the C-ordered symmetric matrix is exactly that.
            scipy.linalg.blas.dger(  # pyright: ignore[reportAttributeAccessIssue] - BLAS wrappers are generated
                n_a * n_b / total, delta, delta, a=scatter.T, overwrite_a=True
            )
        self.mean += delta * (n_b / total)
        self.count = total


def samples_to_bytes(samples: Sequence[LayerSample], n_blocks: int) -> bytes:
    """npz payload (no pickle) of the layers' eigenvalues, Omega values, units and counts."""
    arrays: dict[str, np.ndarray] = {
        "n_blocks": np.array(n_blocks, dtype=np.int64),
        "layers": np.array([s.layer for s in samples], dtype=np.int64),
        "dims": np.array([s.dim for s in samples], dtype=np.int64),
        "counts": np.array([s.count for s in samples], dtype=np.int64),
        "nonfinite": np.array([s.nonfinite for s in samples], dtype=np.int64),
        "first_position": np.array([s.first_position for s in samples], dtype=np.int64),
    }
    for index, sample in enumerate(samples):
        arrays[f"eigenvalues_{index}"] = np.asarray(sample.eigenvalues, dtype=np.float64)
        arrays[f"omegas_{index}"] = np.asarray(sample.omegas, dtype=np.float32)
        if sample.units is not None:
            arrays[f"units_{index}"] = np.asarray(sample.units, dtype=np.int64)
            arrays[f"unit_names_{index}"] = np.array(sample.unit_names, dtype=np.str_)
        if sample.raw is not None:
            stats = sample.raw
            arrays[f"raw_{index}"] = np.stack([stats.mean, stats.abs_mean, stats.square_mean])
            arrays[f"raw_count_{index}"] = np.array(stats.count, dtype=np.int64)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)  # pyright: ignore[reportArgumentType] - numpy's stub types **kwds like allow_pickle
    return buffer.getvalue()


def samples_from_bytes(payload: bytes) -> tuple[list[LayerSample], int]:
    """Inverse of :func:`samples_to_bytes`: (samples, n_blocks); a ``ValueError`` for a payload larger
    than a cached one may be (:func:`magdash.jsonio.check_npz_payload`)."""
    check_npz_payload(payload)
    with np.load(io.BytesIO(payload), allow_pickle=False) as data:
        first = data["first_position"] if "first_position" in data else np.zeros(len(data["layers"]), dtype=np.int64)
        columns = zip(data["layers"], data["dims"], data["counts"], data["nonfinite"], first, strict=True)
        samples = [
            LayerSample(int(layer), int(dim), int(count), data[f"eigenvalues_{i}"], data[f"omegas_{i}"], int(bad),
                        int(left_out), _raw_stats(data, i), *_units(data, i))
            for i, (layer, dim, count, bad, left_out) in enumerate(columns)
        ]
        return samples, int(data["n_blocks"])


def _units(data, index: int) -> tuple[np.ndarray | None, tuple[str, ...]]:
    if f"units_{index}" not in data:
        return None, ()
    return data[f"units_{index}"], tuple(str(name) for name in data[f"unit_names_{index}"])


def _raw_stats(data, index: int) -> DimensionStats | None:
    if f"raw_{index}" not in data:
        return None
    mean, abs_mean, square_mean = data[f"raw_{index}"]
    return DimensionStats(int(data[f"raw_count_{index}"]), abs_mean=abs_mean, mean=mean, square_mean=square_mean)


NUMBER_TOKEN_UNITS = ("magnitude", "carrier")
"""The crossed units of number-token vectors: the magnitude and the carrier sentence each comes from."""


def number_token_sample(vectors: np.ndarray, layer: int, massive: str, massive_ratio: float) -> LayerSample:
    """One layer's sample of number-token vectors (n_magnitudes, n_carriers, d) in the view ``massive``
    asks for, each vector's magnitude and carrier kept as its units (:data:`NUMBER_TOKEN_UNITS`).

    Args:
        vectors: the layer's vectors, magnitudes by carriers (:class:`~magdash.store.LayerData`'s order).
        layer: the layer index.
        massive: the view: keep, drop or standardise (:mod:`magdash.depth_statistics.massive_dims`).
        massive_ratio: the multiple of the median mean |h_j| above which a dimension is massive.
    """
    magnitudes, carriers, dim = vectors.shape
    units = np.column_stack([np.repeat(np.arange(magnitudes), carriers), np.tile(np.arange(carriers), magnitudes)])
    return view_sample(vectors.reshape(-1, dim), layer, massive, massive_ratio, units, NUMBER_TOKEN_UNITS)


def view_sample(vectors: np.ndarray, layer: int, massive: str, massive_ratio: float,
                units: np.ndarray | None = None, unit_names: tuple[str, ...] = ()) -> LayerSample:
    """One layer's sample of ``vectors`` (n, d) in the view ``massive`` asks for
    (:mod:`magdash.depth_statistics.massive_dims`: keep, drop or standardise), with each vector's ``units``
    (n, len(unit_names)) when given.

    The per-dimension statistics (and so the massive dimensions) always come from the raw
    vectors; Inf/NaN vectors are left out of them as of everything else.
    """
    raw_accumulator = LayerAccumulator(vectors.shape[1], unit_names)
    raw_accumulator.add(vectors, units)
    if massive == "keep":
        return raw_accumulator.finish(layer)
    stats = raw_accumulator.dimension_stats()
    if stats is None:
        return raw_accumulator.finish(layer)
    finite = ~nonfinite_rows(vectors)
    adjustment = Adjustment.for_stats(massive, stats, massive_ratio)
    accumulator = LayerAccumulator(adjustment.dim(vectors.shape[1]), unit_names)
    accumulator.add(adjustment.apply(vectors[finite]), None if units is None else np.asarray(units)[finite])
    sample = accumulator.finish(layer)
    sample.nonfinite, sample.raw = raw_accumulator.nonfinite, stats
    return sample


def view_adjustments(raw: Sequence[LayerSample], massive: str, massive_ratio: float) -> dict[int, Adjustment]:
    """Each layer's view transform, from a raw pass's per-dimension statistics.

    A layer without statistics (every vector Inf/NaN) has nothing to transform: it stays raw
    and is flagged as before.
    """
    return {
        s.layer: Adjustment("keep") if s.raw is None else Adjustment.for_stats(massive, s.raw, massive_ratio)
        for s in raw
    }
