"""Number frequency and E5 as figures and tables (Cacioli, arXiv 2604.04469, E5): the counts'
distribution with its fits, V against a number's corpus count, the partial Spearman rho given log n
and the raw rho by layer.

Each figure's frame, chart (:mod:`magdash.presentation.chart_style`) and figure function sit
together, as in :mod:`magdash.presentation.scaling_figures`.
"""

from __future__ import annotations

import math

import altair as alt
import numpy as np
import pandas as pd

from magdash.formatting import fixed, format_p
from magdash.frequency import (
    E5_STATISTICS,
    counts_for_magnitudes,
    distribution_plot_data,
    e5_summary,
    fit_distributions,
)
from magdash.frequency.sources import FrequencySource
from magdash.presentation import chart_style as style
from magdash.variability.analysis import AnalysisResult
from magdash.variability.conventions import MAGDASH
from magdash.variability.measures import MEASURES

# -- E5 by layer --------------------------------------------------------------------------


E5_LINES = {E5_STATISTICS["partial"]: style.MODEL_COLORS[0], E5_STATISTICS["raw"]: style.REFERENCE_COLOR}
"""The colours of E5's two correlations: the decisive partial one in the first model colour, the raw one grey."""


def e5_rho_frame(table: pd.DataFrame) -> pd.DataFrame:
    """An E5 table (:func:`e5_table`) long, one row per (statistic, layer), the partial correlation
    first: statistic, layer, label, core, rho, ci_low, ci_high (the frame of :func:`frequency_rho_by_layer`)."""
    frames = []
    for prefix, name in E5_STATISTICS.items():
        frame = table.loc[:, [c for c in ("layer", "label", "core") if c in table]].copy()
        frame.insert(0, "statistic", name)
        frame["rho"] = table[f"{prefix}_rho"]
        frame["ci_low"], frame["ci_high"] = table[f"{prefix}_ci_low"], table[f"{prefix}_ci_high"]
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def frequency_rho_by_layer(
    frame: pd.DataFrame,
    *,
    x: str = "layer",
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """E5's correlations of V(n) with log(count(n) + 1) per layer, core band shaded.

    ``frame``: layer, rho; ``statistic`` (one line each: :data:`E5_LINES`' partial solid, raw
    dashed, each with its band; default one line "rho"), ``ci_low``/``ci_high`` (a band), ``core``,
    ``label``, ``gamma`` optional (:func:`e5_rho_frame` builds it from an E5 table).
    """
    style.require_columns(frame, ["layer", "rho"], "frequency_rho_by_layer")
    x_field, x_title = style.depth_field(x)
    data = frame.copy()
    if "statistic" not in data:
        data["statistic"] = "rho"
    if "label" not in data:
        data["label"] = data["layer"].astype(str)
    band = ("ci_low", "ci_high") if {"ci_low", "ci_high"} <= set(data) else None
    statistics = list(dict.fromkeys(data["statistic"].astype(str)))
    axis = style.DepthAxis.of(data[x_field], x_field, x_title)
    layers = style.depth_backdrop(axis, data[data["statistic"] == statistics[0]], "rho")
    layers.append(style.zero_rule(0.0))
    columns = ["statistic", "layer", "label", x_field, "rho", *(band or ())]
    layers += style.profile_layers(
        data.loc[:, list(dict.fromkeys(columns))],
        x=axis.encoding(),
        y_field="rho",
        y_title="Spearman rho",
        color=alt.Color("statistic:N", scale=style.color_scale(statistics, E5_LINES), title="statistic"),
        stroke_dash=alt.StrokeDash("statistic:N", scale=alt.Scale(
            domain=statistics, range=[[1, 0], [5, 3]][: len(statistics)]), legend=None),
        tooltip=[
            alt.Tooltip("statistic:N"),
            alt.Tooltip("layer:Q"),
            alt.Tooltip("label:N"),
            alt.Tooltip("rho:Q", title="Spearman rho (V vs log(count + 1))", format=".3f"),
            *([alt.Tooltip("ci_low:Q", title="CI low", format=".3f"),
               alt.Tooltip("ci_high:Q", title="CI high", format=".3f")] if band else []),
        ],
        band=band,
        detail="statistic",
    )
    text = title or "Variability vs corpus frequency by layer (E5)"
    return style.finish(style.layered(*layers), style.chart_title(text, subtitle), width, height)


def e5_table(result: AnalysisResult, e5: pd.DataFrame) -> pd.DataFrame:
    """The E5 of every layer (:func:`magdash.runs.frequency_runs.e5_from_analysis`: the partial rho of V(n)
    with log(count(n) + 1) given log n, then the raw rho, each with its p and CI) with the model and the core band."""
    table = e5.copy()
    table.insert(0, "model", result.model)
    table.insert(3, "core", table["layer"].isin(result.core_layers))
    return table


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def e5_sentence(table: pd.DataFrame, source: FrequencySource, conventions: str = MAGDASH) -> str:
    """The E5 summary over the core layers, the partial correlation first, significance counted by ``conventions``."""
    summary = e5_summary(table[table["core"]].reset_index(drop=True), conventions=conventions)
    partial, raw = summary["partial"], summary["raw"]
    rule = summary["significance"]
    if partial["best_layer"] is None:
        sentence = (f"No core layer has a {E5_STATISTICS['partial']}: V or the count orders the magnitudes as n "
                    "does, so nothing is left to correlate once log n is controlled.")
    else:
        sentence = (
            f"{_capitalised(E5_STATISTICS['partial'])}, the test of the frequency account, over the core layers: "
            f"mean {fixed(partial['mean_rho'])}, median {fixed(partial['median_rho'])}; "
            f"{partial['significant_layers']} of {partial['layers_with_rho']} layers significant ({rule}), "
            f"largest |rho| at layer {partial['best_layer']} ({fixed(partial['best_rho'])}, p = {format_p(partial['best_p'])})."
        )
    if raw["best_layer"] is not None:
        sentence += (
            f" {_capitalised(E5_STATISTICS['raw'])} (the paper's E5, confounded with magnitude: counts fall with n): "
            f"mean {fixed(raw['mean_rho'])}, {raw['significant_layers']} of {raw['layers_with_rho']} layers "
            f"significant ({rule})."
        )
    if summary["unreachable"]:
        sentence += f" Note: {summary['unreachable']}."
    return sentence + f" Source {source.name}: {len(source.counts):,} numbers, {source.total:,} occurrences."


def frequency_rho_figure(table: pd.DataFrame) -> alt.LayerChart:
    """E5 by layer: the partial Spearman rho of V(n) with log(count + 1) given log n (solid) and the raw rho
    (dashed), each with its bootstrap CI.

    Args:
        table: the E5 table (one row per layer).
    """
    return frequency_rho_by_layer(
        e5_rho_frame(table), subtitle="the partial rho tests the frequency account; the raw rho is confounded with n",
        width="container",
    )


# -- V against the corpus count -----------------------------------------------------------


def frequency_scatter_frame(result: AnalysisResult, source: FrequencySource, measure: str, layer: int, missing: str = "error") -> pd.DataFrame:
    """magnitude, count, V at one layer (the points of the E5 scatter)."""
    counts = counts_for_magnitudes(result.magnitudes, source, missing)
    return pd.DataFrame(
        {"magnitude": result.magnitudes, "count": np.asarray(counts, dtype=np.float64), "V": result.values[measure][layer]}
    )


def variability_vs_frequency(
    frame: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """V_eucl(n) at one layer against the corpus count of n, on a log(count + 1) axis (E5).

    ``frame``: magnitude, count, V. Points are labelled with their magnitude; put the
    Spearman rho in ``subtitle``.
    """
    style.require_columns(frame, ["magnitude", "count", "V"], "variability_vs_frequency")
    shown = style.finite_rows(frame, "count", "V").loc[:, ["magnitude", "count", "V"]]
    shown = shown.assign(count_plus_one=shown["count"].astype(float) + 1.0)
    data = style.inline_data(shown)
    x = alt.X("count_plus_one:Q", scale=alt.Scale(type="log"), title="corpus count + 1 (log)")
    y = alt.Y("V:Q", title="V_eucl", scale=alt.Scale(zero=False))  # V varies little: from 0 it is a flat line
    points = alt.Chart(data).mark_point(
        filled=True, size=50, color=style.MEASURE_COLORS["V_eucl"], invalid=style.POINT_INVALID
    ).encode(
        x=x,
        y=y,
        tooltip=[
            alt.Tooltip("magnitude:Q", title="n"),
            alt.Tooltip("count:Q", format=",d"),
            alt.Tooltip("V:Q", title=MEASURES["eucl"].explained, format=".4g"),
        ],
    )
    layers = [points]
    if len(shown) <= style.MAX_TEXT_LABELS:  # more labels would only overlap
        layers.append(alt.Chart(data).mark_text(dx=6, dy=-6, fontSize=9, color=style.POINT_GREY).encode(
            x=x, y=y, text=alt.Text("magnitude:Q", format="d")
        ))
    text = title or "Variability against corpus frequency (E5)"
    return style.finish(style.layered(*layers), style.chart_title(text, subtitle), width, height)


def frequency_scatter_figure(frame: pd.DataFrame, table: pd.DataFrame, layer: int, label: str) -> alt.LayerChart:
    """E5 at one layer: V against each magnitude's corpus count.

    Args:
        frame: magnitude, count and V at the layer (``frequency_scatter_frame``).
        table: the E5 table, for the layer's partial and raw rho and their p.
        layer: the layer shown.
        label: the layer's label.
    """
    row = table[table["layer"] == layer]

    def statistic(prefix: str) -> str:
        rho = float(row[f"{prefix}_rho"].iloc[0]) if len(row) else math.nan
        p = float(row[f"{prefix}_p"].iloc[0]) if len(row) else math.nan
        return f"{E5_STATISTICS[prefix]} = {fixed(rho)}, p = {format_p(p)}"

    subtitle = f"layer {layer} ({label}): {statistic('partial')}; {statistic('raw')}"
    return variability_vs_frequency(frame, subtitle=subtitle, width="container")


# -- the counts' distribution -------------------------------------------------------------


FIT_LABELS = {"power_law": "power law", "exponential": "exponential", "loglog_ols": "log-log OLS"}
"""Legend names of the count-distribution fits of :func:`magdash.frequency.fit_distributions`."""


def frequency_loglog(
    counts: pd.DataFrame,
    curves: pd.DataFrame | None = None,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Corpus counts of the integers against n on log–log axes, with fitted curves.

    ``counts``: number, count (zero counts cannot be drawn on a log axis and are noted in the
    subtitle). ``curves`` (optional): number, predicted, model (e.g. "power law",
    "exponential"), one line per model, drawn only within the range of the observed counts.
    """
    style.require_columns(counts, ["number", "count"], "frequency_loglog")
    shown = style.finite_rows(counts, "number", "count", positive=True).loc[:, ["number", "count"]]
    notes = style.subtitle_lines(subtitle)
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
        alt.Chart(style.inline_data(shown))
        .mark_circle(size=12, opacity=0.6, color=style.POINT_GREY, invalid=style.POINT_INVALID)
        .encode(
            x=x,
            y=alt.Y("count:Q", scale=y_scale, axis=y_axis, title=y_title),
            tooltip=[alt.Tooltip("number:Q", title="n"), alt.Tooltip("count:Q", format=",d")],
        )
    ]
    if curves is not None and len(curves):
        style.require_columns(curves, ["number", "predicted", "model"], "frequency_loglog curves")
        fitted = style.finite_rows(curves, "number", "predicted", positive=True)
        predicted = fitted["predicted"].to_numpy(dtype=np.float64)
        fitted = fitted[(predicted >= span[0]) & (predicted <= span[1])]
        models = list(dict.fromkeys(fitted["model"].astype(str)))
        layers.append(
            alt.Chart(style.inline_data(fitted.loc[:, ["number", "predicted", "model"]]))
            .mark_line(clip=True, invalid=style.PATH_INVALID)
            .encode(
                x=x,
                y=alt.Y("predicted:Q", scale=y_scale, axis=y_axis, title=y_title),
                color=alt.Color("model:N", scale=style.color_scale(models, style.MODEL_COLORS), title="fit"),
                tooltip=[alt.Tooltip("model:N", title="fit")],
            )
        )
    text = title or "Corpus frequency of integers (log-log)"
    return style.finish(style.layered(*layers), style.chart_title(text, notes or None), width, height)


def frequency_counts_figure(source: FrequencySource) -> alt.LayerChart:
    """Counts of 1..N on log-log axes with the power-law, exponential and log-log OLS fits.

    Args:
        source: the frequency source.
    """
    plot = distribution_plot_data(source)
    fit_columns = [c for c in plot.columns if c not in ("number", "count", "proportion")]
    total = float(plot.loc[(plot["number"] >= 1) & (plot["count"] > 0), "count"].sum())
    curves = plot.melt(id_vars=["number"], value_vars=fit_columns, var_name="model", value_name="predicted")
    curves["model"] = curves["model"].map(lambda name: FIT_LABELS.get(name, name))
    # The fits are on the proportion scale; multiply back to counts to share the axis.
    curves["predicted"] = curves["predicted"] * total
    return frequency_loglog(plot[["number", "count"]], curves, subtitle=f"source {source.name}", width="container")


def frequency_fit_table(source: FrequencySource) -> pd.DataFrame:
    """The count-distribution fits, named as in the figure's legend (column ``distribution``: the
    fitted law, not a language model)."""
    table = fit_distributions(source).assign(model=lambda t: t["model"].map(lambda m: FIT_LABELS.get(m, m)))
    return table.rename(columns={"model": "distribution"})
