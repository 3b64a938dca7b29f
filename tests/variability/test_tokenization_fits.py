"""Alpha within token-count strata and alpha adjusted for tokenization
(magdash.variability.tokenization_fits), against planted slopes and steps and a case computed by hand."""

import math

import numpy as np
import pytest
from scipy import stats

from magdash.errors import AnalysisError
from magdash.stimuli import PAPER_MAGNITUDES
from magdash.variability.analysis_params import CI_METHODS, FitRules
from magdash.variability.fits import BOOTSTRAP_STREAMS, MIN_POINTS, fit_scaling, ols, resample_counts
from magdash.variability.tokenization_fits import (
    MAX_PARAMETERS,
    _group_sums,
    _projection_sums,
    adjusted_alpha,
    strata_alphas,
)

PLANTED_ALPHA = -0.1
# A step in log V at each digit-count boundary (1-9, 10-99, 100-999, 1000), rising with the
# number of digits as the token count does for a tokenizer that splits every digit.
PLANTED_STEPS = {1: 0.0, 2: 0.5, 3: 1.0, 4: 1.5}


def digit_counts(magnitudes) -> np.ndarray:
    return np.array([len(str(int(n))) for n in magnitudes])


def planted(magnitudes, steps=PLANTED_STEPS, alpha=PLANTED_ALPHA, noise=0.0, seed=0) -> np.ndarray:
    """V(n) = 2 n^alpha exp(step[digits(n)]) exp(noise)."""
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    log_noise = np.random.default_rng(seed).normal(0.0, noise, magnitudes.size) if noise else 0.0
    step = np.array([steps[d] for d in digit_counts(magnitudes)])
    return 2.0 * magnitudes**alpha * np.exp(step + log_noise)


@pytest.mark.parametrize("magnitudes", [PAPER_MAGNITUDES, tuple(range(1, 1001))], ids=["paper", "1-1000"])
def test_the_adjusted_alpha_is_the_planted_one_and_the_raw_alpha_is_biased(magnitudes):
    n = np.asarray(magnitudes, dtype=np.float64)
    digits = digit_counts(n)
    values = planted(n)
    raw = fit_scaling(n, values, rules=FitRules(drop_outliers=False, n_boot=0))
    # Noiseless, the raw slope is the planted alpha plus the OLS slope of the steps on log n
    # (0.21 on the paper's set, 0.14 on 1..1000: a step of 0.5 per decade, log 10 = 2.3 apart):
    # larger than the planted exponent itself, so the raw alpha even has the wrong sign.
    bias = ols(np.log(n), np.array([PLANTED_STEPS[d] for d in digits])).slope
    assert raw.alpha == pytest.approx(PLANTED_ALPHA + bias, abs=1e-12)
    assert abs(raw.alpha - PLANTED_ALPHA) > abs(PLANTED_ALPHA)
    assert raw.alpha > 0 > PLANTED_ALPHA
    adjusted = adjusted_alpha(n, values, digits, rules=FitRules(drop_outliers=False, n_boot=0))
    assert adjusted.alpha == pytest.approx(PLANTED_ALPHA, abs=1e-12)
    assert adjusted.reference == "1"
    assert adjusted.steps == pytest.approx({"2": 0.5, "3": 1.0, "4": 1.5}, abs=1e-12)
    assert adjusted.intercept == pytest.approx(math.log(2.0), abs=1e-12)
    assert adjusted.r2 == pytest.approx(1.0)
    assert (adjusted.n_points, adjusted.n_parameters, adjusted.df) == (n.size, 5, n.size - 5)
    assert adjusted.reason == "" and adjusted.dropped_levels == ()


