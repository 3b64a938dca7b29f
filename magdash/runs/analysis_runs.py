"""The scalar-variability analysis over a store: one model, two models compared, and the
analysis without the massive dimensions beside the raw one, each cached in the store.

An analysis reads the items' token facts from the store (:meth:`magdash.store.Store.number_tokens`,
recorded by the extraction) and the model's digit splitting, for the tokenization fits; vectors
stored without them are analysed without those fits, and the result says why.

:func:`analyze_vectors` reads a model's vectors (stored, or arrays: :mod:`magdash.store.vectors`)
one layer at a time into :func:`magdash.variability.analysis.run_analysis` (memory stays bounded
by a single layer) and, for stored vectors, keeps the :class:`~magdash.variability.analysis.AnalysisResult` under a key hashing the data
fingerprint of (model, stimuli), every parameter and
:data:`~magdash.variability.analysis.ANALYSIS_VERSION`. :func:`compare` analyses two models on the
same stimuli and compares their alphas layer by layer
(:func:`magdash.variability.compare.compare_models`).
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np

from magdash.errors import AnalysisError
from magdash.params import ProgressCallback
from magdash.runs import rows
from magdash.runs.cache import CachedKind, keep, lookup, result_key
from magdash.stimuli import default_stimulus_set, several_sets_message
from magdash.store.vectors import VectorSource, labelled_layers
from magdash.variability.analysis import ANALYSIS_VERSION, AnalysisResult, run_analysis
from magdash.variability.analysis_params import AnalysisParams
from magdash.variability.compare import ComparisonResult, compare_analyses, comparison_params
from magdash.variability.massive_control import MassiveControl

log = logging.getLogger(__name__)

ANALYSIS = CachedKind("analysis", AnalysisResult.to_payload, AnalysisResult.from_payload, rows.analysis_rows)
COMPARISON = CachedKind("compare", ComparisonResult.to_payload, ComparisonResult.from_payload, rows.comparison_rows)


def analysis_key(store, model: str, stimuli: str, params: AnalysisParams) -> str:
    """The cache key of an analysis: model, stimuli, their data fingerprint, every parameter, and
    whether the items' token facts are recorded (an analysis computed before they were is not
    the one with the tokenization fits).

    Args:
        store: the :class:`~magdash.store.Store` holding the model's vectors and caching the result.
        model: the model's name in the store.
        stimuli: the stimulus set's name.
        params: every choice of the analysis.
    """
    return result_key(
        "analysis", ANALYSIS_VERSION, model=model, stimuli=stimuli, data=store.data_fingerprint(model, stimuli),
        params=params, tokens=store.has_number_tokens(model, stimuli),
    )


def analyze(
    store,
    model: str,
    stimuli: str | None = None,
    params: AnalysisParams | None = None,
    *,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> AnalysisResult:
    """Analyse ``model`` on ``stimuli``, cached in the store (:func:`analyze_vectors` of :meth:`Store.vectors
    <magdash.store.Store.vectors>`).

    Args:
        store: the :class:`~magdash.store.Store` holding the model's vectors.
        model: the model's name in the store.
        stimuli: the stimulus set; None takes 'paper' when the model holds it, else its only complete set
            (:func:`magdash.stimuli.default_stimulus_set`).
        params: every choice of the analysis (:class:`~magdash.variability.analysis.AnalysisParams`).
        use_cache: False recomputes and replaces the cached result.
        progress: called as ``progress(done_layers, total_layers)`` after each layer is measured
            (only when something is computed).
    """
    return analyze_vectors(store.vectors(model, stimuli), params, use_cache=use_cache, progress=progress)


def analyze_vectors(
    source: VectorSource,
    params: AnalysisParams | None = None,
    *,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> AnalysisResult:
    """The analysis of one model's vectors, stored (cached in their store) or arrays (not cached).

    Args:
        source: the vectors (:class:`~magdash.store.vectors.VectorSource`).
        params: every choice of the analysis (:class:`~magdash.variability.analysis.AnalysisParams`).
        use_cache: a stored source only: False recomputes and replaces the cached result.
        progress: called as ``progress(done_layers, total_layers)`` after each layer is measured.
    """
    params = params or AnalysisParams()
    params.core_for(source.n_blocks, source.n_layers)  # fail on a bad band before reading
    store = source.store
    key = None
    if store is not None:
        with store.session():
            key = analysis_key(store, source.name, source.stimuli_name, params)
            found = lookup(store, ANALYSIS, key) if use_cache else None
            if found is not None:
                return found
            number_tokens, digit_splitting = source.number_tokens(), source.digit_splitting()
    else:
        number_tokens, digit_splitting = source.number_tokens(), source.digit_splitting()
    result = run_analysis(
        labelled_layers(source),
        np.asarray(source.magnitudes, dtype=np.float64),
        n_blocks=source.n_blocks,
        params=params,
        model=source.name,
        stimuli=source.stimuli_name,
        n_layers=source.n_layers,
        progress=progress,
        carriers=source.carriers,
        number_tokens=number_tokens,
        digit_splitting=digit_splitting,
    )
    if store is not None and key is not None:  # key is set whenever store is
        keep(store, ANALYSIS, key, result)
    return result


def resolve_common_stimuli(store, model_a: str, model_b: str, stimuli: str | None) -> str:
    """The stimulus set both models have completely: the one asked for, else the rule of
    :func:`magdash.stimuli.default_stimulus_set` over the sets they share ('paper' when both hold
    it, else the only shared one), the rule :meth:`Store.resolve_stimuli` applies to one model.

    Args:
        store: the store holding both models.
        model_a: the first model's name.
        model_b: the second model's name.
        stimuli: the stimulus set asked for, checked to be complete for both; None takes the default set.
    """
    if stimuli is not None:
        store.resolve_stimuli(model_a, stimuli)
        store.resolve_stimuli(model_b, stimuli)
        return stimuli
    shared = sorted(set(store.stimulus_sets_for(model_a)) & set(store.stimulus_sets_for(model_b)))
    if not shared:
        raise AnalysisError(
            f"models {model_a!r} and {model_b!r} share no complete stimulus set; extract the same "
            "stimuli for both"
        )
    chosen = default_stimulus_set(shared)
    if chosen is None:
        raise AnalysisError(several_sets_message(f"models {model_a!r} and {model_b!r} share", shared),
                            parameters=("stimuli",))
    return chosen


def compare(
    store,
    model_a: str,
    model_b: str,
    stimuli: str | None = None,
    params: AnalysisParams | None = None,
    *,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
    stimuli_b: str | None = None,
) -> ComparisonResult:
    """Layerwise alpha of ``model_a`` minus ``model_b`` for each measure in ``params``
    (:func:`compare_vectors` of the two stored models, once their stimulus sets are resolved).

    Args:
        store: the :class:`~magdash.store.Store` holding both models.
        model_a: the model whose alphas the differences start from (its core band is used).
        model_b: the model subtracted.
        stimuli: the stimulus set both hold; None takes 'paper' when both hold it, else the only one they share.
        params: the analysis parameters of both.
        use_cache: False recomputes the analyses and the comparison.
        progress: called as ``progress(done, total)`` after each measure's comparison (its joint
            bootstrap takes seconds), so a progress bar can count them.
        stimuli_b: model B's stimulus set when it is not ``stimuli``: the same magnitudes in another
            number format, e.g. ``compare(store, "smollm2", "smollm2", "paper", stimuli_b="paper-words")``
            (a format variant: model B may then be model A). None: B on ``stimuli``.
    """
    with store.session():
        if stimuli_b is None:
            stimuli = resolve_common_stimuli(store, model_a, model_b, stimuli)
        else:
            stimuli = store.resolve_stimuli(model_a, stimuli)
            store.resolve_stimuli(model_b, stimuli_b)
        if stimuli_b == stimuli:
            stimuli_b = None
        if model_a == model_b and stimuli_b is None:  # every difference would be 0, the Wilcoxon p nan
            raise AnalysisError(
                f"compare needs two different models, or one model on two stimulus sets; both are {model_a!r} on "
                f"{stimuli!r}"
            )
    return compare_vectors(store.vectors(model_a, stimuli), store.vectors(model_b, stimuli_b or stimuli), params,
                           use_cache=use_cache, progress=progress)


def compare_vectors(
    first: VectorSource,
    second: VectorSource,
    params: AnalysisParams | None = None,
    *,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> ComparisonResult:
    """Model A's vectors against model B's, both stored in one store (the comparison cached there) or both arrays.

    Both models are analysed with ``params`` (:func:`analyze_vectors`; a chosen core band applies to
    model A, and to model B only when both have the same depth), then compared with
    :func:`magdash.variability.compare.compare_models`: joint bootstrap over magnitudes, depth alignment
    by gamma = l / L, the stimulus bootstrap of the mean difference over model A's core layers (both
    models' vectors of those layers and their paired ones are read again, one layer at a time), and
    the Wilcoxon test over them. Stored B on another stimulus set than A is a number-format variant.

    Args:
        first: model A's vectors.
        second: model B's vectors.
        params: the analysis parameters of both.
        use_cache: stored sources only: False recomputes the analyses and the comparison.
        progress: called as ``progress(done, total)`` after each measure's comparison.
    """
    params = params or AnalysisParams()
    store = first.store
    if second.store is not store:
        raise AnalysisError("compare two stored models of one store, or two sets of arrays")
    key = stimuli_b = None
    if store is None:
        if first.name == second.name:
            raise AnalysisError(f"both arrays are named {first.name!r}: name them apart with Activations(..., name=...)")
        if tuple(first.magnitudes) != tuple(second.magnitudes) or tuple(first.carriers) != tuple(second.carriers):
            raise AnalysisError(
                "the two arrays hold different stimuli (magnitudes or carriers): compare models measured on the same "
                "ones"
            )
    else:
        stimuli_b = None if second.stimuli_name == first.stimuli_name else second.stimuli_name
        with store.session():
            key = result_key(
                "compare", ANALYSIS_VERSION, models=[first.name, second.name], stimuli=first.stimuli_name,
                stimuli_b=stimuli_b,
                data=[store.data_fingerprint(first.name, first.stimuli_name),
                      store.data_fingerprint(second.name, second.stimuli_name)],
                params=params,
            )
            found = lookup(store, COMPARISON, key) if use_cache else None
        if found is not None:
            return found
    result_a = analyze_vectors(first, params, use_cache=use_cache)
    result_b = analyze_vectors(second, comparison_params(params, first.n_blocks, second.n_blocks), use_cache=use_cache)
    result = compare_analyses(result_a, result_b, params, progress=progress, stimuli_b=stimuli_b,
                              read_a=first.layer, read_b=second.layer)
    if store is not None and key is not None:  # key is set whenever store is
        keep(store, COMPARISON, key, result)
    return result


def massive_control(
    store,
    model: str,
    stimuli: str | None = None,
    params: AnalysisParams | None = None,
    *,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> MassiveControl:
    """:func:`analyze` with the massive dimensions kept and dropped (both cached), set side by
    side (:class:`~magdash.variability.massive_control.MassiveControl`); ``params.massive`` is
    overridden, its ``massive_ratio`` is used. Arguments as :func:`analyze`'s.

    Args:
        store: the :class:`~magdash.store.Store` holding the model's vectors and caching the result.
        model: the model's name in the store.
        stimuli: the stimulus set; None takes the model's only complete one.
        params: the analysis parameters (``massive`` is set to keep, then drop; ``massive_ratio`` says which dimensions
            are massive).
        use_cache: False recomputes and replaces both cached analyses.
        progress: called as ``progress(done_layers, total_layers)`` while each analysis runs.
    """
    params = params or AnalysisParams()
    raw = analyze(store, model, stimuli, dataclasses.replace(params, massive="keep"), use_cache=use_cache,
                  progress=progress)
    dropped = analyze(store, model, raw.stimuli, dataclasses.replace(params, massive="drop"), use_cache=use_cache,
                      progress=progress)
    return MassiveControl(raw, dropped)

