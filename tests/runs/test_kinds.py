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
from magdash.cli import SUBCOMMAND_MODULES
from magdash.kind_declarations import KIND_DECLARATIONS, KindDeclaration, KindDeclarations, ModelSection
from magdash.runs.backfill import RESULT_KINDS
from magdash.runs.kinds import ANALYSIS_KINDS, AnalysisKinds, SweepTask
from magdash.store import Activations, Store, VectorSource
from magdash.sweep.tasks import TASK_KINDS

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden_results.json"
EXPECTED = {"analysis", "compare", "phase", "controls", "probe", "design", "e5", "behaviour", "steer"}


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
    probe = ANALYSIS_KINDS["probe"]
    other = dataclasses.replace(probe, task=None, declaration=dataclasses.replace(probe.declaration, api="analyze"))
    with pytest.raises(ValueError, match="both claim magdash.analyze"):
        registry.register(other)
    task = SweepTask("analyze", lambda *cell: [], str)
    with pytest.raises(ValueError, match="both claim the sweep task 'analyze'"):
        registry.register(dataclasses.replace(ANALYSIS_KINDS["probe"], task=task))


def test_a_kind_caches_its_results_under_its_own_name():
    analysis = ANALYSIS_KINDS["analysis"]
    with pytest.raises(ValueError, match="caches its results as 'analysis'"):
        dataclasses.replace(analysis, declaration=dataclasses.replace(analysis.declaration, name="renamed"))


def test_a_kind_runs_with_the_classes_it_declares():
    analysis = ANALYSIS_KINDS["analysis"]
    with pytest.raises(ValueError, match="runs with magdash.depth_statistics.depth_params:DepthParams"):
        dataclasses.replace(analysis, params=ANALYSIS_KINDS["phase"].params)
    with pytest.raises(ValueError, match="returns magdash.variability.compare:ComparisonResult"):
        dataclasses.replace(analysis, result_type=ANALYSIS_KINDS["compare"].result_type)
    with pytest.raises(ValueError, match="a dashboard key needs a dashboard run"):
        dataclasses.replace(analysis, dashboard_run=None)


def test_the_declarations_and_the_kinds_agree_one_to_one():
    assert list(KIND_DECLARATIONS) == list(ANALYSIS_KINDS)
    for name, kind in ANALYSIS_KINDS.items():
        assert kind.declaration is KIND_DECLARATIONS[name]


def test_the_declarations_refuse_a_name_command_or_public_name_claimed_twice():
    declarations = KindDeclarations()
    declarations.declare(KIND_DECLARATIONS["analysis"])
    declarations.declare(KIND_DECLARATIONS["compare"])  # the same AnalysisParams: one public name, one target
    with pytest.raises(ValueError, match="'analysis' is declared already"):
        declarations.declare(KIND_DECLARATIONS["analysis"])
    with pytest.raises(ValueError, match="both claim the command 'magdash analyze'"):
        declarations.declare(_throwaway(command="analyze"))
    with pytest.raises(ValueError, match="claims magdash.AnalysisParams, which is magdash.variability"):
        declarations.declare(_throwaway(params="magdash.elsewhere:AnalysisParams"))
    with pytest.raises(ValueError, match="claims magdash.compare"):
        declarations.declare(_throwaway(api="compare", api_module="magdash.elsewhere"))
    assert list(declarations) == ["analysis", "compare"]


def _throwaway(**changes) -> KindDeclaration:
    """A kind no registry holds, declared with the names a new one would bring."""
    declaration = KindDeclaration("throwaway", "throw_away", "tests.throwaway:ThrowawayParams",
                                  "tests.throwaway:ThrowawayResult", "throw away", "throwaway",
                                  dashboard_key="tests.throwaway:ThrowawayKey", report_section="throwaway_section")
    return dataclasses.replace(declaration, **changes)


def test_a_new_declaration_reaches_the_public_names_and_the_command_modules():
    declarations = KindDeclarations()
    for declaration in KIND_DECLARATIONS.values():
        declarations.declare(declaration)
    declarations.declare(_throwaway())
    public = declarations.public_names()
    assert public["throw_away"] == ("magdash.api.analyses", "throw_away")
    assert public["ThrowawayParams"] == ("tests.throwaway", "ThrowawayParams")
    assert public["ThrowawayResult"] == ("tests.throwaway", "ThrowawayResult")
    assert declarations.cli_modules() == (*KIND_DECLARATIONS.cli_modules(), "throwaway")
    # magdash and its command line build their lists from the declarations, in place of a hand-kept copy
    assert {name: magdash._PUBLIC[name] for name in KIND_DECLARATIONS.public_names()} == KIND_DECLARATIONS.public_names()
    assert set(KIND_DECLARATIONS.cli_modules()) <= set(SUBCOMMAND_MODULES)


