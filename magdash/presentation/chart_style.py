"""The Altair vocabulary every chart of magdash shares: the depth axis, the core and no-fit bands,
reference lines, colours, titles, inline data and thinning.

A chart function (in the figure module of its science: :mod:`~magdash.presentation.variability_figures`,
:mod:`~magdash.presentation.geometry_figures`, :mod:`~magdash.presentation.frequency_figures`,
:mod:`~magdash.presentation.depth_figures`, :mod:`~magdash.presentation.controls_figures`) takes
DataFrames (one row per mark) and returns an Altair chart; it reads no store and computes no
statistic. Conventions shared by every chart:

- Missing numbers are never drawn as numbers. NaN becomes JSON null; point marks filter
  nulls out (``invalid="filter"``) and lines and bands break at them
  (``invalid="break-paths-filter-domains"``), so a layer without a fit (e.g. the embedding
  layer, where a context-free token has V = 0 and alpha is undefined; Cacioli, arXiv
  2604.04469) shows as a gap, never as 0. Layers where no shown series has a value are
  shaded pink and labelled "no fit", with a tooltip saying why.
- Data are embedded inline (``{"values": records}``) so the specs export offline
  (:mod:`magdash.presentation.report`) and Altair's 5,000-row limit does not apply; the frame
  builders keep the row counts small (histograms are binned there).
- Colours: one per measure (:data:`MEASURE_COLORS`, each `Measure` entry's own, colour-blind safe), one per model
  of a store, kept as models are added (:func:`model_colors`), the trained model versus its
  random-weight control (:data:`SERIES_COLORS`) and token counts (:data:`TOKEN_COLORS`, none of
  them a line's). The core band is shaded light grey. Legend labels are never cut
  (:data:`LEGEND_LABEL_LIMIT`).
- No ``.configure_*`` calls: the returned charts can be layered or concatenated further.
  ``width`` accepts a number of pixels or ``"container"`` (Streamlit stretches charts to the
  column either way; the exporters replace "container" by a fixed width).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import altair as alt
import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.jsonio import to_jsonable
from magdash.variability.measures import MEASURES

DEFAULT_WIDTH = 560


DEFAULT_HEIGHT = 320


Width = int | str


PATH_INVALID = "break-paths-filter-domains"
"""Lines and areas break at missing values (and missing values leave the scale domains)."""


POINT_INVALID = "filter"


MEASURE_COLORS = {measure.title: measure.color for measure in MEASURES.values()}
"""Colour of each measure, keyed by its display label: its :class:`~magdash.variability.measures.Measure`
entry's ``color``."""


MODEL_COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
"""The palette of models (:func:`model_colors`) and of other unnamed series, in order."""


TOKEN_COLORS = ("#332288", "#CC6677", "#44AA99", "#DDCC77", "#AA4499", "#88CCEE", "#882255", "#117733")
"""Token counts 1, 2, 3, ... of the scaling scatter's points (Tol's muted palette): none is a
measure's, a reference line's or :data:`FIT_COLOR`, so a fit line is never read as a token count."""


FIT_COLOR = "#000000"
"""The OLS fit line of a scatter whose points are coloured by something else (token count)."""


LEGEND_LABEL_LIMIT = 0
"""Longest legend label in pixels; 0 is no limit (Vega's default, 160 px, cut "massive
dimensions dropped" to "massive dimensions dro...")."""


CONTAINER_AUTOSIZE = {"type": "fit-x", "contains": "padding"}
"""How a chart fills a page's column (``pages/ui``): the width fits the column, the height is the
plot's own as in the PNG export. Fitting the height too (Streamlit's default, ``fit``) squeezed the plot
into the chart's height and, on charts with a full-width band (the Weber window), drew the whole
chart a few pixels left of its frame: the title lost its first letter and the y title half its width."""


POST_NORM_NOTE = "gamma > 1: the final norm's output (post-norm), after the last block"
"""Said under a depth-fraction chart holding a post-norm layer (gamma = (L + 1) / L)."""


