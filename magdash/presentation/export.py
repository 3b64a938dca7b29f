"""Export: charts as PNG and SVG, tables as CSV, file names from user text.

A CSV is opened in spreadsheets, where a cell beginning with ``=``, ``+``, ``-``, ``@``, a tab
or a carriage return is read as a formula; carriers, model and source names are user text, so
every text cell and header that begins so is written after a ``'`` (OWASP's advice for CSV
injection, :func:`spreadsheet_safe`). Numeric columns, and text that is a plain number such as
``-0.5``, are written as they are.

Charts are converted with ``vl-convert`` (a bundled Vega engine, no browser), offline: every
chart of :mod:`magdash.presentation` carries its data inline and the conversion is
called with ``allowed_base_urls=[]``, so a spec that names any URL fails instead of fetching it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import altair as alt
import pandas as pd
import vl_convert as vlc

from magdash.errors import AnalysisError
from magdash.formatting import csv_column_label

EXPORT_WIDTH = 720
"""Pixel width given to charts whose width is "container" (a static image has no container)."""


def chart_spec(chart: alt.TopLevelMixin | Mapping[str, Any]) -> dict[str, Any]:
    """The Vega-Lite spec of ``chart`` ready for static export ("container" widths fixed).

    Altair's schema validation is skipped (it costs about as much as the rendering itself);
    an invalid spec still fails, in vl-convert, as an :class:`AnalysisError`.
    """
    if isinstance(chart, alt.TopLevelMixin):
        return _fix_container_width(chart.to_dict(validate=False))
    return _fix_container_width(json.loads(json.dumps(chart)))


def _fix_container_width(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: EXPORT_WIDTH if key == "width" and value == "container" else _fix_container_width(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_fix_container_width(item) for item in node]
    return node


def _vegalite_version() -> str | None:
    """The Vega-Lite version Altair writes for, when vl-convert has it (else its default)."""
    major_minor = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    return major_minor if major_minor in vlc.get_vegalite_versions() else None


def chart_to_svg(chart: alt.TopLevelMixin | Mapping[str, Any]) -> str:
    """The chart as an SVG document (offline: any external data URL is an error)."""
    try:
        return vlc.vegalite_to_svg(
            chart_spec(chart), vl_version=_vegalite_version(), allowed_base_urls=[]
        )
    except ValueError as error:
        raise AnalysisError(f"the chart could not be exported as SVG: {error}") from error


def chart_to_png(chart: alt.TopLevelMixin | Mapping[str, Any], scale: float = 2.0) -> bytes:
    """The chart as PNG bytes, ``scale`` times its pixel size (2 = sharp on high-DPI screens)."""
    if not scale > 0:
        raise AnalysisError(f"the PNG scale must be positive, got {scale}")
    try:
        return vlc.vegalite_to_png(
            chart_spec(chart), vl_version=_vegalite_version(), scale=scale, allowed_base_urls=[]
        )
    except ValueError as error:
        raise AnalysisError(f"the chart could not be exported as PNG: {error}") from error


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""The first characters that make a spreadsheet read a cell as a formula (OWASP, CSV injection)."""

_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def spreadsheet_safe(value: Any) -> Any:
    """``value`` as a CSV cell a spreadsheet cannot run: text beginning with one of
    :data:`FORMULA_STARTS` gets a leading ``'`` (shown by spreadsheets as the text itself), unless
    it is a plain number (``-0.5``, which a spreadsheet reads as that number); anything that is
    not text is returned as it is."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def spreadsheet_safe_table(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell made :func:`spreadsheet_safe` (numeric columns untouched):
    what every CSV magdash writes goes through."""
    text_columns = [i for i in range(frame.shape[1]) if not pd.api.types.is_numeric_dtype(frame.iloc[:, i])]
    if not text_columns:
        return frame
    safe = frame.copy()
    for position in text_columns:  # by position: two columns may share a name
        safe.isetitem(position, frame.iloc[:, position].map(spreadsheet_safe, na_action="ignore"))  # pyright: ignore[reportArgumentType] - pandas-stubs leave Series out of isetitem's value, which pandas takes
    return safe


def table_to_csv(frame: pd.DataFrame) -> bytes:
    """UTF-8 CSV of a table as a reader downloads it: the headers the table shows (labels with
    units, :func:`~magdash.formatting.csv_column_label`: a share's says it is between 0 and 1),
    the values as they are (shares between 0 and 1, p-values unrounded), without the index;
    missing values are empty cells; rows end in CRLF; text that a spreadsheet would run as a
    formula is written after a ``'`` (:func:`spreadsheet_safe`). The JSON and the CLI's outputs keep the machine names."""
    headers = [spreadsheet_safe(csv_column_label(column)) for column in frame.columns]
    # CRLF ends a row (RFC 4180), so a cell holding a CR is quoted, never split into a row of its own
    # (Python's csv quotes only the characters of the line terminator).
    return spreadsheet_safe_table(frame).to_csv(index=False, header=headers, lineterminator="\r\n").encode("utf-8")


def safe_filename(text: str, default: str = "magdash") -> str:
    """A download file name stem from user text (model names may contain anything)."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._-")
    return stem[:120] or default
