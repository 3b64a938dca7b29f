"""The dashboard's Streamlit caches, keyed on cheap keys (paths, names, data tokens).

One :class:`~magdash.store.Store` per path, the job registry and tokenizers through
``st.cache_resource``; the store inventory, analyses, comparisons, layer vectors, phase results,
probes and finished figure specs through ``st.cache_data``, so a widget change on a populated store
re-renders without touching the store.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import streamlit as st

from magdash import dashboard
from magdash.dashboard import behaviour_page, controls_page, probes_page
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


@st.cache_data(show_spinner=False, max_entries=64)
def analysis_for(key: dashboard.AnalysisKey):
    from magdash.runs.analysis_runs import analyze

    return analyze(store_for(key.store), key.model, key.stimuli, key.params)


@st.cache_data(show_spinner=False, max_entries=32)
def comparison_for(key: dashboard.ComparisonKey):
    from magdash.runs.analysis_runs import compare

    return compare(store_for(key.store), key.model_a, key.model_b, key.stimuli, key.params)


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


@st.cache_data(show_spinner=False, max_entries=16)
def e5_for(key: dashboard.E5Key) -> pd.DataFrame:
    """The E5 of an analysis, from the store's cache or computed once and written to its e5 table."""
    from magdash.runs.frequency_runs import e5_from_analysis

    return e5_from_analysis(
        store_for(key.analysis.store), analysis_for(key.analysis), frequency_source_for(key.source),
        key.measure, key.missing,
    )


@st.cache_data(show_spinner=False, max_entries=16)
def depth_for(key: dashboard.DepthKey):
    from magdash.runs.depth_runs import depth_from_store

    return depth_from_store(store_for(key.store), key.model, key.stimuli, key.params)


@st.cache_data(show_spinner=False, max_entries=16)
def controls_for(key: controls_page.ControlsKey):
    from magdash.runs.controls_runs import run_controls

    return run_controls(store_for(key.store), key.model, key.stimuli, key.params)


@st.cache_data(show_spinner=False, max_entries=16)
def design_for(key: controls_page.DesignKey):
    from magdash.runs.design_runs import run_design

    return run_design(store_for(key.store), key.model, key.stimuli, key.params, key.analysis)


@st.cache_data(show_spinner=False, max_entries=16)
def probe_for(key: probes_page.ProbeKey):
    """The probes of one model, from the store's cache or computed once (and written to its probe tables)."""
    from magdash.runs.probe_runs import probe

    return probe(store_for(key.store), key.model, key.stimuli, key.params)


@st.cache_data(show_spinner=False, max_entries=16)
def behaviour_for(key: behaviour_page.BehaviourKey):
    """The behaviour result of one model's trials, from the store's cache or fitted once (and cached there)."""
    from magdash.runs.behaviour_runs import behaviour

    return behaviour(store_for(key.store), key.model, key.comparisons, n_boot=key.n_boot)


_RESOLVERS: dict[type, Callable[[Any], Any]] = {
    behaviour_page.BehaviourKey: behaviour_for,
    controls_page.ControlsKey: controls_for,
    probes_page.ProbeKey: probe_for,
    controls_page.DesignKey: design_for,
    dashboard.DepthKey: depth_for,
    dashboard.AnalysisKey: analysis_for,
    dashboard.ComparisonKey: comparison_for,
    dashboard.LayerKey: layer_for,
    dashboard.SourceKey: frequency_source_for,
    dashboard.E5Key: e5_for,
}


@dataclass(frozen=True)
class Several:
    """Several keys by name, passed as one builder argument: it receives {name: result}."""

    items: tuple[tuple[str, Any], ...]


def resolve(value: Any) -> Any:
    """A key's cached object (analysis, comparison, layer, source, E5, phase); other values as is."""
    if isinstance(value, Several):
        return {name: resolve(key) for name, key in value.items}
    resolver = _RESOLVERS.get(type(value))
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
