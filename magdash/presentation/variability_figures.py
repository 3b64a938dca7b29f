"""The scalar-variability results as figures and tables (Cacioli 2026, arXiv 2604.04469): V
against n at one layer, alpha by layer, the Weber window, CV, the noise models, E3, E4, the
model comparisons, the massive-dimension control and the tokenization fits (alpha within
token-count strata and adjusted for tokenization, beside the raw alpha; V(n) coloured by token count).

Three kinds of function, in that order: frames (tidy DataFrames, one row per mark, built from the
result types), charts (Altair, drawn from frames with the vocabulary of
:mod:`magdash.presentation.chart_style`) and figures (a result in, a captioned chart or table out:
what a page shows and the report embeds). The few numbers only a figure needs are computed here:

- :func:`carrier_distances`: the per-carrier distances ``||x[n,c] - m[n]||`` whose mean over
  carriers is V_eucl(n), drawn as faint points under V;
- :func:`scaling_lines`: the end points of the OLS line and of the alpha = 1 and alpha = 0
  reference lines, all three through the geometric centre of the fitted points
  (mean log n, mean log V), which the OLS line passes through by construction;
- :func:`verdict_frame`: the programme verdict across the trained models shown, each ``@random``
  control beside its model and not counted
  (:func:`magdash.variability.hypotheses.programme_verdict`); :func:`noise_summary`: counts of
  the core layers each noise model wins.

Wherever a p-value is written, the stimulus bootstrap's estimate and interval come first
(:func:`magdash.significance.stimulus_estimate`), a test over core layers is named as one
(:func:`magdash.significance.layer_test_note`), and a test that cannot reach .05 with its points
says so (:func:`magdash.significance.unreachable_note`).

Every frame is a new DataFrame; NaN stays NaN (the charts decide how to show a gap).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import altair as alt
import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.formatting import MISSING, fixed, format_p, layer_span
from magdash.names import is_control_name, model_of_control
from magdash.norm_outliers import OUTLIER_NORM_FACTOR
from magdash.presentation import chart_style as style
from magdash.significance import layer_test_note, stimulus_estimate, unreachable_note
from magdash.variability.fits import ScalingFit, scaling_mask
from magdash.variability.hypotheses import HYPOTHESES, programme_verdict
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
    from magdash.variability.compare import ComparisonResult, ModelComparison


NOISE_MODEL_LABELS = {
    "constant": "constant (V = c)",
    "scalar": "scalar (V = k n)",
    "log_scalar": "log-scalar (V = k log n + c)",
    "power_law": "power law (V = k n^alpha)",
}


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
    vectors: np.ndarray, magnitudes: Sequence[float], carriers: Sequence[str], measure: str = DEFAULT_MEASURE,
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


def noise_frame(result: AnalysisResult) -> pd.DataFrame:
    """``result.noise_models`` plus label, core and model_label (readable noise-model names).

    Columns: measure, layer, label, core, model, model_label, formula, aicc, delta_aicc,
    weight, and the fitted parameters.
    """
    frame = result.noise_models.copy()
    frame.insert(2, "label", [result.layer_labels[layer] for layer in frame["layer"]])
    frame.insert(3, "core", frame["layer"].isin(result.core_layers))
    frame.insert(5, "model_label", frame["model"].map(lambda m: NOISE_MODEL_LABELS.get(m, m)))
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
    summary: dict[str, object] = {"model": f"programme (majority of {n_models} trained models)", "role": "programme"}
    for hypothesis in HYPOTHESES:
        row = programme.loc[hypothesis]
        verdict = "supported" if bool(row["supported"]) else "not supported"
        summary[hypothesis] = f"{verdict} ({int(row['supporting_models'])}/{n_models})"
    table = table.astype({h: object for h in HYPOTHESES})
    return pd.concat([table, pd.DataFrame([summary])], ignore_index=True)


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



AXIS_COLORS = {"on-axis": "#D55E00", "off-axis": "#56B4E9"}


CARRIER_POINTS = "per-carrier distance"


NOISE_ROW_HEIGHT = 32


NOISE_CHROME_HEIGHT = 110
"""Noise-model heatmap: pixels per row, and for the title, subtitle and layer axis."""


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
                                **({"legend": None} if counted else {})),
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
        alt.layer(*layers).resolve_scale(fill="independent", color="independent" if counted else "shared"),
        style.chart_title(text, notes or None),
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
    return style.finish(alt.layer(*layers), style.chart_title(text, notes or None), width, height)


MASSIVE_VIEW_COLORS = {"raw": "#0072B2", "massive dimensions dropped": "#D55E00"}


def massive_alpha_chart(
    frame: pd.DataFrame,
    *,
    colors: Mapping[str, str] = MASSIVE_VIEW_COLORS,
    title: str | None = None,
    subtitle: str | None = None,
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
    return style.finish(alt.layer(*layers), style.chart_title(text, subtitle), width, height)


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
    return style.finish(alt.layer(*layers), style.chart_title(text, notes or None), width, height)


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
    return style.finish(alt.layer(line, points), style.chart_title(text, subtitle), width, height)


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
    return style.finish(alt.layer(*layers), style.chart_title(text, subtitle), width, height)


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
    return style.finish(alt.layer(*layers), style.chart_title(text, subtitle), width, height)


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
        frame["model_label"] = frame["model"].map(lambda m: NOISE_MODEL_LABELS.get(m, m))
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
        .mark_point(filled=True, color="#000000", size=25, shape="circle")
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
    return style.finish(alt.layer(*layers), style.chart_title(text, subtitle), width, height)


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
    top = alt.layer(*top_layers).properties(
        width=width, height=height, title=style.chart_title(f"alpha of {measure} by {'layer' if x == 'layer' else 'depth'}")
    )
    bottom = alt.layer(*bottom_layers).properties(
        width=width,
        height=height,
        title=style.chart_title(f"difference {model_a} minus {model_b} (band: joint bootstrap CI)"),
    )
    text = title or f"{model_a} vs {model_b}: {measure}"
    notes = style.subtitle_lines(subtitle) + ([style.POST_NORM_NOTE] if style.beyond_depth(frame, x_field) else [])
    return alt.vconcat(top, bottom).properties(title=style.chart_title(text, notes or None))



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


def cv_figure(result: AnalysisResult) -> alt.LayerChart:
    """CV(n) at the core layers (Weber's law: flat).

    Args:
        result: the model's analysis.
    """
    trend = result.cv_trend.set_index("layer").loc[result.core_layers, "spearman"]
    subtitle = f"core layers; mean Spearman rho of CV with n: {fixed(float(np.nanmean(trend)) if trend.notna().any() else math.nan)}"
    return cv_chart(cv_frame(result, result.core_layers), subtitle=subtitle, width="container")


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


def e3_figure(result: AnalysisResult) -> alt.LayerChart:
    """E3: each measure's core alphas with and without the digit-count boundary magnitudes.

    Args:
        result: the model's analysis.
    """
    return e3_chart(e3_frame(result), width="container")


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


# -- tokenization ---------------------------------------------------------------------------


TOKEN_VIEWS = ("raw", "adjusted: token count", "adjusted: + kept token")
TOKEN_VIEW_COLORS = dict(zip(TOKEN_VIEWS, ("#0072B2", "#D55E00", "#009E73"), strict=True))


def tokenization_alpha_frame(result: AnalysisResult, measure: str) -> pd.DataFrame:
    """Alpha by layer of one measure, raw and adjusted for tokenization, in long form.

    Columns: view (one of :data:`TOKEN_VIEWS`), layer, label, core, alpha, ci_low, ci_high.
    Empty without token facts.
    """
    columns = ["view", "layer", "label", "core", "alpha", "ci_low", "ci_high"]
    rows = result.tokenization[result.tokenization["measure"] == measure]
    if rows.empty:
        return pd.DataFrame(columns=columns)
    parts = []
    for view, (alpha, low, high) in zip(TOKEN_VIEWS, (
        ("alpha_raw", None, None), ("alpha", "ci_low", "ci_high"),
        ("alpha_identity", "identity_ci_low", "identity_ci_high"),
    ), strict=True):
        part = rows.loc[:, ["layer", "label", "core"]].copy()
        part.insert(0, "view", view)
        part["alpha"] = rows[alpha].to_numpy(dtype=np.float64)
        if low is None:  # the raw fit's interval, from its own rows
            fits = result.fits[result.fits["measure"] == measure].set_index("layer")
            part["ci_low"] = fits["ci_low"].reindex(rows["layer"]).to_numpy(dtype=np.float64)
            part["ci_high"] = fits["ci_high"].reindex(rows["layer"]).to_numpy(dtype=np.float64)
        else:
            part["ci_low"] = rows[low].to_numpy(dtype=np.float64)
            part["ci_high"] = rows[high].to_numpy(dtype=np.float64)
        parts.append(part)
    return pd.concat(parts, ignore_index=True)[columns]


def tokenization_figure(result: AnalysisResult, measure: str = DEFAULT_MEASURE) -> alt.LayerChart:
    """Alpha by layer, raw and adjusted for tokenization (the token count; with the kept token too).

    Args:
        result: the model's analysis (without token facts the chart is empty and its subtitle says why).
        measure: the measure shown.
    """
    frame = tokenization_alpha_frame(result, measure)
    subtitle = f"{result.model} on {result.stimuli}, {measure_title(measure)}"
    if frame.empty:
        subtitle = [subtitle, f"no adjusted alpha: {result.tokenization_note}"]
    return massive_alpha_chart(
        frame, colors=TOKEN_VIEW_COLORS, title="Alpha by layer, raw and adjusted for tokenization",
        subtitle=subtitle, width="container", legend_title="alpha",
    )


def tokenization_table(result: AnalysisResult, measure: str) -> pd.DataFrame:
    """Per layer: the raw alpha beside the alphas adjusted for tokenization, their intervals and p,
    the token counts fitted and why an adjusted alpha is missing."""
    columns = ["layer", "label", "core", "alpha_raw", "alpha", "ci_low", "ci_high", "p", "n_strata", "steps",
               "alpha_identity", "identity_ci_low", "identity_ci_high", "reason", "identity_reason"]
    rows = result.tokenization[result.tokenization["measure"] == measure]
    table = rows.loc[:, columns].reset_index(drop=True)
    table["steps"] = [_steps_text(steps) for steps in table["steps"]]
    return table


def _steps_text(steps: str | Mapping[str, float]) -> str:
    """The steps gamma_k of the adjusted fit, by token count, as ``2 tokens +0.120; 3 tokens +0.305``."""
    found = json.loads(steps) if isinstance(steps, str) else dict(steps)
    return "; ".join(f"{count} tokens {value:+.3f}" for count, value in sorted(found.items(), key=lambda item: int(item[0])))


def strata_table(result: AnalysisResult, measure: str) -> pd.DataFrame:
    """Per token-count stratum, over the core layers: its magnitudes and the mean alpha within it,
    then the raw and the adjusted mean core alpha as the last two rows (empty without token facts)."""
    summary = result.tokenization_summary(measure)
    columns = ["stratum", "n_magnitudes", "magnitudes", "mean_alpha", "fitted_layers", "reason"]
    if not summary["recorded"]:
        return pd.DataFrame(columns=columns)
    rows = [{
        "stratum": f"{level['n_tokens']} token{'s' if level['n_tokens'] != 1 else ''}",
        "n_magnitudes": level["n_magnitudes"],
        "magnitudes": f"{level['smallest']:g}" if level["smallest"] == level["largest"]
        else f"{level['smallest']:g}-{level['largest']:g}",
        "mean_alpha": level["mean_alpha"], "fitted_layers": level["n_fitted"], "reason": level["reason"],
    } for level in summary["strata"]]
    n_all = len(result.magnitudes)
    span = f"{result.magnitudes.min():g}-{result.magnitudes.max():g}"
    rows += [
        {"stratum": "all (raw alpha)", "n_magnitudes": n_all, "magnitudes": span,
         "mean_alpha": summary["mean_alpha_raw"], "fitted_layers": summary["n_raw"], "reason": ""},
        {"stratum": "all (adjusted for the token count)", "n_magnitudes": n_all, "magnitudes": span,
         "mean_alpha": summary["mean_alpha_adjusted"], "fitted_layers": summary["n_adjusted"],
         "reason": summary["reason"]},
    ]
    return pd.DataFrame(rows, columns=columns)


def has_token_facts(result: AnalysisResult) -> bool:
    """Whether the analysis had its vectors' token facts (the tokenization figures have something to draw)."""
    return result.has_tokenization


def token_facts_table(result: AnalysisResult) -> pd.DataFrame:
    """Per magnitude: its token count, kept token (id and text), length and whether every carrier
    tokenized it alike."""
    return result.tokens.reset_index(drop=True)


def tokenization_sentence(result: AnalysisResult, measure: str) -> str:
    """One sentence: the raw and the adjusted mean core alpha, or why there is no adjusted alpha."""
    summary = result.tokenization_summary(measure)
    splitting = f"The tokenizer {result.digit_splitting}. " if result.digit_splitting else ""
    if not summary["recorded"]:
        return f"{splitting}No alpha adjusted for tokenization: {result.tokenization_note}."
    counts = ", ".join(str(level["n_tokens"]) for level in summary["strata"])
    raw = fixed(summary["mean_alpha_raw"], 4)
    if len(summary["strata"]) == 1:
        count = summary["strata"][0]["n_tokens"]
        return (f"{splitting}Every magnitude here is written as {count} token{'s' if count != 1 else ''}, so the "
                f"alpha adjusted for the token count is the raw one: mean core alpha of {measure_title(measure)} {raw}.")
    if not summary["n_adjusted"]:
        return (f"{splitting}Token counts {counts}; no adjusted alpha of {measure_title(measure)} at the core "
                f"layers: {summary['reason']}.")
    return (
        f"{splitting}Mean core alpha of {measure_title(measure)}: raw {raw}, adjusted for the token count "
        f"(strata of {counts} tokens) {fixed(summary['mean_alpha_adjusted'], 4)} over {summary['n_adjusted']} core "
        "layers; what separates them is what the steps at the digit-count boundaries add to the raw exponent."
    )
