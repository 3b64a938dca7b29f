"""The robustness controls and the study-design simulator as figures and tables: leave one
carrier out, the carriers' ICC, the permutation null, the variants and ``@random``, power curves
and CI half-widths (:mod:`magdash.controls_statistics`).

Each figure's frame, chart (:mod:`magdash.presentation.chart_style`) and figure function sit
together, as in :mod:`magdash.presentation.scaling_figures`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import altair as alt
import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.formatting import column_label, format_number
from magdash.presentation import chart_style as style
from magdash.presentation import compare_figures
from magdash.variability.measures import measure_title

if TYPE_CHECKING:
    from magdash.controls_statistics.controls import ControlsResult
    from magdash.controls_statistics.design import DesignResult


# -- the verdicts -------------------------------------------------------------------------


VERDICT_STATUS = {True: "problem", False: "ok", None: "not judged"}


def verdicts_frame(result: ControlsResult, measure: str) -> pd.DataFrame:
    """One row per control: control, status (problem / ok / not judged), verdict line."""
    return pd.DataFrame(
        [{"control": v.control, "status": VERDICT_STATUS[v.problem], "verdict": v.line} for v in result.verdicts(measure)],
        columns=["control", "status", "verdict"],
    )


def controls_sentence(result: ControlsResult, measure: str) -> str:
    verdicts = result.verdicts(measure)
    problems = [v.control for v in verdicts if v.problem]
    judged = [v for v in verdicts if v.problem is not None]
    if not problems:
        return (f"{result.model}: no control of {measure_title(measure)} flags a problem "
                f"({len(judged)} of {len(verdicts)} judged).")
    return f"{result.model}: {len(problems)} control(s) of {measure_title(measure)} flag a problem: {', '.join(problems)}."


def controls_verdicts(result: ControlsResult, measure: str) -> pd.DataFrame:
    return verdicts_frame(result, measure)


# -- leave one carrier out ----------------------------------------------------------------


def loo_frame(result: ControlsResult, measure: str) -> pd.DataFrame:
    """Leave-one-carrier-out alphas of one measure, long: layer, label, core, carrier (index),
    without (the dropped carrier, e.g. "without 0: There are {n} items."), alpha_loo, alpha_full."""
    frame = result.tables.loo[result.tables.loo["measure"] == measure].copy()
    sentences = result.tables.carriers
    frame["without"] = [f"without {int(c)}: {sentences[int(c)]}" for c in frame["carrier"]]
    return frame.drop(columns=["measure"]).reset_index(drop=True)


def loo_chart(
    frame: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Alpha with all carriers (line) and without each one (points) per layer, core band shaded.

    ``frame`` (:func:`loo_frame`): layer, label, core, without,
    alpha_loo, alpha_full.
    """
    style.require_columns(frame, ["layer", "core", "without", "alpha_loo", "alpha_full"], "loo_chart")
    axis = style.DepthAxis.of(frame["layer"], "layer", style.LAYER_TITLE)
    full = frame.drop_duplicates("layer").loc[:, ["layer", "core", "alpha_full"]]
    layers = style.depth_backdrop(axis, full, "alpha_full")
    layers.append(style.zero_rule(0.0))
    layers += style.profile_layers(
        full.assign(series="all carriers"),
        x=axis.encoding(), y_field="alpha_full", y_title=style.ALPHA_TITLE,
        color=alt.value(style.REFERENCE_COLOR),
        tooltip=[alt.Tooltip("layer:Q"), alt.Tooltip("alpha_full:Q", title="alpha, all carriers", format=".4f")],
    )
    carriers = list(dict.fromkeys(frame["without"]))
    layers.append(
        alt.Chart(style.inline_data(frame.loc[:, ["layer", "without", "alpha_loo", "alpha_full"]]))
        .mark_point(size=45, opacity=0.85, invalid=style.POINT_INVALID)
        .encode(
            x=axis.encoding(), y=alt.Y("alpha_loo:Q", title=style.ALPHA_TITLE),
            color=alt.Color("without:N", scale=style.color_scale(carriers, style.MODEL_COLORS), title="carrier left out",
                            legend=alt.Legend(labelLimit=style.LEGEND_LABEL_LIMIT)),
            tooltip=[alt.Tooltip("layer:Q"), alt.Tooltip("without:N"),
                     alt.Tooltip("alpha_loo:Q", title="alpha without it", format=".4f"),
                     alt.Tooltip("alpha_full:Q", title="alpha, all carriers", format=".4f")],
        )
    )
    text = title or "Leave one carrier out: alpha without each sentence (line: all carriers)"
    return style.finish(style.layered(*layers), style.chart_title(text, subtitle), width, height)


