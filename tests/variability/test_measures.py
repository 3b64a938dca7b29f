"""Variability measures: hand-computed cases and planted ground truth."""

from __future__ import annotations

import math

import numpy as np
import pytest

from magdash.errors import AnalysisError
from magdash.variability import measures
from magdash.variability.analysis_params import FitRules
from magdash.variability.fits import fit_scaling
from magdash.variability.measures import (
    MEASURES,
    LayerVectors,
    centroids,
    compute_measure,
    cv,
    magnitude_axis,
    off_axis_variance,
    on_axis_variance,
    sentence_offsets,
    v_eucl,
    v_pairwise,
    v_proj,
    v_residual,
    v_trace,
)

PAPER_MAGNITUDES = np.array(
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 150, 200, 300, 500,
     700, 1000],
    dtype=np.float64,
)  # fmt: skip


@pytest.fixture
def tiny() -> np.ndarray:
    """Two magnitudes x two carriers in 2-D, worked out by hand below.

    n=0: (0,0), (2,0) -> centroid (1,0), distances 1, 1.
    n=1: (0,0), (0,4) -> centroid (0,2), distances 2, 2.
    Centred centroids (0.5,-1), (-0.5,1): PC1 u = (-1, 2)/sqrt(5) (oriented towards n=1).
    """
    return np.array([[[0.0, 0.0], [2.0, 0.0]], [[0.0, 0.0], [0.0, 4.0]]], dtype=np.float32)


def test_hand_computed_euclidean_pairwise_trace_cv(tiny):
    np.testing.assert_allclose(v_eucl(tiny), [1.0, 2.0])
    np.testing.assert_allclose(v_pairwise(tiny), [2.0, 4.0])
    # sum of squared deviations / (C - 1): (1 + 1) / 1 and (4 + 4) / 1
    np.testing.assert_allclose(v_trace(tiny), [2.0, 8.0])
    np.testing.assert_allclose(cv(tiny), [1.0 / 1.0, 2.0 / 2.0])
    np.testing.assert_allclose(centroids(tiny), [[1.0, 0.0], [0.0, 2.0]])


def test_hand_computed_axis_measures(tiny):
    axis = magnitude_axis(centroids(tiny))
    np.testing.assert_allclose(axis, np.array([-1.0, 2.0]) / math.sqrt(5.0))
    # projections 0, -2/sqrt5 and 0, 8/sqrt5; SD (ddof=1) of two values = |difference| / sqrt2
    np.testing.assert_allclose(v_proj(tiny), [math.sqrt(0.4), math.sqrt(6.4)])
    np.testing.assert_allclose(on_axis_variance(tiny), [0.4, 6.4])
    # deviation (+-1, 0): |e|^2 = 1, (e.u)^2 = 1/5 -> 0.8; deviation (0, +-2): 4 - 16/5 = 0.8
    np.testing.assert_allclose(off_axis_variance(tiny), [0.8, 0.8])


def test_hand_computed_residual(tiny):
    # carrier means (0,0) and (1,2), grand mean (0.5,1): offsets -+(0.5,1)
    np.testing.assert_allclose(sentence_offsets(tiny), [[-0.5, -1.0], [0.5, 1.0]])
    # adjusted n=0: (0.5,1), (1.5,-1) -> distance to centroid sqrt(1.25) each; n=1 likewise
    np.testing.assert_allclose(v_residual(tiny), [math.sqrt(1.25), math.sqrt(1.25)])


def test_pairwise_matches_explicit_loop(rng):
    x = rng.normal(size=(4, 6, 16)).astype(np.float32)
    expected = [
        np.mean([np.linalg.norm(x[n, i].astype(float) - x[n, j]) for i in range(6) for j in range(i + 1, 6)])
        for n in range(4)
    ]
    np.testing.assert_allclose(v_pairwise(x), expected, rtol=1e-10)


def test_identical_carriers_give_exact_zero(rng):
    """A context-free embedding layer: every measure is exactly 0, never rounding noise."""
    base = (rng.normal(size=(26, 1, 64)) * 100).astype(np.float32)
    x = np.repeat(base, 5, axis=1)
    for name in ("eucl", "residual", "proj", "pairwise", "trace", "cv", "on_axis", "off_axis"):
        assert np.all(compute_measure(name, x) == 0.0), name
    fit = fit_scaling(PAPER_MAGNITUDES, v_eucl(x), rules=FitRules(drop_outliers=True, n_boot=0))
    assert math.isnan(fit.alpha) and fit.n_points == 0


