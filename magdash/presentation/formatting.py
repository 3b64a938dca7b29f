"""How a number is written for a reader, the same in the CLI, tables, the report and the app.

A number that does not exist (no fit at the embedding layer, a test undefined for constant
data) is written :data:`MISSING`, never as a number and never as "nan".
"""

from __future__ import annotations

import math
import re
from typing import Any

MISSING = "—"

_WIDTH = re.compile(r"[^\d.]*(\d+)")


def format_number(value: Any, spec: str = ".4g") -> str:
    """``value`` formatted with the format ``spec``; :data:`MISSING` (padded to the spec's width)
    when it is None, NaN or infinite."""
    number = None if value is None else float(value)
    if number is None or not math.isfinite(number):
        width = _WIDTH.match(spec)
        return f"{MISSING:>{width.group(1)}}" if width else MISSING
    return format(number, spec)


def format_p(value: Any) -> str:
    """A p-value in a sentence: two significant digits, scientific below 0.001."""
    number = None if value is None else float(value)
    if number is None or not math.isfinite(number) or number >= 1e-3:
        return format_number(number, ".2g")
    return format_number(number, ".1e")
