"""The dashboard's Streamlit caches, keyed on cheap keys (paths, names, data tokens).

One :class:`~magdash.store.Store` per path, the job registry and tokenizers through
``st.cache_resource``; the store inventory, layer vectors, frequency sources, every analysis kind's
results (one cache over the kinds' dashboard keys, :func:`result_for`) and finished figure specs
through ``st.cache_data``, so a widget change on a populated store
re-renders without touching the store.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from magdash import dashboard
from magdash.dashboard.jobs import JobRegistry
from magdash.errors import ReadOnlyStoreError
from magdash.store import Store


def store_for(path: str) -> Store:
    """The store at ``path``, if the dashboard may open it (:mod:`magdash.dashboard.access`):
    never created here, read-only in read-only mode. Raises NoStoreError where none is yet."""
    access = dashboard.store_access()
    dashboard.check_store_path(path, access)
    return _open_store(path, access.read_only)


@st.cache_resource(show_spinner=False)
def _open_store(path: str, read_only: bool) -> Store:
    """One Store per path; it holds no connection, so sharing it across sessions is safe."""
    return Store(path, create=False, read_only=read_only)


def new_store(path: str) -> Store:
    """The store at ``path``, created if nothing is there: for the first run and an extraction
    the user asked for, inside the allowed folders, never in read-only mode."""
    access = dashboard.store_access()
    if access.read_only:
        raise ReadOnlyStoreError(dashboard.read_only_reason("extract models or create stores"))
    dashboard.check_store_path(path, access)
    Store(path, create=True)
    return _open_store(path, False)


@st.cache_resource(show_spinner=False)
def job_registry() -> JobRegistry:
    return JobRegistry()


@st.cache_resource(show_spinner=False, max_entries=4)
def tokenizer_for(spec: str):
    """A model's tokenizer alone and how it starts a sentence, for the tokenization preview
    (no weights are loaded)."""
    from magdash.sources import load_tokenizer, resolve_model

    source = resolve_model(spec)
    return load_tokenizer(source), source.sequence_start


@st.cache_data(show_spinner=False, max_entries=16)
def inventory_for(path: str, stamp: tuple) -> dashboard.StoreInventory:
    """The store's inventory; ``stamp`` (file mtime and size) makes a write invalidate it."""
    return dashboard.read_inventory(store_for(path))


@st.cache_data(show_spinner=False, ttl=60)
def source_choices(kind: str) -> list[str]:
    """What there is to pick for a kind of model source (the models in the Hugging Face cache)."""
    from magdash.sources import KINDS_BY_NAME

    return KINDS_BY_NAME[kind].choices()


@st.cache_data(show_spinner=False, max_entries=32)
def layer_for(key: dashboard.LayerKey):
    """One layer's stored vectors, shape (n_magnitudes, n_carriers, d)."""
    return store_for(key.store).read_layer(key.model, key.stimuli, key.layer).vectors


@st.cache_data(show_spinner=False, max_entries=16)
def frequency_source_for(key: dashboard.SourceKey):
    from magdash.runs.frequency_runs import load_source

    return load_source(key.name, store_for(key.store))


@st.cache_data(show_spinner=False, max_entries=16)
def frequency_sources_for(path: str, stamp: tuple) -> pd.DataFrame:
    from magdash.runs.frequency_runs import list_sources

    return list_sources(store_for(path))


@st.cache_data(show_spinner=False, max_entries=128)
def _kind_result(kind: str, key: Any) -> Any:
    """The result of analysis kind ``kind`` for its dashboard key, cached; ``kind`` keeps two kinds'
    keys apart in the one cache."""
    from magdash.runs.kinds import ANALYSIS_KINDS

    run = ANALYSIS_KINDS[kind].dashboard_run
    assert run is not None, f"analysis kind {kind!r} has no dashboard run"  # only kinds with a key are resolved
    return run(key, store_for, resolve)


def result_for(key: Any) -> Any:
    """The cached result of an analysis kind's dashboard key (an AnalysisKey, a ProbeKey, ...; every
    kind of :data:`magdash.runs.kinds.ANALYSIS_KINDS` with a ``dashboard_key``)."""
    return _kind_result(_kinds_by_key()[type(key)], key)


@functools.cache
def _kinds_by_key() -> dict[type, str]:
    """Each analysis kind's dashboard key class: its kind's name. Built on first use, so that the app's
    first page does not wait for every kind's runs to import."""
    from magdash.runs.kinds import ANALYSIS_KINDS

    found = {}
    for kind in ANALYSIS_KINDS.values():
        if kind.dashboard_key is not None:
            module, _, qualname = kind.dashboard_key.partition(":")
            found[getattr(importlib.import_module(module), qualname)] = kind.name
    return found


@functools.cache
def resolvers() -> dict[type, Callable[[Any], Any]]:
    """Every key class the caches resolve: its cached resolver (the analysis kinds' keys, a layer, a
    frequency source)."""
    return {**dict.fromkeys(_kinds_by_key(), result_for), dashboard.LayerKey: layer_for,
            dashboard.SourceKey: frequency_source_for}


@dataclass(frozen=True)
class Several:
    """Several keys by name, passed as one builder argument: it receives {name: result}."""

    items: tuple[tuple[str, Any], ...]


def resolve(value: Any) -> Any:
    """A key's cached object (analysis, comparison, layer, source, E5, phase); other values as is."""
    if isinstance(value, Several):
        return {name: resolve(key) for name, key in value.items}
    resolver = resolvers().get(type(value))
    return resolver(value) if resolver is not None else value


def _resolve_all(args: tuple) -> list:
    return [resolve(value) for value in args]


def builder_id(builder: Callable[..., Any]) -> str:
    """``module:qualname`` of a figure or table function: what the caches key a builder on (Streamlit
    would hash a function by its name alone, and two modules may hold functions of one name)."""
    return f"{builder.__module__}:{builder.__qualname__}"


def _builder(identity: str) -> Callable[..., Any]:
    module, _, qualname = identity.partition(":")
    return getattr(importlib.import_module(module), qualname)


@st.cache_data(show_spinner=False, max_entries=512)
def _cached_spec(identity: str, args: tuple) -> dict:
    chart = _builder(identity)(*_resolve_all(args))
    # Schema validation costs 30-70 ms a chart, most of a layer change; the chart builders'
    # specs are validated by the tests (tests/presentation/test_charts.py).
    return chart.to_dict(validate=False)


def figure_spec(builder: Callable[..., Any], args: tuple) -> dict:
    """The finished Vega-Lite spec of ``builder(*args)``, keys among ``args`` resolved, cached."""
    return _cached_spec(builder_id(builder), args)


@st.cache_data(show_spinner=False, max_entries=256)
def _cached_result(identity: str, args: tuple) -> Any:
    return _builder(identity)(*_resolve_all(args))


def cached(builder: Callable[..., Any], *args: Any) -> Any:
    """A builder's result (a table, a frame for a chart), cached on its (hashable) arguments."""
    return _cached_result(builder_id(builder), args)


def results_arg(keys: dict[str, Any]) -> Several:
    """Pass several results (name -> key) to a builder as one hashable argument."""
    return Several(tuple(keys.items()))


def compute(builder: Callable[..., Any], *args: Any) -> Any:
    """A builder's result computed on every run (cheap ones: sentences from cached results)."""
    return builder(*_resolve_all(args))
