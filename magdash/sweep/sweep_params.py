"""How a sweep runs (the plan says what), importable without the sweep itself: the CLI builds
its options from it before anything heavy is loaded."""

from __future__ import annotations

from dataclasses import dataclass, field

from magdash.errors import MagdashError
from magdash.params import option

DEFAULT_RETRIES = 3
"""Times Ray runs a task again after its worker died (never after an error the task raised)."""


@dataclass(frozen=True)
class SweepParams:
    """How a plan runs (the plan says what): shared by ``magdash sweep`` and :func:`run_sweep`.

    ``ray`` is None to run in-process, ``"auto"`` or a cluster address (``ray://host:10001``)
    to run on Ray; an already connected Ray session is used as it is.
    """

    ray: str | None = field(default=None, metadata=option(
        "run on Ray: 'auto' (the running cluster), 'local' (start one here) or an address such as "
        "ray://head:10001; Ray is an optional extra: pip install 'magdash[ray]'", metavar="ADDRESS",
        default_text="in this process"))
    retries: int = field(default=DEFAULT_RETRIES, metadata=option(
        "with ray=: runs again of a task whose worker died", metavar="N"))

    def __post_init__(self) -> None:
        if self.ray is not None and not self.ray.strip():
            raise MagdashError("ray= needs an address: 'auto' or e.g. 'ray://head-node:10001'", parameters=("ray",))
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise MagdashError(f"retries={self.retries!r} must be 0 or more", parameters=("retries",))
