"""How many bad-input cases each entry point was given in this test run.

Property tests call :func:`record` once per generated case; ``conftest.py`` prints the totals at
the end of the run, so the number of cases tried is part of every test report.
"""

from __future__ import annotations

from collections import Counter

CASES: Counter[str] = Counter()


def record(entry_point: str, n: int = 1) -> None:
    """Count ``n`` bad-input cases tried against ``entry_point`` (e.g. "cli extract --carriers")."""
    CASES[entry_point] += n
