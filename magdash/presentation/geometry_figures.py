"""The log-compressive geometry as figures and tables (Cacioli, arXiv 2603.20642): the centroid
RDM, RSA with the log-ratio and linear models by layer, the centroids' PC1 against log n.

Each figure's frame, chart (:mod:`magdash.presentation.chart_style`) and figure function sit
together, as in :mod:`magdash.presentation.scaling_figures`. Computed here because only a figure needs them:
the centroid RDM and PC1 coordinates of one layer, and :func:`rdm_blocks`, the block means of an
RDM too large to draw cell by cell.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import altair as alt
import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.formatting import fixed, format_number
from magdash.params import ranges
from magdash.presentation import chart_style as style
from magdash.variability.geometry import Pc1Coordinates, centroid_rdm, pc1_coordinates
from magdash.variability.measures import centroids

if TYPE_CHECKING:
    from magdash.variability.analysis import AnalysisResult


# -- RSA by layer -------------------------------------------------------------------------


TRAINED_WEIGHTS = "trained"


CONTROL_WEIGHTS = "@random control"
"""How the RSA chart names the model's own weights and its random-weight control's."""


RSA_COLUMNS = {
    ("log-ratio", "euclidean"): "rsa_log_euclidean",
    ("linear", "euclidean"): "rsa_linear_euclidean",
    ("log-ratio", "cosine"): "rsa_log_cosine",
    ("linear", "cosine"): "rsa_linear_cosine",
}


def rsa_frame(result: AnalysisResult) -> pd.DataFrame:
    """RSA rho per layer, long. Columns: layer, label, gamma, core, model_rdm, metric, rho."""
    geometry = result.geometry
    core = set(result.core_layers)
    rows = [
        {
            "layer": int(row["layer"]),
            "label": row["label"],
            "gamma": int(row["layer"]) / result.n_blocks,
            "core": int(row["layer"]) in core,
            "model_rdm": model_rdm,
            "metric": metric,
            "rho": float(row[column]),
        }
        for _, row in geometry.iterrows()
        for (model_rdm, metric), column in RSA_COLUMNS.items()
    ]
    return pd.DataFrame(rows)


def rsa_with_control(result: AnalysisResult, control: AnalysisResult | None) -> pd.DataFrame:
    """:func:`rsa_frame` of the model (``weights`` "trained") and of its control (:data:`CONTROL_WEIGHTS`).

    Args:
        result: the model's analysis.
        control: the analysis of its ``@random`` control, or None.
    """
    frames = [rsa_frame(result).assign(weights=TRAINED_WEIGHTS)]
    if control is not None:
        frames.append(rsa_frame(control).assign(weights=CONTROL_WEIGHTS))
    return pd.concat(frames, ignore_index=True)


RDM_MODEL_COLORS = style.palette(("log-ratio", "linear"))


def rsa_by_layer(
    rsa: pd.DataFrame,
    *,
    metric: str | None = "euclidean",
    x: str = "layer",
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """RSA (Spearman rho of the centroid RDM with a model RDM) by layer, log-ratio vs linear.

    ``rsa`` (:func:`rsa_frame`): layer, model_rdm, rho (metric filtered to
    ``metric`` unless None; core, label, gamma optional). A log-compressive code has the
    log-ratio line above the linear one.
    """
    style.require_columns(rsa, ["layer", "model_rdm", "rho"], "rsa_by_layer")
    x_field, x_title = style.depth_field(x)
    frame = rsa.copy()
    if metric is not None and "metric" in frame:
        frame = frame[frame["metric"] == metric]
    if "label" not in frame:
        frame["label"] = frame["layer"].astype(str)
    if "weights" not in frame:
        frame["weights"] = TRAINED_WEIGHTS
    weights = list(dict.fromkeys(frame["weights"].astype(str)))
    # The random-weight control dashed beside the trained model: a log-ratio line above the linear
    # one that the control draws too is the architecture's or the tokenizer's, not learned.
    dash = None if len(weights) < 2 else alt.StrokeDash(
        "weights:N", title="weights", scale=alt.Scale(domain=weights, range=[[1, 0], [5, 3]][: len(weights)]),
        legend=alt.Legend(labelLimit=style.LEGEND_LABEL_LIMIT),
    )
    models = list(dict.fromkeys(frame["model_rdm"].astype(str)))
    color = alt.Color("model_rdm:N", scale=style.color_scale(models, RDM_MODEL_COLORS), title="model RDM")
    axis = style.DepthAxis.of(frame[x_field], x_field, x_title)
    layers = style.depth_backdrop(axis, frame, "rho")
    layers.append(style.zero_rule(0.0))
    frame["curve"] = frame["model_rdm"].astype(str) + " · " + frame["weights"].astype(str)
    layers += style.profile_layers(
        frame.loc[:, list(dict.fromkeys(["layer", "label", x_field, "model_rdm", "weights", "curve", "rho"]))],
        x=axis.encoding(),
        y_field="rho",
        y_title="Spearman rho",
        color=color,
        tooltip=[
            alt.Tooltip("model_rdm:N", title="model RDM"),
            alt.Tooltip("weights:N"),
            alt.Tooltip("layer:Q"),
            alt.Tooltip("label:N"),
            alt.Tooltip("rho:Q", title="Spearman rho (centroid RDM vs model RDM)", format=".3f"),
        ],
        detail="curve",
        stroke_dash=dash,
    )
    which = f" ({metric} RDM)" if metric else ""
    text = title or f"RSA by layer: log-ratio vs linear magnitude model{which}"
    return style.finish(style.layered(*layers), style.chart_title(text, subtitle), width, height)


def rsa_figure(result: AnalysisResult, metric: str, control: AnalysisResult | None = None) -> alt.LayerChart:
    """RSA of the centroid RDMs against the log-ratio and linear models, by layer, with the
    model's random-weight control dashed beside it where it is stored.

    Args:
        result: the model's analysis.
        metric: the RDMs' distance: ``euclidean`` or ``cosine``.
        control: the analysis of its ``@random`` control, or None.
    """
    return rsa_by_layer(rsa_with_control(result, control), metric=metric, width="container")


def rsa_sentence(result: AnalysisResult, metric: str, control: AnalysisResult | None = None) -> str:
    """How much better the log-ratio model RDM fits than the linear one over the core layers, for
    the model and, beside it, its random-weight control (the same difference in the control is
    not learned: digit tokens and the architecture can give it).

    Args:
        result: the model's analysis.
        metric: the RDMs' distance: ``euclidean`` or ``cosine``.
        control: the analysis of its ``@random`` control, or None.
    """
    def advantage(item: AnalysisResult) -> float:
        frame = rsa_frame(item)
        core = frame[frame["core"] & (frame["metric"] == metric)].pivot_table(
            index="layer", columns="model_rdm", values="rho")
        return float((core["log-ratio"] - core["linear"]).mean()) if len(core) else float("nan")

    layers = f"core layers {ranges(result.core_layers)}"
    text = (f"Over the {layers}, Spearman rho of the {metric} centroid RDM with the log-ratio model minus "
            f"with the linear one: {format_number(advantage(result), '+.3f')} ({result.model})")
    if control is None:
        return (text + "; no @random control is stored on this stimulus set, so whether the architecture "
                "alone gives this difference is not shown.")
    return (text + f", {format_number(advantage(control), '+.3f')} ({control.model}). A difference the control "
            "shares is the architecture's or the tokenizer's, not learned; only the part above it is the "
            "trained model's.")


def geometry_table(result: AnalysisResult) -> pd.DataFrame:
    table = result.geometry.copy()
    table.insert(2, "core", table["layer"].isin(result.core_layers))
    return table


# -- the centroid RDM ---------------------------------------------------------------------


def rdm_frame(rdm: np.ndarray, magnitudes: Sequence[float] | np.ndarray) -> pd.DataFrame:
    """A square RDM as long rows. Columns: a, b (magnitudes), dissimilarity."""
    rdm = np.asarray(rdm, dtype=np.float64)
    values = np.asarray(magnitudes, dtype=np.float64)
    if rdm.shape != (values.size, values.size):
        raise AnalysisError(f"RDM of shape {rdm.shape} does not match {values.size} magnitudes")
    a, b = np.meshgrid(values, values, indexing="ij")
    return pd.DataFrame({"a": a.ravel(), "b": b.ravel(), "dissimilarity": rdm.ravel()})


def rdm_blocks(frame: pd.DataFrame, max_side: int) -> tuple[pd.DataFrame, int]:
    """A long RDM (a, b, dissimilarity) averaged over blocks of consecutive magnitudes, at most
    ``max_side`` blocks a side; a and b become each block's first magnitude. Returns the
    frame and the block length."""
    magnitudes = np.unique(frame["a"].to_numpy(dtype=np.float64))
    block = int(math.ceil(magnitudes.size / max_side))
    starts = magnitudes[::block]
    index = np.searchsorted(magnitudes, frame["a"].to_numpy(dtype=np.float64)) // block
    other = np.searchsorted(magnitudes, frame["b"].to_numpy(dtype=np.float64)) // block
    binned = (
        pd.DataFrame({"a": starts[index], "b": starts[other], "dissimilarity": frame["dissimilarity"].to_numpy()})
        .groupby(["a", "b"])["dissimilarity"].mean().reset_index()
    )
    return binned, block


def rdm_heatmap(
    rdm: pd.DataFrame,
    *,
    metric: str = "euclidean",
    title: str | None = None,
    subtitle: str | None = None,
    size: int = 360,
) -> alt.Chart:
    """Centroid RDM as a heatmap over magnitude pairs (Cacioli, arXiv 2603.20642).

    ``rdm`` (:func:`rdm_frame`): a, b (magnitudes), dissimilarity. Cells
    without a value are left blank. An RDM of more than :data:`style.MAX_RDM_SIDE` magnitudes is drawn
    in blocks of consecutive magnitudes (:func:`rdm_blocks`, labelled
    by each block's first magnitude), as a million cells would freeze the browser.
    """
    style.require_columns(rdm, ["a", "b", "dissimilarity"], "rdm_heatmap")
    frame = style.finite_rows(rdm, "dissimilarity").loc[:, ["a", "b", "dissimilarity"]]
    side = int(frame["a"].nunique())
    notes = style.subtitle_lines(subtitle)
    if side > style.MAX_RDM_SIDE:
        frame, block = rdm_blocks(frame, style.MAX_RDM_SIDE)
        notes.append(f"{side:,} magnitudes in blocks of {block} (mean per block; labels: first magnitude)")
    unit = "Euclidean distance" if metric == "euclidean" else f"{metric} distance"
    chart = (
        alt.Chart(style.inline_data(frame))
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
    return chart.properties(title=style.chart_title(text, notes or None), width=size, height=size)


def rdm_figure(result: AnalysisResult, vectors: np.ndarray, layer: int, metric: str) -> alt.Chart:
    """The centroid RDM of ``layer`` (its ``vectors``, shape (n_magnitudes, n_carriers, d)).

    Args:
        result: the model's analysis.
        vectors: the layer's (n_magnitudes, n_carriers, d) vectors.
        layer: the layer shown.
        metric: the RDM's distance: ``euclidean`` or ``cosine``.
    """
    rdm = centroid_rdm(centroids(vectors), metric)
    return rdm_heatmap(
        rdm_frame(rdm, result.magnitudes), metric=metric, subtitle=f"layer {layer} ({result.layer_labels[layer]})"
    )


# -- PC1 against log n --------------------------------------------------------------------


def pc1_frame(coordinates: Pc1Coordinates, magnitudes: Sequence[float] | np.ndarray) -> pd.DataFrame:
    """Centroid PC1 coordinate per magnitude. Columns: magnitude, pc1."""
    return pd.DataFrame(
        {
            "magnitude": np.asarray(magnitudes, dtype=np.float64),
            "pc1": np.asarray(coordinates.coordinates, dtype=np.float64),
        }
    )


def pc1_vs_logn(
    pc1: pd.DataFrame,
    *,
    title: str | None = None,
    subtitle: str | Sequence[str] | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Centroid PC1 coordinate against n on a log axis (straight = log-compressive).

    ``pc1`` (:func:`pc1_frame`): magnitude, pc1. Put the correlations in
    ``subtitle``.
    """
    style.require_columns(pc1, ["magnitude", "pc1"], "pc1_vs_logn")
    frame = style.finite_rows(pc1, "magnitude", positive=True).loc[:, ["magnitude", "pc1"]]
    data = style.inline_data(frame)
    x = alt.X("magnitude:Q", scale=alt.Scale(type="log"), title="magnitude n (log scale)")
    y = alt.Y("pc1:Q", title="PC1 coordinate")
    line = alt.Chart(data).mark_line(color=style.CONNECTOR_COLOR, invalid=style.PATH_INVALID).encode(
        x=x, y=y, order="magnitude:Q"
    )
    points = (
        alt.Chart(data)
        .mark_point(filled=True, size=50, color=style.MEASURE_COLORS["V_eucl"], invalid=style.POINT_INVALID)
        .encode(
            x=x,
            y=y,
            tooltip=[alt.Tooltip("magnitude:Q", title="n"), alt.Tooltip("pc1:Q", title="PC1 coordinate (activation units)", format=".4g")],
        )
    )
    text = title or "Centroid PC1 coordinate against log n"
    return style.finish(style.layered(line, points), style.chart_title(text, subtitle), width, height)


def pc1_figure(result: AnalysisResult, vectors: np.ndarray, layer: int) -> alt.LayerChart:
    """The centroids' PC1 coordinate against log n at ``layer`` (its ``vectors``).

    Args:
        result: the model's analysis.
        vectors: the layer's (n_magnitudes, n_carriers, d) vectors.
        layer: the layer shown.
    """
    pc1 = pc1_coordinates(centroids(vectors), result.magnitudes)
    subtitle = [
        f"layer {layer} ({result.layer_labels[layer]}): Pearson r with log n = {fixed(pc1.pearson)}, "
        f"Spearman = {fixed(pc1.spearman)}",
        f"PC1 explains {fixed(100 * pc1.explained, 1)}% of the centroid variance",
    ]
    return pc1_vs_logn(pc1_frame(pc1, result.magnitudes), subtitle=subtitle, width="container")
