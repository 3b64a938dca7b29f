"""Extraction and every analysis, on a store or on arrays: the functions ``magdash`` exposes.

Each analysis takes its data first, in one of three forms:

- a :class:`~magdash.store.Store` and a model's name in it: the run over the store
  (:mod:`magdash.runs`), computed once and then read from the store's cache;
- an :class:`~magdash.store.Activations` (arrays with their magnitudes, carriers and layer
  labels, as the adapters of :mod:`magdash.api.adapters` make them);
- the array itself, (n_magnitudes, n_carriers, n_layers, d) in NumPy or torch, with
  ``magnitudes=`` and optionally ``carriers=``.

Arrays and a store take one path: either becomes a vector source (:meth:`Store.vectors
<magdash.store.Store.vectors>`, or an :class:`~magdash.store.Activations`, which holds what a store
would hold, in the same order: :mod:`magdash.store.vectors`) and the analysis kind's one function
over it runs (:mod:`magdash.runs.kinds`), so an array and the same array put into a store
(:meth:`~magdash.store.Store.put`) give the same numbers; arrays are not cached. Parameters come
as the analysis's params dataclass, and any of its fields can be given as a keyword
(``md.analyze(store, "minilm", n_boot=1000)``). A mistake raises a
:class:`~magdash.errors.MagdashError` saying what to fix.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
import pandas as pd

from magdash.behaviour.behaviour_params import BehaviourParams
from magdash.behaviour.behaviour_result import BehaviourResult
from magdash.comparison_stimuli import ComparisonSet
from magdash.controls_statistics.controls import ControlsResult
from magdash.controls_statistics.controls_params import ControlsParams, DesignParams
from magdash.controls_statistics.design import DesignResult
from magdash.depth_statistics.depth_params import DepthParams
from magdash.depth_statistics.diagnostics import DepthResult
from magdash.errors import AnalysisError
from magdash.extract_params import TEXT_BATCH_SIZE, ExtractParams
from magdash.frequency.e5_params import E5Params
from magdash.frequency.sources import FrequencySource
from magdash.params import DEFAULT_DEVICE, DEFAULT_DTYPE, ProgressCallback
from magdash.probes.probe_params import ProbeParams
from magdash.probes.result import ProbeResult
from magdash.steering.steer_params import SteerParams
from magdash.steering.steer_result import SteerResult
from magdash.stimuli import PAPER_SET_NAME, StimulusSet, paper_stimuli
from magdash.store import Activations, Store, VectorSource
from magdash.variability.analysis import AnalysisResult
from magdash.variability.analysis_params import AnalysisParams
from magdash.variability.compare import ComparisonResult

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_Params = TypeVar("_Params", bound="DataclassInstance")  # an analysis's parameters dataclass

ArrayLike = Any
"""A NumPy array or a torch tensor of shape (n_magnitudes, n_carriers, n_layers, d)."""


# -- extraction ----------------------------------------------------------------------------


def extract(
    model: str,
    stimuli: StimulusSet | str | None = None,
    *,
    store: Store,
    params: ExtractParams | None = None,
    name: str | None = None,
    progress: ProgressCallback | None = None,
    **options: Any,
):
    """Extract the number-token vectors of ``model`` on ``stimuli`` into ``store``.

    What is stored already is skipped before any weights are loaded, so a repeated call is a
    no-op (:func:`magdash.extraction.extract`).

    Args:
        model: a model spec: a built-in model (``minilm``), a folder, a Hugging Face cache name,
            a GGUF file, ``<spec>@random`` for its random-weight control (:mod:`magdash.sources`).
        stimuli: a :class:`~magdash.stimuli.StimulusSet`, or the name of one in the store;
            default the paper's 26 magnitudes x 5 carriers.
        store: where the vectors go.
        params: how the model is loaded and run (:class:`~magdash.extract_params.ExtractParams`).
        name: the model's name in the store (default the spec, with a non-default dtype and
            token position appended).
        progress: called as ``progress(done, total)`` sentences.
        options: fields of :class:`~magdash.extract_params.ExtractParams` replacing those of
            ``params`` (``dtype="bfloat16"``, ``device="cuda"``).

    Returns:
        The :class:`~magdash.extraction.ExtractionResult`: the stored name, the stimulus set, how
        many sentences were stored before and now.
    """
    from magdash.extraction import extract as extract_into

    if not isinstance(store, Store):
        raise AnalysisError(f"extract needs a store: store=magdash.Store(path), got {type(store).__name__}")
    if stimuli is None or stimuli == PAPER_SET_NAME:
        stimuli = paper_stimuli()
    elif isinstance(stimuli, str):
        stimuli = store.stimulus_set(stimuli)
    elif not isinstance(stimuli, StimulusSet):
        raise AnalysisError(
            f"stimuli must be a StimulusSet or a stored set's name, got {type(stimuli).__name__}: "
            "magdash.StimulusSet(name, carriers, magnitudes)"
        )
    params = _params(ExtractParams, params, options)
    return extract_into(model, stimuli, store, params, name=name, progress=progress)


# -- the analyses --------------------------------------------------------------------------


def analyze(
    data: Store | Activations | ArrayLike,
    model: str | None = None,
    stimuli: str | None = None,
    params: AnalysisParams | None = None,
    *,
    magnitudes: Sequence[int] | None = None,
    carriers: Sequence[str] | None = None,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
    **options: Any,
) -> AnalysisResult:
    """The scalar-variability analysis: V(n) per layer and measure, the scaling fits, H1–H4 over
    the core band, E3, E4, the noise models, CV and the centroid geometry (RSA, PC1).

    Args:
        data: a :class:`~magdash.store.Store` (with ``model``), an
            :class:`~magdash.store.Activations`, or an array (n_magnitudes, n_carriers, n_layers, d)
            with ``magnitudes``.
        model: the model's name in the store.
        stimuli: the store's stimulus set; default the model's only complete one.
        params: every choice of the analysis (:class:`~magdash.variability.analysis_params.AnalysisParams`).
        magnitudes: an array's magnitude of each row.
        carriers: an array's carrier of each column (sentences with ``{n}``, or labels).
        use_cache: a store only: False recomputes and replaces the cached result.
        progress: called as ``progress(done_layers, total_layers)``.
        options: fields of :class:`~magdash.variability.analysis_params.AnalysisParams`
            replacing those of ``params`` (``n_boot=1000``, ``measures=("eucl",)``).

    Returns:
        The :class:`~magdash.variability.analysis.AnalysisResult` (``.fits``: one row per measure and layer).
    """
    from magdash.runs.analysis_runs import analyze_vectors

    params = _params(AnalysisParams, params, options)
    source = _source(data, model, stimuli, magnitudes, carriers, "analyze")
    return analyze_vectors(source, params, use_cache=use_cache, progress=progress)


def compare(
    data: Store | Activations | ArrayLike,
    a: str | Activations | ArrayLike,
    b: str | None = None,
    stimuli: str | None = None,
    params: AnalysisParams | None = None,
    *,
    magnitudes: Sequence[int] | None = None,
    carriers: Sequence[str] | None = None,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
    stimuli_b: str | None = None,
    **options: Any,
) -> ComparisonResult:
    """Model A minus model B, layer by layer (E6): both analysed with ``params``, their alphas
    compared with a joint bootstrap over magnitudes and a Wilcoxon test over A's core band;
    layers paired by depth gamma = l / L.

    ``md.compare(store, "minilm", "minilm@random")`` compares two stored models;
    ``md.compare(activations_a, activations_b)`` two sets of arrays on the same stimuli;
    ``md.compare(store, "smollm2", "smollm2", "paper", stimuli_b="paper-words")`` one model on the
    paper's stimuli in digits and in words (a number-format variant).

    Args:
        data: a :class:`~magdash.store.Store` holding both models; or model A's arrays
            (:class:`~magdash.store.Activations` or an array with ``magnitudes``).
        a: with a store, model A's name; with arrays, model B's arrays.
        b: with a store, model B's name.
        stimuli: the store's stimulus set both hold; default the only one they share.
        params: the analysis parameters of both (:class:`~magdash.variability.analysis_params.AnalysisParams`).
        magnitudes: plain arrays' magnitudes (both must share them).
        carriers: plain arrays' carriers.
        use_cache: a store only: False recomputes the analyses and the comparison.
        progress: called as ``progress(done, total)`` after each measure.
        stimuli_b: a store only: model B's stimulus set when it is not ``stimuli`` (the same magnitudes in
            another number format).
        options: fields of :class:`~magdash.variability.analysis_params.AnalysisParams`.

    Returns:
        The :class:`~magdash.variability.compare.ComparisonResult` (``.table``: every layer of every measure).
    """
    params = _params(AnalysisParams, params, options)
    if isinstance(data, Store):
        from magdash.runs.analysis_runs import compare as compare_stored

        if not isinstance(a, str) or not isinstance(b, str):
            raise AnalysisError("with a store, name both models: magdash.compare(store, 'model-a', 'model-b')")
        return compare_stored(data, a, b, stimuli, params, use_cache=use_cache, progress=progress,
                              stimuli_b=stimuli_b)
    if b is not None or stimuli is not None or stimuli_b is not None:
        raise AnalysisError(
            "arrays are compared as magdash.compare(activations_a, activations_b): model names and stimuli "
            "belong to a store"
        )
    from magdash.runs.analysis_runs import compare_vectors

    first = _activations(data, None, None, magnitudes, carriers, "compare", default_name="model A")
    second = _activations(a, None, None, magnitudes, carriers, "compare", default_name="model B")
    return compare_vectors(_as_source(first), _as_source(second), params, progress=progress)


def controls(
    data: Store | Activations | ArrayLike,
    model: str | None = None,
    stimuli: str | None = None,
    params: ControlsParams | None = None,
    *,
    random: Activations | ArrayLike | None = None,
    variants: Mapping[str, Activations | ArrayLike] | Sequence[str] | None = None,
    magnitudes: Sequence[int] | None = None,
    carriers: Sequence[str] | None = None,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
    **options: Any,
) -> ControlsResult:
    """The robustness controls of a model's alphas, each with a one-line verdict: leave one
    carrier out, the carriers' ICC, the permutation null of the magnitude labels, variants
    (another dtype, weights file or token position) and the ``@random`` control.

    Args:
        data: a :class:`~magdash.store.Store` (with ``model``), an
            :class:`~magdash.store.Activations`, or an array with ``magnitudes``.
        model: the model's name in the store.
        stimuli: the store's stimulus set; default the model's only complete one.
        params: the controls' parameters (:class:`~magdash.controls_statistics.controls_params.ControlsParams`).
        random: arrays only: the random-weight control's arrays on the same stimuli (a store
            finds ``<model>@random`` itself).
        variants: with a store, the names of stored variants; with arrays, ``{name: arrays}``
            of the same model extracted another way.
        magnitudes: plain arrays' magnitudes.
        carriers: plain arrays' carriers (at least 3 for leave-one-carrier-out).
        use_cache: a store only: False recomputes everything.
        progress: called as ``progress(done_layers, total_layers)`` while the tables are computed.
        options: fields of :class:`~magdash.controls_statistics.controls_params.ControlsParams` (``n_perm=200``).

    Returns:
        The :class:`~magdash.controls_statistics.controls.ControlsResult` (``.verdict_table()``, ``.tables``).
    """
    params = _params(ControlsParams, params, options)
    if isinstance(data, Store):
        from magdash.runs.controls_runs import run_controls

        if random is not None:
            raise AnalysisError("a store finds the @random control itself: leave random= out, or extract it first")
        if variants is not None:
            if isinstance(variants, (Mapping, str)):
                raise AnalysisError("with a store, variants are the names of stored models: variants=['name', ...]")
            params = dataclasses.replace(params, variants=tuple(variants))
        return run_controls(data, _require_store(data, "controls", model), stimuli, params, use_cache=use_cache,
                            progress=progress)
    activations = _activations(data, model, stimuli, magnitudes, carriers, "controls")
    if params.variants:
        raise AnalysisError("params.variants names stored models; for arrays pass variants={'name': arrays}")
    if variants is not None and not isinstance(variants, Mapping):
        raise AnalysisError("for arrays, variants maps each variant's name to its arrays: variants={'fp16': arrays}")
    from magdash.names import control_name
    from magdash.runs.controls_runs import controls_vectors
    from magdash.store.vectors import renamed

    given = {name: _activations(value, None, None, magnitudes, carriers, "controls", default_name=name)
             for name, value in (variants or {}).items()}
    control = None if random is None else _activations(random, None, None, magnitudes, carriers, "controls",
                                                       default_name="random")
    return controls_vectors(
        _as_source(activations), params,
        random=None if control is None else renamed(_as_source(control), control_name(activations.name)),
        variants={name: renamed(_as_source(variant), name) for name, variant in given.items()},
        variant_kinds={name: f"arrays from {variant.source}" for name, variant in given.items()}, progress=progress,
    )


def design(
    data: Store | Activations | ArrayLike,
    model: str | None = None,
    stimuli: str | None = None,
    params: DesignParams | None = None,
    *,
    analysis_params: AnalysisParams | None = None,
    magnitudes: Sequence[int] | None = None,
    carriers: Sequence[str] | None = None,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
    **options: Any,
) -> DesignResult:
    """The study-design simulator calibrated on a model's noise: the power of H1 and E6 and the
    CI half-width of a design (magnitudes x carriers x layers), and the minimal alpha it detects.

    Args:
        data: a :class:`~magdash.store.Store` (with ``model``), an
            :class:`~magdash.store.Activations`, or an array with ``magnitudes``.
        model: the model whose noise calibrates the simulation.
        stimuli: the store's stimulus set; default the model's only complete one.
        params: the design (:class:`~magdash.controls_statistics.controls_params.DesignParams`).
        analysis_params: the analysis the calibration reads (its massive view must be ``keep``).
        magnitudes: plain arrays' magnitudes.
        carriers: plain arrays' carriers.
        use_cache: a store only: False recomputes and replaces the cached design.
        progress: called as ``progress(done, total)`` over the simulation's grid points.
        options: fields of :class:`~magdash.controls_statistics.controls_params.DesignParams` (``n_studies=200``).

    Returns:
        The :class:`~magdash.controls_statistics.design.DesignResult` (``.h1``, ``.e6``, ``.ci_width``, ``.summary()``).
    """
    from magdash.runs.design_runs import design_vectors

    params = _params(DesignParams, params, options)
    source = _source(data, model, stimuli, magnitudes, carriers, "design")
    return design_vectors(source, params, analysis_params, use_cache=use_cache, progress=progress)


def depth(
    data: Store | Activations | ArrayLike,
    model: str | None = None,
    stimuli: str | None = None,
    params: DepthParams | None = None,
    *,
    magnitudes: Sequence[int] | None = None,
    carriers: Sequence[str] | None = None,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
    **options: Any,
) -> DepthResult:
    """The depth diagnostics of the number-token vectors (Alpay & Kilictas, arXiv 2601.19942):
    Omega and the order parameter m(gamma) with its transition depth gamma_c, the covariance
    spectrum against Marchenko–Pastur, the effective rank.

    Args:
        data: a :class:`~magdash.store.Store` (with ``model``), an
            :class:`~magdash.store.Activations`, or an array with ``magnitudes``.
        model: the model's name in the store.
        stimuli: the store's stimulus set; default the model's only complete one.
        params: the diagnostics' parameters (:class:`~magdash.depth_statistics.depth_params.DepthParams`).
        magnitudes: plain arrays' magnitudes.
        carriers: plain arrays' carriers.
        use_cache: a store only: False recomputes the per-layer samples.
        progress: called as ``progress(done_layers, total_layers)``.
        options: fields of :class:`~magdash.depth_statistics.depth_params.DepthParams` (``massive="drop"``).

    Returns:
        The :class:`~magdash.depth_statistics.diagnostics.DepthResult` (``.table``: one row per layer).
    """
    from magdash.runs.depth_runs import depth_vectors

    params = _params(DepthParams, params, options)
    source = _source(data, model, stimuli, magnitudes, carriers, "depth")
    return depth_vectors(source, params, use_cache=use_cache, progress=progress)


def depth_of_texts(
    model: str,
    texts: Sequence[str] | str,
    *,
    store: Store | None = None,
    params: DepthParams | None = None,
    dtype: str = DEFAULT_DTYPE,
    device: str = DEFAULT_DEVICE,
    batch_size: int = TEXT_BATCH_SIZE,
    max_length: int | None = None,
    keep_first_position: bool = False,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
    **options: Any,
) -> DepthResult:
    """The depth diagnostics of every token of prompts or of one document, streamed through the
    model (no vector is kept).

    Args:
        model: a model spec (:mod:`magdash.sources`).
        texts: prompts used as they are, or one string: a document, cut to the model's context.
        store: where the per-layer samples are cached (optional).
        params: the diagnostics' parameters (:class:`~magdash.depth_statistics.depth_params.DepthParams`).
        dtype: the weights' dtype.
        device: auto, cpu, cuda, cuda:1, mps.
        batch_size: prompts per forward pass.
        max_length: tokens per prompt at most (default the model's context).
        keep_first_position: keep the token at each sequence's first position (the attention sink).
        use_cache: with a store: False recomputes the samples.
        progress: called as ``progress(done, total)`` prompts.
        options: fields of :class:`~magdash.depth_statistics.depth_params.DepthParams`.
    """
    from magdash.runs.depth_runs import depth_from_texts

    params = _params(DepthParams, params, options)
    return depth_from_texts(model, texts, store=store, dtype=dtype, device=device, batch_size=batch_size,
                            max_length=max_length, params=params, use_cache=use_cache, progress=progress,
                            keep_first_position=keep_first_position)


def e5(
    data: Store | Activations | ArrayLike,
    model: str | None = None,
    stimuli: str | None = None,
    params: E5Params | None = None,
    *,
    source: str | FrequencySource,
    magnitudes: Sequence[int] | None = None,
    carriers: Sequence[str] | None = None,
    use_cache: bool = True,
    **options: Any,
) -> pd.DataFrame:
    """E5 per layer: the partial Spearman rho of V(n) with log(count(n) + 1) in a corpus given log n, which
    tests the frequency account, and the raw rho, the paper's E5 (Cacioli, arXiv 2604.04469).

    Args:
        data: a :class:`~magdash.store.Store` (with ``model``), an
            :class:`~magdash.store.Activations`, or an array with ``magnitudes``.
        model: the model's name in the store.
        stimuli: the store's stimulus set; default the model's only complete one.
        source: a frequency source (:func:`frequency_source`) or its name: ``wordfreq``,
            ``openwebtext-500k``, or one stored in the store.
        params: E5's parameters (:class:`~magdash.frequency.e5_params.E5Params`: the layers, default the
            core band floor(L/2) .. L-1; the measure; the bootstrap; what a magnitude without a count is).
        magnitudes: plain arrays' magnitudes.
        carriers: plain arrays' carriers.
        use_cache: a store only: False recomputes and replaces the cached table.
        options: fields of :class:`~magdash.frequency.e5_params.E5Params` replacing those of ``params``
            (``n_boot=200``, ``layers=[16, 20]``, ``measure="residual"``).

    Returns:
        One row per layer: layer, label, the partial rho with its p and interval (``partial_*``), the raw
        rho with its p and interval (``raw_*``), n (:func:`magdash.frequency.e5_correlation`).
    """
    from magdash.runs.frequency_runs import e5_vectors

    params = _params(E5Params, params, options)
    vectors = _source(data, model, stimuli, magnitudes, carriers, "e5")
    return e5_vectors(vectors, source, params, use_cache=use_cache)


def probe(
    data: Store | Activations | ArrayLike,
    model: str | None = None,
    stimuli: str | None = None,
    params: ProbeParams | None = None,
    *,
    magnitudes: Sequence[int] | None = None,
    carriers: Sequence[str] | None = None,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
    **options: Any,
) -> ProbeResult:
    """Ridge probes of log n (and n) at every layer, scored on held-out carriers and held-out
    magnitudes against a control task, with the decoded magnitude's scalar variability
    (docs/science.md, "Probes").

    Args:
        data: a :class:`~magdash.store.Store` (with ``model``), an
            :class:`~magdash.store.Activations`, or an array with ``magnitudes``.
        model: the model's name in the store (its ``@random`` control is probed by calling this
            again with the control's name; :func:`magdash.probes.result.compare_probes` sets the two side by side).
        stimuli: the store's stimulus set; default the model's only complete one.
        params: the probes' choices (:class:`~magdash.probes.probe_params.ProbeParams`).
        magnitudes: plain arrays' magnitudes.
        carriers: plain arrays' carriers.
        use_cache: a store only: False recomputes and replaces the cached probes.
        progress: called as ``progress(done_layers, total_layers)``.
        options: fields of :class:`~magdash.probes.probe_params.ProbeParams` (``n_boot=1000``).

    Returns:
        The :class:`~magdash.probes.result.ProbeResult` (``.scores``, ``.selectivity``,
        ``.decoded``, ``.decoded_scaling``: tidy DataFrames).
    """
    from magdash.runs.probe_runs import probe_vectors

    params = _params(ProbeParams, params, options)
    source = _source(data, model, stimuli, magnitudes, carriers, "probe")
    return probe_vectors(source, params, use_cache=use_cache, progress=progress)


def behave(
    data: Store | pd.DataFrame,
    model: str | None = None,
    comparisons: ComparisonSet | str | None = None,
    params: BehaviourParams | None = None,
    *,
    trials_file: str | os.PathLike[str] | None = None,
    extract_params: ExtractParams | None = None,
    name: str | None = None,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
    **options: Any,
) -> BehaviourResult:
    """The model's own number comparisons ("Which is larger: A) 47 or B) 52?"), their psychometric
    functions and Weber fractions per reference, the Weber-law slope and the position bias
    (docs/behaviour.md; Cacioli 2026, arXiv 2603.20642, Paradigm B).

    Args:
        data: a :class:`~magdash.store.Store`, or a trials frame (the columns of
            :data:`magdash.behaviour.trial_frames.TRIAL_COLUMNS`: fitted, not cached).
        model: with a store, a model spec whose comparisons are run where not stored yet (nothing is loaded
            when all are), or the name of imported trials; with a frame, its name in the records.
        comparisons: a :class:`~magdash.comparison_stimuli.ComparisonSet` or a stored set's name; default the
            set the model has trials on when it has one, else the paper's design (:func:`paper_comparisons`).
        params: the fits' choices (:class:`~magdash.behaviour.behaviour_params.BehaviourParams`).
        trials_file: a published trial file (the paper's ``paradigm_b_raw.json`` fields) stored first as
            ``model``'s trials, then fitted.
        extract_params: how the model is loaded and run (:class:`~magdash.extract_params.ExtractParams`).
        name: the model's name in the store (default: the spec, with a non-default dtype appended).
        use_cache: a store only: False refits and replaces the cached fits (stored trials are kept).
        progress: called as ``progress(done, total)`` trials.
        options: fields of :class:`~magdash.behaviour.behaviour_params.BehaviourParams` (``conventions=("paper",)``).

    Returns:
        The :class:`~magdash.behaviour.behaviour_result.BehaviourResult` (``.fits``, ``.cells``,
        ``.weber_law``, ``.position_bias``: tidy DataFrames; ``.records()``: one per task, reference,
        variant and conventions).
    """
    from magdash.runs import behaviour_runs

    params = _params(BehaviourParams, params, options)
    if isinstance(data, pd.DataFrame):
        return behaviour_runs.behaviour_of_trials(data, params, model=model or "")
    if not isinstance(data, Store):
        raise AnalysisError(f"behave needs a store or a trials frame, got {type(data).__name__}",
                            parameters=("data",))
    model = _require_store(data, "behave", model)
    if trials_file is not None:
        behaviour_runs.import_trials(data, trials_file, model, comparisons if isinstance(comparisons, str) else None)
        set_name = behaviour_runs.only_trial_set(data, model, comparisons if isinstance(comparisons, str) else None)
        return behaviour_runs.behaviour(data, model, set_name, params, use_cache=use_cache)
    return behaviour_runs.behave(data, model, comparisons, params, extract_params=extract_params, name=name,
                                 use_cache=use_cache, progress=progress)


def steer(
    store: Store,
    model: str | None = None,
    stimuli: str | None = None,
    comparisons: str | None = None,
    params: SteerParams | None = None,
    *,
    extract_params: ExtractParams | None = None,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
    **options: Any,
) -> SteerResult:
    """Is the magnitude code used? Steer the model's comparison prompts along its magnitude direction,
    layer by layer, against random directions (Cacioli 2026, arXiv 2603.20642, Paradigm D).

    At each layer ``dose x span x u`` is added to the residual stream at one operand's number, u the
    layer's unit magnitude direction (the log-n probe's weight vector, or PC1 of the centroids) and span
    the range of the magnitudes' centroid projections on it; the same push goes along ``n_random`` random
    unit directions (and as many orthogonal to u). Per layer: the mean |delta p(correct)| along u and
    along the nulls, specificity = their ratio, the share of prompts whose |delta p| exceeds the random
    directions' 97.5th percentile (functional relevance when >= 75%), the signed shift toward the pushed
    operand, with bootstrap intervals over prompts (:mod:`magdash.steering`).

    Args:
        store: the :class:`~magdash.store.Store` holding the model's vectors and its comparison trials
            (run them first with :func:`behave`).
        model: the model's name in the store.
        stimuli: the stimulus set of the vectors giving the directions; default the model's only complete one.
        comparisons: the comparison set of the trials; default the model's only one.
        params: the steering's choices (:class:`~magdash.steering.steer_params.SteerParams`).
        extract_params: the device and batch size of the forward passes
            (:class:`~magdash.extract_params.ExtractParams`; the dtype is the trials' run's).
        use_cache: False recomputes and replaces the cached result.
        progress: called as ``progress(done, total)`` forward passes.
        options: fields of :class:`~magdash.steering.steer_params.SteerParams` (``layers=(0, 1, 2)``).

    Returns:
        The :class:`~magdash.steering.steer_result.SteerResult` (``.layers``: the per-layer summary;
        ``.doses``: the dose-response; ``.relevant_layers()``).
    """
    from magdash.runs.steer_runs import steer as steer_store

    params = _params(SteerParams, params, options)
    if not isinstance(store, Store):
        raise AnalysisError(f"steer needs a store holding the model's vectors and trials, got {type(store).__name__}",
                            parameters=("store",))
    model = _require_store(store, "steer", model)
    return steer_store(store, model, stimuli, comparisons, params, extract_params=extract_params,
                       use_cache=use_cache, progress=progress)


def frequency_source(name: str, store: Store | None = None) -> FrequencySource:
    """A frequency source for :func:`e5` and the frequency charts: built in, or stored.

    Args:
        name: ``wordfreq``, ``openwebtext-500k``, or the name of a source kept in ``store``.
        store: the store holding users' sources (``magdash freq``).
    """
    from magdash.runs.frequency_runs import load_source

    return load_source(name, store)


def frequency_sources(store: Store | None = None) -> pd.DataFrame:
    """The built-in frequency sources and those kept in ``store``: name, kind, n_numbers, total, note.

    Args:
        store: a store whose sources are listed too.
    """
    from magdash.runs.frequency_runs import list_sources

    return list_sources(store)


def layer_vectors(
    data: Store | Activations | ArrayLike,
    layer: int,
    model: str | None = None,
    stimuli: str | None = None,
    *,
    magnitudes: Sequence[int] | None = None,
    carriers: Sequence[str] | None = None,
) -> np.ndarray:
    """One layer's number-token vectors, (n_magnitudes, n_carriers, d) float32, magnitudes ascending.

    Args:
        data: a :class:`~magdash.store.Store` (with ``model``), an
            :class:`~magdash.store.Activations`, or an array with ``magnitudes``.
        layer: the layer, 0 (embeddings) .. n_layers - 1.
        model: the model's name in the store.
        stimuli: the store's stimulus set; default the model's only complete one.
        magnitudes: plain arrays' magnitudes.
        carriers: plain arrays' carriers.
    """
    if isinstance(data, Store):
        name = _require_store(data, "layer_vectors", model)
        record = data.model_record(name)
        if not isinstance(layer, (int, np.integer)) or not 0 <= layer < record.n_layers:
            raise AnalysisError(f"no layer {layer}: {name} has layers 0..{record.n_layers - 1}")
        return data.read_layer(name, data.resolve_stimuli(name, stimuli), int(layer)).vectors
    return _activations(data, model, stimuli, magnitudes, carriers, "layer_vectors").layer(layer)


def rdm(
    data: Store | Activations | ArrayLike,
    layer: int,
    model: str | None = None,
    stimuli: str | None = None,
    *,
    metric: str = "euclidean",
    magnitudes: Sequence[int] | None = None,
    carriers: Sequence[str] | None = None,
) -> pd.DataFrame:
    """The centroid RDM of one layer: the distance between the magnitudes' centroids (mean over
    carriers), as a square table indexed by magnitude (Cacioli, arXiv 2603.20642).

    Args:
        data: a :class:`~magdash.store.Store` (with ``model``), an
            :class:`~magdash.store.Activations`, or an array with ``magnitudes``.
        layer: the layer.
        model: the model's name in the store.
        stimuli: the store's stimulus set; default the model's only complete one.
        metric: ``euclidean`` or ``cosine``.
        magnitudes: plain arrays' magnitudes.
        carriers: plain arrays' carriers.
    """
    from magdash.variability.geometry import RDM_METRICS, centroid_rdm
    from magdash.variability.measures import centroids

    if metric not in RDM_METRICS:
        raise AnalysisError(f"metric must be one of {', '.join(RDM_METRICS)}, got {metric!r}")
    if isinstance(data, Store):
        name = _require_store(data, "rdm", model)
        set_name = data.resolve_stimuli(name, stimuli)
        labels = list(data.stimulus_set(set_name).magnitudes)
        vectors = layer_vectors(data, layer, name, set_name)
    else:
        activations = _activations(data, model, stimuli, magnitudes, carriers, "rdm")
        labels, vectors = list(activations.magnitudes), activations.layer(layer)
    index = pd.Index(labels, name="magnitude")
    return pd.DataFrame(centroid_rdm(centroids(vectors), metric), index=index, columns=index)


# -- arguments -----------------------------------------------------------------------------


def _params(kind: type[_Params], params: object, options: Mapping[str, Any]) -> _Params:
    """``params`` (default ``kind()``) with ``options`` replacing its fields; unknown fields refused."""
    base = kind() if params is None else params
    if not isinstance(base, kind):
        raise AnalysisError(f"params must be a {kind.__name__}, got {type(base).__name__}")
    fields = [field.name for field in dataclasses.fields(kind)]
    unknown = sorted(set(options) - set(fields))
    if unknown:
        raise AnalysisError(f"unknown option(s) {', '.join(unknown)}: {kind.__name__} has {', '.join(fields)}")
    return dataclasses.replace(base, **options) if options else base


def _require_store(store: Store, call: str, model: Any) -> str:
    """The stored model's name, which an analysis of a store needs."""
    if not isinstance(model, str):
        listed = ", ".join(store.model_names()) or "none yet"
        raise AnalysisError(f"name the stored model: magdash.{call}(store, 'minilm'); the store holds: {listed}")
    return model


