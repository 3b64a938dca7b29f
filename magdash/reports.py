"""Reports over a store: the results each section needs, computed or read from the cache (the runs
of :mod:`magdash.runs`), and the manifest's facts read from the store, assembled by
:mod:`magdash.presentation.report` into one HTML document. The CLI and the app build their reports
here, from the same section builders; it sits above both the runs and the presentation, which
never read the store themselves.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from magdash.controls_statistics.controls import ControlsResult
from magdash.controls_statistics.design import DesignResult
from magdash.depth_statistics.depth_params import DepthParams
from magdash.errors import AnalysisError, MagdashError
from magdash.kind_declarations import KIND_DECLARATIONS, KindDeclarations
from magdash.names import control_name
from magdash.presentation.report import ReportSection, StepCallback, build_manifest, build_report_html, sections
from magdash.probes.probe_params import ProbeParams
from magdash.probes.result import ProbeResult
from magdash.runs.analysis_runs import analyze, compare
from magdash.runs.cache import lookup
from magdash.runs.depth_runs import depth_from_store
from magdash.runs.frequency_runs import e5_from_analysis, load_source
from magdash.runs.probe_runs import cached_probe, stored_control
from magdash.variability.analysis import AnalysisResult
from magdash.variability.analysis_params import AnalysisParams
from magdash.variability.compare import ComparisonResult

REPORT_SOURCE = "openwebtext-500k"
"""The frequency source of a report's E5 section: the paper's own counts of 1..1000."""
TRAINED_SERIES = "trained"
CONTROL_SERIES = "random control"


def report_manifest(store, results: Mapping[str, Any], extra: Mapping[str, Any] | None = None,
                    kind: str = "analysis") -> dict:
    """The run manifest (:func:`magdash.presentation.report.build_manifest`) of ``results`` (analyses,
    or the results ``kind`` names), with the models' records, data fingerprints and stimulus sets read
    from ``store``."""
    with store.session():
        records = {name: store.model_record(name) for name in results}
        fingerprints = {name: store.data_fingerprint(name, result.stimuli) for name, result in results.items()}
        sets = {result.stimuli: store.stimulus_set(result.stimuli) for result in results.values()}
    return build_manifest(records, fingerprints, sets, results, store=str(store.path), extra=extra, kind=kind)


@dataclasses.dataclass(frozen=True)
class ReportContext:
    """What every builder of a focus model's report sections receives (:func:`model_sections`).

    Attributes:
        store: the store the result came from.
        result: the model's analysis.
        measure: the measure the page shows.
        layer: the layer of the single-layer figures.
        options: each kind's report option by kind name (``phase``: the depth parameters, ``e5``: the
            frequency source's name, ``probe``: the probes' parameters); a kind whose option is missing or
            None leaves its sections out.
    """

    store: Any
    result: AnalysisResult
    measure: str
    layer: int
    options: Mapping[str, Any]


def model_sections(
    store, result: AnalysisResult, measure: str, layer: int | None = None, *,
    depth: DepthParams | None = None, source: str | None = REPORT_SOURCE, probes: ProbeParams | None = None,
    options: Mapping[str, Any] | None = None,
) -> list[ReportSection]:
    """The sections of every page for one analysed model, from every analysis kind's builders in their
    places (:meth:`~magdash.kind_declarations.KindDeclarations.model_sections`): V against n and the
    geometry at ``layer`` (default: the middle of the core band), E5 against ``source``, the depth
    diagnostics with ``depth`` (the model and, when stored on the same stimuli, its ``@random`` control;
    raw and without the massive dimensions), alpha without the massive dimensions, and the probes
    with ``probes`` when they are cached (:func:`cached_probe_series`; a report never waits for them).

    Args:
        store: the store the result came from.
        result: the model's analysis.
        measure: the measure the page shows.
        layer: the layer of the single-layer figures.
        depth: the depth diagnostics' parameters; None leaves the depth section out.
        source: the frequency source of E5 (a name); None leaves E5 out.
        probes: the probes' parameters; None (or probes not cached) leaves the probes section out.
        options: the report options of other kinds, by kind name (:class:`ReportContext`).
    """
    if layer is None:
        core = result.core_layers or (result.n_layers // 2,)
        layer = (core[0] + core[-1]) // 2
    context = ReportContext(store, result, measure, layer,
                            {"phase": depth, "e5": source, "probe": probes, **(options or {})})
    return [section for builder in model_section_builders() for section in builder(context)]


def model_section_builders(declarations: KindDeclarations = KIND_DECLARATIONS) -> list[Callable[[ReportContext], list[ReportSection]]]:
    """The builders of a focus model's sections that ``declarations`` name, in their places."""
    builders = []
    for section in declarations.model_sections():
        module, _, name = section.builder.partition(":")
        builders.append(getattr(importlib.import_module(module), name))
    return builders


