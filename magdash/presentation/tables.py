"""Tidy DataFrames for charts, tables and the report, built from analysis results.

The analysis modules return dataclasses and wide arrays; the charts (:mod:`magdash.presentation.charts`)
draw long ("tidy") DataFrames with one row per mark. The functions here reshape one into the
other and add what a reader needs next to a number (a layer's label, its depth fraction
gamma = l / L, whether it is a core layer). The numbers a figure shows come from the analysis,
with these exceptions, computed here because only a figure or a table needs them:

- :func:`carrier_distances`: the per-carrier distances ``||x[n,c] - m[n]||`` whose mean over
  carriers is V_eucl(n) (Cacioli, arXiv 2604.04469), drawn as faint points under V;
- :func:`scaling_lines`: the end points of the OLS line and of the alpha = 1 and alpha = 0
  reference lines, all three through the geometric centre of the fitted points
  (mean log n, mean log V), which the OLS line passes through by construction;
- :func:`verdict_table`: the programme verdict across the models shown
  (:func:`magdash.variability.hypotheses.programme_verdict`); :func:`noise_summary`: counts of
  the core layers each noise model wins;
- :func:`order_parameter_frame`: the normal-approximation band of each layer's mean Omega;
- :func:`omega_histogram_frame` and :func:`spectrum_frames`: histogram densities, and the
  fitted Marchenko-Pastur density evaluated on a grid; :func:`rank_frame`: the isotropic
  baseline's expected effective rank and participation ratio;
- :func:`rdm_blocks`: block means of an RDM too large to draw cell by cell.

Every function returns a new DataFrame; NaN stays NaN (the charts decide how to show a gap).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.variability.fits import OUTLIER_RULE_MEASURES, ScalingFit, scaling_mask
from magdash.variability.hypotheses import HYPOTHESES, programme_verdict

if TYPE_CHECKING:
    from magdash.controls.design import DesignResult
    from magdash.controls.robustness import ControlsResult
    from magdash.phase import PhaseResult
    from magdash.phase.omega import OmegaSummary
    from magdash.phase.spectrum import SpectrumFit
    from magdash.store import LayerData
    from magdash.variability.analysis import AnalysisResult
    from magdash.variability.compare import ComparisonResult
    from magdash.variability.geometry import Pc1Coordinates

MEASURE_LABELS = {
    "eucl": "V_eucl",
    "residual": "V_residual",
    "proj": "V_proj",
    "pairwise": "V_pairwise",
    "trace": "V_trace",
    "cv": "CV",
    "on_axis": "on-axis variance",
    "off_axis": "off-axis variance",
}
"""Display names of the measures (the paper's notation)."""

NOISE_MODEL_LABELS = {
    "constant": "constant (V = c)",
    "scalar": "scalar (V = k n)",
    "log_scalar": "log-scalar (V = k log n + c)",
    "power_law": "power law (V = k n^alpha)",
}

POINT_STATUS = ("fitted", "outlier (> 3x median)", "V <= 0", "no value")
"""Why a magnitude did or did not enter a scaling fit (column ``status`` of scaling points)."""

CARRIER_MEASURES = ("eucl", "residual")
"""Measures whose per-carrier distances average to V (:func:`carrier_distances`)."""


def measure_label(measure: str) -> str:
    return MEASURE_LABELS.get(measure, measure)


def _gamma(layers: pd.Series | np.ndarray, n_blocks: int) -> np.ndarray:
    return np.asarray(layers, dtype=np.float64) / float(n_blocks)


# -- scaling (one layer) -----------------------------------------------------------------


def scaling_points(result: AnalysisResult, measure: str, layer: int) -> pd.DataFrame:
    """V(n) of one layer and measure, with whether each point entered the fit.

    Columns: magnitude, V, status (one of :data:`POINT_STATUS`), measure, layer, label, and
    outlier_vectors: how many of the magnitude's vectors at this layer have an outsized norm
    (:mod:`magdash.variability.artifacts`). The status follows the analysis's point rules
    (:func:`magdash.variability.fits.scaling_mask`).
    """
    if measure not in result.values:
        raise AnalysisError(f"measure {measure!r} was not analysed; add it to the measures")
    if not 0 <= layer < result.n_layers:
        raise AnalysisError(f"layer {layer} does not exist: this model has 0..{result.n_layers - 1}")
    values = np.asarray(result.values[measure][layer], dtype=np.float64)
    magnitudes = np.asarray(result.magnitudes, dtype=np.float64)
    drop = measure in OUTLIER_RULE_MEASURES
    usable, _ = scaling_mask(
        magnitudes, values, drop_outliers=False, outlier_factor=result.params.outlier_factor
    )
    kept, _ = scaling_mask(
        magnitudes, values, drop_outliers=drop, outlier_factor=result.params.outlier_factor
    )
    status = np.where(
        ~np.isfinite(values),
        POINT_STATUS[3],
        np.where(~usable, POINT_STATUS[2], np.where(kept, POINT_STATUS[0], POINT_STATUS[1])),
    )
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


def carrier_distances(layer_data: LayerData, measure: str = "eucl", left_out: Sequence[int] = ()) -> pd.DataFrame:
    """Per-carrier distance to the magnitude's centroid, ``||x[n,c] - m[n]||``.

    Their mean over carriers is V_eucl(n) (``measure="eucl"``) or, after removing each
    carrier's sentence offset s[c] = mean_n x[n,c] - grand mean, V_residual(n)
    (``measure="residual"``). Carriers in ``left_out`` (an analysis's ``exclude_carriers``)
    take no part, as in the analysis. Columns: magnitude, carrier_index (in the stimulus set),
    carrier, distance.
    """
    if measure not in CARRIER_MEASURES:
        raise AnalysisError(
            f"per-carrier distances exist for the eucl and residual measures, not {measure!r}"
        )
    kept = [c for c in range(len(layer_data.carriers)) if c not in set(left_out)]
    vectors = np.asarray(layer_data.vectors, dtype=np.float64)[:, kept]
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
            "magnitude": np.repeat(np.asarray(layer_data.magnitudes, dtype=np.float64), n_carriers),
            "carrier_index": np.tile(np.asarray(kept), n_magnitudes),
            "carrier": np.tile(np.asarray(layer_data.carriers, dtype=object)[kept], n_magnitudes),
            "distance": distances.ravel(),
        }
    )


