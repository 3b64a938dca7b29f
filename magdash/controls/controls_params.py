"""The parameters of the robustness controls and of the study-design simulator, importable
without the statistics (the CLI builds its options from them before anything heavy is loaded)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from magdash.errors import AnalysisError
from magdash.params import comma_separated, option, seed_problem
from magdash.stimuli import NUMBER_FORMAT_NAMES, get_number_format, parse_magnitudes
from magdash.variability.analysis_params import AnalysisParams

DEFAULT_N_PERM = 10_000
"""Permutations of the magnitude labels in the permutation null of alpha."""
CALIBRATION_MEASURE = "eucl"
"""The measure whose noise the design simulator takes from a model (V_eucl: the simulator draws V
from its exact law given the carriers, docs/science.md)."""


def calibration_params(analysis: AnalysisParams | None = None) -> AnalysisParams:
    """The analysis a design is calibrated on: ``analysis``' core band and conventions (the
    defaults when None), :data:`CALIBRATION_MEASURE` alone, without bootstrap.

    Args:
        analysis: the analysis whose core band and conventions the calibration keeps.
    """
    return replace(analysis or AnalysisParams(), measures=(CALIBRATION_MEASURE,), n_boot=0)


@dataclass(frozen=True)
class ControlsParams:
    """Every choice of the controls (all enter the cache key); shared by the CLI, API and app.

    Attributes:
        analysis: the analysis whose alpha the controls test (every analysis and comparison they run uses it).
    """

    analysis: AnalysisParams = field(default_factory=AnalysisParams)
    n_perm: int = field(default=DEFAULT_N_PERM, metadata=option("permutations of the magnitude labels", metavar="N"))
    seed: int = field(default=0, metadata=option("permutation seed", flag="--perm-seed", metavar="S"))
    significance: float = field(default=0.05, metadata=option(
        "level above which a permutation p counts against alpha", metavar="P"))
    variants: tuple[str, ...] = field(default=(), metadata=option(
        "another stored extraction of the model (e.g. minilm:float16, minilm:first); repeatable", flag="--variant",
        metavar="NAME", repeat=True))
    formats: tuple[str, ...] = field(default=(), metadata=option(
        "compare the model on the same carriers and magnitudes written in this number format (stored by "
        "an extraction with number_format=); repeatable", flag="--format-variant", metavar="FORMAT", choices=NUMBER_FORMAT_NAMES,
        repeat=True))
    random_control: bool = field(default=True, metadata=option("leave out the @random control", flag="--no-random",
                                                               negate=True))

    def __post_init__(self) -> None:
        if self.n_perm < 1:
            raise AnalysisError(f"n_perm={self.n_perm} must be 1 or more", parameters=("n_perm",))
        if problem := seed_problem(self.seed):
            raise AnalysisError(problem)
        if not 0 < self.significance < 1:
            raise AnalysisError(f"the significance level must lie between 0 and 1, got {self.significance}")
        require_raw_vectors(self.analysis)
        object.__setattr__(self, "variants", tuple(dict.fromkeys(self.variants)))
        object.__setattr__(self, "formats", tuple(dict.fromkeys(get_number_format(name).name for name in self.formats)))


def require_raw_vectors(analysis: AnalysisParams) -> None:
    """The controls and the design simulator read the stored vectors themselves (carriers, RDMs,
    calibration): they refuse an analysis of another view of them, which would mix the two."""
    if analysis.massive != "keep":
        raise AnalysisError(
            "the robustness controls and the design simulator work on the raw vectors: leave massive='keep' "
            "(the analysis's massive_control=True sets alpha without the massive dimensions beside the raw alpha)",
            parameters=("massive", "massive_control"),
        )


DEFAULT_CARRIER_GRID = (2, 3, 5, 10, 20)
DEFAULT_MAGNITUDE_GRID = (8, 13, 26, 50, 100)


@dataclass(frozen=True)
class DesignParams:
    """A study design and the simulation's settings; shared by the CLI, the API and the app.

    ``magnitudes`` is any magnitude spec (``paper``, ``1-100``, ``1,2,5,10``); ``n_layers`` None
    takes the calibrated model's core band size. ``alpha`` and ``delta`` are the true values
    at which the CI half-widths and the single-point powers are reported (their sizes: the
    simulated effects are positive); the curves run from 0 to ``alpha_max`` and ``delta_max``
    (None: 8 standard errors of the mean core alpha, and 4 of a layer's delta, from a pilot at
    alpha = 0) in ``n_points`` steps, plus ``alpha`` and ``delta`` themselves.
    """

    magnitudes: str = field(default="paper", metadata=option(
        "magnitudes of the design (any spec: paper, 1-100, 1,2,5,10)", metavar="SPEC"))
    n_carriers: int = field(default=5, metadata=option("carrier sentences of the design", flag="--carriers",
                                                       metavar="C"))
    n_layers: int | None = field(default=None, metadata=option(
        "core layers of the design", flag="--layers", metavar="K", default_text="the model's core band"))
    alpha: float = field(default=0.05, metadata=option("true alpha", metavar="A"))
    delta: float = field(default=0.02, metadata=option("true difference between two models' alphas", metavar="D"))
    alpha_max: float | None = field(default=None, metadata=option(
        "end of the H1 power curve", metavar="A", default_text="8 standard errors of the mean core alpha"))
    delta_max: float | None = field(default=None, metadata=option(
        "end of the E6 power curve", metavar="D", default_text="4 standard errors of a layer's delta"))
    n_points: int = field(default=20, metadata=option("points per power curve", flag="--points", metavar="P"))
    n_studies: int = field(default=1000, metadata=option("simulated studies per point", flag="--studies",
                                                         metavar="N"))
    n_boot: int = field(default=200, metadata=option(
        "joint-bootstrap resamples per simulated study in E6 (0: off)", flag="--design-boot", metavar="B"))
    level: float = field(default=0.05, metadata=option("the tests' two-sided level", metavar="P"))
    power_target: float = field(default=0.8, metadata=option(
        "the power the minimal detectable alpha reaches", metavar="P"))
    seed: int = field(default=0, metadata=option("simulation seed", flag="--design-seed", metavar="S"))
    carrier_grid: tuple[int, ...] = field(default=DEFAULT_CARRIER_GRID, metadata=option(
        "carriers at which the CI half-width is simulated", metavar="LIST", parse=comma_separated(int)))
    magnitude_grid: tuple[int, ...] = field(default=DEFAULT_MAGNITUDE_GRID, metadata=option(
        "magnitudes at which the CI half-width is simulated", metavar="LIST",
        parse=comma_separated(int)))

    def __post_init__(self) -> None:
        if self.n_carriers < 2:
            raise AnalysisError(f"a design needs at least 2 carriers, got {self.n_carriers}")
        if self.n_layers is not None and self.n_layers < 2:
            raise AnalysisError(f"a design needs at least 2 core layers for the tests over layers, got {self.n_layers}")
        if self.n_points < 2 or self.n_studies < 10:
            raise AnalysisError("a design curve needs at least 2 points and 10 studies per point")
        if self.n_boot < 0:
            raise AnalysisError(f"n_boot={self.n_boot} must be 0 or more", parameters=("n_boot",))
        if not 0 < self.level < 1 or not 0 < self.power_target < 1:
            raise AnalysisError("the level and the power target must lie between 0 and 1")
        if problem := seed_problem(self.seed):
            raise AnalysisError(problem)
        for name in ("alpha_max", "delta_max"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise AnalysisError(f"{name} must be positive, got {value}")
        if min(self.carrier_grid, default=2) < 2 or min(self.magnitude_grid, default=5) < 5:
            raise AnalysisError("the carrier grid needs >= 2 carriers and the magnitude grid >= 5 magnitudes")
        self.magnitude_values()  # a bad spec fails here, where the design is chosen
        object.__setattr__(self, "carrier_grid", tuple(int(c) for c in self.carrier_grid))
        object.__setattr__(self, "magnitude_grid", tuple(int(m) for m in self.magnitude_grid))

    def magnitude_values(self) -> np.ndarray:
        """The design's positive magnitudes, read from its spec (at least 5)."""
        values = np.asarray(parse_magnitudes(self.magnitudes), dtype=np.float64)
        if np.count_nonzero(values > 0) < 5:
            raise AnalysisError(f"a design needs at least 5 positive magnitudes, got {self.magnitudes!r}")
        return values[values > 0]
