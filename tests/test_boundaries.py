"""The architecture's boundaries, enforced: what each part of magdash may import.

- the layers, lowest first (:data:`LAYERS`): a module imports only modules of its own layer or of
  a layer before it, lazy imports (inside functions) counted, ``if TYPE_CHECKING:`` ones not; and
  the few pairs the order allows but the architecture forbids (:data:`NEVER`): the statistics never
  import the store, the sources and extraction know nothing of analyses, the presentation never
  reads the store, the CLI never imports the dashboard;
- no import cycle between modules of different packages, and no two modules of one name;
- ``magdash/`` never imports streamlit (the Streamlit side is ``pages/ui``);
- statistics (variability, frequency, phase, controls) and presentation modules never import torch
  or transformers when they are imported (a lazy import inside a function is how the few that
  can use torch get it);
- only the store package imports duckdb, and the corpus counter, whose in-memory DuckDB
  queries the user's corpus files and never opens the store;
- browsing a store in the app (every page, on a populated store) loads neither torch nor
  transformers.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.support import APP, ROOT

PACKAGE = ROOT / "magdash"
STATISTICS_AND_PRESENTATION = ("variability", "frequency", "depth_statistics", "controls_statistics", "behaviour",
                               "steering", "presentation")
HEAVY = ("torch", "transformers")
DUCKDB_ALLOWED = ("magdash/store/", "magdash/frequency/corpus.py")


def imports(path: Path) -> list[tuple[str, bool]]:
    """(imported module, imported when the module is) for every import statement of a file.

    Imports inside functions run only when called; those under ``if TYPE_CHECKING:`` never.
    """
    found: list[tuple[str, bool]] = []

    def visit(node: ast.AST, at_import: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, False)
            elif isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit(ast.Module(body=child.orelse, type_ignores=[]), at_import)
            elif isinstance(child, ast.Import):
                found.extend((alias.name, at_import) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and not child.level:
                found.append((child.module, at_import))
            else:
                visit(child, at_import)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), True)
    return found


def top(module: str) -> str:
    return module.split(".", 1)[0]


def package_files() -> list[Path]:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 40 and PACKAGE / "store" / "database.py" in files
    return files


def label(path: Path, root: Path = ROOT) -> str:
    return path.relative_to(root).as_posix()


def streamlit_imports(files, root: Path = ROOT) -> list[str]:
    return [
        f"{label(path, root)}: {module}" for path in files for module, _ in imports(path) if top(module) == "streamlit"
    ]


def heavy_imports_at_import_time(files, root: Path = ROOT) -> list[str]:
    return [
        f"{label(path, root)}: {module}"
        for path in files
        for module, at_import in imports(path)
        if at_import and top(module) in HEAVY
    ]


def duckdb_imports(files, root: Path = ROOT) -> list[str]:
    return [
        f"{label(path, root)}: {module}"
        for path in files
        for module, _ in imports(path)
        if top(module) == "duckdb" and not label(path, root).startswith(DUCKDB_ALLOWED)
    ]


LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("magdash/errors.py", "magdash/jsonio.py", "magdash/result_codec.py", "magdash/params.py", "magdash/formatting.py",
              "magdash/layers.py", "magdash/names.py", "magdash/environment.py", "magdash/overflow.py",
              "magdash/norm_outliers.py", "magdash/output_files.py", "magdash/stimuli.py", "magdash/tokenization.py",
              "magdash/significance.py", "magdash/caveats.py", "magdash/kind_declarations.py",
              "magdash/comparison_stimuli.py")),
    ("store", ("magdash/store/",)),
    ("statistics", ("magdash/variability/", "magdash/frequency/", "magdash/depth_statistics/", "magdash/controls_statistics/",
                    "magdash/probes/", "magdash/behaviour/", "magdash/steering/")),
    ("sources", ("magdash/sources/",)),
    ("extraction", ("magdash/extraction.py", "magdash/extract_params.py", "magdash/trial_extraction.py",
                    "magdash/layer_hooks.py", "magdash/trial_steering.py")),
    ("runs", ("magdash/runs/",)),
    ("presentation", ("magdash/presentation/",)),
    ("reports", ("magdash/reports.py",)),
    ("dashboard", ("magdash/dashboard/",)),
    ("sweep", ("magdash/sweep/",)),
    ("cli", ("magdash/cli/", "magdash/__main__.py")),
    ("api", ("magdash/__init__.py", "magdash/api/")),
)
"""magdash's layers, lowest first: data flows up, and so do imports."""
NEVER = {
    "statistics": ("store", "sources", "extraction"),
    "sources": ("store", "statistics"),
    "extraction": ("statistics",),
    "presentation": ("store", "extraction", "runs"),
    "sweep": ("dashboard",),
    "cli": ("dashboard",),
}
"""Layers a layer must not import although the order would allow it (../shared/ARCHITECTURE.md)."""


