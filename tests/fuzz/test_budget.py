"""The fuzz suite's budget: the default run tries at least 5,000 generated hostile inputs.

The count is read from the tests themselves: every property-based test of ``tests/fuzz`` (a
``@given`` function, or a stateful machine's ``TestCase``) with its Hypothesis ``max_examples``,
once per parametrized case, divided by ``MAGDASH_FUZZ_SCALE`` (the default run's budget,
whatever scale this run was asked for).
"""

from __future__ import annotations

import importlib
import inspect
import math
from pathlib import Path
from types import ModuleType

from hypothesis import settings

from tests.fuzz.budget import DEFAULT_TOTAL_AT_LEAST, scale

FUZZ_FOLDER = Path(__file__).resolve().parent


def fuzz_modules() -> list[ModuleType]:
    """The suite's test modules (all of tests/fuzz but this one)."""
    return [importlib.import_module(f"tests.fuzz.{path.stem}") for path in sorted(FUZZ_FOLDER.glob("test_*.py"))
            if path.stem != Path(__file__).stem]


def _settings_of(test: object) -> settings | None:
    """The Hypothesis settings a property-based test runs under (None: not property-based)."""
    if inspect.isclass(test):
        found = getattr(test, "settings", None)
        return found if isinstance(found, settings) else None
    if getattr(test, "is_hypothesis_test", False):
        return getattr(test, "_hypothesis_internal_use_settings", None) or settings.default
    return None


def _cases(test: object) -> int:
    """How many times pytest runs ``test``: the product of its parametrizations' sizes."""
    marks = getattr(test, "pytestmark", [])
    return math.prod(len(mark.args[1]) for mark in marks if mark.name == "parametrize")


def default_budgets() -> dict[str, int]:
    """Each property-based fuzz test's inputs in the default run, by ``module::test``."""
    budgets = {}
    for module in fuzz_modules():
        for name, test in vars(module).items():
            if not name.startswith(("test_", "Test")) or (found := _settings_of(test)) is None:
                continue
            budgets[f"{module.__name__}::{name}"] = found.max_examples // scale() * _cases(test)
    return budgets


def test_the_budgets_are_read_from_the_tests_themselves():
    budgets = default_budgets()
    assert budgets["tests.fuzz.test_fuzz_served::test_url_parameters_fit_their_widgets_or_are_noted"] == 700
    assert all(budget > 0 for budget in budgets.values()), budgets


def test_the_default_run_tries_at_least_5000_hostile_inputs():
    budgets = default_budgets()
    total = sum(budgets.values())
    assert total >= DEFAULT_TOTAL_AT_LEAST, f"{total:,} inputs in the default run: {budgets}"
