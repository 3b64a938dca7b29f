"""Carrier controls: is one sentence driving alpha, and do the carriers agree?

Leave-one-carrier-out (LOO): :func:`magdash.variability.artifacts.leave_one_carrier_out` (the
analysis runs it itself, and its rule for a carrier that drives the result is
:func:`magdash.variability.artifacts.carrier_influence`); the controls tabulate it by layer.

Intraclass correlation of the vectors across carriers, as the paper's ``icc_per_layer``
(Cacioli 2026, ``paradigm_a_extract.py``): each carrier c gives the cosine-distance RDM of its
magnitude vectors, ``r_c[p] = 1 - cos(x[a, c], x[b, c])`` over the P = n(n-1)/2 magnitude
pairs p = (a, b); the C carriers are the raters and the pairs the targets of a two-way
mixed-effects, consistency, average-of-k-raters ICC (Shrout & Fleiss 1979, ICC(3,k); McGraw &
Wong 1996, ICC(C,k)):

    BMS = C sum_p (rbar_p - rbar)^2 / (P - 1)                  (between targets)
    EMS = sum_{p,c} (r_c[p] - rbar_p - rbar_c + rbar)^2 / ((P - 1)(C - 1))   (residual)
    ICC(3,k) = (BMS - EMS) / BMS

ICC near 1: every sentence orders the magnitudes' distances alike, so carrier choice hardly moves
the geometry; below 0.5 agreement is poor (Koo & Li 2016). A zero-norm vector keeps norm 1 in
the cosine, as in the paper's script; a layer whose RDMs are all equal has BMS = 0 and ICC 0.
"""

from __future__ import annotations

import math

import numpy as np

from magdash.errors import AnalysisError

ICC_POOR = 0.5
"""ICC below this is poor agreement across carriers (Koo & Li 2016)."""


def cosine_rdm(vectors: np.ndarray) -> np.ndarray:
    """Upper-triangle cosine distances between the rows of ``vectors`` (n, d), pairs (a < b).

    From the n x n Gram matrix of the unit rows, never from a (pairs x d) array.
    """
    vectors = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1.0, norms)
    first, second = np.triu_indices(vectors.shape[0], k=1)
    return 1.0 - (unit @ unit.T)[first, second]


def icc_consistency(ratings: np.ndarray) -> float:
    """ICC(3,k) of ``ratings`` (targets, raters): (BMS - EMS) / BMS (module docstring).

    NaN with fewer than 2 targets or raters; 0 when the targets do not differ (BMS = 0).
    """
    ratings = np.asarray(ratings, dtype=np.float64)
    n_targets, n_raters = ratings.shape
    if n_targets < 2 or n_raters < 2 or not np.isfinite(ratings).all():
        return math.nan
    grand = ratings.mean()
    target_means = ratings.mean(axis=1)
    rater_means = ratings.mean(axis=0)
    bms = n_raters * float(np.sum((target_means - grand) ** 2)) / (n_targets - 1)
    residual = ratings - target_means[:, None] - rater_means[None, :] + grand
    ems = float(np.sum(residual**2)) / ((n_targets - 1) * (n_raters - 1))
    if bms == 0:
        return 0.0
    return (bms - ems) / bms


def carrier_icc(x: np.ndarray) -> float:
    """The paper's ``icc_per_layer`` for one layer's vectors (n_magnitudes, C, d)."""
    x = np.asarray(x)
    if x.ndim != 3:
        raise AnalysisError(f"expected vectors of shape (n_magnitudes, n_carriers, d), got {x.shape}")
    rdms = np.stack([cosine_rdm(x[:, carrier]) for carrier in range(x.shape[1])], axis=1)
    return icc_consistency(rdms)
