"""Position bias planted in trials is measured, corrected for, and named when it dominates."""

from __future__ import annotations

import math

import numpy as np
import pytest

from magdash.behaviour.behaviour_params import BehaviourParams
from magdash.behaviour.behaviour_result import fit_behaviour
from magdash.behaviour.psychometric import two_alternative
from magdash.caveats import Severity
from tests.behaviour.support import RATIOS, planted_trials

MU, SIGMA, LAPSE = math.log(1.5), 0.4, 0.02


def test_planted_position_bias_is_measured_and_corrected():
    bias = 0.15
    trials = planted_trials(MU, SIGMA, LAPSE, n_per_position=400, bias=bias, seed=11)
    result = fit_behaviour(trials, BehaviourParams(n_boot=300, variants=("choice",)))
    row = result.position_bias.iloc[0]
    # accuracy_A - accuracy_B = (P + b) - (P - b) = 2b where nothing is clipped
    assert row["low"] <= 2 * bias <= row["high"]
    assert row["bias"] == pytest.approx(2 * bias, abs=0.05)
    assert row["p_choose_a"] > 0.5
    truth = two_alternative(np.log(np.array(RATIOS)), MU, SIGMA, LAPSE)
    cells = result.cells.sort_values("ratio")
    unclipped = truth + bias <= 1.0
    corrected = cells["accuracy"].to_numpy()[unclipped]
    assert np.abs(corrected - truth[unclipped]).max() < 0.06
    # the uncorrected share of A-correct trials alone is off by the bias
    assert np.abs(cells["accuracy_a"].to_numpy()[unclipped] - truth[unclipped]).mean() > 0.1
    assert cells["bias"].to_numpy()[unclipped] == pytest.approx(np.full(unclipped.sum(), 2 * bias), abs=0.1)


def test_a_model_that_always_answers_a_is_named_and_its_corrected_accuracy_is_chance():
    trials = planted_trials(MU, SIGMA, LAPSE, n_per_position=50, seed=12)
    trials = trials.assign(chosen="A", correct=trials["larger"] == "A")
    result = fit_behaviour(trials, BehaviourParams(n_boot=0), model="stubborn")
    assert result.cells["accuracy"].to_numpy() == pytest.approx(np.full(len(RATIOS), 0.5))
    assert result.position_bias.iloc[0]["p_choose_a"] == pytest.approx(1.0)
    assert result.position_bias.iloc[0]["bias"] == pytest.approx(1.0)
    serious = [c for c in result.caveats() if c.severity == Severity.SERIOUS]
    assert serious and "'A'" in serious[0].text and serious[0].model == "stubborn"
    assert result.weber_fractions()["weber_fraction"].isna().all()


def test_trials_below_the_option_mass_are_not_measured_and_are_counted():
    trials = planted_trials(MU, SIGMA, LAPSE, n_per_position=20, seed=13)
    unanswered = np.arange(len(trials)) % 4 == 0
    trials.loc[unanswered, ["prob_a", "prob_b"]] = 0.01
    result = fit_behaviour(trials, BehaviourParams(n_boot=0, min_option_mass=0.5))
    assert result.n_unanswered == int(unanswered.sum())
    assert result.cells["n_unanswered"].sum() == int(unanswered.sum())
    assert (result.cells["n_a"] + result.cells["n_b"]).sum() == len(trials) - int(unanswered.sum())
    assert result.weber_fractions()["n_trials"].iloc[0] == len(trials) - int(unanswered.sum())
    assert any("unanswered" in line for line in result.warnings())
    quiet = fit_behaviour(trials, BehaviourParams(n_boot=0, min_option_mass=0.0))
    assert quiet.n_unanswered == 0 and not any("unanswered" in line for line in quiet.warnings())
