"""The Scaling page's figures (Cacioli 2026, arXiv 2604.04469): V against n at one layer (its points
coloured by token count on demand), alpha by layer with the per-layer fits, and the massive-dimension
control (alpha without the massive dimensions beside the raw alpha). The Home page shows the alpha profile.

One section per figure: its frame (a tidy DataFrame, one row per mark, built from the result types),
its chart (Altair, drawn from frames with the vocabulary of :mod:`magdash.presentation.chart_style`)
and its figure (a result in, a captioned chart or table out: what a page shows and the report embeds).
The few numbers only a figure needs are computed here:

- :func:`carrier_distances`: the per-carrier distances ``||x[n,c] - m[n]||`` whose mean over
  carriers is V_eucl(n), drawn as faint points under V;
- :func:`scaling_lines`: the end points of the OLS line and of the alpha = 1 and alpha = 0
  reference lines, all three through the geometric centre of the fitted points
  (mean log n, mean log V), which the OLS line passes through by construction.

Every frame is a new DataFrame; NaN stays NaN (the charts decide how to show a gap).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import altair as alt
import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.formatting import MISSING, fixed
from magdash.norm_outliers import OUTLIER_NORM_FACTOR
from magdash.presentation import chart_style as style
from magdash.significance import stimulus_estimate
from magdash.variability.fits import ScalingFit, scaling_mask
from magdash.variability.massive_control import MassiveControl
from magdash.variability.measures import (
    BROWSABLE_MEASURES,
    CARRIER_MEASURES,
    DEFAULT_MEASURE,
    MEASURES,
    PRIMARY_MEASURES,
    measure_title,
)

if TYPE_CHECKING:
    from magdash.variability.analysis import AnalysisResult


# -- V against n at one layer -------------------------------------------------------------


POINT_STATUS = ("fitted", "outlier (> 3x median)", "V <= 0", "no value")
"""Why a magnitude did or did not enter a scaling fit (column ``status`` of scaling points)."""


def scaling_points(result: AnalysisResult, measure: str, layer: int) -> pd.DataFrame:
    """V(n) of one layer and measure, with whether each point entered the fit.

    Columns: magnitude, V, status (one of :data:`POINT_STATUS`), measure, layer, label,
    outlier_vectors: how many of the magnitude's vectors at this layer have an outsized norm
    (:mod:`magdash.variability.artifacts`), and n_tokens and kept_text: the magnitude's token
    count and kept token (NaN and "" without token facts). The status follows the analysis's point
    rules (:func:`magdash.variability.fits.scaling_mask`).
    """
    if measure not in result.values:
        raise AnalysisError(f"measure {measure!r} was not analysed; add it to the measures")
    if not 0 <= layer < result.n_layers:
        raise AnalysisError(f"layer {layer} does not exist: this model has 0..{result.n_layers - 1}")
    values = np.asarray(result.values[measure][layer], dtype=np.float64)
    magnitudes = np.asarray(result.magnitudes, dtype=np.float64)
    rules = result.params.fit_rules().for_measure(measure)
    usable, _ = scaling_mask(magnitudes, values, rules=rules.with_outlier_rule(False))
    kept, _ = scaling_mask(magnitudes, values, rules=rules)
    status = np.where(
        ~np.isfinite(values),
        POINT_STATUS[3],
        np.where(~usable, POINT_STATUS[2], np.where(kept, POINT_STATUS[0], POINT_STATUS[1])),
    )
    tokens = result.tokens.set_index("magnitude") if result.has_tokenization else None
    return pd.DataFrame(
        {
            "magnitude": magnitudes,
            "V": values,
            "status": status,
            "measure": measure,
            "layer": layer,
            "label": result.layer_labels[layer],
            "outlier_vectors": [sum(1 for item in result.outlier_vectors
                                    if item.layer == layer and item.magnitude == int(m)) for m in magnitudes],
            "n_tokens": np.full(magnitudes.size, math.nan) if tokens is None
            else tokens["n_tokens"].reindex(magnitudes).to_numpy(dtype=np.float64),
            "kept_text": [""] * magnitudes.size if tokens is None
            else tokens["kept_text"].reindex(magnitudes).fillna("").astype(str).tolist(),
        }
    )


def scaling_lines(points: pd.DataFrame, fit: ScalingFit | Mapping[str, float]) -> pd.DataFrame:
    """End points of the OLS fit and of the alpha = 1 and alpha = 0 reference lines.

    ``points`` is :func:`scaling_points` (only rows with status "fitted" anchor the lines).
    The fit is ``log V = intercept + alpha log n`` (natural logs). Each line is drawn from the
    smallest to the largest fitted magnitude and passes through the geometric centre
    (exp(mean log n), exp(mean log V)) of the fitted points, so the three slopes compare at a
    glance. Columns: line, alpha, magnitude, V (two rows per line). Empty when there is no fit.
    """
    alpha = float(fit["alpha"] if isinstance(fit, Mapping) else fit.alpha)
    intercept = float(fit["intercept"] if isinstance(fit, Mapping) else fit.intercept)
    fitted = points[points["status"] == POINT_STATUS[0]]
    columns = ["line", "alpha", "magnitude", "V"]
    if fitted.empty or not (math.isfinite(alpha) and math.isfinite(intercept)):
        return pd.DataFrame(columns=columns)
    magnitudes = fitted["magnitude"].to_numpy(dtype=np.float64)
    log_n = np.log(magnitudes)
    log_v = np.log(fitted["V"].to_numpy(dtype=np.float64))
    centre_n, centre_v = float(log_n.mean()), float(log_v.mean())
    end_magnitudes = np.array([magnitudes.min(), magnitudes.max()])
    ends = np.log(end_magnitudes)
    lines = {
        f"OLS fit (alpha = {alpha:.3f})": (alpha, intercept + alpha * ends),
        "alpha = 1 (scalar)": (1.0, centre_v + (ends - centre_n)),
        "alpha = 0 (constant)": (0.0, np.full(2, centre_v)),
    }
    rows = [
        {"line": name, "alpha": slope, "magnitude": float(n), "V": math.exp(y)}
        for name, (slope, log_values) in lines.items()
        for n, y in zip(end_magnitudes, log_values, strict=True)
    ]
    return pd.DataFrame(rows, columns=columns)


def carrier_distances(
    vectors: np.ndarray, magnitudes: Sequence[float] | np.ndarray, carriers: Sequence[str], measure: str = DEFAULT_MEASURE,
    left_out: Sequence[int] = (),
) -> pd.DataFrame:
    """Per-carrier distance to the magnitude's centroid, ``||x[n,c] - m[n]||``.

    Their mean over carriers is V_eucl(n) (``measure="eucl"``) or, after removing each
    carrier's sentence offset s[c] = mean_n x[n,c] - grand mean, V_residual(n)
    (``measure="residual"``). Carriers in ``left_out`` (an analysis's ``exclude_carriers``)
    take no part, as in the analysis.

    Args:
        vectors: one layer's vectors, shape (n_magnitudes, n_carriers, d).
        magnitudes: the magnitudes of axis 0.
        carriers: the carrier sentences of axis 1.
        measure: ``eucl`` or ``residual`` (:data:`~magdash.variability.measures.CARRIER_MEASURES`).
        left_out: carriers (0-based) the analysis left out.

    Returns:
        magnitude, carrier_index (in the stimulus set), carrier, distance.
    """
    if measure not in CARRIER_MEASURES:
        raise AnalysisError(
            f"per-carrier distances exist for {', '.join(CARRIER_MEASURES)}, not {measure!r}"
        )
    kept = [c for c in range(len(carriers)) if c not in set(left_out)]
    vectors = np.asarray(vectors, dtype=np.float64)[:, kept]
    if measure == "residual":
        carrier_means = vectors.mean(axis=0)
        vectors = vectors - (carrier_means - carrier_means.mean(axis=0, keepdims=True))[None]
    # Subtract the first carrier before averaging (as magdash.variability.measures does) so identical
    # vectors give exactly 0 rather than rounding noise.
    shifted = vectors - vectors[:, :1]
    deviations = shifted - shifted.mean(axis=1, keepdims=True)
    distances = np.sqrt(np.einsum("ncd,ncd->nc", deviations, deviations))
    n_magnitudes, n_carriers = distances.shape
    return pd.DataFrame(
        {
            "magnitude": np.repeat(np.asarray(magnitudes, dtype=np.float64), n_carriers),
            "carrier_index": np.tile(np.asarray(kept), n_magnitudes),
            "carrier": np.tile(np.asarray(carriers, dtype=object)[kept], n_magnitudes),
            "distance": distances.ravel(),
        }
    )


CARRIER_POINTS = "per-carrier distance"


def scaling_scatter(
    points: pd.DataFrame,
    lines: pd.DataFrame,
    *,
    carriers: pd.DataFrame | None = None,
    by_tokens: bool = False,
    title: str | None = None,
    subtitle: str | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Log–log V against n at one layer: V per magnitude, the OLS line and two references.

    With ``by_tokens`` and the points' column n_tokens filled, each point's colour is its token
    count (legend "tokens"; outliers keep their cross), so steps at the digit-count boundaries show.

    - ``points`` (:func:`scaling_points`): magnitude, V, status, measure, label.
      Points with status "fitted" are filled; outliers (the 3x-median rule) are red crosses; a
      magnitude holding outlier vectors (column outlier_vectors > 0: a norm over 10x the layer's
      median) is ringed and said in the subtitle. Points with V <= 0 or no value cannot sit on a
      log axis and are counted in the subtitle.
    - ``lines`` (:func:`scaling_lines`): line, alpha, magnitude, V — the OLS fit
      (solid) and the alpha = 1 (scalar, dashed) and alpha = 0 (constant, dotted) references.
    - ``carriers`` (optional, :func:`carrier_distances`): magnitude, carrier,
      distance — faint per-carrier distances to the centroid, with the sentence in the tooltip.
    """
    style.require_columns(points, ["magnitude", "V", "status"], "scaling_scatter")
    style.require_columns(lines, ["line", "magnitude", "V"], "scaling_scatter")
    measure = str(points["measure"].iloc[0]) if "measure" in points and len(points) else "V"

    label = measure_title(measure)
    colour = style.MEASURE_COLORS.get(label, style.MEASURE_COLORS["V_eucl"])
    drawable = style.finite_rows(points, "magnitude", "V", positive=True)
    hidden = len(points) - len(drawable)
    notes = style.subtitle_lines(subtitle)
    if hidden:
        notes.append(f"{hidden} magnitude(s) with V <= 0 or no value not drawn (no logarithm)")
    shown = pd.DataFrame(columns=["magnitude", "carrier", "distance"])
    if carriers is not None and len(carriers):
        style.require_columns(carriers, ["magnitude", "carrier", "distance"], "scaling_scatter carriers")
        shown = style.finite_rows(carriers, "magnitude", "distance", positive=True)
        shown, note = style.thin_by_magnitude(shown, "per-carrier points")
        if note:
            notes.append(note)
    # The y domain follows the data (a little margin); the reference lines are clipped to it,
    # otherwise the alpha = 1 line would stretch the axis over decades of empty space.
    observed = np.concatenate(
        [drawable["V"].to_numpy(dtype=np.float64), shown["distance"].to_numpy(dtype=np.float64)]
    )
    # No zero=: a log scale has no zero (Vega warns once per use that it drops it).
    y_scale = alt.Scale(type="log")
    if observed.size:
        y_scale = alt.Scale(type="log", domain=[float(observed.min()) / 1.5, float(observed.max()) * 1.5])
    if measure in BROWSABLE_MEASURES:
        notes.insert(0, MEASURES[measure].explained)
    x = alt.X("magnitude:Q", scale=alt.Scale(type="log"), title="magnitude n (log scale)")
    y_title = f"{label} (log scale)"
    y = alt.Y("V:Q", scale=y_scale, title=y_title)
    layers: list[alt.Chart] = []
    if len(shown):
        layers.append(
            alt.Chart(style.inline_data(shown.assign(points=CARRIER_POINTS)))
            .mark_circle(size=18, opacity=0.35, invalid=style.POINT_INVALID)
            .encode(
                x=x,
                y=alt.Y("distance:Q", scale=y_scale, title=y_title),
                # In the legend too (its own colour scale, resolved independently below).
                fill=alt.Fill("points:N", scale=alt.Scale(domain=[CARRIER_POINTS], range=[style.CARRIER_COLOR]), title=""),
                tooltip=[
                    alt.Tooltip("magnitude:Q", title="n"),
                    alt.Tooltip("carrier:N", title="carrier"),
                    alt.Tooltip("distance:Q", title="||x - m||", format=".4g"),
                ],
            )
        )
    counted = by_tokens and "n_tokens" in drawable and drawable["n_tokens"].notna().any()
    line_rows = style.finite_rows(lines, "magnitude", "V", positive=True)
    if len(line_rows):
        names = list(dict.fromkeys(line_rows["line"]))
        # Points coloured by token count: the fit line is black, a colour no token count has.
        fit_colour = style.FIT_COLOR if counted else colour
        colours = {name: fit_colour if name.startswith("OLS") else style.REFERENCE_COLOR for name in names}
        dashes = {
            name: [1, 0] if name.startswith("OLS") else [6, 4] if "alpha = 1" in name else [2, 3]
            for name in names
        }
        layers.append(
            alt.Chart(style.inline_data(line_rows))
            .mark_line(clip=True, invalid=style.PATH_INVALID)
            .encode(
                x=x,
                y=y,
                # With the token counts' own colour legend, the lines' colours are said by the dash
                # legend alone: an independent colour scale would repeat the "line" legend.
                color=alt.Color("line:N", scale=style.color_scale(names, colours), title="line",
                                legend=None if counted else alt.Undefined),
                strokeDash=alt.StrokeDash(
                    "line:N",
                    scale=alt.Scale(domain=names, range=[dashes[n] for n in names]),
                    title="line",
                ),
                tooltip=[alt.Tooltip("line:N"), alt.Tooltip("alpha:Q", format=".3f")],
            )
        )
    status_domain = list(POINT_STATUS[:2])
    tooltip = [
        alt.Tooltip("magnitude:Q", title="n"),
        alt.Tooltip("V:Q", title=label, format=".4g"),
        alt.Tooltip("status:N", title="in fit"),
    ]
    point_colour = alt.condition(
        alt.datum.status == POINT_STATUS[1], alt.value(style.OUTLIER_COLOR), alt.value(colour)
    )
    if counted:
        counts = sorted({int(count) for count in drawable["n_tokens"].dropna()})
        drawable = drawable.assign(tokens=[MISSING if pd.isna(c) else str(int(c)) for c in drawable["n_tokens"]])
        # One row of entries: stacked under the other legends, a column of them ran below the chart.
        point_colour = alt.Color("tokens:O", scale=style.color_scale([str(c) for c in counts], style.TOKEN_COLORS),
                                 sort=[str(c) for c in counts], title="tokens",
                                 legend=alt.Legend(columns=len(counts), symbolType="circle"))
        tooltip += [alt.Tooltip("tokens:O", title="tokens"), alt.Tooltip("kept_text:N", title="kept token")]
        notes.append(f"colour: the number's token count ({', '.join(map(str, counts))})")
    elif by_tokens:
        notes.append("no token counts recorded for these vectors: the points are not coloured by them")
    layers.append(
        alt.Chart(style.inline_data(drawable))
        .mark_point(size=70, filled=True, invalid=style.POINT_INVALID)
        .encode(
            x=x,
            y=y,
            shape=alt.Shape(
                "status:N",
                scale=alt.Scale(domain=status_domain, range=["circle", "cross"]),
                title="point",
            ),
            color=point_colour,
            tooltip=tooltip,
        )
    )
    if "outlier_vectors" in drawable and (drawable["outlier_vectors"] > 0).any():
        ringed = drawable[drawable["outlier_vectors"] > 0]
        notes.append(f"ringed: {len(ringed)} magnitude(s) holding vectors over {OUTLIER_NORM_FACTOR:g}x the "
                     "layer's median norm")
        layers.append(
            alt.Chart(style.inline_data(ringed.assign(flag="outlier vectors")))
            .mark_point(size=260, filled=False, strokeWidth=2, color=style.OUTLIER_COLOR, invalid=style.POINT_INVALID)
            .encode(x=x, y=y, tooltip=[alt.Tooltip("magnitude:Q", title="n"),
                                       alt.Tooltip("outlier_vectors:Q", title="outlier vectors")])
        )
    layer_name = str(points["label"].iloc[0]) if "label" in points and len(points) else ""
    text = title or f"{label} vs magnitude at {layer_name} (log-log)"
    return style.finish(
        style.layered(*layers).resolve_scale(fill="independent", color="independent" if counted else "shared"),
        style.chart_title(text, notes or None),
        width,
        height,
    )


def scaling_figure(
    result: AnalysisResult, measure: str, layer: int, vectors: np.ndarray | None = None, by_tokens: bool = False,
) -> alt.LayerChart:
    """Log-log V vs n at one layer with the OLS line, alpha = 1 and alpha = 0 references, and the
    carriers' own distances when the layer's ``vectors`` are given (measures whose V is their mean).

    Args:
        result: the model's analysis.
        measure: the measure shown (``eucl``, ``residual``, ``proj``, ...).
        layer: the layer shown.
        vectors: that layer's (n_magnitudes, n_carriers, d) vectors, to add each carrier's own distances; None leaves
            them out.
        by_tokens: colour the points by the number's token count (needs the analysis's token facts).
    """
    points = scaling_points(result, measure, layer)
    fit = result.fit(measure, layer)
    lines = scaling_lines(points, fit)
    carriers = None
    left_out = result.params.exclude_carriers
    if vectors is not None and measure in CARRIER_MEASURES:
        carriers = carrier_distances(vectors, result.magnitudes, result.carriers, measure, left_out)
    if fit.has_fit:
        ci = f", 95% CI [{fixed(fit.ci_low)}, {fixed(fit.ci_high)}]" if math.isfinite(fit.ci_low) else ""
        subtitle = f"alpha = {fixed(fit.alpha)}{ci}, R² = {fixed(fit.r2)}, {fit.n_points} points, {fit.n_outliers} outliers"
    else:
        subtitle = f"no fit at this layer: alpha = {MISSING} ({fit.n_points} usable points; V = 0 or fewer than 5)"
    if left_out:
        subtitle += f"; carrier(s) {', '.join(map(str, left_out))} left out"
    return scaling_scatter(points, lines, carriers=carriers, by_tokens=by_tokens, subtitle=subtitle, width="container")


# -- alpha by layer -----------------------------------------------------------------------


def fits_frame(result: AnalysisResult, *, model: str | None = None) -> pd.DataFrame:
    """The per-layer fit table: ``result.fits`` plus model, measure_label and gamma = l / L.

    Columns: model, measure, measure_label, layer, label, gamma, core, alpha, intercept, r2, p,
    se, alpha_theil_sen, ci_low, ci_high, n_points, n_outliers.
    """
    fits = result.fits.copy()
    fits.insert(0, "model", model if model is not None else result.model)
    fits.insert(2, "measure_label", fits["measure"].map(measure_title))
    fits.insert(5, "gamma", style.depth_fractions(fits["layer"], result.n_blocks))
    return fits


def models_fits_frame(results: Mapping[str, AnalysisResult]) -> pd.DataFrame:
    """:func:`fits_frame` of several models stacked (model = the mapping's key)."""
    if not results:
        raise AnalysisError("no analysed models to tabulate")
    return pd.concat(
        [fits_frame(result, model=name) for name, result in results.items()], ignore_index=True
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
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
) -> alt.LayerChart:
    """Alpha by layer with bootstrap CI bands, one colour per measure, core band shaded.

    ``fits`` is ``AnalysisResult.fits`` or :func:`fits_frame`: measure, layer,
    label, core, alpha, ci_low, ci_high (gamma too when ``x="gamma"``; r2, n_points, se are
    shown in the tooltip when present). ``measures`` picks and orders the measures (default:
    all in the frame). Layers without a CI (bootstrap off there) have no band; layers without
    a fit are gaps, shaded grey when no measure has one. ``window`` adds the Weber window band;
    ``show_zero`` the alpha = 0 line.
    """
    style.require_columns(fits, ["measure", "layer", "alpha", "ci_low", "ci_high", "core"], "alpha_profile")
    x_field, x_title = style.depth_field(x)
    frame = fits.copy()
    if measures is not None:
        frame = frame[frame["measure"].isin(list(measures))]
        order = [measure_title(m) for m in measures]
    else:
        order = [measure_title(m) for m in dict.fromkeys(frame["measure"])]
    frame["measure_label"] = frame["measure"].map(measure_title)
    if "label" not in frame:
        frame["label"] = frame["layer"].astype(str)
    color = alt.Color("measure_label:N", scale=style.color_scale(order, style.MEASURE_COLORS), title="measure")
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
    axis = style.DepthAxis.of(frame[x_field], x_field, x_title)
    layers = style.depth_backdrop(axis, frame, "alpha")
    if window is not None:
        layers.append(style.window_band(window))
    if show_zero:
        layers.append(style.zero_rule(0.0))
    columns = ["measure_label", "layer", "label", x_field, "alpha", "ci_low", "ci_high"]
    columns += [c for c in ("r2", "n_points") if c in frame]
    layers += style.profile_layers(
        frame.loc[:, list(dict.fromkeys(columns))],
        x=axis.encoding(),
        y_field="alpha",
        y_title=style.ALPHA_TITLE,
        color=color,
        tooltip=tooltip,
        band=("ci_low", "ci_high"),
        detail="measure_label",
    )
    notes = style.subtitle_lines(subtitle)
    if post_norm := style.beyond_depth(frame, x_field):
        layers += post_norm
        notes.append(style.POST_NORM_NOTE)
    text = title or "Scaling exponent alpha by layer (bands: bootstrap CI; grey: core layers)"
    return style.finish(style.layered(*layers), style.chart_title(text, notes or None), width, height)


def profile_measures(measure: str) -> list[str]:
    """The three primary measures, plus the chosen one when it is secondary."""
    return list(PRIMARY_MEASURES) + ([measure] if measure not in PRIMARY_MEASURES else [])


def profile_figure(result: AnalysisResult, measure: str = DEFAULT_MEASURE) -> alt.LayerChart:
    """Alpha by layer for the primary measures with bootstrap CI bands, core band shaded.

    Args:
        result: the model's analysis.
        measure: a measure added to the three primary ones when it is not one of them.
    """
    band = f"core layers {result.core_layers[0]}-{result.core_layers[-1]}" if result.core_layers else "no core band"
    subtitle = (
        f"{result.model} on {result.stimuli}; {band}; CIs ({result.params.n_boot:,} bootstrap resamples) on "
        f"{'the core layers' if result.params.bootstrap_layers == 'core' else 'every layer'}; "
        f"{result.params.rules.description}"
    )
    if result.params.exclude_carriers:
        subtitle += f"; carrier(s) {', '.join(map(str, result.params.exclude_carriers))} left out"
    return alpha_profile(
        fits_frame(result), measures=profile_measures(measure), subtitle=subtitle, width="container"
    )


def fit_table(result: AnalysisResult, measure: str | None = None) -> pd.DataFrame:
    """The per-layer fit table (one measure, or all)."""
    table = fits_frame(result)
    if measure is not None:
        table = table[table["measure"] == measure]
    return table.drop(columns=["measure"]).reset_index(drop=True)


def fit_summary(result: AnalysisResult, measure: str) -> str:
    """One sentence on the core-layer alphas of a measure (paper's Table 1 style), led by the mean's
    stimulus-bootstrap interval."""
    h = result.hypotheses[measure]
    return (
        f"Mean alpha of {measure_title(measure)} over the {len(h.core_layers)} core layers: "
        f"{stimulus_estimate(h.mean_alpha, h.mean_alpha_ci, h.mean_alpha_p, h.n_resamples, level=result.params.ci)} "
        f"({h.positive_layers}/{len(h.core_layers)} layers with alpha > 0)."
    )


# -- the massive-dimension control --------------------------------------------------------


def massive_alpha_frame(layers: pd.DataFrame, measure: str) -> pd.DataFrame:
    """Long form of :meth:`magdash.variability.massive_control.MassiveControl.layers` for one measure.

    Columns: view ("raw" or "massive dimensions dropped"), layer, label, core, alpha, ci_low,
    ci_high, n_massive.
    """
    rows = layers[layers["measure"] == measure]
    if rows.empty:
        raise AnalysisError(f"measure {measure!r} was not analysed; add it to measures")
    parts = []
    for suffix, view in (("raw", "raw"), ("dropped", "massive dimensions dropped")):
        part = rows.loc[:, ["layer", "label", "core", "n_massive"]].copy()
        part.insert(0, "view", view)
        part["alpha"] = rows[f"alpha_{suffix}"].to_numpy()
        part["ci_low"] = rows[f"ci_low_{suffix}"].to_numpy()
        part["ci_high"] = rows[f"ci_high_{suffix}"].to_numpy()
        parts.append(part)
    return pd.concat(parts, ignore_index=True)


MASSIVE_VIEW_COLORS = style.palette(("raw", "massive dimensions dropped"))


def massive_alpha_chart(
    frame: pd.DataFrame,
    *,
    colors: Mapping[str, str] = MASSIVE_VIEW_COLORS,
    title: str | None = None,
    subtitle: str | Sequence[str] | None = None,
    width: style.Width = style.DEFAULT_WIDTH,
    height: int = style.DEFAULT_HEIGHT,
    legend_title: str = "vectors",
) -> alt.LayerChart:
    """Alpha by layer of one measure, raw and with the massive dimensions dropped.

    ``frame`` (:func:`massive_alpha_frame`): view, layer, label,
    core, alpha, ci_low, ci_high, n_massive. Grey: core layers; bands: bootstrap CIs.
    ``legend_title`` names what the views are.
    """
    style.require_columns(frame, ["view", "layer", "alpha", "ci_low", "ci_high", "core"], "massive_alpha_chart")
    axis = style.DepthAxis.of(frame["layer"], "layer", style.LAYER_TITLE)
    views = list(dict.fromkeys(frame["view"].astype(str)))
    layers = style.depth_backdrop(axis, frame, "alpha")
    layers.append(style.zero_rule(0.0))
    columns = [c for c in ("view", "layer", "label", "alpha", "ci_low", "ci_high", "n_massive") if c in frame]
    layers += style.profile_layers(
        frame.loc[:, columns],
        x=axis.encoding(),
        y_field="alpha",
        y_title=style.ALPHA_TITLE,
        color=alt.Color("view:N", scale=style.color_scale(views, colors), title=legend_title,
                        legend=alt.Legend(labelLimit=260)),
        tooltip=[
            alt.Tooltip("view:N", title=legend_title),
            alt.Tooltip("layer:Q"),
            alt.Tooltip("alpha:Q", format=".4f"),
            alt.Tooltip("ci_low:Q", title="CI low", format=".4f"),
            alt.Tooltip("ci_high:Q", title="CI high", format=".4f"),
        ] + ([alt.Tooltip("n_massive:Q", title="massive dimensions")] if "n_massive" in frame else []),
        band=("ci_low", "ci_high"),
        detail="view",
    )
    text = title or "Alpha by layer, raw and without the massive-activation dimensions"
    return style.finish(style.layered(*layers), style.chart_title(text, subtitle), width, height)


def massive_control_figure(raw: AnalysisResult, dropped: AnalysisResult, measure: str = DEFAULT_MEASURE) -> alt.LayerChart:
    """Alpha by layer with the massive dimensions kept and dropped.

    Args:
        raw: the analysis of the raw vectors.
        dropped: the same analysis without each layer's massive dimensions.
        measure: the measure shown (``eucl``, ``residual``, ``proj``, ...).
    """
    control = MassiveControl(raw, dropped)
    return massive_alpha_chart(
        massive_alpha_frame(control.layers(), measure),
        subtitle=f"{raw.model}, {measure_title(measure)}; massive: mean |h_j| > "
                 f"{dropped.params.massive_ratio:g}x the median",
        width="container",
    )


def massive_control_table(raw: AnalysisResult, dropped: AnalysisResult) -> pd.DataFrame:
    """Mean core alpha of every measure, raw and dropped, and whether its sign holds."""
    return MassiveControl(raw, dropped).summary()


def massive_control_sentence(raw: AnalysisResult, dropped: AnalysisResult, measure: str) -> str:
    row = MassiveControl(raw, dropped).summary().set_index("measure").loc[measure]
    layers = sum(bool(dims) for dims in dropped.massive_dims.values())
    holds = {True: "keeps its sign", False: "changes sign", None: "has no fit"}[row["sign_holds"]]
    return (
        f"Without the massive dimensions (found in {layers} of {dropped.n_layers} layers), the mean core alpha "
        f"of {measure_title(measure)} goes from {fixed(row['mean_alpha_raw'], 3)} to "
        f"{fixed(row['mean_alpha_dropped'], 3)} and {holds}: a conclusion that survives the drop is not "
        "carried by a few coordinates."
    )
