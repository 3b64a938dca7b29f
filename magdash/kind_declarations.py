"""The names of every analysis kind, declared once, light enough for ``import magdash``.

A :class:`KindDeclaration` names where an analysis kind appears: its public function and the
module defining it, its params and result classes, its command line and the CLI module that
registers it, its dashboard key and its report section. It holds names only (strings), so the
public API (``magdash._PUBLIC``) and the command line (:data:`magdash.cli.SUBCOMMAND_MODULES`)
build their lists from :data:`KIND_DECLARATIONS` without importing a numerical library; the
registry of what a kind computes (:data:`magdash.runs.kinds.ANALYSIS_KINDS`) holds one declaration
per kind and checks its classes against it. A new kind is one :func:`declare_kind` call here
(ARCHITECTURE.md, "A new analysis kind").
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

ANALYSES_MODULE = "magdash.api.analyses"
"""The module of the analyses' public functions."""


@dataclass(frozen=True)
class ModelSection:
    """One builder of a report's sections on a focus model (:func:`magdash.reports.model_sections`).

    Attributes:
        place: where its sections go among every kind's: the report sorts the builders on it.
        builder: ``module:function`` of the builder, which takes a :class:`magdash.reports.ReportContext`
            and gives a list of :class:`~magdash.presentation.report.ReportSection` (empty: nothing to show).
    """

    place: int
    builder: str


@dataclass(frozen=True)
class KindDeclaration:
    """Where one analysis kind appears, by name.

    Attributes:
        name: the store's ``results.kind`` of its cached results and its cache keys' prefix.
        api: the name of its public function in :mod:`magdash`.
        params: ``module:Class`` of its params dataclass (public in :mod:`magdash` under ``Class``).
        result: ``module:Class`` of its result type (public under ``Class``); None: not a magdash class
            (a DataFrame).
        command: its command line, ``magdash <command>``.
        cli_module: the module under :mod:`magdash.cli` that registers the command, without its
            ``_command`` suffix (a command's options differ from kind to kind; two kinds may share one).
        dashboard_key: ``module:qualname`` of the dashboard's key of its cached results; None: the app
            does not show it.
        report_section: the name of its section builder in :mod:`magdash.presentation.report.sections`.
        model_sections: its builders of the report's sections on a focus model, in their places.
        api_module: the module defining its public function.
    """

    name: str
    api: str
    params: str
    result: str | None
    command: str
    cli_module: str
    dashboard_key: str | None = None
    report_section: str | None = None
    model_sections: tuple[ModelSection, ...] = ()
    api_module: str = ANALYSES_MODULE

    def public_names(self) -> dict[str, tuple[str, str]]:
        """Its public names in :mod:`magdash`: the function, then the params and result classes,
        each as ``name: (module, attribute)``."""
        names = {self.api: (self.api_module, self.api)}
        for target in (self.params, self.result):
            if target is not None:
                module, _, attribute = target.partition(":")
                names[attribute] = (module, attribute)
        return names


class KindDeclarations(Mapping[str, KindDeclaration]):
    """Kind declarations by name, in the order they were declared; a name, public name or command is
    claimed once (two kinds may share a params class: the same ``module:Class``)."""

    def __init__(self) -> None:
        self._declarations: dict[str, KindDeclaration] = {}

    def declare(self, declaration: KindDeclaration) -> KindDeclaration:
        """Add ``declaration``; a name, a command or a public name bound elsewhere is refused.

        Args:
            declaration: the kind's names.
        """
        if declaration.name in self._declarations:
            raise ValueError(f"an analysis kind named {declaration.name!r} is declared already: give the new one "
                             "another name")
        claimed = self.public_names()
        for public, target in declaration.public_names().items():
            if public in claimed and claimed[public] != target:
                raise ValueError(f"analysis kind {declaration.name!r} claims magdash.{public}, which is "
                                 f"{':'.join(claimed[public])} already")
        for other in self._declarations.values():
            if other.command == declaration.command:
                raise ValueError(f"analysis kinds {other.name!r} and {declaration.name!r} both claim the command "
                                 f"'magdash {declaration.command}'")
        self._declarations[declaration.name] = declaration
        return declaration

    def __getitem__(self, name: str) -> KindDeclaration:
        return self._declarations[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._declarations)

    def __len__(self) -> int:
        return len(self._declarations)

    def public_names(self) -> dict[str, tuple[str, str]]:
        """Every kind's public names (:meth:`KindDeclaration.public_names`): the functions in
        declaration order, then the params and result classes."""
        functions: dict[str, tuple[str, str]] = {}
        classes: dict[str, tuple[str, str]] = {}
        for declaration in self._declarations.values():
            function, *types = declaration.public_names().items()
            functions.setdefault(*function)
            for public, target in types:
                classes.setdefault(public, target)
        return {**functions, **classes}

    def model_sections(self) -> list[ModelSection]:
        """Every kind's builders of a focus model's report sections, sorted on their places."""
        return sorted((section for declaration in self._declarations.values() for section in declaration.model_sections),
                      key=lambda section: section.place)

    def cli_modules(self) -> tuple[str, ...]:
        """The CLI modules registering the kinds' commands, each once, in declaration order."""
        return tuple(dict.fromkeys(declaration.cli_module for declaration in self._declarations.values()))


