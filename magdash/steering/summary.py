"""A steering frame summarised per layer and per dose (Cacioli 2026, arXiv 2603.20642, Paradigm D).

The steering frame holds, per trial t, layer, steered direction j and dose x, the probabilities p_a
and p_b of the two answer options (softmax over the vocabulary), beside each trial's unpatched p_a,
p_b and the option holding the larger number. As the paper, a choice probability is read over the
two options only: p(correct) = p_larger / (p_a + p_b), and p(operand) = p_operand / (p_a + p_b) for
the pushed operand. Per trial:

- ``|delta p(correct)|`` = |p(correct) patched - p(correct) unpatched|, the paper's outcome;
- ``delta p(operand)``, the signed shift: pushing the operand's number along the magnitude
  direction (toward "larger") should make the model choose that operand more (> 0).

Per layer, at the largest dose (the paper's 1):

- ``magnitude_effect``: the mean over trials of |delta p(correct)| along u; ``random_effect`` and
  ``orthogonal_effect``: the same over trials and the null's directions;
- ``specificity`` = magnitude_effect / random_effect (the paper's "mag_to_random_ratio": 4.1x in early
  layers, 1.2x late); ``specificity_orthogonal`` against the orthogonal null;
- ``random_percentile``: the ``null_percentile``-th percentile (97.5) over the random directions of
  their mean |delta p|, and ``specificity_percentile`` = magnitude_effect / random_percentile (> 1:
  the magnitude direction moves the prompts more than all but 2.5% of random directions would);
- ``share_above_random``: the share of trials whose |delta p| along u exceeds the ``null_percentile``-th
  percentile of that trial's |delta p| along the random directions (numpy's linear interpolation, as
  the paper's ``np.percentile``), and ``share_above_orthogonal``;
- ``relevant``: functional relevance as the paper defines it (its H7), share_above_random >=
  ``relevance_share`` (0.75);
- ``shift`` (mean delta p(operand) along u) and ``random_shift`` (along the random null);
- ``baseline_correct``: the mean unpatched p(correct) (near 1 or 0: a ceiling or floor that limits
  |delta p|), ``option_mass``: the mean of the patched p_a + p_b over the unpatched along u (well
  below 1: the push breaks the output instead of shifting the choice).

Intervals are percentile intervals of a bootstrap over trials (the same resamples at every layer,
so layers compare paired). Per layer, dose and kind (``doses``): the mean |delta p(correct)|, the
mean shift and the option mass, the dose-response.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.probes.scores import percentile_interval
from magdash.steering.directions import DIRECTION_KINDS
from magdash.steering.steer_params import SteerParams

STEER_FRAME_COLUMNS = ("trial_id", "layer", "direction", "dose", "p_a", "p_b")
"""The steering frame's columns: ``direction`` indexes the layer's steered directions (their kinds given apart)."""

BASELINE_COLUMNS = ("trial_id", "larger", "p_a", "p_b")
"""The unpatched trials' columns: ``larger`` is the option ("A" or "B") holding the larger number."""

_WITH_INTERVALS = ("magnitude_effect", "random_effect", "specificity", "specificity_percentile",
                   "share_above_random", "orthogonal_effect", "specificity_orthogonal", "share_above_orthogonal",
                   "shift")


def _interval(name: str) -> list[str]:
    return [name, f"{name}_low", f"{name}_high"]


LAYER_COLUMNS = ["layer", "dose_unit", "n_trials", "baseline_correct",
                 *_interval("magnitude_effect"), *_interval("random_effect"), "random_percentile",
                 *_interval("specificity"), *_interval("specificity_percentile"), *_interval("share_above_random"),
                 "relevant", *_interval("orthogonal_effect"), *_interval("specificity_orthogonal"),
                 *_interval("share_above_orthogonal"), *_interval("shift"), "random_shift", "option_mass"]
"""Per layer (module docstring): the dose unit, the trials summarised, the unpatched p(correct), each
statistic with its interval, the random percentile, relevance, the random null's shift, the option mass."""

DOSE_COLUMNS = ["layer", "dose", "kind", "effect", "shift", "option_mass"]
"""Per layer, dose and direction kind: mean |delta p(correct)|, mean delta p(operand), mean option mass ratio."""

_BOOT_CHUNK = 500
"""Bootstrap resamples drawn at once (a chunk's counts are chunk x trials numbers)."""


def _checked(frame: pd.DataFrame, columns: Sequence[str], name: str) -> pd.DataFrame:
    missing = [column for column in columns if column not in frame.columns]
    if missing:
        raise AnalysisError(f"the {name} frame lacks the column(s) {', '.join(missing)}")
    return frame