def test_with_noise_the_adjusted_interval_covers_the_planted_alpha_and_the_raw_one_does_not():
    n = np.arange(1, 1001, dtype=np.float64)
    values = planted(n, noise=0.05, seed=3)
    rules = FitRules(n_boot=2000, seed=1, ci_method="studentized")
    raw = fit_scaling(n, values, rules=rules)
    adjusted = adjusted_alpha(n, values, digit_counts(n), rules=rules)
    assert raw.ci_low > 0 > PLANTED_ALPHA  # the raw interval lies on the other side of zero
    assert adjusted.ci_low < PLANTED_ALPHA < adjusted.ci_high
    assert adjusted.ci_high - adjusted.ci_low < 0.05
    assert abs(adjusted.alpha - PLANTED_ALPHA) < 3 * adjusted.se


def test_strata_alphas_recover_the_within_stratum_slope():
    n = np.asarray(PAPER_MAGNITUDES, dtype=np.float64)
    strata = strata_alphas(n, planted(n), digit_counts(n), rules=FitRules(drop_outliers=False, n_boot=200))
    assert [s.stratum for s in strata] == [1, 2, 3, 4]
    assert [s.n_magnitudes for s in strata] == [9, 10, 6, 1]  # 1-9; 10-90 with 15; 100-700 with 150; 1000
    assert [(s.smallest, s.largest) for s in strata] == [(1, 9), (10, 90), (100, 700), (1000, 1000)]
    for stratum in strata[:3]:
        assert stratum.has_fit and stratum.reason == ""
        assert stratum.fit.alpha == pytest.approx(PLANTED_ALPHA, abs=1e-12)
        assert stratum.fit.n_points == stratum.n_magnitudes
    assert not strata[3].has_fit
    assert math.isnan(strata[3].fit.alpha) and math.isnan(strata[3].fit.ci_low)
    assert strata[3].reason == f"1 point: a fit needs {MIN_POINTS}"


def test_strata_alphas_with_different_slopes_per_stratum():
    # The pattern reported for SmolLM2's V_proj at block 20: slopes of opposite signs by stratum.
    n = np.arange(1, 1001, dtype=np.float64)
    digits = digit_counts(n)
    slopes = {1: -0.06, 2: 0.12, 3: -0.12, 4: 0.0}
    values = np.exp([slopes[d] * math.log(k) for d, k in zip(digits, n, strict=True)])
    fitted = {s.stratum: s.fit.alpha for s in strata_alphas(n, values, digits, rules=FitRules(drop_outliers=False, n_boot=0))}
    assert fitted[1] == pytest.approx(-0.06) and fitted[2] == pytest.approx(0.12) and fitted[3] == pytest.approx(-0.12)
    assert math.isnan(fitted[4])


def test_a_hand_computed_case_with_two_strata():
    """Two strata of three points, x = log n and y = log V:
    A: x = 0, 1, 2, y = 1, 2, 4 (means 1, 7/3; Sxx 2, Sxy 3);
    B: x = 3, 4, 5, y = 10, 10, 13 (means 4, 11; Sxx 2, Sxy 3).
    Within-stratum normal equations: alpha = (3 + 3) / (2 + 2) = 3/2; intercepts
    c_A = 7/3 - 3/2 = 5/6 and c_B = 11 - 6 = 5, so the step is gamma_B = 25/6. Residuals
    1/6, -1/3, 1/6 and 1/2, -1, 1/2: RSS = 1/6 + 3/2 = 5/3 on 6 - 3 = 3 df, sigma^2 = 5/9,
    se = sqrt(5/9 / 4) = sqrt(5)/6. SST = 390 - 6 (20/3)^2 = 370/3, R^2 = 1 - (5/3)/(370/3) = 73/74."""
    x = np.array([0.0, 1, 2, 3, 4, 5])
    y = np.array([1.0, 2, 4, 10, 10, 13])
    fit = adjusted_alpha(np.exp(x), np.exp(y), ["A", "A", "A", "B", "B", "B"], rules=FitRules(drop_outliers=False, n_boot=0))
    assert fit.alpha == pytest.approx(1.5, abs=1e-12)
    assert fit.se == pytest.approx(math.sqrt(5) / 6, abs=1e-12)
    assert fit.df == 3 and fit.n_parameters == 3
    assert fit.p == pytest.approx(2 * stats.t.sf(1.5 / (math.sqrt(5) / 6), 3), rel=1e-9)
    assert fit.intercept == pytest.approx(5 / 6, abs=1e-12)
    assert fit.reference == "A" and fit.steps == pytest.approx({"B": 25 / 6}, abs=1e-12)
    assert fit.r2 == pytest.approx(73 / 74, abs=1e-12)
    t_fit = adjusted_alpha(np.exp(x), np.exp(y), ["A"] * 3 + ["B"] * 3, rules=FitRules(drop_outliers=False, n_boot=1, ci_method="t"))
    half = stats.t.ppf(0.975, 3) * math.sqrt(5) / 6
    assert (t_fit.ci_low, t_fit.ci_high) == pytest.approx((1.5 - half, 1.5 + half), abs=1e-12)


