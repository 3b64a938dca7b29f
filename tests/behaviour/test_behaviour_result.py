"""BehaviourParams refuses bad choices; BehaviourResult's payload reads back and its records are the --json rows."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from magdash.behaviour.behaviour_params import BehaviourParams
from magdash.behaviour.behaviour_result import TABLES, BehaviourResult, fit_behaviour
from magdash.errors import AnalysisError
from magdash.jsonio import to_jsonable
from magdash.params import DEFAULT_CI, DEFAULT_N_BOOT, OPTION_KEY
from tests.behaviour.support import REFERENCES, planted_trials


@pytest.mark.parametrize(("changes", "name"), [
    ({"conventions": ("human",)}, "conventions"),
    ({"variants": ()}, "variants"),
    ({"n_boot": -1}, "n_boot"),
    ({"n_boot": 2.5}, "n_boot"),
    ({"seed": -3}, "seed"),
    ({"ci": 1.0}, "ci"),
    ({"min_option_mass": 1.5}, "min_option_mass"),
    ({"max_lapse": 0.3}, "max_lapse"),
])
def test_bad_params_are_refused_naming_the_parameter(changes, name):
    with pytest.raises(AnalysisError, match=name) as caught:
        BehaviourParams(**changes)
    assert name in caught.value.parameters


def test_params_defaults_and_options():
    params = BehaviourParams()
    assert params.n_boot == DEFAULT_N_BOOT and params.ci == DEFAULT_CI and params.conventions == ("magdash",)
    assert all(OPTION_KEY in item.metadata for item in dataclasses.fields(BehaviourParams))
    again = BehaviourParams.from_dict(json.loads(json.dumps(dataclasses.asdict(params))))
    assert again == params


@pytest.fixture(scope="module")
def result() -> BehaviourResult:
    trials = planted_trials(math.log(1.3), 0.3, 0.02, n_per_position=30, references=REFERENCES[:3], seed=31)
    trials.loc[0, ["prob_a", "prob_b"]] = 0.0
    return fit_behaviour(trials, BehaviourParams(n_boot=15, conventions=("magdash", "paper")), model="m")


def test_the_payload_reads_back_into_the_same_result(result):
    again = BehaviourResult.from_payload(result.to_payload())
    assert again.from_cache and not result.from_cache
    assert again.params == result.params and again.model == "m"
    assert (again.n_trials, again.n_unanswered) == (result.n_trials, 1)
    for name in TABLES:
        assert getattr(again, name).equals(getattr(result, name)), name
    assert again.replicates.keys() == result.replicates.keys()
    for key, values in result.replicates.items():
        assert np.array_equal(again.replicates[key], values)


def test_records_hold_one_row_per_model_task_reference_variant_and_conventions(result):
    records = result.records()
    # magdash: 3 references x 2 variants; paper: 3 references x choice
    assert len(records) == 9
    assert {(r["conventions"], r["variant"]) for r in records} == {("magdash", "choice"), ("magdash", "graded"),
                                                                   ("paper", "choice")}
    for record in records:
        assert {"model", "task", "reference", "weber_fraction"} <= set(record)
        assert record["model"] == "m" and record["task"] == "B1"
        assert record["weber_fraction"] is None or math.isfinite(record["weber_fraction"])
    document = result.to_json()
    json.dumps(to_jsonable(document), allow_nan=False)
    assert document["records"] == records and set(TABLES) <= set(document)


def test_the_frames_have_the_contract_columns(result):
    assert list(result.cells.columns)[:10] == ["task", "reference", "ratio", "n_a", "n_b", "accuracy_a", "accuracy_b",
                                               "accuracy", "bias", "n_unanswered"]
    for column in ("task", "reference", "variant", "conventions", "mu", "sigma", "lapse", "weber_fraction", "wf_low",
                   "wf_high", "in_range", "status", "n_trials"):
        assert column in result.fits.columns
    assert list(result.curves.columns) == ["task", "reference", "variant", "conventions", "ratio", "p"]
    assert list(result.weber_law.columns) == ["task", "variant", "conventions", "slope", "low", "high",
                                              "n_references", "status"]
    assert list(result.position_bias.columns) == ["task", "reference", "p_choose_a", "bias", "low", "high"]
    assert result.curves["p"].between(0, 1).all()


def test_trials_without_the_needed_columns_are_refused():
    trials = planted_trials(0.2, 0.3, 0.0, n_per_position=2)
    with pytest.raises(AnalysisError, match="logit_a"):
        fit_behaviour(trials.drop(columns="logit_a"))
    with pytest.raises(AnalysisError, match="larger"):
        fit_behaviour(trials.assign(larger="C"))
    with pytest.raises(AnalysisError, match="ratios"):
        fit_behaviour(trials.assign(ratio=0.5))
    with pytest.raises(AnalysisError, match="no trial"):
        fit_behaviour(trials.iloc[:0])
