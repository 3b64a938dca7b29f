"""What a sweep can run on a cell: a registry of task kinds.

Each :class:`TaskKind` says when its work is already in the store (so a resumed sweep skips
it) and how to run it in-process. A kind whose work needs the model (``extract``) also says
how to cut it into a job a worker runs without the store (:mod:`magdash.sweep.worker`) and how
the driver registers what the worker returns; the Ray backend uses those, the in-process
runner the plain ``run``. A new analysis joins a sweep by calling :func:`register_task_kind`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from magdash.errors import MagdashError
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


# -- analyze --------------------------------------------------------------------------------


def _stored_complete(context: TaskContext) -> bool:
    store, name = context.store, context.cell.store_name
    return name in store.model_names() and context.stimuli.name in store.stimulus_sets_for(name)


def _results_cached(context: TaskContext, key_of: Callable[[Store, str, str], list[str]]) -> bool:
    """The cell's vectors are stored and every result ``key_of(store, name, stimuli)`` names is cached."""
    if not _stored_complete(context):
        return False
    store = context.store
    return all(store.get_result(key) is not None for key in key_of(store, context.cell.store_name, context.stimuli.name))


def _analyze_done(context: TaskContext) -> bool:
    from magdash.runs.analysis_runs import analysis_key

    return _results_cached(context, lambda *cell: [analysis_key(*cell, context.plan.analysis)])


def _analyze_run(context: TaskContext) -> str:
    from magdash.formatting import format_number
    from magdash.runs.analysis_runs import analyze

    result = analyze(context.store, context.cell.store_name, context.stimuli.name, context.plan.analysis)
    measure = result.params.measures[0]
    return f"mean core alpha ({measure}) {format_number(result.hypotheses[measure].mean_alpha, '+.3f')}"


register_task_kind(TaskKind("analyze", _analyze_done, _analyze_run))


# -- depth ----------------------------------------------------------------------------------


def _depth_done(context: TaskContext) -> bool:
    from magdash.runs.depth_runs import number_token_key

    return _results_cached(context, lambda *cell: [number_token_key(*cell, context.plan.depth)])


def _depth_run(context: TaskContext) -> str:
    from magdash.formatting import format_number
    from magdash.runs.depth_runs import phase_from_store

    result = phase_from_store(context.store, context.cell.store_name, context.stimuli.name, context.plan.depth)
    return f"gamma_c {format_number(result.gamma_c, '.3f')}"


register_task_kind(TaskKind("depth", _depth_done, _depth_run))


# -- controls -------------------------------------------------------------------------------


def _controls_done(context: TaskContext) -> bool:
    from magdash.runs.analysis_runs import analysis_key
    from magdash.runs.controls_runs import controls_key

    params = context.plan.controls_params
    return _results_cached(context, lambda *cell: [analysis_key(*cell, params.analysis), controls_key(*cell, params)])


def _controls_run(context: TaskContext) -> str:
    from magdash.runs.controls_runs import run_controls

    result = run_controls(context.store, context.cell.store_name, context.stimuli.name, context.plan.controls_params)
    flagged = sorted({v.control for measure in result.measures for v in result.verdicts(measure) if v.problem})
    return f"problems: {', '.join(flagged)}" if flagged else "no control flags a problem"


register_task_kind(TaskKind("controls", _controls_done, _controls_run))


# -- probe ----------------------------------------------------------------------------------


def _probe_done(context: TaskContext) -> bool:
    from magdash.runs.probe_runs import probe_key

    return _results_cached(context, lambda *cell: [probe_key(*cell, context.plan.probe)])


def _probe_run(context: TaskContext) -> str:
    from magdash.formatting import format_number
    from magdash.runs.probe_runs import probe

    result = probe(context.store, context.cell.store_name, context.stimuli.name, context.plan.probe)
    target = result.params.targets[0]
    scores = result.score_table("magnitude", target, "real").dropna(subset=["r2"])
    if scores.empty:
        return "no layer probed (Inf/NaN vectors)"
    best = scores.loc[scores["r2"].idxmax()]
    return f"best held-out-magnitude R² ({target}) {format_number(best['r2'], '.3f')} at layer {int(best['layer'])}"


register_task_kind(TaskKind("probe", _probe_done, _probe_run))


def failure_message(error: BaseException) -> str:
    """A failed task's one line: a user error's message, or the type and first line of a bug."""
    if isinstance(error, MagdashError):
        return str(error)
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
