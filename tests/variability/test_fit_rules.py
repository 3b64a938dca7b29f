"""FitRules: the scaling fit's rules as one object, built from the analysis's parameters."""

from __future__ import annotations

import numpy as np
import pytest

from magdash.errors import AnalysisError
from magdash.variability.analysis_params import AnalysisParams, FitRules
from magdash.variability.fits import fit_scaling, scaling_mask
from magdash.variability.measures import OUTLIER_RULE_MEASURES

MAGNITUDES = np.arange(1.0, 27.0)


def test_an_analysis_hands_its_choices_and_its_conventions_to_the_fits():
    params = AnalysisParams(n_boot=123, seed=9, ci=0.9, outlier_factor=4.5, conventions="paper")
    rules = params.fit_rules()
    assert rules == FitRules(drop_outliers=False, outlier_factor=4.5, n_boot=123, seed=9, ci=0.9, stream="legacy",
                             ci_method="percentile")
    assert AnalysisParams().fit_rules(drop_outliers=True) == FitRules(
        drop_outliers=True, n_boot=AnalysisParams().n_boot, ci_method="studentized")
    for measure in ("eucl", "proj", "residual", "trace"):
        assert rules.for_measure(measure).drop_outliers == (measure in OUTLIER_RULE_MEASURES)
        assert rules.for_measure(measure).outlier_factor == 4.5
    assert rules.without_interval().n_boot == 0 and rules.without_interval().seed == 9


def test_the_outlier_factor_decides_which_points_are_dropped():
    values = MAGNITUDES**-0.1
    values[5] = 4.0 * np.median(values)
    strict = FitRules(drop_outliers=True, n_boot=0)
    kept, dropped = scaling_mask(MAGNITUDES, values, rules=strict)
    assert dropped == 1 and not kept[5]
    kept, dropped = scaling_mask(MAGNITUDES, values, rules=FitRules(drop_outliers=True, outlier_factor=5.0, n_boot=0))
    assert dropped == 0 and kept.all()
    assert fit_scaling(MAGNITUDES, values, rules=strict).alpha == pytest.approx(-0.1, abs=1e-12)


def test_the_stream_and_the_seed_decide_the_resamples():
    rng = np.random.default_rng(0)
    values = MAGNITUDES**-0.1 * np.exp(rng.normal(scale=0.1, size=MAGNITUDES.size))
    rules = FitRules(n_boot=300, seed=4)
    same = fit_scaling(MAGNITUDES, values, rules=rules)
    assert fit_scaling(MAGNITUDES, values, rules=rules) == same
    legacy = fit_scaling(MAGNITUDES, values, rules=FitRules(n_boot=300, seed=4, stream="legacy"))
    assert legacy.alpha == same.alpha and legacy.ci_low != same.ci_low


@pytest.mark.parametrize(("changes", "message"), [
    ({"ci_method": "jackknife"}, "unknown CI method 'jackknife'"),
    ({"n_boot": -1}, "must be >= 0, got -1"),
    ({"stream": "mt19937"}, "unknown bootstrap stream 'mt19937'"),
    ({"outlier_factor": 0.0}, "the outlier factor must be positive"),
])
def test_bad_rules_are_refused_when_built(changes, message):
    with pytest.raises(AnalysisError, match=message):
        FitRules(**changes)
