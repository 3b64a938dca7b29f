"""The public API's docstrings say what each argument means.

The objects of :data:`PUBLIC` (the run layer, the params classes, the store, extraction, the
model sources, the result types, the figure functions, sweeps and errors: exactly what the
Python API reference of the documentation site shows) are read with griffe, the parser that
renders that reference, and every one of them must have a docstring; every argument of a public
function or method must be described in its ``Args:`` section (Google style), which names no
argument the signature lacks; every field of a dataclass must be described, in an
``Attributes:`` section, by a docstring of its own, or, for a params class, by its command-line
option's help (``docs/hooks/griffe_magdash.py`` shows that help in the reference).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import griffe
import pytest

from tests.support import ROOT

FIGURES = r"_figure$"
PUBLIC: dict[str, str | None] = {
    # the public API (import magdash as md)
    "magdash.api.analyses": None,
    "magdash.store.activations.Activations": None,
    "magdash.api.adapters": None,
    "magdash.api.charts": None,
    # the run layer
    "magdash.runs.kinds": None,
    "magdash.runs.analysis_runs": None,
    "magdash.runs.controls_runs": None,
    "magdash.runs.design_runs": None,
    "magdash.runs.depth_runs": None,
    "magdash.runs.frequency_runs": None,
    "magdash.runs.probe_runs": None,
    "magdash.runs.cache": None,
    "magdash.runs.rows": None,
    "magdash.runs.backfill": None,
    # the params classes and their shared defaults
    "magdash.variability.analysis_params.AnalysisParams": None,
    "magdash.variability.analysis_params.default_core_layers": None,
    "magdash.extract_params.ExtractParams": None,
    "magdash.depth_statistics.depth_params.DepthParams": None,
    "magdash.controls_statistics.controls_params.ControlsParams": None,
    "magdash.controls_statistics.controls_params.DesignParams": None,
    "magdash.sweep.sweep_params.SweepParams": None,
    "magdash.probes.probe_params.ProbeParams": None,
    "magdash.frequency.e5_params.E5Params": None,
    "magdash.behaviour.behaviour_params.BehaviourParams": None,
    "magdash.params": None,
    # the store, extraction, the model sources
    "magdash.store.database.Store": None,
    "magdash.store.records": None,
    "magdash.store.vectors": None,
    "magdash.store.database.nonfinite_counts_in": None,
    "magdash.extraction": None,
    "magdash.sources.resolve": None,
    "magdash.sources.base.ModelSource": None,
    "magdash.sources.base.SourceKind": None,
    # the result types
    "magdash.variability.analysis.AnalysisResult": None,
    "magdash.variability.hypotheses.HypothesisResult": None,
    "magdash.caveats.Caveat": None,
    "magdash.caveats.Severity": None,
    "magdash.variability.artifacts.CarrierInfluence": None,
    "magdash.variability.compare.ComparisonResult": None,
    "magdash.depth_statistics.diagnostics.DepthResult": None,
    "magdash.controls_statistics.controls.ControlsResult": None,
    "magdash.controls_statistics.controls.CarrierTables": None,
    "magdash.controls_statistics.variants.VariantSummary": None,
    "magdash.controls_statistics.design.DesignResult": None,
    "magdash.runs.frequency_runs.E5Table": None,
    "magdash.probes.result.ProbeResult": None,
    "magdash.behaviour.behaviour_result.BehaviourResult": None,
    "magdash.stimuli.StimulusSet": None,
    "magdash.comparison_stimuli.ComparisonSet": None,
    "magdash.frequency.sources.FrequencySource": None,
    # the figure functions (a result in, a captioned chart out)
    "magdash.presentation.scaling_figures": FIGURES,
    "magdash.presentation.tokenization_figures": FIGURES,
    "magdash.presentation.weber_figures": FIGURES,
    "magdash.presentation.compare_figures": FIGURES,
    "magdash.presentation.geometry_figures": FIGURES,
    "magdash.presentation.frequency_figures": FIGURES,
    "magdash.presentation.depth_figures": FIGURES,
    "magdash.presentation.controls_figures": FIGURES,
    "magdash.presentation.probe_figures": FIGURES,
    "magdash.presentation.behaviour_figures": FIGURES,
    "magdash.presentation.steering_figures": FIGURES,
    # sweeps, errors
    "magdash.sweep.runner": None,
    "magdash.sweep.plan": None,
    "magdash.errors": None,
}
"""What the API reference shows (``docs/reference/*.md``), each with the regex of the member
names it shows (None: every public member)."""
PACKAGE_ONLY = {"magdash", "magdash.runs"}
"""Packages the reference shows for their docstring alone."""


@pytest.fixture(scope="module")
def package() -> griffe.Module:
    extensions = griffe.load_extensions(f"{ROOT / 'docs' / 'hooks' / 'griffe_magdash.py'}:MagdashDocstrings")
    loader = griffe.GriffeLoader(docstring_parser=griffe.Parser.google, search_paths=[str(ROOT)],
                                 extensions=extensions)
    return loader.load("magdash")


def test_the_linted_objects_are_those_the_reference_shows():
    shown = {}
    for page in sorted((ROOT / "docs" / "reference").glob("*.md")):
        for match in re.finditer(r"^::: (\S+)\n((?:    .*\n)*)", page.read_text(encoding="utf-8"), re.M):
            filters = re.search(r'filters: \["([^"]+)"\]', match[2])
            shown[match[1]] = filters[1] if filters else None
    assert {k: v for k, v in shown.items() if k not in PACKAGE_ONLY} == PUBLIC


def documented_objects(package: griffe.Module) -> Iterator[griffe.Object]:
    for path, names in PUBLIC.items():
        obj = package[path.removeprefix("magdash.")]
        if obj.is_module:
            yield obj
            for member in obj.members.values():
                if member.is_alias or member.name.startswith("_") or not (member.is_function or member.is_class):
                    continue
                if names is None or re.search(names, member.name):
                    yield from with_methods(member)
        else:
            yield from with_methods(obj)


def with_methods(obj: griffe.Object) -> Iterator[griffe.Object]:
    yield obj
    if obj.is_class:
        generated_init = "dataclass" in obj.labels  # its arguments are the fields, checked as such
        for member in obj.members.values():
            if member.is_alias or not member.is_function:
                continue
            if not member.name.startswith("_") or (member.name == "__init__" and not generated_init):
                yield member


def sections(obj: griffe.Object, kind: griffe.DocstringSectionKind) -> dict[str, str]:
    found: dict[str, str] = {}
    if obj.docstring is None:
        return found
    for section in obj.docstring.parsed:
        if section.kind is kind:
            found |= {item.name: item.description for item in section.value}
    return found


def problems_of(obj: griffe.Object) -> list[str]:
    where = f"{obj.path} ({obj.relative_filepath}:{obj.lineno})"
    if obj.is_function and obj.name == "__init__":
        documented = sections(obj, griffe.DocstringSectionKind.parameters) | sections(
            obj.parent, griffe.DocstringSectionKind.parameters)
    else:
        if obj.docstring is None or not obj.docstring.value.strip():
            return [f"{where}: no docstring"]
        documented = sections(obj, griffe.DocstringSectionKind.parameters)
    problems = []
    if obj.is_function:
        arguments = [p.name for p in obj.parameters if p.name not in ("self", "cls")]
        if "property" in obj.labels:
            arguments = []
        missing = [name for name in arguments if not documented.get(name, "").strip()]
        if missing:
            problems.append(f"{where}: Args: does not describe {', '.join(missing)}")
        unknown = sorted(set(documented) - set(arguments) - {f"*{a}" for a in arguments} - {f"**{a}" for a in arguments})
        if unknown:
            problems.append(f"{where}: Args: describes {', '.join(unknown)}, which the signature lacks")
    elif obj.is_class and "dataclass" in obj.labels:
        attributes = sections(obj, griffe.DocstringSectionKind.attributes)
        fields = [m for m in obj.members.values() if m.is_attribute and "instance-attribute" in m.labels
                  and not m.name.startswith("_") and "property" not in m.labels]
        missing = [m.name for m in fields if not attributes.get(m.name, "").strip() and m.docstring is None]
        if missing:
            problems.append(f"{where}: fields not described: {', '.join(missing)}")
    return problems


def test_every_argument_and_field_of_the_public_api_is_described(package):
    objects = list({obj.path: obj for obj in documented_objects(package)}.values())
    assert len(objects) > 100
    problems = [problem for obj in objects for problem in problems_of(obj)]
    assert not problems, f"{len(problems)} docstring problems:\n" + "\n".join(problems)
