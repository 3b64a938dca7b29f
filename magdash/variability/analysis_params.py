"""The parameters of the scalar-variability analysis and their defaults, importable without the
statistics themselves (the CLI builds its options from them before anything heavy is loaded).

The Weber window [0.8, 1.2] of H2 and the boundary magnitudes 9, 10, 100 of E3 are the paper's
(Cacioli 2026, arXiv 2604.04469); the core band floor(L/2) .. L-1 generalises its layers 16-31 of
a 32-block model; the 3x-median outlier rule is its script's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from magdash.depth_statistics.massive_dims import MASSIVE_DEFAULT, MASSIVE_RATIO, check_massive
from magdash.errors import AnalysisError
from magdash.params import DEFAULT_CI, DEFAULT_N_BOOT, comma_separated, layer_tuple, option, parse_pair, seed_problem
from magdash.variability.conventions import CONVENTION_NAMES, MAGDASH, Conventions, get_conventions
from magdash.variability.measures import MEASURES, OUTLIER_RULE_MEASURES, PRIMARY_MEASURES

DEFAULT_WINDOW = (0.8, 1.2)
"""The Weber window of alpha: scalar variability predicts alpha near 1 (H2)."""
DEFAULT_BOUNDARY = (9, 10, 100)
"""Magnitudes at digit-count boundaries, dropped in the E3 sensitivity refit."""
OUTLIER_FACTOR = 3.0
"""A point of V_eucl or V_residual above this many times the layer's median V is left out of the fit."""
CI_METHODS = ("percentile", "studentized", "bca", "t")
"""How a scaling fit's confidence interval is formed (:mod:`magdash.variability.fits`)."""
BOOTSTRAP_STREAMS = ("generator", "legacy")
"""Where a bootstrap's indices come from: numpy's Generator (magdash's) or a RandomState per series (the paper's)."""
LEGACY_SEED_LIMIT = 2**32
"""numpy's RandomState (the paper's bootstrap stream) takes seeds below 2**32."""
BOOTSTRAP_LAYER_CHOICES = ("core", "all", "none")
"""Where bootstrap CIs are computed: the core layers, every layer, none (no bootstrap at all)."""


@dataclass(frozen=True)
class FitRules:
    """How one scaling fit ``log V = log k + alpha log n`` is made: the points it keeps and how its
    interval is formed (:func:`magdash.variability.fits.fit_scaling`, and every fit, refit and
    difference of fits that must agree with it).

    Points: a magnitude enters with a finite V > 0 at n > 0; with ``drop_outliers`` (V_eucl and
    V_residual: :data:`~magdash.variability.measures.OUTLIER_RULE_MEASURES`), V(n) above
    ``outlier_factor`` x the median of the series' finite V is left out (no point is, when that
    median is not positive). Fewer than 5 points left: no fit.

    Interval: ``n_boot`` resamples of the (log n, log V) pairs (0: no interval), their indices drawn
    from ``stream`` (:data:`BOOTSTRAP_STREAMS`) with ``seed``, formed by ``ci_method``
    (:data:`CI_METHODS`) at level ``ci``.

    Built from an analysis's parameters by :meth:`AnalysisParams.fit_rules`; a fit that applies the
    outlier rule by measure takes :meth:`for_measure`, one without an interval :meth:`without_interval`.

    Attributes:
        drop_outliers: whether the outlier rule applies.
        outlier_factor: the rule's factor (:data:`OUTLIER_FACTOR`, the paper's 3).
        n_boot: bootstrap resamples (0: no interval).
        seed: the bootstrap's seed.
        ci: the interval's level.
        stream: where the resamples' indices come from.
        ci_method: how the interval is formed from them.
    """

    drop_outliers: bool = False
    outlier_factor: float = OUTLIER_FACTOR
    n_boot: int = DEFAULT_N_BOOT
    seed: int = 0
    ci: float = DEFAULT_CI
    stream: str = "generator"
    ci_method: str = "percentile"

    def __post_init__(self) -> None:
        if self.ci_method not in CI_METHODS:
            raise AnalysisError(f"unknown CI method {self.ci_method!r}; choose from {', '.join(CI_METHODS)}")
        if self.n_boot < 0:
            raise AnalysisError(f"the number of bootstrap resamples must be >= 0, got {self.n_boot}")
        if self.stream not in BOOTSTRAP_STREAMS:
            raise AnalysisError(
                f"unknown bootstrap stream {self.stream!r}; choose from {', '.join(BOOTSTRAP_STREAMS)}"
            )
        if not self.outlier_factor > 0:
            raise AnalysisError(f"the outlier factor must be positive, got {self.outlier_factor}")

    def for_measure(self, measure: str) -> FitRules:
        """These rules with the outlier rule as ``measure``'s fits apply it.

        Args:
            measure: a measure's name (:data:`~magdash.variability.measures.MEASURES`).
        """
        return self.with_outlier_rule(measure in OUTLIER_RULE_MEASURES)

    def with_outlier_rule(self, drop_outliers: bool) -> FitRules:
        """These rules, the outlier rule applied or not.

        Args:
            drop_outliers: whether the outlier rule applies.
        """
        return self if drop_outliers == self.drop_outliers else replace(self, drop_outliers=bool(drop_outliers))

    def without_interval(self) -> FitRules:
        """These rules with no bootstrap (``n_boot`` 0): the estimate alone."""
        return replace(self, n_boot=0)