def loo_figure(result: ControlsResult, measure: str) -> alt.LayerChart:
    """Alpha by layer without each carrier, beside the full alpha.

    Args:
        result: the model's robustness controls.
        measure: the measure shown (``eucl``, ``residual``, ``proj``, ...).
    """
    return loo_chart(loo_frame(result, measure), subtitle=measure_title(measure), width="container")


def loo_table(result: ControlsResult, measure: str) -> pd.DataFrame:
    return result.loo_summary(measure)


# -- the carriers' ICC --------------------------------------------------------------------


def icc_chart(
    frame: pd.DataFrame,
    *,
    poor: float = 0.5,
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """ICC(3,k) of the carriers' RDMs per layer, with the ``poor`` agreement line.

    ``frame``: layer, core, icc (label optional).
    """
    style.require_columns(frame, ["layer", "core", "icc"], "icc_chart")
    data = frame.copy()
    if "label" not in data:
        data["label"] = data["layer"].astype(str)
    axis = style.DepthAxis.of(data["layer"], "layer", style.LAYER_TITLE)
    layers = style.depth_backdrop(axis, data, "icc")
    layers.append(style.zero_rule(poor))
    layers += style.profile_layers(
        data.loc[:, ["layer", "label", "icc"]],
        x=axis.encoding(), y_field="icc", y_title="ICC(3,k)", color=alt.value(style.MODEL_COLORS[0]),
        tooltip=[alt.Tooltip("layer:Q"), alt.Tooltip("label:N"), alt.Tooltip("icc:Q", title="ICC(3,k)", format=".3f")],
    )
    text = title or f"Agreement of the carriers' RDMs by layer (ICC(3,k); dashed: {poor:g}, poor below)"
    return style.finish(style.layered(*layers), style.chart_title(text, subtitle), width, height)


def icc_figure(result: ControlsResult) -> alt.LayerChart:
    """ICC(3,k) of the carriers' RDMs by layer, with the 0.5 line.

    Args:
        result: the model's robustness controls.
    """
    return icc_chart(result.tables.icc, width="container")


def icc_table(result: ControlsResult) -> pd.DataFrame:
    return result.tables.icc


# -- the permutation null -----------------------------------------------------------------


def permutation_frame(result: ControlsResult, measure: str) -> pd.DataFrame:
    """The parametric and the permutation p of alpha per layer, long: layer, label, core, alpha,
    test ("parametric (t)" or "permutation"), p."""
    table = result.tables.permutation
    table = table[table["measure"] == measure]
    parts = []
    for test, column in (("parametric (t)", "p_parametric"), ("permutation", "p_permutation")):
        part = table.loc[:, ["layer", "label", "core", "alpha"]].copy()
        part["test"] = test
        part["p"] = table[column].to_numpy(dtype=np.float64)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


def permutation_chart(
    frame: pd.DataFrame,
    *,
    level: float = 0.05,
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """p of alpha per layer, parametric beside permutation, on a log scale with the ``level`` line.

    ``frame`` (:func:`permutation_frame`): layer, core, test, p.
    """
    style.require_columns(frame, ["layer", "core", "test", "p"], "permutation_chart")
    data = style.finite_rows(frame, "p", positive=True)
    axis = style.DepthAxis.of(frame["layer"], "layer", style.LAYER_TITLE)
    layers = style.depth_backdrop(axis, frame, "p")
    layers.append(style.zero_rule(level))
    tests = list(dict.fromkeys(frame["test"]))
    layers += style.profile_layers(
        data.loc[:, ["layer", "test", "p"]],
        x=axis.encoding(), y_field="p", y_title="p (log scale)",
        color=alt.Color("test:N", scale=style.color_scale(tests, style.MODEL_COLORS), title="test"),
        tooltip=[alt.Tooltip("layer:Q"), alt.Tooltip("test:N"), alt.Tooltip("p:Q", format=".2e")],
        detail="test", y_scale=alt.Scale(type="log"),
    )
    text = title or f"Is alpha more than shuffled magnitudes give? p by layer (dashed: {level:g})"
    return style.finish(style.layered(*layers), style.chart_title(text, subtitle), width, height)


def permutation_figure(result: ControlsResult, measure: str) -> alt.LayerChart:
    """Permutation against parametric p of alpha by layer, with the significance level.

    Args:
        result: the model's robustness controls.
        measure: the measure shown (``eucl``, ``residual``, ``proj``, ...).
    """
    subtitle = f"{measure_title(measure)}; {result.tables.n_perm:,} permutations of the magnitude labels"
    return permutation_chart(permutation_frame(result, measure), level=result.params.significance,
                                    subtitle=subtitle, width="container")


def permutation_table(result: ControlsResult, measure: str) -> pd.DataFrame:
    table = result.tables.permutation
    return table[table["measure"] == measure].drop(columns=["measure"]).reset_index(drop=True)


# -- variants and the @random control -----------------------------------------------------


def variant_frame(result: ControlsResult, measure: str) -> pd.DataFrame:
    """One row per compared variant (and the @random control) with its core-band summary: the mean delta
    with its stimulus-bootstrap interval first, then the layerwise numbers and the Wilcoxon test."""
    import dataclasses

    summaries = list(result.variant_summaries(measure))
    if (random := result.random_summary(measure)) is not None:
        summaries.append(random)
    columns = [
        "variant", "kind", "measure", "mean_alpha_model", "mean_alpha_variant", "mean_delta", "mean_delta_ci_low",
        "mean_delta_ci_high", "mean_delta_p", "max_abs_delta", "layer_of_max", "ci_low_at_max", "ci_high_at_max",
        "layers_ci_excludes_zero", "layers_with_ci", "n_core", "wilcoxon_p", "wilcoxon_reachable",
    ]
    return pd.DataFrame([dataclasses.asdict(s) for s in summaries], columns=columns)


def compared(result: ControlsResult) -> list[str]:
    """The variants and, when stored, the @random control, in the order the page shows them."""
    return [*result.variants, *([result.random_name] if result.random is not None else [])]


def variant_figure(result: ControlsResult, name: str, measure: str) -> alt.VConcatChart:
    """The model against one variant or its ``@random`` control: alphas by layer and delta with its joint-bootstrap
    CI.

    Args:
        result: the model's robustness controls.
        name: the variant's name, or the control's.
        measure: the measure shown (``eucl``, ``residual``, ``proj``, ...).
    """
    comparison = result.random if name == result.random_name else result.variants.get(name)
    if comparison is None:
        raise AnalysisError(f"{name!r} was not compared; these were: {', '.join(compared(result))}")
    return compare_figures.compare_profiles(compare_figures.comparison_frame(comparison, measure),
                                            subtitle=compare_figures.comparison_subtitle(comparison.measures[measure]))


def variant_table(result: ControlsResult, measure: str) -> pd.DataFrame:
    return variant_frame(result, measure)


# -- study design: the summary ------------------------------------------------------------


def design_sentence(result: DesignResult) -> str:
    summary, params = result.summary(), result.params
    return (
        f"With {result.n_magnitudes} magnitudes x {params.n_carriers} carriers x {result.n_layers} core layers and "
        f"noise like {result.calibration.source}: H1 power {format_number(summary['h1_power'], '.2f')} at alpha = "
        f"{params.alpha:g} (test size {format_number(summary['h1_size'], '.3f')}, nominal {params.level / 2:g}); "
        f"minimal detectable alpha at {params.power_target:.0%} power "
        f"{format_number(summary['minimal_alpha_nominal'], '.4f')} (size-adjusted "
        f"{format_number(summary['minimal_alpha_size_adjusted'], '.4f')}); 95% CI half-width of a layer's alpha "
        f"{format_number(summary['ci_half_width'], '.4f')}."
    )


_DESIGN_NAMES = {"alpha": "true_alpha", "delta": "true_delta", "mean_alpha": "mean_fitted_alpha"}
"""The design's curves and summary name the simulated truth ``alpha`` and ``delta``; its tables say
``true_alpha`` and ``true_delta`` (``alpha`` and ``mean_alpha`` are a model's fitted ones elsewhere)."""


def design_summary(result: DesignResult) -> pd.DataFrame:
    """The answers at the design's alpha and delta, one row each, the quantity in words."""
    return pd.DataFrame([{"quantity": column_label(_DESIGN_NAMES.get(key, key)), "value": value}
                         for key, value in result.summary().items()])


# -- study design: H1 power ---------------------------------------------------------------


H1_SERIES = {"power": "t-test", "power_size_adjusted": "t-test, size-adjusted", "majority": "majority of layers > 0"}


_BANDS = {
    "power": ("power_low", "power_high"), "power_size_adjusted": ("size_adjusted_low", "size_adjusted_high"),
    "wilcoxon": ("wilcoxon_low", "wilcoxon_high"),
    "bootstrap_layers": ("bootstrap_layers_low", "bootstrap_layers_high"),
    "bootstrap_majority": ("bootstrap_majority_low", "bootstrap_majority_high"),
}


def _power_long(frame: pd.DataFrame, x: str, series: Mapping[str, str]) -> pd.DataFrame:
    parts = []
    for column, name in series.items():
        if column not in frame or not frame[column].notna().any():
            continue
        low, high = _BANDS.get(column, (None, None))
        parts.append(pd.DataFrame({
            x: frame[x], "series": name, "rate": frame[column],
            "low": frame[low] if low else np.nan, "high": frame[high] if high else np.nan,
        }))
    return pd.concat(parts, ignore_index=True)


def h1_power_frame(result: DesignResult) -> pd.DataFrame:
    """The H1 power curves, long: alpha, series, rate, low, high (Monte Carlo 95% band)."""
    return _power_long(result.h1, "alpha", H1_SERIES)


def power_curve(
    frame: pd.DataFrame,
    *,
    x: str = "alpha",
    x_title: str = "true alpha",
    target: float = 0.8,
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Rejection rate against the true effect, one line per series with its Monte Carlo band.

    ``frame`` (:func:`h1_power_frame` or ``e6_power_frame``): x,
    series, rate, low, high. The dashed line marks the ``target`` power.
    """
    style.require_columns(frame, [x, "series", "rate", "low", "high"], "power_curve")
    series = list(dict.fromkeys(frame["series"]))
    color = alt.Color("series:N", scale=style.color_scale(series, style.MODEL_COLORS), title="test")
    encoding = alt.X(f"{x}:Q", title=x_title)
    layers: list[Any] = [style.zero_rule(target)]
    layers += style.profile_layers(
        frame.loc[:, [x, "series", "rate", "low", "high"]],
        x=encoding, y_field="rate", y_title="power (rejection rate)", color=color,
        tooltip=[alt.Tooltip("series:N", title="test"), alt.Tooltip(f"{x}:Q", format=".4f"),
                 alt.Tooltip("rate:Q", title="power", format=".3f"),
                 alt.Tooltip("low:Q", title="MC band low", format=".3f"),
                 alt.Tooltip("high:Q", title="MC band high", format=".3f")],
        band=("low", "high"), detail="series", y_scale=alt.Scale(domain=[0, 1]),
    )
    text = title or f"Power against the true effect (bands: Monte Carlo 95%; dashed: {target:.0%})"
    return style.finish(style.layered(*layers), style.chart_title(text, subtitle), width, height)


def h1_figure(result: DesignResult) -> alt.LayerChart:
    """H1 power against the true alpha, with its Monte Carlo band and the target power.

    Args:
        result: the design simulation.
    """
    return power_curve(h1_power_frame(result), target=result.params.power_target,
                              title="H1: power to detect alpha > 0 (t-test over the core layers)",
                              subtitle=f"{result.params.n_studies:,} simulated studies per point", width="container")


def h1_table(result: DesignResult) -> pd.DataFrame:
    """The H1 power curve over true alphas, with its Monte Carlo bands."""
    return result.h1.rename(columns=_DESIGN_NAMES)


# -- study design: E6 power ---------------------------------------------------------------


E6_SERIES = {
    "wilcoxon": "Wilcoxon", "wilcoxon_size_adjusted": "Wilcoxon, size-adjusted",
    "bootstrap_layers": "joint bootstrap: share of layers", "bootstrap_majority": "joint bootstrap: majority of layers",
}


def e6_power_frame(result: DesignResult) -> pd.DataFrame:
    """The E6 power curves, long: delta, series, rate, low, high."""
    return _power_long(result.e6, "delta", E6_SERIES)


def e6_figure(result: DesignResult) -> alt.LayerChart:
    """E6 power against the true delta alpha between two models.

    Args:
        result: the design simulation.
    """
    return power_curve(e6_power_frame(result), x="delta", x_title="true delta alpha",
                              target=result.params.power_target,
                              title="E6: power to detect a difference between two models",
                              subtitle=f"joint bootstrap with {result.params.n_boot} resamples per study",
                              width="container")


def e6_table(result: DesignResult) -> pd.DataFrame:
    """The E6 power curve over true deltas."""
    return result.e6.rename(columns=_DESIGN_NAMES)


# -- study design: CI half-width ----------------------------------------------------------


def ci_width_frame(result: DesignResult) -> pd.DataFrame:
    """CI half-width of alpha as carriers or magnitudes grow: factor, value, half_width, low, high."""
    frame = result.ci_width[result.ci_width["factor"] != "design"]
    return frame.rename(columns={"half_width_low": "low", "half_width_high": "high"}).reset_index(drop=True)


def ci_width_chart(
    frame: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Expected 95% CI half-width of alpha as the carriers or the magnitudes grow (log x).

    ``frame`` (:func:`ci_width_frame`): factor, value, half_width,
    low, high.
    """
    style.require_columns(frame, ["factor", "value", "half_width", "low", "high"], "ci_width_chart")
    factors = list(dict.fromkeys(frame["factor"]))
    layers = style.profile_layers(
        frame.loc[:, ["factor", "value", "half_width", "low", "high"]],
        x=alt.X("value:Q", title="number of carriers or of magnitudes", scale=alt.Scale(type="log")),
        y_field="half_width", y_title="CI half-width of alpha",
        color=alt.Color("factor:N", scale=style.color_scale(factors, style.MODEL_COLORS), title="grows"),
        tooltip=[alt.Tooltip("factor:N", title="grows"), alt.Tooltip("value:Q", title="count"),
                 alt.Tooltip("half_width:Q", format=".4f"), alt.Tooltip("low:Q", format=".4f"),
                 alt.Tooltip("high:Q", format=".4f")],
        band=("low", "high"), detail="factor",
    )
    text = title or "How precise is alpha? Expected 95% CI half-width per layer"
    return style.finish(style.layered(*layers), style.chart_title(text, subtitle), width, height)


def ci_width_figure(result: DesignResult) -> alt.LayerChart:
    """The CI half-width of one layer's alpha as carriers and magnitudes grow.

    Args:
        result: the design simulation.
    """
    return ci_width_chart(ci_width_frame(result), width="container")


def ci_width_table(result: DesignResult) -> pd.DataFrame:
    """The CI half-width of one layer's alpha as carriers and magnitudes grow."""
    return result.ci_width