@pytest.mark.parametrize("ci_method", CI_METHODS)
@pytest.mark.parametrize("stream", BOOTSTRAP_STREAMS)
def test_with_one_stratum_the_adjusted_fit_is_the_raw_fit(ci_method, stream):
    """Same points, same resamples, same interval: the adjusted fit without levels is fit_scaling."""
    n = np.asarray(PAPER_MAGNITUDES, dtype=np.float64)
    values = planted(n, steps=dict.fromkeys(PLANTED_STEPS, 0.0), noise=0.3, seed=5)
    values[4] = 50 * np.median(values)  # an outlier for the 3x median rule
    for drop in (True, False):
        raw = fit_scaling(n, values, rules=FitRules(drop_outliers=drop, n_boot=1000, seed=7, stream=stream, ci_method=ci_method))
        adjusted = adjusted_alpha(n, values, [2] * n.size, rules=FitRules(drop_outliers=drop, n_boot=1000, seed=7, stream=stream, ci_method=ci_method))
        assert adjusted.n_points == raw.n_points and adjusted.n_outliers == raw.n_outliers == int(drop)
        for name in ("alpha", "se", "p", "r2", "intercept", "ci_low", "ci_high"):
            assert getattr(adjusted, name) == pytest.approx(getattr(raw, name), abs=1e-10), name


def test_the_outlier_rule_drops_the_same_points_in_the_strata_and_the_adjusted_fit():
    n = np.asarray(PAPER_MAGNITUDES, dtype=np.float64)
    values = planted(n, steps=dict.fromkeys(PLANTED_STEPS, 0.0))
    values[[2, 12]] = 100.0  # 3 and 20: far above 3 x the median
    values[5] = 0.0  # V <= 0: never fitted
    digits = digit_counts(n)
    strata = strata_alphas(n, values, digits, rules=FitRules(drop_outliers=True, n_boot=0))
    assert [s.fit.n_outliers for s in strata] == [1, 1, 0, 0]
    assert [s.fit.n_points for s in strata] == [7, 9, 6, 1]
    assert all(s.fit.alpha == pytest.approx(PLANTED_ALPHA) for s in strata[:3])
    adjusted = adjusted_alpha(n, values, digits, rules=FitRules(drop_outliers=True, n_boot=0))
    assert (adjusted.n_points, adjusted.n_outliers) == (23, 2)
    assert adjusted.alpha == pytest.approx(PLANTED_ALPHA, abs=1e-12)
    kept_outliers = adjusted_alpha(n, values, digits, rules=FitRules(drop_outliers=False, n_boot=0))
    assert kept_outliers.n_points == 25 and abs(kept_outliers.alpha - PLANTED_ALPHA) > 0.05


