"""Every Altair chart of the dashboard and the report, drawn from tidy DataFrames.

A chart function takes DataFrames (one row per mark; the columns it needs are listed in its
docstring) and returns an Altair chart. It reads no store and computes no statistic: the
numbers come from :mod:`magdash.variability.analysis` and friends, reshaped by :mod:`magdash.presentation.tables`.

Conventions shared by every chart:

- Missing numbers are never drawn as numbers. NaN becomes JSON null; point marks filter
  nulls out (``invalid="filter"``) and lines and bands break at them
  (``invalid="break-paths-filter-domains"``), so a layer without a fit (e.g. the embedding
  layer, where a context-free token has V = 0 and alpha is undefined; Cacioli, arXiv
  2604.04469) shows as a gap, never as 0. Layers where no shown series has a value are
  shaded pink and labelled "no fit", with a tooltip saying why.
- Data are embedded inline (``{"values": records}``) so the specs export offline
  (:mod:`magdash.presentation.report`) and Altair's 5,000-row limit does not apply; the builders in
  :mod:`magdash.presentation.tables` keep the row counts small (histograms are binned there).
- Colours: one per measure (:data:`MEASURE_COLORS`, Okabe–Ito colour-blind safe), the
  first and second compared models (:data:`MODEL_COLORS`), and the trained model versus its
  random-weight control (:data:`SERIES_COLORS`). The core band is shaded light grey.
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
from magdash.norm_outliers import OUTLIER_NORM_FACTOR
from magdash.presentation.tables import E3_FITS, NOISE_MODEL_LABELS, POINT_STATUS, measure_label, rdm_blocks

DEFAULT_WIDTH = 560
DEFAULT_HEIGHT = 320
Width = int | str

PATH_INVALID = "break-paths-filter-domains"
"""Lines and areas break at missing values (and missing values leave the scale domains)."""
POINT_INVALID = "filter"

MEASURE_COLORS = {
    "V_eucl": "#0072B2",
    "V_residual": "#E69F00",
    "V_proj": "#009E73",
    "V_pairwise": "#CC79A7",
    "V_trace": "#56B4E9",
    "CV": "#000000",
    "on-axis variance": "#D55E00",
    "off-axis variance": "#56B4E9",
}
"""Colour of each measure, keyed by its display label (:data:`magdash.presentation.tables.MEASURE_LABELS`)."""

MODEL_COLORS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
"""Models in the order given (model A, model B, ...)."""

SERIES_COLORS = {"trained": "#0072B2", "random control": "#7F7F7F", "isotropic Gaussian": "#CC79A7"}
"""The depth diagnostics' trained model, its ``@random`` architecture-only control and the
isotropic-Gaussian null (:data:`magdash.presentation.tables.ISOTROPIC_SERIES`); other names get palette colours."""

AXIS_COLORS = {"on-axis": "#D55E00", "off-axis": "#56B4E9"}
RDM_MODEL_COLORS = {"log-ratio": "#0072B2", "linear": "#D55E00"}
REFERENCE_COLOR = "#555555"
CORE_FILL = "#BBBBBB"
NO_FIT_FILL = "#F4CCCC"
NO_FIT_TEXT_COLOR = "#A94442"
WINDOW_FILL = "#F0E442"
OUTLIER_COLOR = "#D55E00"
CARRIER_COLOR = "#888888"
CARRIER_POINTS = "per-carrier distance"
SPIKE_COLOR = "#D55E00"

ISOTROPIC_OMEGA_BASELINE = 1.0 - math.sqrt(2.0 / math.pi)
"""Mean Omega of an isotropic Gaussian vector as d grows (Alpay & Kilictas, arXiv 2601.19942)."""

LAYER_TITLE = "layer (0 = embeddings)"
GAMMA_TITLE = "depth fraction gamma = l / L"
ALPHA_TITLE = "alpha (log-log slope)"
NO_FIT_TEXT = "no fit: V = 0 or fewer than 5 usable points"

MEASURE_UNITS = {
    "V_eucl": "V_eucl: mean distance to the centroid, activation units",
    "V_residual": "V_residual: mean distance after removing sentence identity",
    "V_proj": "V_proj: SD along PC1, activation units",
    "V_pairwise": "V_pairwise: mean pairwise distance, activation units",
    "V_trace": "V_trace: trace of the carrier covariance, squared units",
}
"""What each measure is and its unit: for subtitles and tooltips, too long for an axis title."""

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

NOISE_ROW_HEIGHT = 32
NOISE_CHROME_HEIGHT = 110
"""Noise-model heatmap: pixels per row, and for the title, subtitle and layer axis."""

MAX_AXIS_TITLE = 28
"""Longest axis title, in characters. Streamlit fits the whole chart (titles included) into
its height, so a y title longer than the plot shrinks the plot to a strip and pushes the chart
title out of the frame; units and explanations go to the subtitle or the tooltip instead."""


# -- helpers -----------------------------------------------------------------------------


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


def _require(frame: pd.DataFrame, columns: Sequence[str], chart: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise AnalysisError(
            f"{chart} needs columns {', '.join(missing)} (got {', '.join(map(str, frame.columns))})"
        )


def _finite(frame: pd.DataFrame, *columns: str, positive: bool = False) -> pd.DataFrame:
    """Rows whose ``columns`` are finite numbers (and > 0 with ``positive``, for log scales)."""
    keep = np.ones(len(frame), dtype=bool)
    for column in columns:
        values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=np.float64)
        keep &= np.isfinite(values)
        if positive:
            with np.errstate(invalid="ignore"):
                keep &= values > 0
    return frame[keep]


def _scale(domain: Sequence[str], colours: Mapping[str, str] | Sequence[str]) -> alt.Scale:
    """A nominal colour scale: known names keep their colour, the rest cycle the palette."""
    domain = list(dict.fromkeys(domain))
    if isinstance(colours, Mapping):
        spare = iter(c for c in MODEL_COLORS if c not in colours.values())
        chosen = [colours.get(name) or next(spare, REFERENCE_COLOR) for name in domain]
    else:
        chosen = [colours[i % len(colours)] for i in range(len(domain))]
    return alt.Scale(domain=domain, range=chosen)


def _notes(subtitle: str | Sequence[str] | None) -> list[str]:
    """A subtitle as a list of lines, to which a chart appends its own notes."""
    if not subtitle:
        return []
    return [subtitle] if isinstance(subtitle, str) else list(subtitle)


def _title(text: str, subtitle: str | Sequence[str] | None = None) -> alt.TitleParams:
    if subtitle:
        return alt.TitleParams(text=text, subtitle=subtitle, anchor="start")
    return alt.TitleParams(text=text, anchor="start")


def _x_field(x: str) -> tuple[str, str]:
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


def _solid_legend(channel: Any) -> Any:
    """The colour encoding with opaque circle legend symbols.

    Every layer of a series (faint CI band, line, points) carries the same legend; without
    this the band's 20% opacity would wash out the legend symbols.
    """
    if isinstance(channel, alt.Color):
        solid = channel.copy(deep=True)
        solid.legend = alt.Legend(symbolType="circle", symbolOpacity=1.0)
        return solid
    return channel


def _profile_layers(
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
    color = _solid_legend(color)
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


def _depth_backdrop(
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
        empty = _empty_positions(frame, axis.field, y_field)
        if empty.size:
            layers.append(no_fit_band(axis, empty))
    return layers


def _finish(chart: alt.LayerChart | alt.Chart, title: alt.TitleParams, width: Width, height: int):
    return chart.properties(title=title, width=width, height=height)


def _empty_positions(frame: pd.DataFrame, x_field: str, y_field: str) -> np.ndarray:
    """x positions where every row has a missing ``y_field``."""
    values = pd.to_numeric(frame[y_field], errors="coerce")
    has_value = values.notna() & np.isfinite(values.astype(float))
    by_x = has_value.groupby(frame[x_field]).any()
    return by_x.index[~by_x.to_numpy()].to_numpy(dtype=np.float64)


# -- scaling -----------------------------------------------------------------------------


def scaling_scatter(
    points: pd.DataFrame,
    lines: pd.DataFrame,
    *,
    carriers: pd.DataFrame | None = None,
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Log–log V against n at one layer: V per magnitude, the OLS line and two references.

    - ``points`` (:func:`magdash.presentation.tables.scaling_points`): magnitude, V, status, measure, label.
      Points with status "fitted" are filled; outliers (the 3x-median rule) are red crosses; a
      magnitude holding outlier vectors (column outlier_vectors > 0: a norm over 10x the layer's
      median) is ringed and said in the subtitle. Points with V <= 0 or no value cannot sit on a
      log axis and are counted in the subtitle.
    - ``lines`` (:func:`magdash.presentation.tables.scaling_lines`): line, alpha, magnitude, V — the OLS fit
      (solid) and the alpha = 1 (scalar, dashed) and alpha = 0 (constant, dotted) references.
    - ``carriers`` (optional, :func:`magdash.presentation.tables.carrier_distances`): magnitude, carrier,
      distance — faint per-carrier distances to the centroid, with the sentence in the tooltip.
    """
    _require(points, ["magnitude", "V", "status"], "scaling_scatter")
    _require(lines, ["line", "magnitude", "V"], "scaling_scatter")
    measure = str(points["measure"].iloc[0]) if "measure" in points and len(points) else "V"

    label = measure_label(measure)
    colour = MEASURE_COLORS.get(label, MEASURE_COLORS["V_eucl"])
    drawable = _finite(points, "magnitude", "V", positive=True)
    hidden = len(points) - len(drawable)
    notes = _notes(subtitle)
    if hidden:
        notes.append(f"{hidden} magnitude(s) with V <= 0 or no value not drawn (no logarithm)")
    shown = pd.DataFrame(columns=["magnitude", "carrier", "distance"])
    if carriers is not None and len(carriers):
        _require(carriers, ["magnitude", "carrier", "distance"], "scaling_scatter carriers")
        shown = _finite(carriers, "magnitude", "distance", positive=True)
        shown, note = thin_by_magnitude(shown, "per-carrier points")
        if note:
            notes.append(note)
    # The y domain follows the data (a little margin); the reference lines are clipped to it,
    # otherwise the alpha = 1 line would stretch the axis over decades of empty space.
    observed = np.concatenate(
        [drawable["V"].to_numpy(dtype=np.float64), shown["distance"].to_numpy(dtype=np.float64)]
    )
    y_scale = alt.Scale(type="log", zero=False)
    if observed.size:
        y_scale = alt.Scale(
            type="log", zero=False, domain=[float(observed.min()) / 1.5, float(observed.max()) * 1.5]
        )
    if label in MEASURE_UNITS:
        notes.insert(0, MEASURE_UNITS[label])
    x = alt.X("magnitude:Q", scale=alt.Scale(type="log"), title="magnitude n (log scale)")
    y_title = f"{label} (log scale)"
    y = alt.Y("V:Q", scale=y_scale, title=y_title)
    layers: list[alt.Chart] = []
    if len(shown):
        layers.append(
            alt.Chart(inline_data(shown.assign(points=CARRIER_POINTS)))
            .mark_circle(size=18, opacity=0.35, invalid=POINT_INVALID)
            .encode(
                x=x,
                y=alt.Y("distance:Q", scale=y_scale, title=y_title),
                # In the legend too (its own colour scale, resolved independently below).
                fill=alt.Fill("points:N", scale=alt.Scale(domain=[CARRIER_POINTS], range=[CARRIER_COLOR]), title=""),
                tooltip=[
                    alt.Tooltip("magnitude:Q", title="n"),
                    alt.Tooltip("carrier:N", title="carrier"),
                    alt.Tooltip("distance:Q", title="||x - m||", format=".4g"),
                ],
            )
        )
    line_rows = _finite(lines, "magnitude", "V", positive=True)
    if len(line_rows):
        names = list(dict.fromkeys(line_rows["line"]))
        colours = {name: colour if name.startswith("OLS") else REFERENCE_COLOR for name in names}
        dashes = {
            name: [1, 0] if name.startswith("OLS") else [6, 4] if "alpha = 1" in name else [2, 3]
            for name in names
        }
        layers.append(
            alt.Chart(inline_data(line_rows))
            .mark_line(clip=True, invalid=PATH_INVALID)
            .encode(
                x=x,
                y=y,
                color=alt.Color("line:N", scale=_scale(names, colours), title="line"),
                strokeDash=alt.StrokeDash(
                    "line:N",
                    scale=alt.Scale(domain=names, range=[dashes[n] for n in names]),
                    title="line",
                ),
                tooltip=[alt.Tooltip("line:N"), alt.Tooltip("alpha:Q", format=".3f")],
            )
        )
    status_domain = list(POINT_STATUS[:2])
    layers.append(
        alt.Chart(inline_data(drawable))
        .mark_point(size=70, filled=True, invalid=POINT_INVALID)
        .encode(
            x=x,
            y=y,
            shape=alt.Shape(
                "status:N",
                scale=alt.Scale(domain=status_domain, range=["circle", "cross"]),
                title="point",
            ),
            color=alt.condition(
                alt.datum.status == POINT_STATUS[1], alt.value(OUTLIER_COLOR), alt.value(colour)
            ),
            tooltip=[
                alt.Tooltip("magnitude:Q", title="n"),
                alt.Tooltip("V:Q", title=label, format=".4g"),
                alt.Tooltip("status:N", title="in fit"),
            ],
        )
    )
    if "outlier_vectors" in drawable and (drawable["outlier_vectors"] > 0).any():
        ringed = drawable[drawable["outlier_vectors"] > 0]
        notes.append(f"ringed: {len(ringed)} magnitude(s) holding vectors over {OUTLIER_NORM_FACTOR:g}x the "
                     "layer's median norm")
        layers.append(
            alt.Chart(inline_data(ringed.assign(flag="outlier vectors")))
            .mark_point(size=260, filled=False, strokeWidth=2, color=OUTLIER_COLOR, invalid=POINT_INVALID)
            .encode(x=x, y=y, tooltip=[alt.Tooltip("magnitude:Q", title="n"),
                                       alt.Tooltip("outlier_vectors:Q", title="outlier vectors")])
        )
    layer_name = str(points["label"].iloc[0]) if "label" in points and len(points) else ""
    text = title or f"{label} vs magnitude at {layer_name} (log-log)"
    return _finish(
        alt.layer(*layers).resolve_scale(fill="independent"),
        _title(text, notes or None),
        width,
        height,
    )


