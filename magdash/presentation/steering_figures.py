"""Steering along the magnitude direction (issue 42, Cacioli 2026's Paradigm D) as figures: the causal
profile by layer beside the geometry, the probe and the behavioural baseline (the dissociation, if
there is one, in one figure), and the dose-response of one layer.

The figures read a :class:`~magdash.steering.steer_result.SteerResult` (its ``layers`` and ``doses``
frames, :data:`magdash.steering.summary.LAYER_COLUMNS` and :data:`~magdash.steering.summary.DOSE_COLUMNS`),
and, where the page has them, the model's analysis (RSA of the centroid RDM with the log-ratio model,
Euclidean, per layer) and its probes (the held-out-magnitude R² of log n per layer). The sentences beside
them (what the run shows, which layers are relevant, the caveats) are here too, so that the page and the
report say the same. Each figure's frame, chart (:mod:`magdash.presentation.chart_style`) and figure
function sit together, as in :mod:`magdash.presentation.behaviour_figures`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import altair as alt
import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.formatting import format_number
from magdash.params import ranges
from magdash.presentation import chart_style as style
from magdash.steering.steer_result import SteerResult

if TYPE_CHECKING:
    from magdash.probes.result import ProbeResult
    from magdash.variability.analysis import AnalysisResult


# -- the causal profile beside the representation ------------------------------------------


MAGNITUDE = "magnitude direction"
RANDOM = "random directions (mean to the null's percentile)"
ORTHOGONAL = "orthogonal directions"
RSA = "RSA with the log-ratio model"
PROBE_R2 = "probe R² of log n (held-out magnitudes)"
BASELINE = "unpatched p(correct)"

SERIES_COLORS = {
    MAGNITUDE: style.MODEL_COLORS[0], RANDOM: style.NULL_CONTROL_COLOR, ORTHOGONAL: style.MODEL_COLORS[4],
    RSA: style.MODEL_COLORS[1],
    PROBE_R2: style.MODEL_COLORS[2], BASELINE: style.REFERENCE_COLOR,
}
"""Each series' colour, from :mod:`~magdash.presentation.chart_style`'s palette: the magnitude direction's
statistics (its |Δ p|, specificity and share above the null: one legend entry) in the model colour, the random null grey, the representation's series in the palette's next ones."""

EFFECT_PANEL = "|Δ p(correct)|"
SPECIFICITY_PANEL = "specificity"
SHARE_PANEL = "share above null"
REPRESENTATION_PANEL = "representation"
PANELS = (EFFECT_PANEL, SPECIFICITY_PANEL, SHARE_PANEL, REPRESENTATION_PANEL)
"""The profile's panels, top to bottom, on one layer axis."""

PROFILE_COLUMNS = ["layer", "panel", "series", "value", "low", "high"]

MAX_LAYER_TICKS = 40
"""Up to this many layers, every layer has its tick; beyond, Vega-Lite picks them."""


def _rows(layers: pd.DataFrame, panel: str, series: str, value: str, low: str | None = None,
          high: str | None = None) -> pd.DataFrame:
    return pd.DataFrame({
        "layer": layers["layer"].astype(int).to_numpy(), "panel": panel, "series": series,
        "value": layers[value].astype(float).to_numpy(),
        "low": layers[low].astype(float).to_numpy() if low else np.nan,
        "high": layers[high].astype(float).to_numpy() if high else np.nan,
    })


