"""The self-contained HTML report: sections of text, figures and tables, and a run manifest.

The report is one file with no external resource: figures are embedded as base64
``data:`` images (SVG by default, PNG on request), tables are HTML built here with every cell
escaped by :func:`html.escape`, and a Content-Security-Policy forbids scripts outright. User
text (model names, carrier sentences, layer labels) is therefore only ever shown as text; as
``<img>`` sources, even the SVG images cannot run script. The run manifest
(:mod:`magdash.presentation.report.manifest`) is shown readably and embedded as JSON in a
``<script type="application/json" id="magdash-manifest">`` block, with ``<``, ``>`` and ``&``
written as JSON unicode escapes so no string can close the block.
"""

from __future__ import annotations

import base64
import html
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.formatting import (
    MISSING,
    column_label,
    format_number,
    format_p,
    format_share,
    is_p_column,
    is_share_column,
)
from magdash.jsonio import to_jsonable
from magdash.output_files import REPORT_MARK
from magdash.presentation.export import chart_to_png, chart_to_svg

REPORT_FORMAT_VERSION = 1


IMAGE_FORMATS = ("svg", "png")


StepCallback = Callable[[str], None]
"""Called with the step under way (``"analysing minilm"``) while a report is built."""


@dataclass
class ReportSection:
    """One section of the HTML report: a title, plain-text paragraphs, figures and tables.

    ``figures`` and ``tables`` are (caption, chart) and (caption, DataFrame) pairs. Every
    string is shown as text (escaped), never interpreted as HTML.
    """

    title: str
    text: Sequence[str] = ()
    figures: list[tuple[str, Any]] = field(default_factory=list)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)


