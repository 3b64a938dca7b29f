"""The registry of analysis kinds: every analysis magdash runs, declared once.

An :class:`AnalysisKind` says what an analysis is everywhere it appears: its names (a
:class:`~magdash.kind_declarations.KindDeclaration`: the store's ``results.kind`` and its cache keys'
prefix, its public function, command line, dashboard key and report sections), its params class and
code version, its compute function over a :class:`~magdash.store.vectors.VectorSource` (a stored model
or arrays: one path), its run over a store by model name, its result type, how its results are cached
with their metric rows (:class:`~magdash.runs.cache.CachedKind`, the result type's payload codec and
:mod:`magdash.runs.rows`), whether a backfill can write those rows from the payload alone, its sweep
task and its run for a dashboard key.

The names live in the base layer (:data:`magdash.kind_declarations.KIND_DECLARATIONS`), so the public
API (``magdash._PUBLIC``, kept import-light) and the command line build their lists from them; the
cache's backfill (:mod:`magdash.runs.backfill`), the sweep's task kinds (:mod:`magdash.sweep.tasks`),
the app's cache of results (``pages/ui/caches.py``) and the report's focus-model sections
(:func:`magdash.reports.model_sections`) iterate :data:`ANALYSIS_KINDS` or the declarations.
The metric tables (:mod:`magdash.store.metrics`, the store's layer) name the kind they belong to.
A new analysis is one module in :mod:`magdash.runs`, one :func:`register_analysis_kind` call here and
its declaration (ARCHITECTURE.md, "A new analysis kind").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from magdash.behaviour.behaviour_params import BehaviourParams
from magdash.behaviour.behaviour_result import BEHAVIOUR_VERSION, BehaviourResult
from magdash.controls_statistics.controls import CONTROLS_VERSION, ControlsResult
from magdash.controls_statistics.controls_params import ControlsParams, DesignParams
from magdash.controls_statistics.design import DESIGN_VERSION, DesignResult
from magdash.depth_statistics.accumulate import PHASE_VERSION
from magdash.depth_statistics.depth_params import DepthParams
from magdash.depth_statistics.diagnostics import DepthResult
from magdash.errors import AnalysisError
from magdash.formatting import format_number
from magdash.frequency.e5 import E5_VERSION
from magdash.frequency.e5_params import E5Params
from magdash.kind_declarations import KIND_DECLARATIONS, KindDeclaration
from magdash.probes.probe_params import ProbeParams
from magdash.probes.result import PROBE_VERSION, ProbeResult
from magdash.runs import (
    analysis_runs,
    behaviour_runs,
    controls_runs,
    depth_runs,
    design_runs,
    frequency_runs,
    probe_runs,
    steer_runs,
)
from magdash.runs.cache import CachedKind, lookup
from magdash.steering.steer_params import SteerParams
from magdash.steering.steer_result import STEER_VERSION, SteerResult
from magdash.variability.analysis import ANALYSIS_VERSION, AnalysisResult
from magdash.variability.analysis_params import AnalysisParams
from magdash.variability.compare import ComparisonResult


@dataclass(frozen=True)
class SweepTask:
    """How an analysis kind runs as a sweep's task on each cell (:mod:`magdash.sweep.tasks`).

    Attributes:
        name: the task's name in a plan's ``tasks``, and the name of the plan's table of its parameters.
        cache_keys: the keys of the results a cell's run caches, from ``(store, model, stimuli, params)``:
            all cached means the task is done on that cell.
        describe: the summary's one line on a result.
        done: for a task that runs the model itself (not over the cell's stored vectors), whether a cell's
            work is stored, ``done(context)`` (a :class:`magdash.sweep.tasks.TaskContext`, read by its fields);
            None: the cell's vectors are stored and every key of ``cache_keys`` is cached.
        run_cell: for such a task, its run on a cell, ``run_cell(context)`` giving the result; None: the kind's
            ``run`` over the cell's stored vectors with the plan's table of the task's name.
    """

    name: str
    cache_keys: Callable[[Any, str, str, Any], list[str]]
    describe: Callable[[Any], str]
    done: Callable[[Any], bool] | None = None
    run_cell: Callable[[Any], Any] | None = None


DashboardRun = Callable[[Any, Callable[[str], Any], Callable[[Any], Any]], Any]
"""A kind's result for a dashboard key, ``run(key, store_for, resolve)``: ``store_for`` opens the key's store
by path, ``resolve`` gives another key's cached result (an E5 needs its analysis). The key is read by its
fields (the dashboard's keys sit above this layer)."""


def _class_name(declared: type) -> str:
    return f"{declared.__module__}:{declared.__qualname__}"


@dataclass(frozen=True)
class AnalysisKind:
    """One kind of analysis, declared once (:data:`ANALYSIS_KINDS`).

    Attributes:
        declaration: its names, where it appears (:class:`~magdash.kind_declarations.KindDeclaration`:
            its name, public function, command, dashboard key and report section).
        params: its params dataclass (the declaration's ``params``).
        version: the version of the code computing it (its ``*_VERSION`` constant, beside that code).
        result_type: what its run returns (the declaration's ``result``, when that names one).
        compute: the analysis of a :class:`~magdash.store.vectors.VectorSource` (stored: cached in its store;
            arrays: not cached), the one path of the API, the CLI and the app.
        run: the analysis of a stored model by name, ``run(store, model, stimuli, params, use_cache=, progress=)``
            (a comparison takes two models).
        cached: how its results are kept in the store: payload codec and metric rows.
        backfill: the cached payload holds everything its metric rows need, so a backfill writes them.
        task: how it runs in a sweep; None: no sweep task.
        dashboard_run: its result for its dashboard key (:data:`DashboardRun`), which the app caches; None when
            the declaration names no dashboard key.
        metric_kind: the kind its metric rows are stored under (:mod:`magdash.store.metrics`) when it is not
            ``name``: the depth diagnostics are recomputed from the cached samples, so their rows are keyed apart.
    """

    declaration: KindDeclaration
    params: type
    version: str | int
    result_type: type
    compute: Callable[..., Any]
    run: Callable[..., Any]
    cached: CachedKind
    backfill: bool = False
    task: SweepTask | None = None
    dashboard_run: DashboardRun | None = None
    metric_kind: str | None = None

    def __post_init__(self) -> None:
        declared = self.declaration
        if self.cached.name != self.name:
            raise ValueError(f"analysis kind {self.name!r} caches its results as {self.cached.name!r}: one name for both")
        if self.backfill and self.cached.rows is None:
            raise ValueError(f"analysis kind {self.name!r} is backfilled but its cached kind has no metric rows")
        if _class_name(self.params) != declared.params:
            raise ValueError(f"analysis kind {self.name!r} runs with {_class_name(self.params)} but declares "
                             f"{declared.params}")
        if declared.result is not None and _class_name(self.result_type) != declared.result:
            raise ValueError(f"analysis kind {self.name!r} returns {_class_name(self.result_type)} but declares "
                             f"{declared.result}")
        if (self.dashboard_run is None) != (declared.dashboard_key is None):
            raise ValueError(f"analysis kind {self.name!r}: a dashboard key needs a dashboard run, and a run a key")

    @property
    def name(self) -> str:
        """The store's ``results.kind`` of its cached results and its cache keys' prefix."""
        return self.declaration.name

    @property
    def api(self) -> str:
        """The name of its public function in :mod:`magdash`."""
        return self.declaration.api

    @property
    def command(self) -> str:
        """Its command line, ``magdash <command>``."""
        return self.declaration.command

    @property
    def dashboard_key(self) -> str | None:
        """``module:qualname`` of the dashboard's key of its cached results; None: the app does not show it."""
        return self.declaration.dashboard_key

    @property
    def report_section(self) -> str | None:
        """The name of its section builder in :mod:`magdash.presentation.report.sections`."""
        return self.declaration.report_section

    @property
    def rows_kind(self) -> str:
        """The kind its metric rows are stored under: ``metric_kind``, else ``name``."""
        return self.metric_kind or self.name


class AnalysisKinds(Mapping[str, AnalysisKind]):
    """Analysis kinds by name, in the order they were registered; a name is registered once."""

    def __init__(self) -> None:
        self._kinds: dict[str, AnalysisKind] = {}

    def register(self, kind: AnalysisKind) -> AnalysisKind:
        """Add ``kind``; a name, public function or sweep task already registered is refused.

        Args:
            kind: the analysis kind.
        """
        if kind.name in self._kinds:
            raise ValueError(f"an analysis kind named {kind.name!r} is registered already: give the new one another name")
        for other in self._kinds.values():
            if other.api == kind.api:
                raise ValueError(f"analysis kinds {other.name!r} and {kind.name!r} both claim magdash.{kind.api}")
            if kind.task is not None and other.task is not None and other.task.name == kind.task.name:
                raise ValueError(f"analysis kinds {other.name!r} and {kind.name!r} both claim the sweep task "
                                 f"{kind.task.name!r}")
        self._kinds[kind.name] = kind
        return kind

    def __getitem__(self, name: str) -> AnalysisKind:
        return self._kinds[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._kinds)

    def __len__(self) -> int:
        return len(self._kinds)

    def tasks(self) -> list[AnalysisKind]:
        """The kinds a sweep can run, in registration order."""
        return [kind for kind in self._kinds.values() if kind.task is not None]

    def backfilled(self) -> dict[str, CachedKind]:
        """The cached kinds a backfill writes the metric rows of, by name."""
        return {name: kind.cached for name, kind in self._kinds.items() if kind.backfill}


ANALYSIS_KINDS = AnalysisKinds()
"""Every analysis kind by name; the order is the sweep's list of task kinds after ``extract``."""


def register_analysis_kind(kind: AnalysisKind) -> AnalysisKind:
    """Register ``kind`` in :data:`ANALYSIS_KINDS` (a name registered twice is refused).

    Args:
        kind: the analysis kind.
    """
    return ANALYSIS_KINDS.register(kind)


# -- the kinds, in the sweep's order of tasks ----------------------------------------------


def _describe_analysis(result: AnalysisResult) -> str:
    measure = result.params.measures[0]
    return f"mean core alpha ({measure}) {format_number(result.hypotheses[measure].mean_alpha, '+.3f')}"


def _describe_depth(result: DepthResult) -> str:
    return f"gamma_c {format_number(result.gamma_c, '.3f')}"


def _describe_controls(result: ControlsResult) -> str:
    flagged = sorted({v.control for measure in result.measures for v in result.verdicts(measure) if v.problem})
    return f"problems: {', '.join(flagged)}" if flagged else "no control flags a problem"


def _describe_probe(result: ProbeResult) -> str:
    target = result.params.targets[0]
    scores = result.score_table("magnitude", target, "real").dropna(subset=["r2"])
    if scores.empty:
        return "no layer probed (Inf/NaN vectors)"
    best = scores.loc[scores["r2"].idxmax()]  # pyright: ignore[reportCallIssue, reportArgumentType] - pandas-stubs: idxmax gives Hashable
    return f"best held-out-magnitude R² ({target}) {format_number(best['r2'], '.3f')} at layer {int(best['layer'])}"


def _controls_keys(store, model: str, stimuli: str, params: ControlsParams) -> list[str]:
    return [analysis_runs.analysis_key(store, model, stimuli, params.analysis),
            controls_runs.controls_key(store, model, stimuli, params)]


# Each kind's result for its dashboard key (:data:`DashboardRun`), read by the key's fields.


def _dashboard_analysis(key, store_for, resolve) -> AnalysisResult:
    return analysis_runs.analyze(store_for(key.store), key.model, key.stimuli, key.params)


def _dashboard_comparison(key, store_for, resolve) -> ComparisonResult:
    return analysis_runs.compare(store_for(key.store), key.model_a, key.model_b, key.stimuli, key.params)


def _dashboard_depth(key, store_for, resolve) -> DepthResult:
    return depth_runs.depth_from_store(store_for(key.store), key.model, key.stimuli, key.params)


def _dashboard_controls(key, store_for, resolve) -> ControlsResult:
    return controls_runs.run_controls(store_for(key.store), key.model, key.stimuli, key.params)


def _dashboard_probe(key, store_for, resolve) -> ProbeResult:
    """The probes of one model, from the store's cache or computed once (and written to its probe tables)."""
    return probe_runs.probe(store_for(key.store), key.model, key.stimuli, key.params)


def _dashboard_design(key, store_for, resolve) -> DesignResult:
    return design_runs.run_design(store_for(key.store), key.model, key.stimuli, key.params, key.analysis)


def _dashboard_behaviour(key, store_for, resolve) -> BehaviourResult:
    return behaviour_runs.behaviour(store_for(key.store), key.model, key.comparisons, key.params)


def _dashboard_steer(key, store_for, resolve) -> SteerResult:
    """A cached steering result, read by its cache key: the page never steers (a run loads the model and
    makes a pass per prompt, layer, direction and dose), it shows what ``md.steer`` cached."""
    found = lookup(store_for(key.store), steer_runs.STEER, key.result_key)
    if found is None:
        raise AnalysisError(f"the steering of {key.model!r} is no longer cached in this store: run it again, "
                            f"md.steer(store, {key.model!r})", parameters=("model",))
    return found


def _dashboard_e5(key, store_for, resolve) -> pd.DataFrame:
    """The E5 of an analysis, from the store's cache or computed once and written to its e5 table."""
    return frequency_runs.e5_from_analysis(store_for(key.analysis.store), resolve(key.analysis), resolve(key.source),
                                           key.measure, key.missing)


register_analysis_kind(AnalysisKind(
    KIND_DECLARATIONS["analysis"], AnalysisParams, ANALYSIS_VERSION, AnalysisResult, analysis_runs.analyze_vectors,
    analysis_runs.analyze, analysis_runs.ANALYSIS, backfill=True,
    task=SweepTask("analyze", lambda *cell: [analysis_runs.analysis_key(*cell)], _describe_analysis),
    dashboard_run=_dashboard_analysis,
))
register_analysis_kind(AnalysisKind(
    KIND_DECLARATIONS["compare"], AnalysisParams, ANALYSIS_VERSION, ComparisonResult, analysis_runs.compare_vectors,
    analysis_runs.compare, analysis_runs.COMPARISON, backfill=True, dashboard_run=_dashboard_comparison,
))
register_analysis_kind(AnalysisKind(
    KIND_DECLARATIONS["phase"], DepthParams, PHASE_VERSION, DepthResult, depth_runs.depth_vectors,
    depth_runs.depth_from_store, depth_runs.SAMPLES,
    task=SweepTask("depth", lambda *cell: [depth_runs.number_token_key(*cell)], _describe_depth),
    dashboard_run=_dashboard_depth, metric_kind="phase-diagnostics",
))
register_analysis_kind(AnalysisKind(
    KIND_DECLARATIONS["controls"], ControlsParams, CONTROLS_VERSION, ControlsResult, controls_runs.controls_vectors,
    controls_runs.run_controls, controls_runs.CONTROLS, backfill=True,
    task=SweepTask("controls", _controls_keys, _describe_controls), dashboard_run=_dashboard_controls,
))
register_analysis_kind(AnalysisKind(
    KIND_DECLARATIONS["probe"], ProbeParams, PROBE_VERSION, ProbeResult, probe_runs.probe_vectors, probe_runs.probe,
    probe_runs.PROBE, backfill=True,
    task=SweepTask("probe", lambda *cell: [probe_runs.probe_key(*cell)], _describe_probe),
    dashboard_run=_dashboard_probe,
))
register_analysis_kind(AnalysisKind(
    KIND_DECLARATIONS["design"], DesignParams, DESIGN_VERSION, DesignResult, design_runs.design_vectors,
    design_runs.run_design, design_runs.DESIGN, dashboard_run=_dashboard_design,
))
register_analysis_kind(AnalysisKind(
    KIND_DECLARATIONS["e5"], E5Params, E5_VERSION, pd.DataFrame, frequency_runs.e5_vectors,
    frequency_runs.e5_from_store, frequency_runs.E5, backfill=True, dashboard_run=_dashboard_e5,
))
register_analysis_kind(AnalysisKind(
    KIND_DECLARATIONS["behaviour"], BehaviourParams, BEHAVIOUR_VERSION, BehaviourResult,
    behaviour_runs.behaviour_of_trials, behaviour_runs.behaviour, behaviour_runs.BEHAVIOUR, backfill=True,
    task=SweepTask(behaviour_runs.SWEEP_TASK, lambda *cell: [], behaviour_runs.describe_behaviour,
                   done=behaviour_runs.sweep_done,
                   run_cell=behaviour_runs.sweep_run),
    dashboard_run=_dashboard_behaviour,
))
register_analysis_kind(AnalysisKind(
    KIND_DECLARATIONS["steer"], SteerParams, STEER_VERSION, SteerResult, steer_runs.steer_vectors, steer_runs.steer,
    steer_runs.STEER, backfill=True,
    task=SweepTask(steer_runs.SWEEP_TASK, lambda *cell: [], steer_runs.describe_steer, done=steer_runs.sweep_done,
                   run_cell=steer_runs.sweep_run),
    dashboard_run=_dashboard_steer,
))
