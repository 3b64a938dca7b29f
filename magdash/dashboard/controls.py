"""The Controls and Design pages' logic, free of Streamlit: keys, choices and figure builders.

Keys name what a cached result is computed from (store, model, stimuli, parameters, data tokens),
so the page caches key on them; builders take the results (:class:`magdash.controls.ControlsResult`,
:class:`magdash.controls.design.DesignResult`) and return charts, tables, sentences and reports.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import altair as alt
import pandas as pd

from magdash.controls.design import DesignParams, DesignResult
from magdash.controls.robustness import ControlsParams, ControlsResult
from magdash.dashboard.inventory import StoreInventory
from magdash.dashboard.jobs import ExtractionRequest
from magdash.dashboard.view import ViewState, analysis_params, core_band
from magdash.errors import MagdashError
from magdash.formatting import format_number, format_p
from magdash.names import control_name, variant_name
from magdash.presentation import charts, report, tables
from magdash.runs.controls_runs import is_variant
from magdash.sources import spec_for_source
from magdash.store import ModelRecord, Store
from magdash.variability.analysis import AnalysisParams

# -- keys ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ControlsKey:
    """Identifies one model's controls: parameters (variants included) and every data token."""

    store: str
    model: str
    stimuli: str
    params: ControlsParams
    tokens: tuple[str, ...]


@dataclass(frozen=True)
class DesignKey:
    """Identifies one design simulation calibrated on a stored model."""

    store: str
    model: str
    stimuli: str
    analysis: AnalysisParams
    params: DesignParams
    token: str


def _require_model(view: ViewState) -> None:
    if view.model is None or view.stimuli is None:
        raise MagdashError("no model is selected: extract one on the Extract page first")


def variant_choices(view: ViewState, inventory: StoreInventory) -> list[str]:
    """Stored models on the view's stimuli that could be the view model extracted another way."""
    _require_model(view)
    record = inventory.record(view.model)
    return [
        name for name in inventory.models_sharing(view.stimuli)
        if is_variant(record, inventory.record(name))
    ]


def controls_key(view: ViewState, inventory: StoreInventory, variants: tuple[str, ...] = ()) -> ControlsKey:
    """The view model's controls against ``variants``, with the view's analysis parameters."""
    _require_model(view)
    params = ControlsParams(analysis=analysis_params(view), variants=tuple(variants))
    names = [view.model, *params.variants, control_name(view.model)]
    tokens = tuple(
        inventory.data_token(name, view.stimuli) if name in inventory.models_sharing(view.stimuli) else ""
        for name in names
    )
    return ControlsKey(view.store, view.model, view.stimuli, params, tokens)


def design_key(view: ViewState, inventory: StoreInventory, params: DesignParams) -> DesignKey:
    """A design simulated with noise calibrated on the view model (its core band and conventions)."""
    _require_model(view)
    return DesignKey(view.store, view.model, view.stimuli, analysis_params(view), params,
                     inventory.data_token(view.model, view.stimuli))


def default_design(record: ModelRecord, view: ViewState) -> DesignParams:
    """The design the page starts from: the defaults of :class:`DesignParams`, with as many core
    layers as the view model's band."""
    first, last = core_band(view, record)
    return DesignParams(n_layers=max(2, last - first + 1))


# -- extracting a variant on demand ------------------------------------------------------------


def variant_request(store: Store, record: ModelRecord, stimuli: str, *, dtype: str, position: str) -> ExtractionRequest:
    """The extraction of the view model's weights at another dtype or token position."""
    spec = None if record.is_random else spec_for_source(record.source)
    if spec is None:
        raise MagdashError(
            f"the weights of {record.name!r} are not at hand here ({record.source}): extract the variant where "
            "they are, then import or copy its store"
        )
    if dtype == record.dtype and position == record.position:
        raise MagdashError(f"{record.name!r} is already stored with dtype {dtype} and position {position}: change one")
    name = variant_name(record.name, dtype=dtype, position=position)
    return ExtractionRequest(spec=spec, stimuli=store.stimulus_set(stimuli), name=name, dtype=dtype, position=position)


# -- controls: figures and tables --------------------------------------------------------------


def controls_sentence(result: ControlsResult, measure: str) -> str:
    verdicts = result.verdicts(measure)
    problems = [v.control for v in verdicts if v.problem]
    judged = [v for v in verdicts if v.problem is not None]
    if not problems:
        return (f"{result.model}: no control of {tables.measure_label(measure)} flags a problem "
                f"({len(judged)} of {len(verdicts)} judged).")
    return f"{result.model}: {len(problems)} control(s) of {tables.measure_label(measure)} flag a problem: {', '.join(problems)}."


def controls_verdicts(result: ControlsResult, measure: str) -> pd.DataFrame:
    return tables.controls_verdicts(result, measure)


def loo_figure(result: ControlsResult, measure: str) -> alt.LayerChart:
    return charts.loo_chart(tables.loo_frame(result, measure), subtitle=tables.measure_label(measure), width="container")