def choice_probabilities(p_a: np.ndarray, p_b: np.ndarray, larger: np.ndarray,
                         operand: str) -> tuple[np.ndarray, np.ndarray]:
    """p(correct) and p(operand) over the two options only (the paper's softmax over A and B):
    ``p_larger / (p_a + p_b)`` and ``p_operand / (p_a + p_b)``; NaN where both are 0.

    Args:
        p_a, p_b: the options' probabilities (softmax over the vocabulary).
        larger: per trial, the option holding the larger number ("A" or "B").
        operand: the pushed operand, ``a`` or ``b``.
    """
    p_a, p_b = np.asarray(p_a, dtype=np.float64), np.asarray(p_b, dtype=np.float64)
    mass = p_a + p_b
    with np.errstate(invalid="ignore", divide="ignore"):
        correct = np.where(np.asarray(larger) == "A", p_a, p_b) / mass
        chosen = (p_a if operand == "a" else p_b) / mass
    return np.where(mass > 0, correct, np.nan), np.where(mass > 0, chosen, np.nan)


def _grid(rows: pd.DataFrame, trials: pd.Index, n_directions: int, column: str) -> np.ndarray:
    """``column`` as a (trials, directions) array; AnalysisError when a cell is missing."""
    table = rows.pivot_table(index="trial_id", columns="direction", values=column, aggfunc="first")
    return table.reindex(index=trials, columns=range(n_directions)).to_numpy(dtype=np.float64)


