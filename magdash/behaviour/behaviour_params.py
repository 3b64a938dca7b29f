"""Every choice that can change a behaviour result, shared by the API, the CLI and the app.

Each field of :class:`BehaviourParams` carries its command-line option (:func:`magdash.params.option`),
so a help text is written once, here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from magdash.errors import AnalysisError
from magdash.params import DEFAULT_CI, DEFAULT_N_BOOT, comma_separated, option, seed_problem

CONVENTIONS = ("magdash", "paper")
"""``magdash``: the two-alternative psychometric function (guess rate 0.5); ``paper``: Cacioli 2026's
function and procedure exactly (:mod:`magdash.behaviour.paper`)."""

VARIANTS = ("choice", "graded")
"""``choice``: the chosen option (larger logit) per trial; ``graded``: the soft choice probability
sigmoid(logit of the larger option - the other's), every trial's confidence (magdash conventions only)."""

PAPER_SEED = 42
"""The seed of the paper's bootstrap (its ``bootstrap_weber_fractions(..., seed=42)``)."""


def _whole(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise AnalysisError(f"{name}={value!r} must be a whole number >= {minimum}", parameters=(name,))
    return int(value)


def _fraction(value, name: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(value)) or not low <= float(value) <= high:
        raise AnalysisError(f"{name}={value!r} must be a number from {low:g} to {high:g}", parameters=(name,))
    return float(value)


@dataclass(frozen=True)
class BehaviourParams:
    """Every choice that can change a behaviour result (all of them belong in a cache key).

    The conventions decide the function fitted and the procedure (:mod:`magdash.behaviour.psychometric`
    for ``magdash``, :mod:`magdash.behaviour.paper` for ``paper``); both may be asked at once.
    """

    conventions: tuple[str, ...] = field(default=("magdash",), metadata=option(
        "whose psychometric function and procedure: magdash (guess rate 0.5, a lapse rate, Weber fraction "
        "never negative) and/or paper (Cacioli 2026's function, starts, bounds and bootstrap exactly)",
        metavar="C,C", parse=comma_separated(str)))
    variants: tuple[str, ...] = field(default=VARIANTS, metadata=option(
        "what is fitted under the magdash conventions: choice (the chosen option) and/or graded "
        "(the soft choice probability from the two options' logits)", metavar="V,V", parse=comma_separated(str)))
    n_boot: int = field(default=DEFAULT_N_BOOT, metadata=option(
        "bootstrap resamples of the trials (within ratio x position cells) behind every interval; 0 gives none "
        "(the paper's conventions refit each resample by Nelder-Mead, as the paper did: minutes per reference "
        "at 10,000)",
        flag="--behaviour-n-boot", metavar="N"))
    seed: int = field(default=0, metadata=option(
        "seed of the magdash conventions' bootstrap (the paper's conventions use the paper's seed, 42)",
        flag="--behaviour-seed", metavar="S"))
    ci: float = field(default=DEFAULT_CI, metadata=option(
        "confidence level of every interval", flag="--behaviour-ci", metavar="LEVEL"))
    min_option_mass: float = field(default=0.5, metadata=option(
        "a trial whose two answer options hold less probability than this together is not measured "
        "(counted as unanswered, left out of the magdash fits; the paper's conventions measure every trial, as it did)",
        metavar="P"))
    max_lapse: float = field(default=0.2, metadata=option(
        "the largest lapse rate the magdash fit may take (the function then runs from 0.5 to 1 - lapse)",
        metavar="L"))
    max_position_bias: float = field(default=0.25, metadata=option(
        "a model whose share of 'A' answers departs from 0.5 by more than this at a reference is "
        "named as preferring a position whatever the numbers", metavar="B"))
    max_unanswered: float = field(default=0.1, metadata=option(
        "a share of unanswered trials above this is named where the result is shown", metavar="SHARE"))
    chance_level: float = field(default=0.05, metadata=option(
        "a fit whose likelihood-ratio test against P = 0.5 at every ratio has p above this is at chance: "
        "its Weber fraction is undefined", metavar="P"))

    def __post_init__(self) -> None:
        for name, allowed in (("conventions", CONVENTIONS), ("variants", VARIANTS)):
            values = tuple(dict.fromkeys(str(v) for v in (getattr(self, name) or ())))
            unknown = [v for v in values if v not in allowed]
            if not values or unknown:
                raise AnalysisError(f"unknown {name} {', '.join(unknown) or '(none given)'}; choose from "
                                    f"{', '.join(allowed)}", parameters=(name,))
            object.__setattr__(self, name, values)
        object.__setattr__(self, "n_boot", _whole(self.n_boot, "n_boot", 0))
        if problem := seed_problem(self.seed, "seed"):
            raise AnalysisError(problem, parameters=("seed",))
        object.__setattr__(self, "seed", int(self.seed))
        ci = _fraction(self.ci, "ci", 0.0, 1.0)
        if ci in (0.0, 1.0):
            raise AnalysisError(f"ci={self.ci!r} must lie strictly between 0 and 1", parameters=("ci",))
        object.__setattr__(self, "ci", ci)
        object.__setattr__(self, "min_option_mass", _fraction(self.min_option_mass, "min_option_mass", 0.0, 1.0))
        object.__setattr__(self, "max_lapse", _fraction(self.max_lapse, "max_lapse", 0.0, 0.24))
        object.__setattr__(self, "max_position_bias", _fraction(self.max_position_bias, "max_position_bias", 0.0, 0.5))
        object.__setattr__(self, "max_unanswered", _fraction(self.max_unanswered, "max_unanswered", 0.0, 1.0))
        object.__setattr__(self, "chance_level", _fraction(self.chance_level, "chance_level", 0.0, 1.0))

    @classmethod
    def from_dict(cls, values: dict) -> BehaviourParams:
        """The inverse of ``dataclasses.asdict`` after a JSON round trip (lists back to tuples).

        Args:
            values: the fields, as ``dataclasses.asdict`` gave them and JSON kept them.
        """
        values = dict(values)
        for name in ("conventions", "variants"):
            if name in values:
                values[name] = tuple(values[name])
        return cls(**values)