def loo_table(result: ControlsResult, measure: str) -> pd.DataFrame:
    return result.loo_summary(measure)


def icc_figure(result: ControlsResult) -> alt.LayerChart:
    return charts.icc_chart(result.tables.icc, width="container")


def icc_table(result: ControlsResult) -> pd.DataFrame:
    return result.tables.icc


def permutation_figure(result: ControlsResult, measure: str) -> alt.LayerChart:
    subtitle = f"{tables.measure_label(measure)}; {result.tables.n_perm:,} permutations of the magnitude labels"
    return charts.permutation_chart(tables.permutation_frame(result, measure), level=result.params.significance,
                                    subtitle=subtitle, width="container")


def permutation_table(result: ControlsResult, measure: str) -> pd.DataFrame:
    table = result.tables.permutation
    return table[table["measure"] == measure].drop(columns=["measure"]).reset_index(drop=True)


def compared(result: ControlsResult) -> list[str]:
    """The variants and, when stored, the @random control, in the order the page shows them."""
    return [*result.variants, *([result.random_name] if result.random is not None else [])]


def variant_figure(result: ControlsResult, name: str, measure: str) -> alt.VConcatChart:
    comparison = result.random if name == result.random_name else result.variants[name]
    item = comparison.measures[measure]
    subtitle = (f"Wilcoxon over core layers: p = {format_p(item.wilcoxon_p)} ({item.n_pairs} pairs); "
                f"mean delta {format_number(item.mean_delta)}")
    return charts.compare_profiles(tables.comparison_frame(comparison, measure), subtitle=subtitle)


def variant_table(result: ControlsResult, measure: str) -> pd.DataFrame:
    return tables.variant_frame(result, measure)


def controls_report(store: Store, result: ControlsResult, measures: Sequence[str]) -> str:
    """The HTML report of the controls: a section per measure and the manifest."""
    sections = [report.controls_section(result, measure) for measure in measures]
    manifest = report.build_manifest(store, {result.model: result.analysis},
                                     extra={"controls_parameters": dataclasses.asdict(result.params)})
    return report.build_report_html(sections, manifest, title=f"magdash controls: {result.model}")


SESSION_KEYS = ("magdash_controls_key", "magdash_design_key")
"""Where the Controls and Design pages leave the key of what they last showed, so the sidebar's
report can include it."""


def session_key(view: ViewState, key: ControlsKey | DesignKey | None) -> ControlsKey | DesignKey | None:
    """A key the Controls or Design page left in the session, if it is of the view's store, model
    and stimuli (a key left from another store or set is never resolved for the report)."""
    if key is None or (key.store, key.model, key.stimuli) != (view.store, view.model, view.stimuli):
        return None
    return key


def session_sections(view: ViewState, controls: ControlsResult | None, design: DesignResult | None,
                     design_model: str | None = None) -> list[report.ReportSection]:
    """The report sections of the controls and the design last shown, when they belong to the
    view's model and stimuli."""
    sections = []
    if controls is not None and (controls.model, controls.stimuli) == (view.model, view.stimuli):
        sections.append(report.controls_section(controls, view.measure))
    if design is not None and design_model == view.model:
        sections.append(report.design_section(design))
    return sections


# -- design: figures and tables ------------------------------------------------------------------


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


def h1_figure(result: DesignResult) -> alt.LayerChart:
    return charts.power_curve(tables.h1_power_frame(result), target=result.params.power_target,
                              title="H1: power to detect alpha > 0 (t-test over the core layers)",
                              subtitle=f"{result.params.n_studies:,} simulated studies per point", width="container")


def e6_figure(result: DesignResult) -> alt.LayerChart:
    return charts.power_curve(tables.e6_power_frame(result), x="delta", x_title="true delta alpha",
                              target=result.params.power_target,
                              title="E6: power to detect a difference between two models",
                              subtitle=f"joint bootstrap with {result.params.n_boot} resamples per study",
                              width="container")


def ci_width_figure(result: DesignResult) -> alt.LayerChart:
    return charts.ci_width_chart(tables.ci_width_frame(result), width="container")


def design_summary(result: DesignResult) -> pd.DataFrame:
    return pd.DataFrame([{"quantity": key, "value": value} for key, value in result.summary().items()])


def h1_table(result: DesignResult) -> pd.DataFrame:
    return result.h1


def e6_table(result: DesignResult) -> pd.DataFrame:
    return result.e6


def ci_width_table(result: DesignResult) -> pd.DataFrame:
    return result.ci_width


def design_report(store: Store, result: DesignResult, model: str, analysis) -> str:
    """The HTML report of a design simulation and the model that calibrated it."""
    manifest = report.build_manifest(store, {model: analysis},
                                     extra={"design_parameters": dataclasses.asdict(result.params),
                                            "calibration": dataclasses.asdict(result.calibration)})
    return report.build_report_html([report.design_section(result)], manifest, title="magdash study design")
