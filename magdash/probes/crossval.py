"""The two cross-validations of a probe and the ridge fits inside them (scikit-learn).

**Held-out carriers** (does the code generalise to a new context?): scikit-learn's
``LeaveOneGroupOut`` with the carrier as the group, so the probe that predicts carrier c's
vectors never saw a vector of carrier c; with ``carrier_folds = G >= 2``, ``GroupKFold`` deals
the carriers into G folds instead (fewer fits; each carrier is still predicted by a probe that
never saw it, trained on C - C/G carriers rather than C - 1).

**Held-out magnitudes** (does it interpolate?): the magnitudes are sorted, the smallest and the
largest are always in training, and the inner ones are dealt to the K folds in turn (the j-th
inner magnitude to fold j mod K), given to scikit-learn's ``PredefinedSplit`` (the endpoints get
fold -1: never tested). All carriers of a magnitude fall in the same fold (the magnitude is the
group, as in ``GroupKFold``), and each fold's test magnitudes are spread over the whole range
with trained neighbours on both sides: every prediction is an interpolation, never an
extrapolation beyond the trained range. The endpoints have no held-out-magnitude prediction.

**The fit in each training fold** chooses each label column's penalty with ``RidgeCV``'s
efficient generalised cross-validation (all columns at once, ``alpha_per_target``), on the
training rows only: the regularisation is chosen inside the training fold, and the held-out rows
never touch it. GCV leaves out one vector at a time, whose magnitude stays in training through
its other carriers, so it is optimistic about weak penalties, and a weak penalty lets the probe
lean on directions in which the training carriers barely vary but a new carrier does (a
planted case: held-out-carrier R² 0.64 at GCV's own choice, 0.996 at the rule's). So the
choice follows the one-standard-error rule (Hastie, Tibshirani & Friedman, *The Elements of
Statistical Learning*, sec. 7.10): the largest penalty whose GCV error is within one standard
error of the smallest, the standard error taken over magnitudes (each magnitude's rows averaged
first: they are not independent). Then ``Ridge`` is fitted with those penalties on the training
rows. A training fold larger than ``alpha_rows`` chooses its penalties on ``alpha_rows`` of its
rows drawn at random (seeded) and fits on all of them: GCV costs a pass over the rows per
alpha, and the best penalty of a Gaussian-prior ridge (noise variance over prior variance) does
not depend on the number of rows.

**The probe direction** is the coefficient of a final fit on every row (its penalty chosen the
same way), mapped to the layer's d dimensions; ``fold_cosine`` says how much the held-out-carrier
folds' directions agree with it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def carrier_groups(n_magnitudes: int, n_carriers: int) -> np.ndarray:
    """The carrier of every row (magnitude-major rows)."""
    return np.tile(np.arange(n_carriers), n_magnitudes)


def magnitude_groups(n_magnitudes: int, n_carriers: int) -> np.ndarray:
    """The magnitude (index) of every row (magnitude-major rows)."""
    return np.repeat(np.arange(n_magnitudes), n_carriers)


def magnitude_fold_of(magnitudes: np.ndarray, n_folds: int) -> np.ndarray:
    """Per magnitude its held-out-magnitude fold: -1 for the smallest and largest (always trained
    on), else the inner magnitude's rank mod ``n_folds`` (ranks of the sorted inner magnitudes)."""
    order = np.argsort(magnitudes)
    folds = np.full(magnitudes.size, -1)
    inner = order[1:-1]
    folds[inner] = np.arange(inner.size) % n_folds
    return folds


