"""The Behaviour page under AppTest before any trials are stored: on an empty path and on a store of
vectors without trials it says what to run (``magdash behave --model MODEL``, ``md.behave(...)``, an import
of published trials), links where to go and draws no chart. The page on a store holding trials is
tested once the run layer stores them (the trials table, ``magdash.runs.behaviour_runs``)."""

from __future__ import annotations

import numpy as np

from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES
from magdash.store import Store
from tests.support import open_app, shown

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
