"""The figures each page of the app draws, declared once.

A page (``pages/<url path>.py``) draws its figures in the order declared here, each through
``ui.figure`` with the figure function named here; the report's sections
(:mod:`magdash.presentation.report.sections`) draw the figures marked for the report through
the same figure functions; the page tests count the charts a page shows from this list. A
test reads the pages' ``ui.figure`` calls and records the report's figure calls against it
(``tests/presentation/test_page_figures.py``), so the three cannot drift apart.

A new chart on a page: its figure function in the figure module of its science, one
``PageFigure`` here, one ``ui.figure`` line in the page and, when the report shows it, one
line in the page's section builder.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from magdash.errors import AnalysisError
from magdash.presentation import (
    behaviour_figures,
    compare_figures,
    controls_figures,
    depth_figures,
    frequency_figures,
    geometry_figures,
    probe_figures,
    scaling_figures,
    steering_figures,
    tokenization_figures,
    weber_figures,
)


class When(Enum):
    """When a page draws a figure."""

    ALWAYS = "always"
    TOKEN_FACTS = "the model's token facts are recorded (extracted, not imported)"
    MASSIVE_CONTROL = "the massive-dimension control is switched on"
    ADJUSTED_VIEW = "dropping or standardising the massive dimensions changes some series"
    EACH_COMPARED = "once per variant or @random control compared"
    SIMULATED = "a design has been simulated"
    TRIALS = "the store holds a model's comparison trials"
    TRIALS_BESIDE_VECTORS = "the model whose trials are shown has its vectors stored on the view's stimuli"
    STEERED = "the store holds a cached steering result"


@dataclass(frozen=True)
class PageFigure:
    """One figure a page draws: its figure function (a result in, a captioned chart out), when
    the page draws it, and whether the report's section of the page shows it too."""

    figure: Callable[..., Any]
    when: When = When.ALWAYS
    report: bool = True

    @property
    def name(self) -> str:
        """``module:function``, as the pages' caches key the figure."""
        return f"{self.figure.__module__}:{self.figure.__qualname__}"


PAGE_FIGURES: Mapping[str, tuple[PageFigure, ...]] = {
    # The Scaling section of the report shows the alpha profile.
    "home": (PageFigure(scaling_figures.profile_figure, report=False),),
    "extract": (),
    "stimuli": (),
    "scaling": (
        PageFigure(scaling_figures.scaling_figure),
        PageFigure(scaling_figures.profile_figure),
        PageFigure(tokenization_figures.tokenization_figure, When.TOKEN_FACTS),
        PageFigure(scaling_figures.massive_control_figure, When.MASSIVE_CONTROL),
    ),
    "weber": (
        PageFigure(weber_figures.weber_figure),
        PageFigure(weber_figures.cv_figure),
        PageFigure(weber_figures.noise_figure),
        PageFigure(weber_figures.e3_figure),
        PageFigure(weber_figures.e4_figure),
    ),
    "frequency": (
        PageFigure(frequency_figures.frequency_rho_figure),
        PageFigure(frequency_figures.frequency_scatter_figure),
        PageFigure(frequency_figures.frequency_counts_figure),
    ),
    "compare": (PageFigure(compare_figures.compare_figure),),
    "geometry": (
        PageFigure(geometry_figures.rsa_figure),
        PageFigure(geometry_figures.rdm_figure),
        PageFigure(geometry_figures.pc1_figure),
    ),
    "probes": (
        PageFigure(probe_figures.r2_figure),
        PageFigure(probe_figures.selectivity_figure),
        PageFigure(probe_figures.decoded_figure),
        PageFigure(probe_figures.weber_figure),
        PageFigure(probe_figures.beta_figure),
    ),
    # The report shows the raw view of the depth diagnostics, with the adjusted order parameter.
    "depth": (
        PageFigure(depth_figures.order_figure),
        PageFigure(depth_figures.rank_figure),
        PageFigure(depth_figures.rank_figure, When.ADJUSTED_VIEW, report=False),
        PageFigure(depth_figures.omega_figure),
        PageFigure(depth_figures.spectrum_figure),
        PageFigure(depth_figures.spectrum_figure, When.ADJUSTED_VIEW, report=False),
    ),
    "behaviour": (
        PageFigure(behaviour_figures.psychometric_figure, When.TRIALS),
        PageFigure(behaviour_figures.weber_figure, When.TRIALS),
        PageFigure(behaviour_figures.bias_figure, When.TRIALS),
        PageFigure(behaviour_figures.representation_figure, When.TRIALS_BESIDE_VECTORS),
    ),
    "steering": (
        PageFigure(steering_figures.profile_figure, When.STEERED),
        PageFigure(steering_figures.dose_figure, When.STEERED),
    ),
    "controls": (
        PageFigure(controls_figures.loo_figure),
        PageFigure(controls_figures.icc_figure),
        PageFigure(controls_figures.permutation_figure),
        PageFigure(controls_figures.variant_figure, When.EACH_COMPARED),
    ),
    "design": (
        PageFigure(controls_figures.h1_figure, When.SIMULATED),
        PageFigure(controls_figures.e6_figure, When.SIMULATED),
        PageFigure(controls_figures.ci_width_figure, When.SIMULATED),
    ),
}
"""Each page's figures by its URL path (:data:`magdash.dashboard.navigation.PAGES`), in the order the page draws them."""


def page_figures(page: str, *holding: When) -> tuple[PageFigure, ...]:
    """The figures ``page`` draws when the conditions ``holding`` hold (those drawn once per
    variant counted once).

    Args:
        page: the page's URL path (``scaling``, ``weber``, ...).
        holding: the conditions that hold besides :attr:`When.ALWAYS`.
    """
    if page not in PAGE_FIGURES:
        raise AnalysisError(f"no page {page!r}; the pages are {', '.join(PAGE_FIGURES)}")
    shown = {When.ALWAYS, *holding}
    return tuple(figure for figure in PAGE_FIGURES[page] if figure.when in shown)


def report_figures() -> frozenset[str]:
    """The figure functions (``module:function``) the report draws: those of every page marked for it."""
    return frozenset(figure.name for figures in PAGE_FIGURES.values() for figure in figures if figure.report)
