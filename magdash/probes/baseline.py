"""What a probe's R² owes to the numbers' written form: the score of a predictor that knows only
each number's digit count (and, where the token facts are recorded, its token count), on the
probe's own folds, and the probe's R² within those strata.

Over the paper's 26 magnitudes 86.5 % of the variance of ln n lies between their digit counts
(1-9, 10-90, 100-700, 1000): a read-out that had learnt nothing but how many digits a number has
(visible in its token count and, for a tokenizer that splits digits, in which token is kept)
would score a held-out-magnitude R² of 0.8. A probe's R² says something about a magnitude code
only by what it adds to that, as the analysis's alpha is read beside its value adjusted for
tokenization (:mod:`magdash.variability.tokenization_fits`; digit-count boundaries distort the
geometry: Cacioli 2026, arXiv 2603.28258).

**Strata** (:func:`magnitude_strata`): each magnitude's digit count
(:func:`magdash.tokenization.digit_count`), crossed with its token count where one is given
(for a tokenizer that splits digits the two agree; for one that groups them, as WordPiece or
Llama 3's runs of three, the token count splits a digit count further).

**The baseline** (:func:`stratum_mean_predictions`): in each fold of a scheme, every test row is
predicted by the mean label of the fold's training rows in its stratum, the least-squares
prediction from the stratum alone; a stratum without training rows (possible across held-out
magnitudes only) takes the mean of all the fold's training labels. Its held-out R² over the rows
the probe predicts is ``baseline_r2``. Across held-out carriers every magnitude is in every
training fold, so it is the labels' between-strata share of variance; across held-out magnitudes
it is what the stratum alone interpolates.

**Within strata** (:func:`within_strata_sums`, :func:`within_strata_r2`): with the tested
magnitudes i of stratum s, each of weight w_i (1, or how often a bootstrap draw took it), their
labels y_i, their C held-out predictions p_ic, d_ic = y_i - p_ic and W_s = C sum_i w_i,

    SST_s = C sum_i w_i y_i^2 - (C sum_i w_i y_i)^2 / W_s
    SSE_s = sum_i w_i sum_c d_ic^2 - (sum_i w_i sum_c d_ic)^2 / W_s
    r2_within_strata = 1 - sum_s SSE_s / sum_s SST_s,

the pooled R² of the predictions and the labels each taken about its own stratum's mean: does the
probe place magnitudes right within a digit count, whatever it does between digit counts? A
stratum with fewer than two distinct magnitudes (tested, or drawn) has no spread of labels to
explain and is left out of both sums; with none left the score is NaN. A read-out of the digit
count alone predicts a constant within each stratum and scores at most 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from magdash.errors import AnalysisError
from magdash.tokenization import digit_count

DIGITS = "digit count"
DIGITS_AND_TOKENS = "digit count and token count"
"""What the strata are made of: ``Strata.by``."""

# Per-magnitude sums of the within-strata score, in this order along the last axis.
_W, _Y, _YY, _D, _DD = range(5)


@dataclass(frozen=True)
class Strata:
    """Each magnitude's stratum.

    Attributes:
        codes: per magnitude (in the order given), the index of its stratum in ``labels``.
        labels: each stratum's name ("2 digits", "3 digits, 2 tokens"), in increasing order.
        by: what defines them: :data:`DIGITS` or :data:`DIGITS_AND_TOKENS`.
    """

    codes: np.ndarray
    labels: tuple[str, ...]
    by: str

    def names(self) -> list[str]:
        """Each magnitude's stratum name, in the magnitudes' order."""
        return [self.labels[code] for code in self.codes]


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def magnitude_strata(magnitudes: np.ndarray, token_counts: Sequence[int] | None = None) -> Strata:
    """The digit count of every magnitude, crossed with its token count when given.

    Args:
        magnitudes: the magnitudes.
        token_counts: each magnitude's token count (agreed over its carriers:
            :func:`magdash.tokenization.per_magnitude`), in the same order; None when not recorded.
    """
    digits = [digit_count(float(value)) for value in np.asarray(magnitudes, dtype=np.float64)]
    if token_counts is None:
        keys = [(count, 0) for count in digits]
    else:
        if len(token_counts) != len(digits):
            raise AnalysisError(f"{len(token_counts)} token counts for {len(digits)} magnitudes: give one per magnitude")
        keys = [(count, int(tokens)) for count, tokens in zip(digits, token_counts, strict=True)]
    ordered = sorted(set(keys))
    index = {key: position for position, key in enumerate(ordered)}
    labels = tuple(_plural(count, "digit") + (f", {_plural(tokens, 'token')}" if token_counts is not None else "")
                   for count, tokens in ordered)
    return Strata(np.array([index[key] for key in keys], dtype=np.int64), labels,
                  DIGITS if token_counts is None else DIGITS_AND_TOKENS)


def stratum_mean_predictions(labels: np.ndarray, codes: np.ndarray,
                             folds: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Each test row's prediction from its stratum alone: its fold's mean training label in that
    stratum (the fold's mean training label where the stratum has no training row).

    Args:
        labels: every row's labels, (n_rows, n_columns).
        codes: every row's stratum, (n_rows,).
        folds: (train rows, test rows) of each fold, as the probe's cross-validation uses them.

    Returns:
        (n_rows, n_columns) predictions, NaN for rows no fold tests.
    """
    predictions = np.full(labels.shape, np.nan)
    for train, test in folds:
        fallback = labels[train].mean(axis=0)
        for code in np.unique(codes[test]):
            members = train[codes[train] == code]
            rows = test[codes[test] == code]
            predictions[rows] = labels[members].mean(axis=0) if members.size else fallback
    return predictions


