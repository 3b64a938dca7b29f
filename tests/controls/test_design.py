"""The design simulator against the noncentral t, its Monte Carlo bands, the store and the CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from magdash.cli import main
from magdash.controls_statistics.controls_params import DesignParams
from magdash.controls_statistics.design import (
    Simulator,
    crossing,
    participation_ratio,
    signed_rank,
    simulate_design,
    size_adjusted_rate,
    wilson,
)
from magdash.controls_statistics.simulate import Calibration, CarrierScatter
from magdash.errors import AnalysisError
from magdash.runs.design_runs import calibrate_on, design_key, run_design
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES
from magdash.variability.analysis_params import AnalysisParams

MAGNITUDES = np.asarray(PAPER_MAGNITUDES, dtype=np.float64)
LOG_N = np.log(MAGNITUDES)
SXX = float(((LOG_N - LOG_N.mean()) ** 2).sum())


def test_h1_power_matches_the_noncentral_t_with_independent_layers():
    """With rho = 0 and no outliers the K core alphas are i.i.d. N(alpha, sigma^2 / Sxx), so the
    t-test's power is P(T > t_{K-1, 1-level/2}) for T ~ noncentral t(K - 1, alpha sqrt(K Sxx) / sigma)."""
    calibration = Calibration.planted(8, tau=0.1, dimension=10)
    params = DesignParams(n_layers=8, n_studies=2000, n_boot=0)
    simulator = Simulator(calibration, params)
    sigma = math.sqrt(0.1**2 + CarrierScatter(params.seed).variance(5, 10))
    grid = np.array([0.0, 0.01, 0.02, 0.03])
    curve = simulator.h1_curve(grid)
    critical = stats.t.ppf(1 - params.level / 2, 7)
    for row in curve.itertuples(index=False):
        expected = stats.nct.sf(critical, 7, row.alpha * math.sqrt(8 * SXX) / sigma)
        assert abs(row.power - expected) <= 4 * math.sqrt(expected * (1 - expected) / 2000) + 1e-3
        assert row.power_low <= row.power <= row.power_high
    assert curve["power"].is_monotonic_increasing


def test_correlated_layers_make_the_t_test_over_reject_and_size_adjustment_restores_it():
    calibration = Calibration.planted(16, tau=0.15, dimension=10, rho=0.8)
    simulator = Simulator(calibration, DesignParams(n_layers=16, n_studies=2000, n_boot=0))
    null = simulator.h1_curve(np.array([0.0, 0.01]))
    assert null["power"].iloc[0] > 0.1  # nominal one-sided size 0.025
    assert null["power_size_adjusted"].iloc[0] == pytest.approx(0.025, abs=1e-9)
    assert null["power_size_adjusted"].iloc[1] < null["power"].iloc[1]
    e6 = simulator.e6_curve(np.array([0.0]))
    assert e6["wilcoxon"].iloc[0] > 0.1 and e6["wilcoxon_size_adjusted"].iloc[0] == pytest.approx(0.05, abs=1e-9)


def test_e6_curves_start_at_their_size_and_grow():
    calibration = Calibration.planted(6, tau=0.05, dimension=12)
    simulator = Simulator(calibration, DesignParams(n_layers=6, n_studies=300, n_boot=100))
    curve = simulator.e6_curve(np.array([0.0, 0.06]))
    first, last = curve.iloc[0], curve.iloc[1]
    assert first["wilcoxon"] <= 0.1 and last["wilcoxon"] > 0.5
    assert first["bootstrap_layers"] <= 0.15 < 0.5 < last["bootstrap_layers"]
    assert last["bootstrap_layers_low"] < last["bootstrap_layers"] < last["bootstrap_layers_high"]


def test_ci_half_width_follows_the_ols_standard_error():
    calibration = Calibration.planted(4, tau=0.1, dimension=10)
    params = DesignParams(n_layers=4, n_studies=500, carrier_grid=(5,), magnitude_grid=(26,))
    widths = Simulator(calibration, params).ci_widths()
    sigma = math.sqrt(0.1**2 + CarrierScatter(params.seed).variance(5, 10))
    design = widths[widths["factor"] == "design"].iloc[0]
    assert design["half_width"] == pytest.approx(stats.t.ppf(0.975, 24) * sigma / math.sqrt(SXX), rel=0.03)


def test_helpers_hand_computed():
    low, high = wilson(8, 10)
    assert (round(float(low), 4), round(float(high), 4)) == (0.4902, 0.9433)  # Wilson (1927), Newcombe (1998)
    assert crossing(np.array([0, 1, 2]), np.array([0.2, 0.6, 1.0]), 0.8) == pytest.approx(1.5)
    assert math.isnan(crossing(np.array([0, 1]), np.array([0.1, 0.2]), 0.8))
    assert signed_rank(np.array([[1.0, -2.0, 3.0]]))[0] == pytest.approx(4 - 3)
    # a discrete null with 40% of its mass at the top: the randomised cut still has size 5%
    null = np.array([0, 0, 1, 1, 2, 2, 3, 3, 3, 3.0])
    assert size_adjusted_rate(null, null, 0.05) == pytest.approx(0.05)
    assert size_adjusted_rate(null, np.full(4, 3.0), 0.05) == pytest.approx(0.125)
    z = np.random.default_rng(0).normal(size=200_000)
    assert size_adjusted_rate(z, z + 2.0, 0.025) == pytest.approx(stats.norm.sf(1.96 - 2.0), abs=0.005)
    assert participation_ratio(np.eye(5)) == pytest.approx(5.0)
    assert participation_ratio(np.diag([1.0, 0.0, 0.0])) == pytest.approx(1.0)
    with pytest.raises(AnalysisError, match="at least 2 carriers"):
        DesignParams(n_carriers=1)
    with pytest.raises(AnalysisError, match="at least 5 positive magnitudes"):
        DesignParams(magnitudes="1,2,3").magnitude_values()


