"""What a sweep can run on a cell: a registry of task kinds.

Each :class:`TaskKind` says when its work is already in the store (so a resumed sweep skips
it) and how to run it in-process. A kind whose work needs the model (``extract``) also says
how to cut it into a job a worker runs without the store (:mod:`magdash.sweep.worker`) and how
the driver registers what the worker returns; the Ray backend uses those, the in-process
runner the plain ``run``. Every analysis kind that declares a sweep task
(:data:`magdash.runs.kinds.ANALYSIS_KINDS`) is a task kind here (:func:`analysis_task`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from magdash.errors import MagdashError
from magdash.runs.kinds import ANALYSIS_KINDS, AnalysisKind
from magdash.stimuli import StimulusSet
from magdash.store import Store
from magdash.sweep.plan import Cell, SweepPlan


@dataclass(frozen=True)
class TaskContext:
    """A task's cell with everything it needs from the driver's side."""

    store: Store
    plan: SweepPlan
    cell: Cell
    stimuli: StimulusSet

    @cached_property
    def model_id(self) -> str:
        """The cell's model identity, fingerprinted once (it hashes up to 512 MB of weights)."""
        from magdash.sweep.worker import model_identity

        return model_identity(self.cell, self.plan.model_cache)


@dataclass(frozen=True)
class TaskKind:
    """One kind of task. ``run`` returns a short description of what it did (for the summary)."""

    name: str
    is_done: Callable[[TaskContext], bool]
    run: Callable[[TaskContext], str]
    # For work that needs the model: the job a worker runs (None: nothing left to do), the
    # worker's function, and the driver's registration of its output.
    make_job: Callable[[TaskContext], object | None] | None = None
    work: Callable[..., object] | None = None
    register: Callable[[TaskContext, object], str] | None = None

    @property
    def in_worker(self) -> bool:
        return self.make_job is not None


TASK_KINDS: dict[str, TaskKind] = {}
"""Every known kind by name, in the order a cell's tasks are listed in a plan's ``tasks``."""


def register_task_kind(kind: TaskKind) -> None:
    """Add ``kind`` to :data:`TASK_KINDS`; a name registered already is refused.

    Args:
        kind: the task kind.
    """
    if kind.name in TASK_KINDS:
        raise ValueError(f"a sweep task kind named {kind.name!r} is registered already: give the new one another name")
    TASK_KINDS[kind.name] = kind


# -- extract --------------------------------------------------------------------------------


def _extract_done(context: TaskContext) -> bool:
    cell = context.cell
    model_id = context.model_id
    store = context.store
    if cell.store_name not in store.model_names() or store.model_record(cell.store_name).model_id != model_id:
        return False
    untokenized, without_splitting = store.missing_token_facts(model_id, context.stimuli.name)
    # Vectors stored before the token facts were recorded are extracted "again": the tokenizer alone
    # records the facts (magdash.extraction.extract), no forward pass runs.
    return not store.missing_item_keys(model_id, context.stimuli.name) and not untokenized and not without_splitting


def _extract_run(context: TaskContext) -> str:
    from magdash.extraction import extract

    cell, plan = context.cell, context.plan
    result = extract(
        cell.model.spec, context.stimuli, context.store, name=cell.store_name, dtype=cell.dtype,
        device=plan.device, device_map=cell.model.device_map, position=cell.position,
        batch_size=plan.batch_size, padding_side=plan.padding_side,
        trust_remote_code=cell.model.trust_remote_code, allow_pickle=cell.model.allow_pickle,
        model_cache=plan.model_cache,
    )
    return f"{result.extracted} sentences"


def _extract_job(context: TaskContext):
    from magdash.sweep.worker import extract_job

    return extract_job(context.store, context.plan, context.cell, context.stimuli, context.model_id)


def _extract_work(job, on_batch=None):
    from magdash.sweep.worker import run_extract_job

    return run_extract_job(job, on_batch)


def _extract_register(context: TaskContext, output) -> str:
    from magdash.sweep.worker import register_output

    return f"{register_output(context.store, output)} sentences"


register_task_kind(TaskKind(
    "extract", _extract_done, _extract_run, make_job=_extract_job, work=_extract_work, register=_extract_register,
))


# -- the analyses ---------------------------------------------------------------------------


def _stored_complete(context: TaskContext) -> bool:
    store, name = context.store, context.cell.store_name
    return name in store.model_names() and context.stimuli.name in store.stimulus_sets_for(name)


def analysis_task(kind: AnalysisKind) -> TaskKind:
    """The sweep task of an analysis kind that declares one (:attr:`AnalysisKind.task
    <magdash.runs.kinds.AnalysisKind.task>`): done on a cell when the cell's vectors are stored and
    every result the run caches is cached; run with the plan's table of the task's name.

    Args:
        kind: the analysis kind.
    """
    task = kind.task
    if task is None:
        raise ValueError(f"analysis kind {kind.name!r} declares no sweep task")

    def is_done(context: TaskContext) -> bool:
        if task.done is not None:
            return task.done(context)
        if not _stored_complete(context):
            return False
        store = context.store
        keys = task.cache_keys(store, context.cell.store_name, context.stimuli.name, context.plan.params_for(task.name))
        return all(store.get_result(key) is not None for key in keys)

    def run(context: TaskContext) -> str:
        if task.run_cell is not None:
            return task.describe(task.run_cell(context))
        params = context.plan.params_for(task.name)
        return task.describe(kind.run(context.store, context.cell.store_name, context.stimuli.name, params))

    return TaskKind(task.name, is_done, run)


for _kind in ANALYSIS_KINDS.tasks():
    register_task_kind(analysis_task(_kind))
del _kind


def failure_message(error: BaseException) -> str:
    """A failed task's one line: a user error's message, or the type and first line of a bug."""
    if isinstance(error, MagdashError):
        return str(error)
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
