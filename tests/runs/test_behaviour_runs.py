"""The behaviour kind's runs over stored trials: cached fits keyed by the trials themselves, their metric
rows, which comparison set is meant, published trials imported once, the ``@random`` control beside
the model, and the same numbers from a frame as from a store."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import magdash as md
from magdash.behaviour.behaviour_params import BehaviourParams
from magdash.behaviour.published import SHIPPED_TRIALS, read_published_trials, shipped_file
from magdash.errors import AnalysisError
from magdash.runs import behaviour_runs
from magdash.store import Store
from tests.behaviour.support import REFERENCES, chance_trials, planted_trials

FAST = BehaviourParams(n_boot=20, variants=("choice",))


def trials(seed: int = 0, n_per_position: int = 30) -> pd.DataFrame:
    """A model with a Weber fraction of about 0.2 at three references."""
    return planted_trials(0.15, 0.2, 0.02, n_per_position=n_per_position, references=(10.0, 100.0, 1000.0),
                          seed=seed)


@pytest.fixture
def stored(tmp_path) -> Store:
    store = Store(tmp_path / "s.duckdb")
    store.put_trials("m", "set-1", trials())
    return store


def test_fits_are_cached_under_the_trials_and_trials_added_give_a_new_key(stored):
    first = behaviour_runs.behaviour(stored, "m", "set-1", FAST)
    again = behaviour_runs.behaviour(stored, "m", "set-1", FAST)
    assert not first.from_cache and again.from_cache
    pd.testing.assert_frame_equal(first.fits, again.fits)
    key = behaviour_runs.behaviour_key("m", "set-1", stored.trials("m", "set-1"), FAST)
    assert stored.get_result(key) is not None
    cached = behaviour_runs.cached_behaviour(stored, "m", "set-1", FAST)
    assert cached is not None and cached.from_cache
    pd.testing.assert_frame_equal(cached.fits, first.fits)
    # another parameter is another key; the cached lookup never fits
    assert behaviour_runs.cached_behaviour(stored, "m", "set-1", BehaviourParams(n_boot=21, variants=("choice",))) is None

    # another template's trials (another prompt) resumed into the same set
    assert stored.put_trials("m", "set-1", trials(seed=1).assign(task="B2", prompt="Which is bigger?")) == 1080
    grown = behaviour_runs.behaviour(stored, "m", "set-1", FAST)
    assert not grown.from_cache and grown.n_trials == first.n_trials * 2
    assert behaviour_runs.behaviour_key("m", "set-1", stored.trials("m", "set-1"), FAST) != key
    assert set(grown.fits["task"]) == {"B1", "B2"}


def test_the_fingerprint_ignores_row_order_but_not_a_choice():
    frame = trials()
    shuffled = frame.sample(frac=1.0, random_state=3)
    assert behaviour_runs.trials_fingerprint(shuffled) == behaviour_runs.trials_fingerprint(frame)
    flipped = frame.copy()
    flipped.loc[0, "chosen"] = "A" if flipped.loc[0, "chosen"] == "B" else "B"
    assert behaviour_runs.trials_fingerprint(flipped) != behaviour_runs.trials_fingerprint(frame)


def test_the_fits_are_written_as_metric_rows(stored):
    result = behaviour_runs.behaviour(stored, "m", "set-1", FAST)
    key = behaviour_runs.behaviour_key("m", "set-1", stored.trials("m", "set-1"), FAST)
    fits = stored.metric_table("behaviour_fits")
    law = stored.metric_table("behaviour_weber_law")
    assert len(fits) == len(result.fits) == 3 and len(law) == len(result.weber_law)
    assert set(fits["result_key"]) == {key} and set(fits["model"]) == {"m"} and set(fits["comparisons"]) == {"set-1"}
    ordered = fits.sort_values("reference")
    expected = result.fits.sort_values("reference")
    np.testing.assert_allclose(ordered["weber_fraction"].to_numpy(dtype=float),
                               expected["weber_fraction"].to_numpy(dtype=float), rtol=1e-12, equal_nan=True)
    # a refit replaces its rows rather than adding to them
    behaviour_runs.behaviour(stored, "m", "set-1", FAST, use_cache=False)
    assert len(stored.metric_table("behaviour_fits")) == 3


def test_which_comparison_set_is_meant_is_said_when_it_cannot_be_told(stored):
    assert behaviour_runs.only_trial_set(stored, "m", None) == "set-1"
    with pytest.raises(AnalysisError, match=r"'other' has no comparison trials in this store: run them first") as error:
        behaviour_runs.behaviour(stored, "other")
    assert "md.behave(store, model)" in str(error.value) and "trials_file=" in str(error.value)
    with pytest.raises(AnalysisError, match=r"no trials on the comparison set 'absent'.*it has trials on set-1"):
        behaviour_runs.behaviour(stored, "m", "absent")
    stored.put_trials("m", "set-2", trials(seed=2))
    with pytest.raises(AnalysisError, match=r"several comparison sets \(set-1, set-2\): give comparisons=") as error:
        behaviour_runs.behaviour(stored, "m")
    assert error.value.parameters == ("comparisons",)


def test_a_published_file_imported_twice_is_stored_once(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    path = shipped_file(SHIPPED_TRIALS)
    assert behaviour_runs.import_trials(store, path, "llama") == 4500
    assert behaviour_runs.import_trials(store, path, "llama") == 0
    assert behaviour_runs.trial_sets_of(store, "llama") == ["imported-llama-instruct-numerical-trials"]
    assert len(store.trials("llama", "imported-llama-instruct-numerical-trials")) == 4500
    with pytest.raises(AnalysisError, match="give name="):
        behaviour_runs.import_trials(store, path, " ")


def test_a_frame_and_its_store_give_the_same_numbers_intervals_included(tmp_path):
    # The store does not keep the order trials were written in; the bootstraps resample rows within cells,
    # so stored trials are fitted in their ids' order, which is the published file's (its intervals are the paper's).
    published = read_published_trials(shipped_file(SHIPPED_TRIALS))
    frame = published[(published["task"] == "B1") & published["reference"].isin([10.0, 1000.0])].reset_index(drop=True)
    store = Store(tmp_path / "s.duckdb")
    store.put_trials("llama", "paper", frame)
    params = BehaviourParams(n_boot=20, conventions=("magdash", "paper"), variants=("choice",))
    from_frame = md.behave(frame, "llama", params=params)
    from_store = md.behave(store, "llama", "paper", params=params)
    assert not from_frame.from_cache and from_store.comparisons == "paper" and from_frame.comparisons == ""
    columns = ["mu", "sigma", "lapse", "weber_fraction", "wf_low", "wf_high"]
    assert from_store.fits["wf_low"].notna().any()
    np.testing.assert_allclose(from_frame.fits[columns].to_numpy(dtype=float),
                               from_store.fits[columns].to_numpy(dtype=float), rtol=1e-9, equal_nan=True)
    pd.testing.assert_frame_equal(from_frame.cells, from_store.cells)
    # the same input in the same order: the very same records, but for the set's name
    assert [{**record, "comparisons": "paper"} for record in from_frame.records()] == from_store.records()


def test_the_random_control_is_set_beside_the_model_when_it_has_trials(stored):
    alone, control, difference = behaviour_runs.behaviour_with_control(stored, "m", "set-1", FAST)
    assert control is None and difference is None and alone.model == "m"
    stored.put_trials("m@random", "set-1", chance_trials(n_per_position=30, task="B1"))
    model, control, difference = behaviour_runs.behaviour_with_control(stored, "m", "set-1", FAST)
    assert control is not None and control.model == "m@random" and isinstance(difference, pd.DataFrame)
    assert not difference.empty
    # the control is at chance: its Weber fraction is undefined, never a number
    assert control.fits["weber_fraction"].isna().all()
    assert set(control.fits["reference"]) == set(REFERENCES)
    assert model.fits["weber_fraction"].notna().all()