def test_the_backfill_writes_the_rows_of_every_kind_whose_payload_names_them():
    assert {name: kind.cached for name, kind in ANALYSIS_KINDS.items() if kind.backfill} == RESULT_KINDS
    assert set(RESULT_KINDS) == {"analysis", "compare", "controls", "e5", "probe", "behaviour", "steer"}
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
    assert tasks == ["analyze", "depth", "controls", "probe", "behave", "steer"]
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
    assert all(kind.dashboard_key is not None for kind in ANALYSIS_KINDS.values())
    for kind in ANALYSIS_KINDS.values():
        if kind.dashboard_key is None:
            continue
        module, _, qualname = kind.dashboard_key.partition(":")
        key_class = getattr(importlib.import_module(module), qualname)
        assert dataclasses.is_dataclass(key_class) and key_class.__dataclass_params__.frozen
        assert caches.resolvers()[key_class] is caches.result_for, kind.dashboard_key
        assert caches._kinds_by_key()[key_class] == kind.name


def test_the_app_resolves_a_kind_by_iterating_the_registry(monkeypatch):
    caches = importlib.import_module("pages.ui.caches")
    from magdash.dashboard.keys import SourceKey
    from magdash.runs import kinds

    @dataclasses.dataclass(frozen=True)
    class ThrowawayKey:
        store: str

    module = type(importlib)("tests_throwaway_keys")
    module.ThrowawayKey = ThrowawayKey
    monkeypatch.setitem(importlib.sys.modules, "tests_throwaway_keys", module)
    registry = AnalysisKinds()
    for kind in ANALYSIS_KINDS.values():
        registry.register(kind)
    design = ANALYSIS_KINDS["design"]
    declaration = dataclasses.replace(design.declaration, name="throwaway", api="throw_away", command="throw away",
                                      dashboard_key="tests_throwaway_keys:ThrowawayKey")
    registry.register(dataclasses.replace(design, declaration=declaration,
                                          cached=dataclasses.replace(design.cached, name="throwaway"),
                                          dashboard_run=lambda key, store_for, resolve: ("ran", key.store)))
    monkeypatch.setattr(kinds, "ANALYSIS_KINDS", registry)
    caches._kinds_by_key.cache_clear()
    caches.resolvers.cache_clear()
    try:
        assert caches._kinds_by_key()[ThrowawayKey] == "throwaway"
        assert caches.resolvers()[ThrowawayKey] is caches.result_for
        assert caches.resolvers()[SourceKey] is caches.frequency_source_for
        assert caches._kind_result.__wrapped__("throwaway", ThrowawayKey("s.duckdb")) == ("ran", "s.duckdb")
    finally:
        caches._kinds_by_key.cache_clear()
        caches.resolvers.cache_clear()


def test_every_kind_has_a_section_in_the_report():
    sections = importlib.import_module("magdash.presentation.report.sections")
    reports = importlib.import_module("magdash.reports")
    source = Path(reports.__file__).read_text()
    assert all(kind.report_section is not None for kind in ANALYSIS_KINDS.values())
    for kind in ANALYSIS_KINDS.values():
        if kind.report_section is None:
            continue
        assert callable(getattr(sections, kind.report_section)), kind.name
        assert f"sections.{kind.report_section}(" in source, kind.name
    builders = reports.model_section_builders()
    assert [builder.__name__ for builder in builders] == [
        "focus_layer_sections", "focus_e5_sections", "focus_depth_sections", "focus_massive_sections",
        "focus_probe_sections", "focus_behaviour_sections", "focus_steering_sections"]


def test_the_report_builds_a_focus_model_from_every_declared_builder():
    reports = importlib.import_module("magdash.reports")
    declarations = KindDeclarations()
    for declaration in KIND_DECLARATIONS.values():
        declarations.declare(declaration)
    declarations.declare(_throwaway(model_sections=(ModelSection(35, f"{__name__}:_throwaway_sections"),)))
    builders = reports.model_section_builders(declarations)
    assert builders[:3] == reports.model_section_builders()[:3] and builders[3] is _throwaway_sections
    context = reports.ReportContext(None, None, "eucl", 2, {"throwaway": "shown"})
    assert [section.title for section in builders[3](context)] == ["Throwaway: shown at layer 2"]


def _throwaway_sections(context) -> list:
    """A kind's focus sections, declared by the throwaway kind."""
    from magdash.presentation.report import ReportSection

    return [ReportSection(f"Throwaway: {context.options['throwaway']} at layer {context.layer}")]


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