def profile_frame(result: SteerResult, analysis: AnalysisResult | None = None,
                  probe: ProbeResult | None = None) -> pd.DataFrame:
    """The causal profile and the representation per layer, long (:data:`PROFILE_COLUMNS`).

    Panels (:data:`PANELS`): the magnitude direction's mean |Δ p(correct)| at the largest dose with its
    interval, the random null as a band from its mean to its ``null_percentile``-th percentile, the
    orthogonal null; specificity with its interval; the share of prompts above the null with its
    interval; RSA with the log-ratio model (Euclidean, from ``analysis``), the probe's R² of log n on
    held-out magnitudes (from ``probe``) and the unpatched p(correct), each at every layer they have.

    Args:
        result: the steering.
        analysis: the model's analysis on the steering's stimuli, or None (no RSA).
        probe: the model's probes on those stimuli, or None (no R²).
    """
    layers = result.layers
    frames = [_rows(layers, EFFECT_PANEL, MAGNITUDE, "magnitude_effect", "magnitude_effect_low",
                    "magnitude_effect_high"),
              _rows(layers, EFFECT_PANEL, RANDOM, "random_percentile", "random_effect", "random_percentile")]
    if result.params.orthogonal_null:
        frames.append(_rows(layers, EFFECT_PANEL, ORTHOGONAL, "orthogonal_effect", "orthogonal_effect_low",
                            "orthogonal_effect_high"))
    frames += [_rows(layers, SPECIFICITY_PANEL, MAGNITUDE, "specificity", "specificity_low", "specificity_high"),
               _rows(layers, SHARE_PANEL, MAGNITUDE, "share_above_random", "share_above_random_low",
                     "share_above_random_high")]
    if analysis is not None:
        geometry = analysis.geometry
        frames.append(pd.DataFrame({"layer": geometry["layer"].astype(int).to_numpy(), "panel": REPRESENTATION_PANEL,
                                    "series": RSA, "value": geometry["rsa_log_euclidean"].astype(float).to_numpy(),
                                    "low": np.nan, "high": np.nan}))
    if probe is not None:
        scores = probe.score_table(scheme="magnitude", target="log")
        frames.append(_rows(scores, REPRESENTATION_PANEL, PROBE_R2, "r2", "r2_low", "r2_high"))
    frames.append(_rows(layers, REPRESENTATION_PANEL, BASELINE, "baseline_correct"))
    return pd.concat(frames, ignore_index=True).loc[:, PROFILE_COLUMNS]


def _panel(frame: pd.DataFrame, panel: str, domain: list[str], layer_scale: alt.Scale, ticks: list[int] | None,
           y_title: str, reference: float | None, width: style.Width, height: int, last: bool,
           y_scale: alt.Scale | None = None) -> alt.LayerChart:
    rows = frame[frame["panel"] == panel]
    color = alt.Color("series:N", scale=style.color_scale(domain, SERIES_COLORS), title=None,
                      legend=alt.Legend(orient="bottom", columns=2, labelLimit=style.LEGEND_LABEL_LIMIT))
    x = alt.X("layer:Q", scale=layer_scale, title=style.LAYER_TITLE if last else None,
              axis=alt.Axis(labels=last, values=ticks) if ticks is not None else alt.Axis(labels=last, tickMinStep=1))
    tooltip = [alt.Tooltip("series:N"), alt.Tooltip("layer:Q"), alt.Tooltip("value:Q", format=".3f"),
               alt.Tooltip("low:Q", format=".3f"), alt.Tooltip("high:Q", format=".3f")]
    layers: list[alt.Chart | alt.LayerChart] = []
    if reference is not None:
        layers.append(style.zero_rule(reference))
    layers += style.profile_layers(rows, x=x, y_field="value", y_title=y_title, color=color, tooltip=tooltip,
                                   band=("low", "high"), detail="series", y_scale=y_scale)
    return style.layered(*layers).properties(width=width, height=height)


def profile_chart(frame: pd.DataFrame, *, relevance_share: float, dose: float, title: str, subtitle: list[str],
                  width: style.Width = style.DEFAULT_WIDTH, height: int = 120) -> alt.VConcatChart:
    """:data:`PANELS` stacked on one layer axis, each with its own y (:func:`profile_frame`'s frame):
    specificity with a rule at 1 (the magnitude direction moves the choice as much as a random one), the
    share above the null with a rule at ``relevance_share`` (the paper's functional relevance)."""
    style.require_columns(frame, PROFILE_COLUMNS, "profile_chart")
    if frame.empty:
        raise AnalysisError("the steering result has no layer to draw")
    domain = list(dict.fromkeys(frame["series"].astype(str)))
    low, high = int(frame["layer"].min()), int(frame["layer"].max())
    layer_scale = alt.Scale(domain=[low - 0.5, high + 0.5], nice=False, zero=False)
    # Whole layers only: the half-layer margins would otherwise get ticks of their own.
    ticks = list(range(low, high + 1)) if high - low <= MAX_LAYER_TICKS else None
    shown = [panel for panel in PANELS if (frame["panel"] == panel).any()]
    titles = {EFFECT_PANEL: f"|Δ p(correct)| at dose {dose:g}", SPECIFICITY_PANEL: "specificity (×)",
              SHARE_PANEL: "share above null", REPRESENTATION_PANEL: "RSA, R², p(correct)"}
    references = {SPECIFICITY_PANEL: 1.0, SHARE_PANEL: relevance_share}
    # RSA and p(correct) lie in [-1, 1]; a held-out R² far below 0 (a layer where the probe fails) would
    # squash the panel, so it is clamped at -1, its tooltip keeping the value.
    scales = {REPRESENTATION_PANEL: alt.Scale(domain=[-1, 1], clamp=True)}
    panels = [_panel(frame, panel, domain, layer_scale, ticks, titles[panel], references.get(panel), width, height,
                     last=panel == shown[-1], y_scale=scales.get(panel)) for panel in shown]
    return alt.vconcat(*panels, spacing=8).resolve_scale(x="shared", y="independent", color="shared").properties(
        title=style.chart_title(title, subtitle))


