"""Two sets of statistical conventions: magdash's own and those of the paper's script.

magdash's measures and fits agree with the public reference script of Cacioli (arXiv
2604.04469; ``scalar_variability_v2.py`` and ``scalar_variability_exploratory.py``) to rounding
on the same float64 vectors. Where the two differ, each choice is defensible, and each is named
here in one place, so that an analysis can follow either (``AnalysisParams.conventions``):

=====================  ===============================================  ===============================================
choice                 ``magdash`` (default)                            ``paper``
=====================  ===============================================  ===============================================
bootstrap draws        ``default_rng(seed).integers`` (seed 0)          a fresh ``RandomState(seed).randint(0, n, n)``
                                                                        per fitted series, resamples in sequence
                                                                        (seed 42)
alpha's CI             studentized bootstrap (bootstrap-t)              percentile bootstrap
H4 (alpha vs depth)    Spearman over the core layers with a fit, exact  Spearman over every stored layer 0..L,
                       p up to 8 layers                                 scipy's asymptotic p; NaN if a layer has no fit
noise models (AICc)    Gaussian likelihood, k counts sigma (2, 2, 3,    n log(RSS/n + 1e-30) + 2k + small-sample term,
                       3), scalar k by least squares through the        k = 1, 1, 2, 2, scalar k = mean(V/n), every
                       origin, points kept by the outlier rule          point with V > 0
E3 boundary refit      the measure's outlier rule in both fits          refit without the outlier rule, compared with
                                                                        the core alphas (outlier rule applied)
E6 model comparison    the measure's outlier rule                       no outlier rule
E5 "significant"       p < .05, either sign                             rho > 0 and p < .05
mean |OLS - Theil-Sen| over the core layers                             over every layer with a fit
=====================  ===============================================  ===============================================

The consistency checks of the paper's script run in both modes (:func:`consistency_checks`):
the mean |OLS - Theil-Sen| of V_eucl (a warning from 0.1), and the distances between the mean
core alphas of V_eucl and V_residual (from 0.15) and of V_eucl and V_proj (from 0.3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from magdash.caveats import Caveat, Severity
from magdash.errors import AnalysisError

MAGDASH = "magdash"
PAPER = "paper"


@dataclass(frozen=True)
class Conventions:
    """The rules one convention follows; see the module docstring for the two of them."""

    name: str
    description: str
    default_seed: int
    bootstrap_stream: str  # "generator" (numpy's default_rng) or "legacy" (RandomState, the paper's)
    ci_method: str  # how alpha's CI is formed from the resamples (magdash.variability.fits.CI_METHODS)
    h4_all_layers: bool  # H4 over every stored layer (paper) or the core layers (magdash)
    h4_exact_p: bool  # exact permutation p for H4 with few layers
    noise_scoring: str  # "gaussian" or "paper" (see magdash.variability.fits)
    noise_outlier_rule: bool  # noise models only on the points the outlier rule keeps
    e3_outlier_rule: bool  # the outlier rule in the E3 refit without the boundary magnitudes
    e6_outlier_rule: bool  # the outlier rule in the alphas a model comparison pairs
    e5_positive_only: bool  # E5 counts a layer as significant only when rho > 0
    ols_theil_sen_all_layers: bool  # mean |OLS - Theil-Sen| over every fitted layer, not the core


CONVENTIONS: dict[str, Conventions] = {
    MAGDASH: Conventions(
        name=MAGDASH,
        description="magdash's conventions",
        default_seed=0,
        bootstrap_stream="generator",
        ci_method="studentized",
        h4_all_layers=False,
        h4_exact_p=True,
        noise_scoring="gaussian",
        noise_outlier_rule=True,
        e3_outlier_rule=True,
        e6_outlier_rule=True,
        e5_positive_only=False,
        ols_theil_sen_all_layers=False,
    ),
    PAPER: Conventions(
        name=PAPER,
        description="the conventions of the paper's script (Cacioli 2026)",
        default_seed=42,
        bootstrap_stream="legacy",
        ci_method="percentile",
        h4_all_layers=True,
        h4_exact_p=False,
        noise_scoring="paper",
        noise_outlier_rule=False,
        e3_outlier_rule=False,
        e6_outlier_rule=False,
        e5_positive_only=True,
        ols_theil_sen_all_layers=True,
    ),
}
"""Every convention by name: ``magdash`` (the default) and ``paper``."""

CONVENTION_NAMES = tuple(CONVENTIONS)


def get_conventions(name: str) -> Conventions:
    try:
        return CONVENTIONS[name]
    except (KeyError, TypeError):
        raise AnalysisError(
            f"unknown conventions {name!r}; choose from {', '.join(CONVENTION_NAMES)}"
        ) from None


OLS_THEIL_SEN_LIMIT = 0.1
RAW_RESIDUAL_LIMIT = 0.15
RAW_PROJ_LIMIT = 0.3


@dataclass(frozen=True)
class ConsistencyChecks:
    """The paper's warning checks of one analysis (NaN where a measure was not analysed).

    - ``ols_theil_sen``: mean |alpha_OLS - alpha_Theil-Sen| of V_eucl over ``ols_theil_sen_layers``
      (the fitted core layers, or every fitted layer in the paper's convention); from 0.1 the
      OLS slope is not robust to a few points.
    - ``raw_residual``: |mean core alpha of V_eucl - that of V_residual|; from 0.15 sentence
      identity moves the exponent.
    - ``raw_proj``: |mean core alpha of V_eucl - that of V_proj|; from 0.3 the scatter on the
      magnitude axis scales differently from the whole (high-dimensional concentration).
    """

    ols_theil_sen: float
    ols_theil_sen_layers: list[int]
    raw_residual: float
    raw_proj: float

    def warnings(self) -> list[str]:
        """The checks that tripped, one line each (:meth:`caveats`' texts)."""
        return [caveat.text for caveat in self.caveats()]

    def caveats(self, model: str = "") -> list[Caveat]:
        """The checks that tripped, as caveats of ``model`` (:mod:`magdash.caveats`): OLS leaning on a few
        magnitudes is a caution about V_eucl; the measures' differences are notes about the two measures.

        Args:
            model: the model the checks are of ("" when not named).
        """
        found = []
        if self.ols_theil_sen >= OLS_THEIL_SEN_LIMIT:
            found.append(Caveat(Severity.CAUTION, (
                f"V_eucl: mean |OLS - Theil-Sen| alpha is {self.ols_theil_sen:.3f} (>= {OLS_THEIL_SEN_LIMIT}): "
                "the OLS exponents lean on a few magnitudes; read the Theil-Sen slopes too"), ("eucl",), model))
        if self.raw_residual >= RAW_RESIDUAL_LIMIT:
            found.append(Caveat(Severity.NOTE, (
                f"mean core alpha of V_eucl and V_residual differ by {self.raw_residual:.3f} "
                f"(>= {RAW_RESIDUAL_LIMIT}): sentence identity shapes the raw exponent"), ("eucl", "residual"), model))
        if self.raw_proj >= RAW_PROJ_LIMIT:
            found.append(Caveat(Severity.NOTE, (
                f"mean core alpha of V_eucl and V_proj differ by {self.raw_proj:.3f} "
                f"(>= {RAW_PROJ_LIMIT}): variability on the magnitude axis scales unlike the whole"), ("eucl", "proj"), model))
        return found


def _mean_of_finite(values: ArrayLike) -> float:
    array = np.asarray(values, dtype=np.float64)
    finite = array[np.isfinite(array)]
    return float(finite.mean()) if finite.size else math.nan


def consistency_checks(
    alphas: Mapping[str, np.ndarray],
    theil_sen_eucl: np.ndarray | None,
    core_layers: Sequence[int],
    conventions: Conventions,
) -> ConsistencyChecks:
    """The paper's checks from per-layer OLS ``alphas`` by measure and V_eucl's Theil–Sen slopes.

    Means are over the layers that have a fit.
    """
    core = list(core_layers)
    nan = math.nan
    ols_ts, ts_layers = nan, []
    if "eucl" in alphas and theil_sen_eucl is not None:
        ols = np.asarray(alphas["eucl"], dtype=np.float64)
        theil_sen = np.asarray(theil_sen_eucl, dtype=np.float64)
        layers = range(ols.size) if conventions.ols_theil_sen_all_layers else core
        ts_layers = [layer for layer in layers if math.isfinite(ols[layer]) and math.isfinite(theil_sen[layer])]
        if ts_layers:
            ols_ts = float(np.mean(np.abs(ols[ts_layers] - theil_sen[ts_layers])))

    def core_mean(measure: str) -> float:
        return _mean_of_finite(np.asarray(alphas[measure], dtype=np.float64)[core]) if measure in alphas else nan

    raw = core_mean("eucl")
    return ConsistencyChecks(
        ols_theil_sen=ols_ts,
        ols_theil_sen_layers=ts_layers,
        raw_residual=abs(raw - core_mean("residual")),
        raw_proj=abs(raw - core_mean("proj")),
    )
