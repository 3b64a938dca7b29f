"""Sweeps: one plan of models x stimulus sets x dtypes x token positions, run in-process or on Ray.

- :mod:`~magdash.sweep.plan`: the plan file (TOML) and its cells;
- :mod:`~magdash.sweep.tasks`: the registry of task kinds (extract, analyze, phase, controls);
- :mod:`~magdash.sweep.worker`: an extraction as a store-free job and the driver's registration;
- :mod:`~magdash.sweep.runner`: :func:`run_sweep`, :class:`SweepParams`, the summary;
- :mod:`~magdash.sweep.ray_backend`: the Ray backend (Ray is imported there only).
"""

from magdash.sweep.plan import Cell, ModelEntry, StimuliEntry, SweepPlan, load_plan, parse_plan
from magdash.sweep.runner import SweepParams, SweepSummary, TaskOutcome, run_sweep
from magdash.sweep.tasks import TASK_KINDS, TaskContext, TaskKind, register_task_kind

__all__ = [
    "TASK_KINDS", "Cell", "ModelEntry", "StimuliEntry", "SweepParams", "SweepPlan", "SweepSummary", "TaskContext",
    "TaskKind", "TaskOutcome", "load_plan", "parse_plan", "register_task_kind", "run_sweep",
]
