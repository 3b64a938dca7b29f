"""The report's sections, one builder per page, from results a caller already holds: the CLI's
and the app's reports are made of the same sections (:mod:`magdash.reports` gathers the
results from a store). Every figure is a page's figure function, one the page marks for the report
in :data:`magdash.presentation.page_figures.PAGE_FIGURES` (``tests/presentation/test_page_figures.py``
holds the two together), so a report shows what the page shows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from magdash.depth_statistics.diagnostics import DepthResult
from magdash.errors import AnalysisError
from magdash.formatting import format_number, layer_span
from magdash.frequency.sources import FrequencySource
from magdash.presentation import (
    behaviour_figures,
    compare_figures,
    controls_figures,
    depth_figures,
    frequency_figures,
    geometry_figures,
    probe_figures,
    scaling_figures,
    steering_figures,
    tokenization_figures,
    weber_figures,
)
from magdash.presentation.report.html import ReportSection
from magdash.probes.result import ProbeResult
from magdash.steering.steer_result import SteerResult
from magdash.variability.analysis import AnalysisResult
from magdash.variability.measures import CARRIER_MEASURES, measure_title

_FIT_TABLE_COLUMNS = [
    "measure_label", "layer", "label", "core", "alpha", "ci_low", "ci_high", "alpha_theil_sen",
    "r2", "p", "se", "n_points", "n_outliers",
]


def analysis_sections(
    results: Mapping[str, Any], comparisons: Sequence[Any] = ()
) -> list[ReportSection]:
    """Report sections for analysed models (``results``: name -> AnalysisResult) and any
    :class:`magdash.variability.analysis.ComparisonResult` objects."""
    if not results:
        raise AnalysisError("the report needs at least one analysed model")
    first = next(iter(results.values()))
    measures = list(first.params.measures)
    primary = measures[0]
    window = first.params.window
    sections = [_verdict_section(results, measures)]
    warnings = [line for result in results.values() for line in result.warnings()]
    if warnings:
        # Before any figure: what the tool found that may make a number an artifact.
        sections.insert(0, ReportSection("Warnings: read these before the numbers", text=warnings))
    for name, result in results.items():
        fits = scaling_figures.fits_frame(result, model=name)
        sections.append(
            ReportSection(
                f"Scaling: {name}",
                text=[
                    f"Stimuli {result.stimuli}; core layers {layer_span(result.core_layers)}. "
                    "Alpha is the OLS slope of log V on log n; bands are bootstrap percentile "
                    f"intervals ({result.params.n_boot} resamples, {result.params.bootstrap_layers} "
                    "layers). Layers without a fit are marked, never drawn as numbers."
                ],
                figures=[(f"Alpha by layer, {name}", scaling_figures.profile_figure(result, primary))],
                tables=[(f"Per-layer fits, {name}", fits.loc[:, _FIT_TABLE_COLUMNS])],
            )
        )
    sections.append(tokenization_section(results, primary))
    window_figures = [
        (
            f"Alpha of {measure_title(primary)} against the Weber window",
            weber_figures.weber_figure(results, primary),
        )
    ]
    weber_tables = []
    for name, result in results.items():
        window_figures.append((f"CV against n, {name}", weber_figures.cv_figure(result)))
        trend = result.cv_trend.assign(label=[result.layer_labels[i] for i in result.cv_trend["layer"]])
        weber_tables.append((f"Spearman correlation of CV(n) with n per layer, {name}", trend))
    sections.append(
        ReportSection(
            "Weber window and coefficient of variation",
            text=[
                f"Scalar variability (Weber's law) predicts alpha in [{window[0]:g}, {window[1]:g}] "
                "and a flat CV(n)."
            ],
            figures=window_figures,
            tables=weber_tables,
        )
    )
    sections.append(
        ReportSection(
            "Noise models (AICc)",
            text=["Descriptive comparison of constant, scalar, log-scalar and power-law noise by AICc."],
            figures=[
                (f"Akaike weights by layer, {name}", weber_figures.noise_figure(r, primary))
                for name, r in results.items()
            ],
            tables=[
                (
                    f"Core layers won by each noise model ({measure_title(primary)})",
                    weber_figures.noise_summary(results, primary),
                )
            ],
        )
    )
    sections.append(
        ReportSection(
            "E3 boundary sensitivity",
            text=[f"Core-layer alphas refitted without the boundary magnitudes {_numbers(first.params.boundary)}."],
            figures=[(f"E3, {name}", weber_figures.e3_figure(r)) for name, r in results.items()],
            tables=[("E3 summary", weber_figures.e3_summary(results))],
        )
    )
    sections.append(
        ReportSection(
            "E4 axis specificity",
            text=["Scaling of the variance along the magnitude axis (PC1) and off it, per core layer. The ratio "
                  "and the difference of the mean alphas lead, with their stimulus-bootstrap intervals; the "
                  "Wilcoxon test pairs the core layers, which share their stimuli (docs/science.md, \"The unit of "
                  "replication\")."],
            figures=[
                (
                    f"E4, {name}",
                    weber_figures.e4_figure(r),
                )
                for name, r in results.items()
            ],
            tables=[("E4 summary", weber_figures.e4_summary(results))],
        )
    )
    sections.append(
        ReportSection(
            "Geometry (RSA and PC1)",
            text=["Spearman correlation of the centroid RDM with the log-ratio and linear magnitude models."],
            figures=[(f"RSA by layer, {name}", geometry_figures.rsa_figure(r, "euclidean")) for name, r in results.items()],
            tables=[(f"Geometry per layer, {name}", r.geometry) for name, r in results.items()],
        )
    )
    for comparison in comparisons:
        sections.append(_comparison_section(comparison, primary))
    return sections


def tokenization_section(results: Mapping[str, AnalysisResult], measure: str) -> ReportSection:
    """Alpha adjusted for tokenization beside the raw alpha, and alpha within token-count strata,
    for each model whose token facts were recorded (the others say why they have none)."""
    text = ["Alpha within each token-count stratum, and one fit of log V on log n with a step per token count "
            "(and, in a second fit, per kept token), beside the raw alpha (docs/science.md, \"Tokenization and the "
            "number's written form\")."]
    figures, tables = [], []
    for name, result in results.items():
        text.append(f"{name}: {tokenization_figures.tokenization_sentence(result, measure)}")
        if not result.has_tokenization:
            continue
        figures.append((f"Alpha raw and adjusted for tokenization, {name}", tokenization_figures.tokenization_figure(result, measure)))
        tables.append((f"Mean core alpha within token-count strata, {name}", tokenization_figures.strata_table(result, measure)))
        tables.append((f"Alpha adjusted for tokenization per layer, {name}", tokenization_figures.tokenization_table(result, measure)))
    return ReportSection(f"Tokenization ({measure_title(measure)})", text=text, figures=figures, tables=tables)


def _verdict_section(results: Mapping[str, Any], measures: Sequence[str]) -> ReportSection:
    first = next(iter(results.values()))
    low, high = first.params.window
    return ReportSection(
        "Verdicts (H1-H4)",
        text=[
            "Over each model's core layers: H1 alpha > 0, H2 alpha in the Weber window "
            f"[{low:g}, {high:g}], H3 alpha < 1 (each needs a majority of core layers), H4 alpha "
            f"changes with depth (Spearman over the layers in h4_layers). The programme row supports "
            f"a hypothesis when a majority of the trained models do; each @random control stands beside its "
            f"model as a reference and is not counted. Statistics follow {first.params.rules.description}.",
            "The mean core alpha leads, with the interval and p of the stimulus bootstrap (carriers and "
            "magnitudes resampled once for every core layer). The t-tests (h1_p, h2_p) and H4's Spearman are "
            "tests over core layers, which share their stimuli and are not independent replications: their "
            "real size exceeds their nominal level, and a Spearman test over 3 layers cannot reach .05 "
            "(the note column says so; docs/science.md, \"The unit of replication\").",
        ],
        tables=[
            (f"H1-H4 for {measure_title(measure)}", weber_figures.verdict_frame(results, measure))
            for measure in measures
        ],
    )


def _comparison_section(comparison: Any, measure: str) -> ReportSection:
    frame = compare_figures.comparison_frame(comparison, measure)
    depth = "gamma" if not frame["layer_a"].equals(frame["layer_b"]) else "layer"
    return ReportSection(
        f"Comparison: {comparison.model_a} vs {comparison.model_b}",
        text=[
            "Layerwise alpha differences (model A minus model B) with joint-bootstrap CIs; "
            "layers paired by depth fraction when the depths differ.",
            compare_figures.comparison_sentence(comparison, measure),
        ],
        figures=[
            (
                f"{comparison.model_a} vs {comparison.model_b}",
                compare_figures.compare_figure(comparison, measure, x=depth),
            )
        ],
        tables=[("Comparison summary", compare_figures.comparison_summary(comparison))],
    )


def controls_section(result: Any, measure: str) -> ReportSection:
    """The robustness controls of one model (:class:`magdash.controls_statistics.ControlsResult`) for ``measure``."""
    label = measure_title(measure)
    figures: list[tuple[str, Any]] = [
        (f"Leave one carrier out, {label}", controls_figures.loo_figure(result, measure)),
        ("ICC(3,k) of the carriers' RDMs", controls_figures.icc_figure(result)),
        (f"Parametric and permutation p, {label}", controls_figures.permutation_figure(result, measure)),
    ]
    figures += [(f"{result.model} vs {name}", controls_figures.variant_figure(result, name, measure)) for name in controls_figures.compared(result)]
    return ReportSection(
        f"Robustness controls: {result.model}, {label}",
        text=[
            f"Stimuli {result.stimuli}; core layers {layer_span(result.core_layers)}; {result.tables.n_perm:,} "
            "permutations of the magnitude labels. Each control says what would count as a problem "
            "(docs/science.md, 'Robustness controls')."
        ],
        figures=figures,
        tables=[
            (f"Verdicts over the core band, {label}", controls_figures.verdicts_frame(result, measure)),
            (f"Leave one carrier out, {label}", result.loo_summary(measure)),
            ("Variants and the @random control", controls_figures.variant_frame(result, measure)),
            (f"Permutation and parametric p per layer, {label}",
             result.tables.permutation[result.tables.permutation["measure"] == measure]),
            ("ICC(3,k) per layer", result.tables.icc),
        ],
    )


def design_section(result: Any) -> ReportSection:
    """The study-design simulator's curves (:class:`magdash.controls_statistics.design.DesignResult`)."""
    params, summary = result.params, result.summary()
    return ReportSection(
        "Study design (simulated)",
        text=[
            f"{result.n_magnitudes} magnitudes ({params.magnitudes}) x {params.n_carriers} carriers x "
            f"{result.n_layers} core layers, {params.n_studies:,} simulated studies per point (seed {params.seed}), "
            f"noise calibrated on {result.calibration.source}. Minimal detectable alpha at "
            f"{params.power_target:.0%} power: {format_number(summary['minimal_alpha_nominal'])} "
            f"(size-adjusted {format_number(summary['minimal_alpha_size_adjusted'])}); size of the H1 t-test "
            f"{format_number(summary['h1_size'])} (nominal {params.level / 2:g}).",
        ],
        figures=[
            ("H1 power", controls_figures.h1_figure(result)),
            ("E6 power", controls_figures.e6_figure(result)),
            ("CI half-width of alpha", controls_figures.ci_width_figure(result)),
        ],
        tables=[
            ("Summary at the design's alpha and delta", controls_figures.design_summary(result)),
            ("H1 power curve", controls_figures.h1_table(result)),
            ("E6 power curve", controls_figures.e6_table(result)),
            ("CI half-width", controls_figures.ci_width_table(result)),
        ],
    )


