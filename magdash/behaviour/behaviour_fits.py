"""The psychometric fits of every task and reference under each convention and variant: the ``fits`` and
``curves`` frames and the bootstrap replicates behind the intervals (the maths: :mod:`magdash.behaviour.psychometric`
for magdash's conventions, :mod:`magdash.behaviour.paper` for the paper's).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from magdash.behaviour.behaviour_params import PAPER_SEED, BehaviourParams
from magdash.behaviour.paper import (
    bca_interval,
    fit_paper,
    paper_bootstrap,
    paper_cells,
    paper_function,
    paper_status,
    valid_replicates,
)
from magdash.behaviour.psychometric import (
    fit_two_alternative,
    interval,
    refit_many,
    replicate_weber_fractions,
    two_alternative,
)
from magdash.behaviour.trial_frames import as_float, corrected_proportions, position_samples, soft_correct

FITS_FRAME_COLUMNS = ["task", "reference", "variant", "conventions", "mu", "sigma", "lapse", "weber_fraction", "wf_low",
               "wf_high", "threshold", "in_range", "status", "n_trials", "mu_low", "mu_high", "sigma_low", "sigma_high",
               "lapse_low", "lapse_high", "chance_p"]
CURVE_COLUMNS = ["task", "reference", "variant", "conventions", "ratio", "p"]
CURVE_POINTS = 60


def replicate_key(task: str, reference: float, variant: str) -> str:
    """The key of one fit's bootstrap replicates in :attr:`BehaviourResult.replicates`: ``"task|reference|variant"``.

    Args:
        task: the task.
        reference: the reference.
        variant: ``choice`` or ``graded``.
    """
    return f"{task}|{reference:g}|{variant}"


def curve_grid(ratios: np.ndarray) -> np.ndarray:
    """The ratios a fitted curve is drawn at: from 1 to 10% past the largest tested ratio, even in ln r.

    Args:
        ratios: the tested ratios.
    """
    return np.exp(np.linspace(0.0, math.log(float(np.max(ratios)) * 1.1), CURVE_POINTS))


def magdash_fits(trials: pd.DataFrame, is_measured: np.ndarray, params: BehaviourParams
                 ) -> tuple[list[dict], list[pd.DataFrame], dict[str, np.ndarray]]:
    """The magdash conventions' fits of every task, reference and variant: (fit rows, curve frames,
    bootstrap WF replicates by :func:`replicate_key`).

    Args:
        trials: the trials (:func:`magdash.behaviour.trial_frames.checked_trials`, indexed 0..n-1).
        is_measured: which trials are measured.
        params: the choices.
    """
    rows, curves, replicates = [], [], {}
    soft = soft_correct(trials)
    outcomes = {"choice": trials["correct"].to_numpy(dtype=float), "graded": soft}
    rng = np.random.default_rng(params.seed)
    for (task, reference), group in trials.groupby(["task", "reference"], sort=True):
        kept = is_measured[group.index.to_numpy()]
        measured_group = group[kept]
        ratios = np.unique(group["ratio"].to_numpy())
        for variant in params.variants:
            values = outcomes[variant][measured_group.index.to_numpy()]
            groups = position_samples(measured_group, values)
            proportions, n = corrected_proportions(groups, ratios)
            fit = fit_two_alternative(ratios, proportions, n, params.max_lapse, params.chance_level)
            row = {"task": task, "reference": as_float(reference), "variant": variant, "conventions": "magdash",
                   "mu": fit.mu, "sigma": fit.sigma, "lapse": fit.lapse, "weber_fraction": fit.weber_fraction,
                   "wf_low": math.nan, "wf_high": math.nan, "threshold": fit.threshold, "in_range": fit.in_range, "status": fit.status,
                   "n_trials": int(kept.sum()), "chance_p": fit.chance_p}
            usable = n > 0
            if params.n_boot > 0 and math.isfinite(fit.mu) and usable.any():
                boot, _ = corrected_proportions(groups, ratios[usable], rng, params.n_boot)
                theta = refit_many(ratios[usable], boot, n[usable], fit, params.max_lapse)
                weber = replicate_weber_fractions(theta, ratios[usable])
                if math.isfinite(fit.weber_fraction):
                    row["wf_low"], row["wf_high"] = interval(weber, params.ci)
                for index, name in enumerate(("mu", "sigma", "lapse")):
                    row[f"{name}_low"], row[f"{name}_high"] = interval(theta[:, index], params.ci)
                replicates[replicate_key(str(task), as_float(reference), variant)] = weber
            rows.append(row)
            if math.isfinite(fit.mu):
                grid = curve_grid(ratios)
                curves.append(pd.DataFrame({"task": task, "reference": as_float(reference), "variant": variant,
                                            "conventions": "magdash", "ratio": grid,
                                            "p": two_alternative(np.log(grid), fit.mu, fit.sigma, fit.lapse)}))
    return rows, curves, replicates


def paper_fits(trials: pd.DataFrame, params: BehaviourParams) -> tuple[list[dict], list[pd.DataFrame]]:
    """The paper's fits of every task and reference, on every trial (:mod:`magdash.behaviour.paper`):
    (fit rows, curve frames). The interval is the paper's BCa interval of its valid replicates
    (:func:`magdash.behaviour.paper.bca_interval`; its seed, 42; ``params.n_boot`` replicates, the paper's
    10,000 by default: minutes per reference, its Nelder-Mead fits one by one).

    Args:
        trials: the trials (:func:`magdash.behaviour.trial_frames.checked_trials`).
        params: the choices.
    """
    rows, curves = [], []
    for (task, reference), group in trials.groupby(["task", "reference"], sort=True):
        ratio, larger = group["ratio"].to_numpy(), group["larger"].to_numpy()
        correct = group["correct"].to_numpy(dtype=bool)
        ratios, accuracies, counts = paper_cells(ratio, larger, correct)
        fit = fit_paper(np.log(ratios), accuracies, counts)
        in_range, status = paper_status(fit.weber_fraction, ratios)
        low = high = math.nan
        if params.n_boot > 0:
            valid = valid_replicates(paper_bootstrap(ratio, larger, correct, params.n_boot, PAPER_SEED))
            low, high = bca_interval(valid, fit.weber_fraction, params.ci)
        rows.append({"task": task, "reference": as_float(reference), "variant": "choice", "conventions": "paper",
                     "mu": fit.mu, "sigma": fit.sigma, "lapse": fit.lapse, "weber_fraction": fit.weber_fraction,
                     "wf_low": low, "wf_high": high, "threshold": 1.0 + fit.weber_fraction, "in_range": in_range, "status": status,
                     "n_trials": int(len(group)), "mu_low": math.nan, "mu_high": math.nan, "sigma_low": math.nan,
                     "sigma_high": math.nan, "lapse_low": math.nan, "lapse_high": math.nan, "chance_p": math.nan})
        grid = curve_grid(ratios)
        curves.append(pd.DataFrame({"task": task, "reference": as_float(reference), "variant": "choice",
                                    "conventions": "paper", "ratio": grid,
                                    "p": paper_function(np.log(grid), fit.mu, fit.sigma, fit.lapse)}))
    return rows, curves


def fit_frames(trials: pd.DataFrame, is_measured: np.ndarray, params: BehaviourParams
               ) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, np.ndarray]]:
    """The ``fits`` and ``curves`` frames of every convention asked, and the magdash fits' WF replicates.

    Args:
        trials: the trials (:func:`magdash.behaviour.trial_frames.checked_trials`).
        is_measured: which trials are measured.
        params: the choices.
    """
    rows, curves, replicates = [], [], {}
    if "magdash" in params.conventions:
        rows, curves, replicates = magdash_fits(trials, is_measured, params)
    if "paper" in params.conventions:
        more_rows, more_curves = paper_fits(trials, params)
        rows += more_rows
        curves += more_curves
    fits = pd.DataFrame(rows, columns=FITS_FRAME_COLUMNS)
    fits["in_range"] = fits["in_range"].astype(bool)
    curve_frame = pd.concat(curves, ignore_index=True) if curves else pd.DataFrame(columns=CURVE_COLUMNS)
    return fits, curve_frame.loc[:, CURVE_COLUMNS], replicates
