"""The Behaviour page under AppTest. Before any trials are stored: on an empty path and on a store of
vectors without trials it says what to run (``magdash behave --model MODEL``, ``md.behave(...)``, an import
of published trials), links where to go and draws no chart. On a store holding the paper's published trials
of Llama-3-8B-Instruct (imported, fitted once with a small bootstrap): the figures its declaration lists,
the fits' table, the position bias and the thresholds beyond the tested ratios said in words."""

from __future__ import annotations

import numpy as np
import pytest

from magdash.behaviour.behaviour_params import BehaviourParams
from magdash.behaviour.published import SHIPPED_TRIALS, read_published_trials, shipped_file
from magdash.presentation.behaviour_figures import CONVENTION_LABELS
from magdash.presentation.page_figures import When, page_figures
from magdash.runs import behaviour_runs
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES
from magdash.store import Store
from tests.support import assert_tables_are_labelled, labels, open_app, shown, texts, widget

PAGE = "pages/behaviour.py"


def _says_what_to_run(at) -> str:
    infos = [shown(info) for info in at.info if "Nothing to show yet" in shown(info)]
    assert len(infos) == 1
    assert "magdash behave --model MODEL" in infos[0] and "md.behave(...)" in infos[0]
    assert "magdash behave --import FILE --name NAME" in infos[0]
    assert not at.get("vega_lite_chart") and not at.error, [shown(error) for error in at.error]
    assert [element.proto.page for element in at.main.get("page_link")] == ["stimuli", ""]  # Stimuli, Home
    return infos[0]


def test_on_a_path_without_a_store_the_page_says_what_to_run(tmp_path, monkeypatch):
    at = open_app(str(tmp_path / "empty.duckdb"), monkeypatch, page=PAGE)
    assert "there is no store at" in _says_what_to_run(at)
    assert any(title.value.startswith("Behaviour:") for title in at.title)
    assert not (tmp_path / "empty.duckdb").exists()  # browsing never creates a store


def test_a_store_of_vectors_without_trials_says_what_to_run(tmp_path, monkeypatch):
    store = Store(tmp_path / "vectors.duckdb")
    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(len(PAPER_MAGNITUDES), len(PAPER_CARRIERS), 4, 8)).astype(np.float32)
    store.import_arrays("planted", vectors, PAPER_MAGNITUDES, carriers=PAPER_CARRIERS, stimuli="paper")
    at = open_app(str(store.path), monkeypatch, page=PAGE)
    assert "holds none" in _says_what_to_run(at)


MODEL = "llama3-8b-instruct"
SILENT = "silent@random"
N_BOOT = 20
"""The sidebar's bootstrap size on the populated store: the fits are cached with it before the page opens."""


@pytest.fixture(scope="module")
def with_trials(tmp_path_factory) -> str:
    """The paper's published trials of Llama-3-8B-Instruct, imported and fitted as the page asks (n_boot=N_BOOT)."""
    store = Store(tmp_path_factory.mktemp("behaviour") / "trials.duckdb")
    assert behaviour_runs.import_trials(store, shipped_file(SHIPPED_TRIALS), MODEL) == 4500  # B1-B3; the rest are not A/B
    [comparisons] = behaviour_runs.trial_sets_of(store, MODEL)
    behaviour_runs.behaviour(store, MODEL, comparisons, BehaviourParams(n_boot=N_BOOT))
    # a model that answers neither option (as a random-weight control does): every trial under the option mass
    silent = read_published_trials(shipped_file(SHIPPED_TRIALS))
    silent = silent[silent["task"] == "B1"].assign(prob_a=2e-5, prob_b=1e-5)
    assert store.put_trials(SILENT, "silent-set", silent) == 1500
    return str(store.path)


