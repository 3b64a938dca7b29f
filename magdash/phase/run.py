"""Phase diagnostics of stored number-token vectors or of every token of a prompt set, cached.

Two sources of vectors per layer:

- number-token mode (:func:`phase_from_store`): the stored vectors of a stimulus set,
  (n_magnitudes x n_carriers) of them per layer, read one layer at a time;
- all-token mode (:func:`phase_from_texts`): every real token of a list of texts (carrier
  sentences, or a document cut by :func:`magdash.phase.texts.chunk_text`), streamed from the forward
  passes by :func:`magdash.extract.capture_all_tokens` into one
  :class:`~magdash.phase.accumulate.LayerAccumulator` per layer, so no vector is kept.

Either way the per-layer :class:`~magdash.phase.accumulate.LayerSample` list (eigenvalues,
Omega values, counts) is cached in the store as an npz payload, keyed by the data's identity
(stored-data fingerprint, or model fingerprint + dtype + texts hash + max length) and
:data:`PHASE_VERSION`; fits and bootstrap are recomputed from it. This module imports
neither torch nor transformers at import time; all-token mode loads them through
:mod:`magdash.extract` only when it has to run the model.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from magdash.errors import AnalysisError, StoreError
from magdash.models import control_name
from magdash.params import ProgressCallback
from magdash.phase.accumulate import LayerAccumulator, LayerSample, samples_from_bytes, samples_to_bytes
from magdash.phase.diagnostics import PhaseParams, PhaseResult, analyze_samples
from magdash.phase.texts import chunk_text, texts_hash
from magdash.store.keys import result_key

log = logging.getLogger(__name__)

PHASE_VERSION = 2
"""Bump whenever a change to the phase code can change a cached sample: old entries die."""


def number_token_samples(store, name: str, stimuli: str, progress: ProgressCallback | None = None) -> list[LayerSample]:
    """One sample per stored layer from the number-token vectors, reshaped to (n x c, d)."""
    record = store.model_record(name)
    samples = []
    for data in store.read_layers(name, stimuli):
        accumulator = LayerAccumulator(record.hidden_size)  # counts and leaves out Inf/NaN vectors
        accumulator.add(data.vectors.reshape(-1, record.hidden_size))
        samples.append(accumulator.finish(data.layer))
        del data
        if progress:
            progress(len(samples), record.n_layers)
    return samples


def number_samples_key(store, name: str, stimuli: str) -> str:
    """The cache key of a stored model's number-token samples (the phase params are not in it)."""
    return result_key("phase-numbers", PHASE_VERSION, data=store.data_fingerprint(name, stimuli))


def phase_from_store(
    store,
    name: str,
    stimuli: str | None = None,
    params: PhaseParams | None = None,
    *,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> PhaseResult:
    """Phase diagnostics of a stored model's number-token vectors (stimulus-set default rule)."""
    stimuli = store.resolve_stimuli(name, stimuli)
    record = store.model_record(name)
    key = number_samples_key(store, name, stimuli)
    cached = _cached(store, key) if use_cache else None
    if cached is None:
        samples = number_token_samples(store, name, stimuli, progress)
        store.put_result(key, "phase", samples_to_bytes(samples, record.n_blocks))
    else:
        samples = cached[0]
    return analyze_samples(samples, record.n_blocks, params, model=name)


def stored_control(store, name: str, stimuli: str | None = None, params: PhaseParams | None = None,
                   **options) -> PhaseResult:
    """The same diagnostics for the stored ``@random`` control of ``name``."""
    control = control_name(name)
    if control not in store.model_names():
        raise StoreError(
            f"no stored control {control!r} for {name!r}: extract it first, e.g. "
            f"`python -m magdash extract --model {control}` with the same stimuli"
        )
    return phase_from_store(store, control, stimuli, params, **options)


def all_token_samples(
    loaded,
    texts: Sequence[str],
    *,
    batch_size: int = 16,
    max_length: int | None = None,
    progress: ProgressCallback | None = None,
) -> list[LayerSample]:
    """Stream every real token of ``texts`` through the model into per-layer accumulators."""
    from magdash.extract import capture_all_tokens

    accumulators: dict[int, LayerAccumulator] = {}

    def on_batch(layer: int, vectors) -> None:
        if layer not in accumulators:
            accumulators[layer] = LayerAccumulator(vectors.shape[1])
        accumulators[layer].add(vectors)

    seen = capture_all_tokens(loaded, texts, on_batch, batch_size=batch_size,
                              max_length=max_length, progress=progress)
    if seen < 2:
        raise AnalysisError(f"the prompts gave {seen} token(s); the spectra need at least two")
    return [accumulators[layer].finish(layer) for layer in sorted(accumulators)]


def document_chunks(loaded, text: str, max_length: int | None = None) -> list[str]:
    """A document cut to the loaded model's context, counting tokens with its tokenizer."""
    limit = min(max_length or loaded.max_length, loaded.max_length)

    def count_tokens(pieces: Sequence[str]) -> list[int]:
        encoded = loaded.tokenizer(list(pieces), add_special_tokens=False)["input_ids"]
        return [len(ids) for ids in encoded]

    chunks = chunk_text(text, limit, count_tokens=count_tokens)
    if not chunks:
        raise AnalysisError("the prompt text is empty")
    return chunks


def phase_from_texts(
    model,
    texts: Sequence[str] | str,
    *,
    store=None,
    dtype: str = "float32",
    device: str = "auto",
    batch_size: int = 16,
    max_length: int | None = None,
    params: PhaseParams | None = None,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> PhaseResult:
    """All-token diagnostics of a model (spec or LoadedModel) over prompts or one document.

    ``texts`` is a list of prompts used as they are (carrier sentences, say), or a single
    string: a document, cut to the model's context by :func:`document_chunks`. With a store,
    the samples are looked up before any weights are loaded and stored afterwards.
    """
    from magdash.models import resolve_model, transformers_version

    is_loaded = not isinstance(model, str)
    source = model.source if is_loaded else resolve_model(model)
    dtype = model.dtype if is_loaded else dtype
    document = isinstance(texts, str)
    key = result_key(
        "phase-tokens", PHASE_VERSION, fingerprint=source.fingerprint, dtype=dtype,
        transformers=transformers_version(), texts=texts_hash([texts] if document else texts),
        document=document, max_length=max_length,
    )
    cached = _cached(store, key) if store is not None and use_cache else None
    if cached is not None:
        samples, n_blocks = cached
    else:
        loaded = model
        if not is_loaded:
            from magdash.models import load_model

            loaded = load_model(source, dtype=dtype, device=device)
        prompts = document_chunks(loaded, texts, max_length) if document else list(texts)
        samples = all_token_samples(loaded, prompts, batch_size=batch_size,
                                    max_length=max_length, progress=progress)
        n_blocks = loaded.n_blocks
        if store is not None:
            store.put_result(key, "phase", samples_to_bytes(samples, n_blocks))
    return analyze_samples(samples, n_blocks, params, model=source.spec)


def _cached(store, key: str) -> tuple[list[LayerSample], int] | None:
    payload = store.get_result(key)
    if payload is None:
        return None
    log.info("phase samples found in the cache (%s)", key)
    return samples_from_bytes(payload)