def _numbers(values: Sequence[float]) -> str:
    return ", ".join(f"{v:g}" for v in values)


def massive_section(raw: AnalysisResult, dropped: AnalysisResult, measure: str) -> ReportSection:
    """Alpha without the massive-activation dimensions beside the raw alpha (the Scaling page's control)."""
    return ReportSection(
        f"Control: alpha without the massive dimensions ({raw.model})",
        text=[scaling_figures.massive_control_sentence(raw, dropped, measure)],
        figures=[("Alpha by layer, raw and dropped", scaling_figures.massive_control_figure(raw, dropped, measure))],
        tables=[("Mean core alpha, raw and dropped", scaling_figures.massive_control_table(raw, dropped))],
    )


def layer_sections(result: AnalysisResult, vectors: np.ndarray, layer: int, measure: str) -> list[ReportSection]:
    """The Scaling and Geometry pages at one layer: V against n per measure with the carriers'
    own distances, the centroid RDM and the centroids' PC1 against log n (``vectors``: that
    layer's, shape (n_magnitudes, n_carriers, d))."""
    where = f"layer {layer} ({result.layer_labels[layer]}) of {result.model}"
    return [
        ReportSection(
            f"V against n at {where}",
            text=["Log-log V(n) per measure with the OLS fit and the alpha = 1 and alpha = 0 references; "
                  "faint points: each carrier's distance to the centroid."],
            figures=[(f"{measure_title(m)} against n, {where}",
                      scaling_figures.scaling_figure(result, m, layer, vectors if m in CARRIER_MEASURES else None))
                     for m in scaling_figures.profile_measures(measure)],
        ),
        ReportSection(
            f"Centroid geometry at {where}",
            text=["The centroid RDM (Euclidean) and the centroids' PC1 coordinate against log n "
                  "(Cacioli, arXiv 2603.20642)."],
            figures=[(f"Centroid RDM, {where}", geometry_figures.rdm_figure(result, vectors, layer, "euclidean")),
                     (f"PC1 against log n, {where}", geometry_figures.pc1_figure(result, vectors, layer))],
        ),
    ]


