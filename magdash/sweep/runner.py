"""Running a plan: every cell's tasks in order, in-process or on Ray, resumable, failures kept apart.

For each cell the driver walks the plan's tasks in order. A task whose work is already in the
store is skipped, so a sweep run again carries on where it stopped. A task that fails is
recorded with its one-line message, the rest of its cell is not run (it would need the failed
task's work) and every other cell goes on. In-process every task runs here, one after the
other. With a Ray backend a task that needs the model runs as a Ray task with the model's
resources, many cells at once, while the driver registers each finished job and runs the
cheap driver-side tasks (analyses of stored vectors) of its cell.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from magdash.errors import MagdashError, PlanError
from magdash.params import ProgressCallback
from magdash.stimuli import PAPER_SET_NAME, StimulusSet, paper_stimuli
from magdash.store import Store
from magdash.sweep.plan import Cell, SweepPlan, read_plan
from magdash.sweep.sweep_params import SweepParams
from magdash.sweep.tasks import TASK_KINDS, TaskContext, TaskKind, failure_message

log = logging.getLogger(__name__)


STATUSES = ("done", "skipped", "failed", "not run")
"""done: ran now; skipped: already in the store; failed: raised (message kept); not run: an
earlier task of its cell failed."""


@dataclass(frozen=True)
class TaskOutcome:
    """What became of one task of one cell.

    Attributes:
        kind: the task's kind (``extract``, ``analyze``, ...).
        cell: the cell it ran on.
        status: one of :data:`STATUSES`.
        seconds: how long it took.
        detail: what it did, or why it failed.
    """
    kind: str
    cell: Cell
    status: str
    seconds: float = 0.0
    detail: str = ""

    @property
    def line(self) -> str:
        """One line naming the task and what happened (a failure's message)."""
        return f"{self.kind} {self.cell.label}: {self.detail}"


@dataclass(frozen=True)
class SweepSummary:
    """Every task's outcome, in the plan's order.

    Attributes:
        outcomes: one per task of every cell.
    """
    outcomes: tuple[TaskOutcome, ...]

    @property
    def failed(self) -> list[TaskOutcome]:
        return [outcome for outcome in self.outcomes if outcome.status == "failed"]

    def counts(self) -> dict[str, int]:
        """How many tasks ended in each status."""
        return {status: sum(o.status == status for o in self.outcomes) for status in STATUSES}

    def frame(self) -> pd.DataFrame:
        """One row per task, in the plan's order."""
        return pd.DataFrame(
            [
                {
                    "task": o.kind, "model": o.cell.store_name, "stimuli": o.cell.stimuli, "dtype": o.cell.dtype,
                    "position": o.cell.position, "status": o.status, "seconds": round(o.seconds, 2),
                    "detail": o.detail,
                }
                for o in self.outcomes
            ],
            columns=["task", "model", "stimuli", "dtype", "position", "status", "seconds", "detail"],
        )


def load_plan(path) -> SweepPlan:
    """Read and check a plan file against the registered task kinds (:mod:`magdash.sweep.tasks`).

    Args:
        path: the plan file (TOML).
    """
    return read_plan(path, TASK_KINDS)


def stimulus_sets(plan: SweepPlan, store: Store) -> dict[str, StimulusSet]:
    """Each of the plan's sets, registered in the store; a refused or unknown one is a PlanError.

    Args:
        plan: the plan.
        store: the store the sets are registered in.
    """
    sets = {}
    for entry in plan.stimuli:
        try:
            if entry.stimulus_set is not None:
                stimuli = entry.stimulus_set
            elif entry.name == PAPER_SET_NAME:
                stimuli = paper_stimuli()
            elif entry.name in store.stimulus_set_names():
                stimuli = store.stimulus_set(entry.name)
            else:
                raise PlanError(
                    f"no stored stimulus set {entry.name!r}: give carriers and/or magnitudes to define it"
                )
            store.register_stimulus_set(stimuli)
        except PlanError:
            raise
        except MagdashError as error:
            raise PlanError(f"stimuli {entry.name!r}: {error}") from None
        sets[entry.name] = stimuli
    return sets


class _CellRun:
    """Where one cell stands: its context, the tasks still to go, and its outcomes so far."""

    def __init__(self, context: TaskContext, kinds: list[TaskKind]):
        self.context = context
        self.todo = list(kinds)
        self.outcomes: list[TaskOutcome] = []
        self.started = 0.0

    def record(self, kind: TaskKind, status: str, detail: str = "") -> None:
        seconds = time.perf_counter() - self.started if status in ("done", "failed") else 0.0
        self.outcomes.append(TaskOutcome(kind.name, self.context.cell, status, seconds, detail))
        if status == "failed":
            for later in self.todo:
                self.outcomes.append(TaskOutcome(later.name, self.context.cell, "not run", 0.0,
                                                 f"{kind.name} failed"))
            self.todo.clear()


def run_sweep(
    plan: SweepPlan,
    store: Store,
    params: SweepParams | None = None,
    *,
    progress: ProgressCallback | None = None,
    worker_progress: Callable[[str, int, int], None] | None = None,
) -> SweepSummary:
    """Run every task of ``plan`` against ``store``; the summary lists each task's outcome.

    ``progress(done, total)`` counts tasks. ``worker_progress(label, done, total)`` is called in
    the worker after each batch of a job's sentences (in-process: not called).

    Args:
        plan: the plan (:func:`load_plan`).
        store: the store every task reads and writes.
        params: how the sweep runs: in-process or on Ray, and the retries.
        progress: called as ``progress(done, total)`` tasks.
        worker_progress: called in a Ray worker as ``worker_progress(label, done, total)`` after each batch of a job's
            sentences.
    """
    params = params or SweepParams()
    sets = stimulus_sets(plan, store)
    kinds = [TASK_KINDS[name] for name in plan.tasks]
    runs = [_CellRun(TaskContext(store, plan, cell, sets[cell.stimuli]), kinds) for cell in plan.cells()]
    total = len(runs) * len(kinds)
    backend = None
    if params.ray is not None:
        from magdash.sweep.ray_backend import RayBackend

        backend = RayBackend(params.ray, params.retries, worker_progress)
    finished = 0

    def tick() -> None:
        nonlocal finished
        finished = sum(len(run.outcomes) for run in runs)
        if progress:
            progress(finished, total)

    tick()
    try:
        pending: dict[object, _CellRun] = {}
        for run in runs:
            _advance(run, backend, pending, tick)
        while pending and backend is not None:  # only a backend's jobs are pending
            handle, output, error = backend.wait(list(pending))
            run = pending.pop(handle)
            kind = run.todo.pop(0)
            if error is not None:
                run.record(kind, "failed", error)
            else:
                try:
                    run.record(kind, "done", kind.register(run.context, output))  # pyright: ignore[reportOptionalCall] - kinds sent to a worker have register
                except Exception as failure:  # noqa: BLE001 - one task's failure must not stop the sweep
                    run.record(kind, "failed", failure_message(failure))
            tick()
            _advance(run, backend, pending, tick)
    finally:
        if backend is not None:
            backend.close()
    outcomes = tuple(outcome for run in runs for outcome in run.outcomes)
    return SweepSummary(outcomes)


def _advance(run: _CellRun, backend, pending: dict, tick: Callable[[], None]) -> None:
    """Run the cell's next tasks here until one goes to a worker or none is left."""
    while run.todo:
        kind = run.todo[0]
        run.started = time.perf_counter()
        try:
            if kind.is_done(run.context):
                run.todo.pop(0)
                run.record(kind, "skipped", "already in the store")
                tick()
                continue
            if backend is not None and kind.make_job is not None and (job := kind.make_job(run.context)) is not None:
                pending[backend.submit(kind, job, run.context.cell)] = run
                return
            detail = kind.run(run.context)
        except Exception as failure:  # noqa: BLE001 - one task's failure must not stop the sweep
            run.todo.pop(0)
            log.info("%s %s failed", kind.name, run.context.cell.label, exc_info=True)
            run.record(kind, "failed", failure_message(failure))
        else:
            run.todo.pop(0)
            run.record(kind, "done", detail)
        tick()