SERIES_COLORS = {"trained": "#0072B2", "random control": "#7F7F7F", "isotropic Gaussian": "#CC79A7"}
"""The depth diagnostics' trained model, its ``@random`` architecture-only control and the
isotropic-Gaussian null (:data:`magdash.presentation.df.ISOTROPIC_SERIES`); other names get palette colours."""


REFERENCE_COLOR = "#555555"


CORE_FILL = "#BBBBBB"


NO_FIT_FILL = "#F4CCCC"


NO_FIT_TEXT_COLOR = "#A94442"


WINDOW_FILL = "#F0E442"


OUTLIER_COLOR = "#D55E00"


CARRIER_COLOR = "#888888"


SPIKE_COLOR = "#D55E00"


LAYER_TITLE = "layer (0 = embeddings)"


GAMMA_TITLE = "depth fraction gamma = l / L"


ALPHA_TITLE = "alpha (log-log slope)"


NO_FIT_TEXT = "no fit: V = 0 or fewer than 5 usable points"


MAX_POINTS = 5000
"""Most marks one scatter layer draws: beyond it the layer is thinned (and says so), since a
browser tab spends seconds laying out tens of thousands of SVG marks."""


MAX_RDM_SIDE = 50
"""Most rows (and columns) of a drawn RDM: larger ones are drawn in blocks (mean per block).
2,500 cells at most: 10,000 took the browser about 2 s to draw on a loaded 2-core machine."""


MAX_TEXT_LABELS = 60
"""Most points labelled with their magnitude in a scatter; beyond it the labels would overlap."""


GAMMA_TICKS = [round(0.1 * i, 1) for i in range(11)]
"""Ticks of a depth-fraction axis: every 0.1 from 0 to 1."""


GAMMA_C_NOTE = "orange dashed: gamma_c"


MAX_AXIS_TITLE = 28
"""Longest axis title, in characters: a y title longer than the plot is cut, and a short plot
(a small export) is common; units and explanations go to the subtitle or the tooltip instead."""


def inline_data(frame: pd.DataFrame, columns: Sequence[str] | None = None) -> dict[str, Any]:
    """``frame`` (optionally only ``columns``) as inline data ``{"values": records}``.

    NaN and infinities become null. A plain dict rather than ``alt.InlineData``: Altair
    validates the records of an ``InlineData`` one by one when it is built (seconds for a few
    thousand rows), while a dict is only checked once, with the whole spec.
    """
    if columns is not None:
        frame = frame.loc[:, list(dict.fromkeys(columns))]
    frame = frame.astype(object).where(frame.notna(), None)
    return {"values": to_jsonable(frame.to_dict(orient="records"))}


def thin_by_magnitude(frame: pd.DataFrame, what: str, limit: int = MAX_POINTS) -> tuple[pd.DataFrame, str | None]:
    """At most ``limit`` rows of a scatter layer: every k-th magnitude (all its rows) is kept,
    so what is drawn is a regular subsample. Returns the rows and a note (None when whole)."""
    if len(frame) <= limit:
        return frame, None
    magnitudes = np.unique(frame["magnitude"].to_numpy(dtype=np.float64))
    step = math.ceil(len(frame) / limit)
    kept = frame[frame["magnitude"].isin(magnitudes[::step])]
    return kept, f"{what}: 1 magnitude in {step} drawn ({len(kept):,} of {len(frame):,})"