def alpha_profile(
    fits: pd.DataFrame,
    *,
    measures: Sequence[str] | None = None,
    x: str = "layer",
    window: tuple[float, float] | None = None,
    show_zero: bool = True,
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Alpha by layer with bootstrap CI bands, one colour per measure, core band shaded.

    ``fits`` is ``AnalysisResult.fits`` or :func:`magdash.presentation.tables.fit_table`: measure, layer,
    label, core, alpha, ci_low, ci_high (gamma too when ``x="gamma"``; r2, n_points, se are
    shown in the tooltip when present). ``measures`` picks and orders the measures (default:
    all in the frame). Layers without a CI (bootstrap off there) have no band; layers without
    a fit are gaps, shaded grey when no measure has one. ``window`` adds the Weber window band;
    ``show_zero`` the alpha = 0 line.
    """
    _require(fits, ["measure", "layer", "alpha", "ci_low", "ci_high", "core"], "alpha_profile")
    x_field, x_title = _x_field(x)
    frame = fits.copy()
    if measures is not None:
        frame = frame[frame["measure"].isin(list(measures))]
        order = [measure_label(m) for m in measures]
    else:
        order = [measure_label(m) for m in dict.fromkeys(frame["measure"])]
    frame["measure_label"] = frame["measure"].map(measure_label)
    if "label" not in frame:
        frame["label"] = frame["layer"].astype(str)
    color = alt.Color("measure_label:N", scale=_scale(order, MEASURE_COLORS), title="measure")
    tooltip = [
        alt.Tooltip("measure_label:N", title="measure"),
        alt.Tooltip("layer:Q"),
        alt.Tooltip("label:N"),
        alt.Tooltip("alpha:Q", format=".4f"),
        alt.Tooltip("ci_low:Q", title="CI low", format=".4f"),
        alt.Tooltip("ci_high:Q", title="CI high", format=".4f"),
    ] + [
        alt.Tooltip(f"{c}:Q", format=f) for c, f in (("r2", ".3f"), ("n_points", "d")) if c in frame
    ]
    axis = DepthAxis.of(frame[x_field], x_field, x_title)
    layers = _depth_backdrop(axis, frame, "alpha")
    if window is not None:
        layers.append(window_band(window))
    if show_zero:
        layers.append(zero_rule(0.0))
    columns = ["measure_label", "layer", "label", x_field, "alpha", "ci_low", "ci_high"]
    columns += [c for c in ("r2", "n_points") if c in frame]
    layers += _profile_layers(
        frame.loc[:, list(dict.fromkeys(columns))],
        x=axis.encoding(),
        y_field="alpha",
        y_title=ALPHA_TITLE,
        color=color,
        tooltip=tooltip,
        band=("ci_low", "ci_high"),
        detail="measure_label",
    )
    text = title or "Scaling exponent alpha by layer (bands: bootstrap CI; grey: core layers)"
    return _finish(alt.layer(*layers), _title(text, subtitle), width, height)


MASSIVE_VIEW_COLORS = {"raw": "#0072B2", "massive dimensions dropped": "#D55E00"}


def massive_alpha_chart(
    frame: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Alpha by layer of one measure, raw and with the massive dimensions dropped.

    ``frame`` (:func:`magdash.presentation.tables.massive_alpha_frame`): view, layer, label,
    core, alpha, ci_low, ci_high, n_massive. Grey: core layers; bands: bootstrap CIs.
    """
    _require(frame, ["view", "layer", "alpha", "ci_low", "ci_high", "core"], "massive_alpha_chart")
    axis = DepthAxis.of(frame["layer"], "layer", LAYER_TITLE)
    views = list(dict.fromkeys(frame["view"].astype(str)))
    layers = _depth_backdrop(axis, frame, "alpha")
    layers.append(zero_rule(0.0))
    columns = [c for c in ("view", "layer", "label", "alpha", "ci_low", "ci_high", "n_massive") if c in frame]
    layers += _profile_layers(
        frame.loc[:, columns],
        x=axis.encoding(),
        y_field="alpha",
        y_title=ALPHA_TITLE,
        color=alt.Color("view:N", scale=_scale(views, MASSIVE_VIEW_COLORS), title="vectors"),
        tooltip=[
            alt.Tooltip("view:N", title="vectors"),
            alt.Tooltip("layer:Q"),
            alt.Tooltip("alpha:Q", format=".4f"),
            alt.Tooltip("ci_low:Q", title="CI low", format=".4f"),
            alt.Tooltip("ci_high:Q", title="CI high", format=".4f"),
        ] + ([alt.Tooltip("n_massive:Q", title="massive dimensions")] if "n_massive" in frame else []),
        band=("ci_low", "ci_high"),
        detail="view",
    )
    text = title or "Alpha by layer, raw and without the massive-activation dimensions"
    return _finish(alt.layer(*layers), _title(text, subtitle), width, height)


def weber_window(
    fits: pd.DataFrame,
    window: tuple[float, float] = (0.8, 1.2),
    *,
    measure: str = "eucl",
    x: str = "layer",
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Alpha per layer of one or more models against the Weber window [lo, hi].

    ``fits`` (:func:`magdash.presentation.tables.models_fit_table`): model, measure, layer, alpha (label,
    gamma, core optional; without model, one series). Only ``measure`` is drawn. The y axis
    always includes the window and alpha = 1 (scalar variability), so the distance of the
    measured alphas from Weber's law is visible even when they sit near 0.
    """
    _require(fits, ["measure", "layer", "alpha"], "weber_window")
    x_field, x_title = _x_field(x)
    frame = fits[fits["measure"] == measure].copy()
    if "model" not in frame:
        frame["model"] = measure_label(measure)
    if "label" not in frame:
        frame["label"] = frame["layer"].astype(str)
    models = list(dict.fromkeys(frame["model"].astype(str)))
    color = alt.Color("model:N", scale=_scale(models, MODEL_COLORS), title="model")
    tooltip = [
        alt.Tooltip("model:N"),
        alt.Tooltip("layer:Q"),
        alt.Tooltip("label:N"),
        alt.Tooltip("alpha:Q", format=".4f"),
    ]
    low, high = (float(v) for v in window)
    axis = DepthAxis.of(frame[x_field], x_field, x_title)
    layers = [window_band((low, high)), zero_rule(1.0, dash=(2, 2)), zero_rule(0.0)]
    columns = list(dict.fromkeys(["model", "layer", "label", x_field, "alpha"]))
    layers += _profile_layers(
        frame.loc[:, columns],
        x=axis.encoding(),
        y_field="alpha",
        y_title=f"alpha of {measure_label(measure)}",
        color=color,
        tooltip=tooltip,
        detail="model",
    )
    text = title or f"Alpha against the Weber window [{low:g}, {high:g}] (dotted: alpha = 1)"
    return _finish(alt.layer(*layers), _title(text, subtitle), width, height)


def cv_chart(
    cv: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Coefficient of variation CV(n) = V_eucl(n) / ||m[n]|| against n, one line per layer.

    ``cv`` (:func:`magdash.presentation.tables.cv_frame`): layer, magnitude, cv (label optional). Weber's
    law predicts a flat CV; lines are coloured by layer index (light = shallow, dark = deep).
    """
    _require(cv, ["layer", "magnitude", "cv"], "cv_chart")
    frame = cv.copy()
    if "label" not in frame:
        frame["label"] = frame["layer"].astype(str)
    frame = frame.loc[:, ["layer", "label", "magnitude", "cv"]]
    x = alt.X("magnitude:Q", scale=alt.Scale(type="log"), title="magnitude n (log scale)")
    y = alt.Y("cv:Q", title="CV = V_eucl / ||centroid||")
    # Ordinal: layers are integers, and a continuous scale's legend reads 3.0, 3.5, 4.0, ...
    color = alt.Color("layer:O", scale=alt.Scale(scheme="viridis", reverse=True), title="layer")
    data = inline_data(frame[frame["magnitude"] > 0])
    line = alt.Chart(data).mark_line(invalid=PATH_INVALID, strokeWidth=1.2).encode(
        x=x, y=y, color=color, detail="layer:N"
    )
    points = (
        alt.Chart(data)
        .mark_point(size=14, filled=True, invalid=POINT_INVALID)
        .encode(
            x=x,
            y=y,
            color=color,
            tooltip=[
                alt.Tooltip("layer:Q"),
                alt.Tooltip("label:N"),
                alt.Tooltip("magnitude:Q", title="n"),
                alt.Tooltip("cv:Q", title="CV", format=".4f"),
            ],
        )
        .transform_filter("isValid(datum.cv) && isFinite(datum.cv)")
    )
    text = title or "Coefficient of variation against magnitude (flat = Weber's law)"
    return _finish(alt.layer(line, points), _title(text, subtitle), width, height)


def e4_chart(
    e4: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """E4: alpha of the on-axis (PC1) and off-axis variance per core layer.

    ``e4`` (:func:`magdash.presentation.tables.e4_frame`): layer, axis ("on-axis"/"off-axis"), alpha
    (label optional). Put the ratio and the Wilcoxon result in ``subtitle``.
    """
    _require(e4, ["layer", "axis", "alpha"], "e4_chart")
    frame = e4.copy()
    if "label" not in frame:
        frame["label"] = frame["layer"].astype(str)
    axes = list(dict.fromkeys(frame["axis"].astype(str)))
    color = alt.Color("axis:N", scale=_scale(axes, AXIS_COLORS), title="variance")
    layers = [zero_rule(0.0)]
    layers += _profile_layers(
        frame.loc[:, ["layer", "label", "axis", "alpha"]],
        x=DepthAxis.of(frame["layer"], "layer", LAYER_TITLE).encoding(),
        y_field="alpha",
        y_title="alpha of variance",
        color=color,
        tooltip=[
            alt.Tooltip("axis:N"),
            alt.Tooltip("layer:Q"),
            alt.Tooltip("label:N"),
            alt.Tooltip("alpha:Q", format=".4f"),
        ],
        detail="axis",
    )
    text = title or "E4 axis specificity: scaling of variance on and off the magnitude axis"
    return _finish(alt.layer(*layers), _title(text, subtitle), width, height)


def e3_chart(
    e3: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """E3 boundary sensitivity: core-layer alphas with and without the boundary magnitudes.

    ``e3`` (:func:`magdash.presentation.tables.e3_frame`): measure, layer, fit ("all magnitudes" /
    "without boundary"), alpha (label optional). Colour = measure, dash = fit.
    """
    _require(e3, ["measure", "layer", "fit", "alpha"], "e3_chart")
    frame = e3.copy()
    frame["measure_label"] = frame["measure"].map(measure_label)
    frame["series"] = frame["measure_label"] + ", " + frame["fit"].astype(str)
    if "label" not in frame:
        frame["label"] = frame["layer"].astype(str)
    order = list(dict.fromkeys(frame["measure_label"]))
    fits = [f for f in E3_FITS if f in set(frame["fit"])] or list(dict.fromkeys(frame["fit"]))
    color = alt.Color("measure_label:N", scale=_scale(order, MEASURE_COLORS), title="measure")
    dash = alt.StrokeDash(
        "fit:N", scale=alt.Scale(domain=fits, range=[[1, 0], [5, 3]][: len(fits)]), title="fit"
    )
    layers = [zero_rule(0.0)]
    layers += _profile_layers(
        frame.loc[:, ["measure_label", "series", "fit", "layer", "label", "alpha"]],
        x=DepthAxis.of(frame["layer"], "layer", LAYER_TITLE).encoding(),
        y_field="alpha",
        y_title=ALPHA_TITLE,
        color=color,
        tooltip=[
            alt.Tooltip("measure_label:N", title="measure"),
            alt.Tooltip("fit:N"),
            alt.Tooltip("layer:Q"),
            alt.Tooltip("label:N"),
            alt.Tooltip("alpha:Q", format=".4f"),
        ],
        detail="series",
        stroke_dash=dash,
    )
    text = title or "E3 sensitivity: alpha with and without the boundary magnitudes"
    return _finish(alt.layer(*layers), _title(text, subtitle), width, height)


def noise_model_chart(
    noise: pd.DataFrame,
    *,
    measure: str | None = "eucl",
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int | None = None,
) -> alt.LayerChart:
    """Heatmap of the Akaike weight of each noise model per layer; dots mark the AICc winner.

    ``noise`` (``AnalysisResult.noise_models`` or :func:`magdash.presentation.tables.noise_frame`): measure
    (filtered to ``measure`` unless None), layer, model, aicc, delta_aicc, weight
    (model_label and label optional). Layers without a score are grey with a tooltip.
    ``height`` None gives each noise model a row of :data:`NOISE_ROW_HEIGHT` pixels plus
    room for the titles and the axis: the app fits titles and axes into the chart's height.
    """
    _require(noise, ["layer", "model", "aicc", "delta_aicc", "weight"], "noise_model_chart")
    frame = noise.copy()
    if measure is not None and "measure" in frame:
        frame = frame[frame["measure"] == measure]
    if "model_label" not in frame:
        frame["model_label"] = frame["model"].map(lambda m: NOISE_MODEL_LABELS.get(m, m))
    if "label" not in frame:
        frame["label"] = frame["layer"].astype(str)
    frame = frame.loc[:, ["layer", "label", "model_label", "aicc", "delta_aicc", "weight"]]
    order = [label for label in NOISE_MODEL_LABELS.values() if label in set(frame["model_label"])]
    order += [m for m in dict.fromkeys(frame["model_label"]) if m not in order]
    x = alt.X("layer:O", title=LAYER_TITLE, axis=alt.Axis(labelAngle=0))
    y = alt.Y("model_label:N", sort=order, title="noise model", axis=alt.Axis(labelLimit=220))
    scored = _finite(frame, "weight")
    unscored = frame.drop(scored.index)
    layers = [
        alt.Chart(inline_data(scored))
        .mark_rect()
        .encode(
            x=x,
            y=y,
            color=alt.Color(
                "weight:Q",
                scale=alt.Scale(scheme="blues", domain=[0, 1]),
                title="Akaike weight",
            ),
            tooltip=[
                alt.Tooltip("layer:O"),
                alt.Tooltip("label:N"),
                alt.Tooltip("model_label:N", title="noise model"),
                alt.Tooltip("aicc:Q", title="AICc", format=".2f"),
                alt.Tooltip("delta_aicc:Q", title="delta AICc", format=".2f"),
                alt.Tooltip("weight:Q", title="Akaike weight", format=".3f"),
            ],
        ),
        alt.Chart(inline_data(scored[scored["delta_aicc"] == 0]))
        .mark_point(filled=True, color="#000000", size=25, shape="circle")
        .encode(x=x, y=y),
    ]
    if len(unscored):
        layers.insert(
            0,
            alt.Chart(inline_data(unscored.assign(reason=NO_FIT_TEXT)))
            .mark_rect(color=NO_FIT_FILL)
            .encode(x=x, y=y, tooltip=[alt.Tooltip("layer:O"), alt.Tooltip("reason:N")]),
        )
    label = measure_label(measure) if measure else "V"
    text = title or f"Noise models of {label} by AICc (dot: lowest AICc; grey: no score)"
    if height is None:
        height = NOISE_ROW_HEIGHT * max(len(order), 1) + NOISE_CHROME_HEIGHT
    return _finish(alt.layer(*layers), _title(text, subtitle), width, height)


# -- model comparison --------------------------------------------------------------------


def compare_profiles(
    comparison: pd.DataFrame,
    *,
    x: str = "layer",
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = 240,
) -> alt.VConcatChart:
    """Two models' alpha profiles (top) and their layerwise difference with its CI (bottom).

    ``comparison`` (:func:`magdash.presentation.tables.comparison_frame`, i.e. ``ModelComparison.layers``
    plus names): model_a, model_b, layer_a, layer_b, gamma_a, core, alpha_a, alpha_b, delta,
    ci_low, ci_high (measure optional). ``x="layer"`` uses model A's layer index,
    ``x="gamma"`` the depth fraction (for models of different depth). Grey: A's core band,
    over which the Wilcoxon test runs (put its result in ``subtitle``). ``width="container"``
    falls back to :data:`DEFAULT_WIDTH`: stacked panels cannot share a container width (each
    would take all of it and the axes would run off the page).
    """

    needed = ["model_a", "model_b", "layer_a", "layer_b", "core", "alpha_a", "alpha_b", "delta"]
    if width == "container":
        width = DEFAULT_WIDTH
    _require(comparison, [*needed, "ci_low", "ci_high"], "compare_profiles")
    x_field = {"layer": "layer_a", "gamma": "gamma_a"}.get(x)
    if x_field is None:
        raise AnalysisError(f"x must be 'layer' or 'gamma', got {x!r}")
    model_a = str(comparison["model_a"].iloc[0])
    model_b = str(comparison["model_b"].iloc[0])
    x_title = f"layer of {model_a}" if x == "layer" else GAMMA_TITLE
    measure = (
        measure_label(str(comparison["measure"].iloc[0])) if "measure" in comparison else "V"
    )
    frame = comparison.copy()
    if "gamma_a" not in frame:
        frame["gamma_a"] = np.nan
    axis = DepthAxis.of(frame[x_field], x_field, x_title)
    long = pd.concat(
        [
            pd.DataFrame(
                {
                    "model": name,
                    x_field: frame[x_field],
                    "layer": frame[layer_column],
                    "core": frame["core"],
                    "alpha": frame[alpha_column],
                }
            )
            for name, layer_column, alpha_column in (
                (model_a, "layer_a", "alpha_a"),
                (model_b, "layer_b", "alpha_b"),
            )
        ],
        ignore_index=True,
    )
    models = list(dict.fromkeys([model_a, model_b]))
    color = alt.Color("model:N", scale=_scale(models, MODEL_COLORS), title="model")
    top_layers = _depth_backdrop(axis, long, "alpha")
    top_layers.append(zero_rule(0.0))
    top_layers += _profile_layers(
        long.loc[:, ["model", x_field, "layer", "alpha"]],
        x=axis.encoding(),
        y_field="alpha",
        y_title=f"alpha of {measure}",
        color=color,
        tooltip=[
            alt.Tooltip("model:N"),
            alt.Tooltip("layer:Q", title="layer of this model"),
            alt.Tooltip("alpha:Q", format=".4f"),
        ],
        detail="model",
    )
    delta_frame = frame.loc[
        :, list(dict.fromkeys([x_field, "layer_a", "layer_b", "delta", "ci_low", "ci_high"]))
    ]
    delta_color = alt.value(REFERENCE_COLOR)
    bottom_layers = _depth_backdrop(axis, frame, "delta")
    bottom_layers.append(zero_rule(0.0))
    bottom_layers += _profile_layers(
        delta_frame,
        x=axis.encoding(),
        y_field="delta",
        y_title="delta alpha",
        color=delta_color,
        tooltip=[
            alt.Tooltip("layer_a:Q", title=f"layer of {model_a}"),
            alt.Tooltip("layer_b:Q", title=f"layer of {model_b}"),
            alt.Tooltip("delta:Q", format=".4f"),
            alt.Tooltip("ci_low:Q", title="CI low", format=".4f"),
            alt.Tooltip("ci_high:Q", title="CI high", format=".4f"),
        ],
        band=("ci_low", "ci_high"),
    )
    top = alt.layer(*top_layers).properties(
        width=width, height=height, title=_title(f"alpha of {measure} by {'layer' if x == 'layer' else 'depth'}")
    )
    bottom = alt.layer(*bottom_layers).properties(
        width=width,
        height=height,
        title=_title(f"difference {model_a} minus {model_b} (band: joint bootstrap CI)"),
    )
    text = title or f"{model_a} vs {model_b}: {measure}"
    return alt.vconcat(top, bottom).properties(title=_title(text, subtitle))


# -- geometry ----------------------------------------------------------------------------


def rdm_heatmap(
    rdm: pd.DataFrame,
    *,
    metric: str = "euclidean",
    title: str | None = None,
    subtitle: str | None = None,
    size: int = 360,
) -> alt.Chart:
    """Centroid RDM as a heatmap over magnitude pairs (Cacioli, arXiv 2603.20642).

    ``rdm`` (:func:`magdash.presentation.tables.rdm_frame`): a, b (magnitudes), dissimilarity. Cells
    without a value are left blank. An RDM of more than :data:`MAX_RDM_SIDE` magnitudes is drawn
    in blocks of consecutive magnitudes (:func:`magdash.presentation.tables.rdm_blocks`, labelled
    by each block's first magnitude), as a million cells would freeze the browser.
    """
    _require(rdm, ["a", "b", "dissimilarity"], "rdm_heatmap")
    frame = _finite(rdm, "dissimilarity").loc[:, ["a", "b", "dissimilarity"]]
    side = int(frame["a"].nunique())
    notes = _notes(subtitle)
    if side > MAX_RDM_SIDE:
        frame, block = rdm_blocks(frame, MAX_RDM_SIDE)
        notes.append(f"{side:,} magnitudes in blocks of {block} (mean per block; labels: first magnitude)")
    unit = "Euclidean distance" if metric == "euclidean" else f"{metric} distance"
    chart = (
        alt.Chart(inline_data(frame))
        .mark_rect()
        .encode(
            x=alt.X("a:O", title="magnitude a", sort="ascending", axis=alt.Axis(labelOverlap=True)),
            y=alt.Y("b:O", title="magnitude b", sort="descending", axis=alt.Axis(labelOverlap=True)),
            color=alt.Color("dissimilarity:Q", scale=alt.Scale(scheme="viridis"), title=unit),
            tooltip=[
                alt.Tooltip("a:Q"),
                alt.Tooltip("b:Q"),
                alt.Tooltip("dissimilarity:Q", title=unit, format=".4g"),
            ],
        )
    )
    text = title or f"Centroid dissimilarity ({unit})"
    return chart.properties(title=_title(text, notes or None), width=size, height=size)


def rsa_by_layer(
    rsa: pd.DataFrame,
    *,
    metric: str | None = "euclidean",
    x: str = "layer",
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """RSA (Spearman rho of the centroid RDM with a model RDM) by layer, log-ratio vs linear.

    ``rsa`` (:func:`magdash.presentation.tables.rsa_frame`): layer, model_rdm, rho (metric filtered to
    ``metric`` unless None; core, label, gamma optional). A log-compressive code has the
    log-ratio line above the linear one.
    """
    _require(rsa, ["layer", "model_rdm", "rho"], "rsa_by_layer")
    x_field, x_title = _x_field(x)
    frame = rsa.copy()
    if metric is not None and "metric" in frame:
        frame = frame[frame["metric"] == metric]
    if "label" not in frame:
        frame["label"] = frame["layer"].astype(str)
    models = list(dict.fromkeys(frame["model_rdm"].astype(str)))
    color = alt.Color("model_rdm:N", scale=_scale(models, RDM_MODEL_COLORS), title="model RDM")
    axis = DepthAxis.of(frame[x_field], x_field, x_title)
    layers = _depth_backdrop(axis, frame, "rho")
    layers.append(zero_rule(0.0))
    layers += _profile_layers(
        frame.loc[:, list(dict.fromkeys(["layer", "label", x_field, "model_rdm", "rho"]))],
        x=axis.encoding(),
        y_field="rho",
        y_title="Spearman rho",
        color=color,
        tooltip=[
            alt.Tooltip("model_rdm:N", title="model RDM"),
            alt.Tooltip("layer:Q"),
            alt.Tooltip("label:N"),
            alt.Tooltip("rho:Q", title="Spearman rho (centroid RDM vs model RDM)", format=".3f"),
        ],
        detail="model_rdm",
    )
    which = f" ({metric} RDM)" if metric else ""
    text = title or f"RSA by layer: log-ratio vs linear magnitude model{which}"
    return _finish(alt.layer(*layers), _title(text, subtitle), width, height)


def pc1_vs_logn(
    pc1: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Centroid PC1 coordinate against n on a log axis (straight = log-compressive).

    ``pc1`` (:func:`magdash.presentation.tables.pc1_frame`): magnitude, pc1. Put the correlations in
    ``subtitle``.
    """
    _require(pc1, ["magnitude", "pc1"], "pc1_vs_logn")
    frame = _finite(pc1, "magnitude", positive=True).loc[:, ["magnitude", "pc1"]]
    data = inline_data(frame)
    x = alt.X("magnitude:Q", scale=alt.Scale(type="log"), title="magnitude n (log scale)")
    y = alt.Y("pc1:Q", title="PC1 coordinate")
    line = alt.Chart(data).mark_line(color="#999999", invalid=PATH_INVALID).encode(
        x=x, y=y, order="magnitude:Q"
    )
    points = (
        alt.Chart(data)
        .mark_point(filled=True, size=50, color=MEASURE_COLORS["V_eucl"], invalid=POINT_INVALID)
        .encode(
            x=x,
            y=y,
            tooltip=[alt.Tooltip("magnitude:Q", title="n"), alt.Tooltip("pc1:Q", title="PC1 coordinate (activation units)", format=".4g")],
        )
    )
    text = title or "Centroid PC1 coordinate against log n"
    return _finish(alt.layer(line, points), _title(text, subtitle), width, height)


# -- corpus frequency (E5) ---------------------------------------------------------------


def frequency_loglog(
    counts: pd.DataFrame,
    curves: pd.DataFrame | None = None,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Corpus counts of the integers against n on log–log axes, with fitted curves.

    ``counts``: number, count (zero counts cannot be drawn on a log axis and are noted in the
    subtitle). ``curves`` (optional): number, predicted, model (e.g. "power law",
    "exponential"), one line per model, drawn only within the range of the observed counts.
    """
    _require(counts, ["number", "count"], "frequency_loglog")
    shown = _finite(counts, "number", "count", positive=True).loc[:, ["number", "count"]]
    notes = _notes(subtitle)
    if len(shown) < len(counts):
        notes.append(f"{len(counts) - len(shown)} number(s) with count 0 not drawn (log axis)")
    x = alt.X("number:Q", scale=alt.Scale(type="log"), title="integer n (log scale)")
    y_title = "corpus count (log scale)"
    # The y axis spans the observed counts; fitted curves are cut to that span, otherwise an
    # exponential fit falling to 1e-45 at n = 1,000 squashes the data into a strip. One number
    # format for every tick (SI prefixes: 1, 10, 100, 1k, 100k, 10M).
    counts_seen = shown["count"].to_numpy(dtype=np.float64)
    span = (float(counts_seen.min()), float(counts_seen.max())) if counts_seen.size else (1.0, 10.0)
    y_scale = alt.Scale(type="log", domain=list(span), nice=False)
    y_axis = alt.Axis(format="~s")
    layers = [
        alt.Chart(inline_data(shown))
        .mark_circle(size=12, opacity=0.6, color="#555555", invalid=POINT_INVALID)
        .encode(
            x=x,
            y=alt.Y("count:Q", scale=y_scale, axis=y_axis, title=y_title),
            tooltip=[alt.Tooltip("number:Q", title="n"), alt.Tooltip("count:Q", format=",d")],
        )
    ]
    if curves is not None and len(curves):
        _require(curves, ["number", "predicted", "model"], "frequency_loglog curves")
        fitted = _finite(curves, "number", "predicted", positive=True)
        predicted = fitted["predicted"].to_numpy(dtype=np.float64)
        fitted = fitted[(predicted >= span[0]) & (predicted <= span[1])]
        models = list(dict.fromkeys(fitted["model"].astype(str)))
        layers.append(
            alt.Chart(inline_data(fitted.loc[:, ["number", "predicted", "model"]]))
            .mark_line(clip=True, invalid=PATH_INVALID)
            .encode(
                x=x,
                y=alt.Y("predicted:Q", scale=y_scale, axis=y_axis, title=y_title),
                color=alt.Color("model:N", scale=_scale(models, MODEL_COLORS), title="fit"),
                tooltip=[alt.Tooltip("model:N", title="fit")],
            )
        )
    text = title or "Corpus frequency of integers (log-log)"
    return _finish(alt.layer(*layers), _title(text, notes or None), width, height)


def variability_vs_frequency(
    frame: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """V_eucl(n) at one layer against the corpus count of n, on a log(count + 1) axis (E5).

    ``frame``: magnitude, count, V. Points are labelled with their magnitude; put the
    Spearman rho in ``subtitle``.
    """
    _require(frame, ["magnitude", "count", "V"], "variability_vs_frequency")
    shown = _finite(frame, "count", "V").loc[:, ["magnitude", "count", "V"]]
    shown = shown.assign(count_plus_one=shown["count"].astype(float) + 1.0)
    data = inline_data(shown)
    x = alt.X("count_plus_one:Q", scale=alt.Scale(type="log"), title="corpus count + 1 (log)")
    y = alt.Y("V:Q", title="V_eucl", scale=alt.Scale(zero=False))  # V varies little: from 0 it is a flat line
    points = alt.Chart(data).mark_point(
        filled=True, size=50, color=MEASURE_COLORS["V_eucl"], invalid=POINT_INVALID
    ).encode(
        x=x,
        y=y,
        tooltip=[
            alt.Tooltip("magnitude:Q", title="n"),
            alt.Tooltip("count:Q", format=",d"),
            alt.Tooltip("V:Q", title=MEASURE_UNITS["V_eucl"], format=".4g"),
        ],
    )
    layers = [points]
    if len(shown) <= MAX_TEXT_LABELS:  # more labels would only overlap
        layers.append(alt.Chart(data).mark_text(dx=6, dy=-6, fontSize=9, color="#555555").encode(
            x=x, y=y, text=alt.Text("magnitude:Q", format="d")
        ))
    text = title or "Variability against corpus frequency (E5)"
    return _finish(alt.layer(*layers), _title(text, subtitle), width, height)


def frequency_rho_by_layer(
    frame: pd.DataFrame,
    *,
    x: str = "layer",
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Spearman rho of V_eucl(n) with log(count(n) + 1) per layer (E5), core band shaded.

    ``frame``: layer, rho (core, label, gamma, model optional; one line per model).
    """
    _require(frame, ["layer", "rho"], "frequency_rho_by_layer")
    x_field, x_title = _x_field(x)
    data = frame.copy()
    if "model" not in data:
        data["model"] = "rho"
    if "label" not in data:
        data["label"] = data["layer"].astype(str)
    models = list(dict.fromkeys(data["model"].astype(str)))
    axis = DepthAxis.of(data[x_field], x_field, x_title)
    layers = _depth_backdrop(axis, data, "rho")
    layers.append(zero_rule(0.0))
    layers += _profile_layers(
        data.loc[:, list(dict.fromkeys(["model", "layer", "label", x_field, "rho"]))],
        x=axis.encoding(),
        y_field="rho",
        y_title="Spearman rho",
        color=alt.Color("model:N", scale=_scale(models, MODEL_COLORS), title="model"),
        tooltip=[
            alt.Tooltip("model:N"),
            alt.Tooltip("layer:Q"),
            alt.Tooltip("label:N"),
            alt.Tooltip("rho:Q", title="Spearman rho (V_eucl vs log(count + 1))", format=".3f"),
        ],
        detail="model",
    )
    text = title or "Variability vs corpus frequency by layer (E5)"
    return _finish(alt.layer(*layers), _title(text, subtitle), width, height)


# -- robustness controls and study design ------------------------------------------------


def loo_chart(
    frame: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Alpha with all carriers (line) and without each one (points) per layer, core band shaded.

    ``frame`` (:func:`magdash.presentation.tables.loo_frame`): layer, label, core, without,
    alpha_loo, alpha_full.
    """
    _require(frame, ["layer", "core", "without", "alpha_loo", "alpha_full"], "loo_chart")
    axis = DepthAxis.of(frame["layer"], "layer", LAYER_TITLE)
    full = frame.drop_duplicates("layer").loc[:, ["layer", "core", "alpha_full"]]
    layers = _depth_backdrop(axis, full, "alpha_full")
    layers.append(zero_rule(0.0))
    layers += _profile_layers(
        full.assign(series="all carriers"),
        x=axis.encoding(), y_field="alpha_full", y_title=ALPHA_TITLE,
        color=alt.value(REFERENCE_COLOR),
        tooltip=[alt.Tooltip("layer:Q"), alt.Tooltip("alpha_full:Q", title="alpha, all carriers", format=".4f")],
    )
    carriers = list(dict.fromkeys(frame["without"]))
    layers.append(
        alt.Chart(inline_data(frame.loc[:, ["layer", "without", "alpha_loo", "alpha_full"]]))
        .mark_point(size=45, opacity=0.85, invalid=POINT_INVALID)
        .encode(
            x=axis.encoding(), y=alt.Y("alpha_loo:Q", title=ALPHA_TITLE),
            color=alt.Color("without:N", scale=_scale(carriers, MODEL_COLORS), title="carrier left out"),
            tooltip=[alt.Tooltip("layer:Q"), alt.Tooltip("without:N"),
                     alt.Tooltip("alpha_loo:Q", title="alpha without it", format=".4f"),
                     alt.Tooltip("alpha_full:Q", title="alpha, all carriers", format=".4f")],
        )
    )
    text = title or "Leave one carrier out: alpha without each sentence (line: all carriers)"
    return _finish(alt.layer(*layers), _title(text, subtitle), width, height)


def icc_chart(
    frame: pd.DataFrame,
    *,
    poor: float = 0.5,
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """ICC(3,k) of the carriers' RDMs per layer, with the ``poor`` agreement line.

    ``frame``: layer, core, icc (label optional).
    """
    _require(frame, ["layer", "core", "icc"], "icc_chart")
    data = frame.copy()
    if "label" not in data:
        data["label"] = data["layer"].astype(str)
    axis = DepthAxis.of(data["layer"], "layer", LAYER_TITLE)
    layers = _depth_backdrop(axis, data, "icc")
    layers.append(zero_rule(poor))
    layers += _profile_layers(
        data.loc[:, ["layer", "label", "icc"]],
        x=axis.encoding(), y_field="icc", y_title="ICC(3,k)", color=alt.value(MODEL_COLORS[0]),
        tooltip=[alt.Tooltip("layer:Q"), alt.Tooltip("label:N"), alt.Tooltip("icc:Q", title="ICC(3,k)", format=".3f")],
    )
    text = title or f"Agreement of the carriers' RDMs by layer (ICC(3,k); dashed: {poor:g}, poor below)"
    return _finish(alt.layer(*layers), _title(text, subtitle), width, height)


def permutation_chart(
    frame: pd.DataFrame,
    *,
    level: float = 0.05,
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """p of alpha per layer, parametric beside permutation, on a log scale with the ``level`` line.

    ``frame`` (:func:`magdash.presentation.tables.permutation_frame`): layer, core, test, p.
    """
    _require(frame, ["layer", "core", "test", "p"], "permutation_chart")
    data = _finite(frame, "p", positive=True)
    axis = DepthAxis.of(frame["layer"], "layer", LAYER_TITLE)
    layers = _depth_backdrop(axis, frame, "p")
    layers.append(zero_rule(level))
    tests = list(dict.fromkeys(frame["test"]))
    layers += _profile_layers(
        data.loc[:, ["layer", "test", "p"]],
        x=axis.encoding(), y_field="p", y_title="p (log scale)",
        color=alt.Color("test:N", scale=_scale(tests, MODEL_COLORS), title="test"),
        tooltip=[alt.Tooltip("layer:Q"), alt.Tooltip("test:N"), alt.Tooltip("p:Q", format=".2e")],
        detail="test", y_scale=alt.Scale(type="log"),
    )
    text = title or f"Is alpha more than shuffled magnitudes give? p by layer (dashed: {level:g})"
    return _finish(alt.layer(*layers), _title(text, subtitle), width, height)


def power_curve(
    frame: pd.DataFrame,
    *,
    x: str = "alpha",
    x_title: str = "true alpha",
    target: float = 0.8,
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Rejection rate against the true effect, one line per series with its Monte Carlo band.

    ``frame`` (:func:`magdash.presentation.tables.h1_power_frame` or ``e6_power_frame``): x,
    series, rate, low, high. The dashed line marks the ``target`` power.
    """
    _require(frame, [x, "series", "rate", "low", "high"], "power_curve")
    series = list(dict.fromkeys(frame["series"]))
    color = alt.Color("series:N", scale=_scale(series, MODEL_COLORS), title="test")
    encoding = alt.X(f"{x}:Q", title=x_title)
    layers: list[Any] = [zero_rule(target)]
    layers += _profile_layers(
        frame.loc[:, [x, "series", "rate", "low", "high"]],
        x=encoding, y_field="rate", y_title="power (rejection rate)", color=color,
        tooltip=[alt.Tooltip("series:N", title="test"), alt.Tooltip(f"{x}:Q", format=".4f"),
                 alt.Tooltip("rate:Q", title="power", format=".3f"),
                 alt.Tooltip("low:Q", title="MC band low", format=".3f"),
                 alt.Tooltip("high:Q", title="MC band high", format=".3f")],
        band=("low", "high"), detail="series", y_scale=alt.Scale(domain=[0, 1]),
    )
    text = title or f"Power against the true effect (bands: Monte Carlo 95%; dashed: {target:.0%})"
    return _finish(alt.layer(*layers), _title(text, subtitle), width, height)


def ci_width_chart(
    frame: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Expected 95% CI half-width of alpha as the carriers or the magnitudes grow (log x).

    ``frame`` (:func:`magdash.presentation.tables.ci_width_frame`): factor, value, half_width,
    low, high.
    """
    _require(frame, ["factor", "value", "half_width", "low", "high"], "ci_width_chart")
    factors = list(dict.fromkeys(frame["factor"]))
    layers = _profile_layers(
        frame.loc[:, ["factor", "value", "half_width", "low", "high"]],
        x=alt.X("value:Q", title="number of carriers or of magnitudes", scale=alt.Scale(type="log")),
        y_field="half_width", y_title="CI half-width of alpha",
        color=alt.Color("factor:N", scale=_scale(factors, MODEL_COLORS), title="grows"),
        tooltip=[alt.Tooltip("factor:N", title="grows"), alt.Tooltip("value:Q", title="count"),
                 alt.Tooltip("half_width:Q", format=".4f"), alt.Tooltip("low:Q", format=".4f"),
                 alt.Tooltip("high:Q", format=".4f")],
        band=("low", "high"), detail="factor",
    )
    text = title or "How precise is alpha? Expected 95% CI half-width per layer"
    return _finish(alt.layer(*layers), _title(text, subtitle), width, height)


# -- depth (phase diagnostics) -----------------------------------------------------------


def _gamma_c_layers(gamma_c: float | None, interval: tuple[float, float] | None) -> list:
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


def order_parameter_chart(
    frame: pd.DataFrame,
    *,
    baseline: float | None = ISOTROPIC_OMEGA_BASELINE,
    gamma_c: float | None = None,
    gamma_c_interval: tuple[float, float] | None = None,
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Order parameter m(gamma) = mean Omega per layer, with CI, control and null baseline.

    ``frame``: gamma, m, ci_low, ci_high, series ("trained", "random control"; layer, label
    and view optional). With a ``view`` column (raw, massive dimensions dropped, ...) each
    view gets its own dash pattern, so raw and adjusted curves sit together. ``baseline``
    draws the isotropic-Gaussian mean 1 - sqrt(2/pi) (pass the exact finite-d value from
    :func:`magdash.phase.omega.isotropic_omega_mean` if wanted; None hides it). ``gamma_c``
    (a dashed rule) and its interval are marked in orange.
    """
    _require(frame, ["gamma", "m", "ci_low", "ci_high", "series"], "order_parameter_chart")
    data = frame.copy()
    if "layer" not in data:
        data["layer"] = np.nan
    if "view" not in data:
        data["view"] = "raw"
    data["curve"] = data["series"].astype(str) + " · " + data["view"].astype(str)
    views = list(dict.fromkeys(data["view"].astype(str)))
    dash = None if len(views) < 2 else alt.StrokeDash(
        "view:N", title="vectors", scale=alt.Scale(domain=views, range=[[1, 0], [6, 3], [2, 2]][: len(views)])
    )
    series = list(dict.fromkeys(data["series"].astype(str)))
    color = alt.Color("series:N", scale=_scale(series, SERIES_COLORS), title="model")
    layers = _gamma_c_layers(gamma_c, gamma_c_interval)
    if baseline is not None:
        layers.append(
            alt.Chart()
            .mark_rule(color=REFERENCE_COLOR, strokeDash=[2, 3])
            .encode(
                y=alt.datum(float(baseline)),
                tooltip=alt.value(f"isotropic Gaussian baseline {float(baseline):.4f}"),
            )
        )
    layers += _profile_layers(
        data.loc[:, ["series", "view", "curve", "gamma", "layer", "m", "ci_low", "ci_high"]],
        x=DepthAxis.of(data["gamma"], "gamma", GAMMA_TITLE).encoding(),
        y_field="m",
        y_title="m(gamma) = mean Omega",
        # Omega sits in a narrow range (about 0.2 for isotropic vectors): a zero-based axis
        # would flatten the curves and their CIs into one line.
        y_scale=alt.Scale(zero=False),
        color=color,
        stroke_dash=dash,
        tooltip=[
            alt.Tooltip("series:N", title="model"),
            alt.Tooltip("view:N", title="vectors"),
            alt.Tooltip("gamma:Q", format=".3f"),
            alt.Tooltip("layer:Q"),
            alt.Tooltip("m:Q", title="m = mean object integrity Omega", format=".4f"),
            alt.Tooltip("ci_low:Q", title="CI low", format=".4f"),
            alt.Tooltip("ci_high:Q", title="CI high", format=".4f"),
        ],
        band=("ci_low", "ci_high"),
        detail="curve",
    )
    text = title or f"Order parameter m(gamma) (dotted: isotropic baseline; {GAMMA_C_NOTE})"
    return _finish(alt.layer(*layers), _title(text, subtitle), width, height)


def omega_heatmap(
    histogram: pd.DataFrame,
    *,
    y: str = "layer",
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.Chart:
    """Distribution of Omega per layer as a heatmap (rows: layers, deepest on top).

    ``histogram`` (:func:`magdash.presentation.tables.omega_histogram_frame`): layer, omega_low,
    omega_high, count, fraction (gamma optional; ``y="gamma"`` labels rows by depth
    fraction). Colour is the fraction of the layer's vectors in each bin, so layers with
    different counts compare; empty bins stay blank.
    """
    _require(histogram, ["layer", "omega_low", "omega_high", "count", "fraction"], "omega_heatmap")
    if y not in ("layer", "gamma"):
        raise AnalysisError(f"y must be 'layer' or 'gamma', got {y!r}")
    columns = ["layer", "omega_low", "omega_high", "count", "fraction"]
    if "gamma" in histogram:
        columns.append("gamma")
    frame = histogram.loc[histogram["count"] > 0, columns]
    chart = (
        alt.Chart(inline_data(frame))
        .mark_rect()
        .encode(
            x=alt.X("omega_low:Q", title="object integrity Omega", scale=alt.Scale(zero=False)),
            x2="omega_high:Q",
            y=alt.Y(
                f"{y}:O",
                sort="descending",
                title=LAYER_TITLE if y == "layer" else GAMMA_TITLE,
            ),
            color=alt.Color(
                "fraction:Q", scale=alt.Scale(scheme="greys"), title="fraction of vectors"
            ),
            tooltip=[
                alt.Tooltip("layer:O"),
                alt.Tooltip("omega_low:Q", title="Omega from", format=".2f"),
                alt.Tooltip("omega_high:Q", title="Omega to", format=".2f"),
                alt.Tooltip("count:Q", format=",d"),
                alt.Tooltip("fraction:Q", format=".3f"),
            ],
        )
    )
    text = title or "Omega distribution by layer"
    return _finish(chart, _title(text, subtitle), width, height)


def spectrum_chart(
    histogram: pd.DataFrame,
    mp: pd.DataFrame,
    spikes: pd.DataFrame,
    *,
    edge: float | None = None,
    threshold: float | None = None,
    log_x: bool = True,
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """One layer's covariance spectrum over the fitted Marchenko–Pastur density, spikes marked.

    From :func:`magdash.presentation.tables.spectrum_frames`: ``histogram`` (low, high, count, density),
    ``mp`` (eigenvalue, density) and ``spikes`` (rank, eigenvalue; red rules). ``edge`` is
    the fitted bulk edge lambda+ (solid grey), ``threshold`` the Tracy–Widom spike threshold
    (dashed orange). The histogram is a density per unit eigenvalue, as the MP curve is.
    """
    _require(histogram, ["low", "high", "density"], "spectrum_chart")
    _require(mp, ["eigenvalue", "density"], "spectrum_chart")
    _require(spikes, ["rank", "eigenvalue"], "spectrum_chart")
    scale = alt.Scale(type="log") if log_x else alt.Scale(zero=False)
    x_title = "eigenvalue" + (" (log scale)" if log_x else "")
    y_title = "density"
    bars = _finite(histogram, "low", "high", "density", positive=log_x)
    bar_columns = [c for c in ("low", "high", "count", "density") if c in bars]
    layers: list[alt.Chart] = [
        alt.Chart(inline_data(bars.loc[:, bar_columns]))
        .mark_rect(color="#9ecae1", stroke="#6baed6", strokeWidth=0.3)
        .encode(
            x=alt.X("low:Q", scale=scale, title=x_title),
            x2="high:Q",
            y=alt.Y("density:Q", title=y_title),
            y2=alt.datum(0),
            tooltip=[
                alt.Tooltip("low:Q", title="from", format=".4g"),
                alt.Tooltip("high:Q", title="to", format=".4g"),
                *([alt.Tooltip("count:Q", format=",d")] if "count" in bars else []),
                alt.Tooltip("density:Q", title="density per unit eigenvalue", format=".4g"),
            ],
        )
    ]
    curve = _finite(mp, "eigenvalue", "density", positive=log_x)
    if len(curve):
        layers.append(
            alt.Chart(inline_data(curve.loc[:, ["eigenvalue", "density"]]))
            .mark_line(color="#000000", strokeWidth=1.5, invalid=PATH_INVALID)
            .encode(
                x=alt.X("eigenvalue:Q", scale=scale, title=x_title),
                y=alt.Y("density:Q", title=y_title),
            )
        )
    marked = _finite(spikes, "eigenvalue", positive=log_x)
    if len(marked):
        layers.append(
            alt.Chart(inline_data(marked.loc[:, ["rank", "eigenvalue"]]))
            .mark_rule(color=SPIKE_COLOR, strokeWidth=1.2)
            .encode(
                x=alt.X("eigenvalue:Q", scale=scale, title=x_title),
                tooltip=[
                    alt.Tooltip("rank:Q", title="spike rank"),
                    alt.Tooltip("eigenvalue:Q", format=".4g"),
                ],
            )
        )
    for value, dash, colour, name in (
        (edge, [1, 0], REFERENCE_COLOR, "MP bulk edge lambda+"),
        (threshold, [5, 3], SPIKE_COLOR, "Tracy-Widom spike threshold"),
    ):
        if value is not None and math.isfinite(float(value)) and (float(value) > 0 or not log_x):
            layers.append(
                alt.Chart()
                .mark_rule(color=colour, strokeDash=dash, strokeWidth=1.5)
                .encode(
                    x=alt.datum(float(value)),
                    tooltip=alt.value(f"{name} = {float(value):.4g}"),
                )
            )
    notes = _notes(subtitle)
    notes.append(f"{len(marked)} spike(s) above the Tracy-Widom threshold (orange lines)")
    text = title or "Covariance spectrum over the fitted Marchenko-Pastur density"
    return _finish(alt.layer(*layers), _title(text, notes), width, height)


def rank_chart(
    frame: pd.DataFrame,
    *,
    gamma_c: float | None = None,
    gamma_c_interval: tuple[float, float] | None = None,
    log_y: bool = True,
    title: str | None = None,
    subtitle: str | None = None,
    width: Width = DEFAULT_WIDTH,
    height: int = DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Effective rank (Roy & Vetterli) and participation ratio against gamma, gamma_c marked.

    ``frame``: gamma, effective_rank, participation_ratio, series ("trained", "random
    control"; layer optional). Colour = series, dash = which dimension count.
    """
    _require(
        frame, ["gamma", "effective_rank", "participation_ratio", "series"], "rank_chart"
    )
    data = frame.copy()
    if "layer" not in data:
        data["layer"] = np.nan
    long = data.melt(
        id_vars=["series", "gamma", "layer"],
        value_vars=["effective_rank", "participation_ratio"],
        var_name="quantity",
        value_name="dimensions",
    )
    long["quantity"] = long["quantity"].map(
        {"effective_rank": "effective rank", "participation_ratio": "participation ratio"}
    )
    long["line"] = long["series"].astype(str) + ", " + long["quantity"]
    if log_y:
        long.loc[~(pd.to_numeric(long["dimensions"], errors="coerce") > 0), "dimensions"] = np.nan
    series = list(dict.fromkeys(long["series"].astype(str)))
    color = alt.Color("series:N", scale=_scale(series, SERIES_COLORS), title="model")
    dash = alt.StrokeDash(
        "quantity:N",
        scale=alt.Scale(
            domain=["effective rank", "participation ratio"], range=[[1, 0], [5, 3]]
        ),
        title="quantity",
    )
    layers = _gamma_c_layers(gamma_c, gamma_c_interval)
    profile = _profile_layers(
        long,
        x=DepthAxis.of(long["gamma"], "gamma", GAMMA_TITLE).encoding(),
        y_field="dimensions",
        y_title="dimensions" + (" (log scale)" if log_y else ""),
        color=color,
        tooltip=[
            alt.Tooltip("series:N", title="model"),
            alt.Tooltip("quantity:N"),
            alt.Tooltip("gamma:Q", format=".3f"),
            alt.Tooltip("layer:Q"),
            alt.Tooltip("dimensions:Q", format=".2f"),
        ],
        detail="line",
        stroke_dash=dash,
        y_scale=alt.Scale(type="log") if log_y else None,
    )
    layers += profile
    text = title or f"Effective rank and participation ratio by depth ({GAMMA_C_NOTE})"
    return _finish(alt.layer(*layers), _title(text, subtitle), width, height)
