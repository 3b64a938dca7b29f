"""The generative model of the design simulator against theory and against the analysis engine."""

from __future__ import annotations

import numpy as np
import pytest

from magdash.controls.simulate import Calibration, CarrierScatter, draw_log_v, draw_vectors, fit_alphas
from magdash.errors import AnalysisError
from magdash.stimuli import PAPER_MAGNITUDES
from magdash.variability.analysis import run_analysis
from magdash.variability.analysis_params import AnalysisParams, FitRules
from magdash.variability.fits import fit_scaling, ols
from magdash.variability.measures import v_eucl

MAGNITUDES = np.asarray(PAPER_MAGNITUDES, dtype=np.float64)
LOG_N = np.log(MAGNITUDES)
SXX = float(((LOG_N - LOG_N.mean()) ** 2).sum())


def test_fit_alphas_is_the_analysis_fit_with_its_outlier_rule(rng):
    log_v = rng.normal(scale=0.3, size=(4, 3, MAGNITUDES.size)) - 0.1 * LOG_N
    log_v[0, 0, 5] += 3.0  # an outlier above 3x the median
    log_v[1, 2, :22] = np.nan  # four points left: no fit
    fits = fit_alphas(MAGNITUDES, log_v)
    for study, layer in [(0, 0), (2, 1), (3, 2)]:
        expected = fit_scaling(MAGNITUDES, np.exp(log_v[study, layer]), rules=FitRules(drop_outliers=True, n_boot=0))
        assert fits.alpha[study, layer] == pytest.approx(expected.alpha, abs=1e-12)
        assert fits.se[study, layer] == pytest.approx(expected.se, abs=1e-12)
        assert fits.n_points[study, layer] == expected.n_points
    assert fits.n_points[0, 0] == MAGNITUDES.size - 1
    assert np.isnan(fits.alpha[1, 2])
    plain = fit_alphas(MAGNITUDES, log_v[2, 1], rules=FitRules(drop_outliers=False))
    assert plain.alpha == pytest.approx(ols(LOG_N, log_v[2, 1]).slope, abs=1e-12)
    # an even count whose middle two V differ (1 and 9): 3x the median is 15, not 3x their
    # geometric mean (9), so the 9.5s and the 12 are kept, as the analysis keeps them
    v = np.array([0.5] * 12 + [1.0, 9.0] + [9.5] * 11 + [12.0])
    assert v.size == MAGNITUDES.size
    even = fit_alphas(MAGNITUDES, np.log(v))
    expected = fit_scaling(MAGNITUDES, v, rules=FitRules(drop_outliers=True, n_boot=0))
    assert even.n_points == expected.n_points == MAGNITUDES.size
    assert even.alpha == pytest.approx(expected.alpha, abs=1e-12)


def test_alpha_has_the_ols_sampling_variance_of_its_planted_noise():
    """Var(alpha_hat) = sigma^2 / Sxx with sigma^2 = tau^2 + Var(log g) (no outliers at this noise)."""
    calibration = Calibration.planted(1, tau=0.08, dimension=12)
    scatter = CarrierScatter(seed=1)
    log_v = draw_log_v(calibration, MAGNITUDES, alpha=-0.05, n_carriers=5, n_layers=1, n_studies=6000,
                       rng=np.random.default_rng(5), scatter=scatter)
    alphas = fit_alphas(MAGNITUDES, log_v, rules=FitRules(drop_outliers=False)).alpha[:, 0]
    sigma2 = 0.08**2 + scatter.variance(5, 12)
    expected = sigma2 / SXX
    # the variance of 6,000 draws has a relative SE of sqrt(2 / 5999) = 1.8%
    assert np.var(alphas, ddof=1) == pytest.approx(expected, rel=0.07)
    assert np.mean(alphas) == pytest.approx(-0.05, abs=4 * np.sqrt(expected / 6000))


@pytest.mark.slow
def test_carrier_scatter_shrinks_with_more_carriers_and_dimensions():
    scatter = CarrierScatter()
    assert scatter.variance(10, 16) < scatter.variance(5, 16) < scatter.variance(3, 16)
    assert scatter.variance(5, 64) < scatter.variance(5, 16)
    # the squared norm of a d-dim Gaussian has relative variance 2/d; log g averages C - 1 of them
    assert scatter.variance(5, 400) == pytest.approx(1 / (2 * 400 * 5), rel=0.25)
    with pytest.raises(AnalysisError, match="at least 2 carriers"):
        scatter.pool(1, 4)


def test_vectors_and_direct_draws_give_the_same_law_of_v_eucl():
    calibration = Calibration(tau=(0.1, 0.05), dimension=(6, 30), intercept=(0.5, -1.0), rho=0.6, n_carriers=5)
    rng = np.random.default_rng(11)
    from_vectors = np.array([
        [np.log(v_eucl(layer)) for layer in draw_vectors(calibration, MAGNITUDES, alpha=0.2, n_carriers=4,
                                                           n_layers=2, rng=rng)]
        for _ in range(400)
    ])
    direct = draw_log_v(calibration, MAGNITUDES, alpha=0.2, n_carriers=4, n_layers=2, n_studies=4000,
                        rng=rng, scatter=CarrierScatter())
    for layer in range(2):
        residual_vectors = from_vectors[:, layer] - 0.2 * LOG_N
        residual_direct = direct[:, layer] - 0.2 * LOG_N
        assert residual_vectors.mean() == pytest.approx(residual_direct.mean(), abs=0.01)
        assert residual_vectors.std() == pytest.approx(residual_direct.std(), rel=0.06)
    # rho: the layers' magnitude effects are correlated
    centred = direct - direct.mean(axis=2, keepdims=True)
    correlation = np.mean([np.corrcoef(study[0], study[1])[0, 1] for study in centred[:500]])
    assert correlation > 0.2


def test_planted_calibration_rejects_nonsense():
    with pytest.raises(AnalysisError, match="rho"):
        Calibration.planted(2, tau=0.1, dimension=4, rho=1.0)
    with pytest.raises(AnalysisError, match="tau must be"):
        Calibration.planted(2, tau=-0.1, dimension=4)
    assert list(Calibration.planted(16, tau=0.1, dimension=4).layers_for(4)) == [0, 5, 10, 15]


@pytest.mark.slow
def test_the_analysis_recovers_a_planted_alpha_at_the_stated_rate():
    """1,000 studies drawn as vectors and run through the analysis engine: its default 95% CI of
    alpha (studentized bootstrap) covers the planted alpha within 2 points of 95%."""
    calibration = Calibration.planted(3, tau=0.05, dimension=16)
    rng = np.random.default_rng(2026)
    params = AnalysisParams(measures=("eucl",), n_boot=1000, core_layers=(1,))
    planted = -0.05
    covered = 0
    for study in range(1000):
        layers = draw_vectors(calibration, MAGNITUDES, alpha=planted, n_carriers=5, n_layers=3, rng=rng)
        result = run_analysis(
            ((f"layer {i}", x) for i, x in enumerate(layers)), MAGNITUDES, n_blocks=2,
            params=AnalysisParams(**{**params.__dict__, "seed": study}),
        )
        fit = result.fit("eucl", 1)
        covered += fit.ci_low <= planted <= fit.ci_high
    assert result.params.ci_method == "studentized"
    assert 0.93 <= covered / 1000 <= 0.97