def layer_of(path: str) -> str:
    matches = [name for name, places in LAYERS for place in places if path == place or path.startswith(place)]
    assert len(matches) == 1, f"{path} is in {matches or 'no layer'}: add it to LAYERS"
    return matches[0]


def module_path(module: str) -> str | None:
    """``magdash.runs.cache`` -> ``magdash/runs/cache.py`` (a package: its ``__init__.py``)."""
    parts = module.split(".")
    if parts[0] != "magdash":
        return None
    for cut in (len(parts), len(parts) - 1):  # ``from magdash.presentation import report`` names a submodule
        base = ROOT.joinpath(*parts[:cut])
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return label(candidate)
    return None


def import_edges(files) -> list[tuple[str, str]]:
    """(importer, imported) paths of every import of a magdash module, lazy ones included."""
    edges = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                node.body = []
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [f"{node.module}.{alias.name}" for alias in node.names]
            for name in names:
                target = module_path(name)
                if target is not None and target != label(path):
                    edges.append((label(path), target))
    return edges


def layering_violations(edges) -> list[str]:
    order = {name: index for index, (name, _) in enumerate(LAYERS)}
    found = []
    for importer, imported in edges:
        if imported == "magdash/__init__.py":
            continue  # the package itself, imported with any of its modules
        low, high = layer_of(importer), layer_of(imported)
        if order[high] > order[low] or high in NEVER.get(low, ()):
            found.append(f"{importer} ({low}) imports {imported} ({high})")
    return found


def cycles_across_packages(edges) -> list[list[str]]:
    """Strongly connected components of the import graph that span more than one package."""
    graph: dict[str, set[str]] = {}
    for importer, imported in edges:
        graph.setdefault(importer, set()).add(imported)
        graph.setdefault(imported, set())
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(node: str) -> None:  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for successor in graph[node]:
            if successor not in index:
                visit(successor)
                low[node] = min(low[node], low[successor])
            elif successor in on_stack:
                low[node] = min(low[node], index[successor])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [c for c in components if len({str(Path(member).parent) for member in c}) > 1]


@pytest.mark.slow
def test_every_module_is_in_one_layer_and_imports_only_below_it():
    edges = import_edges(package_files())
    assert len(edges) > 300
    assert layering_violations(edges) == []


@pytest.mark.slow
def test_no_import_cycle_between_packages():
    assert cycles_across_packages(import_edges(package_files())) == []


def test_no_two_modules_share_a_name():
    names: dict[str, list[str]] = {}
    for path in package_files():
        if path.name != "__init__.py":
            names.setdefault(path.name, []).append(label(path))
    assert {name: paths for name, paths in names.items() if len(paths) > 1} == {}


def test_the_layer_checks_find_what_they_look_for():
    # A statistic importing the store, presentation importing a run, and a cycle across two packages.
    edges = [("magdash/variability/fits.py", "magdash/store/database.py"),
             ("magdash/presentation/chart_style.py", "magdash/runs/cache.py"),
             ("magdash/store/database.py", "magdash/errors.py"),
             ("magdash/runs/cache.py", "magdash/store/metrics.py"), ("magdash/store/metrics.py", "magdash/runs/cache.py")]
    assert layering_violations(edges) == [
        "magdash/variability/fits.py (statistics) imports magdash/store/database.py (store)",
        "magdash/presentation/chart_style.py (presentation) imports magdash/runs/cache.py (runs)",
        "magdash/store/metrics.py (store) imports magdash/runs/cache.py (runs)",
    ]
    assert cycles_across_packages(edges) == [["magdash/runs/cache.py", "magdash/store/metrics.py"]]
    assert module_path("magdash.presentation.report") == "magdash/presentation/report/__init__.py"
    assert module_path("magdash.runs.cache.result_key") == "magdash/runs/cache.py"