def _planted_isotropic(alpha: float, rng, n_carriers=10, dim=512) -> np.ndarray:
    """x[n, c] = mu[n] + n^alpha z, z ~ N(0, I): V_eucl(n) is proportional to n^alpha."""
    means = np.outer(np.log(PAPER_MAGNITUDES), rng.normal(size=dim)) * 5.0
    scale = PAPER_MAGNITUDES**alpha
    noise = rng.normal(size=(PAPER_MAGNITUDES.size, n_carriers, dim))
    return (means[:, None, :] + scale[:, None, None] * noise).astype(np.float32)


@pytest.mark.parametrize("alpha", [-0.2, -0.04, 0.0, 0.5])
def test_planted_exponent_is_recovered_by_v_eucl(alpha, rng):
    x = _planted_isotropic(alpha, rng)
    fit = fit_scaling(PAPER_MAGNITUDES, v_eucl(x), rules=FitRules(drop_outliers=True, n_boot=0))
    assert abs(fit.alpha - alpha) < 0.02
    assert abs(fit.alpha_theil_sen - alpha) < 0.02


def test_v_residual_removes_planted_sentence_offsets(rng):
    alpha = -0.2
    clean = _planted_isotropic(alpha, rng)
    offsets = rng.normal(size=(1, clean.shape[1], clean.shape[2])) * 20.0
    shifted = (clean + offsets).astype(np.float32)
    # Sentence offsets are removed exactly (up to float32 storage of the shifted vectors) ...
    np.testing.assert_allclose(v_residual(shifted), v_residual(clean), rtol=1e-4)
    alpha_residual = fit_scaling(PAPER_MAGNITUDES, v_residual(shifted), rules=FitRules(drop_outliers=True, n_boot=0)).alpha
    alpha_eucl = fit_scaling(PAPER_MAGNITUDES, v_eucl(shifted), rules=FitRules(drop_outliers=True, n_boot=0)).alpha
    # ... so V_residual keeps the planted exponent while V_eucl is swamped by the offsets.
    assert abs(alpha_residual - alpha) < 0.05
    assert abs(alpha_eucl) < 0.02
    assert abs(alpha_eucl - alpha) > 0.15


def test_v_proj_recovers_a_planted_on_axis_exponent(rng):
    """Spread along the magnitude axis scales as n^-0.3; off-axis noise is constant."""
    beta = -0.3
    n_carriers, dim = 8, 64
    axis = np.zeros(dim)
    axis[0] = 1.0
    # Fixed standardised carrier pattern on the axis, so the on-axis SD is exactly n^beta.
    pattern = rng.normal(size=n_carriers)
    pattern = (pattern - pattern.mean()) / pattern.std(ddof=1)
    means = 1000.0 * np.log(PAPER_MAGNITUDES)[:, None] * axis
    on_axis = (PAPER_MAGNITUDES**beta)[:, None, None] * pattern[None, :, None] * axis
    off_axis = rng.normal(size=(PAPER_MAGNITUDES.size, n_carriers, dim))
    off_axis -= off_axis.mean(axis=1, keepdims=True)  # centroids stay exactly on the axis
    off_axis[..., 0] = 0.0
    x = means[:, None, :] + on_axis + off_axis
    np.testing.assert_allclose(np.abs(magnitude_axis(centroids(x))), axis, atol=1e-9)
    fit = fit_scaling(PAPER_MAGNITUDES, v_proj(x), rules=FitRules(drop_outliers=False, n_boot=0))
    assert abs(fit.alpha - beta) < 1e-9
    # The on-axis variance is the square of V_proj, so its exponent doubles.
    on_fit = fit_scaling(PAPER_MAGNITUDES, on_axis_variance(x), rules=FitRules(drop_outliers=False, n_boot=0))
    assert abs(on_fit.alpha - 2 * beta) < 1e-9
    # Off-axis variance does not scale; V_eucl is dominated by it.
    off_fit = fit_scaling(PAPER_MAGNITUDES, off_axis_variance(x), rules=FitRules(drop_outliers=False, n_boot=0))
    assert abs(off_fit.alpha) < 0.05


