"""Depth diagnostics (:mod:`magdash.depth_statistics`) of stored number-token vectors or of every token of
a prompt set, cached in the store.

Two sources of vectors per layer:

- number-token mode (:func:`depth_from_store`): the stored vectors of a stimulus set,
  (n_magnitudes x n_carriers) of them per layer, read one layer at a time;
- all-token mode (:func:`depth_from_texts`): every real token of a list of texts (carrier
  sentences, or a document cut by :func:`magdash.depth_statistics.texts.chunk_text`), streamed from the forward
  passes by :func:`magdash.extraction.capture_all_tokens` into one
  :class:`~magdash.depth_statistics.accumulate.LayerAccumulator` per layer, so no vector is kept.

Either way the per-layer :class:`~magdash.depth_statistics.accumulate.LayerSample` list (eigenvalues,
Omega values, counts, per-dimension statistics) is cached in the store as an npz payload,
keyed by the data's identity (stored-data fingerprint, or model fingerprint + dtype + texts
hash + max length), the vectors' view (``DepthParams.massive``; for ``drop`` also its
multiple) and :data:`~magdash.depth_statistics.accumulate.PHASE_VERSION`; fits and bootstrap are recomputed
from it, and their metric rows are written once per parameter set.

The ``drop`` and ``standardise`` views (:mod:`magdash.depth_statistics.massive_dims`) need the
per-dimension statistics of all of a layer's vectors before the first vector can be
transformed. Number tokens are all in memory, so that is one read; all-token mode keeps no
vectors, so it takes two passes over the texts: the raw one (cached as the ``keep`` view) gives
the statistics, the second streams the transformed vectors. This module imports neither torch
nor transformers at import time; all-token mode loads them through :mod:`magdash.extraction` only
when it has to run the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np

from magdash.depth_statistics.accumulate import (
    PHASE_VERSION,
    LayerAccumulator,
    LayerSample,
    number_token_sample,
    samples_from_bytes,
    samples_to_bytes,
    view_adjustments,
)
from magdash.depth_statistics.depth_params import DepthParams
from magdash.depth_statistics.diagnostics import DepthResult, analyze_samples
from magdash.depth_statistics.massive_dims import Adjustment
from magdash.depth_statistics.texts import chunk_text, texts_hash
from magdash.errors import AnalysisError, StoreError
from magdash.extract_params import TEXT_BATCH_SIZE
from magdash.names import control_name
from magdash.overflow import nonfinite_rows
from magdash.params import DEFAULT_DEVICE, DEFAULT_DTYPE, ProgressCallback
from magdash.runs import rows
from magdash.runs.cache import CachedKind, keep, lookup, result_key
from magdash.store.vectors import VectorSource, numbered_layers

SAMPLES = CachedKind("phase", lambda cached: samples_to_bytes(*cached), samples_from_bytes)
"""A layer sample list with the model's block count: ``(samples, n_blocks)``."""


def _view_key(params: DepthParams) -> dict:
    """The part of a sample's cache key that names its view of the vectors."""
    view: dict[str, str | float] = {"massive": params.massive}
    if params.massive == "drop":
        view["massive_ratio"] = params.massive_ratio
    return view


def number_token_key(store, name: str, stimuli: str, params: DepthParams | None = None) -> str:
    """The cache key of a stored model's number-token samples in the view ``params`` asks for.

    Args:
        store: the :class:`~magdash.store.Store` holding the model's vectors and caching the result.
        name: the model's name in the store.
        stimuli: the stimulus set's name.
        params: the depth parameters; only their view of the vectors (massive keep, drop or standardise, and the ratio)
            enters the key.
    """
    return result_key("phase-numbers", PHASE_VERSION, data=store.data_fingerprint(name, stimuli),
                      **_view_key(params or DepthParams()))


def number_token_samples(source: VectorSource, progress: ProgressCallback | None = None,
                         params: DepthParams | None = None) -> list[LayerSample]:
    """One sample per layer from the number-token vectors, reshaped to (n x c, d), each
    vector's magnitude and carrier kept as its units (the bootstrap resamples them, crossed).

    Args:
        source: the model's vectors (:class:`~magdash.store.vectors.VectorSource`).
        progress: called as ``progress(done, total)`` while the layers are read.
        params: the depth parameters (the view of the vectors: massive keep, drop or standardise).
    """
    params = params or DepthParams()
    samples = []
    for layer, vectors in numbered_layers(source):
        # number_token_sample counts and leaves out Inf/NaN vectors.
        samples.append(number_token_sample(vectors, layer, params.massive, params.massive_ratio))
        del vectors
        if progress:
            progress(len(samples), source.n_layers)
    return samples