KIND_DECLARATIONS = KindDeclarations()
"""Every analysis kind's names, by name, in the order of :data:`magdash.runs.kinds.ANALYSIS_KINDS`."""


def declare_kind(declaration: KindDeclaration) -> KindDeclaration:
    """Declare ``declaration`` in :data:`KIND_DECLARATIONS` (a name, command or public name claimed
    twice is refused).

    Args:
        declaration: the kind's names.
    """
    return KIND_DECLARATIONS.declare(declaration)


declare_kind(KindDeclaration(
    "analysis", "analyze", "magdash.variability.analysis_params:AnalysisParams",
    "magdash.variability.analysis:AnalysisResult", "analyze", "analyze",
    dashboard_key="magdash.dashboard.keys:AnalysisKey", report_section="analysis_sections",
    model_sections=(ModelSection(10, "magdash.reports:focus_layer_sections"), ModelSection(40, "magdash.reports:focus_massive_sections")),
))
declare_kind(KindDeclaration(
    "compare", "compare", "magdash.variability.analysis_params:AnalysisParams",
    "magdash.variability.compare:ComparisonResult", "compare", "analyze",
    dashboard_key="magdash.dashboard.keys:ComparisonKey", report_section="analysis_sections",
))
declare_kind(KindDeclaration(
    "phase", "depth", "magdash.depth_statistics.depth_params:DepthParams",
    "magdash.depth_statistics.diagnostics:DepthResult", "depth", "depth",
    dashboard_key="magdash.dashboard.keys:DepthKey", report_section="depth_section",
    model_sections=(ModelSection(30, "magdash.reports:focus_depth_sections"),),
))
declare_kind(KindDeclaration(
    "controls", "controls", "magdash.controls_statistics.controls_params:ControlsParams",
    "magdash.controls_statistics.controls:ControlsResult", "controls", "controls",
    dashboard_key="magdash.dashboard.controls_page:ControlsKey", report_section="controls_section",
))
declare_kind(KindDeclaration(
    "probe", "probe", "magdash.probes.probe_params:ProbeParams", "magdash.probes.result:ProbeResult", "probe",
    "probe", dashboard_key="magdash.dashboard.probes_page:ProbeKey", report_section="probe_section",
    model_sections=(ModelSection(50, "magdash.reports:focus_probe_sections"),),
))
declare_kind(KindDeclaration(
    "design", "design", "magdash.controls_statistics.controls_params:DesignParams",
    "magdash.controls_statistics.design:DesignResult", "design", "design",
    dashboard_key="magdash.dashboard.controls_page:DesignKey", report_section="design_section",
))
declare_kind(KindDeclaration(
    "e5", "e5", "magdash.frequency.e5_params:E5Params", None, "freq corr", "freq",
    dashboard_key="magdash.dashboard.keys:E5Key", report_section="e5_section",
    model_sections=(ModelSection(20, "magdash.reports:focus_e5_sections"),),
))
declare_kind(KindDeclaration(
    "behaviour", "behave", "magdash.behaviour.behaviour_params:BehaviourParams",
    "magdash.behaviour.behaviour_result:BehaviourResult", "behave", "behave",
    dashboard_key="magdash.dashboard.behaviour_page:BehaviourKey", report_section="behaviour_section",
    model_sections=(ModelSection(60, "magdash.reports:focus_behaviour_sections"),),
))
declare_kind(KindDeclaration(
    "steer", "steer", "magdash.steering.steer_params:SteerParams", "magdash.steering.steer_result:SteerResult",
    "steer", "steer",
    dashboard_key="magdash.dashboard.steering_page:SteerKey", report_section="steering_section",
    model_sections=(ModelSection(70, "magdash.reports:focus_steering_sections"),),
))
