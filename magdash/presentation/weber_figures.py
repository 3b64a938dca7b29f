"""The Weber page's figures (Cacioli 2026, arXiv 2604.04469): alpha against the Weber window, the
verdicts H1-H4 across models, the coefficient of variation, the noise models by AICc, E3 (the
boundary magnitudes) and E4 (on- and off-axis variance).

Each figure's frame, chart and figure function sit together, as in
:mod:`magdash.presentation.scaling_figures`. The few numbers only a figure needs are computed here:
:func:`verdict_frame`: the programme verdict across the trained models shown, each ``@random``
control beside its model and not counted
(:func:`magdash.variability.hypotheses.programme_verdict`); :func:`noise_summary`: counts of
the core layers each noise model wins.

Wherever a p-value is written, the stimulus bootstrap's estimate and interval come first
(:func:`magdash.significance.stimulus_estimate`), a test over core layers is named as one
(:func:`magdash.significance.layer_test_note`), and a test that cannot reach .05 with its points
says so (:func:`magdash.significance.unreachable_note`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import altair as alt
import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.formatting import fixed, format_p, layer_span
from magdash.names import is_control_name, model_of_control
from magdash.presentation import chart_style as style
from magdash.presentation.scaling_figures import models_fits_frame
from magdash.significance import unreachable_note
from magdash.variability.hypotheses import HYPOTHESES, programme_verdict
from magdash.variability.measures import DEFAULT_MEASURE, measure_title

if TYPE_CHECKING:
    from magdash.variability.analysis import AnalysisResult


# -- the Weber window ---------------------------------------------------------------------


def weber_window(
    fits: pd.DataFrame,
    window: tuple[float, float] = (0.8, 1.2),
    *,
    measure: str = DEFAULT_MEASURE,
    x: str = "layer",
    registered: Sequence[str] = (),
    title: str | None = None,
    subtitle: str | Sequence[str] | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Alpha per layer of one or more models against the Weber window [lo, hi].

    ``fits`` (:func:`models_fits_frame`): model, measure, layer, alpha (label,
    gamma, core optional; without model, one series). Only ``measure`` is drawn. The y axis
    always includes the window and alpha = 1 (scalar variability), so the distance of the
    measured alphas from Weber's law is visible even when they sit near 0. ``registered``: the
    store's models in registration order, which fixes each model's colour
    (:func:`~magdash.presentation.chart_style.model_colors`). On the depth-fraction axis a final
    norm's layer (gamma > 1) is labelled "post-norm".
    """
    style.require_columns(fits, ["measure", "layer", "alpha"], "weber_window")
    x_field, x_title = style.depth_field(x)
    frame = fits[fits["measure"] == measure].copy()
    if "model" not in frame:
        frame["model"] = measure_title(measure)
    if "label" not in frame:
        frame["label"] = frame["layer"].astype(str)
    models = list(dict.fromkeys(frame["model"].astype(str)))
    color = alt.Color("model:N", scale=style.model_colors(models, registered), title="model")
    tooltip = [
        alt.Tooltip("model:N"),
        alt.Tooltip("layer:Q"),
        alt.Tooltip("label:N"),
        alt.Tooltip("alpha:Q", format=".4f"),
    ]
    low, high = (float(v) for v in window)
    axis = style.DepthAxis.of(frame[x_field], x_field, x_title)
    layers = [style.window_band((low, high)), style.zero_rule(1.0, dash=(2, 2)), style.zero_rule(0.0)]
    columns = list(dict.fromkeys(["model", "layer", "label", x_field, "alpha"]))
    layers += style.profile_layers(
        frame.loc[:, columns],
        x=axis.encoding(),
        y_field="alpha",
        y_title=f"alpha of {measure_title(measure)}",
        color=color,
        tooltip=tooltip,
        detail="model",
    )
    notes = style.subtitle_lines(subtitle)
    if post_norm := style.beyond_depth(frame, x_field):
        layers += post_norm
        notes.append(style.POST_NORM_NOTE)
    text = title or f"Alpha against the Weber window [{low:g}, {high:g}] (dotted: alpha = 1)"
    return style.finish(style.layered(*layers), style.chart_title(text, notes or None), width, height)


