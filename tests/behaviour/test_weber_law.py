"""Weber's law across references, model-vs-model deltas and behaviour against representation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from magdash.behaviour.behaviour_params import BehaviourParams
from magdash.behaviour.behaviour_result import compare_behaviour, fit_behaviour
from magdash.behaviour.weber_law import behaviour_vs_representation, log_slopes, weber_law_table
from magdash.errors import AnalysisError
from tests.behaviour.support import REFERENCES, planted_trials

SIGMA, LAPSE = 0.3, 0.02


def weber_trials(wf: dict[float, float], seed: int, n_per_position: int = 80) -> pd.DataFrame:
    """Trials whose WF at each reference is ``wf`` (mu chosen so that r* - 1 = wf, lapse 0.02)."""
    from magdash.behaviour.psychometric import log_threshold

    shift = float(np.asarray(log_threshold(0.0, SIGMA, LAPSE)))
    mu = {reference: math.log1p(value) - shift for reference, value in wf.items()}
    return planted_trials(mu, SIGMA, LAPSE, n_per_position=n_per_position, references=tuple(wf), seed=seed)


def test_the_slope_of_log_weber_fraction_on_log_reference_is_recovered():
    assert float(log_slopes(np.log([10.0, 100.0, 1000.0]), np.log([[0.1, 0.2, 0.4]]))[0]) == pytest.approx(
        math.log(2) / math.log(10))
    growing = {reference: 0.1 * (reference / 10.0) ** 0.25 for reference in REFERENCES}  # slope 0.25
    result = fit_behaviour(weber_trials(growing, seed=21), BehaviourParams(n_boot=200, variants=("choice",)))
    row = result.weber_law.iloc[0]
    assert row["n_references"] == 5 and row["status"] == "ok"
    assert row["low"] <= 0.25 <= row["high"]
    assert row["low"] > 0  # Weber's law (slope 0) is rejected


def test_a_constant_weber_fraction_gives_a_slope_whose_interval_holds_zero():
    constant = {reference: 0.3 for reference in REFERENCES}
    result = fit_behaviour(weber_trials(constant, seed=22), BehaviourParams(n_boot=200, variants=("choice",)))
    row = result.weber_law.iloc[0]
    assert row["low"] <= 0.0 <= row["high"]
    assert abs(row["slope"]) < 0.2


def test_too_few_defined_weber_fractions_are_said_with_their_number():
    fits = pd.DataFrame({"task": "t", "variant": "choice", "conventions": "magdash", "reference": [10.0, 100.0],
                         "weber_fraction": [0.2, math.nan]})
    row = weber_law_table(fits, {}, 0.95).iloc[0]
    assert math.isnan(row["slope"]) and row["n_references"] == 1
    assert "too few defined Weber fractions: 1 reference(s)" in row["status"]


def test_deltas_between_a_sharp_and_a_blunt_model_exclude_zero():
    sharp = fit_behaviour(weber_trials({100.0: 0.15, 1000.0: 0.15}, seed=23, n_per_position=150),
                          BehaviourParams(n_boot=200, variants=("choice",), seed=1), model="instruct")
    blunt = fit_behaviour(weber_trials({100.0: 0.9, 1000.0: 0.9}, seed=24, n_per_position=150),
                          BehaviourParams(n_boot=200, variants=("choice",), seed=2), model="base")
    deltas = compare_behaviour(sharp, blunt)
    wf = deltas[deltas["quantity"] == "weber_fraction"]
    assert len(wf) == 2 and (wf["high"] < 0).all() and (wf["delta"] < -0.4).all()
    slope = deltas[deltas["quantity"] == "slope"].iloc[0]
    assert slope["status"] == "ok" and slope["low"] <= 0.0 <= slope["high"]
    same = compare_behaviour(sharp, sharp)
    assert same.loc[same["quantity"] == "weber_fraction", "delta"].abs().max() == 0.0


def test_behaviour_against_representation_says_how_many_points_it_rests_on():
    behaviour = pd.DataFrame({"reference": REFERENCES, "weber_fraction": [0.1, 0.2, 0.3, math.nan, 0.5]})
    measures = pd.DataFrame({"reference": REFERENCES, "cv": [0.01, 0.02, 0.03, 0.04, 0.05],
                             "alpha": [1.0, 0.9, 0.95, 0.8, 0.7]})
    table = behaviour_vs_representation(behaviour, measures).set_index("measure")
    assert table.loc["cv", "n_points"] == 4
    assert table.loc["cv", "spearman"] == pytest.approx(1.0)
    assert "cannot reach 0.05" in table.loc["cv", "note"]  # 4 points: the smallest p is 2/4! = 0.083
    assert table.loc["alpha", "spearman"] == pytest.approx(-0.8)
    two = behaviour_vs_representation(behaviour.iloc[:2], measures.iloc[:2])
    assert math.isnan(two.iloc[0]["spearman"]) and "too few for a correlation" in two.iloc[0]["note"]
    with pytest.raises(AnalysisError, match="weber_fraction"):
        behaviour_vs_representation(behaviour.drop(columns="weber_fraction"), measures)
