"""Ray as a sweep's backend: each job a Ray task with its model's resources.

Ray is an optional extra (``pip install 'magdash[ray]'``) and is imported only here, only when
a sweep asks for it. A job runs with the ``num_cpus`` / ``num_gpus`` its model asks for (Ray
pins the task to those GPUs through ``CUDA_VISIBLE_DEVICES``, and ``device_map = "auto"``
spreads the model over them); a worker that dies is replaced and its job run again up to
``retries`` times, while an error the job raises is final and reported as the task's message.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

from magdash.errors import MagdashError
from magdash.sweep.plan import Cell
from magdash.sweep.tasks import failure_message

LOCAL = "local"
"""``--ray local``: start a Ray cluster on this machine for the sweep (``auto`` joins a running one)."""


def _run_job(work: Callable, job, threads: int, label: str, worker_progress: Callable | None):
    """The Ray task: one job in a worker process, with torch on the task's CPUs."""
    import torch

    torch.set_num_threads(threads)
    progress = None if worker_progress is None else functools.partial(worker_progress, label)
    return work(job, progress)


class RayBackend:
    """Submits jobs to a Ray cluster and hands back each finished one's output or message."""

    def __init__(self, address: str, retries: int, worker_progress: Callable[[str, int, int], None] | None = None):
        try:
            import ray
        except ImportError:
            raise MagdashError("ray= needs Ray: pip install 'magdash[ray]' (or pip install ray)", parameters=("ray",)) from None
        self._ray = ray
        self._retries = retries
        self._worker_progress = worker_progress
        self._owns_session = not ray.is_initialized()
        if self._owns_session:
            options = {"include_dashboard": False} if address == LOCAL else {"address": address}
            try:
                ray.init(logging_level=logging.WARNING, log_to_driver=False, **options)
            except (ConnectionError, RuntimeError, ValueError) as error:
                raise MagdashError(
                    f"cannot reach a Ray cluster at {address!r}: {str(error).splitlines()[0]} "
                    "(start one with `ray start --head`, or use ray='local')", parameters=("ray",)
                ) from None
        self._task = ray.remote(_run_job)

    def submit(self, kind, job, cell: Cell):
        """Start ``kind.work(job)`` as a Ray task with the cell's model's resources."""
        model = cell.model
        available = self._ray.cluster_resources()
        for resource, wanted in (("CPU", model.num_cpus), ("GPU", model.num_gpus)):
            if wanted > available.get(resource, 0.0):
                raise MagdashError(
                    f"asks for {wanted:g} {resource}s per task; the Ray cluster has "
                    f"{available.get(resource, 0.0):g} in all"
                )
        label = f"{kind.name} {cell.label}"
        return self._task.options(
            num_cpus=model.num_cpus, num_gpus=model.num_gpus, max_retries=self._retries,
            retry_exceptions=False, name=label[:100],
        ).remote(kind.work, job, max(1, int(model.num_cpus)), label, self._worker_progress)

    def wait(self, handles: list) -> tuple[object, object | None, str | None]:
        """The next finished job: (handle, output, None), or (handle, None, its one-line message)."""
        ray = self._ray
        (handle,), _ = ray.wait(handles, num_returns=1)
        try:
            return handle, ray.get(handle), None
        except ray.exceptions.RayTaskError as error:
            cause = error.cause if isinstance(error.cause, BaseException) else None
            return handle, None, failure_message(cause) if cause else failure_message(error)
        except ray.exceptions.RayError as error:
            return handle, None, (
                f"the worker was lost {self._retries + 1} times ({type(error).__name__}); "
                "nothing of it was registered, run the sweep again to retry"
            )

    def close(self) -> None:
        if self._owns_session:
            self._ray.shutdown()
