"""The architecture's boundaries, enforced: what each part of magdash may import.

- ``magdash/`` never imports streamlit (the Streamlit side is ``pages/ui``);
- statistics (variability, frequency, phase) and presentation modules never import torch or
  transformers when they are imported (a lazy import inside a function is how the few that
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
STATISTICS_AND_PRESENTATION = ("variability", "frequency", "phase", "controls", "presentation")
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
from magdash import dashboard as db

loaded_before = sorted(name for name in {heavy!r} if name in sys.modules)
visited = []
at = AppTest.from_file({app!r}, default_timeout=300)
at.query_params["boot"] = "0"
at.run()
for page in db.PAGES:
    at.switch_page(page.file).run()
    if at.exception:
        sys.exit(f"{{page.file}}: {{[e.message for e in at.exception]}}")
    visited.append((page.file, len(at.get("vega_lite_chart"))))
print(json.dumps({{"before": loaded_before, "visited": visited,
                   "loaded": sorted(name for name in {heavy!r} if name in sys.modules)}}))
"""


@pytest.mark.slow
def test_browsing_a_store_loads_neither_torch_nor_transformers(tmp_path):
    from magdash import dashboard as db
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
    assert set(pages) == {page.file for page in db.PAGES}
    assert pages["pages/scaling.py"] > 0 and pages["pages/depth.py"] > 0, pages  # the pages really drew
    assert report["before"] == [] and report["loaded"] == []