def _source(data: Any, model: Any, stimuli: Any, magnitudes: Any, carriers: Any, call: str) -> VectorSource:
    """What an analysis reads: a stored model's vectors (:meth:`Store.vectors`), or arrays as
    :class:`~magdash.store.Activations`; both take the same run (:mod:`magdash.runs`)."""
    if isinstance(data, Store):
        return data.vectors(_require_store(data, call, model), stimuli)
    return _as_source(_activations(data, model, stimuli, magnitudes, carriers, call))


def _as_source(activations: Activations) -> VectorSource:
    """``activations`` as the :class:`VectorSource` they are once made."""
    # Activations' carriers and n_blocks are declared optional (the constructor's defaults) but its
    # __post_init__ always replaces them with a tuple and an int, so made Activations are a source.
    return cast(VectorSource, activations)


def _activations(
    data: Any, model: Any, stimuli: Any, magnitudes: Any, carriers: Any, call: str, *, default_name: str | None = None,
) -> Activations:
    """Arrays as :class:`~magdash.store.Activations`: given as such, or made from an array."""
    if isinstance(data, (str, os.PathLike)):
        raise AnalysisError(
            f"{call} got a path or a name ({str(data)!r}): open a store with magdash.Store(path) and pass it with the "
            "model's name, or pass the arrays"
        )
    if model is not None or stimuli is not None:
        raise AnalysisError(
            f"model and stimuli name what a store holds; arrays carry their own: magdash.{call}(arrays, "
            "magnitudes=...), or magdash.Activations(arrays, magnitudes, name=...)"
        )
    if isinstance(data, Activations):
        if magnitudes is not None or carriers is not None:
            raise AnalysisError("Activations carry their own magnitudes and carriers: leave magnitudes= and carriers= out")
        return data
    if magnitudes is None:
        raise AnalysisError(
            f"say which magnitude each row of the array is: magdash.{call}(per_carrier, magnitudes=[...]) "
            "(the paper's: magdash.paper_stimuli().magnitudes)"
        )
    return Activations(data, magnitudes, carriers=carriers, name=default_name or "activations")


__all__ = [
    "analyze", "compare", "depth", "depth_of_texts", "design", "e5", "extract", "frequency_source",
    "frequency_sources", "layer_vectors", "probe", "rdm", "controls",
]
