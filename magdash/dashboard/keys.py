"""Cheap, hashable names of what a figure is drawn from, so the page caches key on them.

Each key carries the store path, the names and parameters, and the data tokens of the
vectors behind it (:meth:`~magdash.dashboard.inventory.StoreInventory.data_token`), so a key
changes exactly when its result can.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from magdash.dashboard.inventory import StoreInventory
from magdash.dashboard.view import ViewState, analysis_params, depth_params
from magdash.depth_statistics.depth_params import DepthParams
from magdash.errors import MagdashError
from magdash.names import control_name
from magdash.store import ModelRecord
from magdash.variability.analysis_params import AnalysisParams


@dataclass(frozen=True)
class AnalysisKey:
    """Identifies one cached analysis: store, model, stimuli, parameters and data token.

    Cheap to hash, so the Streamlit caches key on it instead of on results.
    """

    store: str
    model: str
    stimuli: str
    params: AnalysisParams
    token: str


@dataclass(frozen=True)
class LayerKey:
    """Identifies one layer's stored vectors."""

    store: str
    model: str
    stimuli: str
    layer: int
    token: str


def analysis_key(view: ViewState, inventory: StoreInventory, model: str | None = None) -> AnalysisKey:
    """The analysis of ``model`` (default: the view's) with the view's parameters.

    Another model keeps its own default core band unless it has the view model's depth.
    """
    name = model or view.model
    if name is None or view.stimuli is None:
        raise MagdashError("no model is selected: extract one on the Extract page first")
    record = inventory.record(name)
    own = view
    if (name != view.model and view.model is not None and view.core is not None
            and record.n_blocks != inventory.record(view.model).n_blocks):
        own = dataclasses.replace(view, core=None)
    return AnalysisKey(view.store, name, view.stimuli, analysis_params(own), inventory.data_token(name, view.stimuli))


def layer_key(view: ViewState, inventory: StoreInventory, layer: int) -> LayerKey:
    if view.model is None or view.stimuli is None:
        raise MagdashError("no model is selected: extract one on the Extract page first")
    return LayerKey(view.store, view.model, view.stimuli, int(layer), inventory.data_token(view.model, view.stimuli))


def depth_axis(records: Sequence[ModelRecord]) -> str:
    """Plot against layer index when all models have the same depth, else against gamma = l / L."""
    return "layer" if len({r.n_blocks for r in records}) <= 1 else "gamma"


@dataclass(frozen=True)
class ComparisonKey:
    """Identifies one cached comparison of model A (with its core band) against model B."""

    store: str
    model_a: str
    model_b: str
    stimuli: str
    params: AnalysisParams
    token_a: str
    token_b: str


def comparison_key(view: ViewState, inventory: StoreInventory) -> ComparisonKey:
    """The view's model against its second model (``view.other``) on the view's stimuli."""
    if view.model is None or view.other is None or view.stimuli is None:
        raise MagdashError("a comparison needs two models with the same stimulus set: extract a second one")
    return ComparisonKey(
        view.store, view.model, view.other, view.stimuli, analysis_params(view),
        inventory.data_token(view.model, view.stimuli), inventory.data_token(view.other, view.stimuli),
    )


@dataclass(frozen=True)
class SourceKey:
    """Identifies a frequency source; ``stamp`` changes when the store is written."""

    store: str
    name: str
    stamp: tuple


@dataclass(frozen=True)
class E5Key:
    """Identifies the E5 of one cached analysis against one frequency source."""

    analysis: AnalysisKey
    source: SourceKey
    measure: str
    missing: str


@dataclass(frozen=True)
class DepthKey:
    """Identifies the depth diagnostics of one model's stored number-token vectors."""

    store: str
    model: str
    stimuli: str
    token: str
    params: DepthParams


TRAINED_SERIES = "trained"
CONTROL_SERIES = "random control"


def control_analysis_key(view: ViewState, inventory: StoreInventory) -> AnalysisKey | None:
    """The analysis of the view's model's ``@random`` control where it is stored on the view's
    stimuli (None where it is not, or the model is a control itself)."""
    if view.model is None or view.stimuli is None:
        return None
    control = control_name(view.model)
    if control == view.model or control not in inventory.models_sharing(view.stimuli):
        return None
    return analysis_key(view, inventory, control)


def depth_keys(view: ViewState, inventory: StoreInventory) -> dict[str, DepthKey]:
    """The view's model ("trained") and, when stored on the same stimuli, its @random control."""
    if view.model is None or view.stimuli is None:
        raise MagdashError("no model is selected: extract one on the Extract page first")

    stimuli = view.stimuli  # narrowed to a str here, which the closure below keeps

    def key(name: str) -> DepthKey:
        return DepthKey(view.store, name, stimuli, inventory.data_token(name, stimuli), depth_params(view))

    keys = {TRAINED_SERIES: key(view.model)}
    control = control_name(view.model)
    if control != view.model and control in inventory.models_sharing(view.stimuli):
        keys[CONTROL_SERIES] = key(control)
    return keys


def adjusted_depth_keys(keys: dict[str, DepthKey], massive: str) -> dict[str, DepthKey]:
    """The same series in another view of the vectors (``massive``: drop or standardise)."""
    return {series: dataclasses.replace(key, params=dataclasses.replace(key.params, massive=massive))
            for series, key in keys.items()}


def dropped_analysis_key(key: AnalysisKey) -> AnalysisKey:
    """The same analysis with every layer's massive-activation dimensions dropped."""
    return dataclasses.replace(key, params=dataclasses.replace(key.params, massive="drop"))
