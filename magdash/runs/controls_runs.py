"""The robustness controls of a stored model (:mod:`magdash.controls_statistics.controls`), cached in the store.

Variants are other stored extractions of the same model on the same stimuli (another dtype,
weights file or token position) and the model itself on the same carriers and magnitudes in
another number format (:func:`format_variant_set`).

The carrier and permutation tables are cached under a key hashing the data fingerprint, the
parameters and :data:`~magdash.controls_statistics.controls.CONTROLS_VERSION`; the comparisons with the
variants and the ``@random`` control are cached as every comparison is
(:func:`magdash.runs.analysis_runs.compare`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from magdash.controls_statistics.controls import CONTROLS_VERSION, CarrierTables, ControlsResult, carrier_tables
from magdash.controls_statistics.controls_params import ControlsParams
from magdash.errors import AnalysisError
from magdash.names import control_name, is_control_name
from magdash.params import ProgressCallback
from magdash.runs import rows
from magdash.runs.analysis_runs import analyze_vectors, compare_vectors
from magdash.runs.cache import CachedKind, cached_result, result_key
from magdash.store import ModelRecord
from magdash.store.vectors import StoredVectors, VectorSource, layer_arrays, renamed

CONTROLS = CachedKind("controls", CarrierTables.to_payload, CarrierTables.from_payload, rows.controls_rows)


def variant_kind(model: ModelRecord, variant: ModelRecord) -> str:
    """What differs between two extractions: dtype, token position, weights file, or several.

    Args:
        model: the stored record of the model analysed.
        variant: the stored record of another extraction of it.
    """
    parts = []
    if model.dtype != variant.dtype:
        parts.append(f"dtype {model.dtype} vs {variant.dtype}")
    if model.position != variant.position:
        parts.append(f"token position {model.position} vs {variant.position}")
    if model.fingerprint != variant.fingerprint and not parts:
        parts.append("weights file")
    return "; ".join(parts) or "same extraction settings"


def is_variant(model: ModelRecord, other: ModelRecord) -> bool:
    """``other`` could be the same model extracted another way: same architecture and shape,
    not a random-weight control, another name.

    Args:
        model: the stored record of the model analysed.
        other: the stored record of another model in the store.
    """
    return (
        other.name != model.name
        and not other.is_random
        and not is_control_name(other.name)
        and other.architecture == model.architecture
        and other.n_blocks == model.n_blocks
        and other.hidden_size == model.hidden_size
    )


def format_variant_set(store, model: str, stimuli: str, number_format: str) -> str:
    """The stimulus set holding the carriers and magnitudes of ``stimuli`` written in
    ``number_format`` that ``model`` is completely stored on: a number-format variant of the model.

    Args:
        store: the :class:`~magdash.store.Store` holding the model's vectors.
        model: the model's name in the store.
        stimuli: the stimulus set the variant rewrites.
        number_format: the variant's number format (:data:`magdash.stimuli.NUMBER_FORMATS`).
    """
    own = store.number_formats()[store.resolve_stimuli(model, stimuli)]
    if number_format == own:
        raise AnalysisError(f"{stimuli!r} is itself written in {number_format}: compare it with another number format")
    other = store.in_number_format(stimuli, number_format)
    if other is None or other not in store.stimulus_sets_for(model):
        raise AnalysisError(
            f"{model!r} is not stored on the carriers and magnitudes of {stimuli!r} written in {number_format}: extract "
            f"them first (an extraction with model=<its spec> and number_format='{number_format}', with the carriers= "
            f"and magnitudes= of {stimuli!r} unless it is the paper's set; the Controls page extracts it in one click)",
            parameters=("model", "number_format", "carriers", "magnitudes"),
        )
    return other


def controls_key(store, model: str, stimuli: str, params: ControlsParams) -> str:
    """The cache key of the carrier and permutation tables.

    Args:
        store: the :class:`~magdash.store.Store` holding the model's vectors and caching the result.
        model: the model's name in the store.
        stimuli: the stimulus set's name.
        params: the controls' parameters (their analysis, permutations and seed enter the key).
    """
    return result_key(
        "controls", CONTROLS_VERSION, model=model, stimuli=stimuli, data=store.data_fingerprint(model, stimuli),
        analysis=params.analysis, n_perm=params.n_perm, seed=params.seed,
    )


def run_controls(
    store,
    model: str,
    stimuli: str | None = None,
    params: ControlsParams | None = None,
    *,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> ControlsResult:
    """Every control of ``model`` on ``stimuli`` (:mod:`magdash.controls_statistics.controls`), cached: the
    stored variants, number-format variants and ``@random`` control found, then :func:`controls_vectors`.

    Args:
        store: the :class:`~magdash.store.Store` holding the model, its variants and its control.
        model: the model's name in the store.
        stimuli: the stimulus set; None takes the model's only complete one.
        params: the controls' parameters (:class:`~magdash.controls_statistics.controls.ControlsParams`).
        use_cache: False recomputes the analysis, the tables and the comparisons.
        progress: called as ``progress(done_layers, total_layers)`` while the tables are computed.

    A number-format variant (``params.formats``) is the model on the same carriers and magnitudes
    written in another format, compared as the other variants are (joint bootstrap of delta alpha
    over the shared magnitudes); it is named ``"<model> on <its stimulus set>"`` among the variants.
    """
    params = params or ControlsParams()
    source: StoredVectors = store.vectors(model, stimuli)
    stimuli = source.stimuli_name
    for name in params.variants:
        if name == model:
            raise AnalysisError(f"the variant {name!r} is the model itself; name another stored extraction")
        store.resolve_stimuli(name, stimuli)  # a variant must be stored on the same stimuli
    format_sets = {number_format: format_variant_set(store, model, stimuli, number_format)
                   for number_format in params.formats}
    variants = {name: store.vectors(name, stimuli) for name in params.variants}
    kinds = {name: variant_kind(source.record, variant.record) for name, variant in variants.items()}
    own_format = store.number_formats()[stimuli] if format_sets else None
    for number_format, other in format_sets.items():
        label = f"{model} on {other}"  # as the comparison names its model B (ComparisonResult.label_b)
        variants[label] = store.vectors(model, other)
        kinds[label] = f"number format {own_format} vs {number_format}"
    random_name = control_name(model)
    random = None
    if (
        params.random_control
        and random_name != model
        and random_name in store.model_names()
        and stimuli in store.stimulus_sets_for(random_name)
    ):
        random = store.vectors(random_name, stimuli)
    return controls_vectors(source, params, random=random, variants=variants, variant_kinds=kinds,
                            use_cache=use_cache, progress=progress)


def controls_vectors(
    source: VectorSource,
    params: ControlsParams | None = None,
    *,
    random: VectorSource | None = None,
    variants: Mapping[str, VectorSource] | None = None,
    variant_kinds: Mapping[str, str] | None = None,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> ControlsResult:
    """Every control of one model's vectors, stored (cached in their store) or arrays.

    Args:
        source: the model's vectors.
        params: the controls' parameters (their ``variants`` and ``formats`` are the store's to find:
            :func:`run_controls`).
        random: the ``@random`` control's vectors on the same stimuli, compared under
            ``<model>@random`` when ``params.random_control``; None: no such control.
        variants: the model extracted other ways, by the name its comparison goes under.
        variant_kinds: what differs in each variant (dtype, token position, ...), by name.
        use_cache: stored sources only: False recomputes the analysis, the tables and the comparisons.
        progress: called as ``progress(done_layers, total_layers)`` while the tables are computed.
    """
    params = params or ControlsParams()
    variants = dict(variants or {})
    store = source.store
    analysis = analyze_vectors(source, params.analysis, use_cache=use_cache)
    computed = []

    def compute() -> CarrierTables:
        computed.append(True)
        return carrier_tables(layer_arrays(source), analysis, list(source.carriers), n_perm=params.n_perm, seed=params.seed,
                              progress=progress)

    def named(tables: CarrierTables):
        # Tables cached before the metric tables (schema 4) did not name their model.
        if tables.model is None:
            tables = dataclasses.replace(tables, model=source.name, stimuli=source.stimuli_name,
                                         conventions=params.analysis.conventions)
        return rows.controls_rows(tables)

    if store is None:
        tables = compute()
    else:
        tables = cached_result(store, CONTROLS, controls_key(store, source.name, source.stimuli_name, params),
                               compute, use_cache=use_cache, rows=named)
    compared = {name: compare_vectors(source, variant, params.analysis, use_cache=use_cache)
                for name, variant in variants.items()}
    random_name = control_name(source.name)
    compared_random = None
    if random is not None and params.random_control:
        compared_random = compare_vectors(source, renamed(random, random_name), params.analysis, use_cache=use_cache)
    return ControlsResult(
        model=source.name,
        stimuli=source.stimuli_name,
        core_layers=list(analysis.core_layers),
        params=params,
        analysis=analysis,
        tables=tables,
        variants=compared,
        variant_kinds=dict(variant_kinds or {}),
        random=compared_random,
        random_name=random_name,
        from_cache=store is not None and not computed,
    )
