"""Background jobs of the dashboard: extractions and the first-run protocol.

A :class:`Job` runs its work in a daemon thread and reports steps and progress; the page polls
:meth:`Job.snapshot` to draw a progress bar with a count and an ETA (:class:`EtaClock`), and a
Cancel button (its owner's only) sets the stop flag that :func:`magdash.extraction.extract` polls
between batches, so a cancelled run keeps what it stored and resumes where it stopped. Errors become messages that
say what to do (:func:`explain_error`); the page never sees a traceback. A
:class:`JobRegistry` allows one running job per store, since DuckDB has one writer at a time, and
knows the session that started each: on a dashboard served to a lab, others see its progress but
only its owner may cancel it, and the owner is told how it ended.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from magdash.errors import MagdashError
from magdash.extract_params import DEFAULT_BATCH_SIZE
from magdash.params import DEFAULT_DEVICE, DEFAULT_DTYPE
from magdash.sources.builtin import is_installed
from magdash.stimuli import DEFAULT_POSITION, StimulusSet, paper_stimuli
from magdash.store import Store
from magdash.variability.analysis_params import AnalysisParams

log = logging.getLogger(__name__)


# -- background jobs ---------------------------------------------------------------------


@dataclass(frozen=True)
class JobSnapshot:
    """A consistent copy of a job's state for drawing a progress bar."""

    label: str
    state: str  # running | done | cancelled | failed
    step: str
    step_index: int
    n_steps: int
    done: int
    total: int
    elapsed_s: float
    eta_s: float | None
    message: str
    result: Any = None
    cancelling: bool = False
    """Cancel was asked and the job has not reached its next checkpoint yet."""

    @property
    def finished(self) -> bool:
        return self.state != "running"

    @property
    def fraction(self) -> float:
        """Overall progress in [0, 1]: finished steps plus the current one's share."""
        if self.state == "done":
            return 1.0
        within = self.done / self.total if self.total else 0.0
        return min(1.0, (self.step_index + within) / max(self.n_steps, 1))

    def progress_text(self) -> str:
        """"Step 1/3 · extracting minilm: 40/130 · 3 s elapsed · about 7 s left in this step".

        The estimate is the current step's (the rate of its reports); when it reaches 0 while
        the work goes on (the last batch stored, its writes and the next step still to come), the
        line says "finishing…", never "about 0 s left".
        """
        parts = []
        if self.n_steps > 1:
            parts.append(f"step {min(self.step_index + 1, self.n_steps)}/{self.n_steps}")
        if self.step:
            parts.append(f"{self.step}: {self.done}/{self.total}" if self.total else self.step)
        parts.append(f"{format_seconds(self.elapsed_s)} elapsed")
        if self.state == "running":
            more_steps = self.step_index + 1 < self.n_steps
            if (self.total and self.done >= self.total) or (self.eta_s is not None and self.eta_s < 0.5):
                parts.append("finishing this step…" if more_steps else "finishing…")
            elif self.eta_s is not None:
                parts.append(f"about {format_seconds(self.eta_s)} left" + (" in this step" if more_steps else ""))
        return " · ".join(parts)

    def moved_on_from(self, earlier: JobSnapshot) -> bool:
        """Whether a step finished since ``earlier`` (the job is at a later step, or ended): the
        store holds what that step wrote (a model's complete extraction, say), so a page drawn
        from ``earlier`` is drawn again and its sidebar shows it.

        Args:
            earlier: a snapshot of the same job, taken when the page was drawn.
        """
        return self.step_index > earlier.step_index or (self.finished and not earlier.finished)


