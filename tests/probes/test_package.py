"""The probes package is statistics: arrays in, results out. At import time it loads neither
torch, transformers, streamlit, the store nor scikit-learn (imported at the first fit, so that
importing ProbeParams for the CLI stays fast)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support import ROOT
from tests.test_boundaries import imports

FORBIDDEN = ("torch", "transformers", "streamlit", "duckdb", "sklearn", "threadpoolctl")


def test_no_heavy_or_store_imports_at_import_time():
    files = sorted((ROOT / "magdash" / "probes").glob("*.py"))
    assert len(files) >= 8
    found = [f"{path.name}: {module}" for path in files for module, at_import in imports(path)
             if at_import and (module.split(".")[0] in FORBIDDEN or module.startswith("magdash.store"))]
    assert found == []


@pytest.mark.slow
def test_importing_the_params_and_result_loads_no_sklearn():
    code = "import sys, magdash.probes.probe_params, magdash.probes.result; print(any(m.split('.')[0] in ('sklearn', 'torch') for m in sys.modules))"
    output = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert output.stdout.strip() == "False"
