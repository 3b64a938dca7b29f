"""``magdash/`` type-checks clean: pyright (requirements-dev.txt) over ``pyrightconfig.json``
(basic mode) reports no error.

A gap in a third-party library's annotations is ignored on its line with the rule and the reason
(``# pyright: ignore[rule] - why``), never by turning a rule off for the package or a file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.slow, pytest.mark.long, pytest.mark.timeout(900)]


def _pyright() -> str:
    """The pyright of the interpreter running the tests (its venv's), else the one on PATH."""
    beside = Path(sys.executable).with_name("pyright")
    found = str(beside) if beside.exists() else shutil.which("pyright")
    assert found is not None, "pyright is not installed: pip install -r requirements-dev.txt"
    return found


def test_magdash_type_checks_without_errors():
    completed = subprocess.run(
        [_pyright(), "--outputjson", "--project", str(ROOT / "pyrightconfig.json")],
        cwd=ROOT, capture_output=True, text=True, timeout=840,
    )
    try:
        report = json.loads(completed.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"pyright gave no report (exit {completed.returncode}):\n{completed.stdout}\n{completed.stderr}")
    errors = [item for item in report["generalDiagnostics"] if item["severity"] == "error"]
    listing = "\n".join(
        f"{os.path.relpath(item['file'], ROOT)}:{item['range']['start']['line'] + 1}: "
        f"{item['message']} ({item.get('rule', '')})"
        for item in errors
    )
    assert report["summary"]["filesAnalyzed"] > 100  # the whole package was read, not an empty include
    assert not errors, f"pyright found {len(errors)} errors:\n{listing}"
