"""Centroid geometry: RDMs, RSA against the log and linear models, PC1 coordinate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from scipy.spatial.distance import cdist

from magdash.errors import AnalysisError
from magdash.variability.geometry import ModelRdms, centroid_rdm, layer_geometry, model_rdm, pc1_coordinates, rsa

MAGNITUDES = np.array(
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 150, 200, 300, 500,
     700, 1000],
    dtype=np.float64,
)  # fmt: skip


def test_rdms_match_scipy(rng):
    m = rng.normal(size=(12, 20)) + 50.0  # a large common offset tests the centring
    np.testing.assert_allclose(centroid_rdm(m, "euclidean"), cdist(m, m), atol=1e-9)
    np.testing.assert_allclose(centroid_rdm(m, "cosine"), cdist(m, m, "cosine"), atol=1e-12)
    assert np.all(np.diag(centroid_rdm(m, "cosine")) == 0)
    with pytest.raises(AnalysisError):
        centroid_rdm(m, "manhattan")


def test_cosine_of_a_zero_centroid_is_undefined():
    m = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    rdm = centroid_rdm(m, "cosine")
    assert np.isnan(rdm[0, 1]) and rdm[1, 2] == pytest.approx(1.0)


def test_model_rdms_hand_computed():
    magnitudes = np.array([1.0, 10.0, 100.0])
    log_model = model_rdm(magnitudes, "log")
    assert log_model[0, 1] == pytest.approx(math.log(10))
    assert log_model[0, 2] == pytest.approx(math.log(100))
    np.testing.assert_allclose(model_rdm(magnitudes, "linear"), [[0, 9, 99], [9, 0, 90], [99, 90, 0]])
    with_zero = model_rdm(np.array([0.0, 1.0, 2.0]), "log")
    assert np.isnan(with_zero[0, 1]) and with_zero[1, 2] == pytest.approx(math.log(2))
    with pytest.raises(AnalysisError):
        model_rdm(magnitudes, "sqrt")


def test_rsa_prefers_the_model_that_generated_the_geometry(rng):
    direction = rng.normal(size=16)
    log_line = np.log(MAGNITUDES)[:, None] * direction  # centroids placed at log n on a line
    linear_line = MAGNITUDES[:, None] * direction
    log_model, linear_model = model_rdm(MAGNITUDES, "log"), model_rdm(MAGNITUDES, "linear")
    # (not exactly 1: ratios such as 2/1 and 20/10 tie in exact arithmetic, not in floating point)
    assert rsa(centroid_rdm(log_line), log_model) == pytest.approx(1.0, abs=1e-3)
    assert rsa(centroid_rdm(linear_line), linear_model) == pytest.approx(1.0, abs=1e-3)
    assert rsa(centroid_rdm(log_line), linear_model) < 0.9
    upper = np.triu_indices(26, k=1)
    noisy = log_line + rng.normal(size=log_line.shape) * 0.5
    expected = stats.spearmanr(centroid_rdm(noisy)[upper], log_model[upper]).statistic
    assert rsa(centroid_rdm(noisy), log_model) == pytest.approx(expected)


def test_rsa_edge_cases():
    with pytest.raises(AnalysisError):
        rsa(np.zeros((3, 3)), np.zeros((4, 4)))
    assert math.isnan(rsa(np.zeros((4, 4)), model_rdm(np.arange(1.0, 5.0))))


def test_pc1_coordinate_is_sign_normalised(rng):
    direction = rng.normal(size=8)
    m = -np.log(MAGNITUDES)[:, None] * direction + rng.normal(size=(26, 8)) * 0.01
    pc1 = pc1_coordinates(m, MAGNITUDES)
    assert pc1.pearson == pytest.approx(1.0, abs=1e-4) and pc1.spearman > 0.99
    assert pc1.coordinates[-1] > pc1.coordinates[0]
    assert pc1.explained > 0.99
    flipped = pc1_coordinates(-m, MAGNITUDES)  # the mirror image gives the same summary
    assert flipped.pearson == pytest.approx(pc1.pearson)
    np.testing.assert_allclose(flipped.coordinates, pc1.coordinates, atol=1e-9)


def test_layer_geometry_summary(rng):
    m = np.log(MAGNITUDES)[:, None] * rng.normal(size=32) + 1.0
    geometry = layer_geometry(m, MAGNITUDES)
    assert geometry.rsa_log_euclidean == pytest.approx(1.0, abs=1e-3)
    assert geometry.rsa_log_euclidean > geometry.rsa_linear_euclidean + 0.05
    assert geometry.pc1_pearson == pytest.approx(1.0)
    assert -1.0 <= geometry.rsa_log_cosine <= 1.0
    constant = layer_geometry(np.ones((26, 4)), MAGNITUDES)
    assert math.isnan(constant.rsa_log_euclidean) and math.isnan(constant.pc1_pearson)


def test_precomputed_model_ranks_agree_with_plain_rsa(rng):
    magnitudes = np.array([0.0, 1.0, 2.0, 5.0, 9.0, 30.0, 100.0])  # 0 has no log: NaN entries
    models = ModelRdms.for_magnitudes(magnitudes)
    m = rng.normal(size=(7, 5))
    m[3] = 0.0  # a zero centroid: NaN cosine entries take the slow path
    for metric in ("euclidean", "cosine"):
        rdm = centroid_rdm(m, metric)
        fast = models.correlate(rdm)
        for kind in ("log", "linear"):
            assert fast[kind] == pytest.approx(rsa(rdm, model_rdm(magnitudes, kind))), (metric, kind)