def weber_figure(
    results: Mapping[str, AnalysisResult], measure: str, x: str = "layer", registered: Sequence[str] = ()
) -> alt.LayerChart:
    """Alpha per layer of every model against the Weber window of the analysis.

    Args:
        results: model name -> its analysis.
        measure: the measure shown (``eucl``, ``residual``, ``proj``, ...).
        x: the horizontal axis: ``layer``, or ``gamma`` (depth fraction) for models of different depth.
        registered: every model of the store in registration order, so that each model keeps its colour
            whichever others are shown; empty: the models take the palette in the order of ``results``.
    """
    first = next(iter(results.values()))
    return weber_window(
        models_fits_frame(results), first.params.window, measure=measure, x=x, registered=registered,
        width="container",
    )


# -- verdicts H1-H4 -----------------------------------------------------------------------


def reference_order(names: Sequence[str]) -> list[str]:
    """``names`` with each ``@random`` control right after its model (a control whose model is not
    among them last): a control is read beside the model it is the reference of.

    Args:
        names: model names, in the order they are to be read.
    """
    ordered = []
    for name in names:
        if not is_control_name(name):
            ordered += [name, *(c for c in names if is_control_name(c) and model_of_control(c) == name)]
    return ordered + [name for name in names if name not in ordered]


def verdict_frame(results: Mapping[str, AnalysisResult], measure: str = DEFAULT_MEASURE) -> pd.DataFrame:
    """H1–H4 for each model, each ``@random`` control right after its model, and, last, the
    programme verdict (a majority of the trained models; the controls are references, not voters).

    Columns: model, role ("model", or "control of <model>"), mean_alpha, mean_alpha_ci_low,
    mean_alpha_ci_high and mean_alpha_p (the stimulus bootstrap, the estimate that leads),
    positive_layers, in_window_layers, below_one_layers, core_layers, H1, H2, H3, H4 (booleans),
    h1_p, h2_p (the paper's t-tests over the core layers), h4_rho, h4_p, h4_layers (the layers the
    H4 correlation ran over: the fitted core layers, or every layer in the paper's conventions, as
    "first..last"), note (why H4's test cannot reach .05 with its layers; "" when it can). The
    programme row has model "programme (majority of N trained models)", the hypothesis columns as
    "k/N" support strings and the per-model numbers empty.
    """
    if not results:
        raise AnalysisError("a verdict table needs at least one analysed model")
    rows = []
    per_model = {}
    for name in reference_order(list(results)):
        result = results[name]
        if measure not in result.hypotheses:
            raise AnalysisError(f"measure {measure!r} was not analysed for model {name!r}")
        h = result.hypotheses[measure]
        per_model[name] = h
        rows.append(
            {
                "model": name,
                "role": f"control of {model_of_control(name)}" if is_control_name(name) else "model",
                "mean_alpha": h.mean_alpha,
                "mean_alpha_ci_low": h.mean_alpha_ci[0],
                "mean_alpha_ci_high": h.mean_alpha_ci[1],
                "mean_alpha_p": h.mean_alpha_p,
                "positive_layers": h.positive_layers,
                "in_window_layers": h.in_window_layers,
                "below_one_layers": h.below_one_layers,
                "core_layers": len(h.core_layers),
                **h.verdicts(),
                "h1_p": h.h1_p,
                "h2_p": h.h2_p,
                "h4_rho": h.h4_rho,
                "h4_p": h.h4_p,
                "h4_layers": layer_span(h.h4_layers),
                "note": (f"H4: {note}" if (note := unreachable_note("spearman", len(h.h4_layers), unit="layers"))
                         else ""),
            }
        )
    table = pd.DataFrame(rows)
    if all(is_control_name(name) for name in results):
        return table  # no trained model: no programme verdict, only references
    programme = programme_verdict(per_model).set_index("hypothesis")
    n_models = int(programme["n_models"].iloc[0])
    supporting = programme["supporting_models"].astype(int)
    summary: dict[str, object] = {"model": f"programme (majority of {n_models} trained models)", "role": "programme"}
    for hypothesis in HYPOTHESES:
        row = programme.loc[hypothesis]
        verdict = "supported" if bool(row["supported"]) else "not supported"
        summary[hypothesis] = f"{verdict} ({supporting[hypothesis]}/{n_models})"
    table = table.astype({h: object for h in HYPOTHESES})
    return pd.concat([table, pd.DataFrame([summary])], ignore_index=True)