def test_the_page_draws_the_fits_of_stored_trials_and_says_what_to_distrust(with_trials, monkeypatch):
    at = open_app(with_trials, monkeypatch, page=PAGE, query={"boot": str(N_BOOT)})
    assert not at.exception and not at.error, [shown(error) for error in at.error]
    [picker] = [box for box in at.selectbox if box.label == "Trials"]
    assert picker.value.model == MODEL and picker.value.trials == 4500
    assert widget(at.selectbox, "Task").options == ["B1", "B2", "B3"]
    # the figures page_figures declares where the store holds trials (no vectors of this model: no
    # behaviour-beside-representation chart, a sentence instead), each with PNG and SVG; the fits' table as CSV
    charts = len(page_figures("behaviour", When.TRIALS))
    assert charts == 3 and len(at.get("vega_lite_chart")) == charts
    buttons = labels(at.get("download_button"))
    assert buttons.count("PNG") == buttons.count("SVG") == charts and buttons.count("CSV") >= 1
    assert_tables_are_labelled(at)
    said = texts(at)
    assert "has no vectors on" in said
    # B1: Llama prefers A at references 10, 30 and 1000 (P(choose A) 0.58-0.60, the bias's interval above 0)
    assert "llama3-8b-instruct (B1) prefers one position whatever the numbers at 3 of 5 references" in said
    assert "reference 100:" not in said.split("prefers one position")[1].split("Accuracy is corrected")[0]
    # the threshold at reference 1000 lies below ratio 1 (the paper's fit: WF -0.174): said, never a negative fraction
    assert "Reference 1000: the fitted threshold is below the tested ratios 1.05-3" in said
    assert "Weber fraction -" not in said

    # B2 (percentages of a number): a strong preference for A, fits at chance, said as such
    widget(at.selectbox, "Task").set_value("B2").run()
    assert not at.exception and not at.error
    said = texts(at)
    assert "llama3-8b-instruct (B2) prefers one position whatever the numbers at 5 of 5 references" in said
    assert "Reference 30: no Weber fraction (at chance)." in said
    assert len(at.get("vega_lite_chart")) == charts


def test_a_model_that_answers_neither_option_is_said_to_be_unmeasured_and_nothing_is_drawn(with_trials, monkeypatch):
    at = open_app(with_trials, monkeypatch, page=PAGE, query={"boot": str(N_BOOT)})
    [picker] = [box for box in at.selectbox if box.label == "Trials"]
    assert [label.split(" · ")[0] for label in picker.options] == [MODEL, SILENT]  # trained models first
    picker.select_index(1).run()
    assert not at.exception and not at.error, [shown(error) for error in at.error]
    said = texts(at)
    assert "1,500 of 1,500 trials of silent@random (B1) not measured" in said
    assert "No trial of silent@random (B1) was measured, so there is nothing to fit or draw" in said
    assert "min_option_mass=0" in said
    assert not at.get("vega_lite_chart")


@pytest.mark.slow
def test_the_paper_s_conventions_are_fitted_when_shown_and_follow_the_sidebar(with_trials, monkeypatch):
    both = [CONVENTION_LABELS["magdash"], CONVENTION_LABELS["paper"]]
    at = open_app(with_trials, monkeypatch, page=PAGE, query={"boot": str(N_BOOT)})
    radio = widget(at.main.radio, "Conventions")
    assert radio.options == both and radio.value == "magdash"
    assert "Weber fraction -" not in texts(at)
    # the paper's, on the page's own radio (a store of imported trials has no sidebar conventions)
    radio.set_value("paper").run()
    assert not at.exception and not at.error, [shown(error) for error in at.error]
    # B1 at reference 1000 under the paper's function: the threshold below ratio 1 (its published WF -0.174)
    assert "Reference 1000: the fitted threshold is below the tested ratios 1.05-3" in texts(at)
    assert "Weber fraction -0.174 from the fit" in texts(at)
    # a link with the paper's conventions opens on them
    paper = open_app(with_trials, monkeypatch, page=PAGE, query={"boot": str(N_BOOT), "conv": "paper"})
    assert not paper.exception and widget(paper.main.radio, "Conventions").value == "paper"
