"""The paper's conventions: Cacioli 2026 (arXiv 2603.20642), ``scripts/psychometric_corrected.py`` of
synthiumjp/weber, reproduced exactly, so that magdash gives the published numbers.

Per reference (the paper's "baseline"), every trial counts (the paper measured every trial, so
``min_option_mass`` does not apply here):

- accuracy per ratio corrected for position bias: (accuracy of the A-correct trials + accuracy of the
  B-correct trials) / 2, 0.5 for a position without trials;
- P(correct) = lapse/2 + (1 - lapse) Phi((ln r - mu) / sigma), fitted by binomial maximum likelihood on
  round(accuracy x n) correct of n (n: the ratio's trials), the probabilities clipped to [1e-10, 1 - 1e-10];
  the bounds sigma > 0.001 and 0 <= lapse <= 0.5 are a penalty (the negative log-likelihood is 1e10
  outside them); Nelder-Mead (maxiter 10,000, xatol = fatol = 1e-8) from the five starts
  (ln 1.1, 0.3, 0.02), (ln 1.3, 0.5, 0.05), (ln 1.5, 0.8, 0.10), (ln 2, 1.0, 0.05), (0, 0.5, 0.05),
  keeping the lowest;
- Weber fraction = exp(mu + sigma Phi^-1((0.75 - lapse/2) / (1 - lapse))) - 1 when that argument lies in
  (0, 1), else undefined. This function starts at lapse/2, not at the 0.5 of a two-alternative choice,
  so its 75% point can fall below ratio 1: the published WF of -0.174 at reference 1000; magdash
  reports it with ``in_range=False`` and the status :data:`STATUS_NEGATIVE`;
- bootstrap: ``numpy.random.RandomState(42)``; per replicate, per ratio ascending, the A-correct then the
  B-correct trials resampled with replacement (``choice``), the accuracy recomputed and the function
  refitted from the single start (ln 1.3, 0.5, 0.05) with maxiter 2,000; replicates whose WF is undefined
  or outside (0, 10) are dropped; the BCa interval of the valid replicates (:func:`bca_interval`; the
  published ``ci_low``/``ci_high``) beside their percentile interval (2.5, 97.5 at the 95% level).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import ndtr
from scipy.stats import norm

from magdash.behaviour.psychometric import STATUS_ABOVE, STATUS_BELOW, STATUS_NEVER, STATUS_OK

PAPER_STARTS = ((math.log(1.1), 0.3, 0.02), (math.log(1.3), 0.5, 0.05), (math.log(1.5), 0.8, 0.10),
                (math.log(2.0), 1.0, 0.05), (0.0, 0.5, 0.05))
"""The paper's five Nelder-Mead starts (mu, sigma, lapse)."""
BOOTSTRAP_START = (math.log(1.3), 0.5, 0.05)
"""The paper's single start in the bootstrap (its ``fast`` fit)."""
VALID_WF = (0.0, 10.0)
"""The paper keeps a bootstrap replicate whose WF lies strictly inside this range."""
MIN_VALID = 10
"""With fewer valid replicates the paper gives no interval."""
STATUS_NEGATIVE = "threshold below ratio 1 (the paper's function)"
_PENALTY = 1e10


def paper_function(log_ratio: np.ndarray, mu: float, sigma: float, lapse: float) -> np.ndarray:
    """The paper's P(correct) = lapse/2 + (1 - lapse) Phi((ln r - mu) / sigma).

    Args:
        log_ratio: ln r.
        mu: location.
        sigma: spread.
        lapse: lapse rate.
    """
    # scipy.special.ndtr is what norm.cdf computes for the standard normal, bit for bit, without its overhead
    return lapse / 2.0 + (1.0 - lapse) * ndtr((log_ratio - mu) / sigma)


