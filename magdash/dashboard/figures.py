"""The dashboard's figures and tables, built from analysis results with charts and tables.

Each builder takes results (:class:`~magdash.variability.analysis.AnalysisResult`,
:class:`~magdash.variability.analysis.ComparisonResult`, :class:`~magdash.store.LayerData`, frequency
sources) and returns an Altair chart or a DataFrame, with the short explanatory subtitle the
page shows (the numbers a reader needs to read the figure). Data shaping is
:mod:`magdash.presentation.tables`, drawing :mod:`magdash.presentation.charts`; the few computations here are the ones a
single figure needs from one layer's vectors (centroid RDM, PC1 coordinates; Cacioli, arXiv
2603.20642) or from a frequency source (E5 over all layers; Cacioli, arXiv 2604.04469).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

import altair as alt
import numpy as np
import pandas as pd

from magdash.dashboard.keys import AnalysisKey, ComparisonKey, PhaseKey, adjusted_phase_keys
from magdash.errors import MagdashError
from magdash.formatting import MISSING, format_number, format_p
from magdash.frequency import (
    counts_for_magnitudes,
    distribution_plot_data,
    e5_summary,
    fit_distributions,
)
from magdash.frequency.sources import FrequencySource
from magdash.phase import PhaseResult, Transition, layer_frame
from magdash.phase.diagnostics import depth_fraction
from magdash.phase.massive_dims import MASSIVE_LABELS
from magdash.phase.omega import isotropic_omega_mean
from magdash.presentation import charts, report, tables
from magdash.presentation.tables import CARRIER_MEASURES
from magdash.store import LayerData, Store
from magdash.variability.analysis import PRIMARY_MEASURES, AnalysisResult
from magdash.variability.compare import ComparisonResult
from magdash.variability.conventions import MAGDASH
from magdash.variability.geometry import centroid_rdm, pc1_coordinates
from magdash.variability.massive_control import MassiveControl
from magdash.variability.measures import centroids


def fmt(value: float, digits: int = 3) -> str:
    """A number for a sentence (:data:`~magdash.formatting.MISSING` when there is none)."""
    return format_number(value, f".{digits}f")


# -- scaling -----------------------------------------------------------------------------


def scaling_figure(result: AnalysisResult, measure: str, layer: int, layer_data: LayerData | None = None) -> alt.LayerChart:
    """Log-log V vs n at one layer with the OLS line, alpha = 1 and alpha = 0 references."""
    points = tables.scaling_points(result, measure, layer)
    fit = result.fit(measure, layer)
    lines = tables.scaling_lines(points, fit)
    carriers = None
    left_out = result.params.exclude_carriers
    if layer_data is not None and measure in CARRIER_MEASURES:
        carriers = tables.carrier_distances(layer_data, measure, left_out)
    if fit.has_fit:
        ci = f", 95% CI [{fmt(fit.ci_low)}, {fmt(fit.ci_high)}]" if math.isfinite(fit.ci_low) else ""
        subtitle = f"alpha = {fmt(fit.alpha)}{ci}, R² = {fmt(fit.r2)}, {fit.n_points} points, {fit.n_outliers} outliers"
    else:
        subtitle = f"no fit at this layer: alpha = {MISSING} ({fit.n_points} usable points; V = 0 or fewer than 5)"
    if left_out:
        subtitle += f"; carrier(s) {', '.join(map(str, left_out))} left out"
    return charts.scaling_scatter(points, lines, carriers=carriers, subtitle=subtitle, width="container")


def profile_measures(measure: str) -> list[str]:
    """The three primary measures, plus the chosen one when it is secondary."""
    return list(PRIMARY_MEASURES) + ([measure] if measure not in PRIMARY_MEASURES else [])


def profile_figure(result: AnalysisResult, measure: str = "eucl") -> alt.LayerChart:
    """Alpha by layer for the primary measures with bootstrap CI bands, core band shaded."""
    band = f"core layers {result.core_layers[0]}-{result.core_layers[-1]}" if result.core_layers else "no core band"
    subtitle = (
        f"{result.model} on {result.stimuli}; {band}; CIs ({result.params.n_boot:,} bootstrap resamples) on "
        f"{'the core layers' if result.params.bootstrap_layers == 'core' else 'every layer'}; "
        f"{result.params.rules.description}"
    )
    if result.params.exclude_carriers:
        subtitle += f"; carrier(s) {', '.join(map(str, result.params.exclude_carriers))} left out"
    return charts.alpha_profile(
        tables.fit_table(result), measures=profile_measures(measure), subtitle=subtitle, width="container"
    )


def fit_table(result: AnalysisResult, measure: str | None = None) -> pd.DataFrame:
    """The per-layer fit table (one measure, or all)."""
    table = tables.fit_table(result)
    if measure is not None:
        table = table[table["measure"] == measure]
    return table.drop(columns=["measure"]).reset_index(drop=True)


def fit_summary(result: AnalysisResult, measure: str) -> str:
    """One sentence on the core-layer alphas of a measure (paper's Table 1 style)."""
    h = result.hypotheses[measure]
    return (
        f"Mean alpha of {tables.measure_label(measure)} over the {len(h.core_layers)} core layers: "
        f"{fmt(h.mean_alpha, 4)} ({h.positive_layers}/{len(h.core_layers)} layers with alpha > 0)."
    )


# -- Weber -------------------------------------------------------------------------------


def weber_figure(results: Mapping[str, AnalysisResult], measure: str, x: str = "layer") -> alt.LayerChart:
    """Alpha per layer of every model against the Weber window of the analysis."""
    first = next(iter(results.values()))
    return charts.weber_window(
        tables.models_fit_table(results), first.params.window, measure=measure, x=x, width="container"
    )


def cv_figure(result: AnalysisResult) -> alt.LayerChart:
    """CV(n) at the core layers (Weber's law: flat)."""
    trend = result.cv_trend.set_index("layer").loc[result.core_layers, "spearman"]
    subtitle = f"core layers; mean Spearman rho of CV with n: {fmt(float(np.nanmean(trend)) if trend.notna().any() else math.nan)}"
    return charts.cv_chart(tables.cv_frame(result, result.core_layers), subtitle=subtitle, width="container")


def verdict_table(results: Mapping[str, AnalysisResult], measure: str) -> pd.DataFrame:
    """H1-H4 per model and the programme verdict; booleans read as supported / not supported."""
    table = tables.verdict_table(results, measure)
    hypotheses = ["H1", "H2", "H3", "H4"]
    for hypothesis in hypotheses:
        table[hypothesis] = table[hypothesis].map(
            lambda v: "supported" if v is True else "not supported" if v is False else v
        )
    # The verdicts first: the numbers behind them follow.
    return table[["model", *hypotheses, *[c for c in table.columns if c not in ("model", *hypotheses)]]]


def noise_figure(result: AnalysisResult, measure: str) -> alt.LayerChart:
    return charts.noise_model_chart(tables.noise_frame(result), measure=measure, width="container")


def noise_table(result: AnalysisResult, measure: str) -> pd.DataFrame:
    """AICc of the four noise models at every core layer of one measure."""
    frame = tables.noise_frame(result)
    frame = frame[(frame["measure"] == measure) & frame["core"]]
    return frame.drop(columns=["measure", "core", "model"]).reset_index(drop=True)


def e3_figure(result: AnalysisResult) -> alt.LayerChart:
    return charts.e3_chart(tables.e3_frame(result), width="container")


def e4_figure(result: AnalysisResult) -> alt.LayerChart:
    e4 = result.e4
    subtitle = [
        f"mean alpha on-axis {fmt(e4.mean_alpha_on)} vs off-axis {fmt(e4.mean_alpha_off)} (ratio {fmt(e4.ratio, 2)}x)",
        f"Wilcoxon p = {format_p(e4.wilcoxon_p)} over {e4.n_pairs} core layers",
    ]
    return charts.e4_chart(tables.e4_frame(result), subtitle=subtitle, width="container")


# -- compare -----------------------------------------------------------------------------


def comparison_sentence(comparison: ComparisonResult, measure: str) -> str:
    item = comparison.measures[measure]
    return (
        f"Over {comparison.model_a}'s {len(item.core_layers)} core layers: mean alpha "
        f"{fmt(item.mean_alpha_a, 4)} ({comparison.model_a}) vs {fmt(item.mean_alpha_b, 4)} "
        f"({comparison.model_b}), mean difference {fmt(item.mean_delta, 4)}; Wilcoxon signed-rank "
        f"W = {fmt(item.wilcoxon_statistic, 1)}, p = {format_p(item.wilcoxon_p)} ({item.n_pairs} pairs)."
    )


def compare_figure(comparison: ComparisonResult, measure: str, x: str = "layer") -> alt.VConcatChart:
    item = comparison.measures[measure]
    subtitle = f"Wilcoxon over core layers: p = {format_p(item.wilcoxon_p)} ({item.n_pairs} pairs)"
    return charts.compare_profiles(tables.comparison_frame(comparison, measure), x=x, subtitle=subtitle)


def comparison_table(comparison: ComparisonResult, measure: str) -> pd.DataFrame:
    return tables.comparison_frame(comparison, measure)


# -- geometry ----------------------------------------------------------------------------


def rdm_figure(layer_data: LayerData, metric: str) -> alt.Chart:
    rdm = centroid_rdm(centroids(layer_data.vectors), metric)
    return charts.rdm_heatmap(
        tables.rdm_frame(rdm, layer_data.magnitudes), metric=metric, subtitle=f"layer {layer_data.layer} ({layer_data.label})"
    )


def rsa_figure(result: AnalysisResult, metric: str) -> alt.LayerChart:
    return charts.rsa_by_layer(tables.rsa_frame(result), metric=metric, width="container")


def pc1_figure(layer_data: LayerData) -> alt.LayerChart:
    pc1 = pc1_coordinates(centroids(layer_data.vectors), layer_data.magnitudes)
    subtitle = [
        f"layer {layer_data.layer} ({layer_data.label}): Pearson r with log n = {fmt(pc1.pearson)}, "
        f"Spearman = {fmt(pc1.spearman)}",
        f"PC1 explains {fmt(100 * pc1.explained, 1)}% of the centroid variance",
    ]
    return charts.pc1_vs_logn(tables.pc1_frame(pc1, layer_data.magnitudes), subtitle=subtitle, width="container")


def geometry_table(result: AnalysisResult) -> pd.DataFrame:
    table = result.geometry.copy()
    table.insert(2, "core", table["layer"].isin(result.core_layers))
    return table


# -- frequency (E5) ----------------------------------------------------------------------

FIT_LABELS = {"power_law": "power law", "exponential": "exponential", "loglog_ols": "log-log OLS"}
"""Legend names of the count-distribution fits of :func:`magdash.frequency.fit_distributions`."""


def e5_table(result: AnalysisResult, e5: pd.DataFrame) -> pd.DataFrame:
    """The E5 of every layer (:func:`magdash.runs.frequency_runs.e5_from_analysis`: Spearman rho of V(n)
    with log(count(n) + 1), CI, partial rho given log n) with the model and the core band."""
    table = e5.copy()
    table.insert(0, "model", result.model)
    table.insert(3, "core", table["layer"].isin(result.core_layers))
    return table


def e5_sentence(table: pd.DataFrame, source: FrequencySource, conventions: str = MAGDASH) -> str:
    """The E5 summary over the core layers, significance counted by ``conventions``."""
    summary = e5_summary(table[table["core"]].reset_index(drop=True), conventions=conventions)
    sentence = (
        f"Mean Spearman rho over the core layers: {fmt(summary['mean_rho'])}, median {fmt(summary['median_rho'])} "
        f"(source {source.name}, {len(source.counts):,} numbers, {source.total:,} occurrences)."
    )
    if summary["best_layer"] is not None:
        significance = summary["significance"].replace("alpha", ".05")
        sentence += (
            f" {summary['significant_layers']} of {summary['layers_with_rho']} layers significant ({significance}); "
            f"largest |rho| at layer {summary['best_layer']}."
        )
    return sentence


def frequency_rho_figure(table: pd.DataFrame) -> alt.LayerChart:
    return charts.frequency_rho_by_layer(table, width="container")


def frequency_scatter_frame(result: AnalysisResult, source: FrequencySource, measure: str, layer: int, missing: str = "error") -> pd.DataFrame:
    """magnitude, count, V at one layer (the points of the E5 scatter)."""
    counts = counts_for_magnitudes(result.magnitudes, source, missing)
    return pd.DataFrame(
        {"magnitude": result.magnitudes, "count": np.asarray(counts, dtype=np.float64), "V": result.values[measure][layer]}
    )


def frequency_scatter_figure(frame: pd.DataFrame, table: pd.DataFrame, layer: int, label: str) -> alt.LayerChart:
    row = table[table["layer"] == layer]
    rho = float(row["rho"].iloc[0]) if len(row) else math.nan
    p = float(row["p"].iloc[0]) if len(row) else math.nan
    subtitle = f"layer {layer} ({label}): Spearman rho = {fmt(rho)}, p = {format_p(p)}"
    return charts.variability_vs_frequency(frame, subtitle=subtitle, width="container")


def frequency_fit_table(source: FrequencySource) -> pd.DataFrame:
    """The count-distribution fits, named as in the figure's legend."""
    return fit_distributions(source).assign(model=lambda t: t["model"].map(lambda m: FIT_LABELS.get(m, m)))


def frequency_counts_figure(source: FrequencySource) -> alt.LayerChart:
    """Counts of 1..N on log-log axes with the power-law, exponential and log-log OLS fits."""
    plot = distribution_plot_data(source)
    fit_columns = [c for c in plot.columns if c not in ("number", "count", "proportion")]
    total = float(plot.loc[(plot["number"] >= 1) & (plot["count"] > 0), "count"].sum())
    curves = plot.melt(id_vars=["number"], value_vars=fit_columns, var_name="model", value_name="predicted")
    curves["model"] = curves["model"].map(lambda name: FIT_LABELS.get(name, name))
    # The fits are on the proportion scale; multiply back to counts to share the axis.
    curves["predicted"] = curves["predicted"] * total
    return charts.frequency_loglog(plot[["number", "count"]], curves, subtitle=f"source {source.name}", width="container")



# -- the one-click report ------------------------------------------------------------------


REPORT_SOURCE = "openwebtext-500k"
"""The frequency source of the report's E5 section: the paper's own counts of 1..1000."""


def dashboard_report(store: Store, keys: Mapping[str, AnalysisKey], comparison: ComparisonKey | None = None,
                     *, view: Mapping[str, str] | None = None, focus: str | None = None, measure: str = "eucl",
                     layer: int | None = None, phase: Mapping[str, PhaseKey] | None = None,
                     source: str | None = REPORT_SOURCE, extra_sections: Sequence[report.ReportSection] = ()) -> str:
    """The self-contained HTML report of the models on the view's stimulus set.

    Every figure of :func:`magdash.presentation.report.analysis_sections` (verdicts, scaling, Weber window,
    noise models, E3, E4, geometry, the comparison), then for the view's model (``focus``,
    default the first) the figures of the other pages: V against n, the centroid RDM and PC1 at
    ``layer`` (default: the middle of the core band), E5 against ``source``, the depth
    diagnostics of ``phase`` raw and without the massive dimensions, and its alpha without the
    massive dimensions; then ``extra_sections`` (the
    robustness controls and the design simulated in this session), the verdict tables and the
    run manifest. The view's query string goes into the manifest so the dashboard view can be
    reopened. Analyses come from the store's cache when present.
    """
    from magdash.runs.analysis_runs import analyze, compare

    results = {name: analyze(store, key.model, key.stimuli, key.params) for name, key in keys.items()}
    comparisons = []
    if comparison is not None:
        comparisons.append(compare(store, comparison.model_a, comparison.model_b, comparison.stimuli, comparison.params))
    sections = list(report.analysis_sections(results, comparisons))
    name = focus if focus is not None else next(iter(keys))
    focused, key = results[name], keys[name]
    sections += detail_sections(store, focused, measure, layer, phase, source)
    dropped = analyze(store, key.model, key.stimuli, dataclasses.replace(key.params, massive="drop"))
    sections.append(massive_report_section(focused, dropped, measure))
    sections.extend(extra_sections)
    manifest = report.build_manifest(store, results, extra={"dashboard_view": dict(view or {})})
    return report.build_report_html(sections, manifest)


def detail_sections(store: Store, result: AnalysisResult, measure: str, layer: int | None = None,
                    phase: Mapping[str, PhaseKey] | None = None, source: str | None = REPORT_SOURCE,
                    ) -> list[report.ReportSection]:
    """The report's sections for one model beyond the alpha profiles: V vs n, RDM and PC1 at
    one layer, E5 and the depth diagnostics (each page's figures and tables)."""
    from magdash.runs.depth_runs import phase_from_store
    from magdash.runs.frequency_runs import e5_from_analysis, load_source

    if layer is None:
        core = result.core_layers or (result.n_layers // 2,)
        layer = (core[0] + core[-1]) // 2
    name, label = result.model, result.layer_labels[layer]
    layer_data = store.read_layer(result.model, result.stimuli, layer)
    where = f"layer {layer} ({label}) of {name}"
    sections = [
        report.ReportSection(
            f"V against n at {where}",
            text=["Log-log V(n) per measure with the OLS fit and the alpha = 1 and alpha = 0 references; "
                  "faint points: each carrier's distance to the centroid."],
            figures=[(f"{tables.measure_label(m)} against n, {where}",
                      scaling_figure(result, m, layer, layer_data if m in CARRIER_MEASURES else None))
                     for m in profile_measures(measure)],
        ),
        report.ReportSection(
            f"Centroid geometry at {where}",
            text=["The centroid RDM (Euclidean) and the centroids' PC1 coordinate against log n "
                  "(Cacioli, arXiv 2603.20642)."],
            figures=[(f"Centroid RDM, {where}", rdm_figure(layer_data, "euclidean")),
                     (f"PC1 against log n, {where}", pc1_figure(layer_data))],
        ),
    ]
    if source is not None:
        try:
            counts = load_source(source, store)
            table = e5_table(result, e5_from_analysis(store, result, counts, measure))
            frame = frequency_scatter_frame(result, counts, measure, layer)
            sections.append(report.ReportSection(
                f"Corpus frequency (E5), source {source}: {name}",
                text=[e5_sentence(table, counts, result.params.conventions)],
                figures=[(f"Spearman rho by layer, {name}", frequency_rho_figure(table)),
                         (f"V against corpus count, {where}", frequency_scatter_figure(frame, table, layer, label)),
                         (f"Distribution of the counts ({source})", frequency_counts_figure(counts))],
                tables=[(f"E5 per layer, {name}", table), (f"Fits of the count distribution ({source})",
                                                          frequency_fit_table(counts))],
            ))
        except MagdashError as error:
            sections.append(report.ReportSection(f"Corpus frequency (E5): {name}", text=[f"Not computed: {error}"]))
    if phase:
        depth = {series: phase_from_store(store, key.model, key.stimuli, key.params) for series, key in phase.items()}
        dropped = {series: phase_from_store(store, key.model, key.stimuli, key.params)
                   for series, key in adjusted_phase_keys(phase, "drop").items()}
        notes = [phase_sentence(depth, dropped), massive_sentence(depth)]
        if caveat := spectrum_caveats(depth):
            notes.append(caveat)
        sections.append(report.ReportSection(
            f"Depth diagnostics: {name}",
            text=notes,
            figures=[(f"Order parameter, raw and without the massive dimensions, {name}", order_figure(depth, dropped)),
                     (f"Effective rank and participation ratio, {name}", rank_figure(depth)),
                     (f"Omega by layer, {name}", omega_figure(depth)),
                     (f"Covariance spectrum, {where}", spectrum_figure(depth, layer))],
            tables=[(f"The three largest steps of m(gamma), {name}", jumps_table(depth, dropped)),
                    (f"Per-layer diagnostics, {name} (n_spikes empty: the Marchenko-Pastur fit did not converge)",
                     phase_table(depth, dropped))],
        ))
    return sections


# -- depth (phase diagnostics; Alpay & Kilictas, arXiv 2601.19942) ------------------------



def _trained(results: Mapping[str, PhaseResult]) -> PhaseResult:
    return next(iter(results.values()))


def _interval(transition: Transition) -> tuple[float, float] | None:
    return (transition.low, transition.high) if math.isfinite(transition.low) else None


def phase_sentence(results: Mapping[str, PhaseResult], adjusted: Mapping[str, PhaseResult] | None = None) -> str:
    """gamma_c of each series with its bootstrap interval, raw and adjusted, and the largest jumps."""

    def gamma_cs(items: Mapping[str, PhaseResult]) -> str:
        parts = []
        for series, result in items.items():
            order = result.order
            interval = f" [{fmt(order.low, 2)}, {fmt(order.high, 2)}]" if math.isfinite(order.low) else ""
            parts.append(f"{series} ({result.model}): gamma_c = {fmt(order.gamma_c, 2)}{interval}")
        return "; ".join(parts)

    trained = _trained(results)
    text = "Depth of the largest change of m(gamma), with its bootstrap interval over vectors — " + gamma_cs(results)
    if adjusted:
        text += f". {MASSIVE_LABELS[_trained(adjusted).params.massive].capitalize()}: " + gamma_cs(adjusted)
    if trained.jumps:
        steps = ", ".join(
            f"to gamma {fmt(j.gamma, 2)} ({format_number(j.change, '+.3f')}"
            + (f", the largest in {j.p_largest:.0%} of resamples)" if math.isfinite(j.p_largest) else ")")
            for j in trained.jumps
        )
        text += f". Largest steps of the trained curve: {steps}"
        if trained.jumps[0].gamma == depth_fraction(1, trained.n_blocks) and not trained.params.skip_embedding_step:
            text += (". gamma_c is the embeddings-to-block-1 step, where massive activations usually appear, "
                     "not a transition inside the network")
    return text + ". The paper reports gamma_c ≈ 0.42 for models of 1.5B-30B parameters and none for small ones."


def massive_sentence(results: Mapping[str, PhaseResult]) -> str:
    """Where the trained model has massive-activation dimensions and how much of ||h||² they hold."""
    trained = _trained(results)
    ratio = trained.params.massive_ratio
    with_massive = [item for item in trained.layers if item.massive]
    rule = f"mean |h_j| above {ratio:g}x the median over dimensions"
    if not with_massive:
        return f"{trained.model}: no massive-activation dimensions ({rule}) in any layer."
    counts = pd.Series([j for item in with_massive for j in item.massive]).value_counts()
    top = max(with_massive, key=lambda item: item.massive_share)
    return (
        f"{trained.model}: massive-activation dimensions ({rule}) in {len(with_massive)} of {len(trained.layers)} "
        f"layers, most often {', '.join(map(str, counts.index[:5]))}; they hold up to "
        f"{format_number(top.massive_share, '.0%')} of ||h||² (layer {top.layer}, {len(top.massive)} dimensions). The paper's claim "
        "is about Omega of the raw hidden states: where the raw and adjusted curves part, the 'solid' "
        "regime is those few coordinates, not a sparse representation."
    )


def order_figure(results: Mapping[str, PhaseResult], adjusted: Mapping[str, PhaseResult] | None = None) -> alt.LayerChart:
    trained = _trained(results)
    dim = trained.layers[0].dim
    frame = tables.order_parameter_frame(results)
    subtitle = f"{trained.model}; dotted: isotropic Gaussian in d = {dim}"
    if adjusted:
        frame = pd.concat([frame, tables.order_parameter_frame(adjusted)], ignore_index=True)
        subtitle += f"; solid: raw, dashed: {MASSIVE_LABELS[_trained(adjusted).params.massive]}"
    return charts.order_parameter_chart(
        frame, baseline=isotropic_omega_mean(dim),
        gamma_c=trained.order.gamma_c, gamma_c_interval=_interval(trained.order),
        subtitle=subtitle, width="container",
    )


def jumps_table(results: Mapping[str, PhaseResult], adjusted: Mapping[str, PhaseResult] | None = None) -> pd.DataFrame:
    """The three largest steps of m(gamma) of every series, raw and adjusted."""
    frames = [tables.jumps_frame(results)] + ([tables.jumps_frame(adjusted)] if adjusted else [])
    return pd.concat(frames, ignore_index=True)


def omega_figure(results: Mapping[str, PhaseResult]) -> alt.Chart:
    trained = _trained(results)
    return charts.omega_heatmap(
        tables.phase_omega_histogram(trained), subtitle=f"{trained.model}, {trained.layers[0].count} vectors per layer",
        width="container",
    )


def spectrum_figure(results: Mapping[str, PhaseResult], layer: int) -> alt.LayerChart:
    trained = _trained(results)
    fit = trained.diagnostics(layer).spectrum
    histogram, mp, spikes = tables.phase_spectrum_frames(trained, layer)
    subtitle = [f"{MASSIVE_LABELS[trained.params.massive]}, layer {layer}: q = d/N = {fmt(fit.q, 2)}, "
                f"sigma² = {fmt(fit.sigma2, 4)}, bulk edge {fmt(fit.mp_edge, 4)}"]
    if caveat := spectrum_caveat(fit):
        subtitle.append(caveat)
    return charts.spectrum_chart(
        histogram, mp, spikes, edge=fit.mp_edge, threshold=fit.spike_threshold, subtitle=subtitle, width="container"
    )


SPIKE_SHARE = 0.25
"""Share of the non-zero eigenvalues called spikes beyond which a spectrum is said not to be a
Marchenko–Pastur bulk with a few outliers (the robust fit stops at half of them)."""


def spectrum_caveat(fit) -> str | None:
    """A warning when a layer's Marchenko–Pastur fit cannot be read as bulk plus spikes: it did
    not converge (half the spectrum called spikes), or more than :data:`SPIKE_SHARE` of the
    non-zero eigenvalues sit above the threshold. None when the fit reads normally."""
    if not fit.converged:
        return "the MP fit did not converge: half the spectrum is above the threshold, so there is no MP bulk to fit"
    if fit.rank and fit.n_spikes > SPIKE_SHARE * fit.rank:
        return (f"{fit.n_spikes} of {fit.rank} non-zero eigenvalues above the threshold: not an MP bulk with a few "
                "spikes, so the fitted curve and the spike count do not describe this spectrum")
    return None


def spectrum_caveats(results: Mapping[str, PhaseResult]) -> str | None:
    """One sentence naming every layer whose spectrum fit carries a caveat (None if none does)."""
    trained = _trained(results)
    layers = [item.layer for item in trained.layers if spectrum_caveat(item.spectrum)]
    if not layers:
        return None
    return (
        f"Marchenko–Pastur fit not usable at layer(s) {tables.layer_span(layers)} of {trained.model}: the fit did not "
        "converge or called more than a quarter of the non-zero eigenvalues spikes (the threshold needs many more "
        "vectors than dimensions). Spike counts there are not evidence of a 'solid' regime."
    )


def rank_figure(results: Mapping[str, PhaseResult]) -> alt.LayerChart:
    trained = _trained(results)
    return charts.rank_chart(
        tables.rank_frame(results), gamma_c=trained.order.gamma_c, gamma_c_interval=_interval(trained.order),
        subtitle=f"{trained.model}, {MASSIVE_LABELS[trained.params.massive]} vectors", width="container",
    )


def phase_table(results: Mapping[str, PhaseResult], adjusted: Mapping[str, PhaseResult] | None = None) -> pd.DataFrame:
    """Every per-layer diagnostic of every series (raw, then adjusted), with the isotropic-Gaussian
    expectations; a spike count is empty where the Marchenko-Pastur fit did not converge."""
    items = list(results.items()) + list((adjusted or {}).items())
    return pd.concat(
        [layer_frame(result).assign(series=series, view=MASSIVE_LABELS[result.params.massive])
         for series, result in items],
        ignore_index=True,
    )


# -- the massive-dimension control of alpha --------------------------------------------------


def massive_control_figure(raw: AnalysisResult, dropped: AnalysisResult, measure: str = "eucl") -> alt.LayerChart:
    control = MassiveControl(raw, dropped)
    return charts.massive_alpha_chart(
        tables.massive_alpha_frame(control.layers(), measure),
        subtitle=f"{raw.model}, {tables.measure_label(measure)}; massive: mean |h_j| > "
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
        f"of {tables.measure_label(measure)} goes from {fmt(row['mean_alpha_raw'], 3)} to "
        f"{fmt(row['mean_alpha_dropped'], 3)} and {holds}: a conclusion that survives the drop is not "
        "carried by a few coordinates."
    )


def massive_report_section(raw: AnalysisResult, dropped: AnalysisResult, measure: str) -> report.ReportSection:
    return report.ReportSection(
        f"Control: alpha without the massive dimensions ({raw.model})",
        text=[massive_control_sentence(raw, dropped, measure)],
        figures=[("Alpha by layer, raw and dropped", massive_control_figure(raw, dropped, measure))],
        tables=[("Mean core alpha, raw and dropped", massive_control_table(raw, dropped))],
    )
