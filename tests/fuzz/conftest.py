"""Every test under tests/fuzz carries the ``fuzz`` marker (``pytest -m fuzz tests/fuzz``); the
suite stays in the default run and, its tests being fast, in the fast loop."""

from __future__ import annotations

from pathlib import Path

import pytest

FUZZ_FOLDER = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the fuzz suite's tests (the hook sees the whole session's items: only this folder's)."""
    for item in items:
        if Path(item.path).resolve().is_relative_to(FUZZ_FOLDER):
            item.add_marker(pytest.mark.fuzz)
