"""The steering summary against planted frames (a magnitude direction that moves p by a known amount,
nulls that do not) and a case computed by hand."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from magdash.caveats import Caveat, Severity
from magdash.errors import AnalysisError
from magdash.steering.steer_params import SteerParams
from magdash.steering.steer_result import SteerResult, summarise_steering, unpatched_answers
from magdash.steering.summary import DOSE_COLUMNS, LAYER_COLUMNS, steering_tables

KINDS = ("magnitude",) + ("random",) * 10 + ("orthogonal",) * 10
MASS = 0.9
SHIFT = 0.2  # the magnitude direction's planted shift of p(choose a) at dose 1, at the steered layer
NOISE = 0.01


def planted_frames(n_trials: int = 200, seed: int = 0, steered_layer: int = 1, at_ceiling: bool = False,
                   broken_layer: int | None = None):
    """Two layers; at ``steered_layer`` the magnitude direction raises p(choose a) by SHIFT * dose, every
    other (layer, direction) moves it by N(0, NOISE * dose). The options always hold MASS (or a tenth of it
    along the magnitude direction at ``broken_layer``)."""
    rng = np.random.default_rng(seed)
    larger = rng.choice(["A", "B"], n_trials)
    correct = 0.995 if at_ceiling else 0.6
    choose_a = np.where(larger == "A", correct, 1 - correct)
    baseline = pd.DataFrame({"trial_id": [f"t{i}" for i in range(n_trials)], "larger": larger,
                             "p_a": MASS * choose_a, "p_b": MASS * (1 - choose_a)})
    rows = []
    for layer in (0, 1):
        for direction, kind in enumerate(KINDS):
            for dose in (0.25, 0.5, 0.75, 1.0):
                if kind == "magnitude" and layer == steered_layer:
                    moved = choose_a + SHIFT * dose
                else:
                    moved = choose_a + rng.normal(0.0, NOISE * dose, n_trials)
                mass = MASS / 10 if (kind == "magnitude" and layer == broken_layer) else MASS
                rows.append(pd.DataFrame({"trial_id": baseline["trial_id"], "layer": layer, "direction": direction,
                                          "dose": dose, "p_a": mass * moved, "p_b": mass * (1 - moved)}))
    return pd.concat(rows, ignore_index=True), baseline


def test_a_planted_magnitude_direction_comes_out_specific_and_relevant():
    steered, baseline = planted_frames()
    layers, doses = steering_tables(steered, baseline, KINDS, SteerParams(n_boot=300))
    assert list(layers.columns) == LAYER_COLUMNS and list(doses.columns) == DOSE_COLUMNS
    moved = layers.set_index("layer").loc[1]
    assert moved["magnitude_effect"] == pytest.approx(SHIFT, abs=1e-12)
    assert moved["shift"] == pytest.approx(SHIFT, abs=1e-12)
    assert moved["share_above_random"] == 1.0 and moved["share_above_orthogonal"] == 1.0
    assert bool(moved["relevant"])
    # |N(0, s)| has mean s * sqrt(2 / pi): specificity near SHIFT / that, far above 1.
    expected = SHIFT / (NOISE * np.sqrt(2 / np.pi))
    assert moved["specificity"] == pytest.approx(expected, rel=0.1)
    assert moved["specificity_orthogonal"] == pytest.approx(expected, rel=0.1)
    assert moved["specificity_low"] > 10 and moved["specificity_percentile"] > 10
    assert moved["random_shift"] == pytest.approx(0.0, abs=3 * NOISE / np.sqrt(2000))
    assert moved["baseline_correct"] == pytest.approx(0.6) and moved["option_mass"] == pytest.approx(1.0)
    # The dose-response of the magnitude direction at the steered layer is the planted line.
    line = doses[(doses["layer"] == 1) & (doses["kind"] == "magnitude")]
    np.testing.assert_allclose(line["effect"], SHIFT * line["dose"], atol=1e-12)


def test_random_only_gives_specificity_about_one_and_no_relevance():
    steered, baseline = planted_frames()
    layers, _ = steering_tables(steered, baseline, KINDS, SteerParams(n_boot=300))
    unmoved = layers.set_index("layer").loc[0]
    assert unmoved["specificity"] == pytest.approx(1.0, abs=0.2)
    # The chance that one draw exceeds the 97.5th percentile of ten others is small.
    assert unmoved["share_above_random"] < 0.2 and not bool(unmoved["relevant"])
    assert abs(unmoved["shift"]) < 3 * NOISE


@pytest.mark.slow
def test_the_specificity_interval_covers_one_when_every_direction_is_random():
    covered = 0
    for seed in range(20):
        steered, baseline = planted_frames(n_trials=200, seed=seed)
        layers, _ = steering_tables(steered, baseline, KINDS, SteerParams(n_boot=300))
        unmoved = layers.set_index("layer").loc[0]
        covered += bool(unmoved["specificity_low"] < 1.0 < unmoved["specificity_high"])
    assert covered >= 16  # a 95% interval: 19 expected; a percentile bootstrap of a ratio of 200 trials covers a little less


def test_a_small_hand_computed_case():
    baseline = pd.DataFrame({"trial_id": ["t1", "t2"], "larger": ["A", "B"], "p_a": [0.3, 0.2], "p_b": [0.1, 0.2]})
    cells = {  # (trial, direction): (p_a, p_b); p(correct) before: t1 0.75, t2 0.5
        ("t1", 0): (0.05, 0.15), ("t1", 1): (0.3, 0.1), ("t1", 2): (0.2, 0.2),
        ("t2", 0): (0.15, 0.25), ("t2", 1): (0.3, 0.1), ("t2", 2): (0.2, 0.2),
    }
    steered = pd.DataFrame([{"trial_id": trial, "layer": 3, "direction": direction, "dose": 1.0, "p_a": p_a,
                             "p_b": p_b} for (trial, direction), (p_a, p_b) in cells.items()])
    params = SteerParams(doses=(1.0,), n_boot=0, orthogonal_null=False)
    layers, doses = steering_tables(steered, baseline, ("magnitude", "random", "random"), params, {3: 2.5})
    row = layers.iloc[0]
    # |delta p(correct)|: magnitude 0.5 and 0.125; random (0, 0.25) and (0.25, 0).
    assert row["magnitude_effect"] == pytest.approx(0.3125)
    assert row["random_effect"] == pytest.approx(0.125)
    assert row["specificity"] == pytest.approx(2.5)
    assert row["random_percentile"] == pytest.approx(0.125)  # both random directions average 0.125
    assert row["specificity_percentile"] == pytest.approx(2.5)
    # Per trial the 97.5th percentile of (0, 0.25) is 0.24375: t1's 0.5 exceeds it, t2's 0.125 does not.
    assert row["share_above_random"] == pytest.approx(0.5) and not bool(row["relevant"])
    # p(choose a) along the magnitude direction: t1 0.75 -> 0.25, t2 0.5 -> 0.375.
    assert row["shift"] == pytest.approx(-0.3125)
    assert row["random_shift"] == pytest.approx(0.0)
    assert row["option_mass"] == pytest.approx(0.75)  # t1 keeps 0.2 of 0.4, t2 all of it
    assert row["baseline_correct"] == pytest.approx(0.625)
    assert (row["dose_unit"], row["n_trials"]) == (2.5, 2)
    assert np.isnan(row["orthogonal_effect"]) and np.isnan(row["magnitude_effect_low"])
    assert doses.set_index("kind").loc["random", "effect"] == pytest.approx(0.125)
    # Pushing b instead: the shift is p(choose b)'s, the opposite sign.
    other, _ = steering_tables(steered, baseline, ("magnitude", "random", "random"),
                               SteerParams(doses=(1.0,), n_boot=0, orthogonal_null=False, operand="b"))
    assert other.iloc[0]["shift"] == pytest.approx(0.3125)
    assert other.iloc[0]["magnitude_effect"] == pytest.approx(0.3125)


def test_intervals_hold_the_estimate_and_repeat_with_the_seed():
    steered, baseline = planted_frames(n_trials=60)
    params = SteerParams(n_boot=200)
    layers, _ = steering_tables(steered, baseline, KINDS, params)
    for name in ("magnitude_effect", "random_effect", "specificity", "shift"):
        assert (layers[f"{name}_low"] <= layers[name] + 1e-12).all()
        assert (layers[name] <= layers[f"{name}_high"] + 1e-12).all()
    again, _ = steering_tables(steered, baseline, KINDS, params)
    pd.testing.assert_frame_equal(layers, again)


def test_frames_that_cannot_be_summarised_are_refused():
    steered, baseline = planted_frames(n_trials=10)
    with pytest.raises(AnalysisError, match="lacks some"):
        steering_tables(steered.iloc[1:], baseline, KINDS, SteerParams(n_boot=0))
    with pytest.raises(AnalysisError, match="lacks the column"):
        steering_tables(steered.drop(columns="p_b"), baseline, KINDS, SteerParams(n_boot=0))
    with pytest.raises(AnalysisError, match="exactly one 'magnitude'"):
        steering_tables(steered, baseline, ("random",) * len(KINDS), SteerParams(n_boot=0))


def test_the_result_round_trips_and_names_its_caveats():
    steered, baseline = planted_frames(n_trials=40, at_ceiling=True, broken_layer=0)
    result = summarise_steering(steered, baseline, KINDS, SteerParams(n_boot=20), dose_units={0: 1.5, 1: 2.0},
                                model="tiny", stimuli="paper", comparisons="paper")
    assert result.relevant_layers() == [1] and result.n_trials == 40 and result.at_ceiling == 1.0
    again = SteerResult.from_payload(result.to_payload())
    assert again.params == result.params and again.n_trials == 40
    pd.testing.assert_frame_equal(again.layers, result.layers, check_dtype=False)
    pd.testing.assert_frame_equal(again.doses, result.doses, check_dtype=False)
    warnings = " ".join(result.warnings())
    assert "beyond 0.99" in warnings and "layer(s) 0 " in warnings
    record = result.to_json()["records"][1]
    assert record["layer"] == 1 and record["relevant"] is True and record["dose_unit"] == 2.0


def test_a_direction_on_a_few_coordinates_is_named_as_possibly_massive_dimensions():
    steered, baseline = planted_frames(n_trials=40)
    spread = summarise_steering(steered, baseline, KINDS, SteerParams(n_boot=0), top_shares={0: 0.02, 1: 0.4})
    assert spread.layers["top_dimension_share"].tolist() == pytest.approx([0.02, 0.4])
    assert not any("massive dimensions" in line for line in spread.warnings())
    concentrated = summarise_steering(steered, baseline, KINDS, SteerParams(n_boot=0), top_shares={0: 0.02, 1: 0.9})
    [line] = [line for line in concentrated.warnings() if "massive dimensions" in line]
    assert "layer(s) 1 " in line and "3 coordinates" in line
    again = SteerResult.from_payload(concentrated.to_payload())
    assert again.layers["top_dimension_share"].tolist() == pytest.approx([0.02, 0.9])


def _baseline(choose_a_when_a_larger: float, choose_a_when_b_larger: float, n_per_side: int = 50,
              mass: float = MASS) -> pd.DataFrame:
    """Unpatched trials, half with the larger number in A: on a ``choose_a_*`` share of each side the model
    chooses A (p_a = 0.7 x mass), on the rest B."""
    rows = []
    for larger, share in (("A", choose_a_when_a_larger), ("B", choose_a_when_b_larger)):
        chose_a = np.arange(n_per_side) < round(share * n_per_side)
        for index, a in enumerate(chose_a):
            p_a = 0.7 if a else 0.3
            rows.append({"trial_id": f"{larger}{index}", "larger": larger, "p_a": mass * p_a, "p_b": mass * (1 - p_a)})
    return pd.DataFrame(rows)


def test_the_unpatched_answers_are_read_by_hand():
    # 40 of 50 A-larger trials answered A (0.8 correct), 20 of 50 B-larger trials answered A (0.6 correct).
    answers = unpatched_answers(_baseline(0.8, 0.4))
    assert answers.accuracy == pytest.approx(0.7)
    assert answers.choose_a == pytest.approx(0.6)
    assert answers.option_mass == pytest.approx(MASS)
    # one-sided: P(X >= 70) for X ~ Binomial(100, 1/2)
    expected = sum(math.comb(100, k) for k in range(70, 101)) / 2 ** 100
    assert answers.p_value == pytest.approx(expected, rel=1e-9)


def _steered_on(baseline: pd.DataFrame) -> pd.DataFrame:
    """Every direction at layer 0 moving p_a by a little (the steering frame's shape, three directions)."""
    return pd.concat([baseline.assign(layer=0, direction=direction, dose=1.0, p_a=baseline["p_a"] + 0.01 * (1 + direction))
                      .drop(columns="larger") for direction in (0, 1, 2)], ignore_index=True)


def _caveats(baseline: pd.DataFrame) -> list[Caveat]:
    result = summarise_steering(_steered_on(baseline), baseline, ("magnitude", "random", "random"),
                                SteerParams(n_random=2, orthogonal_null=False, n_boot=0, doses=(1.0,)))
    again = SteerResult.from_payload(result.to_payload())
    assert again.caveats() == result.caveats()
    return result.caveats()


def test_steering_a_model_whose_choices_ignore_the_numbers_is_named_serious():
    # The model answers A on every trial: position-corrected accuracy 0.5, binomial p about 0.54.
    [caveat] = [caveat for caveat in _caveats(_baseline(1.0, 1.0)) if "do not follow the numbers" in caveat.text]
    assert caveat.severity == Severity.SERIOUS
    assert "accuracy 0.50 on 100 prompts" in caveat.text and "'A' on 100%" in caveat.text
    # Following the numbers on every trial: nothing said about the unpatched answers.
    assert not any("numbers" in caveat.text or "position" in caveat.text for caveat in _caveats(_baseline(1.0, 0.0)))


def test_a_model_that_leans_to_one_position_but_follows_the_numbers_is_a_caution():
    # A on all A-larger trials and on 80% of the B-larger ones: accuracy 0.6 (p = 0.028), A on 90%.
    leaning = _caveats(_baseline(1.0, 0.8))
    assert not any("do not follow the numbers" in caveat.text for caveat in leaning)
    [caveat] = [caveat for caveat in leaning if "leans to one position" in caveat.text]
    assert caveat.severity == Severity.CAUTION and "'A' on 90%" in caveat.text


def test_answer_options_that_hold_little_probability_are_named():
    [caveat] = [caveat for caveat in _caveats(_baseline(1.0, 0.0, mass=0.1)) if "answer options hold" in caveat.text]
    assert caveat.severity == Severity.CAUTION and "median 0.1 " in caveat.text and "(under 0.5," in caveat.text
    assert not any("answer options hold" in caveat.text for caveat in _caveats(_baseline(1.0, 0.0, mass=0.6)))