def e5_section(result: AnalysisResult, e5: pd.DataFrame, source: FrequencySource, measure: str,
               layer: int) -> ReportSection:
    """The Frequency page: E5 by layer (``e5``: the table of
    :func:`magdash.runs.frequency_runs.e5_from_analysis`), V against the count at ``layer``, the
    counts' distribution and its fits."""
    name, where = result.model, f"layer {layer} ({result.layer_labels[layer]}) of {result.model}"
    table = frequency_figures.e5_table(result, e5)
    frame = frequency_figures.frequency_scatter_frame(result, source, measure, layer)
    return ReportSection(
        f"Corpus frequency (E5), source {source.name}: {name}",
        text=[frequency_figures.e5_sentence(table, source, result.params.conventions)],
        figures=[(f"Partial and raw Spearman rho by layer, {name}", frequency_figures.frequency_rho_figure(table)),
                 (f"V against corpus count, {where}",
                  frequency_figures.frequency_scatter_figure(frame, table, layer, result.layer_labels[layer])),
                 (f"Distribution of the counts ({source.name})", frequency_figures.frequency_counts_figure(source))],
        tables=[(f"E5 per layer, {name}", table),
                (f"Fits of the count distribution ({source.name})", frequency_figures.frequency_fit_table(source))],
    )


