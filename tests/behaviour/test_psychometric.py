"""magdash's conventions: planted psychometric functions are recovered, chance gives no Weber fraction."""

from __future__ import annotations

import math

import numpy as np
import pytest

from magdash.behaviour.behaviour_params import BehaviourParams
from magdash.behaviour.behaviour_result import fit_behaviour
from magdash.behaviour.psychometric import (
    STATUS_ABOVE,
    STATUS_BELOW,
    STATUS_BELOW_ONE,
    STATUS_CHANCE,
    STATUS_OK,
    fit_two_alternative,
    judge,
    log_threshold,
    two_alternative,
)
from tests.behaviour.support import RATIOS, chance_trials, planted_trials

MU, SIGMA, LAPSE = math.log(1.4), 0.35, 0.04


def planted_weber_fraction(mu: float, sigma: float, lapse: float) -> float:
    return math.exp(mu + sigma * float(np.asarray(log_threshold(0.0, 1.0, lapse)))) - 1.0


def test_the_threshold_is_where_the_function_is_at_75_percent():
    threshold = float(log_threshold(MU, SIGMA, LAPSE))
    assert float(two_alternative(np.array(threshold), MU, SIGMA, LAPSE)) == pytest.approx(0.75, abs=1e-12)
    assert math.isinf(float(log_threshold(MU, SIGMA, 0.25)))


def test_planted_choices_are_recovered_inside_their_intervals():
    trials = planted_trials(MU, SIGMA, LAPSE, n_per_position=150, seed=3)
    result = fit_behaviour(trials, BehaviourParams(n_boot=400, variants=("choice",), seed=5))
    row = result.weber_fractions("magdash", "choice").iloc[0]
    truth = {"mu": MU, "sigma": SIGMA, "lapse": LAPSE}
    for name, value in truth.items():
        assert row[f"{name}_low"] <= value <= row[f"{name}_high"], (name, row[f"{name}_low"], row[f"{name}_high"])
    wf = planted_weber_fraction(MU, SIGMA, LAPSE)
    assert row["wf_low"] <= wf <= row["wf_high"]
    assert row["weber_fraction"] == pytest.approx(wf, abs=0.08)
    assert row["status"] == STATUS_OK and row["in_range"]
    assert row["wf_low"] < row["weber_fraction"] < row["wf_high"]


def test_the_graded_variant_recovers_the_function_from_the_soft_choice_exactly():
    trials = planted_trials(MU, SIGMA, LAPSE, n_per_position=20, seed=4, graded_exact=True)
    result = fit_behaviour(trials, BehaviourParams(n_boot=0, variants=("graded",)))
    row = result.weber_fractions("magdash", "graded").iloc[0]
    assert row["mu"] == pytest.approx(MU, abs=1e-3)
    assert row["sigma"] == pytest.approx(SIGMA, abs=1e-3)
    assert row["lapse"] == pytest.approx(LAPSE, abs=1e-3)
    assert row["weber_fraction"] == pytest.approx(planted_weber_fraction(MU, SIGMA, LAPSE), abs=1e-3)


def test_random_answers_are_at_chance_and_their_weber_fraction_is_undefined():
    result = fit_behaviour(chance_trials(n_per_position=100), BehaviourParams(n_boot=50), model="@random")
    magdash = result.fits[result.fits["conventions"] == "magdash"]
    assert len(magdash) == 10
    assert magdash["weber_fraction"].isna().all()
    assert (magdash["status"] == STATUS_CHANCE).all()
    assert not magdash["in_range"].any()
    assert result.cells["accuracy"].between(0.3, 0.7).all()
    assert any("at chance" in line for line in result.warnings())
    assert all(record["weber_fraction"] is None for record in result.records())


def test_a_threshold_below_ratio_one_is_no_weber_fraction_and_one_above_the_tested_ratios_is_flagged():
    ratios = np.array(RATIOS)
    below_one = judge(-1.0, 0.3, 0.0, ratios, 1e-9, 0.05)
    assert math.isnan(below_one.weber_fraction) and below_one.status == STATUS_BELOW_ONE and not below_one.in_range
    short = judge(math.log(1.02), 0.01, 0.0, ratios, 1e-9, 0.05)
    assert short.status == STATUS_BELOW and not short.in_range and short.weber_fraction == pytest.approx(0.02, abs=1e-3)
    beyond = judge(math.log(5.0), 0.1, 0.0, ratios, 1e-9, 0.05)
    assert beyond.status == STATUS_ABOVE and math.isnan(beyond.weber_fraction)
    assert beyond.threshold == pytest.approx(5.0, rel=1e-6)


def test_the_fit_never_gives_a_negative_weber_fraction():
    rng = np.random.default_rng(9)
    ratios = np.array(RATIOS)
    for _ in range(8):
        proportions = np.clip(rng.uniform(0.4, 1.0, ratios.size), 0, 1)
        fit = fit_two_alternative(ratios, proportions, np.full(ratios.size, 50.0), 0.2, 0.05)
        assert math.isnan(fit.weber_fraction) or fit.weber_fraction >= 0