def within_strata_sums(predictions: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Per magnitude and label column the sums the within-strata score is built from, (n, n_columns, 5).

    Args:
        predictions: held-out predictions of the tested magnitudes, (n, C, n_columns).
        labels: their labels, (n, n_columns).
    """
    carriers = predictions.shape[1]
    differences = labels[:, None, :] - predictions
    return np.stack([np.full(labels.shape, float(carriers)), carriers * labels, carriers * labels * labels,
                     differences.sum(axis=1), (differences * differences).sum(axis=1)], axis=-1)


def _r2_from_stratum_totals(totals: np.ndarray, usable: np.ndarray) -> np.ndarray:
    """1 - sum SSE_s / sum SST_s over the usable strata; totals (..., n_strata, n_columns, 5),
    usable (..., n_strata)."""
    t = np.moveaxis(totals, -1, 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        weight = np.where(t[_W] > 0, t[_W], 1.0)
        sst = t[_YY] - t[_Y] ** 2 / weight
        sse = t[_DD] - t[_D] ** 2 / weight
    keep = usable[..., None]
    sst_total = np.where(keep, sst, 0.0).sum(axis=-2)
    sse_total = np.where(keep, sse, 0.0).sum(axis=-2)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(sst_total > 0, 1.0 - sse_total / np.where(sst_total > 0, sst_total, 1.0), np.nan)


def _members(codes: np.ndarray) -> list[slice | np.ndarray]:
    """Each stratum's magnitudes: a slice where they are contiguous (the usual case, magnitudes in
    increasing order have increasing digit counts), so the draws' columns are read without a copy."""
    found: list[slice | np.ndarray] = []
    for code in np.unique(codes):
        rows = np.flatnonzero(codes == code)
        found.append(slice(rows[0], rows[-1] + 1) if rows[-1] - rows[0] + 1 == rows.size else rows)
    return found


def within_strata_r2(predictions: np.ndarray, labels: np.ndarray, codes: np.ndarray,
                     counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The probe's R² within strata: the point value (n_columns,), its bootstrap replicates
    (n_boot, n_columns) and the number of strata it pools.

    Args:
        predictions: held-out predictions of the tested magnitudes, (n, C, n_columns).
        labels: their labels, (n, n_columns).
        codes: their strata, (n,).
        counts: (n_boot, n) draws of the magnitudes (:class:`~magdash.probes.scores.BootstrapDraws`).
    """
    sums = within_strata_sums(predictions, labels)
    flat = sums.reshape(sums.shape[0], -1)
    members = _members(codes)
    sizes = np.array([flat[rows].shape[0] for rows in members])
    point = _r2_from_stratum_totals(np.stack([flat[rows].sum(axis=0) for rows in members]).reshape(
        len(members), *sums.shape[1:]), sizes >= 2)
    replicate_totals = np.stack([counts[:, rows] @ flat[rows] for rows in members], axis=1)
    drawn = np.stack([np.count_nonzero(counts[:, rows], axis=1) for rows in members], axis=1)
    replicates = _r2_from_stratum_totals(replicate_totals.reshape(counts.shape[0], len(members), *sums.shape[1:]),
                                         drawn >= 2)
    return point, replicates, int((sizes >= 2).sum())
