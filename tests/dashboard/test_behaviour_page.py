"""The Behaviour page's logic (magdash.dashboard.behaviour_page): the stored trial sets in the
order the page offers them, the key of a cached result changing with the trials, what the page
says without trials, and the analysis set beside a model's behaviour only where its vectors are."""

from __future__ import annotations

import dataclasses

import pandas as pd

from magdash.behaviour.behaviour_params import BehaviourParams
from magdash.dashboard import behaviour_page as bp
from magdash.dashboard.inventory import TrialSet, empty_inventory
from magdash.dashboard.view import ViewState


def test_the_trial_sets_put_trained_models_first_and_the_key_follows_the_trials():
    inventory = dataclasses.replace(empty_inventory("s.duckdb"), trial_sets=(
        TrialSet("m@random", "paper", 300), TrialSet("m", "words", 60), TrialSet("m", "paper", 300)))
    found = bp.trial_sets(inventory)
    assert [(item.model, item.comparisons) for item in found] == [("m", "paper"), ("m", "words"), ("m@random", "paper")]
    key = bp.behaviour_key("s.duckdb", found[0], 200)
    # the sidebar's bootstrap size, every other choice as magdash behave's defaults (the CLI and the page share it)
    assert key == bp.BehaviourKey("s.duckdb", "m", "paper", 300, BehaviourParams(n_boot=200))
    assert bp.behaviour_key("s.duckdb", dataclasses.replace(found[0], trials=600), 200) != key  # a resumed run
    assert bp.behaviour_key("s.duckdb", found[0], 100) != key
    assert hash(key) == hash(bp.BehaviourKey("s.duckdb", "m", "paper", 300, BehaviourParams(n_boot=200)))  # Streamlit caches on it
    assert bp.trial_set_label(TrialSet("m", "paper", 6000)) == "m · paper (6,000 trials)"
    assert bp.trial_sets(empty_inventory("s.duckdb")) == ()


def test_without_trials_the_page_says_what_to_run():
    message = bp.no_trials_message("/data/s.duckdb", exists=True)
    assert message.startswith("Nothing to show yet") and "the store at /data/s.duckdb holds none" in message
    assert "`magdash behave --model MODEL`" in message and "`md.behave(...)`" in message
    assert "there is no store at /data/s.duckdb yet" in bp.no_trials_message("/data/s.duckdb", exists=False)


def test_the_representation_is_set_beside_only_where_the_models_vectors_are_stored():
    inventory = dataclasses.replace(empty_inventory("s.duckdb"), complete_sets={"m": ["paper"]})
    assert bp.representation_key(ViewState("s.duckdb", model="m", stimuli="words"), inventory, "m") is None
    assert bp.representation_key(ViewState("s.duckdb", model="m", stimuli=None), inventory, "m") is None
    assert bp.representation_key(ViewState("s.duckdb", model="m", stimuli="paper"), inventory, "imported") is None


def test_the_tasks_of_a_result_keep_the_order_of_its_cells():
    @dataclasses.dataclass
    class Cells:
        model: str
        cells: pd.DataFrame

    result = Cells("m", pd.DataFrame({"task": ["B1", "B1", "symbolic_control", "B2"]}))
    assert bp.tasks(result) == ["B1", "symbolic_control", "B2"]  # type: ignore[arg-type]


def test_the_radios_offer_the_variants_and_conventions_the_fits_hold():
    @dataclasses.dataclass
    class Fits:
        model: str
        fits: pd.DataFrame

    result = Fits("m", pd.DataFrame({"variant": ["graded", "choice", "choice"],
                                     "conventions": ["magdash", "magdash", "magdash"]}))
    assert bp.fitted(result, "variant") == ["choice", "graded"]  # type: ignore[arg-type]
    assert bp.fitted(result, "conventions") == ["magdash"]  # type: ignore[arg-type]  (paper: only when asked for)
