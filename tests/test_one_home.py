"""Each fact has one home: the defaults of an extraction, the default measure and a measure's colour are
read from where they are declared, never restated (ARCHITECTURE.md, "Facts have one home")."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest

from magdash.cli import build_parser
from magdash.dashboard.jobs import ExtractionRequest
from magdash.dashboard.view import ViewState
from magdash.errors import AnalysisError
from magdash.extract_params import TEXT_BATCH_SIZE, ExtractParams
from magdash.frequency.e5_params import E5Params
from magdash.presentation import chart_style
from magdash.sweep.plan import SweepPlan
from magdash.variability.measures import DEFAULT_MEASURE, MEASURES, PRIMARY_MEASURES, measure_registry

ROOT = Path(__file__).resolve().parents[1]

# Parameters whose default is an extraction's (ExtractParams), the confidence level (params.DEFAULT_CI) or the
# default measure: a literal default anywhere but their home restates the fact.
EXTRACTION_DEFAULTS = {"dtype", "device", "position", "padding_side", "batch_size", "ci", "confidence"}
HOMES = {"magdash/extract_params.py", "magdash/params.py", "magdash/stimuli.py"}


def _literal_defaults(path: Path):
    """(function or class, parameter, literal) for each parameter or field given a literal default."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            arguments = node.args
            positional = [*arguments.posonlyargs, *arguments.args]
            pairs = list(zip(positional[len(positional) - len(arguments.defaults):], arguments.defaults, strict=True))
            pairs += [(arg, default) for arg, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True)
                      if default is not None]
            for arg, default in pairs:
                if isinstance(default, ast.Constant):
                    yield node.name, arg.arg, default.value
        elif isinstance(node, ast.ClassDef):
            for statement in node.body:
                if not (isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)):
                    continue
                value = statement.value
                if isinstance(value, ast.Call):  # field(default=..., metadata=...)
                    value = next((k.value for k in value.keywords if k.arg == "default"), None)
                if isinstance(value, ast.Constant):
                    yield node.name, statement.target.id, value.value


def _sources():
    for folder in ("magdash", "pages"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield path.relative_to(ROOT).as_posix(), path


def test_no_module_restates_an_extraction_default_the_confidence_level_or_the_default_measure():
    restated = []
    for name, path in _sources():
        for owner, parameter, value in _literal_defaults(path):
            restates = parameter == "measure" or (parameter in EXTRACTION_DEFAULTS and name not in HOMES)
            if restates and value is not None:
                restated.append(f"{name}: {owner}({parameter}={value!r})")
    assert not restated, "read these from ExtractParams' constants, DEFAULT_CI or DEFAULT_MEASURE:\n" + "\n".join(restated)


def test_the_jobs_the_sweep_plans_and_the_depth_command_take_extract_params_defaults():
    defaults = ExtractParams()
    request = {f.name: f.default for f in dataclasses.fields(ExtractionRequest)}
    assert {key: request[key] for key in ("dtype", "device", "position", "batch_size")} == {
        "dtype": defaults.dtype, "device": defaults.device, "position": defaults.position,
        "batch_size": defaults.batch_size}
    plan = {f.name: f.default for f in dataclasses.fields(SweepPlan)}
    assert plan["dtypes"] == (defaults.dtype,) and plan["positions"] == (defaults.position,)
    assert (plan["batch_size"], plan["padding_side"], plan["device"]) == (
        defaults.batch_size, defaults.padding_side, defaults.device)
    depth = build_parser().parse_args(["phase", "--model", "m", "--prompts", "p.txt"])
    assert (depth.dtype, depth.device, depth.batch_size) == (defaults.dtype, defaults.device, TEXT_BATCH_SIZE)


def test_the_default_measure_is_a_primary_measure_and_every_default_reads_it():
    import magdash.api.charts as charts
    import magdash.presentation.variability_figures as vf

    assert DEFAULT_MEASURE in PRIMARY_MEASURES
    assert ViewState(store="s.duckdb").measure == DEFAULT_MEASURE
    assert E5Params().measure == DEFAULT_MEASURE
    measured = [function for module in (charts, vf) for _, function in inspect.getmembers(module, inspect.isfunction)
                if function.__module__ == module.__name__ and "measure" in inspect.signature(function).parameters]
    defaults = {inspect.signature(f).parameters["measure"].default for f in measured} - {inspect.Parameter.empty, None}
    assert len(measured) > 10 and defaults == {DEFAULT_MEASURE}  # None: every measure


def test_every_measure_has_a_colour_of_its_own_and_the_charts_read_it():
    colours = [measure.color.lower() for measure in MEASURES.values()]
    assert all(len(c) == 7 and c.startswith("#") for c in colours)
    assert len(set(colours)) == len(colours)
    drawn = chart_style.MEASURE_COLORS
    assert drawn == {measure.title: measure.color for measure in MEASURES.values()}


def test_the_registry_refuses_a_measure_in_another_measures_colour_or_name():
    proj = MEASURES["proj"]
    newcomer = dataclasses.replace(proj, name="newcomer", title="V_new", color=MEASURES["eucl"].color.lower())
    with pytest.raises(AnalysisError, match="'eucl' and 'newcomer' share the colour"):
        measure_registry(*MEASURES.values(), newcomer)
    with pytest.raises(AnalysisError, match="two measures are named 'proj'"):
        measure_registry(*MEASURES.values(), dataclasses.replace(proj, color="#123456"))
    with pytest.raises(AnalysisError, match="give a hex colour"):
        measure_registry(dataclasses.replace(proj, color="blue"))
    assert list(measure_registry(*MEASURES.values(), dataclasses.replace(newcomer, color="#123456"))) == [
        *MEASURES, "newcomer"]
