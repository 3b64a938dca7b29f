"""A model's behaviour in number comparisons: :class:`BehaviourResult` and :func:`fit_behaviour`, its entry point.

The result holds the params and the frames the figures and the page read (columns: the
``*_COLUMNS`` constants of :mod:`magdash.behaviour.trial_frames`, :mod:`magdash.behaviour.behaviour_fits` and
:mod:`magdash.behaviour.weber_law`):

- ``cells``: per task, reference and ratio the measured trials in each position, their accuracies, the
  position-corrected accuracy and the bias (:mod:`magdash.behaviour.trial_frames`);
- ``fits``: per task, reference, variant and conventions mu, sigma, lapse, the Weber fraction (NaN where
  undefined) with its interval, whether its threshold lies inside the tested ratios and the status;
- ``curves``: the fitted functions on a grid of ratios;
- ``weber_law``: the slope of ln WF on ln reference with its interval and the references it rests on;
- ``position_bias``: per task and reference the share of "A" answers and the bias with its interval;
- the counts: trials, unanswered trials (the two options' probability below ``min_option_mass``);
- ``replicates``: the magdash fits' bootstrap WF replicates, which model-vs-model deltas pair
  (:func:`compare_behaviour`).

Cacioli 2026, arXiv 2603.20642 (Paradigm B) is the method; the module docstrings of
:mod:`magdash.behaviour.psychometric` and :mod:`magdash.behaviour.paper` give the maths.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from magdash.behaviour.behaviour_fits import fit_frames
from magdash.behaviour.behaviour_params import BehaviourParams
from magdash.behaviour.psychometric import STATUS_CHANCE
from magdash.behaviour.trial_frames import cell_table, checked_trials, measured, position_bias_table
from magdash.behaviour.weber_law import behaviour_deltas, weber_law_table
from magdash.caveats import Caveat, Severity, lines
from magdash.result_codec import PayloadCodec, not_stored

BEHAVIOUR_VERSION = "1"
"""Bumped whenever :func:`fit_behaviour` can give another result for the same trials and parameters
(the cache key of a behaviour run)."""

TABLES = ("cells", "fits", "curves", "weber_law", "position_bias")
"""The result's frames (module docstring)."""