def _baseline_line(result: SteerResult) -> str:
    correct = float(result.layers["baseline_correct"].mean()) if not result.layers.empty else math.nan
    return (f"unpatched p(correct) {format_number(correct, '.3f')}, position-corrected accuracy "
            f"{format_number(result.unpatched.accuracy, '.2f')} (binomial p {format_number(result.unpatched.p_value, '.2g')}), "
            f"'A' chosen on {result.unpatched.choose_a:.0%}; {result.at_ceiling:.0%} of the prompts beyond 0.99 or below 0.01")


def profile_figure(result: SteerResult, analysis: AnalysisResult | None = None,
                   probe: ProbeResult | None = None) -> alt.VConcatChart:
    """The causal profile by layer beside the geometry, the probe and the behavioural baseline, on one
    layer axis (:func:`profile_frame`, :func:`profile_chart`).

    Args:
        result: the steering.
        analysis: the model's analysis on the steering's stimuli (RSA), or None.
        probe: the model's probes on those stimuli (R²), or None.
    """
    params = result.params
    subtitle = [f"{result.model}: {params.direction} direction pushed at operand {params.operand}'s number, "
                f"{params.n_random} random directions, {result.n_trials} prompts; bands: "
                f"{params.ci:.0%} bootstrap intervals over prompts",
                f"grey band: the random directions' mean to their {params.null_percentile:g}th percentile",
                _baseline_line(result)]
    return profile_chart(profile_frame(result, analysis, probe), relevance_share=params.relevance_share,
                         dose=params.full_dose, title="Does the model use its magnitude direction?",
                         subtitle=subtitle)


# -- the dose-response ---------------------------------------------------------------------


KIND_LABELS = {"magnitude": MAGNITUDE, "random": "random directions (mean)", "orthogonal": ORTHOGONAL}
DOSE_COLORS = {MAGNITUDE: style.MODEL_COLORS[0], KIND_LABELS["random"]: style.NULL_CONTROL_COLOR,
               ORTHOGONAL: style.MODEL_COLORS[4]}

DOSE_MEASURES = {"effect": "mean |Δ p(correct)|", "option_mass": "option mass (patched / unpatched)"}
"""The dose-response's panels: the outcome and the answer options' probability mass, whose fall says a
push breaks the output rather than shifting the choice."""


def dose_frame(result: SteerResult, layer: int) -> pd.DataFrame:
    """One layer's dose-response, long: dose, series (the direction kind's label), measure (a label of
    :data:`DOSE_MEASURES`), value; dose 0 is the unpatched pass (no change, the options' full mass)."""
    rows = result.doses[result.doses["layer"].astype(int) == int(layer)]
    if rows.empty:
        raise AnalysisError(f"layer={layer} was not steered; the steered layers are "
                            f"{ranges(sorted(result.doses['layer'].astype(int).unique().tolist()))}",
                            parameters=("layer",))
    found = []
    for kind, label in KIND_LABELS.items():
        if not (rows["kind"] == kind).any():
            continue
        found.append({"dose": 0.0, "series": label, "measure": DOSE_MEASURES["effect"], "value": 0.0})
        found.append({"dose": 0.0, "series": label, "measure": DOSE_MEASURES["option_mass"], "value": 1.0})
        for row in rows[rows["kind"] == kind].itertuples():
            for column, measure in DOSE_MEASURES.items():
                found.append({"dose": float(row.dose), "series": label, "measure": measure,  # pyright: ignore[reportArgumentType]
                              "value": float(getattr(row, column))})
    return pd.DataFrame(found, columns=["dose", "series", "measure", "value"])


