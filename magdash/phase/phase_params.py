"""The parameters of the depth diagnostics and their defaults, importable without the statistics
(the CLI builds its options from them before anything heavy is loaded)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from magdash.errors import AnalysisError
from magdash.params import DEFAULT_CI, DEFAULT_N_BOOT, option, seed_problem
from magdash.phase.massive_dims import MASSIVE_DEFAULT, MASSIVE_MODES, MASSIVE_RATIO, check_massive

TRACY_WIDOM_1_QUANTILES = {0.90: 0.4501, 0.95: 0.9793, 0.99: 2.0234}
"""Quantiles of the Tracy-Widom law (beta = 1) by level: the spike margin above the Marchenko-Pastur edge."""


@dataclass(frozen=True)
class PhaseParams:
    """Every choice that changes a phase result, shared by the CLI, the API and the app.

    ``n_boot`` resamples of the independent units the vectors come from (texts, or magnitudes
    and carriers: :mod:`magdash.phase.unit_bootstrap`) give the gamma_c interval at
    ``confidence`` (seeded by ``seed``); ``level`` is the Tracy-Widom quantile of the spike margin;
    ``skip_embedding_step`` leaves the embeddings out of the transitions (see the module
    docstring for why it is off by default). The cached samples do not depend on these, so
    changing them costs no model run or store read. ``massive`` (keep, drop or standardise) and
    ``massive_ratio`` (the multiple of the median mean |h_j| above which a dimension is
    massive, :mod:`magdash.phase.massive_dims`) choose the vectors' view: other samples, cached
    under their own key.
    """

    n_boot: int = field(default=DEFAULT_N_BOOT, metadata=option(
        "bootstrap resamples of the texts (all tokens) or of the magnitudes and carriers (number tokens), each with "
        "all of its vectors, for the gamma_c interval (0: none)", metavar="N"))
    seed: int = field(default=0, metadata=option("bootstrap seed", metavar="S"))
    confidence: float = field(default=DEFAULT_CI, metadata=option("confidence level of the gamma_c interval",
                                                            metavar="LEVEL"))
    level: float = field(default=0.99, metadata=option(
        "Tracy-Widom quantile of the spike margin above the Marchenko-Pastur edge", metavar="Q",
        choices=tuple(sorted(TRACY_WIDOM_1_QUANTILES))))
    massive: str = field(default=MASSIVE_DEFAULT, metadata=option(
        "the vectors' view: raw (keep, the paper's), without the massive-activation dimensions (drop) or every "
        "dimension z-scored (standardise)", choices=MASSIVE_MODES))
    massive_ratio: float = field(default=MASSIVE_RATIO, metadata=option(
        "a dimension is massive when its mean |h_j| exceeds K times the median over dimensions", metavar="K"))
    skip_embedding_step: bool = field(default=False, metadata=option(
        "leave the embeddings (gamma = 0) out of gamma_c and the jumps (off, as in the paper, whose m(gamma) "
        "starts at the embeddings)"))

    def __post_init__(self) -> None:
        if isinstance(self.n_boot, bool) or not isinstance(self.n_boot, (int, np.integer)) or self.n_boot < 0:
            raise AnalysisError(f"n_boot={self.n_boot!r} must be 0 or more", parameters=("n_boot",))
        if problem := seed_problem(self.seed):
            raise AnalysisError(problem)
        if not 0 < self.confidence < 1:
            raise AnalysisError(f"the confidence level must lie between 0 and 1, got {self.confidence}")
        if self.level not in TRACY_WIDOM_1_QUANTILES:
            raise AnalysisError(
                f"the Tracy-Widom level must be one of {sorted(TRACY_WIDOM_1_QUANTILES)}, got {self.level}"
            )
        check_massive(self.massive, self.massive_ratio)
        object.__setattr__(self, "n_boot", int(self.n_boot))
        object.__setattr__(self, "seed", int(self.seed))
        object.__setattr__(self, "massive_ratio", float(self.massive_ratio))
        object.__setattr__(self, "skip_embedding_step", bool(self.skip_embedding_step))
