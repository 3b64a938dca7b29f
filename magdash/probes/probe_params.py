"""Every choice that can change a probe result, shared by the API, the CLI and the app.

Each field of :class:`ProbeParams` carries its command-line option (:func:`magdash.params.option`):
the CLI builds ``magdash probe``'s options from them, so a help text is written once, here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from magdash.errors import AnalysisError
from magdash.params import DEFAULT_CI, DEFAULT_N_BOOT, comma_separated, option, seed_problem

TARGETS = ("log", "linear")
"""What a probe reads out: ``log`` n or ``linear`` n."""

SCHEMES = ("carrier", "magnitude")
"""Held-out carriers (a new context) and held-out magnitudes (interpolation)."""

TASKS = ("real", "control")
"""The real labels and the control task's (Hewitt & Liang 2019: labels permuted per magnitude)."""

DEFAULT_ALPHAS = tuple(float(10.0 ** k) for k in range(-3, 6))
"""Ridge penalties, relative to the layer's total variance (see :class:`ProbeParams`)."""

MIN_CARRIERS = 3
"""Held-out carriers need three: every training fold then still holds two contexts, from which
the probe can tell magnitude from context, and each magnitude has at least two held-out
predictions, the least a spread across carriers needs."""


def _whole(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise AnalysisError(f"{name}={value!r} must be a whole number >= {minimum}", parameters=(name,))
    return int(value)


@dataclass(frozen=True)
class ProbeParams:
    """Every choice that can change a probe result (all of them belong in a cache key).

    The ridge penalty is relative: the vectors are divided by the square root of the layer's
    total variance (the mean squared distance of its vectors from their mean, ddof 1) before
    the probe is fitted, so ``alphas`` mean the same at every layer and in every model, whatever
    the scale of its residual stream. Large designs are probed in a principal-component basis
    (``exact_max_vectors``, ``n_components``) and choose their penalty on a
    subsample of each training fold (``alpha_rows``); :mod:`magdash.probes.basis` and
    :mod:`magdash.probes.crossval` say what that means.
    """

    targets: tuple[str, ...] = field(default=TARGETS, metadata=option(
        "what the probes read out: log (log n) and/or linear (n); the log read-out is the primary one",
        metavar="T,T", parse=comma_separated(str)))
    alphas: tuple[float, ...] = field(default=DEFAULT_ALPHAS, metadata=option(
        "ridge penalties to choose from inside each training fold, relative to the layer's total variance",
        metavar="A,A,...", parse=comma_separated(float)))
    magnitude_folds: int = field(default=5, metadata=option(
        "folds of held-out magnitudes: the inner magnitudes, in order, dealt to the folds in turn; "
        "the smallest and largest are always trained on, so every test is an interpolation", metavar="K"))
    carrier_folds: int = field(default=0, metadata=option(
        "0 leaves one carrier out at a time; a number >= 2 deals the carriers into that many folds "
        "(fewer fits for designs with many carriers)", metavar="K"))
    ci: float = field(default=DEFAULT_CI, metadata=option("confidence level of every interval", flag="--probe-ci",
                                                     metavar="LEVEL"))
    n_boot: int = field(default=DEFAULT_N_BOOT, metadata=option(
        "bootstrap resamples of the magnitudes (each with all its carriers) behind every interval; 0 gives none",
        flag="--probe-n-boot", metavar="N"))
    seed: int = field(default=0, metadata=option(
        "seed of the bootstrap and of the subsamples of large designs", flag="--probe-seed", metavar="S"))
    control_seed: int = field(default=0, metadata=option(
        "seed of the control task's permutation of the magnitudes' labels", metavar="S"))
    exact_max_vectors: int = field(default=256, metadata=option(
        "layers with at most this many vectors are probed on every direction the vectors span (exact); "
        "larger ones in the top principal components of their centroids (the exact path's cost grows "
        "with the cube of the vectors: 0.1 s a layer at 130, 0.9 s at 500, 6 s at 1,000)", metavar="N"))
    n_components: int = field(default=32, metadata=option(
        "principal components of the magnitudes' centroids the probe reads in a large design "
        "(more: slower, closer to the exact probe)", metavar="K"))
    alpha_rows: int = field(default=1024, metadata=option(
        "rows of a training fold on which the ridge penalty is chosen when the fold is larger; "
        "the probe itself is fitted on every row", metavar="N"))

    def __post_init__(self) -> None:
        targets = tuple(dict.fromkeys(str(t) for t in (self.targets or ())))
        unknown = [t for t in targets if t not in TARGETS]
        if not targets or unknown:
            raise AnalysisError(
                f"unknown probe target(s) {', '.join(unknown) or '(none given)'}; choose from {', '.join(TARGETS)}")
        try:
            alphas = tuple(sorted({float(a) for a in self.alphas}))
        except (TypeError, ValueError):
            raise AnalysisError(f"the ridge penalties must be numbers, got {self.alphas!r}") from None
        if not alphas or not all(math.isfinite(a) and a > 0 for a in alphas):
            raise AnalysisError(f"the ridge penalties must be positive numbers, got {list(self.alphas)!r}")
        object.__setattr__(self, "targets", targets)
        object.__setattr__(self, "alphas", alphas)
        object.__setattr__(self, "magnitude_folds", _whole(self.magnitude_folds, "magnitude_folds", 2))
        carrier_folds = _whole(self.carrier_folds, "carrier_folds", 0)
        if carrier_folds == 1:
            raise AnalysisError("carrier_folds=1: give 0 (leave one carrier out) or at least 2", parameters=("carrier_folds",))
        object.__setattr__(self, "carrier_folds", carrier_folds)
        if not isinstance(self.ci, (int, float, np.floating)) or not 0 < self.ci < 1:
            raise AnalysisError(f"the confidence level must lie between 0 and 1, got {self.ci!r}")
        object.__setattr__(self, "ci", float(self.ci))
        object.__setattr__(self, "n_boot", _whole(self.n_boot, "n_boot", 0))
        for name in ("seed", "control_seed"):
            if problem := seed_problem(getattr(self, name), name):
                raise AnalysisError(problem)
            object.__setattr__(self, name, int(getattr(self, name)))
        object.__setattr__(self, "exact_max_vectors", _whole(self.exact_max_vectors, "exact_max_vectors", 0))
        object.__setattr__(self, "n_components", _whole(self.n_components, "n_components", 1))
        object.__setattr__(self, "alpha_rows", _whole(self.alpha_rows, "alpha_rows", 10))

    @classmethod
    def from_dict(cls, values: dict) -> ProbeParams:
        """The inverse of ``dataclasses.asdict`` after a JSON round trip (lists back to tuples).

        Args:
            values: the fields, as ``dataclasses.asdict`` gave them and JSON kept them.
        """
        values = dict(values)
        for name in ("targets", "alphas"):
            if name in values:
                values[name] = tuple(values[name])
        return cls(**values)
