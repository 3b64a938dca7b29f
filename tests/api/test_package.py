"""``import magdash as md``: the public names are listed once (``magdash.__all__``), load when first
used (so importing magdash, and the command line's ``--help``, loads no numerical library), are
documented, and none is shadowed by a submodule of the same name."""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
import types

import pytest

import magdash as md
from tests.support import ROOT

HEAVY = ("numpy", "pandas", "scipy", "duckdb", "torch", "transformers", "streamlit", "altair", "sklearn")


def loaded_after(code: str) -> list[str]:
    """The heavy packages a fresh interpreter has loaded after running ``code``."""
    script = f"import sys\n{code}\nimport json\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    child = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr[-2000:]
    return [name for name in json.loads(child.stdout.splitlines()[-1]) if name in HEAVY]


def test_importing_magdash_loads_no_numerical_library():
    assert loaded_after("import magdash, magdash.errors\nassert magdash.__version__") == []
    # The command line's parser neither.
    assert loaded_after("from magdash.cli import build_parser") == []


@pytest.mark.slow
def test_a_notebook_analysing_a_store_never_loads_torch():
    loaded = loaded_after("import magdash as md\nmd.analyze, md.compare, md.controls, md.depth, md.charts, "
                          "md.Store, md.number_prompts, md.from_transformer_lens")
    assert "pandas" in loaded and "altair" in loaded
    assert not {"torch", "transformers", "streamlit"} & set(loaded)


def test_every_public_name_resolves_and_nothing_else_is_offered():
    assert md.__all__[0] == "__version__" and len(set(md.__all__)) == len(md.__all__)
    for name in md.__all__:
        assert getattr(md, name) is not None, name
    assert set(md.__all__) <= set(dir(md))
    assert isinstance(md.charts, types.ModuleType) and callable(md.charts.scaling)
    assert md.Store.put.__name__ == "put_activations"
    with pytest.raises(AttributeError, match="no attribute 'anlyze'"):
        md.anlyze  # noqa: B018


@pytest.mark.slow
def test_no_public_name_is_also_a_submodule_of_the_package():
    # Importing a submodule binds it as an attribute of its package: a module named like a public
    # function (magdash/extract.py beside md.extract) would replace the function once imported.
    submodules = {path.stem for path in (ROOT / "magdash").glob("*.py")} | {
        path.parent.name for path in (ROOT / "magdash").glob("*/__init__.py")}
    clashes = {name for name, (_, attribute) in md._PUBLIC.items() if attribute is not None} & submodules
    assert clashes == set()
    child = subprocess.run([sys.executable, "-c", "import magdash as md\nimport magdash.extraction, magdash.sweep.worker\n"
                            "assert md.extract.__module__ == 'magdash.api.analyses'"],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr[-2000:]


def public_functions() -> list[tuple[str, object]]:
    functions = [(name, getattr(md, name)) for name in md.__all__ if inspect.isfunction(getattr(md, name))]
    functions += [(f"charts.{name}", value) for name, value in vars(md.charts).items()
                  if inspect.isfunction(value) and not name.startswith("_") and value.__module__ == md.charts.__name__]
    functions += [("Store.put", md.Store.put), ("NumberPrompts.shifted", md.NumberPrompts.shifted),
                  ("Activations.layer", md.Activations.layer), ("Activations.layers", md.Activations.layers)]
    return functions


@pytest.mark.parametrize(("name", "function"), public_functions(), ids=lambda item: item if isinstance(item, str) else "")
def test_every_public_function_documents_its_arguments(name, function):
    doc = inspect.getdoc(function) or ""
    parameters = [p for p in inspect.signature(function).parameters if p not in ("self", "cls")]
    assert doc, f"{name} has no docstring"
    if parameters:
        assert "\nArgs:\n" in doc, f"{name}'s docstring has no Args: section"
        args = doc.split("\nArgs:\n", 1)[1]
        undocumented = [p for p in parameters if not re.search(rf"^\s+{p}:", args, re.MULTILINE)]
        assert undocumented == [], f"{name} leaves {undocumented} undocumented"


def test_public_classes_document_their_fields():
    for cls in (md.Activations, md.NumberPrompts):
        doc = inspect.getdoc(cls)
        assert doc and len(doc.splitlines()) > 3, cls
    undocumented = [name for name in inspect.signature(md.Activations).parameters
                    if not re.search(rf"^\s+{name}:", inspect.getdoc(md.Activations), re.MULTILINE)]
    assert undocumented == []