def require_columns(frame: pd.DataFrame, columns: Sequence[str], chart: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise AnalysisError(
            f"{chart} needs columns {', '.join(missing)} (got {', '.join(map(str, frame.columns))})"
        )


def finite_rows(frame: pd.DataFrame, *columns: str, positive: bool = False) -> pd.DataFrame:
    """Rows whose ``columns`` are finite numbers (and > 0 with ``positive``, for log scales)."""
    keep = np.ones(len(frame), dtype=bool)
    for column in columns:
        values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
        keep &= np.isfinite(values)
        if positive:
            with np.errstate(invalid="ignore"):
                keep &= values > 0
    return frame[keep]


def color_scale(domain: Sequence[str], colours: Mapping[str, str] | Sequence[str]) -> alt.Scale:
    """A nominal colour scale: known names keep their colour, the rest cycle the palette."""
    domain = list(dict.fromkeys(domain))
    if isinstance(colours, Mapping):
        spare = iter(c for c in MODEL_COLORS if c not in colours.values())
        chosen = [colours.get(name) or next(spare, REFERENCE_COLOR) for name in domain]
    else:
        chosen = [colours[i % len(colours)] for i in range(len(domain))]
    return alt.Scale(domain=domain, range=chosen)


def model_colors(names: Sequence[str], registered: Sequence[str] | None = None) -> alt.Scale:
    """The colour scale of models: a model's colour is the palette's entry at its place in
    ``registered`` (the store's models in registration order), so it stays the same whichever
    other models a chart shows and as models are added. Without ``registered`` (or for a name not
    in it) the models take the colours left, in the order given.

    Args:
        names: the models the chart shows, in legend order.
        registered: every model of the store, in the order it was stored.
    """
    names = list(dict.fromkeys(names))
    order = list(dict.fromkeys(registered or ()))
    fixed = {name: MODEL_COLORS[order.index(name) % len(MODEL_COLORS)] for name in names if name in order}
    spare = iter([c for c in MODEL_COLORS if c not in fixed.values()] + list(MODEL_COLORS))
    return alt.Scale(domain=names, range=[fixed.get(name) or next(spare) for name in names])


def beyond_depth(frame: pd.DataFrame, field: str = "gamma") -> list[alt.Chart]:
    """A "post-norm" label over each depth fraction beyond 1 (a final norm's layer, l = L + 1);
    nothing when there is none or the axis is not a depth fraction. Say :data:`POST_NORM_NOTE` too.

    Args:
        frame: the chart's rows.
        field: the x field (``gamma``, ``gamma_a``, ...; other fields draw nothing).
    """
    if not field.startswith("gamma") or field not in frame:
        return []
    values = pd.to_numeric(frame[field], errors="coerce").to_numpy(dtype=np.float64)
    beyond = np.unique(values[np.isfinite(values) & (values > 1.0 + 1e-9)])
    if not beyond.size:
        return []
    labels = pd.DataFrame({field: beyond, "text": "post-norm", "reason": POST_NORM_NOTE})
    return [
        alt.Chart(inline_data(labels))
        .mark_text(color=REFERENCE_COLOR, fontSize=10, baseline="top", align="right", dy=4)
        .encode(x=alt.X(f"{field}:Q"), y=alt.value(0), text="text:N",
                tooltip=[alt.Tooltip(f"{field}:Q", format=".3f"), alt.Tooltip("reason:N", title="")])
    ]


def subtitle_lines(subtitle: str | Sequence[str] | None) -> list[str]:
    """A subtitle as a list of lines, to which a chart appends its own notes."""
    if not subtitle:
        return []
    return [subtitle] if isinstance(subtitle, str) else list(subtitle)


def chart_title(text: str, subtitle: str | Sequence[str] | None = None) -> alt.TitleParams:
    if subtitle:
        return alt.TitleParams(text=text, subtitle=subtitle, anchor="start")
    return alt.TitleParams(text=text, anchor="start")


def depth_field(x: str) -> tuple[str, str]:
    if x == "layer":
        return "layer", LAYER_TITLE
    if x == "gamma":
        return "gamma", GAMMA_TITLE
    raise AnalysisError(f"x must be 'layer' or 'gamma', got {x!r}")


@dataclass(frozen=True)
class DepthAxis:
    """The x axis of a per-layer chart: layer index or depth fraction, one band per layer.

    Each layer owns the interval [x - half, x + half] (half = half the smallest spacing), so
    core and no-fit shading of neighbouring layers touch, and the domain ends half a step
    beyond the first and last layer. Layer indices get integer ticks.
    """

    field: str
    title: str
    half: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float], field: str, title: str) -> DepthAxis:
        positions = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=np.float64)
        positions = np.unique(positions[np.isfinite(positions)])
        half = 0.5 * float(np.min(np.diff(positions))) if positions.size > 1 else 0.5
        if positions.size == 0:
            return cls(field, title, half, -half, half)
        return cls(field, title, half, float(positions[0] - half), float(positions[-1] + half))

    @property
    def integer(self) -> bool:
        return self.field.startswith("layer")

    def encoding(self, field: str | None = None, *, title: bool = True) -> alt.X:
        if self.integer:
            axis = alt.Axis(tickMinStep=1, format="d")
        else:  # a tick every 0.1: Vega's own choice labels every 0.05 on a wide chart
            axis = alt.Axis(format=".1f", values=[v for v in GAMMA_TICKS if self.low <= v <= self.high])
        return alt.X(
            f"{field or self.field}:Q",
            title=self.title if title else None,
            scale=alt.Scale(domain=[self.low, self.high], nice=False, zero=False),
            axis=axis,
        )

    def bands(self, positions: Sequence[float], **extra: Any) -> pd.DataFrame:
        positions = np.asarray(positions, dtype=np.float64)
        return pd.DataFrame(
            {
                f"{self.field}_low": positions - self.half,
                f"{self.field}_high": positions + self.half,
                self.field: positions,
                **extra,
            }
        )

    def band_encoding(self) -> dict[str, Any]:
        return {
            "x": self.encoding(f"{self.field}_low"),
            "x2": alt.X2(f"{self.field}_high:Q"),
        }


