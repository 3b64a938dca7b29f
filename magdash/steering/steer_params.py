"""Every choice that can change a steering result, shared by the API, the CLI and the app.

Each field of :class:`SteerParams` carries its command-line option (:func:`magdash.params.option`):
the CLI builds ``magdash steer``'s options from them, so a help text is written once, here. The
defaults are Cacioli 2026's (arXiv 2603.20642, Paradigm D, ``scripts/paradigm_d_causal.py``): doses
0.25 to 1, ten random unit directions drawn with seed 42, the 97.5th percentile of the random
directions as the null, functional relevance when at least 75% of the prompts exceed it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from magdash.comparison_stimuli import OPERANDS
from magdash.errors import AnalysisError
from magdash.params import DEFAULT_CI, DEFAULT_N_BOOT, comma_separated, layer_tuple, option, seed_problem

DIRECTION_SOURCES = ("probe", "pc1")
"""Where the magnitude direction of a layer comes from: the unit weight vector of the ridge probe of
log n (the paper's primary direction) or PC1 of the magnitudes' centroids, oriented with n (its
robustness check)."""

PAPER_DOSES = (0.25, 0.5, 0.75, 1.0)
"""The paper's dose levels, in units of the magnitudes' projection span along the direction."""

PAPER_SEED = 42
"""The seed of the paper's random directions (``generate_random_directions(..., seed=42)``)."""


def _whole(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise AnalysisError(f"{name}={value!r} must be a whole number >= {minimum}", parameters=(name,))
    return int(value)


def _number(value, name: str, low: float, high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(value)) or not low <= float(value) <= high:
        raise AnalysisError(f"{name}={value!r} must be a number from {low:g} to {high:g}", parameters=(name,))
    return float(value)


@dataclass(frozen=True)
class SteerParams:
    """Every choice that can change a steering result (all of them belong in a cache key).

    A push at dose x adds ``x * span * u`` to the residual stream at the operand's number, u the
    layer's unit magnitude direction and span the range of the magnitudes' centroid projections on
    it (:func:`magdash.steering.directions.dose_unit`); each null direction gets the same norm.
    """

    layers: tuple[int, ...] | None = field(default=None, metadata=option(
        "the layers to steer (numbered as the extraction's layers: 0 is the embeddings)", metavar="START-END",
        parse=layer_tuple, default_text="every layer"))
    doses: tuple[float, ...] = field(default=PAPER_DOSES, metadata=option(
        "the pushes, in units of the magnitudes' projection span along the direction; the largest is the one "
        "the per-layer summary reads (the paper's 1)", metavar="X,X,...", parse=comma_separated(float)))
    direction: str = field(default="probe", metadata=option(
        "the magnitude direction of each layer: probe (the unit weight vector of the ridge probe of log n, the "
        "paper's) or pc1 (PC1 of the magnitudes' centroids, oriented with n)", choices=DIRECTION_SOURCES))
    operand: str = field(default="a", metadata=option(
        "whose number is pushed: a (the first option's, the paper's) or b", choices=OPERANDS))
    n_random: int = field(default=10, metadata=option(
        "random unit directions of the same norm, the null (the paper's 10)", metavar="K"))
    orthogonal_null: bool = field(default=True, metadata=option(
        "leave out the second null (as many random directions orthogonal to the magnitude direction)",
        flag="--no-orthogonal-null", negate=True))
    seed: int = field(default=PAPER_SEED, metadata=option(
        "seed of the null directions (the paper's 42) and of the bootstrap", flag="--steer-seed", metavar="S"))
    null_percentile: float = field(default=97.5, metadata=option(
        "a prompt exceeds the null when the magnitude direction moves it more than this percentile of the "
        "random directions (the paper's 97.5: one-tailed 0.025)", metavar="Q"))
    relevance_share: float = field(default=0.75, metadata=option(
        "a layer is functionally relevant when at least this share of prompts exceeds the null (the paper's 0.75)",
        metavar="SHARE"))
    n_boot: int = field(default=DEFAULT_N_BOOT, metadata=option(
        "bootstrap resamples of the prompts behind every interval; 0 gives none", flag="--steer-n-boot",
        metavar="N"))
    ci: float = field(default=DEFAULT_CI, metadata=option(
        "confidence level of every interval", flag="--steer-ci", metavar="LEVEL"))

    def __post_init__(self) -> None:
        if self.layers is not None:
            layers = tuple(sorted({_whole(layer, "layers", 0) for layer in self.layers}))
            if not layers:
                raise AnalysisError("layers=() names no layer; give None for every layer", parameters=("layers",))
            object.__setattr__(self, "layers", layers)
        try:
            doses = tuple(sorted({float(dose) for dose in self.doses}))
        except (TypeError, ValueError):
            raise AnalysisError(f"doses={self.doses!r} must be numbers", parameters=("doses",)) from None
        if not doses or not all(math.isfinite(dose) and dose > 0 for dose in doses):
            raise AnalysisError(f"doses={list(self.doses)!r} must be positive numbers", parameters=("doses",))
        object.__setattr__(self, "doses", doses)
        if self.direction not in DIRECTION_SOURCES:
            raise AnalysisError(f"direction={self.direction!r}: choose from {', '.join(DIRECTION_SOURCES)}",
                                parameters=("direction",))
        if self.operand not in OPERANDS:
            raise AnalysisError(f"operand={self.operand!r}: choose from {', '.join(OPERANDS)}",
                                parameters=("operand",))
        # Two draws are the fewest whose percentile is not simply the one draw.
        object.__setattr__(self, "n_random", _whole(self.n_random, "n_random", 2))
        if not isinstance(self.orthogonal_null, (bool, np.bool_)):
            raise AnalysisError(f"orthogonal_null={self.orthogonal_null!r} must be True or False",
                                parameters=("orthogonal_null",))
        object.__setattr__(self, "orthogonal_null", bool(self.orthogonal_null))
        if problem := seed_problem(self.seed, "seed"):
            raise AnalysisError(problem, parameters=("seed",))
        object.__setattr__(self, "seed", int(self.seed))
        object.__setattr__(self, "null_percentile", _number(self.null_percentile, "null_percentile", 0.0, 100.0))
        object.__setattr__(self, "relevance_share", _number(self.relevance_share, "relevance_share", 0.0, 1.0))
        object.__setattr__(self, "n_boot", _whole(self.n_boot, "n_boot", 0))
        ci = _number(self.ci, "ci", 0.0, 1.0)
        if ci in (0.0, 1.0):
            raise AnalysisError(f"ci={self.ci!r} must lie strictly between 0 and 1", parameters=("ci",))
        object.__setattr__(self, "ci", ci)

    @property
    def full_dose(self) -> float:
        """The largest dose: the one the per-layer summary and the relevance test read (the paper's 1)."""
        return self.doses[-1]

    @property
    def n_orthogonal(self) -> int:
        """Orthogonal null directions per layer: as many as random ones, or none."""
        return self.n_random if self.orthogonal_null else 0

    @classmethod
    def from_dict(cls, values: dict) -> SteerParams:
        """The inverse of ``dataclasses.asdict`` after a JSON round trip (lists back to tuples).

        Args:
            values: the fields, as ``dataclasses.asdict`` gave them and JSON kept them.
        """
        values = dict(values)
        for name in ("layers", "doses"):
            if values.get(name) is not None:
                values[name] = tuple(values[name])
        return cls(**values)