def test_strata_too_small_say_why():
    n = np.array([1.0, 2, 3, 4, 10, 20, 30, 40, 50, 60])
    values = planted(n)
    values[1] = -1.0
    strata = strata_alphas(n, values, digit_counts(n), rules=FitRules(drop_outliers=False, n_boot=0))
    assert strata[0].reason == "3 points of 4 (V <= 0, not finite, or an outlier): a fit needs 5"
    assert not strata[0].has_fit and strata[1].has_fit
    tiny = adjusted_alpha(n[:4], values[:4], [1] * 4, rules=FitRules(drop_outliers=False, n_boot=0))
    assert math.isnan(tiny.alpha) and tiny.reason.startswith("3 points of 4") and tiny.n_points == 3


def test_too_few_degrees_of_freedom_give_no_adjusted_fit():
    n = np.array([1.0, 2, 10, 20, 100, 200])
    fit = adjusted_alpha(n, planted(n), digit_counts(n), rules=FitRules(drop_outliers=False, n_boot=0))
    assert math.isnan(fit.alpha) and math.isnan(fit.ci_low)
    assert (fit.n_parameters, fit.df) == (4, 2)
    assert fit.reason.startswith("6 points for 4 parameters: the fit needs 7")


def test_levels_of_one_magnitude_each_leave_no_slope():
    n = np.asarray(PAPER_MAGNITUDES, dtype=np.float64)
    fit = adjusted_alpha(n, planted(n), digit_counts(n), identities=list(range(n.size)), rules=FitRules(drop_outliers=False, n_boot=0))
    assert math.isnan(fit.alpha)
    assert "no level holds two magnitudes" in fit.reason


def test_too_many_levels_are_refused_before_fitting():
    n = np.arange(1, 101, dtype=np.float64)
    fit = adjusted_alpha(n, planted(n), digit_counts(n), identities=n.astype(int).tolist(), rules=FitRules(drop_outliers=False))
    assert math.isnan(fit.alpha)
    assert f"at most {MAX_PARAMETERS}" in fit.reason


def test_the_kept_tokens_identity_as_a_second_covariate():
    """V also steps with the last digit (the kept token of a per-digit tokenizer): with the
    identity the planted alpha, steps and identity effects come back; without it they do not
    (within 1-9 the last digit is n itself, so its effect tilts that stratum's slope)."""
    n = np.arange(1, 1001, dtype=np.float64)
    last_digit = [int(str(int(k))[-1]) for k in n]
    effects = {digit: 0.1 * digit for digit in range(10)}
    values = planted(n) * np.exp([effects[d] for d in last_digit])
    digits = digit_counts(n)
    with_identity = adjusted_alpha(n, values, digits, last_digit, rules=FitRules(drop_outliers=False, n_boot=300))
    without_identity = adjusted_alpha(n, values, digits, rules=FitRules(drop_outliers=False, n_boot=300))
    assert with_identity.alpha == pytest.approx(PLANTED_ALPHA, abs=1e-10)
    assert with_identity.steps == pytest.approx({"2": 0.5, "3": 1.0, "4": 1.5}, abs=1e-10)
    assert with_identity.identity_reference == "0"
    assert with_identity.identity_effects == pytest.approx(
        {str(d): effects[d] - effects[0] for d in range(1, 10)}, abs=1e-10
    )
    assert with_identity.n_parameters == 2 + 3 + 9
    assert with_identity.ci_low == pytest.approx(PLANTED_ALPHA, abs=1e-9)
    assert abs(without_identity.alpha - PLANTED_ALPHA) > 0.1 * abs(PLANTED_ALPHA)