def depth_section(depth: Mapping[str, DepthResult], dropped: Mapping[str, DepthResult], layer: int,
                  label: str) -> ReportSection:
    """The Depth page: the diagnostics of the trained model and its control (``depth``: series ->
    result), raw and without the massive dimensions (``dropped``), the spectrum at ``layer``
    (named ``label``)."""
    name = next(iter(depth.values())).model
    notes = [depth_figures.phase_sentence(depth, dropped), depth_figures.massive_sentence(depth)]
    notes += [caveat.line() for caveat in depth_figures.spectrum_caveats(depth)]
    return ReportSection(
        f"Depth diagnostics: {name}",
        text=notes,
        figures=[(f"Order parameter, raw and without the massive dimensions, {name}", depth_figures.order_figure(depth, dropped)),
                 (f"Effective rank and participation ratio, {name}", depth_figures.rank_figure(depth)),
                 (f"Omega by layer, {name}", depth_figures.omega_figure(depth)),
                 (f"Covariance spectrum, layer {layer} ({label}) of {name}", depth_figures.spectrum_figure(depth, layer))],
        tables=[(f"The three largest steps of m(gamma), {name}", depth_figures.jumps_table(depth, dropped)),
                (f"Per-layer diagnostics, {name} (n_spikes empty: the Marchenko-Pastur fit did not converge)",
                 depth_figures.phase_table(depth, dropped))],
    )


