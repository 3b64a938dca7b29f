"""The trials frame every fit reads, and the position-bias-corrected accuracy of its cells.

The trials frame has one row per forced-choice trial (columns: :data:`TRIAL_COLUMNS`; extra columns are
allowed and ignored). A trial is *measured* when its two answer options hold at least
``min_option_mass`` of the model's next-token probability (``prob_a + prob_b``): a model that answers
neither option is not measured, and the trials it leaves are counted as unanswered.

Position-bias correction (Cacioli 2026, arXiv 2603.20642, Paradigm B): in a cell of one task, reference
and ratio, the accuracy of the trials whose larger number is in position A and that of the trials whose
larger number is in B are taken apart and averaged, accuracy = (accuracy_A + accuracy_B) / 2, so a model
that answers "A" whatever the numbers scores 0.5, not the share of A-correct trials; the bias itself,
accuracy_A - accuracy_B, is reported beside it (0: no preference for a position; +1: always "A").
"""

from __future__ import annotations

from typing import cast

import numpy as np
import pandas as pd

from magdash.errors import AnalysisError

TRIAL_COLUMNS = ("task", "reference", "ratio", "larger", "value_a", "value_b", "prompt", "logit_a", "logit_b",
                 "prob_a", "prob_b", "chosen", "correct")
"""The columns of the trials frame (the store's trials table, :mod:`magdash.behaviour.published`'s import)."""
FIT_COLUMNS = ("task", "reference", "ratio", "larger", "logit_a", "logit_b", "prob_a", "prob_b", "chosen", "correct")
"""The columns the fits read."""
OPTIONS = ("A", "B")
CELL_COLUMNS = ["task", "reference", "ratio", "n_a", "n_b", "accuracy_a", "accuracy_b", "accuracy", "bias",
                "n_unanswered"]


def as_float(value: object) -> float:
    """A number that pandas hands back as a group key or cell (typed ``Hashable``, ``Scalar``) as a float.

    Args:
        value: the key.
    """
    return float(cast(float, value))


def checked_trials(trials: pd.DataFrame) -> pd.DataFrame:
    """The trials with the columns the fits read, typed and indexed 0..n-1, or an :class:`~magdash.errors.AnalysisError`
    saying what is missing or wrong.

    Args:
        trials: the trials frame (:data:`TRIAL_COLUMNS`).
    """
    if not isinstance(trials, pd.DataFrame):
        raise AnalysisError(f"trials must be a DataFrame with columns {', '.join(FIT_COLUMNS)}, "
                            f"got {type(trials).__name__}", parameters=("trials",))
    missing = [column for column in FIT_COLUMNS if column not in trials.columns]
    if missing:
        raise AnalysisError(f"trials lack the column(s) {', '.join(missing)}", parameters=("trials",))
    if trials.empty:
        raise AnalysisError("trials holds no trial", parameters=("trials",))
    frame = trials.loc[:, list(FIT_COLUMNS)].reset_index(drop=True)
    frame["task"] = frame["task"].astype(str)
    for column in ("reference", "ratio", "logit_a", "logit_b", "prob_a", "prob_b"):
        try:
            frame[column] = pd.to_numeric(frame[column], errors="raise").astype(float)
        except (TypeError, ValueError):
            raise AnalysisError(f"trials' column {column} holds values that are not numbers",
                                parameters=("trials",)) from None
    bad = ~frame["larger"].isin(OPTIONS)
    if bad.any():
        raise AnalysisError(f"trials' column larger must hold 'A' or 'B'; {int(bad.sum())} row(s) hold "
                            f"{sorted(set(map(str, frame.loc[bad, 'larger'])))[:3]}", parameters=("trials",))
    ratios = frame["ratio"].to_numpy()
    if not np.all(np.isfinite(ratios)) or np.any(ratios < 1):
        raise AnalysisError("trials' ratios must be finite numbers >= 1 (the larger number over the other)",
                            parameters=("trials",))
    frame["chosen"] = frame["chosen"].where(frame["chosen"].isin(OPTIONS), "")
    frame["correct"] = frame["correct"].astype(bool)
    return frame


def measured(trials: pd.DataFrame, min_option_mass: float) -> np.ndarray:
    """Which trials are measured: the two options hold at least ``min_option_mass`` and one was chosen.

    Args:
        trials: the trials (:func:`checked_trials`).
        min_option_mass: the least ``prob_a + prob_b`` of a measured trial.
    """
    mass = (trials["prob_a"] + trials["prob_b"]).to_numpy()
    return (np.nan_to_num(mass, nan=0.0) >= min_option_mass) & trials["chosen"].isin(OPTIONS).to_numpy()


def soft_correct(trials: pd.DataFrame) -> np.ndarray:
    """Each trial's probability of choosing the larger number between the two options:
    sigmoid(logit of the larger option - logit of the other), the softmax restricted to the two options
    (the graded variant's outcome, :mod:`magdash.behaviour.psychometric`).

    Args:
        trials: the trials (:func:`checked_trials`).
    """
    difference = (trials["logit_a"] - trials["logit_b"]).to_numpy()
    difference = np.where(trials["larger"].to_numpy() == "A", difference, -difference)
    return 1.0 / (1.0 + np.exp(-np.clip(difference, -700.0, 700.0)))


