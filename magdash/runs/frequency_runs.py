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
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from magdash.errors import StoreError
from magdash.frequency.corpus import FrequencyError
from magdash.frequency.e5 import E5_COLUMNS, E5_VERSION, e5_correlation
from magdash.frequency.sources import (
    BUILTIN_SOURCES,
    FrequencySource,
    builtin_source,
    check_source_name,
    listing_row,
)
from magdash.jsonio import pack, unpack
from magdash.params import DEFAULT_N_BOOT
from magdash.runs import rows
from magdash.runs.analysis_runs import analysis_key
from magdash.runs.cache import CachedKind, cached_result, result_key
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
class E5Table:
    """A cached E5 table (``layer``, ``label`` and :data:`~magdash.frequency.e5.E5_COLUMNS`) with
    whose it is: model, stimuli, source, measure, n_boot, seed.

    Attributes:
        table: one row per layer: ``layer``, ``label`` and the E5 columns (the partial rho given log n
            with its p and CI, then the raw rho with its p and CI).
        identity: model, stimuli, source, measure, n_boot and seed of the table.
    """

    table: pd.DataFrame
    identity: dict

    def to_payload(self) -> bytes:
        """The table as plain data for the store's cache (never pickle)."""
        return pack({**self.identity, "columns": list(self.table.columns),
                     "data": {c: self.table[c].tolist() for c in self.table.columns}})

    @classmethod
    def from_payload(cls, payload: bytes) -> E5Table:
        """The table a payload of :meth:`to_payload` holds (a KeyError for a payload of an
        earlier :data:`~magdash.frequency.e5.E5_VERSION`, whose columns differ).

        Args:
            payload: bytes written by :meth:`to_payload`.
        """
        document = unpack(payload)
        table = pd.DataFrame({c: document["data"][c] for c in document["columns"]})
        for column in _FLOAT_COLUMNS:
            table[column] = table[column].astype(np.float64)
        return cls(table, {name: document[name] for name in E5_IDENTITY})


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
    *,
    stimuli: str | None = None,
    layers: Sequence[int] | None = None,
    measure: str = "eucl",
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    missing: str = "error",
    use_cache: bool = True,
) -> pd.DataFrame:
    """E5 for a stored model: V (default V_eucl, :mod:`magdash.variability.measures`) per layer
    against a source's counts, cached and written to the store's ``e5`` table.

    Args:
        store: the :class:`~magdash.store.Store` holding the model.
        model: the model's name in the store.
        source: a frequency source, or its name (built-in or stored).
        stimuli: the stimulus set; None takes the model's only complete one.
        layers: the layers to correlate; default the core band floor(L/2) .. L-1.
        measure: the variability measure correlated with log(count + 1).
        n_boot: bootstrap resamples of the two correlations' intervals.
        seed: the bootstrap's seed.
        missing: what a magnitude without a count is: ``error`` or ``zero``.
        use_cache: False recomputes and replaces the cached table.

    Returns:
        :func:`~magdash.frequency.e5.e5_correlation`'s table with a ``label`` column (the
        layer's name) after ``layer``.
    """
    record = store.model_record(model)
    stimuli = store.resolve_stimuli(model, stimuli)
    layers = list(layers) if layers is not None else default_core_layers(record.n_blocks)
    if not layers:
        raise FrequencyError("choose at least one layer")
    outside = [layer for layer in layers if not 0 <= layer < record.n_layers]
    if outside:
        raise FrequencyError(f"layers {outside} do not exist; {model!r} has layers 0..{record.n_layers - 1}")
    frequency = load_source(source, store) if isinstance(source, str) else source
    key = result_key(
        "e5", E5_VERSION, model=model, stimuli=stimuli, data=store.data_fingerprint(model, stimuli),
        source=frequency.name, counts=counts_hash(frequency), layers=layers, measure=measure, n_boot=n_boot,
        seed=seed, missing=missing,
    )

    def compute() -> E5Table:
        values, labels, magnitudes = {}, {}, None
        for data in store.read_layers(model, stimuli, layers):
            # A layer holding Inf/NaN vectors (magdash.overflow) gets no correlation: NaN V.
            values[data.layer] = (
                np.full(len(data.magnitudes), np.nan) if data.n_nonfinite else compute_measure(measure, data.vectors)
            )
            labels[data.layer] = data.label
            magnitudes = data.magnitudes
        table = e5_correlation(magnitudes, values, frequency, n_boot=n_boot, seed=seed, missing=missing)
        table.insert(1, "label", [labels[layer] for layer in table["layer"]])
        return E5Table(table, dict(model=model, stimuli=stimuli, source=frequency.name, measure=measure,
                                   n_boot=n_boot, seed=seed))

    return cached_result(store, E5, key, compute, use_cache=use_cache).table


def e5_from_analysis(
    store, result: AnalysisResult, source: FrequencySource, measure: str, missing: str = "error", *,
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
            result.magnitudes, result.values[measure], source, n_boot=params.n_boot, seed=params.seed, missing=missing,
        )
        table.insert(1, "label", [result.layer_labels[layer] for layer in table["layer"]])
        return E5Table(table, dict(model=result.model, stimuli=result.stimuli, source=source.name, measure=measure,
                                   n_boot=params.n_boot, seed=params.seed))

    return cached_result(store, E5, key, compute, use_cache=use_cache).table
