"""The self-contained HTML report: every figure, the verdict table and a run manifest.

The report is one file with no external resource: figures are embedded as base64
``data:`` images (SVG by default, PNG on request), tables are HTML built here with every cell
escaped by :func:`html.escape`, and a Content-Security-Policy forbids scripts outright. User
text (model names, carrier sentences, layer labels) is therefore only ever shown as text; as
``<img>`` sources, even the SVG images cannot run script. The run manifest (model identities,
stimuli, analysis parameters, package versions) is shown readably and embedded as JSON in a
``<script type="application/json" id="magdash-manifest">`` block, with ``<``, ``>`` and ``&``
written as JSON unicode escapes so no string can close the block.

:func:`build_report` runs the analyses for a store and a list of models and assembles
everything; :func:`analysis_sections` does the same from results a caller already has (the
dashboard's cached ones), and :func:`build_report_html` renders any list of sections.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import html
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from magdash.environment import package_versions
from magdash.errors import AnalysisError
from magdash.formatting import MISSING, column_label, format_number, format_p, is_p_column
from magdash.jsonio import to_jsonable
from magdash.output_files import REPORT_MARK
from magdash.presentation import charts, tables
from magdash.presentation.export import chart_to_png, chart_to_svg
from magdash.sources.gguf import weights_note

log = logging.getLogger(__name__)

REPORT_FORMAT_VERSION = 1
IMAGE_FORMATS = ("svg", "png")

StepCallback = Callable[[str], None]
"""Called with the step under way (``"analysing minilm"``) while a report is built."""


# -- report structure ----------------------------------------------------------------------


@dataclass
class ReportSection:
    """One section of the HTML report: a title, plain-text paragraphs, figures and tables.

    ``figures`` and ``tables`` are (caption, chart) and (caption, DataFrame) pairs. Every
    string is shown as text (escaped), never interpreted as HTML.
    """

    title: str
    text: Sequence[str] = ()
    figures: list[tuple[str, Any]] = field(default_factory=list)
    tables: list[tuple[str, pd.DataFrame]] = field(default_factory=list)


_STYLE = """
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2rem auto;
       max-width: 1400px; padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { font-size: 1.7rem; } h2 { border-bottom: 1px solid #ddd; padding-bottom: .2rem; margin-top: 2.5rem; }
nav ol { columns: 2; }
figure { margin: 1.2rem 0; } figure img { max-width: 100%; height: auto; }
figcaption { color: #555; font-size: .9rem; }
table { border-collapse: collapse; margin: .8rem 0 1.5rem; font-size: .85rem; }
caption { text-align: left; font-weight: 600; padding-bottom: .3rem; }
th, td { border: 1px solid #ddd; padding: .25rem .5rem; text-align: right; }
th { background: #f4f4f4; } td.text { text-align: left; }
td.na { color: #999; }
pre { background: #f7f7f7; padding: 1rem; overflow-x: auto; font-size: .8rem; }
.table-wrap { overflow-x: auto; }
"""

_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


def format_cell(value: Any) -> tuple[str, str]:
    """(text, css class) for one table cell: :data:`MISSING` for missing, 4 significant digits for floats."""
    if value is None or value is pd.NA or value is pd.NaT:
        return MISSING, "na"
    if isinstance(value, (bool, np.bool_)):
        return ("yes" if value else "no"), "text"
    if isinstance(value, (int, np.integer)):
        return str(int(value)), ""
    if isinstance(value, (float, np.floating)):
        text = format_number(value, ".4g")
        return text, "na" if text == MISSING else ""
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value), "text"
    return str(value), "text"


def table_html(frame: pd.DataFrame, caption: str = "") -> str:
    """An HTML table with every header and cell escaped; readable headers
    (:func:`~magdash.formatting.column_label`), p-values in scientific notation
    below 0.001."""
    parts = ['<div class="table-wrap"><table>']
    if caption:
        parts.append(f"<caption>{html.escape(caption)}</caption>")
    parts.append("<thead><tr>")
    parts.extend(f"<th>{html.escape(column_label(column))}</th>" for column in frame.columns)
    parts.append("</tr></thead><tbody>")
    p_columns = [is_p_column(column) for column in frame.columns]
    for row in frame.itertuples(index=False):
        parts.append("<tr>")
        for value, is_p in zip(row, p_columns, strict=True):
            text, css = format_cell(value)
            if is_p and css == "" and isinstance(value, (float, np.floating)):
                text = format_p(value)
            attribute = f' class="{css}"' if css else ""
            parts.append(f"<td{attribute}>{html.escape(text)}</td>")
        parts.append("</tr>")
    parts.append("</tbody></table></div>")
    return "".join(parts)


def figure_html(chart: Any, caption: str, image_format: str = "svg") -> str:
    """A ``<figure>`` with the chart as a base64 data image (SVG or PNG)."""
    if image_format == "svg":
        payload = chart_to_svg(chart).encode("utf-8")
        mime = "image/svg+xml"
    elif image_format == "png":
        payload = chart_to_png(chart)
        mime = "image/png"
    else:
        raise AnalysisError(f"image format must be one of {', '.join(IMAGE_FORMATS)}, got {image_format!r}")
    source = f"data:{mime};base64,{base64.b64encode(payload).decode('ascii')}"
    alt_text = html.escape(caption or "chart")
    figcaption = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
    return f'<figure><img alt="{alt_text}" src="{source}">{figcaption}</figure>'


def manifest_json_for_html(manifest: Mapping[str, Any]) -> str:
    """The manifest as JSON safe inside a ``<script>`` block (no ``<``, ``>``, ``&`` verbatim)."""
    text = json.dumps(to_jsonable(dict(manifest)), indent=2, sort_keys=True, allow_nan=False)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def build_report_html(
    sections: Sequence[ReportSection],
    manifest: Mapping[str, Any],
    *,
    title: str = "magdash report",
    image_format: str = "svg",
    progress: StepCallback | None = None,
) -> str:
    """Render ``sections`` and the run ``manifest`` as one self-contained HTML document."""
    if image_format not in IMAGE_FORMATS:
        raise AnalysisError(f"image format must be one of {', '.join(IMAGE_FORMATS)}, got {image_format!r}")
    all_sections = [*sections, ReportSection("Run manifest")]
    body = [f"<h1>{html.escape(title)}</h1>"]
    generated = manifest.get("generated_at")
    if generated:
        body.append(f"<p>Generated {html.escape(str(generated))} by magdash.</p>")
    body.append("<nav><h2>Contents</h2><ol>")
    body.extend(
        f'<li><a href="#section-{index}">{html.escape(section.title)}</a></li>'
        for index, section in enumerate(all_sections, start=1)
    )
    body.append("</ol></nav>")
    for index, section in enumerate(sections, start=1):
        if progress is not None:
            progress(f"rendering {section.title}")
        body.append(f'<section id="section-{index}"><h2>{html.escape(section.title)}</h2>')
        body.extend(f"<p>{html.escape(paragraph)}</p>" for paragraph in section.text)
        for caption, chart in section.figures:
            body.append(figure_html(chart, caption, image_format))
        for caption, frame in section.tables:
            body.append(table_html(frame, caption))
        body.append("</section>")
    manifest_json = manifest_json_for_html(manifest)
    body.append(f'<section id="section-{len(all_sections)}"><h2>Run manifest</h2>')
    summary = manifest_summary(manifest)
    if len(summary):
        body.append(table_html(summary, "Models"))
    body.append(f"<pre>{html.escape(json.dumps(json.loads(manifest_json), indent=2, sort_keys=True))}</pre>")
    body.append(f'<script type="application/json" {REPORT_MARK}>{manifest_json}</script>')
    body.append("</section>")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>"
        + "\n".join(body)
        + "</body></html>\n"
    )


def manifest_summary(manifest: Mapping[str, Any]) -> pd.DataFrame:
    """One row per model of the manifest: the identity columns a reader checks first."""
    columns = ["name", "model_id", "source", "fingerprint", "dtype", "weights", "n_blocks", "hidden_size",
               "stimuli", "data_fingerprint", "is_random"]
    rows = [{c: model.get(c) for c in columns} for model in manifest.get("models", [])]
    return pd.DataFrame(rows, columns=columns)


def extract_manifest(document: str) -> dict[str, Any]:
    """Read the manifest back from a report produced by :func:`build_report_html`."""
    match = re.search(
        r'<script type="application/json" id="magdash-manifest">(.*?)</script>', document, re.S
    )
    if match is None:
        raise AnalysisError("this document holds no magdash manifest")
    return json.loads(match.group(1))


# -- the manifest --------------------------------------------------------------------------


def build_manifest(
    store,
    results: Mapping[str, Any],
    *,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Model identities, stimuli, analysis parameters and package versions of a run.

    ``results`` maps model names to their :class:`magdash.variability.analysis.AnalysisResult`; the
    identities come from ``store.model_record`` and the data fingerprints from the store.
    """
    models = []
    stimulus_sets: dict[str, Any] = {}
    parameters: dict[str, Any] = {}
    for name, result in results.items():
        record = store.model_record(name)
        models.append(
            {
                **dataclasses.asdict(record),
                "weights": weights_note(record.fingerprint, record.dtype),
                "stimuli": result.stimuli,
                "data_fingerprint": store.data_fingerprint(name, result.stimuli),
                "core_layers": list(result.core_layers),
                "analysis_from_cache": bool(result.from_cache),
            }
        )
        parameters[name] = dataclasses.asdict(result.params)
        if result.stimuli not in stimulus_sets:
            stimulus = store.stimulus_set(result.stimuli)
            stimulus_sets[result.stimuli] = {
                "carriers": list(stimulus.carriers),
                "magnitudes": list(stimulus.magnitudes),
                "content_hash": stimulus.content_hash,
            }
    distinct = {json.dumps(to_jsonable(p), sort_keys=True) for p in parameters.values()}
    manifest: dict[str, Any] = {
        "report_format": REPORT_FORMAT_VERSION,
        "generated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "store": str(getattr(store, "path", "")),
        "models": models,
        "stimuli": stimulus_sets,
        "analysis_parameters": (
            next(iter(parameters.values())) if len(distinct) == 1 else parameters
        ),
        "packages": package_versions(),
    }
    if extra:
        manifest.update(extra)
    return to_jsonable(manifest)


# -- the analysis report ---------------------------------------------------------------------

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
        fits = tables.fit_table(result, model=name)
        sections.append(
            ReportSection(
                f"Scaling: {name}",
                text=[
                    f"Stimuli {result.stimuli}; core layers {_span(result.core_layers)}. "
                    "Alpha is the OLS slope of log V on log n; bands are bootstrap percentile "
                    f"intervals ({result.params.n_boot} resamples, {result.params.bootstrap_layers} "
                    "layers). Layers without a fit are marked, never drawn as numbers."
                ],
                figures=[(f"Alpha by layer, {name}", charts.alpha_profile(fits))],
                tables=[(f"Per-layer fits, {name}", fits.loc[:, _FIT_TABLE_COLUMNS])],
            )
        )
    all_fits = tables.models_fit_table(results)
    weber_figures = [
        (
            f"Alpha of {tables.measure_label(primary)} against the Weber window",
            charts.weber_window(all_fits, window, measure=primary),
        )
    ]
    weber_tables = []
    for name, result in results.items():
        weber_figures.append((f"CV against n, {name}", charts.cv_chart(tables.cv_frame(result))))
        trend = result.cv_trend.assign(label=[result.layer_labels[i] for i in result.cv_trend["layer"]])
        weber_tables.append((f"Spearman correlation of CV(n) with n per layer, {name}", trend))
    sections.append(
        ReportSection(
            "Weber window and coefficient of variation",
            text=[
                f"Scalar variability (Weber's law) predicts alpha in [{window[0]:g}, {window[1]:g}] "
                "and a flat CV(n)."
            ],
            figures=weber_figures,
            tables=weber_tables,
        )
    )
    sections.append(
        ReportSection(
            "Noise models (AICc)",
            text=["Descriptive comparison of constant, scalar, log-scalar and power-law noise by AICc."],
            figures=[
                (f"Akaike weights by layer, {name}", charts.noise_model_chart(tables.noise_frame(r), measure=primary))
                for name, r in results.items()
            ],
            tables=[
                (
                    f"Core layers won by each noise model ({tables.measure_label(primary)})",
                    tables.noise_summary(results, primary),
                )
            ],
        )
    )
    sections.append(
        ReportSection(
            "E3 boundary sensitivity",
            text=[f"Core-layer alphas refitted without the boundary magnitudes {_numbers(first.params.boundary)}."],
            figures=[(f"E3, {name}", charts.e3_chart(tables.e3_frame(r))) for name, r in results.items()],
            tables=[("E3 summary", tables.e3_summary(results))],
        )
    )
    sections.append(
        ReportSection(
            "E4 axis specificity",
            text=["Scaling of the variance along the magnitude axis (PC1) and off it, per core layer."],
            figures=[
                (
                    f"E4, {name}",
                    charts.e4_chart(
                        tables.e4_frame(r),
                        subtitle=f"ratio {format_number(r.e4.ratio)}, Wilcoxon p = {format_number(r.e4.wilcoxon_p)}",
                    ),
                )
                for name, r in results.items()
            ],
            tables=[("E4 summary", tables.e4_summary(results))],
        )
    )
    sections.append(
        ReportSection(
            "Geometry (RSA and PC1)",
            text=["Spearman correlation of the centroid RDM with the log-ratio and linear magnitude models."],
            figures=[(f"RSA by layer, {name}", charts.rsa_by_layer(tables.rsa_frame(r))) for name, r in results.items()],
            tables=[(f"Geometry per layer, {name}", r.geometry) for name, r in results.items()],
        )
    )
    for comparison in comparisons:
        sections.append(_comparison_section(comparison, primary))
    return sections


def _verdict_section(results: Mapping[str, Any], measures: Sequence[str]) -> ReportSection:
    first = next(iter(results.values()))
    low, high = first.params.window
    return ReportSection(
        "Verdicts (H1-H4)",
        text=[
            "Over each model's core layers: H1 alpha > 0, H2 alpha in the Weber window "
            f"[{low:g}, {high:g}], H3 alpha < 1 (each needs a majority of core layers), H4 alpha "
            f"changes with depth (Spearman over the layers in h4_layers). The programme row supports "
            f"a hypothesis when a majority of models do. Statistics follow {first.params.rules.description}."
        ],
        tables=[
            (f"H1-H4 for {tables.measure_label(measure)}", tables.verdict_table(results, measure))
            for measure in measures
        ],
    )


def _comparison_section(comparison: Any, measure: str) -> ReportSection:
    frame = tables.comparison_frame(comparison, measure)
    item = comparison.measures[measure]
    subtitle = (
        f"Wilcoxon over core layers: p = {format_number(item.wilcoxon_p)} ({item.n_pairs} pairs); "
        f"mean delta {format_number(item.mean_delta)}"
    )
    depth = "gamma" if not frame["layer_a"].equals(frame["layer_b"]) else "layer"
    return ReportSection(
        f"Comparison: {comparison.model_a} vs {comparison.model_b}",
        text=[
            "Layerwise alpha differences (model A minus model B) with joint-bootstrap CIs; "
            "layers paired by depth fraction when the depths differ."
        ],
        figures=[
            (
                f"{comparison.model_a} vs {comparison.model_b}",
                charts.compare_profiles(frame, x=depth, subtitle=subtitle),
            )
        ],
        tables=[("Comparison summary", tables.comparison_summary(comparison))],
    )


def controls_section(result: Any, measure: str) -> ReportSection:
    """The robustness controls of one model (:class:`magdash.controls.ControlsResult`) for ``measure``."""
    label = tables.measure_label(measure)
    figures = [
        (f"Leave one carrier out, {label}", charts.loo_chart(tables.loo_frame(result, measure))),
        ("ICC(3,k) of the carriers' RDMs", charts.icc_chart(result.tables.icc)),
        (f"Parametric and permutation p, {label}",
         charts.permutation_chart(tables.permutation_frame(result, measure), level=result.params.significance)),
    ]
    comparisons = [*result.variants.values(), *([result.random] if result.random is not None else [])]
    for comparison in comparisons:
        frame = tables.comparison_frame(comparison, measure)
        figures.append((f"{comparison.model_a} vs {comparison.model_b}", charts.compare_profiles(frame)))
    return ReportSection(
        f"Robustness controls: {result.model}, {label}",
        text=[
            f"Stimuli {result.stimuli}; core layers {_span(result.core_layers)}; {result.tables.n_perm:,} "
            "permutations of the magnitude labels. Each control says what would count as a problem "
            "(docs/science.md, 'Robustness controls')."
        ],
        figures=figures,
        tables=[
            (f"Verdicts over the core band, {label}", tables.controls_verdicts(result, measure)),
            (f"Leave one carrier out, {label}", result.loo_summary(measure)),
            ("Variants and the @random control", tables.variant_frame(result, measure)),
            (f"Permutation and parametric p per layer, {label}",
             result.tables.permutation[result.tables.permutation["measure"] == measure]),
            ("ICC(3,k) per layer", result.tables.icc),
        ],
    )


def design_section(result: Any) -> ReportSection:
    """The study-design simulator's curves (:class:`magdash.controls.design.DesignResult`)."""
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
            ("H1 power", charts.power_curve(tables.h1_power_frame(result), target=params.power_target)),
            ("E6 power", charts.power_curve(tables.e6_power_frame(result), x="delta",
                                            x_title="true delta alpha", target=params.power_target)),
            ("CI half-width of alpha", charts.ci_width_chart(tables.ci_width_frame(result))),
        ],
        tables=[
            ("Summary at the design's alpha and delta", pd.DataFrame([summary])),
            ("H1 power curve", result.h1),
            ("E6 power curve", result.e6),
            ("CI half-width", result.ci_width),
        ],
    )


def _numbers(values: Sequence[float]) -> str:
    return ", ".join(f"{v:g}" for v in values)


def _span(layers: Sequence[int]) -> str:
    layers = list(layers)
    if layers and layers == list(range(layers[0], layers[-1] + 1)):
        return f"{layers[0]}-{layers[-1]}"
    return ", ".join(map(str, layers))


def build_report(
    store,
    models: Sequence[str],
    stimuli: str | None = None,
    params: Any = None,
    *,
    pairs: Sequence[tuple[str, str]] | None = None,
    extra_sections: Sequence[ReportSection] = (),
    image_format: str = "svg",
    title: str = "magdash report",
    progress: StepCallback | None = None,
) -> str:
    """The full HTML report for ``models`` in ``store`` (analyses cached in the store).

    ``stimuli`` None uses each model's default set. ``pairs`` are the model comparisons to
    include; by default the first model against each other one (on their shared stimuli; a
    pair without shared stimuli gets a note instead). ``extra_sections`` (e.g. frequency or
    depth diagnostics built by the caller) go before the manifest.
    """
    from magdash.runs.analysis_runs import analyze, compare
    from magdash.variability.analysis import AnalysisParams

    if not models:
        raise AnalysisError("choose at least one model for the report")
    params = params or AnalysisParams()
    results = {}
    for name in dict.fromkeys(models):
        if progress is not None:
            progress(f"analysing {name}")
        results[name] = analyze(store, name, stimuli, params)
    if pairs is None:
        names = list(results)
        pairs = [(names[0], other) for other in names[1:]]
    comparisons = []
    notes = []
    for model_a, model_b in pairs:
        if progress is not None:
            progress(f"comparing {model_a} with {model_b}")
        try:
            comparisons.append(compare(store, model_a, model_b, stimuli, params))
        except AnalysisError as error:
            notes.append(f"{model_a} vs {model_b} not compared: {error}")
    sections = analysis_sections(results, comparisons)
    if notes:
        sections.append(ReportSection("Comparisons not made", text=notes))
    sections.extend(extra_sections)
    manifest = build_manifest(store, results)
    return build_report_html(
        sections, manifest, title=title, image_format=image_format, progress=progress
    )
