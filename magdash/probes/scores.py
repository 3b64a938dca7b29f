"""Held-out scores of a probe, with bootstrap intervals over magnitudes.

Over the rows a scheme predicts (every row for held-out carriers; the inner magnitudes for
held-out magnitudes), with label y, prediction p and decoded magnitude n-hat (exp p for the log
target, p for the linear one) compared with the magnitude m the label stands for (n, or n[pi(i)]
in the control task):

- ``r2``: 1 - sum (y - p)^2 / sum (y - mean y)^2, pooled over the held-out predictions of all
  folds (as scikit-learn's ``r2_score`` of ``cross_val_predict``'s output); 0 is the score of
  predicting the mean, and it is negative when the probe does worse than that;
- ``spearman``: the rank correlation of p with y (Pearson's r of their mid-ranks; predictions are
  rounded to a grid of :data:`PREDICTION_RESOLUTION` of their range first, so that values parted only
  by rounding fall in one step and tie);
- ``error_log``: the mean of |ln n-hat - ln m|, the decoded magnitude's error as a log ratio
  (0.1 is about 10 % off), over the predictions with n-hat > 0; ``share_nonpositive`` is the
  share left out because n-hat <= 0 (possible for the linear target only);
- selectivity: r2 of the real task minus r2 of the control task (Hewitt & Liang 2019).

**Intervals** resample the magnitudes with replacement, each drawn magnitude bringing all its
carriers' predictions (a cluster bootstrap: the vectors of one number token are not independent
of one another, the magnitudes are the sampled units), and recompute every score from the same
held-out predictions: the interval is that of the held-out score over the set of magnitudes,
given the fitted probes (refitting per resample would cost the whole cross-validation n_boot
times). Every score of a layer and scheme uses the same draws, so differences (selectivity) get
paired intervals; draws depend only on the seed and the number of magnitudes, so every layer
uses the same ones. Spearman's interval resamples the mid-ranks computed once over all
predictions (the bootstrap of the Pearson correlation of the ranks) rather than ranking every
resample again, which would cost a sort per draw; the two differ by ties among duplicated
magnitudes, O(1/n). Percentile intervals at ``ci``; draws in which a score is undefined (one
magnitude drawn every time) are left out of its interval.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from magdash.probes.labels import decode

SCORES = ("r2", "spearman", "error_log")

PREDICTION_RESOLUTION = 1e-9
"""The fraction of their range below which predictions are equal but for rounding: for ranking they
are rounded to a grid of this step (values in one step tie; two values either side of a step's
edge do not, a chance of about the rounding error over the step, 1e-5), and a magnitude whose
carriers' predictions all lie within one step of each other has no spread between carriers
(:mod:`magdash.probes.decoded`). Predictions that are equal in exact arithmetic (a decoder's
embedding layer gives every carrier of a number the same vector) differ in their last digits by
the machine's BLAS and summation order, which would otherwise decide their ranks (Spearman's rho
differed between machines in its fifth digit) and make a spread of rounding errors to fit."""

# Per-magnitude sums the scores are built from, in this order along the last axis.
_N, _Y, _YY, _SSE, _R, _RR, _S, _SS, _SR, _ERR, _VALID = range(11)


class BootstrapDraws:
    """Resamples of magnitudes, as counts (n_boot, n_population): how often each was drawn.

    One instance serves every layer of a run (the counts are kept per population size); they
    depend only on ``seed`` and the population size.
    """

    def __init__(self, n_boot: int, seed: int):
        self.n_boot = n_boot
        self.seed = seed
        self._counts: dict[int, np.ndarray] = {}

    def counts(self, n_population: int) -> np.ndarray:
        if n_population not in self._counts:
            rng = np.random.default_rng([self.seed, n_population])
            draws = rng.multinomial(n_population, np.full(n_population, 1.0 / n_population), size=self.n_boot)
            self._counts[n_population] = draws.astype(np.float64)
        return self._counts[n_population]


def percentile_interval(replicates: np.ndarray, ci: float) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) along axis 0 of the finite replicates (linear interpolation between order
    statistics, numpy's default quantile); NaN where there are none."""
    values = np.asarray(replicates, dtype=np.float64)
    if values.shape[0] == 0:
        return np.full(values.shape[1:], math.nan), np.full(values.shape[1:], math.nan)
    if np.isfinite(values).all():  # the usual case: a partial sort does
        low, high = np.quantile(values, [(1 - ci) / 2, (1 + ci) / 2], axis=0)
        return low, high
    values = np.sort(np.where(np.isfinite(values), values, np.inf), axis=0)  # undefined draws sort last
    finite = np.isfinite(values).sum(axis=0)
    last = np.maximum(finite - 1, 0)
    bounds = []
    for level in ((1 - ci) / 2, (1 + ci) / 2):
        position = level * last
        below = np.floor(position).astype(int)
        lower = np.take_along_axis(values, below[None], axis=0)[0]
        upper = np.take_along_axis(values, np.minimum(below + 1, last)[None], axis=0)[0]
        with np.errstate(invalid="ignore"):
            bound = lower + (position - below) * (upper - lower)
        bounds.append(np.where(finite > 0, bound, math.nan))
    return bounds[0], bounds[1]