def splits(scheme: str, magnitudes: np.ndarray, n_carriers: int, *, magnitude_folds: int,
           carrier_folds: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train rows, test rows) of every fold of ``scheme`` ("carrier" or "magnitude")."""
    from sklearn.model_selection import GroupKFold, LeaveOneGroupOut, PredefinedSplit

    n_rows = magnitudes.size * n_carriers
    placeholder = np.zeros((n_rows, 1))
    if scheme == "carrier":
        groups = carrier_groups(magnitudes.size, n_carriers)
        splitter = GroupKFold(n_splits=carrier_folds) if carrier_folds else LeaveOneGroupOut()
        return list(splitter.split(placeholder, groups=groups))
    test_fold = np.repeat(magnitude_fold_of(magnitudes, magnitude_folds), n_carriers)
    return list(PredefinedSplit(test_fold).split())


@dataclass(frozen=True)
class FoldFit:
    """One fitted probe: ``coef`` (n_columns, k) on the features and the chosen ``alpha`` per column."""

    coef: np.ndarray
    intercept: np.ndarray
    alpha: np.ndarray

    def predict(self, features: np.ndarray) -> np.ndarray:
        return features @ self.coef.T + self.intercept


def one_standard_error_alphas(errors: np.ndarray, groups: np.ndarray, alphas: np.ndarray) -> np.ndarray:
    """Per label column the largest penalty whose mean error is within one standard error of the
    smallest mean error, errors averaged within each group first.

    Args:
        errors: leave-one-out squared errors, (n_rows, n_columns, n_alphas) (``RidgeCV.cv_results_``).
        groups: the group (magnitude) of each row.
        alphas: the penalties, ascending.
    """
    order = np.argsort(groups, kind="stable")
    ordered = np.asarray(groups)[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    sizes = np.diff(np.r_[starts, ordered.size]).astype(np.float64)
    per_group = np.add.reduceat(errors[order], starts, axis=0) / sizes[:, None, None]
    mean = per_group.mean(axis=0)  # (n_columns, n_alphas)
    spread = per_group.std(axis=0, ddof=1) / np.sqrt(sizes.size) if sizes.size > 1 else np.zeros_like(mean)
    best = mean.argmin(axis=1)
    columns = np.arange(mean.shape[0])
    limit = (mean[columns, best] + spread[columns, best])[:, None]
    within = mean <= limit
    return alphas[within.shape[1] - 1 - np.argmax(within[:, ::-1], axis=1)]


def fit_ridge(features: np.ndarray, labels: np.ndarray, groups: np.ndarray, alphas: np.ndarray, alpha_rows: int,
              rng: np.random.Generator) -> FoldFit:
    """Ridge on ``features`` -> ``labels`` (n x columns), each column's penalty chosen by GCV with the
    one-standard-error rule (see the module docstring).

    Args:
        features: the training rows' coordinates (n x k).
        labels: their labels, one column per (task, target).
        groups: each row's magnitude (the unit of the rule's standard error).
        alphas: the penalty grid, ascending.
        alpha_rows: above this many rows the penalties are chosen on that many random rows.
        rng: draws those rows.
    """
    from sklearn.linear_model import Ridge, RidgeCV

    rows = slice(None) if features.shape[0] <= alpha_rows else rng.choice(features.shape[0], alpha_rows,
                                                                            replace=False)
    search = RidgeCV(alphas=alphas, alpha_per_target=True, store_cv_results=True).fit(features[rows], labels[rows])
    errors = np.asarray(search.cv_results_).reshape(-1, labels.shape[1], alphas.size)
    chosen = one_standard_error_alphas(errors, groups[rows], alphas)
    model = Ridge(alpha=chosen).fit(features, labels)  # pyright: ignore[reportArgumentType] - sklearn takes one alpha per target as an array
    coef = np.asarray(model.coef_, dtype=np.float64).reshape(labels.shape[1], -1)
    return FoldFit(coef, np.asarray(model.intercept_, dtype=np.float64).reshape(-1), chosen)


@dataclass(frozen=True)
class CrossValidation:
    """Held-out predictions of one scheme: ``predictions`` (n_rows, n_columns), NaN for rows no
    fold tests; each fold's :class:`FoldFit`."""

    predictions: np.ndarray
    folds: list[FoldFit]

    @property
    def alphas(self) -> np.ndarray:
        """Chosen penalties, (n_folds, n_columns)."""
        return np.stack([fold.alpha for fold in self.folds])


def cross_validate(features: np.ndarray, labels: np.ndarray, groups: np.ndarray,
                   folds: list[tuple[np.ndarray, np.ndarray]], alphas: np.ndarray, alpha_rows: int,
                   rng: np.random.Generator) -> CrossValidation:
    """Fit on each fold's training rows, predict its test rows (``cross_val_predict``'s loop,
    keeping each fold's penalties and coefficients); ``groups`` is each row's magnitude."""
    predictions = np.full(labels.shape, np.nan)
    fits = []
    for train, test in folds:
        fit = fit_ridge(features[train], labels[train], groups[train], alphas, alpha_rows, rng)
        predictions[test] = fit.predict(features[test])
        fits.append(fit)
    return CrossValidation(predictions, fits)
