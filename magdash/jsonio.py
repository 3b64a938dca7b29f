"""JSON conversion shared by the CLI, the report and the result cache."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np


def to_jsonable(value: Any, *, keep_nan: bool = False) -> Any:
    """Return ``value`` as plain JSON types.

    Dataclasses become dicts, numpy scalars and arrays become Python numbers and lists. Non-finite
    floats become ``None``, so the result can go through ``json.dumps(..., allow_nan=False)``
    (what users read), or stay as they are with ``keep_nan`` (the result cache, which reads its
    own NaN back).
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name), keep_nan=keep_nan) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v, keep_nan=keep_nan) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v, keep_nan=keep_nan) for v in value]
    if isinstance(value, np.ndarray):
        return [to_jsonable(v, keep_nan=keep_nan) for v in value.tolist()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        number = float(value)
        return number if keep_nan or math.isfinite(number) else None
    return value
