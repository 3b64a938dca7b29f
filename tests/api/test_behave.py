"""``md.behave`` on a tiny random-weight decoder: the comparisons run and are fitted, a second call
loads no model and reads the cached fits, an interrupted run resumes, the ``@random`` control is set
beside the model; and the arguments it refuses."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import magdash as md
from magdash import trial_extraction
from magdash.behaviour.behaviour_params import BehaviourParams
from magdash.errors import AnalysisError
from magdash.extract_params import ExtractParams
from magdash.runs.behaviour_runs import behaviour_with_control, trial_sets_of
from magdash.store import Store
from tests.test_trial_extraction import build_comparison_model, design, interrupt_trials_after

FAST = BehaviourParams(n_boot=10)


@pytest.fixture(scope="module")
def decoder(tmp_path_factory) -> Path:
    return build_comparison_model(tmp_path_factory.mktemp("models") / "cmp-base", chat=False)


def _never(*_args, **_kwargs):
    raise AssertionError("a model was loaded although every trial is stored")


def test_behave_runs_the_trials_then_fits_and_a_second_call_loads_nothing(tmp_path, decoder, monkeypatch):
    store = Store(tmp_path / "s.duckdb")
    seen: list[tuple[int, int]] = []
    result = md.behave(store, str(decoder), design(), FAST, name="tiny", progress=lambda done, total: seen.append(
        (done, total)))
    assert isinstance(result, md.BehaviourResult) and not result.from_cache
    assert result.model == "tiny" and result.comparisons == design().name
    assert result.n_trials == design().n_trials == len(store.trials("tiny", design().name))
    assert seen and seen[-1] == (design().n_trials, design().n_trials)
    # one record per task (the design's templates), reference and variant
    assert {(record["task"], record["reference"], record["variant"]) for record in result.records()} == {
        (template.name, reference, variant) for template in design().templates for reference in (10.0, 300.0)
        for variant in ("choice", "graded")}

    monkeypatch.setattr(trial_extraction, "load_for_trials", _never)
    again = md.behave(store, str(decoder), design(), FAST, name="tiny")
    assert again.from_cache
    pd.testing.assert_frame_equal(again.fits, result.fits)
    # the stored set's name, or nothing at all (the model's only set), find the same trials
    assert md.behave(store, "tiny", design().name, FAST).from_cache
    assert md.behave(store, "tiny", params=FAST).from_cache


def test_an_interrupted_behave_resumes_where_it_stopped(tmp_path, decoder, monkeypatch):
    store = Store(tmp_path / "s.duckdb")
    real = interrupt_trials_after(monkeypatch, 2)
    with pytest.raises(KeyboardInterrupt):
        md.behave(store, str(decoder), design(), FAST, extract_params=ExtractParams(batch_size=4), name="tiny")
    assert len(store.trials("tiny", design().name)) == 8
    monkeypatch.setattr(trial_extraction, "last_logits", real)
    resumed = md.behave(store, str(decoder), design(), FAST, extract_params=ExtractParams(batch_size=4), name="tiny")
    whole = md.behave(Store(tmp_path / "whole.duckdb"), str(decoder), design(), FAST, name="tiny")
    assert resumed.n_trials == whole.n_trials == design().n_trials
    columns = ["task", "reference", "ratio", "n_a", "n_b", "accuracy"]
    pd.testing.assert_frame_equal(resumed.cells[columns], whole.cells[columns])


def test_the_random_control_is_measured_beside_the_model(tmp_path, decoder):
    store = Store(tmp_path / "s.duckdb")
    model = md.behave(store, str(decoder), design(), FAST, name="tiny")
    control = md.behave(store, f"{decoder}@random", design(), FAST, name="tiny@random")
    assert control.model == "tiny@random" and trial_sets_of(store, "tiny@random") == [design().name]
    found, controlled, difference = behaviour_with_control(store, "tiny", design().name, FAST)
    assert controlled is not None and controlled.model == "tiny@random"
    assert isinstance(difference, pd.DataFrame) and not difference.empty
    np.testing.assert_allclose(found.cells["accuracy"], model.cells["accuracy"])
    # other weights, other answers
    assert not np.allclose(store.trials("tiny", design().name)["logit_a"].sort_values(),
                           store.trials("tiny@random", design().name)["logit_a"].sort_values())


def test_behave_refuses_what_it_cannot_use(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    with pytest.raises(AnalysisError, match="behave needs a store or a trials frame, got list"):
        md.behave([1, 2], "m")
    with pytest.raises(AnalysisError, match="no comparison set 'absent' in this store"):
        md.behave(store, "m", "absent")
    with pytest.raises(AnalysisError, match="comparisons must be a ComparisonSet or a stored set's name, got int"):
        md.behave(store, "m", 3)
    with pytest.raises(AnalysisError, match="unknown conventions"):
        md.behave(store, "m", conventions=("nobody",))
