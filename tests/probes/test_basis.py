"""The probe coordinates: the exact basis loses nothing (the probe on it is the ridge probe on the
raw vectors), the reduced one is the centroids' top principal subspace, and the layer's moments."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import Ridge, RidgeCV

from magdash.probes.basis import centroid_components, feature_basis, layer_moments, uses_exact
from magdash.probes.crossval import fit_ridge, magnitude_groups, one_standard_error_alphas
from magdash.variability.measures import magnitude_axis

ALPHAS = 10.0 ** np.arange(-3, 6)


def structured_layer(n_magnitudes: int, n_carriers: int, dim: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    code = np.log(np.arange(1, n_magnitudes + 1))[:, None, None] * rng.standard_normal(dim)
    return (code + rng.standard_normal((n_magnitudes, n_carriers, dim)) + 50.0).astype(np.float32)


@pytest.mark.parametrize(("n_magnitudes", "n_carriers", "dim"), [(12, 4, 100), (30, 5, 16)])
def test_the_exact_probe_is_the_ridge_probe_on_the_raw_vectors(n_magnitudes, n_carriers, dim):
    # Fewer vectors than dimensions (Gram path) and more (covariance path): on held-out rows the
    # fold's probe predicts what scikit-learn's Ridge on the raw vectors predicts with the same
    # penalty in absolute units (alpha * s^2), and GCV on the raw vectors chooses the same penalty.
    vectors = structured_layer(n_magnitudes, n_carriers, dim)
    centroids, total = layer_moments(vectors)
    basis = feature_basis(vectors, centroids, total, exact_max_vectors=1024, n_components=8)
    assert basis.exact and basis.variance_kept == 1.0
    raw = vectors.reshape(-1, dim).astype(np.float64)
    labels = np.column_stack([np.repeat(np.log(np.arange(1, n_magnitudes + 1)), n_carriers)])
    groups = magnitude_groups(n_magnitudes, n_carriers)
    train = np.tile(np.arange(n_carriers), n_magnitudes) != 1
    fit = fit_ridge(basis.features[train], labels[train], groups[train], ALPHAS, 4096, np.random.default_rng(0))
    absolute = fit.alpha[0] * basis.scale ** 2
    direct = Ridge(alpha=absolute).fit(raw[train], labels[train, 0])
    np.testing.assert_allclose(fit.predict(basis.features[~train])[:, 0], direct.predict(raw[~train]), rtol=1e-7)
    search = RidgeCV(alphas=ALPHAS * basis.scale ** 2, store_cv_results=True).fit(raw[train], labels[train])
    errors = np.asarray(search.cv_results_).reshape(-1, 1, ALPHAS.size)
    assert one_standard_error_alphas(errors, groups[train], ALPHAS)[0] == fit.alpha[0]
    direction = basis.direction(fit.coef[0])
    np.testing.assert_allclose(direction, direct.coef_ / np.linalg.norm(direct.coef_), atol=1e-7)


def test_the_scale_is_the_square_root_of_the_total_variance():
    vectors = structured_layer(10, 4, 20)
    centroids, total = layer_moments(vectors)
    basis = feature_basis(vectors, centroids, total, exact_max_vectors=1024, n_components=8)
    rows = vectors.reshape(-1, 20).astype(np.float64)
    assert basis.scale ** 2 == pytest.approx(rows.var(axis=0, ddof=1).sum(), rel=1e-9)
    assert basis.features.var(axis=0, ddof=1).sum() == pytest.approx(1.0, rel=1e-9)


def test_layer_moments_against_numpy_despite_a_large_common_offset():
    vectors = structured_layer(40, 6, 64) + np.float32(1e4)
    centroids, total = layer_moments(vectors)
    rows = vectors.reshape(-1, 64).astype(np.float64)
    np.testing.assert_allclose(centroids, vectors.astype(np.float64).mean(axis=1), rtol=1e-12)
    assert total == pytest.approx(rows.var(axis=0, ddof=1).sum(), rel=1e-5)
    vectors[3, 2, 1] = np.nan
    assert np.isnan(layer_moments(vectors)[1])


@pytest.mark.parametrize("shape", [(50, 200), (300, 40)])
def test_the_first_centroid_component_is_magnitude_axis(shape):
    centroids = np.random.default_rng(1).standard_normal(shape) * np.linspace(3, 1, shape[1])
    components = centroid_components(centroids, 5)
    np.testing.assert_allclose(components @ components.T, np.eye(5), atol=1e-10)
    assert abs(components[0] @ magnitude_axis(centroids)) == pytest.approx(1.0, abs=1e-10)


def test_the_reduced_basis_projects_onto_the_centroids_top_components():
    vectors = structured_layer(60, 5, 40)
    centroids, total = layer_moments(vectors)
    basis = feature_basis(vectors, centroids, total, exact_max_vectors=100, n_components=6)
    assert not basis.exact and basis.n_features == 6
    rows = vectors.reshape(-1, 40).astype(np.float64)
    expected = (rows - rows.mean(axis=0)) @ centroid_components(centroids, 6).T / basis.scale
    np.testing.assert_allclose(basis.features, expected, atol=1e-5)
    kept = expected.var(axis=0, ddof=1).sum()
    assert basis.variance_kept == pytest.approx(kept, rel=1e-4) and 0 < basis.variance_kept < 1


def test_when_a_layer_is_probed_exactly():
    assert uses_exact(130, 4096, 1024, 32)
    assert not uses_exact(20_000, 4096, 1024, 32)
    assert uses_exact(20_000, 24, 1024, 32)  # no more dimensions than components: nothing to reduce


def test_layer_moments_of_float16_vectors_do_not_overflow():
    vectors = (structured_layer(20, 4, 256) * np.float32(20)).astype(np.float16)  # squared norms far above 65,504
    centroids, total = layer_moments(vectors)
    rows = vectors.reshape(-1, 256).astype(np.float64)
    assert np.isfinite(total) and total == pytest.approx(rows.var(axis=0, ddof=1).sum(), rel=1e-5)
