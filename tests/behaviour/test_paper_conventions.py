"""The paper's conventions reproduce its published fits of Llama-3-8B-Instruct's B1 trials."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from magdash.behaviour.behaviour_params import BehaviourParams
from magdash.behaviour.behaviour_result import fit_behaviour
from magdash.behaviour.paper import (
    STATUS_NEGATIVE,
    bca_interval,
    fit_paper,
    paper_bootstrap,
    paper_cells,
    paper_weber_fraction,
    valid_replicates,
)
from magdash.behaviour.published import SHIPPED_FITS, SHIPPED_TRIALS, read_published_trials, shipped_file


@pytest.fixture(scope="module")
def published():
    trials = read_published_trials(shipped_file(SHIPPED_TRIALS))
    fits = json.loads(shipped_file(SHIPPED_FITS).read_text())
    result = fit_behaviour(trials[trials["task"] == "B1"], BehaviourParams(conventions=("paper",), n_boot=0))
    return trials, fits, result


def test_paper_conventions_reproduce_the_published_fits(published):
    _, fits, result = published
    rows = result.weber_fractions("paper").set_index("reference")
    assert sorted(rows.index) == [10.0, 30.0, 100.0, 300.0, 1000.0]
    for reference, row in rows.iterrows():
        expected = fits["psychometric_fits"][str(reference)]
        for name in ("mu", "sigma", "lapse", "weber_fraction"):
            assert row[name] == pytest.approx(expected[name], abs=1e-6), (reference, name)


def test_the_negative_published_weber_fraction_is_flagged_outside_the_tested_ratios(published):
    _, _, result = published
    rows = result.weber_fractions("paper").set_index("reference")
    assert rows.loc[1000.0, "weber_fraction"] == pytest.approx(-0.1735622714696955, abs=1e-6)
    assert not rows.loc[1000.0, "in_range"]
    assert rows.loc[1000.0, "status"] == STATUS_NEGATIVE
    assert rows.drop(index=1000.0)["in_range"].all()


def test_position_corrected_cells_match_the_published_cells(published):
    _, fits, result = published
    for _, cell in result.cells.iterrows():
        expected = fits["position_corrected_cells"][f"{cell['reference']},{cell['ratio']}"]
        assert cell["accuracy"] == pytest.approx(expected["acc_corrected"], abs=1e-12)
        assert cell["accuracy_a"] == pytest.approx(expected["acc_a"], abs=1e-12)
        assert (cell["n_a"], cell["n_b"]) == (expected["n_a"], expected["n_b"])
        assert cell["bias"] == pytest.approx(expected["acc_a"] - expected["acc_b"], abs=1e-12)


def test_the_published_aggregate_fit_is_reproduced_from_the_published_accuracies(published):
    _, fits, _ = published
    ratios = np.array(sorted(float(r) for r in fits["aggregate_accuracy"]))
    accuracies = np.array([fits["aggregate_accuracy"][f"{r:g}" if f"{r:g}" in fits["aggregate_accuracy"] else str(r)]
                           for r in ratios])
    fit = fit_paper(np.log(ratios), accuracies, np.full(ratios.size, 250.0))
    assert fit.weber_fraction == pytest.approx(fits["psychometric_fits"]["aggregate"]["weber_fraction"], abs=1e-6)


def test_the_paper_weber_fraction_is_undefined_when_the_function_cannot_reach_75_percent():
    assert math.isnan(paper_weber_fraction(0.0, 1.0, 0.6))  # (0.75 - 0.3) / 0.4 > 1
    ratios, accuracies, counts = paper_cells(np.array([1.5, 1.5, 2.0]), np.array(["A", "A", "B"]),
                                             np.array([True, False, True]))
    # a position without trials counts as 0.5, as in the paper
    assert accuracies.tolist() == [pytest.approx(0.5), pytest.approx(0.75)] and counts.tolist() == [2, 1]


@pytest.mark.slow
@pytest.mark.long
@pytest.mark.parametrize("reference", [10.0, 1000.0])
def test_the_paper_bootstrap_reproduces_the_published_intervals(published, reference):
    """10,000 of the paper's resamples (seed 42) at one reference: minutes each, hence slow. At 1000 the
    estimate (-0.174) lies below every valid replicate: the published BCa interval is degenerate."""
    trials, fits, _ = published
    rows = trials[(trials["task"] == "B1") & (trials["reference"] == reference)]
    replicates = paper_bootstrap(rows["ratio"].to_numpy(), rows["larger"].to_numpy(),
                                 rows["correct"].to_numpy(dtype=bool), 10_000, seed=42)
    valid = valid_replicates(replicates)
    expected = fits["bootstrap_weber_fractions"][str(reference)]
    assert valid.size == expected["n_valid"]
    assert float(np.median(valid)) == pytest.approx(expected["median"], abs=1e-9)
    low, high = np.percentile(valid, [2.5, 97.5])
    assert low == pytest.approx(expected["percentile_ci_low"], abs=1e-9)
    assert high == pytest.approx(expected["percentile_ci_high"], abs=1e-9)
    estimate = fits["psychometric_fits"][str(reference)]["weber_fraction"]
    low, high = bca_interval(valid, estimate, 0.95)
    assert low == pytest.approx(expected["ci_low"], abs=1e-9)
    assert high == pytest.approx(expected["ci_high"], abs=1e-9)


def test_too_few_valid_replicates_give_no_interval_and_an_estimate_below_them_all_a_degenerate_one():
    assert all(math.isnan(v) for v in bca_interval(np.linspace(0.1, 0.2, 9), 0.15, 0.95))
    replicates = np.random.default_rng(0).gamma(4.0, 0.05, 500)
    # the published interval at reference 1000: a WF of -0.174 below every valid replicate
    lowest = float(np.percentile(replicates, 0.1))
    assert bca_interval(replicates, -0.174, 0.95) == (lowest, lowest)
    low, high = bca_interval(replicates, float(np.median(replicates)), 0.95)
    assert replicates.min() < low < float(np.median(replicates)) < high < replicates.max()
    valid = valid_replicates(np.array([math.nan, -0.1, 0.0, 0.2, 10.0, 12.0, 0.3]))
    assert valid.tolist() == [0.2, 0.3]