def focus_layer_sections(context: ReportContext) -> list[ReportSection]:
    """V against n and the geometry of the focus model at the context's layer."""
    result = context.result
    vectors = context.store.read_layer(result.model, result.stimuli, context.layer).vectors
    return sections.layer_sections(result, vectors, context.layer, context.measure)


def focus_e5_sections(context: ReportContext) -> list[ReportSection]:
    """E5 of the focus model against the frequency source its option names (none without one)."""
    source = context.options.get("e5")
    if source is None:
        return []
    store, result = context.store, context.result
    try:
        counts = load_source(source, store)
        return [sections.e5_section(result, e5_from_analysis(store, result, counts, context.measure), counts,
                                    context.measure, context.layer)]
    except MagdashError as error:
        return [ReportSection(f"Corpus frequency (E5): {result.model}", text=[f"Not computed: {error}"])]


def focus_depth_sections(context: ReportContext) -> list[ReportSection]:
    """The depth diagnostics of the focus model and, when stored on the same stimuli, its ``@random``
    control, raw and without the massive dimensions (none without depth parameters)."""
    depth = context.options.get("phase")
    if depth is None:
        return []
    store, result = context.store, context.result
    series = {TRAINED_SERIES: result.model}
    control = control_name(result.model)
    if control != result.model and result.stimuli in _complete_sets(store, control):
        series[CONTROL_SERIES] = control
    raw = {name: depth_from_store(store, model, result.stimuli, depth) for name, model in series.items()}
    dropped_params = dataclasses.replace(depth, massive="drop")
    dropped = {name: depth_from_store(store, model, result.stimuli, dropped_params) for name, model in series.items()}
    return [sections.depth_section(raw, dropped, context.layer, result.layer_labels[context.layer])]


def focus_massive_sections(context: ReportContext) -> list[ReportSection]:
    """Alpha of the focus model without the massive dimensions."""
    result = context.result
    dropped = analyze(context.store, result.model, result.stimuli, dataclasses.replace(result.params, massive="drop"))
    return [sections.massive_section(result, dropped, context.measure)]


def focus_probe_sections(context: ReportContext) -> list[ReportSection]:
    """The probes of the focus model with the probes' parameters, when cached (none otherwise)."""
    probes = context.options.get("probe")
    result = context.result
    if probes is None or not (series := cached_probe_series(context.store, result.model, result.stimuli, probes)):
        return []
    return [sections.probe_section(series, context.layer)]


def focus_behaviour_sections(context: ReportContext) -> list[ReportSection]:
    """The behaviour of the focus model on each comparison set where its fits with the report's
    parameters (``options["behaviour"]``) are cached, one section per task (none otherwise: a report
    never waits for the fits), with CV(n) over the core layers beside it."""
    params = context.options.get("behaviour")
    result = context.result
    if params is None:
        return []
    from magdash.presentation.behaviour_figures import core_cv_frame
    from magdash.runs.behaviour_runs import cached_behaviour, trial_sets_of

    found = []
    for comparisons in trial_sets_of(context.store, result.model):
        behaviour = cached_behaviour(context.store, result.model, comparisons, params)
        if behaviour is None:
            continue
        references = tuple(sorted({float(value) for value in behaviour.cells["reference"]}))
        representation = core_cv_frame(result, references)
        for task in dict.fromkeys(str(task) for task in behaviour.cells["task"]):
            found.append(sections.behaviour_section(behaviour, task, params.min_option_mass,
                                                    representation=representation))
    return found