def test_the_same_seed_gives_the_same_curves_and_minimal_alpha_is_on_them():
    calibration = Calibration.planted(4, tau=0.1, dimension=10, rho=0.3)
    params = DesignParams(n_layers=4, n_studies=200, n_points=5, n_boot=20, carrier_grid=(3,), magnitude_grid=(10,))
    first = simulate_design(calibration, params)
    second = simulate_design(calibration, params)
    assert first.h1.equals(second.h1) and first.e6.equals(second.e6)
    assert params.alpha in set(first.h1["alpha"]) and params.delta in set(first.e6["delta"])
    nominal = first.minimal_alpha["nominal"]
    assert math.isnan(nominal) or first.h1["alpha"].min() <= nominal <= first.h1["alpha"].max()


def _import(store, name, rng, exponent=-0.1, n_layers=7, shared=0.15):
    scale = MAGNITUDES[:, None, None, None] ** exponent
    shape = (MAGNITUDES.size, len(PAPER_CARRIERS), n_layers, 12)
    magnitude_effect = np.exp(rng.normal(scale=shared, size=(MAGNITUDES.size, 1, 1, 1)))
    vectors = rng.normal(size=shape) * scale * magnitude_effect
    store.import_arrays(name, vectors.astype(np.float32), PAPER_MAGNITUDES, carriers=PAPER_CARRIERS)


def test_calibration_recovers_planted_isotropic_noise(store, rng):
    _import(store, "m", rng)
    calibration = calibrate_on(store, "m")
    assert calibration.n_layers == 3 and calibration.n_carriers == 5
    # isotropic 12-d deviations: the participation ratio is near 12 (4 x 26 independent directions)
    assert all(8 <= d <= 13 for d in calibration.dimension)
    # the magnitude-level factor exp(N(0, 0.15^2)) is shared by every layer: it is tau, and rho is
    # its share of the residual variance beside the carrier scatter
    assert np.mean(calibration.tau) == pytest.approx(0.15, abs=0.05)
    expected_rho = 0.15**2 / (0.15**2 + CarrierScatter().variance(5, 11))
    assert calibration.rho == pytest.approx(expected_rho, abs=0.2)


@pytest.mark.slow
def test_run_design_is_cached_and_the_cli_prints_it(store, rng, capsys):
    _import(store, "m", rng)
    params = DesignParams(n_studies=100, n_points=3, n_boot=10, carrier_grid=(3,), magnitude_grid=(10,))
    first = run_design(store, "m", params=params)
    again = run_design(store, "m", params=params)
    assert again.from_cache and not first.from_cache
    assert again.h1.equals(first.h1.astype(again.h1.dtypes.to_dict()))
    # the design as tables, for SQL: one row for the design, one per point of each curve
    (design,) = store.metric_table("designs").to_dict(orient="records")
    assert (design["model"], design["n_carriers"], design["n_studies"]) == ("m", 5, 100)
    assert design["h1_power"] == pytest.approx(first.summary()["h1_power"])
    h1 = store.metric_table("design_h1").sort_values("alpha")
    assert list(h1["power"]) == pytest.approx(list(first.h1["power"]))
    assert len(store.metric_table("design_e6")) == len(first.e6)
    assert list(store.metric_table("design_ci")["factor"]) == ["design", "carriers", "magnitudes"]
    # a design cached before the tables existed gets its rows when next asked for
    key = design_key(store, "m", design["stimuli"], AnalysisParams(), params)
    store.put_metric_rows(key, "design", {})
    assert store.metric_table("designs").empty
    assert run_design(store, "m", params=params).from_cache
    assert list(store.metric_table("design_h1").sort_values("alpha")["power"]) == list(h1["power"])
    args = ["design", "--model", "m", "--store", str(store.path), "--studies", "100", "--points", "3",
            "--design-boot", "10"]
    assert main([*args, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert {"h1_power", "e6_power", "ci_half_width", "minimal_detectable_alpha"} <= set(document)
    report = store.path.parent / "design.html"
    assert main([*args, "--report", str(report)]) == 0
    assert "minimal detectable alpha at 80% power" in capsys.readouterr().out
    assert "Study design (simulated)" in report.read_text(encoding="utf-8")
    assert main([*args, "--carriers", "1"]) == 2
    assert capsys.readouterr().err.startswith("magdash: error: a design needs at least 2 carriers")
    assert main([*args, "--massive", "drop"]) == 2
    assert "work on the raw vectors" in capsys.readouterr().err
