"""The Steering page under AppTest. Before any steering is cached it says what to run first: on an empty
path (extract, behave, steer), on a store of vectors without trials (``magdash behave``), and on a store
with both (the ``magdash steer`` command and its cost); it draws no chart and never starts a run. On a
tiny decoder's store with a cached steering run: the figures its declaration lists (the causal profile
beside the geometry and the probe, the dose-response), the run's sentence and its caveats."""

from __future__ import annotations

import json

import numpy as np
import pytest

import magdash as md
from magdash.extract_params import ExtractParams
from magdash.presentation import steering_figures
from magdash.presentation.page_figures import When, page_figures
from magdash.steering.steer_params import SteerParams
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES
from magdash.store import Store
from tests.support import labels, open_app, shown, texts

PAGE = "pages/steering.py"


def _says_what_to_run(at) -> str:
    infos = [shown(info) for info in at.info if "Nothing to show yet" in shown(info)]
    assert len(infos) == 1
    assert not at.get("vega_lite_chart") and not at.error, [shown(error) for error in at.error]
    assert [element.proto.page for element in at.main.get("page_link")] == ["behaviour", "extract"]
    return infos[0]


def test_on_a_path_without_a_store_the_page_says_what_to_run(tmp_path, monkeypatch):
    at = open_app(str(tmp_path / "empty.duckdb"), monkeypatch, page=PAGE)
    said = _says_what_to_run(at)
    assert "There is no store at" in said and "magdash behave --model MODEL" in said and "magdash steer" in said
    assert any(title.value.startswith("Steering:") for title in at.title)
    assert not (tmp_path / "empty.duckdb").exists()  # browsing never creates a store


def test_a_store_of_vectors_without_trials_says_to_run_the_comparisons_first(tmp_path, monkeypatch):
    store = Store(tmp_path / "vectors.duckdb")
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(PAPER_MAGNITUDES), len(PAPER_CARRIERS), 4, 8)).astype(np.float32)
    store.import_arrays("planted", vectors, PAPER_MAGNITUDES, carriers=PAPER_CARRIERS, stimuli="paper")
    at = open_app(str(store.path), monkeypatch, page=PAGE)
    assert "holds none: run them first" in _says_what_to_run(at)
    assert [block.value for block in at.code] == [f"magdash behave --model MODEL --store {store.path}"]


MAGNITUDES = [2, 3, 5, 8, 13, 21, 34, 55]
CARRIERS = ["a {n}", "b {n}", "c {n}"]
N_BOOT = 20


@pytest.fixture(scope="module")
def with_trials(tmp_path_factory):
    """A tiny decoder's comparison trials and planted vectors (log n along one direction), not steered yet."""
    from magdash.trial_extraction import run_trials
    from tests.runs.test_steer_runs import planted_vectors
    from tests.test_trial_extraction import build_comparison_model, design

    folder = tmp_path_factory.mktemp("steering")
    model = build_comparison_model(folder / "cmp", chat=False)
    store = Store(folder / "store.duckdb")
    run_trials(str(model), design(references=(10,), ratios=(1.5, 2.0), pairs=2), store, ExtractParams(device="cpu"),
               name="cmp")
    store.put("cmp", planted_vectors(32, 3), MAGNITUDES, carriers=CARRIERS)
    return store


def test_a_store_with_trials_and_vectors_shows_the_steer_command_and_starts_nothing(with_trials, monkeypatch, tmp_path):
    at = open_app(str(with_trials.path), monkeypatch, page=PAGE)
    said = _says_what_to_run(at)
    assert "cmp has vectors and 16 comparison trials" in said and "never starts a run itself" in said
    # 3 layers x (1 + 10 random + 10 orthogonal) directions x 4 doses x 19 s x 16 / 240 prompts = 319 s
    assert "about 5 minutes on a CPU" in said
    assert [block.value for block in at.code] == [f"magdash steer --model cmp --store {with_trials.path}"]
    assert with_trials.metric_table("steering_layers").empty


def test_the_page_draws_a_cached_run_beside_the_geometry_and_the_probe(with_trials, monkeypatch):
    params = SteerParams(layers=(0, 1, 2), doses=(0.5, 1.0), n_random=3, n_boot=50, direction="pc1")
    result = md.steer(with_trials, "cmp", params=params, extract_params=ExtractParams(device="cpu", batch_size=4))
    at = open_app(str(with_trials.path), monkeypatch, page=PAGE, query={"boot": str(N_BOOT)})
    assert not at.exception and not at.error, [shown(error) for error in at.error]
    [picker] = [box for box in at.selectbox if box.label == "Steering run"]
    assert picker.value.model == "cmp" and picker.value.layers == (0, 1, 2) and picker.value.direction == "pc1"
    charts = len(page_figures("steering", When.STEERED))
    assert charts == 2 and len(at.get("vega_lite_chart")) == charts
    buttons = labels(at.get("download_button"))
    assert buttons.count("PNG") == buttons.count("SVG") == charts
    said = texts(at)
    assert "The magnitude direction is functionally relevant" in said
    # the last layer's output reaches no later position: the result's caveat, shown as a warning
    assert any("no direction moves the choice at all" in shown(warning) for warning in at.warning)
    # the profile holds every panel: the causal statistics, the RSA and the probe's R² beside them
    profile = json.dumps(json.loads(at.get("vega_lite_chart")[0].proto.spec), ensure_ascii=False)
    for series in ("magnitude direction", "RSA with the log-ratio model", "probe R² of log n", "unpatched p(correct)"):
        assert series in profile
    [layer] = [box for box in at.selectbox if box.label == "Dose-response at layer"]
    assert layer.value == steering_figures.most_specific_layer(result)  # the most specific layer first
    layer.set_value(2).run()
    assert not at.exception and not at.error
    assert "Dose-response at layer 2" in at.get("vega_lite_chart")[1].proto.spec
    assert result.layers["layer"].tolist() == [0, 1, 2]