def focus_steering_sections(context: ReportContext) -> list[ReportSection]:
    """The focus model's steering results cached on its stimuli, one section each (none otherwise: a
    report never steers), beside its RSA and, when cached with the report's probe parameters
    (``options["probe"]``), its probes' R²."""
    from magdash.runs.steer_runs import STEER

    store, result = context.store, context.result
    rows = store.metric_table("steering_layers")
    keys = rows.loc[(rows["model"] == result.model) & (rows["stimuli"] == result.stimuli), "result_key"]
    probes = context.options.get("probe")
    probe = cached_probe(store, result.model, result.stimuli, probes) if probes is not None else None
    found = []
    for key in dict.fromkeys(keys.astype(str)):
        steering = lookup(store, STEER, key)
        if steering is not None:
            found.append(sections.steering_section(steering, result, probe))
    return found


def cached_probe_series(store, model: str, stimuli: str, params: ProbeParams) -> dict[str, ProbeResult]:
    """The cached probes of ``model`` and, when also cached, of its ``@random`` control, by series
    (empty when the model's are not cached): nothing is computed."""
    found = cached_probe(store, model, stimuli, params)
    if found is None:
        return {}
    series = {TRAINED_SERIES: found}
    control = stored_control(store, model, stimuli)
    if control is not None and (probed := cached_probe(store, control, stimuli, params)) is not None:
        series[CONTROL_SERIES] = probed
    return series


def _complete_sets(store, name: str) -> list[str]:
    return store.stimulus_sets_for(name) if name in store.model_names() else []


def analysis_report(
    store,
    models: Sequence[str],
    stimuli: str | None = None,
    params: AnalysisParams | Mapping[str, AnalysisParams] | None = None,
    *,
    pairs: Sequence[tuple[str, str]] | None = None,
    focus: str | None = None,
    measure: str | None = None,
    layer: int | None = None,
    depth: DepthParams | None = None,
    source: str | None = None,
    probes: ProbeParams | None = None,
    comparisons: Sequence[ComparisonResult] | None = None,
    extra_sections: Sequence[ReportSection] = (),
    view: Mapping[str, str] | None = None,
    image_format: str = "svg",
    title: str = "magdash report",
    progress: StepCallback | None = None,
) -> str:
    """The HTML report of ``models`` in ``store`` (analyses cached in the store).

    Every section of :func:`magdash.presentation.report.sections.analysis_sections` (verdicts,
    scaling, Weber window, noise models, E3, E4, geometry, the comparisons); with ``focus`` (a
    model's name) the sections of every other page for it (:func:`model_sections`); then
    ``extra_sections`` (the controls and a design), and the run manifest.

    Args:
        store: the store holding the models.
        models: the models to analyse and report.
        stimuli: their stimulus set; None uses each model's only complete one.
        params: the analysis parameters, or each model's (a model of another depth keeps its own core band).
        pairs: the comparisons to make; default the first model against each other one (a pair
            without shared stimuli gets a note instead). Ignored when ``comparisons`` are given.
        focus: the model whose other pages' sections are added.
        measure: the measure of those sections (default: the analysis's first).
        layer: the layer of their single-layer figures.
        depth: the depth diagnostics' parameters for the focus model (None: no depth section).
        source: the frequency source of the focus model's E5 (None: no E5 section).
        probes: the probes' parameters for the focus model: its section when they are cached (None: none).
        comparisons: comparisons already made (the app's cached ones).
        extra_sections: more sections, before the manifest.
        view: the dashboard view's query string, kept in the manifest.
        image_format: ``svg`` or ``png``.
        title: the document's title.
        progress: called with the step under way.
    """
    if not models:
        raise AnalysisError("choose at least one model for the report")
    each = params if isinstance(params, Mapping) else dict.fromkeys(models, params or AnalysisParams())
    results = {}
    for name in dict.fromkeys(models):
        if progress is not None:
            progress(f"analysing {name}")
        results[name] = analyze(store, name, stimuli, each[name])
    notes = []
    if comparisons is None:
        if pairs is None:
            names = list(results)
            pairs = [(names[0], other) for other in names[1:]]
        comparisons = []
        for model_a, model_b in pairs:
            if progress is not None:
                progress(f"comparing {model_a} with {model_b}")
            try:
                comparisons.append(compare(store, model_a, model_b, stimuli, each[model_a]))
            except AnalysisError as error:
                notes.append(f"{model_a} vs {model_b} not compared: {error}")
    found = sections.analysis_sections(results, comparisons)
    if notes:
        found.append(ReportSection("Comparisons not made", text=notes))
    if focus is not None:
        focused = results[focus]
        found += model_sections(store, focused, measure or focused.params.measures[0], layer, depth=depth,
                                source=source, probes=probes)
    found.extend(extra_sections)
    manifest = report_manifest(store, results, extra={"dashboard_view": dict(view)} if view is not None else None)
    return build_report_html(found, manifest, title=title, image_format=image_format, progress=progress)


