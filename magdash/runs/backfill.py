"""The metric rows of every cached result that has none: results cached before their tables
existed (a migrated store), written at once (``python -m magdash backfill``) rather than when each
is next read (:func:`magdash.runs.cache.lookup`)."""

from __future__ import annotations

from magdash.runs.cache import CachedKind, backfill
from magdash.runs.kinds import ANALYSIS_KINDS

RESULT_KINDS: dict[str, CachedKind] = ANALYSIS_KINDS.backfilled()
"""The kinds whose cached payloads hold everything their metric rows need (a backfill writes
theirs: :attr:`magdash.runs.kinds.AnalysisKind.backfill`); a design's rows need the model it was
calibrated on, phase diagnostics their parameters, so those get rows when they are next computed."""


def backfill_store(store) -> dict[str, int]:
    """Write the metric rows of every cached result that has none: how many results got rows, per kind.

    Args:
        store: the :class:`~magdash.store.Store` to fill.
    """
    return backfill(store, RESULT_KINDS)
