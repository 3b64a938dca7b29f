"""The example notebook (docs/examples/quickstart.ipynb) runs from top to bottom in a fresh kernel:
it extracts the built-in minilm and its control into a temporary store, analyses, draws, compares
and analyses the same vectors as an array; nothing is written into the repository.

``python -m tests.api.test_notebook`` executes it and writes its outputs back into the file (the
rendered docs show them), without the kernel's stderr noise or timings.
"""

from __future__ import annotations

import os
import sys

import pytest

from tests.support import ROOT, require_builtin

NOTEBOOK = ROOT / "docs" / "examples" / "quickstart.ipynb"


def execute(path=NOTEBOOK, cwd=ROOT):
    """The notebook executed in a fresh python3 kernel started in ``cwd``, with this checkout's magdash."""
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    environment = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    previous = {name: os.environ.get(name) for name in environment}
    os.environ.update(environment)  # the kernel inherits this process's environment
    try:
        NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(cwd)}},
                       record_timing=False).execute()
    finally:
        for name, value in previous.items():
            os.environ.pop(name) if value is None else os.environ.__setitem__(name, value)
    return notebook


def outputs(notebook) -> list[dict]:
    return [output for cell in notebook.cells if cell.cell_type == "code" for output in cell.outputs]


@pytest.mark.slow
def test_the_example_notebook_runs_and_shows_results_and_charts(tmp_path):
    require_builtin("minilm")
    cache = ROOT / "cache"
    before = sorted(cache.rglob("*")) if cache.exists() else []
    notebook = execute(cwd=tmp_path)
    shown = outputs(notebook)
    assert not [o for o in shown if o.output_type == "error"]
    html = [o["data"]["text/html"] for o in shown if "text/html" in o.get("data", {})]
    assert any("Scalar variability of minilm" in page and "core band: 3-5" in page for page in html)
    assert any("minilm minus minilm@random" in page for page in html)
    assert sum("vegaEmbed" in page for page in html) == 4  # profile, scaling, RSA, comparison
    results = [o["data"]["text/plain"] for o in shown if o.output_type == "execute_result"]
    assert results[-2].endswith("True)") and results[-1] == "True"  # the array gives the store's numbers
    assert (sorted(cache.rglob("*")) if cache.exists() else []) == before
    assert list(tmp_path.iterdir()) == []  # the store went to a temporary folder of its own


if __name__ == "__main__":
    import nbformat

    executed = execute()
    for cell in executed.cells:
        if cell.cell_type == "code":
            cell.outputs = [output for output in cell.outputs if output.output_type != "stream"]
            cell.metadata.pop("execution", None)
    nbformat.write(executed, NOTEBOOK)
    sys.exit(0)