class _Outcomes:
    """One layer's per-trial outcomes at one dose: |delta p(correct)|, delta p(operand), the option mass ratio."""

    def __init__(self, rows: pd.DataFrame, baseline: pd.DataFrame, n_directions: int, operand: str) -> None:
        trials = pd.Index(baseline["trial_id"])
        larger = baseline["larger"].to_numpy()[:, None]
        p_a, p_b = (_grid(rows, trials, n_directions, column) for column in ("p_a", "p_b"))
        if np.isnan(p_a).any() or np.isnan(p_b).any():
            raise AnalysisError("the steering frame lacks some (trial, direction) of a layer and dose; "
                                "every trial needs every direction at every dose")
        correct, chosen = choice_probabilities(p_a, p_b, larger, operand)
        base_correct, base_chosen = choice_probabilities(baseline["p_a"].to_numpy()[:, None],
                                                         baseline["p_b"].to_numpy()[:, None], larger, operand)
        self.effect = np.abs(correct - base_correct)
        self.shift = chosen - base_chosen
        base_mass = (baseline["p_a"].to_numpy(dtype=np.float64) + baseline["p_b"].to_numpy(dtype=np.float64))[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            self.mass = np.where(base_mass > 0, (p_a + p_b) / base_mass, np.nan)


def _statistics(weights: np.ndarray, outcomes: _Outcomes, kinds: np.ndarray, percentile: float) -> dict[str, np.ndarray]:
    """The bootstrapped statistics for each row of ``weights`` (replicates x trials, rows summing to 1)."""
    effect, shift = outcomes.effect, outcomes.shift
    magnitude, random, orthogonal = (np.flatnonzero(kinds == kind) for kind in DIRECTION_KINDS)
    means = weights @ effect  # (replicates, directions): each direction's mean |delta p| over trials
    found = {"magnitude_effect": means[:, magnitude[0]], "random_effect": means[:, random].mean(axis=1),
             "shift": weights @ shift[:, magnitude[0]]}
    random_percentile = np.percentile(means[:, random], percentile, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        found["specificity"] = found["magnitude_effect"] / found["random_effect"]
        found["specificity_percentile"] = found["magnitude_effect"] / random_percentile
    found["random_percentile"] = random_percentile
    above_random = effect[:, magnitude[0]] > np.percentile(effect[:, random], percentile, axis=1)
    found["share_above_random"] = weights @ above_random
    if orthogonal.size:
        found["orthogonal_effect"] = means[:, orthogonal].mean(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            found["specificity_orthogonal"] = found["magnitude_effect"] / found["orthogonal_effect"]
        above = effect[:, magnitude[0]] > np.percentile(effect[:, orthogonal], percentile, axis=1)
        found["share_above_orthogonal"] = weights @ above
    else:
        nothing = np.full(weights.shape[0], np.nan)
        found.update(orthogonal_effect=nothing, specificity_orthogonal=nothing, share_above_orthogonal=nothing)
    return found


def _layer_row(layer: int, outcomes: _Outcomes, baseline_correct: float, kinds: np.ndarray, params: SteerParams,
               dose_unit: float) -> dict:
    n_trials = outcomes.effect.shape[0]
    point = _statistics(np.full((1, n_trials), 1.0 / n_trials), outcomes, kinds, params.null_percentile)
    row = {"layer": int(layer), "dose_unit": float(dose_unit), "n_trials": n_trials,
           "baseline_correct": baseline_correct}
    row.update({name: float(values[0]) for name, values in point.items()})
    replicates: dict[str, list[np.ndarray]] = {name: [] for name in _WITH_INTERVALS}
    rng = np.random.default_rng(params.seed)  # the same resamples of the trials at every layer
    for start in range(0, params.n_boot, _BOOT_CHUNK):
        size = min(_BOOT_CHUNK, params.n_boot - start)
        counts = rng.multinomial(n_trials, np.full(n_trials, 1.0 / n_trials), size=size)
        drawn = _statistics(counts / n_trials, outcomes, kinds, params.null_percentile)
        for name in _WITH_INTERVALS:
            replicates[name].append(drawn[name])
    for name in _WITH_INTERVALS:
        if params.n_boot:
            low, high = percentile_interval(np.concatenate(replicates[name])[:, None], params.ci)
            row[f"{name}_low"], row[f"{name}_high"] = float(low[0]), float(high[0])
        else:
            row[f"{name}_low"] = row[f"{name}_high"] = np.nan
    row["relevant"] = bool(row["share_above_random"] >= params.relevance_share)
    random = np.flatnonzero(kinds == "random")
    row["random_shift"] = float(outcomes.shift[:, random].mean())
    row["option_mass"] = float(np.mean(outcomes.mass[:, np.flatnonzero(kinds == "magnitude")[0]]))
    return row


def steering_tables(steered: pd.DataFrame, baseline: pd.DataFrame, kinds: Sequence[str],
                    params: SteerParams | None = None,
                    dose_units: Mapping[int, float] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The per-layer summary (:data:`LAYER_COLUMNS`) and the dose-response (:data:`DOSE_COLUMNS`) of a
    steering frame (module docstring).

    Args:
        steered: the steering frame (:data:`STEER_FRAME_COLUMNS`), every trial x layer x direction x
            dose of ``params.doses`` (rows at other doses, the unpatched dose 0 say, are not read).
        baseline: the unpatched trials (:data:`BASELINE_COLUMNS`), one row per trial.
        kinds: the kind of each direction index (:data:`~magdash.steering.directions.DIRECTION_KINDS`):
            exactly one ``magnitude``, at least two ``random``.
        params: the steering's choices (defaults when None).
        dose_units: each layer's dose unit, carried into the table (NaN where not given).

    Raises:
        AnalysisError: frames without their columns, a trial missing a direction or dose, directions
            whose kinds do not make a magnitude direction and a random null.
    """
    params = params or SteerParams()
    _checked(steered, STEER_FRAME_COLUMNS, "steering")
    _checked(baseline, BASELINE_COLUMNS, "unpatched trials")
    kinds_array = np.asarray(list(kinds), dtype=object)
    unknown = sorted({str(kind) for kind in kinds_array} - set(DIRECTION_KINDS))
    if unknown or (kinds_array == "magnitude").sum() != 1 or (kinds_array == "random").sum() < 2:
        raise AnalysisError("the steered directions need exactly one 'magnitude' direction and at least two "
                            f"'random' ones (kinds given: {', '.join(map(str, kinds_array)) or 'none'})")
    baseline = baseline.drop_duplicates("trial_id").reset_index(drop=True)
    if baseline.empty:
        raise AnalysisError("there are no trials to summarise")
    unpatched_correct, _ = choice_probabilities(baseline["p_a"].to_numpy(), baseline["p_b"].to_numpy(),
                                                baseline["larger"].to_numpy(), params.operand)
    dose_units = dose_units or {}
    layer_rows, dose_rows = [], []
    for layer, rows in steered.groupby("layer", sort=True):
        layer_number = int(layer)  # pyright: ignore[reportArgumentType] - a groupby key of an int column
        by_dose = {}
        for dose in params.doses:
            at_dose = rows[np.isclose(rows["dose"].to_numpy(dtype=np.float64), dose)]
            outcomes = _Outcomes(at_dose, baseline, kinds_array.size, params.operand)
            by_dose[dose] = outcomes
            for kind in DIRECTION_KINDS:
                columns = np.flatnonzero(kinds_array == kind)
                if columns.size:
                    dose_rows.append({"layer": layer_number, "dose": dose, "kind": kind,
                                      "effect": float(np.nanmean(outcomes.effect[:, columns])),
                                      "shift": float(np.nanmean(outcomes.shift[:, columns])),
                                      "option_mass": float(np.nanmean(outcomes.mass[:, columns]))})
        full = by_dose[params.full_dose]
        measured = np.isfinite(full.effect).all(axis=1) & np.isfinite(unpatched_correct)
        if not measured.any():
            raise AnalysisError(f"no trial of layer {layer_number} has answer options with any probability")
        full.effect, full.shift, full.mass = full.effect[measured], full.shift[measured], full.mass[measured]
        layer_rows.append(_layer_row(layer_number, full, float(np.mean(unpatched_correct[measured])), kinds_array,
                                     params, float(dose_units.get(layer_number, np.nan))))
    return (pd.DataFrame(layer_rows, columns=LAYER_COLUMNS), pd.DataFrame(dose_rows, columns=DOSE_COLUMNS))