def _paper_nll(params: np.ndarray, log_ratios: np.ndarray, n_correct: np.ndarray, n_failed: np.ndarray) -> float:
    # Called some 250 times a fit and 10,000 fits a bootstrap: Python floats, the ufuncs themselves and the
    # failures counted once give the paper's numbers bit for bit at three quarters of np.clip/np.sum's cost.
    mu, sigma, lapse = params.tolist()
    if sigma <= 0.001 or lapse < 0 or lapse > 0.5:
        return _PENALTY
    p = np.minimum(np.maximum(paper_function(log_ratios, mu, sigma, lapse), 1e-10), 1 - 1e-10)
    return -float(np.add.reduce(n_correct * np.log(p) + n_failed * np.log(1 - p)))


@dataclass(frozen=True)
class PaperFit:
    """One fit by the paper's procedure.

    Attributes:
        mu: location on ln r.
        sigma: spread on ln r.
        lapse: lapse rate.
        weber_fraction: the paper's WF (may be negative), NaN where it is undefined.
        neg_loglik: the negative log-likelihood at the optimum.
        converged: Nelder-Mead's success flag.
    """

    mu: float
    sigma: float
    lapse: float
    weber_fraction: float
    neg_loglik: float
    converged: bool


def paper_weber_fraction(mu: float, sigma: float, lapse: float) -> float:
    """exp(mu + sigma Phi^-1((0.75 - lapse/2) / (1 - lapse))) - 1, NaN when the argument is outside (0, 1).

    Args:
        mu: location.
        sigma: spread.
        lapse: lapse rate.
    """
    inner = (0.75 - lapse / 2.0) / (1.0 - lapse)
    if not 0 < inner < 1:
        return math.nan
    with np.errstate(over="ignore"):  # an overflowing threshold is +inf, which the bootstrap drops as the paper does
        return float(np.exp(mu + sigma * norm.ppf(inner)) - 1.0)


def fit_paper(log_ratios: np.ndarray, accuracies: np.ndarray, n_per_cell: np.ndarray, fast: bool = False) -> PaperFit:
    """The paper's ``fit_psychometric``: Nelder-Mead from its five starts (``fast``: its one bootstrap start).

    Args:
        log_ratios: ln r per ratio.
        accuracies: the position-corrected accuracy per ratio.
        n_per_cell: the trials per ratio.
        fast: the bootstrap's single start and maxiter 2,000.
    """
    n_correct = np.round(accuracies * n_per_cell).astype(int)
    starts, maxiter = ((BOOTSTRAP_START,), 2000) if fast else (PAPER_STARTS, 10000)
    best = None
    for start in starts:
        result = minimize(_paper_nll, list(start), args=(log_ratios, n_correct, n_per_cell - n_correct), method="Nelder-Mead",
                          options={"maxiter": maxiter, "xatol": 1e-8, "fatol": 1e-8})
        if best is None or result.fun < best.fun:
            best = result
    assert best is not None
    mu, sigma, lapse = (float(v) for v in best.x)
    return PaperFit(mu, sigma, lapse, paper_weber_fraction(mu, sigma, lapse), float(best.fun), bool(best.success))