def format_seconds(seconds: float) -> str:
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class EtaClock:
    """Estimates the time left from the rate since the first progress report of a step.

    The first report of a step (what was already stored) sets the baseline, so a resumed run
    is not credited with instant progress.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self._start: tuple[float, int] | None = None

    def reset(self) -> None:
        self._start = None

    def update(self, done: int, total: int) -> float | None:
        now = self._clock()
        if self._start is None or done < self._start[1]:
            self._start = (now, done)
            return None
        started, first_done = self._start
        if done <= first_done or now <= started:
            return None
        rate = (done - first_done) / (now - started)
        return max(0.0, (total - done) / rate)


class JobContext:
    """What a job's work function sees: steps, progress reports and the stop request.

    Without a job (``JobContext()``) every report is dropped and nothing asks to stop, so the
    same work function also runs synchronously (tests, benchmarks).
    """

    def __init__(self, job: Job | None = None):
        self._job = job

    def step(self, name: str, total: int = 0) -> None:
        if self._job is not None:
            self._job._begin_step(name, total)

    def progress(self, done: int, total: int) -> None:
        if self._job is not None:
            self._job._report(done, total)

    def relabel(self, name: str) -> None:
        """Rename the current step (same step, same count): e.g. loading, then extracting."""
        if self._job is not None:
            self._job._relabel(name)

    def should_stop(self) -> bool:
        return self._job is not None and self._job._stop.is_set()


class Job:
    """Runs ``work(context)`` in a daemon thread; the UI polls :meth:`snapshot`.

    A :class:`~magdash.errors.MagdashError` becomes a readable message (with a hint for out of
    memory); anything else is logged with its traceback and reported as an unexpected error, so
    the page never shows a traceback. ``work`` returns ``(result, cancelled)``.
    """

    def __init__(self, label: str, work: Callable[[JobContext], tuple[Any, bool]], *, n_steps: int = 1,
                 clock: Callable[[], float] = time.monotonic):
        self.label = label
        self._work = work
        self._clock = clock
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._eta = EtaClock(clock)
        self._started = clock()
        self._ended: float | None = None
        self._state = "running"
        self._step, self._step_index, self._n_steps = "", -1, n_steps
        self._done = self._total = 0
        self._eta_s: float | None = None
        self._message = ""
        self._result: Any = None
        self._thread = threading.Thread(target=self._run, name=f"magdash-job-{label}", daemon=True)

    def start(self) -> Job:
        self._thread.start()
        return self

    def cancel(self) -> None:
        """Ask the job to stop at its next checkpoint; what it finished stays stored."""
        self._stop.set()

    def wait(self, timeout: float | None = None) -> JobSnapshot:
        self._thread.join(timeout)
        return self.snapshot()

    def _begin_step(self, name: str, total: int) -> None:
        with self._lock:
            self._step_index = min(self._step_index + 1, self._n_steps - 1)
            self._step, self._done, self._total, self._eta_s = name, 0, total, None
            self._eta.reset()

    def _relabel(self, name: str) -> None:
        with self._lock:
            self._step = name

    def _report(self, done: int, total: int) -> None:
        eta = self._eta.update(done, total)
        with self._lock:
            self._done, self._total, self._eta_s = done, total, eta

    def _run(self) -> None:
        state, message, result = "done", "", None
        try:
            result, cancelled = self._work(JobContext(self))
            if cancelled:
                state, message = "cancelled", "cancelled: what was finished is stored; start again to resume"
        except MagdashError as error:
            state, message = "failed", explain_error(error)
        except MemoryError:
            state, message = "failed", explain_error(MemoryError())
        except Exception as error:  # noqa: BLE001 - a page must show a message, never a traceback
            log.exception("job %s failed", self.label)
            state, message = "failed", explain_error(error)
        with self._lock:
            self._state, self._message, self._result = state, message, result
            self._ended = self._clock()

    def snapshot(self) -> JobSnapshot:
        with self._lock:
            end = self._ended if self._ended is not None else self._clock()
            return JobSnapshot(
                label=self.label,
                state=self._state,
                step=self._step,
                step_index=max(self._step_index, 0),
                n_steps=self._n_steps,
                done=self._done,
                total=self._total,
                elapsed_s=end - self._started,
                eta_s=self._eta_s,
                message=self._message,
                result=self._result,
                cancelling=self._stop.is_set() and self._state == "running",
            )


OUT_OF_MEMORY_HINT = "choose a smaller dtype (float16 or bfloat16) or a smaller batch size, then start again"


def explain_error(error: BaseException) -> str:
    """A message for the page: MagdashError text as is, out of memory with what to change."""
    text = str(error).strip() if isinstance(error, MagdashError) else ""
    description = f"{type(error).__name__} {error}".lower()
    if isinstance(error, MemoryError) or "out of memory" in description or "outofmemory" in description:
        return f"{text} — {OUT_OF_MEMORY_HINT}" if text else f"out of memory: {OUT_OF_MEMORY_HINT}"
    if text:
        return text
    detail = str(error).splitlines()[0] if str(error) else "no message"
    return f"unexpected error ({type(error).__name__}: {detail}); see the server log"


def new_owner() -> str:
    """A session's owner token for :class:`JobRegistry`: unguessable, so no other session can
    claim its jobs (a dashboard served to a lab has many sessions in one process)."""
    return secrets.token_urlsafe(16)


class JobRegistry:
    """At most one running job per key (a store path: DuckDB has one writer at a time), with the
    session that started it (its owner token, :func:`new_owner`).

    Every session sees a job's progress; only its owner may cancel it, and a finished job stays
    until its owner has been told how it ended (:meth:`acknowledge`), so another session that
    sees it end first cannot take that notice away.
    """

    def __init__(self) -> None:
        self._jobs: dict[str, tuple[Job, str]] = {}
        self._untold: dict[str, dict[str, Job]] = {}
        """owner -> key -> the job that owner started there and has not been told the end of (it
        outlives its place in ``_jobs`` when another session starts a job on the same store)."""
        self._lock = threading.Lock()

    def get(self, key: str) -> Job | None:
        with self._lock:
            entry = self._jobs.get(key)
        return entry[0] if entry is not None else None

    def is_owner(self, key: str, owner: str) -> bool:
        """Whether the job on ``key`` was started by ``owner``.

        Args:
            key: the store path.
            owner: a session's owner token.
        """
        with self._lock:
            entry = self._jobs.get(key)
        return entry is not None and secrets.compare_digest(entry[1], owner)

    def start(self, key: str, job: Job, *, owner: str) -> Job:
        """Start ``job`` on ``key`` for the session ``owner``, unless a job runs there.

        Args:
            key: the store path.
            job: the job, not started yet.
            owner: the starting session's owner token.

        Raises:
            MagdashError: a job still runs on ``key``.
        """
        with self._lock:
            current = self._jobs.get(key)
            if current is not None and not current[0].snapshot().finished:
                what = ("cancel it first" if secrets.compare_digest(current[1], owner)
                        else "it was started in another session, which alone can cancel it")
                raise MagdashError(f"{current[0].label!r} is still running on this store: wait for it or {what}")
            self._jobs[key] = (job, owner)
            self._untold.setdefault(owner, {})[key] = job
        return job.start()

    def cancel(self, key: str, owner: str) -> None:
        """Ask the job on ``key`` to stop, if ``owner`` started it.

        Args:
            key: the store path.
            owner: the asking session's owner token.

        Raises:
            MagdashError: no job on ``key``, or another session's.
        """
        with self._lock:
            entry = self._jobs.get(key)
        if entry is None:
            raise MagdashError("no job runs on this store")
        if not secrets.compare_digest(entry[1], owner):
            raise MagdashError(f"{entry[0].label!r} was started in another session: only that session can cancel it")
        entry[0].cancel()

    def ending(self, key: str, owner: str) -> Job | None:
        """The finished job ``owner`` started on ``key`` and has not been told the end of (None:
        none), even where another session has started a job there since.

        Args:
            key: the store path.
            owner: the session's owner token.
        """
        with self._lock:
            job = self._untold.get(owner, {}).get(key)
        return job if job is not None and job.snapshot().finished else None

    def acknowledge(self, key: str, owner: str) -> bool:
        """``owner`` has been told how its job on ``key`` ended: forgotten (and the store's entry
        with it, unless another session's job has replaced it). Another session's acknowledgement,
        or one of a running job, changes nothing. Returns whether a job was forgotten.

        Args:
            key: the store path.
            owner: the session's owner token.
        """
        with self._lock:
            job = self._untold.get(owner, {}).get(key)
            if job is None or not job.snapshot().finished:
                return False
            del self._untold[owner][key]
            entry = self._jobs.get(key)
            if entry is not None and entry[0] is job:
                del self._jobs[key]
            return True

    def forget(self, key: str) -> None:
        """Forget the job on ``key`` if it finished, whoever started it (tests, clean-up)."""
        with self._lock:
            entry = self._jobs.get(key)
            if entry is not None and entry[0].snapshot().finished:
                del self._jobs[key]
                self._untold.get(entry[1], {}).pop(key, None)


# -- extraction and the first-run protocol -----------------------------------------------


@dataclass(frozen=True)
class ExtractionRequest:
    """One extraction as chosen on the Extract page."""

    spec: str
    stimuli: StimulusSet
    name: str | None = None
    dtype: str = DEFAULT_DTYPE
    device: str = DEFAULT_DEVICE
    position: str = DEFAULT_POSITION
    batch_size: int = DEFAULT_BATCH_SIZE


def extraction_job(store: Store, request: ExtractionRequest, *more: ExtractionRequest, label: str | None = None) -> Job:
    """A job that extracts ``request`` (and then each of ``more``, one step each) into ``store``
    (resumes, can be cancelled); its result is the last extraction's."""
    from magdash.extraction import extract

    requests = (request, *more)

    def work(context: JobContext) -> tuple[Any, bool]:
        result = None
        for each in requests:
            progress = begin_extraction(context, each.spec, each.stimuli, each.dtype, each.name)
            result = extract(
                each.spec, each.stimuli, store, name=each.name or None, dtype=each.dtype,
                device=each.device, position=each.position, batch_size=each.batch_size,
                progress=progress, should_stop=context.should_stop,
            )
            if result.cancelled:
                return result, True
        return result, False

    return Job(label or f"extract {request.name or request.spec}", work, n_steps=len(requests))


FIRST_RUN = "first run"
FIRST_RUN_PAIRS = (("minilm", "minilm@random"), ("smollm2", "smollm2@random"))
"""The first run's models with their controls: the built-in encoder and the built-in decoder."""


def first_run_pairs() -> tuple[tuple[str, str], ...]:
    """The first run's pairs whose model is installed (smollm2 comes from requirements-models.txt)."""
    return tuple(pair for pair in FIRST_RUN_PAIRS if is_installed(pair[0]))


def first_run_models() -> tuple[str, ...]:
    return tuple(name for pair in first_run_pairs() for name in pair)


def first_run_label() -> str:
    """What the first-run button says it runs: "minilm, smollm2 and their random controls"."""
    names = [pair[0] for pair in first_run_pairs()]
    if len(names) == 1:
        return f"{names[0]} and {names[0]}@random"
    return f"{', '.join(names[:-1])}, {names[-1]} and their random controls"


def first_run_steps() -> int:
    """Extract and analyse every model, then one comparison per pair."""
    return 5 * len(first_run_pairs())


def run_first_protocol(store: Store, params: AnalysisParams, context: JobContext | None = None) -> bool:
    """The paper's protocol on the built-in models and their controls: extract, analyse, compare.

    The built-in decoder (``smollm2``, when installed) runs with the encoder: the paper's
    questions are about decoder LMs. Analyses use ``params`` (the dashboard's), so the pages
    find them in the store's cache. Returns False when it was asked to stop (what was finished
    is stored).
    """
    from magdash.extraction import extract
    from magdash.runs.analysis_runs import analyze, compare

    context = context or JobContext()
    stimuli = paper_stimuli()
    pairs = first_run_pairs()
    models = [name for pair in pairs for name in pair]
    for spec in models:
        progress = begin_extraction(context, spec, stimuli, DEFAULT_DTYPE)
        result = extract(spec, stimuli, store, progress=progress, should_stop=context.should_stop)
        if result.cancelled:
            return False
    for spec in models:
        if context.should_stop():
            return False
        context.step(f"analysing {spec}", 0)
        analyze(store, spec, stimuli.name, params, progress=context.progress)
    for model, control in pairs:
        context.step(f"comparing {model} with its control, measure by measure", len(params.measures))
        compare(store, model, control, stimuli.name, params, progress=context.progress)
    return True


def begin_extraction(context: JobContext, spec: str, stimuli: StimulusSet, dtype: str,
                     name: str | None = None) -> Callable[[int, int], None]:
    """Begin an extraction's step and return extract()'s progress callback. extract() reports
    what is stored, then loads the model before its first batch (seconds; tens of seconds when a
    GGUF file is converted the first time): until that batch the step says what it is doing
    ("converting smollm2's GGUF file to float32 (first time only), then extracting smollm2 on
    paper"), instead of sitting at 0/130 without a word; from it on, "extracting smollm2 on paper".

    Args:
        context: the job's context.
        spec: the model spec.
        stimuli: the stimulus set extracted.
        dtype: the dtype the model is loaded in (a GGUF conversion is per dtype).
        name: the name the model is stored under, if not the spec.
    """
    from magdash.sources import loading_words, resolve_model

    extracting = f"extracting {name or spec} on {stimuli.name}"
    try:
        loading = loading_words(resolve_model(spec), dtype)
    except MagdashError:  # extract() says what is wrong with the spec
        loading = f"loading {spec}"
    context.step(f"{loading}, then {extracting}", len(stimuli.items))
    reports = 0

    def progress(done: int, total: int) -> None:
        nonlocal reports
        reports += 1
        if reports == 2:  # the first report is what was already stored, before the model loads
            context.relabel(extracting)
        context.progress(done, total)

    return progress


def first_run_job(store: Store, params: AnalysisParams) -> Job:
    """:func:`run_first_protocol` as a background job with progress and Cancel."""
    models = first_run_models()

    def work(context: JobContext) -> tuple[Any, bool]:
        finished = run_first_protocol(store, params, context)
        return (models if finished else None), not finished

    return Job(f"{FIRST_RUN}: {first_run_label()}", work, n_steps=first_run_steps())


def is_first_run(snapshot: JobSnapshot) -> bool:
    """Whether the job is :func:`first_run_job`'s (Home holds its results back until it ends).

    Args:
        snapshot: the job's snapshot.
    """
    return snapshot.label.startswith(f"{FIRST_RUN}:")