# -- per-layer profiles ------------------------------------------------------------------


def fit_table(result: AnalysisResult, *, model: str | None = None) -> pd.DataFrame:
    """The per-layer fit table: ``result.fits`` plus model, measure_label and gamma = l / L.

    Columns: model, measure, measure_label, layer, label, gamma, core, alpha, intercept, r2, p,
    se, alpha_theil_sen, ci_low, ci_high, n_points, n_outliers.
    """
    fits = result.fits.copy()
    fits.insert(0, "model", model if model is not None else result.model)
    fits.insert(2, "measure_label", fits["measure"].map(measure_label))
    fits.insert(5, "gamma", _gamma(fits["layer"], result.n_blocks))
    return fits


def models_fit_table(results: Mapping[str, AnalysisResult]) -> pd.DataFrame:
    """:func:`fit_table` of several models stacked (model = the mapping's key)."""
    if not results:
        raise AnalysisError("no analysed models to tabulate")
    return pd.concat(
        [fit_table(result, model=name) for name, result in results.items()], ignore_index=True
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
    """E4 per model. Columns: model, mean_alpha_on, mean_alpha_off, ratio, wilcoxon_statistic,
    wilcoxon_p, n_pairs."""
    rows = [
        {
            "model": name,
            "mean_alpha_on": r.e4.mean_alpha_on,
            "mean_alpha_off": r.e4.mean_alpha_off,
            "ratio": r.e4.ratio,
            "wilcoxon_statistic": r.e4.wilcoxon_statistic,
            "wilcoxon_p": r.e4.wilcoxon_p,
            "n_pairs": r.e4.n_pairs,
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
                        "measure_label": measure_label(measure),
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
            "measure": measure_label(measure),
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


def noise_summary(results: Mapping[str, AnalysisResult], measure: str = "eucl") -> pd.DataFrame:
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


# -- hypotheses --------------------------------------------------------------------------


def layer_span(layers: Sequence[int]) -> str:
    """Layers as "3..5" when consecutive, else "3, 5, 6" ("none" when empty)."""
    layers = list(layers)
    if not layers:
        return "none"
    if layers == list(range(layers[0], layers[-1] + 1)):
        return f"{layers[0]}..{layers[-1]}"
    return ", ".join(map(str, layers))


def verdict_table(results: Mapping[str, AnalysisResult], measure: str = "eucl") -> pd.DataFrame:
    """H1–H4 for each model and, last, the programme verdict (a majority of models).

    Columns: model, mean_alpha, positive_layers, in_window_layers, below_one_layers,
    core_layers, H1, H2, H3, H4 (booleans), h1_p, h2_p, h4_rho, h4_p, h4_layers (the layers the
    H4 correlation ran over: the fitted core layers, or every layer in the paper's conventions,
    as "first..last"). The programme row has
    model "programme (majority of N models)", the hypothesis columns as "k/N" support strings
    and the per-model numbers empty.
    """
    if not results:
        raise AnalysisError("a verdict table needs at least one analysed model")
    rows = []
    per_model = {}
    for name, result in results.items():
        if measure not in result.hypotheses:
            raise AnalysisError(f"measure {measure!r} was not analysed for model {name!r}")
        h = result.hypotheses[measure]
        per_model[name] = h
        rows.append(
            {
                "model": name,
                "mean_alpha": h.mean_alpha,
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
            }
        )
    table = pd.DataFrame(rows)
    programme = programme_verdict(per_model).set_index("hypothesis")
    n_models = len(results)
    summary: dict[str, object] = {"model": f"programme (majority of {n_models} models)"}
    for hypothesis in HYPOTHESES:
        row = programme.loc[hypothesis]
        verdict = "supported" if bool(row["supported"]) else "not supported"
        summary[hypothesis] = f"{verdict} ({int(row['supporting_models'])}/{n_models})"
    table = table.astype({h: object for h in HYPOTHESES})
    return pd.concat([table, pd.DataFrame([summary])], ignore_index=True)


# -- comparisons -------------------------------------------------------------------------


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
    """Per measure: mean core alphas of A and B, mean delta and the Wilcoxon test.

    Columns: model_a, model_b, measure, mean_alpha_a, mean_alpha_b, mean_delta,
    wilcoxon_statistic, wilcoxon_p, n_pairs.
    """
    rows = [
        {
            "model_a": comparison.model_a,
            "model_b": comparison.model_b,
            "measure": measure_label(name),
            **item.summary(),
        }
        for name, item in comparison.measures.items()
    ]
    return pd.DataFrame(rows)


# -- geometry ----------------------------------------------------------------------------

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


def rdm_frame(rdm: np.ndarray, magnitudes: Sequence[float]) -> pd.DataFrame:
    """A square RDM as long rows. Columns: a, b (magnitudes), dissimilarity."""
    rdm = np.asarray(rdm, dtype=np.float64)
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    if rdm.shape != (magnitudes.size, magnitudes.size):
        raise AnalysisError(f"RDM of shape {rdm.shape} does not match {magnitudes.size} magnitudes")
    a, b = np.meshgrid(magnitudes, magnitudes, indexing="ij")
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
        .groupby(["a", "b"], as_index=False)["dissimilarity"].mean()
    )
    return binned, block


def pc1_frame(coordinates: Pc1Coordinates, magnitudes: Sequence[float]) -> pd.DataFrame:
    """Centroid PC1 coordinate per magnitude. Columns: magnitude, pc1."""
    return pd.DataFrame(
        {
            "magnitude": np.asarray(magnitudes, dtype=np.float64),
            "pc1": np.asarray(coordinates.coordinates, dtype=np.float64),
        }
    )


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


# -- depth (phase diagnostics) ------------------------------------------------------------


def omega_histogram_frame(
    summaries: Sequence[OmegaSummary],
    layers: Sequence[int],
    gammas: Sequence[float],
    *,
    edges: np.ndarray | None = None,
    merge: int = 1,
) -> pd.DataFrame:
    """Omega histograms of several layers, long, without the empty bins.

    ``gammas`` are the layers' depth fractions (NaN for a post-norm extra layer). ``edges``
    default :data:`magdash.phase.omega.OMEGA_HISTOGRAM_EDGES`. ``merge`` > 1 adds that many
    neighbouring bins together (fewer rows to draw for deep models). Columns: layer, gamma,
    omega_low, omega_high, count, fraction (count / the layer's total).
    """
    if edges is None:
        from magdash.phase.omega import OMEGA_HISTOGRAM_EDGES

        edges = OMEGA_HISTOGRAM_EDGES
    edges = np.asarray(edges, dtype=np.float64)
    if not len(summaries) == len(layers) == len(gammas):
        raise AnalysisError(
            f"{len(summaries)} Omega summaries for {len(layers)} layers and {len(gammas)} depths"
        )
    merge = max(1, int(merge))
    low_edges = edges[:-1][::merge]
    high_edges = np.append(low_edges[1:], edges[-1])
    frames = []
    for summary, layer, gamma in zip(summaries, layers, gammas, strict=True):
        counts = np.asarray(summary.histogram, dtype=np.int64)
        if counts.size != edges.size - 1:
            raise AnalysisError("Omega histogram counts do not match the bin edges")
        merged = np.add.reduceat(counts, np.arange(0, counts.size, merge))
        total = merged.sum()
        frame = pd.DataFrame(
            {
                "layer": int(layer),
                "gamma": float(gamma),
                "omega_low": low_edges,
                "omega_high": high_edges,
                "count": merged,
                "fraction": merged / total if total else np.zeros(merged.size),
            }
        )
        frames.append(frame[frame["count"] > 0])
    return pd.concat(frames, ignore_index=True)


def phase_omega_histogram(result: PhaseResult, *, merge: int = 1) -> pd.DataFrame:
    """:func:`omega_histogram_frame` of every layer of a :class:`magdash.phase.PhaseResult`."""
    return omega_histogram_frame(
        [item.omega for item in result.layers],
        [item.layer for item in result.layers],
        [item.gamma for item in result.layers],
        merge=merge,
    )


def order_parameter_frame(results: Mapping[str, PhaseResult], *, ci: float = 0.95) -> pd.DataFrame:
    """m(gamma) = mean Omega per layer of each series (e.g. "trained", "random control").

    The band is the normal-approximation interval of a mean, m +- z SD / sqrt(N) over the
    layer's N vectors (N is in the thousands, so the approximation is sound); the interval
    of gamma_c itself is the bootstrap one in ``PhaseResult.order``. Layers without a depth
    fraction (the post-norm extra layer) are left out. Columns: series, layer, gamma, m,
    ci_low, ci_high, n.
    """
    from scipy import stats

    from magdash.phase.massive_dims import MASSIVE_LABELS

    z = float(stats.norm.ppf(0.5 + ci / 2.0))
    rows = []
    for series, result in results.items():
        for item in result.layers:
            if not math.isfinite(item.gamma):
                continue
            summary = item.omega
            half = z * summary.std / math.sqrt(summary.n) if summary.n > 1 else math.nan
            rows.append(
                {
                    "series": series,
                    "view": MASSIVE_LABELS[result.params.massive],
                    "layer": item.layer,
                    "gamma": item.gamma,
                    "m": summary.mean,
                    "ci_low": summary.mean - half,
                    "ci_high": summary.mean + half,
                    "n": summary.n,
                }
            )
    return pd.DataFrame(rows, columns=["series", "view", "layer", "gamma", "m", "ci_low", "ci_high", "n"])


def jumps_frame(results: Mapping[str, PhaseResult]) -> pd.DataFrame:
    """The largest steps of m(gamma) of each series, largest first.

    Columns: series, view, rank, gamma (depth after the step), change, ci_low, ci_high (its
    bootstrap interval), p_largest (share of resamples in which it is the largest step).
    """
    from magdash.phase.massive_dims import MASSIVE_LABELS

    rows = [
        {"series": series, "view": MASSIVE_LABELS[result.params.massive], "rank": rank, "gamma": jump.gamma,
         "change": jump.change, "ci_low": jump.low, "ci_high": jump.high, "p_largest": jump.p_largest}
        for series, result in results.items()
        for rank, jump in enumerate(result.jumps, start=1)
    ]
    return pd.DataFrame(rows, columns=["series", "view", "rank", "gamma", "change", "ci_low", "ci_high", "p_largest"])


ISOTROPIC_SERIES = "isotropic Gaussian"


def rank_frame(results: Mapping[str, PhaseResult], *, baseline: bool = True) -> pd.DataFrame:
    """Effective rank and participation ratio per layer of each series.

    With ``baseline``, rows of series :data:`ISOTROPIC_SERIES` give the Marchenko–Pastur
    expectations for isotropic Gaussian vectors of the first result's d and N per layer
    (:func:`magdash.phase.spectrum.isotropic_spectrum_baseline`). Post-norm layers (no depth
    fraction) are left out. Columns: series, layer, gamma, effective_rank, participation_ratio.
    """
    from magdash.phase.spectrum import isotropic_spectrum_baseline

    rows = []
    for series, result in results.items():
        for item in result.layers:
            if math.isfinite(item.gamma):
                rows.append(
                    {
                        "series": series,
                        "layer": item.layer,
                        "gamma": item.gamma,
                        "effective_rank": item.spectrum.effective_rank,
                        "participation_ratio": item.spectrum.participation_ratio,
                    }
                )
    if baseline and results:
        for item in next(iter(results.values())).layers:
            if math.isfinite(item.gamma):
                expected = isotropic_spectrum_baseline(item.dim, item.count)
                rows.append(
                    {
                        "series": ISOTROPIC_SERIES,
                        "layer": item.layer,
                        "gamma": item.gamma,
                        "effective_rank": expected["effective_rank"],
                        "participation_ratio": expected["participation_ratio"],
                    }
                )
    columns = ["series", "layer", "gamma", "effective_rank", "participation_ratio"]
    return pd.DataFrame(rows, columns=columns)


def phase_spectrum_frames(
    result: PhaseResult, layer: int, *, bins: int = 60, log_bins: bool = True
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """:func:`spectrum_frames` of one layer of a :class:`magdash.phase.PhaseResult`."""
    return spectrum_frames(
        result.sample(layer).eigenvalues,
        result.diagnostics(layer).spectrum,
        bins=bins,
        log_bins=log_bins,
    )


def spectrum_frames(
    eigenvalues: np.ndarray, fit: SpectrumFit, *, bins: int = 60, log_bins: bool = True
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Histogram, fitted Marchenko–Pastur density and spikes of one layer's spectrum.

    The histogram is a density over all non-zero eigenvalues (count / (rank x bin width)), the
    scale of the MP density, which integrates to 1 over the non-zero eigenvalues; bins are
    log-spaced by default because spikes lie far above the bulk. Returns

    - histogram: low, high, count, density
    - mp: eigenvalue, density (the fitted MP law with sigma^2 = fit.sigma2, q = fit.q)
    - spikes: rank (1 = largest), eigenvalue (the fit's n_spikes largest; none where the fit
      did not converge: a capped count marks no spikes)
    """
    from magdash.phase.spectrum import marchenko_pastur_density, marchenko_pastur_edges

    lam = np.asarray(eigenvalues, dtype=np.float64)
    lam = np.sort(lam[np.isfinite(lam) & (lam > 0)])[::-1]
    if lam.size == 0:
        raise AnalysisError("the spectrum has no positive eigenvalues to draw")
    low, high = float(lam.min()), float(lam.max())
    if log_bins and high > low:
        edges = np.geomspace(low, high, bins + 1)
    else:
        edges = np.linspace(low, high if high > low else low + 1.0, bins + 1)
    counts, edges = np.histogram(lam, bins=edges)
    widths = np.diff(edges)
    histogram = pd.DataFrame(
        {
            "low": edges[:-1],
            "high": edges[1:],
            "count": counts,
            "density": counts / (lam.size * widths),
        }
    )
    histogram = histogram[histogram["count"] > 0].reset_index(drop=True)
    mp = pd.DataFrame(columns=["eigenvalue", "density"])
    if math.isfinite(fit.sigma2) and math.isfinite(fit.q):
        lower, upper = marchenko_pastur_edges(fit.q, fit.sigma2)
        # Geometric spacing keeps the curve smooth near the lower edge on a log axis too.
        grid = np.geomspace(max(lower, 1e-6 * upper), upper, 400)[1:-1]
        mp = pd.DataFrame(
            {"eigenvalue": grid, "density": marchenko_pastur_density(grid, fit.q, fit.sigma2)}
        )
    n_spikes = fit.n_spikes if fit.converged else 0
    spikes = pd.DataFrame({"rank": np.arange(1, n_spikes + 1), "eigenvalue": lam[:n_spikes]})
    return histogram, mp, spikes


# -- robustness controls and study design ------------------------------------------------

VERDICT_STATUS = {True: "problem", False: "ok", None: "not judged"}


def controls_verdicts(result: ControlsResult, measure: str) -> pd.DataFrame:
    """One row per control: control, status (problem / ok / not judged), verdict line."""
    return pd.DataFrame(
        [{"control": v.control, "status": VERDICT_STATUS[v.problem], "verdict": v.line} for v in result.verdicts(measure)],
        columns=["control", "status", "verdict"],
    )


def loo_frame(result: ControlsResult, measure: str) -> pd.DataFrame:
    """Leave-one-carrier-out alphas of one measure, long: layer, label, core, carrier (index),
    without (the dropped carrier, e.g. "without 0: There are {n} items."), alpha_loo, alpha_full."""
    frame = result.tables.loo[result.tables.loo["measure"] == measure].copy()
    sentences = result.tables.carriers
    frame["without"] = [f"without {int(c)}: {sentences[int(c)]}" for c in frame["carrier"]]
    return frame.drop(columns=["measure"]).reset_index(drop=True)


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


def variant_frame(result: ControlsResult, measure: str) -> pd.DataFrame:
    """One row per compared variant (and the @random control) with its core-band summary."""
    import dataclasses

    summaries = list(result.variant_summaries(measure))
    if (random := result.random_summary(measure)) is not None:
        summaries.append(random)
    columns = [
        "variant", "kind", "measure", "mean_alpha_model", "mean_alpha_variant", "max_abs_delta", "layer_of_max",
        "ci_low_at_max", "ci_high_at_max", "layers_ci_excludes_zero", "layers_with_ci", "n_core", "wilcoxon_p",
    ]
    return pd.DataFrame([dataclasses.asdict(s) for s in summaries], columns=columns)


H1_SERIES = {"power": "t-test", "power_size_adjusted": "t-test, size-adjusted", "majority": "majority of layers > 0"}
E6_SERIES = {
    "wilcoxon": "Wilcoxon", "wilcoxon_size_adjusted": "Wilcoxon, size-adjusted",
    "bootstrap_layers": "joint bootstrap: share of layers", "bootstrap_majority": "joint bootstrap: majority of layers",
}
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


def e6_power_frame(result: DesignResult) -> pd.DataFrame:
    """The E6 power curves, long: delta, series, rate, low, high."""
    return _power_long(result.e6, "delta", E6_SERIES)


def ci_width_frame(result: DesignResult) -> pd.DataFrame:
    """CI half-width of alpha as carriers or magnitudes grow: factor, value, half_width, low, high."""
    frame = result.ci_width[result.ci_width["factor"] != "design"]
    return frame.rename(columns={"half_width_low": "low", "half_width_high": "high"}).reset_index(drop=True)