def paper_cells(ratio: np.ndarray, larger: np.ndarray, correct: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The paper's position-corrected accuracy per ratio (0.5 for a position without trials).
    Returns (ratios ascending, accuracies, trials per ratio).

    Args:
        ratio: each trial's ratio.
        larger: each trial's correct position, ``"A"`` or ``"B"``.
        correct: each trial's correctness.
    """
    ratios = np.unique(ratio)
    accuracies, counts = np.empty(len(ratios)), np.empty(len(ratios))
    for index, value in enumerate(ratios):
        sides = [correct[(ratio == value) & (larger == side)] for side in ("A", "B")]
        accuracies[index] = sum(float(np.mean(side)) if side.size else 0.5 for side in sides) / 2.0
        counts[index] = sum(side.size for side in sides)
    return ratios, accuracies, counts


def paper_bootstrap(ratio: np.ndarray, larger: np.ndarray, correct: np.ndarray, n_boot: int,
                    seed: int = 42) -> np.ndarray:
    """The paper's bootstrap replicates of the WF (all of them; NaN where undefined), drawn in its order.

    Args:
        ratio: each trial's ratio.
        larger: each trial's correct position.
        correct: each trial's correctness.
        n_boot: replicates.
        seed: the RandomState seed (the paper's: 42).
    """
    rng = np.random.RandomState(seed)
    ratios = np.unique(ratio)
    groups = [[correct[(ratio == value) & (larger == side)] for side in ("A", "B")] for value in ratios]
    counts = np.array([sum(side.size for side in sides) for sides in groups], dtype=float)
    log_ratios = np.log(ratios)
    replicates = np.empty(n_boot)
    for b in range(n_boot):
        accuracies = np.empty(len(ratios))
        for index, sides in enumerate(groups):
            means = [float(np.mean(rng.choice(side, size=side.size, replace=True))) if side.size else 0.5
                     for side in sides]
            accuracies[index] = (means[0] + means[1]) / 2.0
        replicates[b] = fit_paper(log_ratios, accuracies, counts, fast=True).weber_fraction
    return replicates


def valid_replicates(replicates: np.ndarray) -> np.ndarray:
    """The replicates the paper keeps: WF defined and strictly inside (0, 10).

    Args:
        replicates: :func:`paper_bootstrap`.
    """
    finite = replicates[np.isfinite(replicates)]
    return finite[(finite > VALID_WF[0]) & (finite < VALID_WF[1])]


BCA_LEVELS = (0.001, 0.999)
"""The paper's BCa percentile levels are kept inside these (the published interval at reference 1000, where
the estimate lies below every valid replicate, is the replicates' 0.1th percentile at both ends)."""


def bca_interval(valid: np.ndarray, estimate: float, ci: float) -> tuple[float, float]:
    """The paper's BCa interval of its valid replicates (Efron 1987): the bias correction
    z0 = Phi^-1(share of valid replicates below the estimate), the acceleration
    a = sum (v - m)^3 / (6 (sum (v - m)^2)^1.5) over the valid replicates v (m: their mean; the jackknife
    acceleration of their mean, skewness / (6 sqrt(n))), and the bounds the replicates' percentiles
    (linear) at Phi(z0 + (z0 + z) / (1 - a (z0 + z))) for z = Phi^-1 of each tail, that level kept inside
    :data:`BCA_LEVELS`; an estimate below (above) every valid replicate puts both levels at the lower (upper)
    end. NaN with fewer than :data:`MIN_VALID` replicates.

    The paper's code for it is not public; this reproduces the published bounds of the B1 trials at
    references 10, 100 and 1000 to 1e-9, at 300 to 3e-8 and at 30 to 6e-6 (the replicates themselves,
    their count, median and percentile interval, exactly).

    Args:
        valid: :func:`valid_replicates`.
        estimate: the point estimate's WF.
        ci: the level.
    """
    if valid.size < MIN_VALID or not math.isfinite(estimate):
        return math.nan, math.nan
    share = float(np.mean(valid < estimate))
    if share in (0.0, 1.0):
        bound = float(np.percentile(valid, 100.0 * BCA_LEVELS[0 if share == 0.0 else 1]))
        return bound, bound
    z0 = float(norm.ppf(share))
    centred = valid - valid.mean()
    acceleration = float(np.sum(centred**3)) / (6.0 * float(np.sum(centred**2)) ** 1.5)
    bounds = []
    for tail in ((1.0 - ci) / 2.0, (1.0 + ci) / 2.0):
        z = z0 + float(norm.ppf(tail))
        level = min(max(float(norm.cdf(z0 + z / (1.0 - acceleration * z))), BCA_LEVELS[0]), BCA_LEVELS[1])
        bounds.append(float(np.percentile(valid, 100.0 * level)))
    return bounds[0], bounds[1]


def paper_status(weber_fraction: float, ratios: np.ndarray) -> tuple[bool, str]:
    """Whether the paper's WF lies within the tested ratios, and the status that says so.

    Args:
        weber_fraction: the paper's WF (NaN: undefined).
        ratios: the tested ratios.
    """
    if not math.isfinite(weber_fraction):
        return False, STATUS_NEVER
    threshold = 1.0 + weber_fraction
    if threshold < 1.0:
        return False, STATUS_NEGATIVE
    if threshold < float(np.min(ratios)):
        return False, STATUS_BELOW
    if threshold > float(np.max(ratios)):
        return False, STATUS_ABOVE
    return True, STATUS_OK
