"""JSON conversion shared by the CLI and the report: NaN and infinities become null."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np


def to_jsonable(value: Any) -> Any:
    """Return ``value`` as plain JSON types, with non-finite floats replaced by ``None``.

    Dataclasses become dicts, numpy scalars and arrays become Python numbers and lists, so the
    result can go through ``json.dumps(..., allow_nan=False)``.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [to_jsonable(v) for v in value.tolist()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        number = float(value)
        return number if math.isfinite(number) else None
    return value