def dose_figure(result: SteerResult, layer: int) -> alt.HConcatChart:
    """The dose-response of one layer: mean |Δ p(correct)| and the option mass against the dose, per
    direction kind (:func:`dose_frame`).

    Args:
        result: the steering.
        layer: a steered layer.
    """
    frame = dose_frame(result, layer)
    domain = list(dict.fromkeys(frame["series"]))
    color = alt.Color("series:N", scale=style.color_scale(domain, DOSE_COLORS), title=None,
                      legend=alt.Legend(orient="bottom", labelLimit=style.LEGEND_LABEL_LIMIT))
    x = alt.X("dose:Q", title="dose (× the magnitudes' projection span)")
    panels = []
    for measure in DOSE_MEASURES.values():
        data = style.inline_data(frame[frame["measure"] == measure])
        line = alt.Chart(data).mark_line(point=True).encode(
            x=x, y=alt.Y("value:Q", title=measure), color=color,
            tooltip=[alt.Tooltip("series:N"), alt.Tooltip("dose:Q"), alt.Tooltip("value:Q", format=".4f")])
        panels.append(line.properties(width=style.DEFAULT_WIDTH // 2, height=220))
    unit = result.layers.loc[result.layers["layer"].astype(int) == int(layer), "dose_unit"]
    unit_text = format_number(float(unit.iloc[0]), ".3g") if len(unit) else "?"
    return alt.hconcat(*panels).resolve_scale(color="shared").properties(title=style.chart_title(
        f"Dose-response at layer {layer}",
        [f"{result.model}: dose 1 = {unit_text} (the span of the magnitudes' centroids along the direction)",
         "an option mass well below 1 means the push breaks the output rather than shifting the choice"]))


# -- sentences -----------------------------------------------------------------------------


def summary_sentence(result: SteerResult) -> str:
    """What the run shows in one sentence: the layers where the magnitude direction is functionally
    relevant, the largest specificity and where, and the signed shift there."""
    layers = result.layers
    params = result.params
    relevant = result.relevant_layers()
    where = (f"functionally relevant (at least {params.relevance_share:.0%} of the prompts moved more than the "
             f"random directions' {params.null_percentile:g}th percentile) at layer(s) {ranges(relevant)}"
             if relevant else "functionally relevant at no steered layer")
    finite = layers[np.isfinite(layers["specificity"].astype(float))]
    if finite.empty:
        return f"The magnitude direction is {where}; specificity is undefined at every layer."
    best = finite.iloc[int(np.argmax(finite["specificity"].to_numpy(dtype=np.float64)))]
    return (f"The magnitude direction is {where}. The largest specificity is "
            f"{format_number(float(best['specificity']), '.2f')}× at layer {int(best['layer'])} "
            f"({format_number(float(best['specificity_low']), '.2f')} to "
            f"{format_number(float(best['specificity_high']), '.2f')}); there, pushing operand "
            f"{params.operand}'s number toward \"larger\" moves p(choose it) by "
            f"{format_number(float(best['shift']), '+.4f')} (random directions: "
            f"{format_number(float(best['random_shift']), '+.4f')}).")


LAYER_TABLE_COLUMNS = ["layer", "specificity", "specificity_low", "specificity_high", "share_above_random",
                       "relevant", "magnitude_effect", "random_percentile", "baseline_correct", "option_mass",
                       "dose_unit", "top_dimension_share"]
"""The per-layer summary as the page and its CSV show it: the verdict's statistics first."""


def layers_table(result: SteerResult) -> pd.DataFrame:
    """Per steered layer, at the largest dose: specificity with its interval, the share of prompts above
    the null and relevance, the magnitude direction's mean |delta p| against the random directions'
    percentile, the unpatched p(correct), the option mass, the dose unit and the direction's
    concentration on its largest coordinates (:data:`LAYER_TABLE_COLUMNS`; every column of the result's
    ``layers`` is in ``--json``)."""
    columns = [column for column in LAYER_TABLE_COLUMNS if column in result.layers.columns]
    return result.layers.loc[:, columns].reset_index(drop=True)


def steered_layers(result: SteerResult) -> list[int]:
    """The steered layers, in order: the dose-response's choices."""
    return sorted(int(layer) for layer in result.layers["layer"])


def most_specific_layer(result: SteerResult) -> int:
    """The steered layer with the largest specificity (the first steered layer where none is defined):
    the dose-response the report shows."""
    finite = result.layers[np.isfinite(result.layers["specificity"].astype(float))]
    if finite.empty:
        return steered_layers(result)[0]
    return int(finite["layer"].iloc[int(np.argmax(finite["specificity"].to_numpy(dtype=np.float64)))])
