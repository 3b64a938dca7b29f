"""A result's summary as a notebook shows it: the ``_repr_html_`` of the result types.

Jupyter (and every front end that honours ``_repr_html_``) shows a result as a small block: a
title, the facts a reader checks first (model, stimuli, core band), short tables (verdicts, a few
fit rows) and the warnings. Numbers are written as the CLI and the app write them
(:mod:`magdash.formatting`): missing ones as a dash, p-values in two significant digits, column
headers readable. The full tables stay on the result, as DataFrames.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

import numpy as np
import pandas as pd

from magdash.formatting import column_label, format_number, format_p, format_share, is_p_column, is_share_column

MAX_ROWS = 12
"""A summary's table shows at most this many rows (the result holds them all)."""


def _cell(column: str, value: object) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        if is_share_column(column):
            return format_share(value)
        return format_p(value) if is_p_column(column) or column.endswith(" p") else format_number(value)
    return "" if value is None else str(value)


def html_table(frame: pd.DataFrame, max_rows: int = MAX_ROWS) -> str:
    """``frame`` as an HTML table with readable headers and numbers, cut at ``max_rows`` rows.

    Args:
        frame: the table.
        max_rows: the rows shown; a last line says how many more the result holds.
    """
    shown = frame.head(max_rows)
    head = "".join(f"<th>{html.escape(column_label(column))}</th>" for column in shown.columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(str(column), value))}</td>"
                         for column, value in zip(shown.columns, row, strict=True)) + "</tr>"
        for row in shown.itertuples(index=False)
    )
    more = len(frame) - len(shown)
    caption = f"<caption style='caption-side:bottom'>… {more} more rows</caption>" if more > 0 else ""
    return f"<table>{caption}<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"


def html_summary(
    title: str,
    facts: Sequence[tuple[str, str]],
    tables: Sequence[tuple[str, pd.DataFrame]] = (),
    notes: Sequence[str] = (),
) -> str:
    """A result's summary block.

    Args:
        title: the heading (the kind of result and its model).
        facts: (label, value) pairs shown as a definition list.
        tables: (heading, table) pairs, each cut at :data:`MAX_ROWS` rows.
        notes: lines shown last (warnings, where the full tables are).
    """
    parts = [f"<div class='magdash-summary'><strong>{html.escape(title)}</strong>"]
    if facts:
        parts.append("<ul>" + "".join(f"<li>{html.escape(label)}: {html.escape(value)}</li>"
                                      for label, value in facts) + "</ul>")
    for heading, frame in tables:
        parts.append(f"<p><em>{html.escape(heading)}</em></p>{html_table(frame)}")
    if notes:
        parts.append("<ul>" + "".join(f"<li>{html.escape(note)}</li>" for note in notes) + "</ul>")
    parts.append("</div>")
    return "".join(parts)
