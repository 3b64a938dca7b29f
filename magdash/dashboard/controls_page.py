"""The Controls and Design pages' logic, free of Streamlit: keys, variant choices, the extraction
of a variant on demand (one click for every token position, or for the stimuli in other number
formats), and what the sidebar's report takes from these pages.

Keys name what a cached result is computed from (store, model, stimuli, parameters, data tokens),
so the page caches key on them; the figures are :mod:`magdash.presentation.controls_figures`'.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from magdash.controls_statistics.controls import ControlsResult
from magdash.controls_statistics.controls_params import ControlsParams, DesignParams
from magdash.controls_statistics.design import DesignResult
from magdash.dashboard.inventory import StoreInventory
from magdash.dashboard.jobs import ExtractionRequest, Job, extraction_job
from magdash.dashboard.view import ViewState, analysis_params, core_band
from magdash.errors import MagdashError
from magdash.names import control_name, variant_name
from magdash.presentation.report import ReportSection, sections
from magdash.runs.controls_runs import is_variant
from magdash.sources import spec_for_source
from magdash.stimuli import NUMBER_FORMAT_NAMES, POSITIONS, StimulusSet, is_paper_content, paper_set_name
from magdash.store import ModelRecord, Store
from magdash.variability.analysis_params import AnalysisParams

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


def _require_model(view: ViewState) -> tuple[str, str]:
    """The view's (model, stimuli), which the controls need."""
    if view.model is None or view.stimuli is None:
        raise MagdashError("no model is selected: extract one on the Extract page first")
    return view.model, view.stimuli


def variant_choices(view: ViewState, inventory: StoreInventory) -> list[str]:
    """Stored models on the view's stimuli that could be the view model extracted another way."""
    model, stimuli = _require_model(view)
    record = inventory.record(model)
    return [
        name for name in inventory.models_sharing(stimuli)
        if is_variant(record, inventory.record(name))
    ]


def format_variant_sets(store: Store, view: ViewState, inventory: StoreInventory) -> dict[str, str]:
    """Number format -> the stored set holding the view's carriers and magnitudes in that format,
    for every other format the view model is completely stored on."""
    model, stimuli = _require_model(view)
    own = store.number_formats().get(stimuli)
    found = {}
    for number_format in NUMBER_FORMAT_NAMES:
        if number_format == own:
            continue
        other = store.in_number_format(stimuli, number_format)
        if other is not None and other in inventory.complete_sets.get(model, []):
            found[number_format] = other
    return found


def controls_key(view: ViewState, inventory: StoreInventory, variants: tuple[str, ...] = (),
                 format_sets: Mapping[str, str] | None = None) -> ControlsKey:
    """The view model's controls against ``variants`` and, for each format of ``format_sets``
    (:func:`format_variant_sets`), the view model on that set, with the view's analysis parameters."""
    model, stimuli = _require_model(view)
    format_sets = dict(format_sets or {})
    params = ControlsParams(analysis=analysis_params(view), variants=tuple(variants), formats=tuple(format_sets))
    names = [model, *params.variants, control_name(model)]
    tokens = tuple(
        inventory.data_token(name, stimuli) if name in inventory.models_sharing(stimuli) else ""
        for name in names
    ) + tuple(inventory.data_token(model, other) for other in format_sets.values())
    return ControlsKey(view.store, model, stimuli, params, tokens)


def design_key(view: ViewState, inventory: StoreInventory, params: DesignParams) -> DesignKey:
    """A design simulated with noise calibrated on the view model (its core band and conventions)."""
    model, stimuli = _require_model(view)
    return DesignKey(view.store, model, stimuli, analysis_params(view), params,
                     inventory.data_token(model, stimuli))


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


def position_requests(store: Store, record: ModelRecord, stimuli: str, inventory: StoreInventory) -> list[ExtractionRequest]:
    """The extractions that make every token position (last, first, mean) of the view model's
    weights and dtype stored on ``stimuli``: one per position not stored yet (none when all are)."""
    requests = []
    for position in POSITIONS:
        name = variant_name(record.name, dtype=record.dtype, position=position)
        if position == record.position or stimuli in inventory.complete_sets.get(name, []):
            continue
        requests.append(variant_request(store, record, stimuli, dtype=record.dtype, position=position))
    return requests


def format_requests(store: Store, record: ModelRecord, stimuli: str, formats: Sequence[str]) -> list[ExtractionRequest]:
    """The extractions of the view model (its weights, dtype and position, its name) on the carriers
    and magnitudes of ``stimuli`` written in each of ``formats``: the paper's set becomes
    ``paper-<format>``, another set ``<set>-<format>`` (or the stored set of those sentences)."""
    spec = None if record.is_random else spec_for_source(record.source)
    if spec is None:
        raise MagdashError(
            f"the weights of {record.name!r} are not at hand here ({record.source}): extract the other formats where "
            "they are, then import or copy its store"
        )
    base = store.stimulus_set(stimuli)
    requests = []
    for number_format in formats:
        if number_format == base.number_format:
            continue
        paper = is_paper_content(base)
        name = paper_set_name(number_format) if paper else f"{stimuli}-{number_format}"
        other = store.known_as(StimulusSet(name, base.carriers, base.magnitudes, number_format))
        requests.append(ExtractionRequest(spec=spec, stimuli=other, name=record.name, dtype=record.dtype,
                                          position=record.position))
    return requests


def extractions_job(store: Store, requests: Sequence[ExtractionRequest], label: str) -> Job:
    """The extractions of ``requests`` one after the other as one job (a variant the store holds
    already costs nothing: :func:`magdash.extraction.extract` skips it)."""
    if not requests:
        raise MagdashError("nothing to extract: every variant asked for is stored")
    return extraction_job(store, *requests, label=label)


# -- the sidebar's report --------------------------------------------------------------------


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
                     design_model: str | None = None) -> list[ReportSection]:
    """The report sections of the controls and the design last shown, when they belong to the
    view's model and stimuli."""
    shown = []
    if controls is not None and (controls.model, controls.stimuli) == (view.model, view.stimuli):
        shown.append(sections.controls_section(controls, view.measure))
    if design is not None and design_model == view.model:
        shown.append(sections.design_section(design))
    return shown
