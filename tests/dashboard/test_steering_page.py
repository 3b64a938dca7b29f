"""The Steering page's logic (magdash.dashboard.steering_page): what it says without a cached run (what to
run first, in order: comparisons, vectors, the steering with its cost), the runs it offers and their key."""

from __future__ import annotations

import dataclasses

import pandas as pd

from magdash.dashboard import steering_page as sp
from magdash.dashboard.inventory import SteeringRun, TrialSet, _steering_runs, empty_inventory
from magdash.dashboard.view import ViewState


def test_without_a_cached_run_the_page_says_what_to_run_first():
    message, command = sp.no_steering_message(None, "/data/s.duckdb", exists=False)
    assert "There is no store at /data/s.duckdb yet" in message and command is None
    inventory = empty_inventory("/data/s.duckdb")
    message, command = sp.no_steering_message(inventory, "/data/s.duckdb", exists=True)
    assert "holds none: run them first" in message and command == "magdash behave --model MODEL --store /data/s.duckdb"
    # a random-weight control's trials are not a reason to steer it
    with_trials = dataclasses.replace(inventory, trial_sets=(TrialSet("m@random", "paper", 240), TrialSet("m", "paper", 240)))
    message, command = sp.no_steering_message(with_trials, "/data/s.duckdb", exists=True)
    assert "m has trials but no vectors" in message and command == "magdash extract --model m --store /data/s.duckdb"


def test_with_trials_and_vectors_the_page_shows_the_command_and_its_cost(monkeypatch):
    inventory = dataclasses.replace(empty_inventory("s.duckdb"), trial_sets=(TrialSet("m", "paper", 240),),
                                    complete_sets={"m": ["paper"]})

    class Record:
        n_layers = 31

    monkeypatch.setattr(type(inventory), "record", lambda self, name: Record())
    message, command = sp.no_steering_message(inventory, "s.duckdb", exists=True)
    assert command == "magdash steer --model m --store s.duckdb"
    # 31 layers x 21 directions x 4 doses x 19 s = 49,476 s: about 13.7 hours on a CPU
    assert "31 layers x 21 directions x 4 doses over 240 prompts" in message and "about 13.7 hours" in message
    assert "about 28 seconds" in sp.cost_sentence(1, 120, n_random=2, orthogonal=False, n_doses=1)  # 3 x 19 s / 2
    assert "about 5 minutes" in sp.cost_sentence(3, 16)  # 3 x 21 x 4 x 19 s x 16 / 240 = 319 s


def test_the_runs_come_from_the_metric_rows_one_per_result_and_trained_models_first():
    rows = pd.DataFrame({"result_key": ["k1", "k1", "k2"], "model": ["m", "m", "m@random"],
                         "stimuli": "paper", "comparisons": "paper", "direction": "probe", "operand": "a",
                         "layer": [20, 3, 3], "n_trials": 180})
    runs = _steering_runs(rows)
    assert runs[0] == SteeringRun("m", "paper", "paper", "probe", "a", (3, 20), 180, "k1")
    inventory = dataclasses.replace(empty_inventory("s.duckdb"), steering_runs=tuple(reversed(runs)))
    assert [run.model for run in sp.steering_runs(inventory)] == ["m", "m@random"]
    assert sp.run_label(runs[0]) == "m · paper · probe direction, operand a · layers 3, 20 (180 prompts)"
    key = sp.steer_key("s.duckdb", runs[0])
    assert key == sp.SteerKey("s.duckdb", "m", "paper", "paper", "k1") and hash(key) == hash(sp.steer_key("s.duckdb", runs[0]))
    assert sp.representation_key(ViewState("s.duckdb", model="m", stimuli="paper"), inventory, runs[0]) is None
    assert sp.probe_key(ViewState("s.duckdb", model="m", stimuli="paper"), inventory, runs[0]) is None