def test_an_identity_one_stratum_already_fixes_is_dropped_as_collinear():
    # The kept token is determined by the stratum (one token per digit count): its levels add
    # nothing the steps do not, and are left out by name.
    n = np.asarray(PAPER_MAGNITUDES, dtype=np.float64)
    digits = digit_counts(n)
    values = planted(n, noise=0.1, seed=2)
    alone = adjusted_alpha(n, values, digits, rules=FitRules(drop_outliers=False, n_boot=0))
    with_identity = adjusted_alpha(n, values, digits, [f"t{d}" for d in digits], rules=FitRules(drop_outliers=False, n_boot=0))
    assert with_identity.dropped_levels == ("kept=t2", "kept=t3", "kept=t4")
    assert with_identity.identity_effects == {}
    assert with_identity.alpha == pytest.approx(alone.alpha, abs=1e-12)
    assert with_identity.se == pytest.approx(alone.se, abs=1e-12)


def test_the_interval_is_reproducible_and_follows_the_seed():
    n = np.asarray(PAPER_MAGNITUDES, dtype=np.float64)
    values = planted(n, noise=0.2, seed=4)
    digits = digit_counts(n)
    first = adjusted_alpha(n, values, digits, rules=FitRules(drop_outliers=False, n_boot=500, seed=11, ci_method="bca"))
    again = adjusted_alpha(n, values, digits, rules=FitRules(drop_outliers=False, n_boot=500, seed=11, ci_method="bca"))
    other = adjusted_alpha(n, values, digits, rules=FitRules(drop_outliers=False, n_boot=500, seed=12, ci_method="bca"))
    assert (first.ci_low, first.ci_high) == (again.ci_low, again.ci_high)
    assert (first.ci_low, first.ci_high) != (other.ci_low, other.ci_high)
    assert first.ci_low < first.alpha < first.ci_high
    no_interval = adjusted_alpha(n, values, digits, rules=FitRules(drop_outliers=False, n_boot=0))
    assert math.isnan(no_interval.ci_low) and no_interval.alpha == first.alpha


def test_bad_input_says_what_to_fix():
    n = np.array([1.0, 2, 3, 4, 5, 6])
    with pytest.raises(AnalysisError, match="5 strata for 6 magnitudes"):
        strata_alphas(n, n, [1] * 5, rules=FitRules(drop_outliers=False))
    with pytest.raises(AnalysisError, match="5 identities for 6 magnitudes"):
        adjusted_alpha(n, n, [1] * 6, [1] * 5, rules=FitRules(drop_outliers=False))
    with pytest.raises(AnalysisError, match="must be 1-D of equal length"):
        adjusted_alpha(n, n[:5], [1] * 6, rules=FitRules(drop_outliers=False))
    with pytest.raises(AnalysisError, match="unknown CI method"):
        adjusted_alpha(n, n, [1] * 6, rules=FitRules(drop_outliers=False, ci_method="jackknife"))
    with pytest.raises(AnalysisError, match="confidence level"):
        adjusted_alpha(n, n, [1] * 6, rules=FitRules(drop_outliers=False, ci=1.5))
    with pytest.raises(AnalysisError, match="bootstrap resamples"):
        adjusted_alpha(n, n, [1] * 6, rules=FitRules(drop_outliers=False, n_boot=-1))


def test_the_sums_within_levels_are_the_projection_sums():
    """The one-factor shortcut (sums about each level's weighted means) gives the projection's
    numbers, on resamples that leave levels out too."""
    rng = np.random.default_rng(8)
    x = np.log(np.asarray(PAPER_MAGNITUDES, dtype=np.float64))
    y = rng.normal(size=x.size)
    groups = digit_counts(PAPER_MAGNITUDES) - 1
    design = np.column_stack([np.ones(x.size)] + [(groups == level).astype(float) for level in (1, 2, 3)])
    weights = next(resample_counts(x.size, 500, seed=3))
    levels_drawn = (weights @ np.eye(4)[groups] > 0).sum(axis=1)
    assert levels_drawn.min() < 4  # some resamples miss the lone 1000
    for shortcut, projection in zip(_group_sums(x, y, groups)(weights), _projection_sums(x, y, design)(weights),
                                    strict=True):
        np.testing.assert_allclose(shortcut, projection, rtol=1e-9, atol=1e-9)
