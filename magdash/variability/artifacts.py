"""Artifacts looked for before a result is shown: vectors of outsized norm, a carrier that drives
the result, points the outlier rule dropped (docs/science.md, "Artifacts the analysis looks for").

**Outlier vectors.** At each layer, a vector whose L2 norm exceeds ``OUTLIER_NORM_FACTOR`` (10)
times the median norm of the layer's vectors is flagged: the rule of :mod:`magdash.norm_outliers`,
which the store also applies to the norms it records as vectors are written.

**A carrier that drives the result.** Leave-one-carrier-out: for each carrier c the measures are
recomputed on the other C - 1 carriers and alpha refitted with the measure's point rules (no
bootstrap; needs C >= 3). The one rule for when leaving a carrier out matters, against the
estimate's own uncertainty: carrier c drives a measure's result when the mean core alpha without
it differs from the mean core alpha with every carrier by more than the result's bootstrap
half-width, the mean over the core layers of each layer's (ci_high - ci_low) / 2 (the
uncertainty of alpha from the layer's own points). A change of sign counts only when it passes
the same rule: 0.00137 -> -0.0000944 with a half-width of 0.01 is noise around 0, not a carrier's
doing. Without CIs (``n_boot = 0``) the check is not judged (:attr:`CarrierInfluence.judged`),
never decided by the sign alone.

The yardstick is not the mean core alpha's stimulus-bootstrap interval: that bootstrap resamples
the carriers, so its interval already holds the carrier's influence (a draw of C carriers lacks a
given one with probability (1 - 1/C)^C, a third at C = 5), and a carrier that alone makes the
result would stay inside it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from magdash.errors import AnalysisError
from magdash.norm_outliers import OUTLIER_NORM_FACTOR, outsized, vector_norms
from magdash.variability.analysis_params import FitRules
from magdash.variability.fits import scaling_alpha
from magdash.variability.measures import LayerVectors

MIN_LOO_CARRIERS = 3
"""Leaving one carrier out needs at least this many carriers (two would leave one)."""


def outlier_vector_mask(vectors: np.ndarray, factor: float = OUTLIER_NORM_FACTOR) -> np.ndarray:
    """(n_magnitudes, n_carriers) True where a vector's norm exceeds ``factor`` x the layer's median.

    Args:
        vectors: one layer's vectors, (n_magnitudes, n_carriers, d).
        factor: the multiple of the median norm above which a vector is flagged.
    """
    return outsized(vector_norms(vectors), factor)[0]


@dataclass(frozen=True)
class OutlierVector:
    """One flagged vector: where it is and how far above its layer's median norm."""

    layer: int
    magnitude: int
    carrier: int
    norm_ratio: float


def outlier_vectors(layer: int, vectors: np.ndarray, magnitudes: np.ndarray,
                    factor: float = OUTLIER_NORM_FACTOR) -> list[OutlierVector]:
    """The flagged vectors of one layer (:func:`outlier_vector_mask`), with their norm ratios."""
    norms = vector_norms(vectors)
    flagged, median = outsized(norms, factor)
    return [OutlierVector(layer, int(magnitudes[m]), int(c), float(norms[m, c] / median))
            for m, c in zip(*np.nonzero(flagged), strict=True)]


def leave_one_carrier_out(
    x: np.ndarray,
    magnitudes: np.ndarray,
    measures: Sequence[str],
    *,
    rules: FitRules,
) -> np.ndarray:
    """OLS alpha without each carrier: shape (len(measures), C), NaN where there is no fit.

    Args:
        x: one layer's vectors, (n_magnitudes, n_carriers, d).
        magnitudes: the magnitudes.
        measures: the measures' names.
        rules: the fits' point rules (the outlier rule applied by measure:
            :meth:`~magdash.variability.analysis_params.FitRules.for_measure`).
    """
    x = np.asarray(x)
    n_carriers = x.shape[1]
    if n_carriers < MIN_LOO_CARRIERS:
        raise AnalysisError(
            f"leaving one carrier out needs at least {MIN_LOO_CARRIERS} carriers, got {n_carriers}"
        )
    alphas = np.full((len(measures), n_carriers), math.nan)
    for dropped in range(n_carriers):
        kept = [c for c in range(n_carriers) if c != dropped]
        values = LayerVectors(x[:, kept]).compute(list(measures))
        for row, measure in enumerate(measures):
            alphas[row, dropped] = scaling_alpha(magnitudes, values[measure], rules=rules.for_measure(measure))
    return alphas


@dataclass(frozen=True)
class CarrierInfluence:
    """What leaving out one carrier does to a measure's mean core alpha.

    Attributes:
        carrier: the carrier's index.
        mean_without: the mean core alpha without it.
        mean_all: the mean core alpha with every carrier.
        half_width: the result's bootstrap half-width (NaN: no CIs, nothing is judged).
        sign_differs: whether ``mean_without`` has the other sign than ``mean_all`` (a description:
            it counts only with ``drives``).
        drives: the rule of the module docstring: ``mean_without`` is more than ``half_width`` from ``mean_all``.
    """

    carrier: int
    mean_without: float
    mean_all: float
    half_width: float
    sign_differs: bool
    drives: bool

    @property
    def judged(self) -> bool:
        """Whether the rule could be applied: both means and the half-width are numbers."""
        return all(math.isfinite(v) for v in (self.mean_without, self.mean_all, self.half_width))

    def how(self) -> str:
        """What leaving the carrier out does, in words (for a carrier that drives the result)."""
        sign = ", and changes its sign" if self.sign_differs else ""
        return f"by more than its CI half-width {self.half_width:.3g}{sign}"


def carrier_influence(mean_all: float, half_width: float, means_without: Sequence[float]) -> list[CarrierInfluence]:
    """The rule of the module docstring, for every carrier.

    Args:
        mean_all: the mean core alpha with every carrier.
        half_width: the result's bootstrap half-width (NaN: no CIs, nothing is judged).
        means_without: the mean core alpha without each carrier, in carrier order.
    """
    rows = []
    for carrier, without in enumerate(means_without):
        usable = math.isfinite(without) and math.isfinite(mean_all)
        sign_differs = bool(usable and np.sign(without) != np.sign(mean_all))
        moved = bool(usable and math.isfinite(half_width) and abs(without - mean_all) > half_width)
        rows.append(CarrierInfluence(carrier, float(without), float(mean_all), float(half_width), sign_differs, moved))
    return rows
