"""magdash's psychometric function of a two-alternative comparison, its fit and its Weber fraction.

The function (a two-alternative forced choice: guess rate 0.5, lapse rate lambda)::

    P(correct | r) = 0.5 + (0.5 - lambda) * Phi((ln r - mu) / sigma)

with r >= 1 the ratio of the larger number to the smaller. It runs from 0.5 (no discrimination) to
1 - lambda; unlike the paper's lambda/2 + (1 - lambda) Phi (:mod:`magdash.behaviour.paper`), which starts
at lambda/2 and so can put 75% correct below ratio 1, its threshold is never a negative Weber fraction.

Fit: binomial maximum likelihood on the position-corrected proportion p_r of each ratio's n_r measured
trials (:mod:`magdash.behaviour.trial_frames`): maximise sum_r k_r ln P(r) + (n_r - k_r) ln(1 - P(r)) with
k_r = p_r n_r (not rounded: the position correction averages two proportions, and the binomial
log-likelihood with a fractional count is the quasi-likelihood of a proportion, Papke & Wooldridge 1996),
over mu in [-4, 4], sigma in [0.005, 10] and lambda in [0, max_lapse], by L-BFGS-B from several starts.

Weber fraction: the threshold r* where P = 0.75, ln r* = mu + sigma Phi^-1(0.25 / (0.5 - lambda)), and
WF = r* - 1 (Cacioli 2026, arXiv 2603.20642: the ratio at 75% correct, minus 1). It is undefined (NaN)
when the fit is at chance (a likelihood-ratio test against P = 0.5 at every ratio, 3 degrees of freedom,
does not reject at ``chance_level``), when the function never reaches 0.75 (lambda >= 0.25), or when r* < 1
(above 75% correct at every ratio: a threshold below ratio 1 is no Weber fraction), or when r* lies above
the largest tested ratio (the model does not reach 75% correct within the design; an extrapolation there
can run to any size). A threshold between 1 and the smallest tested ratio is reported with
``in_range=False``: it is a short extrapolation, and its WF is small. Every fit also reports r* itself
(``threshold``) wherever the function reaches 0.75.

The graded variant replaces each trial's 0/1 outcome by q = sigmoid(l_larger - l_other), the model's
probability of the larger option between the two (its next-token logits l; the softmax restricted to the
two options). q is the probability that the model would answer correctly if its answer were sampled from
those two options, so the position-corrected mean of q at a ratio estimates the same P(correct | r) as the
sampled choices would, with every trial's confidence in it and no sampling noise; the same function is
fitted to those means by the same quasi-likelihood (fractional outcomes in [0, 1]).

Bootstrap: trials are resampled with replacement within each ratio x position cell and the function
refitted (vectorised Fisher scoring from the point estimate, :func:`refit_many`); a replicate whose
threshold is below ratio 1 counts as WF 0 and one that never reaches 0.75 as WF +inf, so the interval's
bounds say so instead of dropping them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.special import ndtr, ndtri
from scipy.stats import chi2, norm

GUESS = 0.5
THRESHOLD_P = 0.75
MU_BOUNDS = (-4.0, 4.0)
SIGMA_BOUNDS = (0.005, 10.0)
_EPS = 1e-10
_STARTS = ((math.log(1.1), 0.2), (math.log(1.3), 0.5), (math.log(2.0), 1.0), (0.0, 0.3))

STATUS_OK = "ok"
STATUS_CHANCE = "at chance"
STATUS_NEVER = "never reaches 75% correct"
STATUS_BELOW_ONE = "threshold below ratio 1"
STATUS_BELOW = "below the tested ratios"
STATUS_ABOVE = "above the tested ratios"
STATUS_EMPTY = "no measured trials"


def two_alternative(log_ratio: np.ndarray, mu: float | np.ndarray, sigma: float | np.ndarray,
                    lapse: float | np.ndarray) -> np.ndarray:
    """P(correct) = 0.5 + (0.5 - lapse) Phi((ln r - mu) / sigma) (module docstring).

    Args:
        log_ratio: ln r.
        mu: the location on ln r.
        sigma: the spread on ln r.
        lapse: the lapse rate.
    """
    return GUESS + (GUESS - lapse) * ndtr((log_ratio - mu) / sigma)


def _nll(theta: np.ndarray, x: np.ndarray, k: np.ndarray, n: np.ndarray) -> tuple[float, np.ndarray]:
    """The negative log-likelihood and its gradient in (mu, sigma, lapse)."""
    mu, sigma, lapse = theta
    z = (x - mu) / sigma
    density, cumulative = norm.pdf(z), ndtr(z)
    p = np.clip(GUESS + (GUESS - lapse) * cumulative, _EPS, 1 - _EPS)
    value = float(-np.sum(k * np.log(p) + (n - k) * np.log1p(-p)))
    residual = -(k / p - (n - k) / (1 - p))
    gradient = np.array([np.sum(residual * -(GUESS - lapse) * density / sigma),
                         np.sum(residual * -(GUESS - lapse) * density * z / sigma),
                         np.sum(residual * -cumulative)])
    return value, gradient


def log_likelihood(p: np.ndarray, k: np.ndarray, n: np.ndarray) -> float:
    """The binomial (quasi-)log-likelihood of ``k`` successes of ``n`` at probabilities ``p``.

    Args:
        p: success probabilities.
        k: successes (fractional allowed).
        n: trials.
    """
    p = np.clip(p, _EPS, 1 - _EPS)
    return float(np.sum(k * np.log(p) + (n - k) * np.log1p(-p)))


@dataclass(frozen=True)
class Fit:
    """One psychometric fit.

    Attributes:
        mu: location on ln r.
        sigma: spread on ln r.
        lapse: lapse rate.
        weber_fraction: r* - 1, NaN where undefined (module docstring).
        threshold: r*, the ratio at 75% correct (NaN where the function never gets there).
        in_range: whether r* lies within the tested ratios.
        status: :data:`STATUS_OK` or why the Weber fraction is undefined or extrapolated.
        chance_p: the likelihood-ratio test's p against P = 0.5 at every ratio.
    """

    mu: float
    sigma: float
    lapse: float
    weber_fraction: float
    threshold: float
    in_range: bool
    status: str
    chance_p: float


def log_threshold(mu: np.ndarray | float, sigma: np.ndarray | float, lapse: np.ndarray | float) -> np.ndarray:
    """ln r* where P = 0.75: mu + sigma Phi^-1(0.25 / (0.5 - lapse)); +inf where the function never gets there.

    Args:
        mu: location.
        sigma: spread.
        lapse: lapse rate.
    """
    lapse = np.asarray(lapse, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        inner = (THRESHOLD_P - GUESS) / (GUESS - lapse)
        return np.where(inner < 1, mu + sigma * ndtri(np.minimum(inner, 1 - 1e-16)), np.inf)


def judge(mu: float, sigma: float, lapse: float, ratios: np.ndarray, chance_p: float, chance_level: float) -> Fit:
    """The Weber fraction of fitted parameters and whether it is defined and inside the tested ratios.

    Args:
        mu: location.
        sigma: spread.
        lapse: lapse rate.
        ratios: the tested ratios.
        chance_p: the fit's likelihood-ratio p against chance.
        chance_level: at or above this p the fit is at chance.
    """
    threshold = float(log_threshold(mu, sigma, lapse))
    ratio = math.exp(threshold) if math.isfinite(threshold) else math.nan
    if not chance_p < chance_level:
        return Fit(mu, sigma, lapse, math.nan, ratio, False, STATUS_CHANCE, chance_p)
    if not math.isfinite(threshold):
        return Fit(mu, sigma, lapse, math.nan, ratio, False, STATUS_NEVER, chance_p)
    if threshold < 0:
        return Fit(mu, sigma, lapse, math.nan, ratio, False, STATUS_BELOW_ONE, chance_p)
    if threshold > math.log(float(np.max(ratios))):
        return Fit(mu, sigma, lapse, math.nan, ratio, False, STATUS_ABOVE, chance_p)
    in_range = threshold >= math.log(float(np.min(ratios)))
    return Fit(mu, sigma, lapse, math.expm1(threshold), ratio, in_range, STATUS_OK if in_range else STATUS_BELOW,
               chance_p)


def fit_two_alternative(ratios: np.ndarray, proportions: np.ndarray, n: np.ndarray, max_lapse: float,
                        chance_level: float) -> Fit:
    """The maximum-likelihood fit of :func:`two_alternative` to position-corrected proportions.

    Args:
        ratios: the tested ratios (>= 1).
        proportions: the position-corrected proportion correct (or mean soft choice) per ratio.
        n: the measured trials per ratio.
        max_lapse: the lapse rate's upper bound.
        chance_level: the chance test's level (module docstring).
    """
    x = np.log(np.asarray(ratios, dtype=float))
    usable = np.isfinite(proportions) & (n > 0)
    x, n = x[usable], np.asarray(n, dtype=float)[usable]
    k = np.asarray(proportions, dtype=float)[usable] * n
    if not usable.any():
        return Fit(math.nan, math.nan, math.nan, math.nan, math.nan, False, STATUS_EMPTY, math.nan)
    bounds = [MU_BOUNDS, SIGMA_BOUNDS, (0.0, max_lapse)]
    best = None
    for mu0, sigma0 in _STARTS:
        result = minimize(_nll, np.array([mu0, sigma0, min(0.02, max_lapse)]), args=(x, k, n), method="L-BFGS-B",
                          jac=True, bounds=bounds)
        if best is None or result.fun < best.fun:
            best = result
    assert best is not None
    mu, sigma, lapse = (float(v) for v in best.x)
    deviance = 2.0 * (log_likelihood(two_alternative(x, mu, sigma, lapse), k, n)
                      - log_likelihood(np.full_like(x, GUESS), k, n))
    chance_p = float(chi2.sf(max(deviance, 0.0), 3))
    return judge(mu, sigma, lapse, np.asarray(ratios)[usable], chance_p, chance_level)


def refit_many(ratios: np.ndarray, proportions: np.ndarray, n: np.ndarray, start: Fit, max_lapse: float,
               iterations: int = 60) -> np.ndarray:
    """Fits of many replicates at once (the bootstrap's): Fisher scoring with Levenberg damping from the
    point estimate, kept inside the bounds of :func:`fit_two_alternative`. Returns (replicates, 3):
    mu, sigma, lapse.

    For the binomial likelihood the score is sum_r (k_r - n_r P_r) / (P_r (1 - P_r)) dP_r/dtheta and the
    Fisher information sum_r n_r / (P_r (1 - P_r)) dP_r/dtheta dP_r/dtheta^T; a step that does not lower the
    negative log-likelihood is retried with more damping.

    Args:
        ratios: the tested ratios.
        proportions: (replicates, ratios) position-corrected proportions.
        n: the measured trials per ratio.
        start: the point estimate.
        max_lapse: the lapse rate's upper bound.
        iterations: scoring steps.
    """
    x = np.log(np.asarray(ratios, dtype=float))[None, :]
    n = np.asarray(n, dtype=float)[None, :]
    k = proportions * n
    count = proportions.shape[0]
    theta = np.tile([start.mu, start.sigma, start.lapse], (count, 1))
    damping = np.full(count, 1e-3)
    low = np.array([MU_BOUNDS[0], SIGMA_BOUNDS[0], 0.0])
    high = np.array([MU_BOUNDS[1], SIGMA_BOUNDS[1], max_lapse])

    def nll(values: np.ndarray) -> np.ndarray:
        p = np.clip(two_alternative(x, values[:, :1], values[:, 1:2], values[:, 2:]), _EPS, 1 - _EPS)
        return -np.sum(k * np.log(p) + (n - k) * np.log1p(-p), axis=1)

    current = nll(theta)
    for _ in range(iterations):
        mu, sigma, lapse = theta[:, :1], theta[:, 1:2], theta[:, 2:]
        z = (x - mu) / sigma
        density, cumulative = norm.pdf(z), ndtr(z)
        p = np.clip(GUESS + (GUESS - lapse) * cumulative, _EPS, 1 - _EPS)
        gradient_p = np.stack([-(GUESS - lapse) * density / sigma, -(GUESS - lapse) * density * z / sigma,
                               -cumulative], axis=2)  # (replicates, ratios, 3)
        weight = 1.0 / (p * (1 - p))
        score = np.einsum("br,brj->bj", (k - n * p) * weight, gradient_p)
        information = np.einsum("br,bri,brj->bij", n * weight, gradient_p, gradient_p)
        scale = np.einsum("bii->bi", information) + 1e-12
        system = information + damping[:, None, None] * np.eye(3)[None] * scale[:, None, :]
        try:
            step = np.linalg.solve(system, score[..., None])[..., 0]
        except np.linalg.LinAlgError:
            step = score / scale
        proposal = np.clip(theta + step, low, high)
        if np.max(np.abs(proposal - theta)) < 1e-10:
            break  # every replicate has converged
        trial = nll(proposal)
        better = trial <= current
        theta = np.where(better[:, None], proposal, theta)
        current = np.where(better, trial, current)
        damping = np.where(better, np.maximum(damping / 3, 1e-6), damping * 10)
    return theta


def replicate_weber_fractions(theta: np.ndarray, ratios: np.ndarray) -> np.ndarray:
    """The bootstrap replicates' Weber fractions: r* - 1, with 0 for a threshold below ratio 1 and +inf for
    a function that does not reach 0.75 within the tested ratios (module docstring).

    Args:
        theta: (replicates, 3) mu, sigma, lapse.
        ratios: the tested ratios.
    """
    threshold = log_threshold(theta[:, 0], theta[:, 1], theta[:, 2])
    reached = np.isfinite(threshold) & (threshold <= math.log(float(np.max(ratios))))
    return np.where(reached, np.expm1(np.clip(threshold, 0.0, 50.0)), np.inf)


def interval(values: np.ndarray, ci: float) -> tuple[float, float]:
    """The percentile interval of bootstrap replicates by order statistics (an infinite replicate is
    kept: the upper bound is then +inf). NaN, NaN without replicates.

    Args:
        values: the replicates.
        ci: the level.
    """
    values = np.sort(np.asarray(values, dtype=float)[~np.isnan(values)])
    if values.size == 0:
        return math.nan, math.nan
    tail = (1.0 - ci) / 2.0
    low = values[int(math.floor(tail * (values.size - 1)))]
    high = values[int(math.ceil((1.0 - tail) * (values.size - 1)))]
    return float(low), float(high)