def probe_section(results: Mapping[str, ProbeResult], layer: int | None = None, target: str = "log") -> ReportSection:
    """The Probes page: held-out R² by layer in both schemes (real labels, control task, the
    ``@random`` control, the digit-count baseline), the selectivity, the decoded noise's slope beta
    by layer beside a constant-error read-out's, and at ``layer`` (default: the largest
    held-out-magnitude R²) the decoded n-hat against n and SD(n-hat)/n (``results``: series ->
    :class:`~magdash.probes.result.ProbeResult`, the trained model first)."""
    trained = next(iter(results.values()))
    layer = probe_figures.best_layer(trained, target) if layer is None else layer
    name, params = trained.model, trained.params
    where = f"layer {layer} of {name}"
    notes = [line for result in results.values() for line in result.warnings()]
    notes += [
        probe_figures.probe_sentence(results, target),
        f"Ridge probes of {probe_figures.TARGET_LABELS[target]} on {trained.magnitudes.size} magnitudes x {trained.n_carriers} "
        f"carriers, scored on held-out carriers (a new context) and on held-out magnitudes (interpolation, "
        f"{params.magnitude_folds} folds); the control task permutes the labels across magnitudes; the baseline "
        f"predicts from each number's {trained.strata_by} alone on the same folds; intervals: "
        f"{params.ci:.0%} bootstrap over magnitudes ({params.n_boot} resamples). docs/science.md, 'Probes'.",
    ]
    figures = [(f"Held-out R² by layer, {probe_figures.SCHEME_LABELS[scheme]}, {name}", probe_figures.r2_figure(results, scheme, target))
               for scheme in probe_figures.SCHEME_LABELS]
    figures += [
        (f"Selectivity by layer, {name}", probe_figures.selectivity_figure(results, target)),
        (f"Decoded noise scaling by layer, {name}", probe_figures.beta_figure(results, target)),
        (f"Decoded magnitude against n, {where}", probe_figures.decoded_figure(results, layer, target)),
        (f"Decoded spread SD(n-hat)/n by magnitude, {where}", probe_figures.weber_figure(results, layer, target)),
    ]
    tables = [(f"Probes per layer, {name}", probe_figures.layer_table(results, target))]
    if len(results) > 1:
        tables.append((f"Held-out scores beside the @random control, {name}", probe_figures.comparison_table(results, target)))
    tables.append((f"Decoded magnitude per n, {where}", probe_figures.decoded_table(results, layer, target)))
    return ReportSection(f"Probes: is magnitude decodable? ({name})", text=notes, figures=figures, tables=tables)


def behaviour_section(result: behaviour_figures.BehaviourFrames, task: str, min_option_mass: float,
                      variant: str = "choice", conventions: str = "magdash",
                      representation: pd.DataFrame | None = None) -> ReportSection:
    """The Behaviour page for one task of one model's comparisons: the trials not measured, the
    position bias, the thresholds beyond the tested ratios, the psychometric curves, the Weber
    fraction against the reference, the position bias by reference and, given ``representation``
    (reference, value, measure: :func:`~magdash.presentation.behaviour_figures.core_cv_frame`), the
    behavioural Weber fraction beside it; the fits per reference as a table."""
    name = result.model
    unmeasured = behaviour_figures.unmeasured_sentence(result, task, min_option_mass)
    if behaviour_figures.measured_trials(result, task) == 0:  # nothing to fit or draw (a random-weight control)
        return ReportSection(f"Behaviour: number comparisons ({name}, {task})", text=[
            *([unmeasured] if unmeasured else []),
            behaviour_figures.nothing_measured_message(result, task, min_option_mass)])
    notes = [*([unmeasured] if unmeasured else []), behaviour_figures.position_bias_sentence(result, task),
             *behaviour_figures.outside_range_sentences(result, task, variant, conventions)]
    figures = [
        (f"Psychometric curves, {name}, {task}",
         behaviour_figures.psychometric_figure(result, task, variant, conventions)),
        (f"Weber fraction against the reference, {name}, {task}",
         behaviour_figures.weber_figure(result, task, variant, conventions)),
        (f"Position bias, {name}, {task}", behaviour_figures.bias_figure(result, task)),
    ]
    if representation is not None:
        figures.append((f"Behaviour against representation, {name}, {task}",
                        behaviour_figures.representation_figure(result, representation, task, variant, conventions)))
    fits = behaviour_figures.fits_table(result, task, variant, conventions)
    return ReportSection(f"Behaviour: number comparisons ({name}, {task})", text=notes, figures=figures,
                         tables=[(f"Psychometric fits per reference, {name}, {task}", fits)])


def steering_section(result: SteerResult, analysis: AnalysisResult | None = None,
                     probe: ProbeResult | None = None) -> ReportSection:
    """The Steering page for one model's cached steering: what it shows, its caveats, the causal profile
    beside ``analysis``'s RSA and ``probe``'s R² (either may be None), and the dose-response at the
    most specific layer."""
    name = result.model
    layer = steering_figures.most_specific_layer(result)
    figures = [(f"Steering along the magnitude direction by layer, {name}",
                steering_figures.profile_figure(result, analysis, probe)),
               (f"Dose-response at layer {layer}, {name}", steering_figures.dose_figure(result, layer))]
    return ReportSection(f"Steering: is the magnitude direction used? ({name}, {result.comparisons})",
                         text=[steering_figures.summary_sentence(result), *result.warnings()], figures=figures)
