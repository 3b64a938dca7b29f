"""The Probes page under AppTest: computed through the run layer (cached in the store, rows in its
probe tables), the read-out, scheme and layer widgets rerun cleanly, the @random control beside the
model, a message and a link when the control is not stored, the report button."""

from __future__ import annotations

import json

import numpy as np
import pytest

from magdash.probes.probe_params import ProbeParams
from magdash.runs.probe_runs import probe
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES
from magdash.store import Store
from tests.support import assert_page_draws_everything, chart_specs, labels, open_app, shown, texts, widget

PAGE = "pages/probes.py"
BOOT = {"boot": "50"}


def planted(seed: int, code: float) -> np.ndarray:
    """The paper's 26 x 5 design, 4 layers of d = 8: log n along one direction, stronger by layer."""
    rng = np.random.default_rng(seed)
    shape = (len(PAPER_MAGNITUDES), len(PAPER_CARRIERS), 4, 8)
    log_n = np.log(np.asarray(PAPER_MAGNITUDES, dtype=float))[:, None, None, None]
    return (log_n * code * np.arange(4)[None, None, :, None] * rng.normal(size=8) + rng.normal(size=shape)).astype(
        np.float32)


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("probes-page") / "store.duckdb"
    store = Store(path)
    store.import_arrays("planted", planted(0, 2.0), PAPER_MAGNITUDES, carriers=PAPER_CARRIERS, stimuli="paper")
    store.import_arrays("planted@random", planted(1, 0.0), PAPER_MAGNITUDES, carriers=PAPER_CARRIERS, stimuli="paper")
    store.import_arrays("alone", planted(2, 1.0), PAPER_MAGNITUDES, carriers=PAPER_CARRIERS, stimuli="paper")
    return str(path)


@pytest.mark.slow
def test_the_page_probes_the_model_and_its_control_and_its_widgets_rerun(stored, monkeypatch):
    at = open_app(stored, monkeypatch, query={**BOOT, "model": "planted"}, page=PAGE)
    assert_page_draws_everything(at, PAGE)
    shown_text = texts(at)
    assert "planted: a linear probe of log n decodes unseen magnitudes best at layer 3 (layer 3)" in shown_text
    assert "digit count gives a held-out-magnitude R² of" in shown_text and "constant-error read-out" in shown_text
    store = Store(stored)
    # the page's results are the run layer's, cached in the store with their rows
    cached = probe(store, "planted", "paper", ProbeParams(n_boot=50))
    assert cached.from_cache
    assert set(store.metric_table("probes")["model"]) == {"planted", "planted@random"}
    specs = json.dumps(chart_specs(at))
    assert "@random control" in specs and "planted@random" in specs
    widget(at.radio, "Read-out").set_value("linear").run()
    assert not at.exception and not at.error and "probe of n" in json.dumps(chart_specs(at)[0]["title"])
    widget(at.radio, "R² on").set_value("magnitude").run()
    assert not at.exception and "held-out magnitudes" in json.dumps(chart_specs(at)[0]["title"])
    widget(at.select_slider, "Layer").set_value("1 · layer 1").run()
    assert not at.exception and "layer 1 (layer 1) of planted" in json.dumps(chart_specs(at)[2]["title"])
    assert "Probes report (HTML)" in labels(at.get("download_button"))


def test_without_a_stored_control_the_page_says_how_to_get_one(stored, monkeypatch):
    at = open_app(stored, monkeypatch, query={**BOOT, "model": "alone"}, page=PAGE)
    assert not at.exception and not at.error
    assert any("No random-weight control of alone" in shown(info) for info in at.info)
    assert len(at.get("vega_lite_chart")) == 5
    assert "@random control" not in json.dumps(chart_specs(at)[0])
