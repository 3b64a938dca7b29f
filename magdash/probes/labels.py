"""A layer's vectors as probe rows, its labels and the control task's labels, and the checks
that refuse a design the probes cannot use (each with what is needed instead).

Rows are the vectors in magnitude-major order: row ``i * C + c`` is ``x[i, c]``. The labels are
``log n`` (target ``log``) or ``n`` (target ``linear``). The control task (Hewitt & Liang 2019,
arXiv 1909.03368) gives every magnitude the label of another through one random permutation
pi of the magnitudes, the same for every carrier: magnitude i is labelled f(n[pi(i)]). A probe
that only memorised which vectors belong to one number token learns the control task as well as
the real one; a probe that reads a magnitude code does not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from magdash.errors import AnalysisError
from magdash.overflow import count_nonfinite
from magdash.params import ranges
from magdash.probes.probe_params import MIN_CARRIERS, TASKS, ProbeParams


def check_magnitudes(magnitudes, params: ProbeParams) -> np.ndarray:
    """The magnitudes as float64, refused unless finite, distinct, positive for the log target
    and numerous enough for the held-out-magnitude folds."""
    values = np.asarray(magnitudes, dtype=np.float64)
    if values.ndim != 1:
        raise AnalysisError(f"expected one magnitude per row of vectors, got an array of shape {values.shape}")
    if not np.isfinite(values).all():
        raise AnalysisError("the magnitudes must be finite numbers")
    if np.unique(values).size != values.size:
        repeated = sorted({float(v) for v in values if np.count_nonzero(values == v) > 1})
        raise AnalysisError(f"each magnitude must appear once (it is one group of carriers); repeated: {repeated}")
    if "log" in params.targets and (values <= 0).any():
        bad = [float(v) for v in values[values <= 0]]
        raise AnalysisError(
            f"the log target needs positive magnitudes, got {bad}; leave them out or probe the linear target only")
    needed = params.magnitude_folds + 2
    if values.size < needed:
        raise AnalysisError(
            f"held-out magnitudes in {params.magnitude_folds} folds need at least {needed} magnitudes "
            f"(one inner magnitude per fold, plus the smallest and largest, which are always trained on), "
            f"got {values.size}; add magnitudes or lower magnitude_folds")
    return values


def check_vectors(vectors, n_magnitudes: int, params: ProbeParams) -> np.ndarray:
    """One layer's vectors, refused unless of shape (n_magnitudes, n_carriers >= 3, d) (finiteness is
    checked on the centroids, which a single Inf/NaN vector makes non-finite: :func:`refuse_nonfinite`)."""
    x = np.asarray(vectors)
    if x.ndim != 3:
        raise AnalysisError(f"expected layer vectors of shape (n_magnitudes, n_carriers, d), got shape {x.shape}")
    if x.shape[0] != n_magnitudes:
        raise AnalysisError(f"the layer has vectors for {x.shape[0]} magnitudes, expected {n_magnitudes}")
    if x.shape[2] < 1:
        raise AnalysisError("the layer's vectors have no dimensions")
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    if x.shape[1] < MIN_CARRIERS:
        raise AnalysisError(
            f"held-out carriers need at least {MIN_CARRIERS} carriers, got {x.shape[1]}: each training fold must "
            "keep two contexts, so the probe can tell magnitude from context, and each magnitude needs two "
            "held-out predictions to have a spread across carriers")
    if params.carrier_folds > x.shape[1]:
        raise AnalysisError(
            f"carrier_folds={params.carrier_folds} exceeds the {x.shape[1]} carriers; use at most {x.shape[1]} "
            "(or 0 to leave one carrier out at a time)", parameters=("carrier_folds",))
    return x


def refuse_nonfinite(x: np.ndarray) -> None:
    """Raise :class:`NonFiniteVectors` naming the magnitudes whose vectors hold Inf/NaN (the caller
    found that some do: a non-finite centroid, say)."""
    bad = count_nonfinite(x)
    if bad:
        rows = np.nonzero(~np.isfinite(x).all(axis=(1, 2)))[0]
        raise NonFiniteVectors(
            f"{bad} vector(s) of this layer hold Inf/NaN (magnitude rows {ranges(rows.tolist())}), as float16 "
            "overflow gives; a probe needs finite vectors: extract again with dtype='bfloat16' (or 'float32'), "
            "or leave the layer out", bad)


class NonFiniteVectors(AnalysisError):
    """A layer holding Inf/NaN vectors; ``count`` says how many (a run leaves such a layer out)."""

    def __init__(self, message: str, count: int):
        super().__init__(message)
        self.count = count


def target_values(magnitudes: np.ndarray, target: str) -> np.ndarray:
    """f(n): log n for the ``log`` target, n for ``linear``."""
    return np.log(magnitudes) if target == "log" else magnitudes.copy()


def decode(predictions: np.ndarray, target: str) -> np.ndarray:
    """The decoded magnitude n-hat: exp(prediction) for the log target, the prediction itself for
    the linear one (which can be <= 0)."""
    return np.exp(predictions) if target == "log" else predictions


@dataclass(frozen=True)
class Labels:
    """Every label column the probes fit at once (one multi-target ridge per fold).

    ``columns`` lists (task, target) pairs; ``values`` is (n_magnitudes, n_columns) in the target's
    scale and ``reference`` the magnitude each column's label stands for (n itself for the real
    task, n[pi(i)] for the control task), against which the decoded magnitude is compared.
    """

    columns: tuple[tuple[str, str], ...]
    values: np.ndarray
    reference: np.ndarray
    permutation: np.ndarray

    @classmethod
    def for_design(cls, magnitudes: np.ndarray, params: ProbeParams) -> Labels:
        permutation = control_permutation(magnitudes.size, params.control_seed)
        columns, values, reference = [], [], []
        for task in TASKS:
            shown = magnitudes if task == "real" else magnitudes[permutation]
            for target in params.targets:
                columns.append((task, target))
                values.append(target_values(shown, target))
                reference.append(shown)
        return cls(tuple(columns), np.stack(values, axis=1), np.stack(reference, axis=1), permutation)

    def index(self, task: str, target: str) -> int:
        return self.columns.index((task, target))

    def rows(self, n_carriers: int) -> np.ndarray:
        """The labels of every row (magnitude-major), (n_magnitudes * n_carriers, n_columns)."""
        return np.repeat(self.values, n_carriers, axis=0)


def control_permutation(n_magnitudes: int, seed: int) -> np.ndarray:
    """The control task's permutation: magnitude i takes the label of magnitude ``pi[i]``."""
    return np.random.default_rng(seed).permutation(n_magnitudes)