def core_band(axis: DepthAxis, core_positions: Sequence[float]) -> alt.Chart:
    """Grey shading over the core layers (one rect per layer; neighbours touch)."""
    frame = axis.bands(core_positions, band="core layer")
    return (
        alt.Chart(inline_data(frame))
        .mark_rect(color=CORE_FILL, opacity=0.25)
        .encode(**axis.band_encoding(), tooltip=[alt.Tooltip("band:N", title="")])
    )


def no_fit_band(axis: DepthAxis, positions: Sequence[float]) -> alt.LayerChart:
    """Pink shading and a "no fit" label over layers where no shown series has a value."""
    frame = axis.bands(positions, reason=NO_FIT_TEXT, text="no fit")
    data = inline_data(frame)
    tooltip = [alt.Tooltip(f"{axis.field}:Q", title=axis.field), alt.Tooltip("reason:N", title="")]
    rect = (
        alt.Chart(data)
        .mark_rect(color=NO_FIT_FILL, opacity=0.6)
        .encode(**axis.band_encoding(), tooltip=tooltip)
    )
    label = (
        alt.Chart(data)
        .mark_text(color=NO_FIT_TEXT_COLOR, fontSize=10, baseline="top", dy=4)
        .encode(x=axis.encoding(), y=alt.value(0), text="text:N", tooltip=tooltip)
    )
    return alt.layer(rect, label)


def zero_rule(value: float = 0.0, *, dash: Sequence[int] = (4, 4)) -> alt.Chart:
    """A horizontal reference line at y = ``value``."""
    return alt.Chart().mark_rule(color=REFERENCE_COLOR, strokeDash=list(dash)).encode(
        y=alt.datum(value)
    )


def window_band(window: tuple[float, float]) -> alt.Chart:
    """The Weber window [lo, hi] of alpha as a horizontal band (Cacioli, arXiv 2604.04469)."""
    low, high = (float(v) for v in window)
    return (
        alt.Chart()
        .mark_rect(color=WINDOW_FILL, opacity=0.25)
        .encode(
            y=alt.datum(low),
            y2=alt.datum(high),
            tooltip=alt.value(f"Weber window [{low:g}, {high:g}] (scalar variability)"),
        )
    )


def solid_legend(channel: Any) -> Any:
    """The colour encoding with opaque circle legend symbols.

    Every layer of a series (faint CI band, line, points) carries the same legend; without
    this the band's 20% opacity would wash out the legend symbols.
    """
    if isinstance(channel, alt.Color):
        solid = channel.copy(deep=True)
        solid.legend = alt.Legend(symbolType="circle", symbolOpacity=1.0, labelLimit=LEGEND_LABEL_LIMIT)
        return solid
    return channel


