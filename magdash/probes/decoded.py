"""Decoded scalar variability: the spread across carriers of the magnitude a probe reads.

From the held-out-carrier predictions (each carrier's vector read by a probe that never saw that
carrier), with n-hat[n, c] the decoded magnitude (exp of the prediction for the log target, the
prediction itself for the linear one):

- ``mean_decoded`` (n) = mean_c n-hat[n, c] and ``sd_decoded`` (n) = SD_c n-hat[n, c] (ddof 1);
- the decoded Weber fraction ``weber_fraction`` (n) = SD(n-hat) / n;
- its scaling: the OLS slope beta of log SD(n-hat) on log n over the magnitudes with
  SD > 0. beta = 1: SD grows in proportion to n, a constant Weber fraction (scalar variability,
  Weber's law in decoded units); beta = 0: a constant absolute noise; beta < 0: the noise shrinks
  as n grows (anti-scalar). ``weber_mean`` is the mean Weber fraction over the magnitudes, the
  Weber fraction itself when beta = 1;
- ``calibration``: the OLS slope of log mean n-hat on log n (1 when the decoder is unbiased on
  the ratio scale). The Weber fraction is read on the n-scale only where the decoder is
  calibrated: by the delta method SD(n-hat) ~ n-hat * SD(p) for the log read-out and
  SD(n-hat) = SD(p) for the linear one, so two read-outs of the same axis give slopes about 1
  apart. The log read-out is the primary one (its n-hat is positive, its errors are ratios, the
  scale on which Weber's law is stated); the linear read-out's is reported beside it, to be read
  only where its ``calibration`` is near 1.

Intervals of beta and ``weber_mean`` resample the magnitudes (each with all its carriers'
predictions) with the draws of :class:`~magdash.probes.scores.BootstrapDraws`; the slope is
refitted in each draw from the same decoded values.
"""

from __future__ import annotations

import math

import numpy as np

from magdash.probes.labels import decode

MIN_SLOPE_POINTS = 3


def decoded_spread(predictions: np.ndarray, magnitudes: np.ndarray, target: str) -> dict[str, np.ndarray]:
    """Per magnitude: mean and SD across carriers of n-hat, and SD / n.

    Args:
        predictions: held-out-carrier predictions of one target, (n_magnitudes, n_carriers).
        magnitudes: n, (n_magnitudes,).
        target: "log" or "linear".
    """
    decoded = decode(np.asarray(predictions, dtype=np.float64), target)
    sd = decoded.std(axis=1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        weber = np.where(magnitudes > 0, sd / magnitudes, np.nan)
    return {"mean_decoded": decoded.mean(axis=1), "sd_decoded": sd, "weber_fraction": weber}


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


def decoded_scaling(spread: dict[str, np.ndarray], magnitudes: np.ndarray,
                    counts: np.ndarray) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """beta, intercept, weber_mean, calibration and n_points, with the replicates of beta and weber_mean.

    Args:
        spread: :func:`decoded_spread` of one target.
        magnitudes: n.
        counts: (n_boot, n_magnitudes) bootstrap draws (one product with them gives every replicate).
    """
    sd, weber, mean = spread["sd_decoded"], spread["weber_fraction"], spread["mean_decoded"]
    usable = (sd > 0) & np.isfinite(sd) & (magnitudes > 0)
    x = np.log(np.where(magnitudes > 0, magnitudes, 1.0))
    has_weber = np.isfinite(weber)
    columns = np.column_stack([
        _regression_columns(usable, x, np.log(np.where(usable, sd, 1.0))),
        np.where(has_weber, weber, 0.0),
        has_weber.astype(np.float64),
    ])
    point_totals, replicate_totals = columns.sum(axis=0), counts @ columns
    n_points = int(usable.sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        weber_mean = point_totals[5] / point_totals[6] if point_totals[6] > 0 else math.nan
        replicate_weber = replicate_totals[:, 5] / replicate_totals[:, 6]
    if n_points >= MIN_SLOPE_POINTS:
        slope, intercept = (float(v) for v in _slope(point_totals[:5]))
        replicate_slopes = _slope(replicate_totals[:, :5])[0]
    else:
        slope = intercept = math.nan
        replicate_slopes = np.full(counts.shape[0], math.nan)
    calibrated = (mean > 0) & (magnitudes > 0)
    calibration = math.nan
    if np.count_nonzero(calibrated) >= MIN_SLOPE_POINTS:
        log_mean = np.log(np.where(calibrated, mean, 1.0))
        calibration = float(_slope(_regression_columns(calibrated, x, log_mean).sum(axis=0))[0])
    point = {"beta": slope, "intercept": intercept, "weber_mean": float(weber_mean), "calibration": calibration,
             "n_points": n_points}
    return point, {"beta": replicate_slopes, "weber_mean": replicate_weber}