def verdict_table(results: Mapping[str, AnalysisResult], measure: str) -> pd.DataFrame:
    """H1-H4 per model and the programme verdict; booleans read as supported / not supported.

    The mean core alpha and its stimulus-bootstrap interval lead (the estimate at the unit of
    replication), the paper's verdicts over the core layers follow, then the numbers behind them.
    """
    table = verdict_frame(results, measure)
    hypotheses = ["H1", "H2", "H3", "H4"]
    for hypothesis in hypotheses:
        table[hypothesis] = table[hypothesis].map(
            lambda v: "supported" if v is True else "not supported" if v is False else v
        )
    leading = ["model", "role", "mean_alpha", "mean_alpha_ci_low", "mean_alpha_ci_high", "mean_alpha_p", *hypotheses]
    return table[[*leading, *[c for c in table.columns if c not in leading]]]


# -- coefficient of variation -------------------------------------------------------------


def cv_frame(result: AnalysisResult, layers: Sequence[int] | None = None) -> pd.DataFrame:
    """CV(n) = V_eucl(n) / ||m[n]|| per layer. Columns: layer, label, gamma, core, magnitude, cv."""
    chosen = range(result.n_layers) if layers is None else layers
    core = set(result.core_layers)
    frames = [
        pd.DataFrame(
            {
                "layer": layer,
                "label": result.layer_labels[layer],
                "gamma": layer / result.n_blocks,
                "core": layer in core,
                "magnitude": result.magnitudes,
                "cv": result.values["cv"][layer],
            }
        )
        for layer in chosen
    ]
    return pd.concat(frames, ignore_index=True)