def depth_from_store(
    store,
    name: str,
    stimuli: str | None = None,
    params: DepthParams | None = None,
    *,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> DepthResult:
    """Depth diagnostics of a stored model's number-token vectors (:func:`depth_vectors` of
    :meth:`Store.vectors <magdash.store.Store.vectors>`).

    Args:
        store: the :class:`~magdash.store.Store` holding the model.
        name: the model's name in the store.
        stimuli: the stimulus set; None takes the model's only complete one.
        params: the diagnostics' parameters (:class:`~magdash.depth_statistics.diagnostics.DepthParams`).
        use_cache: False recomputes the samples.
        progress: called as ``progress(done_layers, total_layers)`` while the samples are read.
    """
    return depth_vectors(store.vectors(name, stimuli), params, use_cache=use_cache, progress=progress)


def depth_vectors(
    source: VectorSource,
    params: DepthParams | None = None,
    *,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> DepthResult:
    """Depth diagnostics of a model's number-token vectors: their per-layer samples (cached in a stored
    source's store), then the fits and bootstrap of ``params`` (their metric rows written once).

    Args:
        source: the model's vectors.
        params: the diagnostics' parameters (:class:`~magdash.depth_statistics.diagnostics.DepthParams`).
        use_cache: a stored source only: False recomputes the samples.
        progress: called as ``progress(done_layers, total_layers)`` while the samples are read.
    """
    params = params or DepthParams()
    store = source.store
    if store is None:  # arrays: nothing is cached
        return analyze_samples(number_token_samples(source, progress, params), source.n_blocks, params,
                               model=source.name)
    key = number_token_key(store, source.name, source.stimuli_name, params)
    cached = lookup(store, SAMPLES, key) if use_cache else None
    if cached is None:
        samples = number_token_samples(source, progress, params)
        keep(store, SAMPLES, key, (samples, source.n_blocks))
    else:
        samples = cached[0]
    result = analyze_samples(samples, source.n_blocks, params, model=source.name)
    # The diagnostics are recomputed from the samples on every call; their rows are written once.
    rows_key = result_key("phase-diagnostics", PHASE_VERSION, samples=key, params=params)
    if not store.has_metric_rows(rows_key, "phase-diagnostics"):
        store.put_metric_rows(rows_key, "phase-diagnostics", rows.phase_rows(result, source.stimuli_name))
    return result


def stored_control(store, name: str, stimuli: str | None = None, params: DepthParams | None = None,
                   **options) -> DepthResult:
    """The same diagnostics for the stored ``@random`` control of ``name``.

    Args:
        store: the :class:`~magdash.store.Store` holding the model's vectors and caching the result.
        name: the trained model's name; its control is ``name@random``.
        stimuli: the stimulus set; None takes the control's only complete one.
        params: the depth parameters.
        options: passed on to :func:`depth_from_store` (``use_cache``, ``progress``).
    """
    control = control_name(name)
    if control not in store.model_names():
        raise StoreError(
            f"no stored control {control!r} for {name!r}: extract it first, e.g. "
            f"an extraction with model='{control}' on the same stimuli",
            parameters=("model",),
        )
    return depth_from_store(store, control, stimuli, params, **options)


def all_token_samples(
    loaded,
    texts: Sequence[str],
    *,
    batch_size: int = TEXT_BATCH_SIZE,
    max_length: int | None = None,
    progress: ProgressCallback | None = None,
    adjustments: dict[int, Adjustment] | None = None,
    keep_first_position: bool = False,
    unit: str = "prompt",
) -> list[LayerSample]:
    """Stream every real token of ``texts`` through the model into per-layer accumulators; a
    token at a sequence's first position (the attention sink) only with ``keep_first_position``
    (:func:`magdash.extraction.capture_all_tokens`), and the number left out is in each sample.
    Each token's text is kept as its unit (``unit``), so that the bootstrap resamples texts.

    With ``adjustments`` (layer -> :class:`~magdash.depth_statistics.massive_dims.Adjustment`, from a raw
    pass) each layer's vectors are transformed into that view before they are accumulated.

    Args:
        loaded: the loaded model (:class:`~magdash.sources.LoadedModel`).
        texts: the prompts, each run as one sequence.
        batch_size: prompts per forward pass.
        max_length: the longest sequence in tokens; None: the model's context.
        progress: called as ``progress(done, total)`` after each batch.
        adjustments: layer -> the transformation of a view (massive dimensions dropped or standardised), from a raw
            pass; None keeps the raw vectors.
        keep_first_position: also accumulate the token at each sequence's first position (the attention sink).
        unit: what a text is called as a unit of the bootstrap: ``chunk`` (of a document) or ``prompt``.
    """
    from magdash.extraction import capture_all_tokens

    accumulators: dict[int, LayerAccumulator] = {}
    bad_rows: dict[int, int] = {}
    batch_texts = np.zeros((0, 1), dtype=np.int64)

    def on_rows(text_of_row) -> None:
        nonlocal batch_texts
        batch_texts = np.asarray(text_of_row, dtype=np.int64)[:, None]

    def on_batch(layer: int, vectors) -> None:
        units = batch_texts
        if adjustments is not None:
            bad = nonfinite_rows(vectors)
            bad_rows[layer] = bad_rows.get(layer, 0) + int(bad.sum())
            vectors, units = adjustments[layer].apply(vectors[~bad]), units[~bad]
        if layer not in accumulators:
            accumulators[layer] = LayerAccumulator(vectors.shape[1], (unit,))
        accumulators[layer].add(vectors, units)

    seen, left_out = capture_all_tokens(loaded, texts, on_batch, batch_size=batch_size, max_length=max_length,
                                        progress=progress, keep_first_position=keep_first_position, on_rows=on_rows)
    if seen < 2:
        raise AnalysisError(f"the prompts gave {seen} token(s); the spectra need at least two")
    samples = [accumulators[layer].finish(layer) for layer in sorted(accumulators)]
    for sample in samples:
        sample.nonfinite += bad_rows.get(sample.layer, 0)
        sample.first_position = left_out
    return samples


def document_chunks(loaded, text: str, max_length: int | None = None) -> list[str]:
    """A document cut to the loaded model's context, counting tokens with its tokenizer.

    Args:
        loaded: the loaded model, whose tokenizer counts the tokens.
        text: the document.
        max_length: the longest chunk in tokens; None, or more than the model's context, gives the context.
    """
    limit = min(max_length or loaded.max_length, loaded.max_length)

    def count_tokens(pieces: Sequence[str]) -> list[int]:
        encoded = loaded.tokenizer(list(pieces), add_special_tokens=False)["input_ids"]
        return [len(ids) for ids in encoded]

    chunks = chunk_text(text, limit, count_tokens=count_tokens)
    if not chunks:
        raise AnalysisError("the prompt text is empty")
    return chunks


def depth_from_texts(
    model,
    texts: Sequence[str] | str,
    *,
    store=None,
    dtype: str = DEFAULT_DTYPE,
    device: str = DEFAULT_DEVICE,
    batch_size: int = TEXT_BATCH_SIZE,
    max_length: int | None = None,
    params: DepthParams | None = None,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
    keep_first_position: bool = False,
) -> DepthResult:
    """All-token diagnostics of a model (spec or LoadedModel) over prompts or one document.

    ``texts`` is a list of prompts used as they are (carrier sentences, say), or a single
    string: a document, cut to the model's context by :func:`document_chunks`. Each chunk
    starts with the model's BOS (prepended where its tokenizer adds none), and the token at a
    chunk's first position, the attention sink, is left out unless ``keep_first_position``
    (:attr:`DepthResult.first_position_left_out` counts them). With a store, the samples are
    looked up before any weights are loaded and stored afterwards; the ``drop``/``standardise``
    views reuse a cached raw pass when there is one.

    Args:
        model: a model spec (as for ``extract --model``) or a :class:`~magdash.sources.LoadedModel`.
        texts: a list of prompts used as they are, or one document (a string) cut into chunks.
        store: a :class:`~magdash.store.Store` caching the samples; None computes without caching.
        dtype: the dtype the model is loaded in (ignored for a loaded model).
        device: where it runs: auto, cpu, cuda, ... (ignored for a loaded model).
        batch_size: sequences per forward pass.
        max_length: the longest sequence in tokens; None: the model's context.
        params: the depth parameters (bootstrap, view of the vectors, ...).
        use_cache: False recomputes and replaces the cached samples.
        progress: called as ``progress(done, total)`` after each batch.
        keep_first_position: keep the token at each chunk's first position (the attention sink) in Omega and the
            spectra.
    """
    from magdash.environment import transformers_version
    from magdash.sources import resolve_model

    params = params or DepthParams()
    is_loaded = not isinstance(model, str)
    source = model.source if is_loaded else resolve_model(model)
    dtype = model.dtype if is_loaded else dtype
    document = isinstance(texts, str)
    identity = dict(
        fingerprint=source.fingerprint, dtype=dtype, transformers=transformers_version(),
        texts=texts_hash([texts] if document else texts), document=document, max_length=max_length,
        start=source.sequence_start, keep_first_position=keep_first_position,
    )
    raw_key = result_key("phase-tokens", PHASE_VERSION, **identity, massive="keep")
    key = result_key("phase-tokens", PHASE_VERSION, **identity, **_view_key(params))

    def cached(name: str):
        return lookup(store, SAMPLES, name) if store is not None and use_cache else None

    found = cached(key)
    if found is not None:
        samples, n_blocks = found
        return analyze_samples(samples, n_blocks, params, model=source.spec)
    loaded = model
    if not is_loaded:
        from magdash.sources import load_model

        loaded = load_model(source, dtype=dtype, device=device)
    prompts = document_chunks(loaded, texts, max_length) if document else list(texts)
    samples_of = partial(all_token_samples, batch_size=batch_size, max_length=max_length, progress=progress,
                         keep_first_position=keep_first_position, unit="chunk" if document else "prompt")
    raw = cached(raw_key)
    samples, n_blocks = raw if raw is not None else (samples_of(loaded, prompts), loaded.n_blocks)
    if store is not None and raw is None:
        keep(store, SAMPLES, raw_key, (samples, n_blocks))
    if params.massive != "keep":
        view = samples_of(loaded, prompts, adjustments=view_adjustments(samples, params.massive,
                                                                        params.massive_ratio))
        for adjusted, original in zip(view, samples, strict=True):
            adjusted.raw = original.raw
        samples = view
        if store is not None:
            keep(store, SAMPLES, key, (samples, n_blocks))
    return analyze_samples(samples, n_blocks, params, model=source.spec)