def test_every_folder_of_python_modules_is_a_regular_package():
    # setuptools' find_packages (pyproject.toml) installs only folders with an __init__.py: a
    # namespace package would import from a checkout and vanish from an installed wheel.
    folders = {path.parent for path in package_files()}
    assert PACKAGE / "store" in folders
    assert sorted(label(folder) for folder in folders if not (folder / "__init__.py").is_file()) == []


def test_magdash_never_imports_streamlit():
    assert not streamlit_imports(package_files())


def test_statistics_and_presentation_import_no_torch_or_transformers_at_import_time():
    files = [path for path in package_files() if path.relative_to(PACKAGE).parts[0] in STATISTICS_AND_PRESENTATION]
    assert {path.relative_to(PACKAGE).parts[0] for path in files} == set(STATISTICS_AND_PRESENTATION)
    assert not heavy_imports_at_import_time(files)


@pytest.mark.slow
def test_only_the_store_and_the_corpus_counter_import_duckdb():
    files = package_files()
    assert not duckdb_imports(files)
    users = {label(path) for path in files for module, _ in imports(path) if top(module) == "duckdb"}
    assert "magdash/frequency/corpus.py" in users and any(user.startswith("magdash/store/") for user in users)


def test_the_scans_find_what_they_look_for(tmp_path):
    planted = tmp_path / "magdash" / "variability" / "planted.py"
    planted.parent.mkdir(parents=True)
    planted.write_text(textwrap.dedent("""
        from typing import TYPE_CHECKING
        import torch.nn
        from streamlit import session_state
        import duckdb
        if TYPE_CHECKING:
            import transformers
        def lazy():
            import transformers
    """), encoding="utf-8")
    assert imports(planted) == [
        ("typing", True), ("torch.nn", True), ("streamlit", True), ("duckdb", True), ("transformers", False),
    ]
    assert heavy_imports_at_import_time([planted], tmp_path) == ["magdash/variability/planted.py: torch.nn"]
    assert streamlit_imports([planted], tmp_path) == ["magdash/variability/planted.py: streamlit"]
    assert duckdb_imports([planted], tmp_path) == ["magdash/variability/planted.py: duckdb"]


BROWSE = """
import json, sys
from pathlib import Path
from streamlit.testing.v1 import AppTest
from magdash import dashboard

loaded_before = sorted(name for name in {heavy!r} if name in sys.modules)
visited = []
at = AppTest.from_file({app!r}, default_timeout=300)
at.query_params["boot"] = "0"
at.run()
for page in dashboard.PAGES:
    at.switch_page(page.file).run()
    if at.exception:
        sys.exit(f"{{page.file}}: {{[e.message for e in at.exception]}}")
    visited.append((page.file, len(at.get("vega_lite_chart"))))
print(json.dumps({{"before": loaded_before, "visited": visited,
                   "loaded": sorted(name for name in {heavy!r} if name in sys.modules)}}))
"""


@pytest.mark.slow
def test_browsing_a_store_loads_neither_torch_nor_transformers(tmp_path):
    from magdash import dashboard
    from magdash.frequency import read_counts_csv
    from magdash.runs.frequency_runs import save_source
    from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES
    from magdash.store import Store

    store = Store(tmp_path / "browse.duckdb")
    rng = np.random.default_rng(5)
    shape = (len(PAPER_MAGNITUDES), len(PAPER_CARRIERS), 5, 16)
    for name in ("imported", "imported@random"):
        store.import_arrays(name, rng.normal(size=shape).astype(np.float32), PAPER_MAGNITUDES, carriers=PAPER_CARRIERS)
    counts = "number,count\n" + "\n".join(f"{n},{2000 // n}" for n in PAPER_MAGNITUDES)
    save_source(store, read_counts_csv(counts.encode(), name="counts"))
    script = BROWSE.format(heavy=HEAVY, app=str(APP))
    child = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=900,
        env={**os.environ, "MAGDASH_STORE": str(store.path)},
    )
    assert child.returncode == 0, child.stderr[-3000:]
    report = json.loads(child.stdout.strip().splitlines()[-1])
    pages = dict(report["visited"])
    assert set(pages) == {page.file for page in dashboard.PAGES}
    assert pages["pages/scaling.py"] > 0 and pages["pages/depth.py"] > 0, pages  # the pages really drew
    assert report["before"] == [] and report["loaded"] == []
