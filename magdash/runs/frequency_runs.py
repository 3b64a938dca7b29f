"""Frequency sources kept in a store, and E5 (:mod:`magdash.frequency.e5`) of stored models, cached.

Stored sources are users' corpus counts and CSV imports (built-in ones need no store). E5 is
computed from a stored model's vectors (:func:`e5_from_store`, the CLI's and the API's) or from a
cached analysis's V at every layer (:func:`e5_from_analysis`, the Frequency page's and the
report's); either table is cached under a key holding the source's counts and written to the
store's ``e5`` table.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from magdash.errors import StoreError
from magdash.frequency.corpus import FrequencyError
from magdash.frequency.e5 import E5_COLUMNS, E5_VERSION, e5_correlation
from magdash.frequency.e5_params import DEFAULT_MISSING, E5Params, e5_params
from magdash.frequency.sources import (
    BUILTIN_SOURCES,
    FrequencySource,
    builtin_source,
    check_source_name,
    listing_row,
)
from magdash.jsonio import frame_from_plain
from magdash.overflow import count_nonfinite
from magdash.result_codec import PayloadCodec, stored_as
from magdash.runs import rows
from magdash.runs.analysis_runs import analysis_key
from magdash.runs.cache import CachedKind, cached_result, result_key
from magdash.store.vectors import VectorSource
from magdash.variability.analysis import AnalysisResult
from magdash.variability.analysis_params import default_core_layers
from magdash.variability.measures import compute_measure

E5_IDENTITY = ("model", "stimuli", "source", "measure", "n_boot", "seed")
_FLOAT_COLUMNS = tuple(column for column in E5_COLUMNS if column not in ("layer", "n"))


def save_source(store, source: FrequencySource, *, replace: bool = False) -> None:
    """Store a source. Built-in names are refused, and so is a name already stored unless ``replace``.

    Args:
        store: the :class:`~magdash.store.Store` to keep it in.
        source: the counts and their provenance, under a name that is not a built-in one.
        replace: replace the source stored under the same name.
    """
    name = check_source_name(source.name)
    store.put_frequency_source(name, source.counts, source.provenance, replace=replace)


def load_source(name: str, store=None) -> FrequencySource:
    """A built-in source, or one from the store.

    Names are stripped as :func:`~magdash.frequency.sources.check_source_name` strips them when a
    source is saved, so " mine " finds the source saved as "mine".

    Args:
        name: a built-in source's name or a stored one's.
        store: the store to look in for a name that is not built in; None: built-in sources only.
    """
    name = name.strip() if isinstance(name, str) else name
    if name in BUILTIN_SOURCES:
        return builtin_source(name)
    if store is None:
        raise FrequencyError(f"{name!r} is not a built-in source ({', '.join(BUILTIN_SOURCES)}) and no store is open")
    try:
        counts, provenance = store.get_frequency_source(name)
    except StoreError:
        stored = list(store.list_frequency_sources()["name"])
        known = ", ".join(list(BUILTIN_SOURCES) + stored)
        raise FrequencyError(f"no frequency source named {name!r}; available: {known}") from None
    table = pd.DataFrame({
        "number": counts["number"].to_numpy(dtype=np.int64), "count": counts["count"].to_numpy(dtype=np.int64),
    })
    return FrequencySource(name, table, provenance)


def list_sources(store=None) -> pd.DataFrame:
    """Built-in and stored sources: name, kind, n_numbers, total, note, provenance (a dict).

    Args:
        store: the store whose sources are listed after the built-in ones; None: built-in sources only.
    """
    listed = []
    for name in BUILTIN_SOURCES:
        source = builtin_source(name)
        listed.append(listing_row(name, len(source.counts), source.total, source.provenance))
    if store is not None:
        for row in store.list_frequency_sources().itertuples():
            provenance = json.loads(row.provenance) if isinstance(row.provenance, str) else dict(row.provenance or {})
            listed.append(listing_row(row.name, int(row.n_numbers), int(row.total), provenance))
    return pd.DataFrame(listed, columns=["name", "kind", "n_numbers", "total", "note", "provenance"])


@dataclass(frozen=True)
class E5Table(PayloadCodec):
    """A cached E5 table (``layer``, ``label`` and :data:`~magdash.frequency.e5.E5_COLUMNS`) with
    whose it is: model, stimuli, source, measure, n_boot, seed.

    Attributes:
        table: one row per layer: ``layer``, ``label`` and the E5 columns (the partial rho given log n
            with its p and CI, then the raw rho with its p and CI).
        identity: model, stimuli, source, measure, n_boot and seed of the table.
    """

    # The payload holds the identity's items, then the table's columns and data, side by side.
    table: pd.DataFrame = field(metadata=stored_as(frame="untyped", inline=("columns", "data"),
                                                   decode=lambda plain: _e5_frame(frame_from_plain(plain))))
    identity: dict = field(metadata=stored_as(inline=E5_IDENTITY))

    _payload_order = ("identity", "table")


def _e5_frame(table: pd.DataFrame) -> pd.DataFrame:
    """An E5 table read back, its float columns float64 as computed (a KeyError for a payload of an earlier
    :data:`~magdash.frequency.e5.E5_VERSION`, whose columns differ)."""
    for column in _FLOAT_COLUMNS:
        table[column] = table[column].astype(np.float64)
    return table


E5 = CachedKind("e5", E5Table.to_payload, E5Table.from_payload, lambda cached: rows.e5_rows(cached.table, cached.identity))


def counts_hash(source: FrequencySource) -> str:
    """A digest of a source's counts: part of an E5's key, so new counts give a new table.

    Args:
        source: the frequency source.
    """
    counts = source.counts
    digest = hashlib.sha256(counts["number"].to_numpy(dtype=np.int64).tobytes())
    digest.update(counts["count"].to_numpy(dtype=np.int64).tobytes())
    return digest.hexdigest()


def e5_from_store(
    store,
    model: str,
    source: str | FrequencySource,
    params: E5Params | None = None,
    *,
    stimuli: str | None = None,
    use_cache: bool = True,
    **options: Any,
) -> pd.DataFrame:
    """E5 for a stored model (:func:`e5_vectors` of :meth:`Store.vectors <magdash.store.Store.vectors>`),
    cached and written to the store's ``e5`` table.

    Args:
        store: the :class:`~magdash.store.Store` holding the model.
        model: the model's name in the store.
        source: a frequency source, or its name (built-in or stored).
        params: E5's parameters (layers, default the core band floor(L/2) .. L-1; measure;
            bootstrap; what a magnitude without a count is); None: the defaults.
        stimuli: the stimulus set; None takes the model's only complete one.
        use_cache: False recomputes and replaces the cached table.
        options: fields of :class:`~magdash.frequency.e5_params.E5Params` replacing those of ``params``
            (``n_boot=200``, ``layers=[9]``).

    Returns:
        :func:`~magdash.frequency.e5.e5_correlation`'s table with a ``label`` column (the
        layer's name) after ``layer``.
    """
    return e5_vectors(store.vectors(model, stimuli), source, e5_params(params, options), use_cache=use_cache)


def e5_vectors(
    vectors: VectorSource,
    source: str | FrequencySource,
    params: E5Params | None = None,
    *,
    use_cache: bool = True,
) -> pd.DataFrame:
    """E5 of a model's vectors: V (default V_eucl, :mod:`magdash.variability.measures`) per layer against a
    source's counts; for a stored source cached and written to its store's ``e5`` table.

    Args:
        vectors: the model's vectors (:class:`~magdash.store.vectors.VectorSource`).
        source: a frequency source, or its name (built-in, or stored in the vectors' store).
        params: E5's parameters (layers, default the core band floor(L/2) .. L-1; measure;
            bootstrap; what a magnitude without a count is); None: the defaults.
        use_cache: a stored source only: False recomputes and replaces the cached table.

    Returns:
        :func:`~magdash.frequency.e5.e5_correlation`'s table with a ``label`` column (the
        layer's name) after ``layer``.
    """
    params = params or E5Params()
    measure, n_boot, seed, missing = params.measure, params.n_boot, params.seed, params.missing
    store, model, stimuli = vectors.store, vectors.name, vectors.stimuli_name
    layers = list(params.layers) if params.layers is not None else default_core_layers(vectors.n_blocks)
    if not layers:
        raise FrequencyError("choose at least one layer")
    outside = [layer for layer in layers if not 0 <= layer < vectors.n_layers]
    if outside:
        raise FrequencyError(f"layers {outside} do not exist; {model!r} has layers 0..{vectors.n_layers - 1}")
    frequency = load_source(source, store) if isinstance(source, str) else source

    def compute() -> E5Table:
        values, labels = {}, {}
        for layer, label, data in vectors.layers(layers):
            # A layer holding Inf/NaN vectors (magdash.overflow) gets no correlation: NaN V.
            values[layer] = np.full(data.shape[0], np.nan) if count_nonfinite(data) else compute_measure(measure, data)
            labels[layer] = label
            del data
        table = e5_correlation(np.asarray(vectors.magnitudes, dtype=np.float64), values, frequency, n_boot=n_boot,
                               seed=seed, missing=missing)
        table.insert(1, "label", [labels[layer] for layer in table["layer"]])
        return E5Table(table, dict(model=model, stimuli=stimuli, source=frequency.name, measure=measure,
                                   n_boot=n_boot, seed=seed))

    if store is None:
        return compute().table
    key = result_key(
        "e5", E5_VERSION, model=model, stimuli=stimuli, data=store.data_fingerprint(model, stimuli),
        source=frequency.name, counts=counts_hash(frequency), layers=layers, measure=measure, n_boot=n_boot,
        seed=seed, missing=missing,
    )
    return cached_result(store, E5, key, compute, use_cache=use_cache).table


def e5_from_analysis(
    store, result: AnalysisResult, source: FrequencySource, measure: str, missing: str = DEFAULT_MISSING, *,
    use_cache: bool = True,
) -> pd.DataFrame:
    """E5 at every layer from a cached analysis's V (the dashboard's E5), cached and written to the
    store's ``e5`` table like :func:`e5_from_store`'s.

    The analysis's V carries its choices (massive dimensions kept or dropped, measures), and its
    bootstrap resamples and seed are the E5's. The cache key is the analysis's key with the
    source's counts, ``measure`` and ``missing``, so the same E5 is computed once per store.

    Args:
        store: the store the analysis came from.
        result: the model's :class:`~magdash.variability.analysis.AnalysisResult`.
        source: the frequency source.
        measure: the measure of the analysis to correlate.
        missing: what a magnitude without a count is: ``error`` or ``zero``.
        use_cache: False recomputes and replaces the cached table.
    """
    params = result.params
    key = result_key(
        "e5", E5_VERSION, analysis=analysis_key(store, result.model, result.stimuli, params),
        source=source.name, counts=counts_hash(source), measure=measure, missing=missing,
    )

    def compute() -> E5Table:
        table = e5_correlation(
            result.magnitudes, result.values[measure], source, n_boot=params.n_boot,
            seed=params.seed,  # pyright: ignore[reportArgumentType] - AnalysisParams.__post_init__ resolves it to an int
            missing=missing,
        )
        table.insert(1, "label", [result.layer_labels[layer] for layer in table["layer"]])
        return E5Table(table, dict(model=result.model, stimuli=result.stimuli, source=source.name, measure=measure,
                                   n_boot=params.n_boot, seed=params.seed))

    return cached_result(store, E5, key, compute, use_cache=use_cache).table
