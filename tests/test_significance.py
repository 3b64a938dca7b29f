"""The smallest p a test can give, against the tests themselves."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from magdash.significance import can_reach, layer_test_note, smallest_p, stimulus_estimate, unreachable_note


@pytest.mark.parametrize("n", [3, 4, 5, 6, 7])
def test_wilcoxon_bound_is_what_scipys_exact_test_gives_at_its_most_extreme(n):
    differences = np.arange(1.0, n + 1)  # every difference positive: the most extreme arrangement
    exact = stats.wilcoxon(differences, method="exact").pvalue
    assert smallest_p("wilcoxon", n) == pytest.approx(exact, rel=1e-12)
    assert can_reach("wilcoxon", n) == (n >= 6)


@pytest.mark.parametrize("n", [3, 4, 5])
def test_spearman_bound_is_the_share_of_orderings_as_extreme_as_a_perfect_one(n):
    orderings = list(itertools.permutations(range(n)))
    rhos = [stats.spearmanr(range(n), order).statistic for order in orderings]
    share = np.mean(np.abs(rhos) >= 1 - 1e-12)
    assert smallest_p("spearman", n) == pytest.approx(share, rel=1e-12)


def test_the_note_says_why_a_test_cannot_reach_the_level_and_is_empty_when_it_can():
    note = unreachable_note("wilcoxon", 3)
    assert note == "with 3 pairs the smallest p this test can give is 0.25, so it cannot reach 0.05 however large the effect"
    assert unreachable_note("spearman", 3, unit="layers").startswith("with 3 layers the smallest p this test can give is 0.33")
    assert unreachable_note("wilcoxon", 6) == "" and unreachable_note("permutation", 999) == ""
    assert unreachable_note("permutation", 10, level=0.05).startswith("with 10 resamples")
    assert unreachable_note("wilcoxon", 0) == "with 0 pairs this test is undefined"
    assert math.isnan(smallest_p("spearman", 1))
    with pytest.raises(ValueError, match="unknown test"):
        smallest_p("anova", 3)


def test_a_bootstrap_of_b_resamples_gives_at_least_two_over_b_plus_one():
    assert smallest_p("bootstrap", 999) == pytest.approx(0.002)
    assert not can_reach("bootstrap", 39) and can_reach("bootstrap", 40)  # 2/40 = 0.05 is not below 0.05
    assert unreachable_note("bootstrap", 19).startswith("with 19 resamples the smallest p this test can give is 0.1")


def test_the_stimulus_estimate_leads_with_its_interval_and_says_when_it_cannot_reach_the_level():
    text = stimulus_estimate(-0.0372, (-0.0582, -0.0175), 8.0e-4, 9981)
    assert text == "-0.0372, 95% CI [-0.0582, -0.0175] (stimulus bootstrap, 9,981 resamples), p = 8.0e-04"
    few = stimulus_estimate(-0.0372, (-0.0582, -0.0175), 0.1, 19, level=0.9)
    assert "90% CI" in few and few.endswith("so it cannot reach 0.05 however large the effect")
    assert stimulus_estimate(0.5, (math.nan, math.nan), math.nan, 0) == (
        "0.5000 (no stimulus-bootstrap interval: the bootstrap was off)")
    assert layer_test_note(15).startswith("a test over 15 core layers, which share their stimuli")