def cv_chart(
    cv: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Coefficient of variation CV(n) = V_eucl(n) / ||m[n]|| against n, one line per layer.

    ``cv`` (:func:`cv_frame`): layer, magnitude, cv (label optional). Weber's
    law predicts a flat CV; lines are coloured by layer index (light = shallow, dark = deep).
    """
    style.require_columns(cv, ["layer", "magnitude", "cv"], "cv_chart")
    frame = cv.copy()
    if "label" not in frame:
        frame["label"] = frame["layer"].astype(str)
    frame = frame.loc[:, ["layer", "label", "magnitude", "cv"]]
    x = alt.X("magnitude:Q", scale=alt.Scale(type="log"), title="magnitude n (log scale)")
    y = alt.Y("cv:Q", title="CV = V_eucl / ||centroid||")
    # Ordinal: layers are integers, and a continuous scale's legend reads 3.0, 3.5, 4.0, ...
    color = alt.Color("layer:O", scale=alt.Scale(scheme="viridis", reverse=True), title="layer")
    data = style.inline_data(frame[frame["magnitude"] > 0])
    line = alt.Chart(data).mark_line(invalid=style.PATH_INVALID, strokeWidth=1.2).encode(
        x=x, y=y, color=color, detail="layer:N"
    )
    points = (
        alt.Chart(data)
        .mark_point(size=14, filled=True, invalid=style.POINT_INVALID)
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
    return style.finish(style.layered(line, points), style.chart_title(text, subtitle), width, height)


def cv_figure(result: AnalysisResult) -> alt.LayerChart:
    """CV(n) at the core layers (Weber's law: flat).

    Args:
        result: the model's analysis.
    """
    trend = result.cv_trend.set_index("layer").loc[result.core_layers, "spearman"]
    subtitle = f"core layers; mean Spearman rho of CV with n: {fixed(float(np.nanmean(trend)) if trend.notna().any() else math.nan)}"
    return cv_chart(cv_frame(result, result.core_layers), subtitle=subtitle, width="container")


# -- noise models -------------------------------------------------------------------------


NOISE_MODEL_LABELS = {
    "constant": "constant (V = c)",
    "scalar": "scalar (V = k n)",
    "log_scalar": "log-scalar (V = k log n + c)",
    "power_law": "power law (V = k n^alpha)",
}


def noise_frame(result: AnalysisResult) -> pd.DataFrame:
    """``result.noise_models`` plus label, core and model_label (readable noise-model names).

    Columns: measure, layer, label, core, model, model_label, formula, aicc, delta_aicc,
    weight, and the fitted parameters.
    """
    frame = result.noise_models.copy()
    frame.insert(2, "label", [result.layer_labels[layer] for layer in frame["layer"]])
    frame.insert(3, "core", frame["layer"].isin(result.core_layers))
    frame.insert(5, "model_label", frame["model"].replace(NOISE_MODEL_LABELS))
    return frame


def noise_summary(results: Mapping[str, AnalysisResult], measure: str = DEFAULT_MEASURE) -> pd.DataFrame:
    """How many core layers each noise model wins (lowest AICc), per model.

    Columns: model, noise_model, best_in_core_layers, core_layers, mean_weight (mean Akaike
    weight over the core layers with a score).
    """
    rows = []
    for name, result in results.items():
        frame = noise_frame(result)
        frame = frame[(frame["measure"] == measure) & frame["core"]]
        scored = frame[np.isfinite(frame["delta_aicc"].to_numpy(dtype=np.float64))]
        for noise_model, label in NOISE_MODEL_LABELS.items():
            mine = scored[scored["model"] == noise_model]
            rows.append(
                {
                    "model": name,
                    "noise_model": label,
                    "best_in_core_layers": int((mine["delta_aicc"] == 0).sum()),
                    "core_layers": len(result.core_layers),
                    "mean_weight": float(mine["weight"].mean()) if len(mine) else math.nan,
                }
            )
    return pd.DataFrame(rows)


NOISE_ROW_HEIGHT = 32


NOISE_CHROME_HEIGHT = 110
"""Noise-model heatmap: pixels per row, and for the title, subtitle and layer axis."""


def noise_model_chart(
    noise: pd.DataFrame,
    *,
    measure: str | None = DEFAULT_MEASURE,
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int | None = None,
) -> alt.LayerChart:
    """Heatmap of the Akaike weight of each noise model per layer; dots mark the AICc winner.

    ``noise`` (``AnalysisResult.noise_models`` or :func:`noise_frame`): measure
    (filtered to ``measure`` unless None), layer, model, aicc, delta_aicc, weight
    (model_label and label optional). Layers without a score are grey with a tooltip.
    ``height`` None gives each noise model a row of :data:`NOISE_ROW_HEIGHT` pixels plus
    room for the titles and the axis: the app fits titles and axes into the chart's height.
    """
    style.require_columns(noise, ["layer", "model", "aicc", "delta_aicc", "weight"], "noise_model_chart")
    frame = noise.copy()
    if measure is not None and "measure" in frame:
        frame = frame[frame["measure"] == measure]
    if "model_label" not in frame:
        frame["model_label"] = frame["model"].replace(NOISE_MODEL_LABELS)
    if "label" not in frame:
        frame["label"] = frame["layer"].astype(str)
    frame = frame.loc[:, ["layer", "label", "model_label", "aicc", "delta_aicc", "weight"]]
    order = [label for label in NOISE_MODEL_LABELS.values() if label in set(frame["model_label"])]
    order += [m for m in dict.fromkeys(frame["model_label"]) if m not in order]
    x = alt.X("layer:O", title=style.LAYER_TITLE, axis=alt.Axis(labelAngle=0))
    y = alt.Y("model_label:N", sort=order, title="noise model", axis=alt.Axis(labelLimit=220))
    scored = style.finite_rows(frame, "weight")
    unscored = frame.drop(scored.index)
    layers = [
        alt.Chart(style.inline_data(scored))
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
        alt.Chart(style.inline_data(scored[scored["delta_aicc"] == 0]))
        .mark_point(filled=True, color=style.BEST_COLOR, size=25, shape="circle")
        .encode(x=x, y=y),
    ]
    if len(unscored):
        layers.insert(
            0,
            alt.Chart(style.inline_data(unscored.assign(reason=style.NO_FIT_TEXT)))
            .mark_rect(color=style.NO_FIT_FILL)
            .encode(x=x, y=y, tooltip=[alt.Tooltip("layer:O"), alt.Tooltip("reason:N")]),
        )
    label = measure_title(measure) if measure else "V"
    text = title or f"Noise models of {label} by AICc (dot: lowest AICc; grey: no score)"
    if height is None:
        height = NOISE_ROW_HEIGHT * max(len(order), 1) + NOISE_CHROME_HEIGHT
    return style.finish(style.layered(*layers), style.chart_title(text, subtitle), width, height)


def noise_figure(result: AnalysisResult, measure: str) -> alt.LayerChart:
    """The AICc of the four noise models per core layer (which law of V against n fits best).

    Args:
        result: the model's analysis.
        measure: the measure shown (``eucl``, ``residual``, ``proj``, ...).
    """
    return noise_model_chart(noise_frame(result), measure=measure, width="container")


def noise_table(result: AnalysisResult, measure: str) -> pd.DataFrame:
    """AICc of the four noise models at every core layer of one measure.

    What decides comes first (AICc, its difference to the best, the Akaike weight), the fitted
    parameters after. Narrow enough for the page: the noise model's label holds its formula, the
    core layers are blocks (their index says them), and every fit has the same number of points
    (the magnitudes).
    """
    frame = noise_frame(result)
    frame = frame[(frame["measure"] == measure) & frame["core"]]
    frame = frame.drop(columns=["measure", "core", "model", "label", "formula", "n_points"], errors="ignore")
    leading = [c for c in ("layer", "model_label", "aicc", "delta_aicc", "weight") if c in frame]
    return frame.loc[:, [*leading, *(c for c in frame.columns if c not in leading)]].reset_index(drop=True)


# -- E3: the boundary magnitudes ----------------------------------------------------------


E3_FITS = ("all magnitudes", "without boundary")


def e3_frame(result: AnalysisResult) -> pd.DataFrame:
    """E3 per measure and core layer, long.

    Columns: measure, measure_label, layer, label, fit (one of :data:`E3_FITS`), alpha.
    """
    rows = []
    for measure, e3 in result.e3.items():
        for fit_name, alphas in zip(E3_FITS, (e3.alpha_with, e3.alpha_without), strict=True):
            for layer, alpha in zip(e3.layers, alphas, strict=True):
                rows.append(
                    {
                        "measure": measure,
                        "measure_label": measure_title(measure),
                        "layer": layer,
                        "label": result.layer_labels[layer],
                        "fit": fit_name,
                        "alpha": alpha,
                    }
                )
    return pd.DataFrame(
        rows, columns=["measure", "measure_label", "layer", "label", "fit", "alpha"]
    )


def e3_summary(results: Mapping[str, AnalysisResult]) -> pd.DataFrame:
    """E3 per model and measure. Columns: model, measure, dropped, mean_alpha_with,
    mean_alpha_without, mean_shift."""
    rows = [
        {
            "model": name,
            "measure": measure_title(measure),
            "dropped": ", ".join(f"{m:g}" for m in e3.dropped) or "none present",
            "mean_alpha_with": e3.mean_alpha_with,
            "mean_alpha_without": e3.mean_alpha_without,
            "mean_shift": e3.mean_shift,
        }
        for name, r in results.items()
        for measure, e3 in r.e3.items()
    ]
    return pd.DataFrame(rows)


def e3_chart(
    e3: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """E3 boundary sensitivity: core-layer alphas with and without the boundary magnitudes.

    ``e3`` (:func:`e3_frame`): measure, layer, fit ("all magnitudes" /
    "without boundary"), alpha (label optional). Colour = measure, dash = fit.
    """
    style.require_columns(e3, ["measure", "layer", "fit", "alpha"], "e3_chart")
    frame = e3.copy()
    frame["measure_label"] = frame["measure"].map(measure_title)
    frame["series"] = frame["measure_label"] + ", " + frame["fit"].astype(str)
    if "label" not in frame:
        frame["label"] = frame["layer"].astype(str)
    order = list(dict.fromkeys(frame["measure_label"]))
    fits = [f for f in E3_FITS if f in set(frame["fit"])] or list(dict.fromkeys(frame["fit"]))
    color = alt.Color("measure_label:N", scale=style.color_scale(order, style.MEASURE_COLORS), title="measure")
    dash = alt.StrokeDash(
        "fit:N", scale=alt.Scale(domain=fits, range=[[1, 0], [5, 3]][: len(fits)]), title="fit"
    )
    layers = [style.zero_rule(0.0)]
    layers += style.profile_layers(
        frame.loc[:, ["measure_label", "series", "fit", "layer", "label", "alpha"]],
        x=style.DepthAxis.of(frame["layer"], "layer", style.LAYER_TITLE).encoding(),
        y_field="alpha",
        y_title=style.ALPHA_TITLE,
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
    return style.finish(style.layered(*layers), style.chart_title(text, subtitle), width, height)


def e3_figure(result: AnalysisResult) -> alt.LayerChart:
    """E3: each measure's core alphas with and without the digit-count boundary magnitudes.

    Args:
        result: the model's analysis.
    """
    return e3_chart(e3_frame(result), width="container")


# -- E4: on- and off-axis variance --------------------------------------------------------


def e4_frame(result: AnalysisResult) -> pd.DataFrame:
    """E4 per core layer, long. Columns: layer, label, axis ("on-axis"/"off-axis"), alpha."""
    e4 = result.e4
    rows = [
        {"layer": layer, "label": result.layer_labels[layer], "axis": axis, "alpha": alpha}
        for axis, alphas in (("on-axis", e4.alpha_on), ("off-axis", e4.alpha_off))
        for layer, alpha in zip(e4.layers, alphas, strict=True)
    ]
    return pd.DataFrame(rows, columns=["layer", "label", "axis", "alpha"])


def e4_summary(results: Mapping[str, AnalysisResult]) -> pd.DataFrame:
    """E4 per model: the means, their ratio and difference with their stimulus-bootstrap intervals (the
    estimates that lead), then the paper's Wilcoxon test over the core layers. Columns: model,
    mean_alpha_on, mean_alpha_off, ratio, ratio_ci_low, ratio_ci_high, mean_difference,
    difference_ci_low, difference_ci_high, difference_p, wilcoxon_statistic, wilcoxon_p, n_pairs,
    note (why the Wilcoxon test cannot reach .05 with its pairs; "" when it can)."""
    rows = [
        {
            "model": name,
            "mean_alpha_on": r.e4.mean_alpha_on,
            "mean_alpha_off": r.e4.mean_alpha_off,
            "ratio": r.e4.ratio,
            "ratio_ci_low": r.e4.ratio_ci[0],
            "ratio_ci_high": r.e4.ratio_ci[1],
            "mean_difference": r.e4.mean_difference,
            "difference_ci_low": r.e4.difference_ci[0],
            "difference_ci_high": r.e4.difference_ci[1],
            "difference_p": r.e4.difference_p,
            "wilcoxon_statistic": r.e4.wilcoxon_statistic,
            "wilcoxon_p": r.e4.wilcoxon_p,
            "n_pairs": r.e4.n_pairs,
            "note": unreachable_note("wilcoxon", r.e4.n_pairs, unit="layer pairs"),
        }
        for name, r in results.items()
    ]
    return pd.DataFrame(rows)


AXIS_COLORS = {"on-axis": style.MEASURE_COLORS["on-axis variance"], "off-axis": style.MEASURE_COLORS["off-axis variance"]}
"""E4's two variances, in their measures' colours."""


def e4_chart(
    e4: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | Sequence[str] | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """E4: alpha of the on-axis (PC1) and off-axis variance per core layer.

    ``e4`` (:func:`e4_frame`): layer, axis ("on-axis"/"off-axis"), alpha
    (label optional). Put the ratio, its stimulus-bootstrap interval and the Wilcoxon result in ``subtitle``
    (:func:`e4_subtitle`).
    """
    style.require_columns(e4, ["layer", "axis", "alpha"], "e4_chart")
    frame = e4.copy()
    if "label" not in frame:
        frame["label"] = frame["layer"].astype(str)
    axes = list(dict.fromkeys(frame["axis"].astype(str)))
    color = alt.Color("axis:N", scale=style.color_scale(axes, AXIS_COLORS), title="variance")
    layers = [style.zero_rule(0.0)]
    layers += style.profile_layers(
        frame.loc[:, ["layer", "label", "axis", "alpha"]],
        x=style.DepthAxis.of(frame["layer"], "layer", style.LAYER_TITLE).encoding(),
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
    return style.finish(style.layered(*layers), style.chart_title(text, subtitle), width, height)


def e4_subtitle(result: AnalysisResult) -> list[str]:
    """E4's two subtitle lines: the means and their ratio with its stimulus-bootstrap interval, then the
    difference's interval and p beside the paper's Wilcoxon test over the core layers.

    Args:
        result: the model's analysis.
    """
    e4 = result.e4
    level = f"{result.params.ci:.0%}"
    wilcoxon = f"per-layer Wilcoxon p = {format_p(e4.wilcoxon_p)} ({e4.n_pairs} pairs"
    wilcoxon += "; cannot reach .05)" if not e4.wilcoxon_reachable else ")"
    return [
        f"mean alpha on-axis {fixed(e4.mean_alpha_on)} vs off-axis {fixed(e4.mean_alpha_off)}: ratio {fixed(e4.ratio, 2)}x, "
        f"{level} CI [{fixed(e4.ratio_ci[0], 2)}, {fixed(e4.ratio_ci[1], 2)}] (stimulus bootstrap)",
        f"difference {fixed(e4.mean_difference)} [{fixed(e4.difference_ci[0])}, {fixed(e4.difference_ci[1])}], "
        f"p = {format_p(e4.difference_p)}; {wilcoxon}",
    ]


def e4_figure(result: AnalysisResult) -> alt.LayerChart:
    """E4: on-axis (PC1) against off-axis alpha per core layer, their mean ratio and difference with their
    stimulus-bootstrap intervals, and the Wilcoxon test over the layers.

    Args:
        result: the model's analysis.
    """
    return e4_chart(e4_frame(result), subtitle=e4_subtitle(result), width="container")