def controls_report(store, result: ControlsResult, measures: Sequence[str]) -> str:
    """The robustness controls of one model as an HTML report."""
    found = [sections.controls_section(result, measure) for measure in measures]
    manifest = report_manifest(store, {result.model: result.analysis},
                               extra={"controls_parameters": dataclasses.asdict(result.params)})
    return build_report_html(found, manifest, title=f"magdash controls: {result.model}")


def design_report(store, result: DesignResult, model: str, analysis: AnalysisResult) -> str:
    """A design simulation calibrated on ``model`` (its ``analysis``) as an HTML report."""
    manifest = report_manifest(store, {model: analysis}, extra={"design_parameters": dataclasses.asdict(result.params),
                                                                "calibration": dataclasses.asdict(result.calibration)})
    return build_report_html([sections.design_section(result)], manifest, title="magdash study design")


def probe_report(store, series: Mapping[str, ProbeResult], layer: int | None = None, target: str = "log") -> str:
    """The probes of one model (``series``: the model's result first, then its ``@random``
    control's when probed; :meth:`magdash.runs.probe_runs.ProbeRun.series`) as an HTML report, with
    the decoded-noise figures at ``layer`` (default: where the probe decodes unseen magnitudes best)."""
    trained = next(iter(series.values()))
    results = {result.model: result for result in series.values()}
    manifest = report_manifest(store, results, kind="probe")
    return build_report_html([sections.probe_section(series, layer, target)], manifest,
                             title=f"magdash probes: {trained.model}")


def behaviour_report(store, results: Sequence[Any]) -> str:
    """The behaviour of one or more models (:class:`~magdash.behaviour.behaviour_result.BehaviourResult`,
    the first the focus) as an HTML report: one section per model and task, with a manifest naming
    each model's comparison set, its trials and how they were run (:meth:`Store.trial_run
    <magdash.store.Store.trial_run>`: chat template, answer tokens, model identity; none for imported trials)."""
    runs = {result.model: {"comparisons": result.comparisons, "trials": result.n_trials,
                           "run": store.trial_run(result.model, result.comparisons) if result.comparisons else None,
                           "from_cache": bool(result.from_cache)}
            for result in results}
    parameters = {result.model: dataclasses.asdict(result.params) for result in results}
    manifest = build_manifest({}, {}, {}, {}, store=str(store.path), kind="behaviour",
                              extra={"behaviour_runs": runs, "behaviour_parameters": parameters})
    found = [sections.behaviour_section(result, task, result.params.min_option_mass)
             for result in results for task in dict.fromkeys(str(task) for task in result.cells["task"])]
    return build_report_html(found, manifest, title=f"magdash behaviour: {results[0].model}")
