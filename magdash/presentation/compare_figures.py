"""The Compare page's figures (E6): two models' alpha profiles and their layerwise difference with
its joint-bootstrap CI, the summary table and the sentence that leads with the mean difference and
the interval of the stimulus bootstrap; the Controls page draws its variants with the same chart.

The frame, chart and figure functions sit together, as in :mod:`magdash.presentation.scaling_figures`.
Wherever a p-value is written, the stimulus bootstrap's estimate and interval come first
(:func:`magdash.significance.stimulus_estimate`), a test over core layers is named as one
(:func:`magdash.significance.layer_test_note`), and a test that cannot reach .05 with its points
says so (:func:`magdash.significance.unreachable_note`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import altair as alt
import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.formatting import fixed, format_p
from magdash.presentation import chart_style as style
from magdash.significance import layer_test_note, stimulus_estimate, unreachable_note
from magdash.variability.measures import measure_title

if TYPE_CHECKING:
    from magdash.variability.compare import ComparisonResult, ModelComparison


# -- two models compared ------------------------------------------------------------------


def comparison_frame(comparison: ComparisonResult, measure: str) -> pd.DataFrame:
    """One measure of a model comparison: its ``layers`` table plus model_a, model_b, measure.

    Columns: model_a, model_b, measure, layer_a, layer_b, gamma_a, gamma_b, core, alpha_a,
    alpha_b, delta, ci_low, ci_high.
    """
    if measure not in comparison.measures:
        raise AnalysisError(f"measure {measure!r} was not compared; add it to the measures")
    frame = comparison.measures[measure].layers.copy()
    frame.insert(0, "model_a", comparison.model_a)
    frame.insert(1, "model_b", comparison.model_b)
    frame.insert(2, "measure", measure)
    return frame


def comparison_summary(comparison: ComparisonResult) -> pd.DataFrame:
    """Per measure: mean core alphas of A and B, the mean delta with its stimulus-bootstrap interval
    and p (the estimate that leads), and the paper's Wilcoxon test over the core layers.

    Columns: model_a, model_b, measure, mean_alpha_a, mean_alpha_b, mean_delta, mean_delta_ci_low,
    mean_delta_ci_high, mean_delta_p, n_resamples, wilcoxon_statistic, wilcoxon_p, n_pairs,
    wilcoxon_reachable.
    """
    rows = [
        {
            "model_a": comparison.model_a,
            "model_b": comparison.model_b,
            "measure": measure_title(name),
            **item.summary(),
        }
        for name, item in comparison.measures.items()
    ]
    return pd.DataFrame(rows)


def compare_profiles(
    comparison: pd.DataFrame,
    *,
    x: str = "layer",
    registered: Sequence[str] = (),
    title: str | None = None,
    subtitle: str | Sequence[str] | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = 240,
) -> alt.VConcatChart:
    """Two models' alpha profiles (top) and their layerwise difference with its CI (bottom).

    ``comparison`` (:func:`comparison_frame`, i.e. ``ModelComparison.layers``
    plus names): model_a, model_b, layer_a, layer_b, gamma_a, core, alpha_a, alpha_b, delta,
    ci_low, ci_high (measure optional). ``x="layer"`` uses model A's layer index,
    ``x="gamma"`` the depth fraction (for models of different depth). Grey: A's core band,
    over which the mean difference is bootstrapped and the Wilcoxon test runs (put them in ``subtitle``:
    :func:`comparison_subtitle`). ``width="container"``
    falls back to :data:`style.DEFAULT_WIDTH`: stacked panels cannot share a container width (each
    would take all of it and the axes would run off the page). ``registered``: the store's models in
    registration order, which fixes each model's colour (:func:`~magdash.presentation.chart_style.model_colors`).
    """

    needed = ["model_a", "model_b", "layer_a", "layer_b", "core", "alpha_a", "alpha_b", "delta"]
    if width == "container":
        width = style.DEFAULT_WIDTH
    style.require_columns(comparison, [*needed, "ci_low", "ci_high"], "compare_profiles")
    x_field = {"layer": "layer_a", "gamma": "gamma_a"}.get(x)
    if x_field is None:
        raise AnalysisError(f"x must be 'layer' or 'gamma', got {x!r}")
    model_a = str(comparison["model_a"].iloc[0])
    model_b = str(comparison["model_b"].iloc[0])
    x_title = f"layer of {model_a}" if x == "layer" else style.GAMMA_TITLE
    measure = (
        measure_title(str(comparison["measure"].iloc[0])) if "measure" in comparison else "V"
    )
    frame = comparison.copy()
    if "gamma_a" not in frame:
        frame["gamma_a"] = np.nan
    axis = style.DepthAxis.of(frame[x_field], x_field, x_title)
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
    color = alt.Color("model:N", scale=style.model_colors(models, registered), title="model")
    top_layers = style.depth_backdrop(axis, long, "alpha")
    top_layers.append(style.zero_rule(0.0))
    top_layers += style.profile_layers(
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
    top_layers += style.beyond_depth(frame, x_field)
    delta_frame = frame.loc[
        :, list(dict.fromkeys([x_field, "layer_a", "layer_b", "delta", "ci_low", "ci_high"]))
    ]
    delta_color = alt.value(style.REFERENCE_COLOR)
    bottom_layers = style.depth_backdrop(axis, frame, "delta")
    bottom_layers.append(style.zero_rule(0.0))
    bottom_layers += style.profile_layers(
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
    top = style.layered(*top_layers).properties(
        width=width, height=height, title=style.chart_title(f"alpha of {measure} by {'layer' if x == 'layer' else 'depth'}")
    )
    bottom = style.layered(*bottom_layers).properties(
        width=width,
        height=height,
        title=style.chart_title(f"difference {model_a} minus {model_b} (band: joint bootstrap CI)"),
    )
    text = title or f"{model_a} vs {model_b}: {measure}"
    notes = style.subtitle_lines(subtitle) + ([style.POST_NORM_NOTE] if style.beyond_depth(frame, x_field) else [])
    return alt.vconcat(top, bottom).properties(title=style.chart_title(text, notes or None))


def comparison_sentence(comparison: ComparisonResult, measure: str) -> str:
    """The comparison over model A's core layers in words: the mean difference with its stimulus-bootstrap
    interval and p first, then the paper's Wilcoxon test, named for what it is (a test over layers that
    share their stimuli) and, with too few pairs, why it cannot reach .05.

    Args:
        comparison: model A minus model B.
        measure: the measure (``eucl``, ``residual``, ``proj``, ...).
    """
    item = comparison.measures[measure]
    unreachable = unreachable_note("wilcoxon", item.n_pairs)
    return (
        f"Over {comparison.model_a}'s {len(item.core_layers)} core layers: mean alpha "
        f"{fixed(item.mean_alpha_a, 4)} ({comparison.model_a}) vs {fixed(item.mean_alpha_b, 4)} "
        f"({comparison.label_b}), mean difference "
        f"{stimulus_estimate(item.mean_delta, item.mean_delta_ci, item.mean_delta_p, item.n_resamples, level=item.ci)}. "
        f"The paper's Wilcoxon signed-rank test of the paired alphas, W = {fixed(item.wilcoxon_statistic, 1)}, "
        f"p = {format_p(item.wilcoxon_p)} ({item.n_pairs} pairs), is {layer_test_note(item.n_pairs)}"
        + (f"; {unreachable}." if unreachable else ".")
    )


def comparison_subtitle(item: ModelComparison) -> list[str]:
    """A comparison chart's subtitle: the mean difference with its stimulus-bootstrap interval, then the
    Wilcoxon test over the layers (and whether it can reach .05).

    Args:
        item: one measure's comparison.
    """
    low, high = item.mean_delta_ci
    reach = "" if item.wilcoxon_reachable else "; cannot reach .05"
    return [f"mean delta {fixed(item.mean_delta, 4)} [{fixed(low, 4)}, {fixed(high, 4)}], p = "
            f"{format_p(item.mean_delta_p)} (stimulus bootstrap)",
            f"per-layer Wilcoxon p = {format_p(item.wilcoxon_p)} ({item.n_pairs} pairs{reach})"]


def compare_figure(
    comparison: ComparisonResult, measure: str, x: str = "layer", registered: Sequence[str] = ()
) -> alt.VConcatChart:
    """Two models' alphas by layer and their difference with its joint-bootstrap CI.

    Args:
        comparison: model A minus model B.
        measure: the measure shown (``eucl``, ``residual``, ``proj``, ...).
        x: the horizontal axis: ``layer``, or ``gamma`` (depth fraction).
        registered: every model of the store in registration order, so that each model keeps its colour
            (the one it has on the Weber page); empty: model A takes the first colour, B the second.
    """
    item = comparison.measures[measure]
    return compare_profiles(
        comparison_frame(comparison, measure), x=x, registered=registered, subtitle=comparison_subtitle(item)
    )


def comparison_table(comparison: ComparisonResult, measure: str) -> pd.DataFrame:
    return comparison_frame(comparison, measure)
