"""The registry of analysis kinds, and every place a kind must be reachable from (in the spirit of
TransformerLens' registry-sync test): the cache and its backfill, the sweep's task kinds, the
public API, the dashboard's keys and resolvers, the report's section builders and the golden
file of cached numbers."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
from pathlib import Path

import numpy as np
import pytest

import magdash
from magdash.runs.backfill import RESULT_KINDS
from magdash.runs.kinds import ANALYSIS_KINDS, AnalysisKinds, SweepTask
from magdash.store import Activations, Store, VectorSource
from magdash.sweep.tasks import TASK_KINDS

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden_results.json"
EXPECTED = {"analysis", "compare", "phase", "controls", "probe", "design", "e5"}


def test_every_analysis_is_registered():
    assert set(ANALYSIS_KINDS) == EXPECTED
    for name, kind in ANALYSIS_KINDS.items():
        assert kind.name == name == kind.cached.name


def test_a_registry_refuses_a_name_registered_twice():
    registry = AnalysisKinds()
    analysis = ANALYSIS_KINDS["analysis"]
    registry.register(analysis)
    with pytest.raises(ValueError, match="'analysis' is registered already"):
        registry.register(analysis)
    assert list(registry) == ["analysis"]


def test_a_registry_refuses_two_kinds_claiming_one_function_or_task():
    registry = AnalysisKinds()
    registry.register(ANALYSIS_KINDS["analysis"])
    other = dataclasses.replace(ANALYSIS_KINDS["probe"], task=None, api="analyze")
    with pytest.raises(ValueError, match="both claim magdash.analyze"):
        registry.register(other)
    task = SweepTask("analyze", lambda *cell: [], str)
    with pytest.raises(ValueError, match="both claim the sweep task 'analyze'"):
        registry.register(dataclasses.replace(ANALYSIS_KINDS["probe"], task=task))


def test_a_kind_caches_its_results_under_its_own_name():
    with pytest.raises(ValueError, match="caches its results as 'analysis'"):
        dataclasses.replace(ANALYSIS_KINDS["analysis"], name="renamed")


def test_the_backfill_writes_the_rows_of_every_kind_whose_payload_names_them():
    assert {name: kind.cached for name, kind in ANALYSIS_KINDS.items() if kind.backfill} == RESULT_KINDS
    assert set(RESULT_KINDS) == {"analysis", "compare", "controls", "e5", "probe"}
    for kind in ANALYSIS_KINDS.values():
        assert (kind.cached.rows is not None) >= kind.backfill


def test_every_kind_has_metric_tables_and_every_table_a_kind():
    from magdash.store import metrics

    table_kinds = {table.kind for table in metrics.METRIC_TABLES}
    assert table_kinds == {kind.rows_kind for kind in ANALYSIS_KINDS.values()}
    for kind in ANALYSIS_KINDS.values():
        assert metrics.tables_of(kind.rows_kind), kind.name


def test_every_kind_with_a_sweep_task_is_a_task_kind_of_the_sweep():
    tasks = [kind.task.name for kind in ANALYSIS_KINDS.values() if kind.task is not None]
    assert tasks == ["analyze", "phase", "controls", "probe"]
    assert list(TASK_KINDS) == ["extract", *tasks]


def test_the_sweep_refuses_a_task_kind_registered_twice():
    from magdash.sweep.tasks import register_task_kind

    before = dict(TASK_KINDS)
    with pytest.raises(ValueError, match="'analyze' is registered already"):
        register_task_kind(TASK_KINDS["analyze"])
    assert before == TASK_KINDS


def test_every_kind_is_public_with_its_params_and_result_types():
    for kind in ANALYSIS_KINDS.values():
        assert kind.api in magdash.__all__, kind.name
        assert callable(getattr(magdash, kind.api))
        for declared in (kind.params, kind.result_type):
            if declared.__module__.startswith("magdash"):
                assert getattr(magdash, declared.__name__) is declared, (kind.name, declared)


def test_every_kind_has_its_command():
    from magdash.cli import build_parser

    def subcommands(parser) -> dict:
        return next((action.choices for action in parser._actions if isinstance(action, argparse._SubParsersAction)),
                    {})

    for kind in ANALYSIS_KINDS.values():
        parser = build_parser()
        for word in kind.command.split():
            parser = subcommands(parser)[word]
        assert parser.prog == f"magdash {kind.command}"


def test_every_kind_shown_in_the_app_has_a_key_and_a_cached_resolver():
    caches = importlib.import_module("pages.ui.caches")
    for kind in ANALYSIS_KINDS.values():
        assert kind.dashboard_key is not None, kind.name
        module, _, qualname = kind.dashboard_key.partition(":")
        key_class = getattr(importlib.import_module(module), qualname)
        assert dataclasses.is_dataclass(key_class) and key_class.__dataclass_params__.frozen
        assert key_class in caches._RESOLVERS, kind.dashboard_key


def test_every_kind_has_a_section_in_the_report():
    sections = importlib.import_module("magdash.presentation.report.sections")
    reports = Path(importlib.import_module("magdash.reports").__file__).read_text()
    for kind in ANALYSIS_KINDS.values():
        assert callable(getattr(sections, kind.report_section)), kind.name
        assert f"sections.{kind.report_section}(" in reports, kind.name


def test_every_kind_version_is_checked_by_the_golden_file():
    versions = json.loads(GOLDEN.read_text())["versions"]
    for kind in ANALYSIS_KINDS.values():
        recorded = [name for name, version in versions.items() if ANALYSIS_KINDS[name].version == kind.version]
        assert recorded, f"no golden numbers for {kind.name}'s version"
        assert all(versions[name] == kind.version for name in recorded)


def test_both_kinds_of_vector_source_are_vector_sources(tmp_path):
    rng = np.random.default_rng(0)
    activations = Activations(rng.normal(size=(6, 3, 3, 4)), [1, 2, 3, 4, 5, 6], name="toy")
    store = Store(tmp_path / "s.duckdb")
    store.put("toy", activations)
    stored = store.vectors("toy")
    for source in (activations, stored):
        assert isinstance(source, VectorSource)
        assert (source.n_layers, source.n_blocks, tuple(source.magnitudes)) == (3, activations.n_blocks,
                                                                                  (1, 2, 3, 4, 5, 6))
        assert [layer for layer, _, _ in source.layers()] == [0, 1, 2]
        np.testing.assert_array_equal(source.layer(1), activations.layer(1))
    assert activations.store is None and stored.store is store


def test_a_kind_computes_the_same_result_over_arrays_and_over_their_store(tmp_path):
    rng = np.random.default_rng(1)
    activations = Activations(rng.normal(size=(8, 4, 4, 6)), list(range(1, 9)), name="toy")
    store = Store(tmp_path / "s.duckdb")
    store.put("toy", activations)
    kind = ANALYSIS_KINDS["phase"]
    params = kind.params(n_boot=20)
    over_arrays = kind.compute(activations, params)
    over_store = kind.compute(store.vectors("toy"), params)
    assert isinstance(over_arrays, kind.result_type)
    np.testing.assert_allclose(over_arrays.table.select_dtypes("number").to_numpy(dtype=float),
                               over_store.table.select_dtypes("number").to_numpy(dtype=float), rtol=1e-12,
                               equal_nan=True)
