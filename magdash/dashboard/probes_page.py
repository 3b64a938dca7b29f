"""The Probes page's logic, free of Streamlit: the probes' parameters of a view and the keys of the
cached probes the page shows (the view's model and, when stored on the same stimuli, its ``@random``
control), as the Depth page's keys are made (:func:`magdash.dashboard.keys.depth_keys`).

The figures are :mod:`magdash.presentation.probe_figures`'; the results come from
:func:`magdash.runs.probe_runs.probe`, cached in the store, so the CLI's ``magdash probe`` with the
same parameters and the page share one result.
"""

from __future__ import annotations

from dataclasses import dataclass

from magdash.dashboard.inventory import StoreInventory
from magdash.dashboard.keys import CONTROL_SERIES, TRAINED_SERIES
from magdash.dashboard.view import ViewState
from magdash.errors import MagdashError
from magdash.names import control_name
from magdash.probes.probe_params import ProbeParams


@dataclass(frozen=True)
class ProbeKey:
    """Identifies the probes of one model's stored vectors: store, names, data token, parameters."""

    store: str
    model: str
    stimuli: str
    token: str
    params: ProbeParams


def probe_params(view: ViewState) -> ProbeParams:
    """The probes' parameters of a view: the sidebar's bootstrap size, the rest as in ``magdash probe``."""
    return ProbeParams(n_boot=view.n_boot)


def probe_keys(view: ViewState, inventory: StoreInventory) -> dict[str, ProbeKey]:
    """The view's model ("trained") and, when stored on the same stimuli, its @random control."""
    if view.model is None or view.stimuli is None:
        raise MagdashError("no model is selected: extract one on the Extract page first")
    params = probe_params(view)
    stimuli = view.stimuli

    def key(name: str) -> ProbeKey:
        return ProbeKey(view.store, name, stimuli, inventory.data_token(name, stimuli), params)

    keys = {TRAINED_SERIES: key(view.model)}
    control = control_name(view.model)
    if control != view.model and control in inventory.models_sharing(view.stimuli):
        keys[CONTROL_SERIES] = key(control)
    return keys
