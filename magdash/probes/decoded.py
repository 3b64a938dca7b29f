"""Decoded scalar variability: the spread across carriers of the magnitude a probe reads, and
what a read-out of constant error gives for the same design.

From the held-out-carrier predictions p[n, c] (each carrier's vector read by a probe that never
saw that carrier), with n-hat[n, c] the decoded magnitude (e^p for the log target, p itself for
the linear one):

- ``mean_decoded`` (n) = mean_c n-hat[n, c] and ``sd_decoded`` (n) = SD_c n-hat[n, c] (ddof 1);
  a magnitude whose predictions differ between carriers by no more than
  :data:`~magdash.probes.scores.PREDICTION_RESOLUTION` of the range of all the layer's
  predictions has ``sd_decoded`` exactly 0: they are equal but for rounding (every carrier gives
  the same vector at a decoder's embedding layer), and their last digits are no spread to fit, as
  V exactly 0 is not a number in the variability analysis;
- the decoded spread ratio ``weber_fraction`` (n) = SD(n-hat) / n;
- its scaling: the OLS slope beta of ln SD(n-hat) on ln n over the magnitudes with SD > 0, and
  ``weber_mean``, the mean of SD(n-hat) / n over the same magnitudes; with fewer than
  :data:`MIN_SLOPE_POINTS` of them both are NaN and ``note`` says why;
- ``calibration``: the OLS slope of ln mean n-hat on ln n (1 when the decoder is unbiased on
  the ratio scale).

**The constant-error null** (:func:`constant_error_null`). A read-out whose error on its own
scale has the same size at every n gives a beta of its own, whatever the model: if
ln n-hat = ln n + e with e of constant SD, SD(n-hat) = n SD(e^e) and beta = 1 exactly (Cacioli
2026, arXiv 2604.04469, asks whether the *model's* noise is scalar; this beta is the read-out's).
So beta is judged against what such a read-out gives for this design, not against 1. With
a_n = mean_c p[n, c] for the log target (0 for the linear one) and
s_n = SD_c(n-hat[n, c] e^(-a_n)), SD(n-hat)(n) = e^(a_n) s_n exactly, so with x = ln n

    beta = slope(a on x) + slope(ln s on x).

Constant error on the read-out's scale makes the s_n exchangeable across magnitudes: permuting
them over the magnitudes (:class:`PermutationDraws`) gives the null distribution
beta* = slope(a on x) + slope(ln s_pi on x) of this design, with the probe's own errors and its
own calibration. Its mean over all permutations is exactly ``beta_null`` = slope(a on x) (the
centred x sum to 0): for the log target the slope of the mean log read-out on ln n, near 1 for a
calibrated probe; 0 for the linear one. ``beta_null_low``/``beta_null_high`` is the permutations'
central interval and ``beta_null_p`` the two-sided permutation p,
(1 + #{|beta* - beta_null| >= |beta - beta_null|}) / (1 + permutations): a small p says the decoded
error's size changes with n beyond what a constant-error read-out gives.

By the delta method SD(n-hat) ~ n-hat SD(p) for the log read-out and SD(n-hat) = SD(p) for the
linear one, so two read-outs of the same axis give slopes about 1 apart, and their nulls are 1
apart too. The log read-out is the primary one (its n-hat is positive, its errors are ratios);
the linear read-out's is reported beside it.

Intervals of beta and ``weber_mean`` resample the magnitudes (each with all its carriers'
predictions) with the draws of :class:`~magdash.probes.scores.BootstrapDraws`; the slope is
refitted in each draw from the same decoded values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from magdash.controls_statistics.permutation import PermutationNull
from magdash.probes.labels import decode
from magdash.probes.scores import resolution

MIN_SLOPE_POINTS = 3

_PERMUTATION_STREAM = 2  # salt of the permutations' stream under the probes' seed


class PermutationDraws(PermutationNull):
    """The permutations of the constant-error null (:class:`~magdash.controls_statistics.permutation.PermutationNull`
    on a stream of their own under the probes' ``seed``), drawn once per number of fitted magnitudes
    and kept: every layer and target of a run with that many uses the same ones (as every layer uses
    the same bootstrap draws). 10,000 permutations of 1,000 magnitudes hold 40 MB. None when
    ``n_perm`` is 0 (a run without resamples): see :func:`permutation_draws`.
    """

    def __init__(self, n_perm: int, seed: int):
        super().__init__(n_perm, seed, stream=_PERMUTATION_STREAM)


def permutation_draws(n_perm: int, seed: int) -> PermutationDraws | None:
    """The constant-error null's permutations, or None without any (``n_perm`` 0).

    Args:
        n_perm: permutations (the probes' ``n_boot``).
        seed: the probes' ``seed``.
    """
    return PermutationDraws(n_perm, seed) if n_perm > 0 else None


@dataclass(frozen=True)
class DecodedSpread:
    """Per magnitude, the decoded magnitude's mean and spread over the held-out carriers.

    Attributes:
        mean: mean_c n-hat, ``mean_decoded``.
        sd: SD_c n-hat (ddof 1), ``sd_decoded``; exactly 0 where the predictions differ by rounding only.
        weber: SD / n, ``weber_fraction`` (NaN for n <= 0).
        centre: a_n, the mean prediction on the log scale for the log target (0 for the linear one):
            SD(n-hat) = e^a_n s_n with s_n the spread of n-hat e^-a_n.
    """

    mean: np.ndarray
    sd: np.ndarray
    weber: np.ndarray
    centre: np.ndarray

    @property
    def has_spread(self) -> bool:
        """Whether any magnitude's predictions differ between carriers beyond rounding."""
        return bool((self.sd > 0).any())

    def columns(self) -> dict[str, np.ndarray]:
        """The ``decoded`` table's columns."""
        return {"mean_decoded": self.mean, "sd_decoded": self.sd, "weber_fraction": self.weber}


def decoded_spread(predictions: np.ndarray, magnitudes: np.ndarray, target: str) -> DecodedSpread:
    """Per magnitude: mean and SD across carriers of n-hat, SD / n, and the log-scale centre.

    Args:
        predictions: held-out-carrier predictions of one target, (n_magnitudes, n_carriers).
        magnitudes: n, (n_magnitudes,).
        target: "log" or "linear".
    """
    values = np.asarray(predictions, dtype=np.float64)
    decoded = decode(values, target)
    rounding = np.ptp(values, axis=1) <= resolution(values)
    sd = np.where(rounding, 0.0, decoded.std(axis=1, ddof=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        weber = np.where(magnitudes > 0, sd / magnitudes, np.nan)
    centre = values.mean(axis=1) if target == "log" else np.zeros(values.shape[0])
    return DecodedSpread(decoded.mean(axis=1), sd, weber, centre)


def _slope(totals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """OLS slope and intercept from weighted totals (..., [w, x, y, xy, xx])."""
    w, sx, sy, sxy, sxx = np.moveaxis(totals, -1, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = sxx - sx * sx / w
        slope = np.where(spread > 1e-12 * np.abs(sxx), (sxy - sx * sy / w) / spread, np.nan)
        intercept = (sy - slope * sx) / w
    return slope, intercept


def _regression_columns(used: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per point [1, x, y, xy, xx], zero where not ``used``: weights @ these = the totals."""
    return np.column_stack([np.ones_like(x), x, y, x * y, x * x]) * used[:, None]


def fitted_magnitudes(spread: DecodedSpread, magnitudes: np.ndarray) -> np.ndarray:
    """Which magnitudes the decoded scaling fits: a spread between carriers (SD > 0) and n > 0."""
    return (spread.sd > 0) & np.isfinite(spread.sd) & (magnitudes > 0)


def _note(spread: DecodedSpread, n_points: int) -> str:
    if n_points >= MIN_SLOPE_POINTS:
        return ""
    if not spread.has_spread:
        return ("no decoded spread: the held-out predictions do not differ between carriers beyond rounding "
                "(every carrier gives the same vector, as at a context-free embedding layer)")
    return (f"only {n_points} magnitude(s) have a decoded spread between carriers beyond rounding; "
            f"the fit needs {MIN_SLOPE_POINTS}")


def decoded_scaling(spread: DecodedSpread, magnitudes: np.ndarray,
                    counts: np.ndarray) -> tuple[dict[str, float | int | str], dict[str, np.ndarray]]:
    """beta, intercept, weber_mean, calibration, n_points and note, with the replicates of beta and weber_mean.

    Args:
        spread: :func:`decoded_spread` of one target.
        magnitudes: n.
        counts: (n_boot, n_magnitudes) bootstrap draws (one product with them gives every replicate).
    """
    usable = fitted_magnitudes(spread, magnitudes)
    x = np.log(np.where(magnitudes > 0, magnitudes, 1.0))
    columns = np.column_stack([
        _regression_columns(usable, x, np.log(np.where(usable, spread.sd, 1.0))),
        np.where(usable, spread.weber, 0.0),
        usable.astype(np.float64),
    ])
    point_totals, replicate_totals = columns.sum(axis=0), counts @ columns
    n_points = int(usable.sum())
    if n_points >= MIN_SLOPE_POINTS:
        slope, intercept = (float(v) for v in _slope(point_totals[:5]))
        replicate_slopes = _slope(replicate_totals[:, :5])[0]
        weber_mean = float(point_totals[5] / point_totals[6])
        with np.errstate(divide="ignore", invalid="ignore"):
            replicate_weber = replicate_totals[:, 5] / replicate_totals[:, 6]
    else:
        slope = intercept = weber_mean = math.nan
        replicate_slopes = replicate_weber = np.full(counts.shape[0], math.nan)
    calibrated = (spread.mean > 0) & (magnitudes > 0)
    calibration = math.nan
    if np.count_nonzero(calibrated) >= MIN_SLOPE_POINTS:
        log_mean = np.log(np.where(calibrated, spread.mean, 1.0))
        calibration = float(_slope(_regression_columns(calibrated, x, log_mean).sum(axis=0))[0])
    point = {"beta": slope, "intercept": intercept, "weber_mean": weber_mean, "calibration": calibration,
             "n_points": n_points, "note": _note(spread, n_points)}
    return point, {"beta": replicate_slopes, "weber_mean": replicate_weber}


def constant_error_null(spread: DecodedSpread, magnitudes: np.ndarray,
                        permutations: PermutationDraws | None) -> tuple[float, np.ndarray]:
    """``beta_null`` and the slopes of the null distribution, one per permutation (see the module
    docstring): NaN and none where beta has fewer than :data:`MIN_SLOPE_POINTS` points.

    Args:
        spread: :func:`decoded_spread` of one target.
        magnitudes: n.
        permutations: the permutations of the fitted magnitudes' spreads (None: no null distribution).
    """
    usable = fitted_magnitudes(spread, magnitudes)
    if usable.sum() < MIN_SLOPE_POINTS:
        return math.nan, np.empty(0)
    x = np.log(magnitudes[usable])
    centred = x - x.mean()
    centre = spread.centre[usable]
    log_spread = np.log(spread.sd[usable]) - centre  # ln s_n
    beta_null = float(centred @ centre / float(centred @ centred))
    if permutations is None:
        return beta_null, np.empty(0)
    # slope(ln s_pi on x) = sum_i ln s_i x~_pi^-1(i) / sxx: permuting x instead of ln s is the same
    # distribution, the permutation null's slopes of the spreads on the permuted magnitudes.
    return beta_null, beta_null + permutations.slopes(x, log_spread)


def null_p(beta: float, beta_null: float, null_betas: np.ndarray) -> float:
    """Two-sided permutation p of ``beta`` against the null slopes: (1 + as far or farther from
    ``beta_null``) / (1 + permutations); NaN without permutations or without a beta.

    Args:
        beta: the observed slope.
        beta_null: the null distribution's mean.
        null_betas: its slopes.
    """
    if null_betas.size == 0 or not math.isfinite(beta):
        return math.nan
    observed = abs(beta - beta_null)
    # A permutation that reproduces the observed arrangement ties with it up to rounding.
    tolerance = 1e-12 * max(1.0, observed)
    extreme = np.count_nonzero(np.abs(null_betas - beta_null) >= observed - tolerance)
    return float((1 + extreme) / (1 + null_betas.size))