def profile_layers(
    frame: pd.DataFrame,
    *,
    x: alt.X,
    y_field: str,
    y_title: str,
    color: Any,
    tooltip: Sequence[Any],
    band: tuple[str, str] | None = None,
    detail: str | None = None,
    stroke_dash: alt.StrokeDash | None = None,
    y_scale: alt.Scale | None = None,
) -> list[alt.Chart]:
    """CI band, line and points of a per-layer series: the line breaks at missing values."""
    data = inline_data(frame)
    scale = {"scale": y_scale} if y_scale is not None else {}
    y = alt.Y(f"{y_field}:Q", title=y_title, **scale)
    color = solid_legend(color)
    extra = {"detail": f"{detail}:N"} if detail else {}
    layers = []
    if band is not None:
        layers.append(
            alt.Chart(data)
            .mark_area(opacity=0.2, invalid=PATH_INVALID)
            .encode(
                x=x,
                y=alt.Y(f"{band[0]}:Q", title=y_title, **scale),
                y2=alt.Y2(f"{band[1]}:Q"),
                color=color,
                **extra,
            )
        )
    if stroke_dash is not None:
        extra["strokeDash"] = stroke_dash
    layers.append(
        alt.Chart(data).mark_line(invalid=PATH_INVALID).encode(x=x, y=y, color=color, **extra)
    )
    layers.append(
        alt.Chart(data)
        .mark_point(filled=True, size=40, opacity=0.9, invalid=POINT_INVALID)
        .encode(x=x, y=y, color=color, tooltip=list(tooltip))
        .transform_filter(f"isValid(datum.{y_field}) && isFinite(datum.{y_field})")
    )
    return layers


def depth_backdrop(
    axis: DepthAxis, frame: pd.DataFrame, y_field: str | None, core: bool = True
) -> list[alt.Chart | alt.LayerChart]:
    """Core band (rows with core True) and no-fit bands (x where ``y_field`` is missing)."""
    layers: list[alt.Chart | alt.LayerChart] = []
    if core and "core" in frame:
        chosen = frame["core"].fillna(False).astype(bool)
        positions = np.unique(frame.loc[chosen, axis.field].to_numpy(dtype=np.float64))
        if positions.size:
            layers.append(core_band(axis, positions))
    if y_field is not None:
        empty = empty_positions(frame, axis.field, y_field)
        if empty.size:
            layers.append(no_fit_band(axis, empty))
    return layers


def finish(chart: alt.LayerChart | alt.Chart, title: alt.TitleParams, width: Width, height: int):
    return chart.properties(title=title, width=width, height=height)


def empty_positions(frame: pd.DataFrame, x_field: str, y_field: str) -> np.ndarray:
    """x positions where every row has a missing ``y_field``."""
    values = pd.to_numeric(frame[y_field], errors="coerce")
    has_value = values.notna() & np.isfinite(values.astype(float))
    by_x = has_value.groupby(frame[x_field]).any()
    return by_x.index[~by_x.to_numpy()].to_numpy(dtype=np.float64)


def gamma_c_layers(gamma_c: float | None, interval: tuple[float, float] | None) -> list:
    layers: list[alt.Chart] = []
    if interval is not None and all(math.isfinite(float(v)) for v in interval):
        layers.append(
            alt.Chart()
            .mark_rect(color=SPIKE_COLOR, opacity=0.12)
            .encode(
                x=alt.datum(float(interval[0])),
                x2=alt.datum(float(interval[1])),
                tooltip=alt.value(f"gamma_c interval [{interval[0]:.3f}, {interval[1]:.3f}]"),
            )
        )
    if gamma_c is not None and math.isfinite(float(gamma_c)):
        layers.append(
            alt.Chart()
            .mark_rule(color=SPIKE_COLOR, strokeDash=[6, 3])
            .encode(
                x=alt.datum(float(gamma_c)),
                tooltip=alt.value(f"gamma_c = {float(gamma_c):.3f}"),
            )
        )
    return layers



def depth_fractions(layers: pd.Series | np.ndarray, n_blocks: int) -> np.ndarray:
    return np.asarray(layers, dtype=np.float64) / float(n_blocks)