_STYLE = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2rem auto;
       max-width: 1400px; padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { font-size: 1.7rem; } h2 { border-bottom: 1px solid #ddd; padding-bottom: .2rem; margin-top: 2.5rem; }
nav ol { columns: 2; }
figure { margin: 1.2rem 0; } figure img { max-width: 100%; height: auto; }
figcaption { color: #555; font-size: .9rem; }
table { border-collapse: collapse; margin: .8rem 0 1.5rem; font-size: .85rem; }
caption { text-align: left; font-weight: 600; padding-bottom: .3rem; }
th, td { border: 1px solid #ddd; padding: .25rem .5rem; text-align: right; }
th { background: #f4f4f4; } td.text { text-align: left; }
td.na { color: #999; }
pre { background: #f7f7f7; padding: 1rem; overflow-x: auto; font-size: .8rem; }
.table-wrap { overflow-x: auto; }
"""


_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def format_cell(value: Any) -> tuple[str, str]:
    """(text, css class) for one table cell: :data:`MISSING` for missing, 4 significant digits for floats."""
    if value is None or value is pd.NA or value is pd.NaT:
        return MISSING, "na"
    if isinstance(value, (bool, np.bool_)):
        return ("yes" if value else "no"), "text"
    if isinstance(value, (int, np.integer)):
        return str(int(value)), ""
    if isinstance(value, (float, np.floating)):
        text = format_number(value, ".4g")
        return text, "na" if text == MISSING else ""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value), "text"
    return str(value), "text"


def table_html(frame: pd.DataFrame, caption: str = "") -> str:
    """An HTML table with every header and cell escaped; readable headers
    (:func:`~magdash.formatting.column_label`), p-values in scientific notation
    below 0.001, shares as percentages."""
    parts = ['<div class="table-wrap"><table>']
    if caption:
        parts.append(f"<caption>{html.escape(caption)}</caption>")
    parts.append("<thead><tr>")
    parts.extend(f"<th>{html.escape(column_label(column))}</th>" for column in frame.columns)
    parts.append("</tr></thead><tbody>")
    p_columns = [is_p_column(column) for column in frame.columns]
    share_columns = [is_share_column(column) for column in frame.columns]
    for row in frame.itertuples(index=False):
        parts.append("<tr>")
        for value, is_p, is_share in zip(row, p_columns, share_columns, strict=True):
            text, css = format_cell(value)
            if css == "" and isinstance(value, (float, np.floating)):
                text = format_p(value) if is_p else format_share(value) if is_share else text
            attribute = f' class="{css}"' if css else ""
            parts.append(f"<td{attribute}>{html.escape(text)}</td>")
        parts.append("</tr>")
    parts.append("</tbody></table></div>")
    return "".join(parts)


def figure_html(chart: Any, caption: str, image_format: str = "svg") -> str:
    """A ``<figure>`` with the chart as a base64 data image (SVG or PNG)."""
    if image_format == "svg":
        payload = chart_to_svg(chart).encode("utf-8")
        mime = "image/svg+xml"
    elif image_format == "png":
        payload = chart_to_png(chart)
        mime = "image/png"
    else:
        raise AnalysisError(f"image format must be one of {', '.join(IMAGE_FORMATS)}, got {image_format!r}")
    source = f"data:{mime};base64,{base64.b64encode(payload).decode('ascii')}"
    alt_text = html.escape(caption or "chart")
    figcaption = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
    return f'<figure><img alt="{alt_text}" src="{source}">{figcaption}</figure>'


def manifest_json_for_html(manifest: Mapping[str, Any]) -> str:
    """The manifest as JSON safe inside a ``<script>`` block (no ``<``, ``>``, ``&`` verbatim)."""
    text = json.dumps(to_jsonable(dict(manifest)), indent=2, sort_keys=True, allow_nan=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def build_report_html(
    sections: Sequence[ReportSection],
    manifest: Mapping[str, Any],
    *,
    title: str = "magdash report",
    image_format: str = "svg",
    progress: StepCallback | None = None,
) -> str:
    """Render ``sections`` and the run ``manifest`` as one self-contained HTML document."""
    if image_format not in IMAGE_FORMATS:
        raise AnalysisError(f"image format must be one of {', '.join(IMAGE_FORMATS)}, got {image_format!r}")
    all_sections = [*sections, ReportSection("Run manifest")]
    body = [f"<h1>{html.escape(title)}</h1>"]
    generated = manifest.get("generated_at")
    if generated:
        body.append(f"<p>Generated {html.escape(str(generated))} by magdash.</p>")
    body.append("<nav><h2>Contents</h2><ol>")
    body.extend(
        f'<li><a href="#section-{index}">{html.escape(section.title)}</a></li>'
        for index, section in enumerate(all_sections, start=1)
    )
    body.append("</ol></nav>")
    for index, section in enumerate(sections, start=1):
        if progress is not None:
            progress(f"rendering {section.title}")
        body.append(f'<section id="section-{index}"><h2>{html.escape(section.title)}</h2>')
        body.extend(f"<p>{html.escape(paragraph)}</p>" for paragraph in section.text)
        for caption, chart in section.figures:
            body.append(figure_html(chart, caption, image_format))
        for caption, frame in section.tables:
            body.append(table_html(frame, caption))
        body.append("</section>")
    manifest_json = manifest_json_for_html(manifest)
    body.append(f'<section id="section-{len(all_sections)}"><h2>Run manifest</h2>')
    summary = manifest_summary(manifest)
    if len(summary):
        body.append(table_html(summary, "Models"))
    body.append(f"<pre>{html.escape(json.dumps(json.loads(manifest_json), indent=2, sort_keys=True))}</pre>")
    body.append(f'<script type="application/json" {REPORT_MARK}>{manifest_json}</script>')
    body.append("</section>")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        + "\n".join(body)
        + "</body></html>\n"
    )


def manifest_summary(manifest: Mapping[str, Any]) -> pd.DataFrame:
    """One row per model of the manifest: the identity columns a reader checks first."""
    columns = ["name", "model_id", "source", "fingerprint", "dtype", "weights", "n_blocks", "hidden_size",
               "stimuli", "data_fingerprint", "is_random"]
    rows = [{c: model.get(c) for c in columns} for model in manifest.get("models", [])]
    return pd.DataFrame(rows, columns=columns)


def extract_manifest(document: str) -> dict[str, Any]:
    """Read the manifest back from a report produced by :func:`build_report_html`."""
    match = re.search(
        r'<script type="application/json" id="magdash-manifest">(.*?)</script>', document, re.S
    )
    if match is None:
        raise AnalysisError("this document holds no magdash manifest")
    return json.loads(match.group(1))
