"""Small traps of the sidebar and the model pickers (issue 39): "Select all" in "Leave out
carriers" is refused in words, not quietly cut to the first few."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from magdash.dashboard import exclude_refusal
from magdash.store import Store
from magdash.variability.measures import MIN_CARRIERS
from tests.support import open_app, shown, widget

CARRIERS = ("I saw {n} birds.", "She paid {n} coins.", "{n} people came.", "We had {n} days.", "It cost {n} euros.")
MAGNITUDES = (1, 2, 3, 5, 8, 13, 21, 34)


@pytest.fixture(scope="module")
def five_carriers(tmp_path_factory):
    path = tmp_path_factory.mktemp("five") / "five.duckdb"
    arrays = np.random.default_rng(7).normal(size=(len(MAGNITUDES), len(CARRIERS), 4, 8))
    Store(path).import_arrays("five", arrays, MAGNITUDES, carriers=CARRIERS, stimuli="five-set")
    return path


def test_the_refusal_says_how_many_must_remain():
    assert exclude_refusal(5, [0, 1, 2]) is None
    message = exclude_refusal(5, [0, 1, 2, 3, 4])
    assert f"at least {MIN_CARRIERS} must remain" in message and "leave out at most 3" in message
    assert "would leave 0" in message
    assert exclude_refusal(5, [0, 1, 2, 3]) is not None and exclude_refusal(2, []) is None


def test_select_all_is_refused_and_leaves_nothing_out(five_carriers, monkeypatch):
    at = open_app(five_carriers, monkeypatch, query={"boot": "0"})
    choice = widget(at.sidebar.multiselect, "Leave out carriers")
    choice.set_value([0, 1, 2, 3, 4]).run()  # what "Select all" hands the callback
    assert not at.exception
    errors = [shown(e) for e in at.sidebar.error]
    assert any("Leaving out 5 of the 5 carriers would leave 0" in e and "at least 2 must remain" in e for e in errors)
    assert "leave" not in at.query_params
    assert widget(at.sidebar.multiselect, "Leave out carriers").value == []  # drawn afresh from the view
    widget(at.sidebar.multiselect, "Leave out carriers").set_value([0, 1, 2]).run()
    assert not at.exception and at.query_params["leave"] == "0,1,2"
    assert not [e for e in at.sidebar.error if "carriers" in shown(e)]
    widget(at.sidebar.multiselect, "Leave out carriers").set_value([0, 1, 2, 3]).run()  # one too many
    assert any("would leave 1" in shown(e) for e in at.sidebar.error)
    assert at.query_params["leave"] == "0,1,2"
    assert widget(at.sidebar.multiselect, "Leave out carriers").value == [0, 1, 2]


def test_the_sidebar_shows_the_models_a_first_run_has_completed(tmp_path, monkeypatch):
    """The inventory is read again when a step of the job finishes (the page is drawn again then:
    ``JobSnapshot.moved_on_from``), not only when the job ends; Home holds its results back meanwhile."""
    from magdash.dashboard.jobs import Job
    from pages.ui.caches import job_registry

    path = tmp_path / "first.duckdb"
    Store(path, create=True)
    extracted, stored, finish = threading.Event(), threading.Event(), threading.Event()
    arrays = np.random.default_rng(8).normal(size=(len(MAGNITUDES), len(CARRIERS), 4, 8))

    def work(context):
        context.step("extracting five", len(MAGNITUDES) * len(CARRIERS))
        extracted.wait(60)
        Store(path).import_arrays("five", arrays, MAGNITUDES, carriers=CARRIERS, stimuli="five-set")
        context.step("extracting more", 10)
        stored.set()
        finish.wait(60)
        return None, False

    job = job_registry().start(str(path), Job("first run: five and more", work, n_steps=3),
                                 owner="another session")
    try:
        at = open_app(path, monkeypatch)
        assert any("holds no complete extraction yet" in shown(i) for i in at.sidebar.info)
        extracted.set()
        assert stored.wait(60)
        at.run()
        assert not at.exception
        assert widget(at.sidebar.selectbox, "Model").value == "five"
        assert not any("holds no complete extraction" in shown(i) for i in at.sidebar.info)
        assert not [s for s in at.main.subheader if "Results" in shown(s)]  # held back until the run ends
    finally:
        finish.set()
        job.wait(60)
        job_registry().forget(str(path))


@pytest.fixture(scope="module")
def with_control(tmp_path_factory):
    path = tmp_path_factory.mktemp("pair") / "pair.duckdb"
    rng = np.random.default_rng(9)
    for name in ("m", "m@random"):
        Store(path).import_arrays(name, rng.normal(size=(len(MAGNITUDES), len(CARRIERS), 4, 8)), MAGNITUDES,
                                  carriers=CARRIERS, stimuli="five-set")
    return path


def test_the_model_pickers_mark_controls_and_compare_says_how_to_get_a_base_instruct_pair(with_control, monkeypatch):
    at = open_app(with_control, monkeypatch, query={"boot": "0"}, page="pages/compare.py")
    caption = shown(at.main.caption[0])
    assert not caption.startswith("Base vs instruct")
    assert "no such pair is built in" in caption and "Hugging Face cache" in caption and "import" in caption
    assert widget(at.main.selectbox, "Model B").options == ["m@random (random-weight control)"]
    assert widget(at.sidebar.selectbox, "Model").options == ["m", "m@random (random-weight control)"]


def test_a_control_is_never_offered_a_control_of_its_own(with_control, tmp_path):
    from magdash.dashboard import read_inventory

    inventory = read_inventory(Store(with_control))
    assert inventory.model_label("m") == "m" and inventory.model_label("m@random") == "m@random (random-weight control)"
    assert inventory.second_model_example("m") == "its @random control"
    assert inventory.second_model_example("m@random") == "its trained model, m"
    note = inventory.control_note("m@random", "five-set", "to compare the curves with the architecture alone")
    assert note == ("m@random is itself a random-weight control (the architecture alone): choose m in the sidebar to "
                    "compare the curves with the architecture alone.")
    assert "@random control" in inventory.control_note("m", "five-set", "to see what it decodes")
    lone = tmp_path / "lone.duckdb"
    Store(lone).import_arrays("x@random", np.ones((len(MAGNITUDES), len(CARRIERS), 2, 4)) * np.arange(4),
                              MAGNITUDES, carriers=CARRIERS, stimuli="five-set")
    note = read_inventory(Store(lone)).control_note("x@random", "five-set", "to see")
    assert "extract and choose its trained model, x" in note and "'@random control'" not in note


@pytest.mark.parametrize("page", ["pages/depth.py", "pages/probes.py"])
def test_the_depth_and_probes_pages_offer_a_control_its_trained_model(with_control, monkeypatch, page):
    at = open_app(with_control, monkeypatch, query={"boot": "0", "model": "m@random"}, page=page)
    notes = [shown(i) for i in at.main.info]
    assert any("m@random is itself a random-weight control" in n and "choose m in the sidebar" in n for n in notes)
    assert not any("No random-weight control of m@random" in n for n in notes)
    assert not [link for link in at.main.get("page_link") if "Extract the control" in str(link.proto)]