@dataclass
class BehaviourResult(PayloadCodec):
    """One model's behaviour on one comparison set (module docstring).

    Attributes:
        model: the model's name ("" when not given).
        params: every choice of the fits.
        cells: position-corrected accuracy per task, reference and ratio.
        fits: the psychometric fits per task, reference, variant and conventions.
        curves: the fitted functions on a grid of ratios.
        weber_law: the slope of ln WF on ln reference per task, variant and conventions.
        position_bias: the share of "A" answers and the bias per task and reference.
        n_trials: the trials given.
        n_unanswered: trials whose two options hold less than ``min_option_mass`` (or without a choice).
        comparisons: the comparison set's name ("" when not given).
        replicates: the magdash fits' bootstrap WF replicates by ``"task|reference|variant"``.
        from_cache: whether the result was read from the store's cache.
    """

    model: str
    params: BehaviourParams
    cells: pd.DataFrame
    fits: pd.DataFrame
    curves: pd.DataFrame
    weber_law: pd.DataFrame
    position_bias: pd.DataFrame
    n_trials: int
    n_unanswered: int
    comparisons: str = ""
    replicates: dict[str, np.ndarray] = field(default_factory=dict)
    from_cache: bool = field(default=False, compare=False, metadata=not_stored(True))

    def weber_fractions(self, conventions: str = "magdash", variant: str = "choice") -> pd.DataFrame:
        """The ``fits`` rows of one convention and variant (task, reference, weber_fraction, ... ).

        Args:
            conventions: ``magdash`` or ``paper``.
            variant: ``choice`` or ``graded``.
        """
        rows = self.fits[(self.fits["conventions"] == conventions) & (self.fits["variant"] == variant)]
        return rows.reset_index(drop=True)

    def caveats(self) -> list[Caveat]:
        """What to know before reading the behaviour (:mod:`magdash.caveats`): a model that prefers a
        position whatever the numbers (share of "A" answers beyond 0.5 +- ``max_position_bias``: serious,
        its accuracy is the correction's, not its discrimination), many unanswered trials (beyond
        ``max_unanswered``: a caution), fits at chance (a note: their Weber fraction is undefined)."""
        name = self.model
        found = []
        bias = self.position_bias
        leaning = bias[(bias["p_choose_a"] - 0.5).abs() > self.params.max_position_bias]
        for task, rows in leaning.groupby("task", sort=True):
            side = "A" if float(rows["p_choose_a"].mean()) > 0.5 else "B"
            references = ", ".join(f"{reference:g}" for reference in rows["reference"])
            found.append(Caveat(Severity.SERIOUS, (
                f"task {task}: the model answers {side!r} in {float(rows['p_choose_a'].mean()) * 100:.0f}% of "
                f"trials at reference(s) {references}, whatever the numbers; its position-corrected accuracy "
                "there says little about discrimination"), (), name))
        if self.n_trials and self.n_unanswered / self.n_trials > self.params.max_unanswered:
            found.append(Caveat(Severity.CAUTION, (
                f"{self.n_unanswered} of {self.n_trials} trials ({self.n_unanswered / self.n_trials:.0%}) are "
                f"unanswered: the two options hold less than min_option_mass={self.params.min_option_mass:g} of "
                "the next-token probability, so they are not measured"), (), name))
        chance = self.fits[self.fits["status"] == STATUS_CHANCE]
        for (task, variant), rows in chance.groupby(["task", "variant"], sort=True):
            references = ", ".join(f"{reference:g}" for reference in rows["reference"])
            found.append(Caveat(Severity.NOTE, (
                f"task {task} ({variant}): behaviour at chance at reference(s) {references}: the Weber fraction "
                "is undefined there"), (), name))
        return sorted(found, key=lambda caveat: -caveat.severity)

    def warnings(self) -> list[str]:
        """:meth:`caveats` as lines, most severe first."""
        return lines(self.caveats())

    def records(self) -> list[dict[str, Any]]:
        """One record per task, reference, variant and conventions (the ``--json`` rows): model, task,
        reference, variant, conventions, weber_fraction (None where undefined), its interval, the ratio at 75%, mu, sigma,
        lapse, in_range, status, n_trials."""
        columns = ["task", "reference", "variant", "conventions", "weber_fraction", "wf_low", "wf_high", "threshold", "mu",
                   "sigma", "lapse", "in_range", "status", "n_trials"]
        found = []
        for row in self.fits.loc[:, columns].to_dict(orient="records"):
            record: dict[str, Any] = {"model": self.model, "comparisons": self.comparisons}
            for key, value in row.items():
                name = str(key)
                if isinstance(value, (float, np.floating)):
                    record[name] = float(value) if math.isfinite(float(value)) else None
                elif isinstance(value, (np.bool_, bool)):
                    record[name] = bool(value)
                elif isinstance(value, np.integer):
                    record[name] = int(value)
                else:
                    record[name] = value
            found.append(record)
        return found

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``behave --json`` shape: ``records`` (one per task, reference, variant and
        conventions, :meth:`records`), every table as records, params, counts, warnings (NaN stays NaN in
        the tables; the CLI writes null)."""
        return {
            "model": self.model,
            "comparisons": self.comparisons,
            "records": self.records(),
            "params": dataclasses.asdict(self.params),
            **{name: getattr(self, name).to_dict(orient="records") for name in TABLES},
            "n_trials": self.n_trials,
            "n_unanswered": self.n_unanswered,
            "warnings": self.warnings(),
        }


def fit_behaviour(trials: pd.DataFrame, params: BehaviourParams | None = None, model: str = "",
                  comparisons: str = "") -> BehaviourResult:
    """Every behavioural measure of one model's trials: the cells, the psychometric fits of each
    convention and variant with their intervals, the Weber-law slope and the position bias.

    Args:
        trials: the trials frame (:data:`magdash.behaviour.trial_frames.TRIAL_COLUMNS`; only the columns of
            :data:`~magdash.behaviour.trial_frames.FIT_COLUMNS` are read).
        params: the choices (defaults: :class:`BehaviourParams`).
        model: the model's name, carried into the records and caveats.
        comparisons: the comparison set's name, carried into the records.
    """
    params = params or BehaviourParams()
    frame = checked_trials(trials)
    is_measured = measured(frame, params.min_option_mass)
    fits, curves, replicates = fit_frames(frame, is_measured, params)
    return BehaviourResult(
        model=model,
        params=params,
        cells=cell_table(frame, is_measured),
        fits=fits,
        curves=curves,
        weber_law=weber_law_table(fits, replicates, params.ci),
        position_bias=position_bias_table(frame, is_measured, params.ci, params.n_boot, params.seed),
        n_trials=int(len(frame)),
        n_unanswered=int((~is_measured).sum()),
        comparisons=comparisons,
        replicates=replicates,
    )


def compare_behaviour(result_a: BehaviourResult, result_b: BehaviourResult) -> pd.DataFrame:
    """Model A minus model B (base vs instruct, model vs control) under magdash's conventions: the WF per
    task, reference and variant and the Weber-law slope per task and variant, with the percentile
    intervals of their paired bootstrap replicates (:func:`magdash.behaviour.weber_law.behaviour_deltas`);
    the level is A's ``ci``.

    Args:
        result_a: model A's behaviour.
        result_b: model B's behaviour.
    """
    return behaviour_deltas(result_a.fits, result_a.replicates, result_b.fits, result_b.replicates,
                            result_a.params.ci)