def resolution(values: np.ndarray) -> float:
    """:data:`PREDICTION_RESOLUTION` times the range of the finite ``values``: two of them closer
    than this are equal but for rounding (0 when they are all equal)."""
    finite = values[np.isfinite(values)]
    return PREDICTION_RESOLUTION * (float(finite.max() - finite.min()) if finite.size else 0.0)


def tied_within_resolution(values: np.ndarray) -> np.ndarray:
    """``values`` rounded to a grid of :func:`resolution` steps, so that values parted only by rounding
    fall in one step and rank as ties (values more than a step apart keep their order)."""
    step = resolution(values)
    return np.round(values / step) if step > 0 else values


def magnitude_sums(predictions: np.ndarray, labels: np.ndarray, reference: np.ndarray,
                   targets: tuple[str, ...]) -> np.ndarray:
    """Per magnitude and column the sums every score is built from, (n, n_columns, 11).

    Args:
        predictions: held-out predictions of the tested magnitudes, (n, C, n_columns).
        labels: their labels in the target's scale, (n, n_columns).
        reference: the magnitude each label stands for, (n, n_columns).
        targets: each column's target ("log" or "linear").
    """
    n, carriers, n_columns = predictions.shape
    sums = np.zeros((n, n_columns, 11))
    for column, target in enumerate(targets):
        p = predictions[:, :, column]
        y = labels[:, column]
        ranks = stats.rankdata(tied_within_resolution(p).ravel()).reshape(n, carriers)
        label_ranks = stats.rankdata(np.repeat(y, carriers)).reshape(n, carriers)[:, 0]
        decoded = decode(p, target)
        magnitude = reference[:, column][:, None]
        valid = (decoded > 0) & (magnitude > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.log(np.where(valid, decoded, 1.0)) - np.log(np.where(valid, magnitude, 1.0))
        errors = np.abs(ratio)
        sums[:, column] = np.column_stack([
            np.full(n, float(carriers)),
            carriers * y,
            carriers * y * y,
            ((p - y[:, None]) ** 2).sum(axis=1),
            ranks.sum(axis=1),
            (ranks * ranks).sum(axis=1),
            carriers * label_ranks,
            carriers * label_ranks * label_ranks,
            label_ranks * ranks.sum(axis=1),
            errors.sum(axis=1),
            valid.sum(axis=1),
        ])
    return sums


def scores_from_sums(totals: np.ndarray) -> dict[str, np.ndarray]:
    """The scores from weighted totals of :func:`magnitude_sums` (..., n_columns, 11)."""
    t = np.moveaxis(totals, -1, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        total_sq = t[_YY] - t[_Y] ** 2 / t[_N]
        r2 = 1.0 - t[_SSE] / total_sq
        r2 = np.where(total_sq > 0, r2, np.nan)
        covariance = t[_SR] - t[_R] * t[_S] / t[_N]
        spread = (t[_RR] - t[_R] ** 2 / t[_N]) * (t[_SS] - t[_S] ** 2 / t[_N])
        spearman = np.where(spread > 0, covariance / np.sqrt(np.where(spread > 0, spread, 1.0)), np.nan)
        error = np.where(t[_VALID] > 0, t[_ERR] / t[_VALID], np.nan)
    return {"r2": r2, "spearman": spearman, "error_log": error, "share_nonpositive": 1.0 - t[_VALID] / t[_N]}


def held_out_scores(predictions: np.ndarray, labels: np.ndarray, reference: np.ndarray,
                    targets: tuple[str, ...], counts: np.ndarray) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Point scores (n_columns,) and bootstrap replicates (n_boot, n_columns) of each score.

    Args:
        predictions, labels, reference, targets: as for :func:`magnitude_sums`.
        counts: (n_boot, n) draws of the magnitudes (:class:`BootstrapDraws`).
    """
    sums = magnitude_sums(predictions, labels, reference, targets)
    flat = sums.reshape(sums.shape[0], -1)
    point = scores_from_sums(flat.sum(axis=0).reshape(sums.shape[1:]))
    replicates = scores_from_sums((counts @ flat).reshape(counts.shape[0], *sums.shape[1:]))
    return point, replicates