def test_on_axis_equals_v_proj_squared_and_parts_add_up(rng):
    x = rng.normal(size=(7, 5, 12))
    np.testing.assert_allclose(on_axis_variance(x), v_proj(x) ** 2, rtol=1e-12)
    # on-axis (ddof=1) and off-axis (mean over C) parts recombine into the total scatter
    total = v_trace(x) * (x.shape[1] - 1) / x.shape[1]
    recombined = on_axis_variance(x) * (x.shape[1] - 1) / x.shape[1] + off_axis_variance(x)
    np.testing.assert_allclose(recombined, total, rtol=1e-10)


def test_axis_sign_points_towards_larger_magnitudes(rng):
    direction = rng.normal(size=10)
    m = -np.log(PAPER_MAGNITUDES)[:, None] * direction[None, :]  # larger n further along -direction
    axis = magnitude_axis(m)
    coordinates = (m - m.mean(axis=0)) @ axis
    assert coordinates[-1] > coordinates[0]
    np.testing.assert_allclose(np.abs(axis), np.abs(direction) / np.linalg.norm(direction))


def test_blocks_give_the_same_answer_as_one_pass(rng, monkeypatch):
    x = rng.normal(size=(30, 4, 8)).astype(np.float32)
    whole = {name: compute_measure(name, x) for name in MEASURES}
    monkeypatch.setattr(measures, "_BLOCK_ELEMENTS", 40)  # about one magnitude per block
    for name in MEASURES:
        np.testing.assert_allclose(compute_measure(name, x), whole[name], rtol=1e-12, err_msg=name)


def test_registry_and_errors(rng):
    x = rng.normal(size=(5, 3, 4))
    assert set(MEASURES) >= {"eucl", "residual", "proj", "pairwise", "trace", "cv"}
    for name in MEASURES:
        assert compute_measure(name, x).shape == (5,)
    with pytest.raises(AnalysisError, match="unknown measure"):
        compute_measure("nope", x)
    with pytest.raises(AnalysisError, match="shape"):
        v_eucl(np.zeros((5, 3)))
    with pytest.raises(AnalysisError, match="at least 2 carrier"):
        v_eucl(np.zeros((5, 1, 4)))


@pytest.mark.parametrize("shape", [(26, 64), (40, 8)])
def test_magnitude_axis_is_the_first_right_singular_vector(shape, rng):
    m = rng.normal(size=shape) * np.linspace(3.0, 1.0, shape[1])  # a clear leading direction
    centred = m - m.mean(axis=0)
    expected = np.linalg.svd(centred, full_matrices=False)[2][0]
    axis = magnitude_axis(m)
    assert np.linalg.norm(axis) == pytest.approx(1.0)
    np.testing.assert_allclose(np.abs(axis), np.abs(expected), atol=1e-8)
    constant = magnitude_axis(np.ones((5, 3)))
    assert np.linalg.norm(constant) == 1.0


def test_every_measure_on_drawn_carriers_is_the_measure_of_the_repeated_carriers(rng):
    """A draw of carriers with replacement is the layer with carrier c repeated w_c times: every
    registered measure recomputed from the carrier moments agrees with it (same magnitude axis),
    the draw of every carrier once is the measure itself, and a draw of one carrier gives V = 0."""
    x = rng.normal(size=(7, 5, 12)) + np.linspace(0.0, 3.0, 7)[:, None, None]
    layer = LayerVectors(x)
    counts = np.array([[1, 1, 1, 1, 1], [2, 0, 1, 2, 0], [0, 3, 0, 0, 2], [1, 1, 0, 0, 3], [0, 0, 5, 0, 0]])
    for name, measure in MEASURES.items():
        drawn = measure.on_drawn_carriers(layer.moments(), counts)
        assert drawn.shape == (5, 7)
        np.testing.assert_allclose(drawn[0], compute_measure(name, x), rtol=1e-9, err_msg=name)
        for row, draw in enumerate(counts[:-1]):
            repeated = x[:, np.repeat(np.arange(5), draw)]
            np.testing.assert_allclose(drawn[row], compute_measure(name, repeated, axis=layer.axis), rtol=1e-7,
                                       err_msg=f"{name} {draw}")
        if name != "cv":
            assert np.all(drawn[-1] == 0), name  # one carrier: no spread at all, not rounding noise