def default_core_layers(n_blocks: int) -> list[int]:
    """The paper's core band generalised: layer indices floor(L/2) .. L-1 (0 = embeddings).

    For L = 32 blocks that is 16..31 of the 33 stored layers (the final block's output L is
    excluded, as in the paper).

    Args:
        n_blocks: the model's number of blocks L (at least 2).
    """
    if n_blocks < 2:
        raise AnalysisError(f"a model needs at least 2 blocks for a core band, got {n_blocks}")
    return list(range(n_blocks // 2, n_blocks))


@dataclass(frozen=True)
class AnalysisParams:
    """Every choice of the scalar-variability analysis that can change a result (all of them enter
    the cache key); shared by the CLI (its options are these fields), the Python API and the app."""

    measures: tuple[str, ...] = field(default=PRIMARY_MEASURES, metadata=option(
        f"comma-separated measures: {', '.join(MEASURES)}", metavar="LIST", parse=comma_separated(str)))
    core_layers: tuple[int, ...] | None = field(default=None, metadata=option(
        "core layers, the band the hypotheses are tested over", flag="--core", metavar="START-END",
        parse=layer_tuple, default_text="floor(L/2) to L-1"))
    n_boot: int = field(default=DEFAULT_N_BOOT, metadata=option(
        "bootstrap resamples, of each layer's fit and of the stimuli behind the mean over the core layers (0: no CI)",
        metavar="N"))
    seed: int | None = field(default=None, metadata=option(
        "bootstrap seed", metavar="S", default_text="the conventions' seed: 0, or 42 with conventions='paper'"))
    ci: float = field(default=DEFAULT_CI, metadata=option("confidence level of every interval", metavar="LEVEL"))
    window: tuple[float, float] = field(default=DEFAULT_WINDOW, metadata=option(
        "Weber window of alpha for H2", metavar="LO,HI", parse=parse_pair("0.8,1.2")))
    boundary: tuple[float, ...] = field(default=DEFAULT_BOUNDARY, metadata=option(
        "magnitudes dropped in the E3 sensitivity refit", metavar="LIST", parse=comma_separated(float)))
    bootstrap_layers: str = field(default="core", metadata=option(
        "where to compute each layer's bootstrap CI; none also turns off the stimulus bootstrap of the mean over "
        "the core layers", choices=BOOTSTRAP_LAYER_CHOICES))
    outlier_factor: float = field(default=OUTLIER_FACTOR, metadata=option(
        "a point is an outlier above this many times the layer's median V (V_eucl, V_residual)", metavar="K"))
    conventions: str = field(default=MAGDASH, metadata=option(
        "statistical conventions: magdash's, or those of the paper's script, which reproduce its numbers "
        "exactly (docs/science.md)", choices=CONVENTION_NAMES))
    ci_method: str | None = field(default=None, metadata=option(
        "alpha's confidence interval: studentized bootstrap, percentile (the paper's), bca, or t (no "
        "resampling); docs/science.md gives their coverage", choices=CI_METHODS,
        default_text="the conventions': studentized, or percentile with conventions='paper'"))
    # "drop": every layer's massive-activation dimensions (magdash.depth_statistics.massive_dims: mean |h_j|
    # above massive_ratio x the median over j) are removed before any measure is computed.
    massive: str = field(default=MASSIVE_DEFAULT, metadata=option(
        "keep the massive-activation dimensions, or drop them from every layer first", choices=("keep", "drop")))
    massive_ratio: float = field(default=MASSIVE_RATIO, metadata=option(
        "a dimension is massive when its mean |h_j| exceeds K times the median over dimensions", metavar="K"))
    # Carriers (0-based, in the stimulus set's order) left out of everything: how a reader acts
    # on a warning that one carrier drives the result or holds outlier vectors.
    exclude_carriers: tuple[int, ...] = field(default=(), metadata=option(
        "leave carrier C (0-based, in the stimulus set's order) out of everything; repeatable. The warnings "
        "say when one carrier drives a result or holds outlier vectors", flag="--exclude-carrier", metavar="C",
        parse=int, repeat=True))

    def __post_init__(self) -> None:
        rules = get_conventions(self.conventions)
        excluded = tuple(sorted({int(c) for c in self.exclude_carriers}))
        if any(c < 0 for c in excluded):
            raise AnalysisError(f"carriers to leave out are numbered from 0, got {list(self.exclude_carriers)}")
        object.__setattr__(self, "exclude_carriers", excluded)
        check_massive(self.massive, self.massive_ratio)
        if self.massive == "standardise":
            raise AnalysisError("the noise analysis keeps or drops the massive dimensions (massive='keep' or 'drop')",
                                parameters=("massive",))
        object.__setattr__(self, "massive_ratio", float(self.massive_ratio))
        seed = rules.default_seed if self.seed is None else self.seed
        if self.ci_method is None:
            object.__setattr__(self, "ci_method", rules.ci_method)
        if self.ci_method not in CI_METHODS:
            raise AnalysisError(f"unknown CI method {self.ci_method!r}; choose from {', '.join(CI_METHODS)}")
        measures = tuple(dict.fromkeys(self.measures))
        unknown = [m for m in measures if m not in MEASURES]
        if not measures or unknown:
            raise AnalysisError(
                f"unknown measure(s) {', '.join(map(repr, unknown)) or '(none given)'}; choose from "
                f"{', '.join(MEASURES)}"
            )
        if self.bootstrap_layers not in BOOTSTRAP_LAYER_CHOICES:
            raise AnalysisError(
                f"bootstrap layers must be one of {', '.join(BOOTSTRAP_LAYER_CHOICES)}, "
                f"got {self.bootstrap_layers!r}"
            )
        if self.n_boot < 0:
            raise AnalysisError(f"n_boot={self.n_boot} must be 0 or more", parameters=("n_boot",))
        if problem := seed_problem(seed):
            raise AnalysisError(problem)
        if rules.bootstrap_stream == "legacy" and seed >= LEGACY_SEED_LIMIT:
            raise AnalysisError(f"the paper's conventions take seeds below 2**32, got {seed}")
        if self.core_layers is not None and not all(
            isinstance(layer, (int, np.integer)) for layer in self.core_layers
        ):
            raise AnalysisError(f"core layers must be layer indices, got {self.core_layers!r}")
        if not 0 < self.ci < 1:
            raise AnalysisError(f"the confidence level must lie between 0 and 1, got {self.ci}")
        low, high = (float(v) for v in self.window)
        if not low <= high:
            raise AnalysisError(f"the Weber window needs LOW <= HIGH, got {low},{high}")
        if self.outlier_factor <= 0:
            raise AnalysisError(f"the outlier factor must be positive, got {self.outlier_factor}")
        object.__setattr__(self, "measures", measures)
        object.__setattr__(self, "window", (low, high))
        object.__setattr__(self, "boundary", tuple(float(b) for b in self.boundary))
        object.__setattr__(self, "n_boot", int(self.n_boot))
        object.__setattr__(self, "seed", int(seed))
        if self.core_layers is not None:
            core = tuple(sorted({int(layer) for layer in self.core_layers}))
            if not core:
                raise AnalysisError("the core band is empty; choose at least one layer")
            object.__setattr__(self, "core_layers", core)

    def fit_rules(self, drop_outliers: bool = False) -> FitRules:
        """The rules of this analysis's scaling fits (resamples, seed, level, outlier factor, the
        conventions' bootstrap stream, the CI method).

        Args:
            drop_outliers: whether the outlier rule applies (:meth:`FitRules.for_measure` sets it by measure).
        """
        return FitRules(
            drop_outliers=drop_outliers, outlier_factor=self.outlier_factor, n_boot=self.n_boot,
            seed=self.seed,  # pyright: ignore[reportArgumentType] - __post_init__ resolves the optional seed to an int
            ci=self.ci, stream=self.rules.bootstrap_stream,
            ci_method=self.ci_method,  # pyright: ignore[reportArgumentType] - __post_init__ resolves it to a str
        )

    @property
    def rules(self) -> Conventions:
        """The statistical conventions these parameters follow."""
        return get_conventions(self.conventions)

    def core_band(self, n_blocks: int) -> list[int]:
        """The core layers asked for, before the model's stored layers are counted: the chosen
        band, else floor(L/2)..L-1 of ``n_blocks`` = L (:meth:`core_for` checks them).

        Args:
            n_blocks: the model's number of blocks L.
        """
        return list(self.core_layers) if self.core_layers is not None else default_core_layers(n_blocks)

    def core_for(self, n_blocks: int, n_layers: int) -> list[int]:
        """The core band for a model with ``n_blocks`` blocks and ``n_layers`` stored layers.

        Args:
            n_blocks: the model's number of blocks L.
            n_layers: how many layers it has stored (L + 1, or L + 2 with a final norm).
        """
        core = self.core_band(n_blocks)
        outside = [layer for layer in core if not 0 <= layer < n_layers]
        if outside:
            raise AnalysisError(
                f"core layers {outside} do not exist: this model has layers 0..{n_layers - 1}"
            )
        return core
