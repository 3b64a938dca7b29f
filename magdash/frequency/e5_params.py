"""The parameters of E5 (the correlation of V(n) with a corpus's number counts) and their
defaults, importable without the statistics (the CLI builds ``freq corr``'s options from them
before anything heavy is loaded)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from magdash.errors import AnalysisError
from magdash.params import DEFAULT_N_BOOT, layer_tuple, option, seed_problem
from magdash.variability.conventions import CONVENTION_NAMES, MAGDASH
from magdash.variability.measures import DEFAULT_MEASURE, MEASURES

MISSING_POLICIES = ("error", "zero")
"""What a magnitude without a count is: an error (a silent 0 would be read as "rare"), or count 0."""
DEFAULT_MISSING = MISSING_POLICIES[0]


@dataclass(frozen=True)
class E5Params:
    """Every choice of E5; shared by ``magdash freq corr`` (its options are these fields), the
    Python API (:func:`magdash.e5`) and the runs (:func:`magdash.runs.frequency_runs.e5_from_store`).
    All but ``conventions`` enter the cache key; ``conventions`` decides only which layers the
    summary counts significant (:func:`magdash.frequency.e5.e5_summary`)."""

    layers: tuple[int, ...] | None = field(default=None, metadata=option(
        "the layers to correlate", metavar="START-END", parse=layer_tuple, default_text="floor(L/2) to L-1"))
    measure: str = field(default=DEFAULT_MEASURE, metadata=option(
        "the variability measure correlated with log(count+1)", choices=tuple(MEASURES)))
    n_boot: int = field(default=DEFAULT_N_BOOT, metadata=option(
        "bootstrap resamples of the magnitudes for both correlations' intervals", metavar="N"))
    seed: int = field(default=0, metadata=option("bootstrap seed", metavar="S"))
    missing: str = field(default=DEFAULT_MISSING, metadata=option(
        "a magnitude without a count: fail, or count 0", choices=MISSING_POLICIES))
    conventions: str = field(default=MAGDASH, metadata=option(
        "which layers count as significant: p < .05 (magdash) or rho > 0 and p < .05 (the paper's script)",
        choices=CONVENTION_NAMES))

    def __post_init__(self) -> None:
        if self.layers is not None:
            object.__setattr__(self, "layers", tuple(int(layer) for layer in self.layers))
        if self.measure not in MEASURES:
            raise AnalysisError(f"unknown measure {self.measure!r}; choose from {', '.join(MEASURES)}")
        if isinstance(self.n_boot, bool) or not isinstance(self.n_boot, int) or self.n_boot < 0:
            raise AnalysisError(f"n_boot={self.n_boot} must be 0 or more", parameters=("n_boot",))
        if problem := seed_problem(self.seed):
            raise AnalysisError(problem)
        if self.missing not in MISSING_POLICIES:
            raise AnalysisError(f"missing={self.missing!r} must be one of {', '.join(MISSING_POLICIES)}",
                                parameters=("missing",))
        if self.conventions not in CONVENTION_NAMES:
            raise AnalysisError(f"unknown conventions {self.conventions!r}; choose from {', '.join(CONVENTION_NAMES)}")


def e5_params(params: E5Params | None = None, options: Mapping[str, Any] | None = None) -> E5Params:
    """``params`` (default :class:`E5Params`'s defaults) with ``options`` replacing its fields.

    Args:
        params: the parameters to start from.
        options: field names and values (``n_boot=200``); a name that is not a field is refused.
    """
    base = E5Params() if params is None else params
    if not isinstance(base, E5Params):
        raise AnalysisError(f"params must be an E5Params, got {type(base).__name__}")
    options = dict(options or {})
    fields = [f.name for f in dataclasses.fields(E5Params)]
    unknown = sorted(set(options) - set(fields))
    if unknown:
        raise AnalysisError(f"unknown option(s) {', '.join(unknown)}: E5Params has {', '.join(fields)}")
    return dataclasses.replace(base, **options) if options else base