def cell_table(trials: pd.DataFrame, is_measured: np.ndarray) -> pd.DataFrame:
    """The ``cells`` frame: per task, reference and ratio, the measured trials in each position, their
    accuracies, the position-corrected accuracy (mean of the two; the one there is when a position has
    no measured trial), the bias (accuracy_A - accuracy_B) and the unanswered trials.

    Args:
        trials: the trials (:func:`checked_trials`).
        is_measured: :func:`measured` of the trials.
    """
    frame = trials.assign(measured=is_measured)
    rows = []
    for (task, reference, ratio), cell in frame.groupby(["task", "reference", "ratio"], sort=True):
        kept = cell[cell["measured"]]
        n = {side: int((kept["larger"] == side).sum()) for side in OPTIONS}
        accuracy = {side: float(kept.loc[kept["larger"] == side, "correct"].mean()) if n[side] else np.nan
                    for side in OPTIONS}
        values = [accuracy[side] for side in OPTIONS if n[side]]
        rows.append({"task": task, "reference": as_float(reference), "ratio": as_float(ratio), "n_a": n["A"], "n_b": n["B"],
                     "accuracy_a": accuracy["A"], "accuracy_b": accuracy["B"],
                     "accuracy": float(np.mean(values)) if values else np.nan,
                     "bias": accuracy["A"] - accuracy["B"], "n_unanswered": int((~cell["measured"]).sum())})
    return pd.DataFrame(rows, columns=CELL_COLUMNS)


def position_samples(trials: pd.DataFrame, values: np.ndarray) -> dict[tuple[float, str], np.ndarray]:
    """One reference's per-trial outcomes grouped by ratio and the larger number's position
    (the cells the bootstrap resamples within).

    Args:
        trials: one task's and reference's measured trials.
        values: their outcomes (correct as 0/1, or :func:`soft_correct`), in the trials' order.
    """
    groups: dict[tuple[float, str], np.ndarray] = {}
    larger = trials["larger"].to_numpy()
    ratios = trials["ratio"].to_numpy()
    for ratio in np.unique(ratios):
        for side in OPTIONS:
            chosen = (ratios == ratio) & (larger == side)
            if chosen.any():
                groups[(float(ratio), side)] = np.asarray(values[chosen], dtype=float)
    return groups


def corrected_proportions(groups: dict[tuple[float, str], np.ndarray], ratios: np.ndarray,
                          rng: np.random.Generator | None = None, n_boot: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The position-corrected proportion per ratio and the trials behind it; with ``rng``, ``n_boot``
    bootstrap replicates instead (trials resampled with replacement within each ratio x position cell).

    Returns (proportions, n): proportions of shape (len(ratios),), or (n_boot, len(ratios)) with ``rng``.

    Args:
        groups: :func:`position_samples`.
        ratios: the ratios, ascending.
        rng: the bootstrap's generator; None: the data themselves.
        n_boot: replicates (with ``rng``).
    """
    shape = (n_boot, len(ratios)) if rng is not None else (len(ratios),)
    proportions = np.empty(shape)
    n = np.zeros(len(ratios))
    for index, ratio in enumerate(ratios):
        means = []
        for side in OPTIONS:
            values = groups.get((float(ratio), side))
            if values is None:
                continue
            n[index] += len(values)
            if rng is None:
                means.append(values.mean())
            else:
                means.append(values[rng.integers(0, len(values), size=(n_boot, len(values)))].mean(axis=1))
        # A ratio without a measured trial (every one unanswered) has no proportion: the fits skip it.
        proportions[..., index] = np.mean(means, axis=0) if means else np.nan
    return proportions, n


def position_bias_table(trials: pd.DataFrame, is_measured: np.ndarray, ci: float, n_boot: int,
                        seed: int) -> pd.DataFrame:
    """The ``position_bias`` frame: per task and reference, the share of measured trials answered "A",
    the bias (accuracy_A - accuracy_B over the reference's measured trials, averaged over its ratios)
    and its bootstrap interval (trials resampled within ratio x position cells).

    Args:
        trials: the trials (:func:`checked_trials`).
        is_measured: :func:`measured` of the trials.
        ci: the interval's level.
        n_boot: bootstrap resamples (0: no interval).
        seed: the bootstrap's seed.
    """
    rows = []
    rng = np.random.default_rng(seed)
    frame = trials[is_measured]
    for (task, reference), group in frame.groupby(["task", "reference"], sort=True):
        said_a = (group["chosen"] == "A").to_numpy(dtype=float)
        ratios = np.unique(group["ratio"].to_numpy())
        per_side = {side: corrected_proportions(position_samples(group[group["larger"] == side],
                                                                 said_a[group["larger"].to_numpy() == side]), ratios)
                    for side in OPTIONS}
        # P("A" | A larger) - P("B" | B larger) = P("A" | A larger) + P("A" | B larger) - 1, per ratio
        bias_per_ratio = per_side["A"][0] + per_side["B"][0] - 1.0
        bias = float(np.nanmean(bias_per_ratio))
        low = high = np.nan
        if n_boot > 0:
            groups = position_samples(group, said_a)
            replicates = []
            for side in OPTIONS:
                side_groups = {key: value for key, value in groups.items() if key[1] == side}
                replicates.append(corrected_proportions(side_groups, ratios, rng, n_boot)[0])
            boot = np.nanmean(replicates[0] + replicates[1] - 1.0, axis=1)
            low, high = (float(v) for v in np.nanquantile(boot, [(1 - ci) / 2, (1 + ci) / 2]))
        rows.append({"task": task, "reference": as_float(reference), "p_choose_a": float(said_a.mean()), "bias": bias,
                     "low": low, "high": high})
    return pd.DataFrame(rows, columns=["task", "reference", "p_choose_a", "bias", "low", "high"])
