"""The study-design simulator (:mod:`magdash.controls.design`) calibrated on a stored model, cached."""

from __future__ import annotations

from magdash.controls.controls_params import DesignParams, calibration_params, require_raw_vectors
from magdash.controls.design import DESIGN_VERSION, DesignResult, calibrate, simulate_design
from magdash.controls.simulate import Calibration
from magdash.params import ProgressCallback
from magdash.runs import rows
from magdash.runs.analysis_runs import analyze_vectors
from magdash.runs.cache import CachedKind, cached_result, result_key
from magdash.store.vectors import VectorSource, numbered_layers
from magdash.variability.analysis_params import AnalysisParams

# A design's payload does not name the model it was calibrated on: its rows are written by
# run_design, which knows it, and a backfill passes designs by.
DESIGN = CachedKind("design", DesignResult.to_payload, DesignResult.from_payload)


def calibrate_on(store, model: str, stimuli: str | None = None,
                 analysis_params: AnalysisParams | None = None) -> Calibration:
    """The noise of a stored model's core layers (:func:`calibration` of :meth:`Store.vectors
    <magdash.store.Store.vectors>`).

    Args:
        store: the :class:`~magdash.store.Store` holding the model's vectors and caching the result.
        model: the model whose noise the simulated studies take.
        stimuli: the stimulus set; None takes the model's only complete one.
        analysis_params: the analysis whose core band and conventions are used (its measures and bootstrap are set to
            V_eucl without bootstrap).
    """
    return calibration(store.vectors(model, stimuli), analysis_params)


def calibration(source: VectorSource, analysis_params: AnalysisParams | None = None) -> Calibration:
    """The noise of the core layers of a model's vectors, from the vectors and their analysis (cached
    for a stored source) of the calibration measure without bootstrap
    (:func:`~magdash.controls.controls_params.calibration_params`, :func:`magdash.controls.design.calibrate`).

    Args:
        source: the model's vectors.
        analysis_params: the analysis whose core band and conventions are used (its measures and bootstrap are set to
            V_eucl without bootstrap).
    """
    result = analyze_vectors(source, calibration_params(analysis_params))
    return calibrate(result, numbered_layers(source, list(result.core_layers)), len(source.carriers))


def design_key(store, model: str, stimuli: str, analysis_params: AnalysisParams, params: DesignParams) -> str:
    """The cache key of a design simulation calibrated on ``model``.

    Args:
        store: the :class:`~magdash.store.Store` holding the model's vectors and caching the result.
        model: the model the noise is calibrated on.
        stimuli: the stimulus set's name.
        analysis_params: the analysis the calibration uses.
        params: the simulated design.
    """
    return result_key(
        "design", DESIGN_VERSION, model=model, stimuli=stimuli,
        data=store.data_fingerprint(model, stimuli), analysis=analysis_params, params=params,
    )


def run_design(
    store,
    model: str,
    stimuli: str | None = None,
    params: DesignParams | None = None,
    analysis_params: AnalysisParams | None = None,
    *,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> DesignResult:
    """Calibrate on ``model`` and simulate the design; cached in the store.

    Args:
        store: the :class:`~magdash.store.Store` holding the model.
        model: the model whose noise calibrates the simulation.
        stimuli: its stimulus set; None takes the model's only complete one.
        params: the design (:class:`~magdash.controls.design.DesignParams`).
        analysis_params: the analysis the calibration reads (its massive view must be ``keep``).
        use_cache: False recomputes and replaces the cached design.
        progress: called as ``progress(done, total)`` over the simulation's grid points.
    """
    return design_vectors(store.vectors(model, stimuli), params, analysis_params, use_cache=use_cache,
                          progress=progress)


def design_vectors(
    source: VectorSource,
    params: DesignParams | None = None,
    analysis_params: AnalysisParams | None = None,
    *,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> DesignResult:
    """Calibrate on a model's vectors (:func:`calibration`) and simulate the design; cached in a stored
    source's store.

    Args:
        source: the vectors whose noise calibrates the simulation.
        params: the design (:class:`~magdash.controls.design.DesignParams`).
        analysis_params: the analysis the calibration reads (its massive view must be ``keep``).
        use_cache: a stored source only: False recomputes and replaces the cached design.
        progress: called as ``progress(done, total)`` over the simulation's grid points.
    """
    params = params or DesignParams()
    analysis_params = analysis_params or AnalysisParams()
    require_raw_vectors(analysis_params)

    def compute() -> DesignResult:
        return simulate_design(calibration(source, analysis_params), params, progress)

    store = source.store
    if store is None:
        return compute()
    model, stimuli = source.name, source.stimuli_name
    return cached_result(
        store, DESIGN, design_key(store, model, stimuli, analysis_params, params), compute, use_cache=use_cache,
        rows=lambda result: rows.design_rows(result, model, stimuli, analysis_params.conventions),
    )
