"""A model's steering result: :class:`SteerResult` and :func:`summarise_steering`, its entry point.

The result holds the params and two frames (columns: :data:`magdash.steering.summary.LAYER_COLUMNS`
and :data:`~magdash.steering.summary.DOSE_COLUMNS`):

- ``layers``: per layer, at the largest dose, the magnitude direction's mean |delta p(correct)|
  against the random and orthogonal nulls, specificity, the share of prompts above the null, the
  paper's functional relevance, the signed shift, with bootstrap intervals over prompts;
- ``doses``: per layer, dose and direction kind, the dose-response.

Cacioli 2026, arXiv 2603.20642 (Paradigm D, ``scripts/paradigm_d_causal.py``) is the method; the
docstrings of :mod:`magdash.steering.directions` and :mod:`magdash.steering.summary` give the maths.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import binomtest

from magdash.behaviour.behaviour_params import BehaviourParams
from magdash.caveats import Caveat, Severity, lines
from magdash.params import ranges
from magdash.result_codec import PayloadCodec, not_stored
from magdash.significance import SIGNIFICANCE_LEVEL
from magdash.steering.directions import TOP_DIMENSIONS
from magdash.steering.steer_params import SteerParams
from magdash.steering.summary import choice_probabilities, steering_tables

STEER_VERSION = "3"
"""Bumped whenever a steering run can give another result for the same model, stimuli, trials and
parameters (the cache key of a steering run): the directions, the summary or the steered passes."""

TABLES = ("layers", "doses")
"""The result's frames (module docstring)."""

CEILING = 0.99
"""An unpatched p(correct) beyond this (or below 1 - this) leaves |delta p| little room one way."""

CONCENTRATED = 0.5
"""A magnitude direction whose :data:`~magdash.steering.directions.TOP_DIMENSIONS` largest coordinates hold
more than this share of its squared norm is named: it may push massive dimensions, not magnitude."""

BROKEN_MASS = 0.5
"""A push that leaves the answer options less than this share of their unpatched probability breaks
the output rather than shifting the choice."""

_BEHAVIOUR_DEFAULTS = BehaviourParams()
"""Where the unpatched model's answers are read as the behaviour analysis reads them: its position bias
(``max_position_bias``) and its unanswered trials (``min_option_mass``)."""


@dataclass(frozen=True)
class UnpatchedAnswers:
    """How the unpatched model answers the steered trials, read before any push.

    Attributes:
        accuracy: its position-corrected accuracy: the mean of its accuracy on the trials whose larger
            number is in A and on those where it is in B (a side without trials counts 0.5); 0.5 for a
            model that answers one position whatever the numbers.
        p_value: the one-sided binomial test of round(accuracy x n) correct of n trials against 0.5:
            whether its choices follow the numbers at all.
        choose_a: the share of trials on which it chooses A.
        option_mass: the median over trials of the two options' probability p_a + p_b (softmax over the
            vocabulary): well below 1, the model mostly answers with other tokens.
    """

    accuracy: float
    p_value: float
    choose_a: float
    option_mass: float


