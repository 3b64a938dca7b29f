"""How many hostile inputs each fuzz test tries.

The default run tries every test's ``default`` count (the fuzz suite's total is
checked in ``tests/fuzz/test_budget.py``); ``MAGDASH_FUZZ_SCALE`` multiplies it
for a longer local run (``MAGDASH_FUZZ_SCALE=20 pytest -m fuzz``).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

DEFAULT_TOTAL_AT_LEAST = 5_000


def scale() -> int:
    """The multiplier a local run asks for (1 unless ``MAGDASH_FUZZ_SCALE`` says more)."""
    raw = os.environ.get("MAGDASH_FUZZ_SCALE", "1")
    return max(1, int(raw)) if raw.isdigit() else 1


def fuzz_settings(default: int) -> settings:
    """Hypothesis settings for a fuzz test that tries ``default`` inputs in the default run."""
    return settings(
        max_examples=default * scale(),
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
    )