@dataclass
class SteerResult(PayloadCodec):
    """One model's steering along its magnitude directions (module docstring).

    Attributes:
        model: the model's name ("" when not given).
        stimuli: the stimulus set whose vectors gave the directions ("" when not given).
        comparisons: the comparison set whose trials were steered ("" when not given).
        params: every choice of the steering.
        layers: the per-layer summary at the largest dose.
        doses: the dose-response per layer, dose and direction kind.
        n_trials: the trials steered.
        at_ceiling: the share of trials whose unpatched p(correct) lies beyond :data:`CEILING` or below
            1 - :data:`CEILING`.
        unpatched: the unpatched model's answers (:func:`unpatched_answers`).
        from_cache: whether the result was read from the store's cache.
    """

    model: str
    stimuli: str
    comparisons: str
    params: SteerParams
    layers: pd.DataFrame
    doses: pd.DataFrame
    n_trials: int
    at_ceiling: float
    unpatched: UnpatchedAnswers
    from_cache: bool = field(default=False, compare=False, metadata=not_stored(True))

    def relevant_layers(self) -> list[int]:
        """The layers where the magnitude direction is functionally relevant (the paper's H7: at
        least ``relevance_share`` of the prompts move more along it than the null's percentile)."""
        return [int(layer) for layer in self.layers.loc[self.layers["relevant"].astype(bool), "layer"]]

    def caveats(self) -> list[Caveat]:
        """What to know before reading the steering (:mod:`magdash.caveats`): an unpatched model whose
        choices do not follow the numbers (serious: there is no magnitude-driven choice to shift; a model
        that leans to one position but follows the numbers is a caution), answer options that hold little
        of the unpatched probability (a caution), an unpatched model at
        ceiling or floor on most prompts (a caution: |delta p| has little room), layers where the
        full dose takes most probability off the answer options (a caution: the push breaks the
        output rather than shifting the choice), layers whose magnitude direction sits on a few coordinates (a
        caution: massive dimensions), layers where nothing moves (a note: specificity undefined), no
        bootstrap (a note)."""
        found = self._unpatched_caveats()
        if "top_dimension_share" in self.layers:
            concentrated = self.layers[self.layers["top_dimension_share"] > CONCENTRATED]
            if not concentrated.empty:
                found.append(Caveat(Severity.CAUTION, (
                    f"at layer(s) {ranges(concentrated['layer'].astype(int).tolist())} the magnitude direction puts "
                    f"more than {CONCENTRATED:.0%} of its weight on {TOP_DIMENSIONS} coordinates: it may push the "
                    "model's massive dimensions rather than magnitude; compare the analysis without them "
                    "(massive dimensions) before reading its specificity"), (), self.model))
        if self.at_ceiling > 0.5:
            found.append(Caveat(Severity.CAUTION, (
                f"the unpatched model gives p(correct) beyond {CEILING:g} or below {1 - CEILING:.2g} on "
                f"{self.at_ceiling:.0%} of the prompts: a push can move them one way only, so |delta p| is small "
                "for every direction and specificity says little"), (), self.model))
        broken = self.layers[self.layers["option_mass"] < BROKEN_MASS]
        if not broken.empty:
            found.append(Caveat(Severity.CAUTION, (
                f"at layer(s) {ranges(broken['layer'].astype(int).tolist())} the dose {self.params.full_dose:g} "
                f"leaves the answer options less than {BROKEN_MASS:.0%} of their probability: the push breaks the "
                "output rather than shifting the choice; try smaller doses"), (), self.model))
        still = self.layers[(self.layers["magnitude_effect"] == 0) & (self.layers["random_effect"] == 0)]
        if not still.empty:
            found.append(Caveat(Severity.NOTE, (
                f"at layer(s) {ranges(still['layer'].astype(int).tolist())} no direction moves the choice at all "
                "(a push there reaches no later position, e.g. the last layer's output at the operand's token): "
                "specificity is undefined"), (), self.model))
        if self.params.n_boot == 0:
            found.append(Caveat(Severity.NOTE, "n_boot=0: no intervals", (), self.model))
        return sorted(found, key=lambda caveat: -caveat.severity)

    def _unpatched_caveats(self) -> list[Caveat]:
        """The unpatched model's answers read before any push: do they follow the numbers, do they use the options."""
        found = []
        side = "A" if self.unpatched.choose_a >= 0.5 else "B"
        side_share = max(self.unpatched.choose_a, 1.0 - self.unpatched.choose_a)
        leaning = abs(self.unpatched.choose_a - 0.5) > _BEHAVIOUR_DEFAULTS.max_position_bias
        leaning_words = f"it answers {side!r} on {side_share:.0%} of them" if leaning else ""
        if not self.unpatched.p_value < SIGNIFICANCE_LEVEL:
            found.append(Caveat(Severity.SERIOUS, (
                f"the unpatched model's choices do not follow the numbers: position-corrected accuracy "
                f"{self.unpatched.accuracy:.2f} on {self.n_trials} prompts (one-sided binomial p = "
                f"{self.unpatched.p_value:.2g} against 0.5){'; ' + leaning_words if leaning else ''}. There is no "
                "magnitude-driven choice for a push to shift, so this steering cannot show whether the model uses "
                "its magnitude direction; steer a model whose comparisons follow the numbers"), (), self.model))
        elif leaning:
            found.append(Caveat(Severity.CAUTION, (
                f"the unpatched model leans to one position: {leaning_words} (position-corrected accuracy "
                f"{self.unpatched.accuracy:.2f}); a push toward the other option has more room than one toward it"),
                (), self.model))
        if self.unpatched.option_mass < _BEHAVIOUR_DEFAULTS.min_option_mass:
            found.append(Caveat(Severity.CAUTION, (
                f"before any push the two answer options hold a median {self.unpatched.option_mass:.2g} of the "
                f"next-token probability (under {_BEHAVIOUR_DEFAULTS.min_option_mass:g}, below which the behaviour analysis "
                "counts a trial unanswered by default): the model "
                "mostly answers with other tokens, and p(correct) over the two options rescales the little that is "
                "left; a base model may need an answer cue at the end of the template (such as 'Answer:')"),
                (), self.model))
        return found

    def warnings(self) -> list[str]:
        """:meth:`caveats` as lines, most severe first."""
        return lines(self.caveats())

    def records(self) -> list[dict[str, Any]]:
        """One record per layer (the ``--json`` rows): model, stimuli, comparisons and the ``layers``
        columns (None where undefined)."""
        found = []
        for row in self.layers.to_dict(orient="records"):
            record: dict[str, Any] = {"model": self.model, "stimuli": self.stimuli, "comparisons": self.comparisons}
            for key, value in row.items():
                if isinstance(value, (bool, np.bool_)):
                    record[str(key)] = bool(value)
                elif isinstance(value, (int, np.integer)):
                    record[str(key)] = int(value)
                elif isinstance(value, (float, np.floating)):
                    record[str(key)] = float(value) if math.isfinite(float(value)) else None
                else:
                    record[str(key)] = value
            found.append(record)
        return found

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``steer --json`` shape: ``records`` (:meth:`records`), both tables as records,
        params, counts, the relevant layers, warnings (NaN stays NaN in the tables; the CLI writes null)."""
        return {
            "model": self.model,
            "stimuli": self.stimuli,
            "comparisons": self.comparisons,
            "records": self.records(),
            "params": dataclasses.asdict(self.params),
            **{name: getattr(self, name).to_dict(orient="records") for name in TABLES},
            "n_trials": self.n_trials,
            "at_ceiling": self.at_ceiling,
            "unpatched": dataclasses.asdict(self.unpatched),
            "relevant_layers": self.relevant_layers(),
            "warnings": self.warnings(),
        }


def summarise_steering(steered: pd.DataFrame, baseline: pd.DataFrame, kinds: Sequence[str],
                       params: SteerParams | None = None, *, dose_units: Mapping[int, float] | None = None,
                       top_shares: Mapping[int, float] | None = None, model: str = "", stimuli: str = "",
                       comparisons: str = "") -> SteerResult:
    """A steering frame as a :class:`SteerResult` (:func:`magdash.steering.summary.steering_tables`).

    Args:
        steered: the steering frame (:data:`~magdash.steering.summary.STEER_FRAME_COLUMNS`).
        baseline: the unpatched trials (:data:`~magdash.steering.summary.BASELINE_COLUMNS`).
        kinds: the kind of each direction index.
        params: the steering's choices (defaults when None).
        dose_units: each layer's dose unit.
        top_shares: each layer's magnitude direction's :func:`~magdash.steering.directions.top_dimension_share`
            (NaN where not given).
        model, stimuli, comparisons: names carried into the result.
    """
    params = params or SteerParams()
    layers, doses = steering_tables(steered, baseline, kinds, params, dose_units)
    shares = top_shares or {}
    layers.insert(2, "top_dimension_share", [float(shares.get(int(layer), math.nan)) for layer in layers["layer"]])
    trials = baseline.drop_duplicates("trial_id")
    correct, _ = choice_probabilities(trials["p_a"].to_numpy(), trials["p_b"].to_numpy(), trials["larger"].to_numpy(),
                                      params.operand)
    extreme = (correct > CEILING) | (correct < 1 - CEILING)
    return SteerResult(model=model, stimuli=stimuli, comparisons=comparisons, params=params, layers=layers,
                       doses=doses, n_trials=int(len(trials)), at_ceiling=float(extreme.mean()),
                       unpatched=unpatched_answers(trials))


def unpatched_answers(trials: pd.DataFrame) -> UnpatchedAnswers:
    """The unpatched model's answers (:class:`UnpatchedAnswers`), one row per trial: the model chooses
    the option with the larger probability.

    Args:
        trials: the unpatched trials (:data:`~magdash.steering.summary.BASELINE_COLUMNS`).
    """
    larger = trials["larger"].to_numpy()
    p_a, p_b = trials["p_a"].to_numpy(dtype=np.float64), trials["p_b"].to_numpy(dtype=np.float64)
    chose_a = p_a > p_b
    correct = chose_a == (larger == "A")
    accuracy = float(np.mean([correct[larger == side].mean() if (larger == side).any() else 0.5 for side in "AB"]))
    n_trials = len(trials)
    p_value = binomtest(round(accuracy * n_trials), n_trials, 0.5, alternative="greater").pvalue if n_trials else 1.0
    return UnpatchedAnswers(accuracy, float(p_value), float(chose_a.mean()) if n_trials else math.nan,
                            float(np.median(p_a + p_b)) if n_trials else math.nan)
