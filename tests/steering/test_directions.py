"""The directions a layer is steered along, against planted truth and hand computations."""

from __future__ import annotations

import numpy as np
import pytest

from magdash.errors import AnalysisError
from magdash.steering.directions import (
    direction_kinds,
    dose_unit,
    layer_directions,
    orthogonal_directions,
    pc1_direction,
    probe_direction,
    random_directions,
    top_dimension_share,
)
from magdash.steering.steer_params import SteerParams

MAGNITUDES = np.array([1, 2, 3, 5, 8, 13, 21, 34, 55, 89], dtype=np.float64)


def planted(scale: float = 3.0, noise: float = 0.05, dim: int = 24, seed: int = 0):
    """Vectors whose centroids lie on scale * log n along a known unit u (plus a little noise)."""
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(dim)
    u /= np.linalg.norm(u)
    vectors = np.log(MAGNITUDES)[:, None, None] * scale * u + noise * rng.standard_normal((MAGNITUDES.size, 4, dim))
    return vectors, u


@pytest.mark.parametrize("find", [probe_direction, pc1_direction])
def test_the_planted_direction_is_found_pointing_up_the_magnitudes(find):
    vectors, u = planted()
    direction = find(vectors, MAGNITUDES)
    assert np.linalg.norm(direction) == pytest.approx(1.0, abs=1e-12)
    assert direction @ u > 0.99
    # The magnitudes in another order: the direction still points the way n rises.
    order = np.arange(MAGNITUDES.size)[::-1]
    assert find(vectors[order], MAGNITUDES[order]) @ u > 0.99


def test_the_dose_unit_is_the_span_of_the_centroid_projections():
    centroids = np.array([[0.0, 1.0], [2.0, 5.0], [-1.0, 0.5]])
    direction = np.array([0.6, 0.8])
    # Projections 0.8, 5.2, -0.2: span 5.4.
    assert dose_unit(centroids, direction) == pytest.approx(5.4)
    with pytest.raises(AnalysisError, match="do not spread"):
        dose_unit(np.ones((3, 2)), direction)


def test_random_directions_are_the_papers_normalised_normal_draws():
    drawn = random_directions(10, 8, 42)
    expected = np.random.RandomState(42).randn(10, 8)
    np.testing.assert_allclose(drawn, expected / np.linalg.norm(expected, axis=1, keepdims=True))
    np.testing.assert_allclose(np.linalg.norm(drawn, axis=1), 1.0)
    assert not np.allclose(random_directions(10, 8, 43), drawn)


def test_orthogonal_directions_are_unit_and_orthogonal_to_u():
    _, u = planted(dim=50)
    drawn = orthogonal_directions(u, 10, 42)
    np.testing.assert_allclose(np.linalg.norm(drawn, axis=1), 1.0)
    np.testing.assert_allclose(drawn @ u, 0.0, atol=1e-12)
    assert abs(np.linalg.det(drawn[:3] @ drawn[:3].T)) > 1e-3  # distinct directions, not one repeated
    with pytest.raises(AnalysisError, match="one-dimensional"):
        orthogonal_directions(np.array([1.0]), 2, 0)


def test_layer_directions_scale_every_push_to_one_dose_unit():
    vectors, u = planted(scale=2.0, noise=0.0)
    params = SteerParams(direction="pc1", n_random=4)
    found = layer_directions(5, vectors, MAGNITUDES, params)
    assert found.layer == 5 and found.kinds == direction_kinds(params)
    assert found.kinds == ("magnitude",) + ("random",) * 4 + ("orthogonal",) * 4
    assert found.dose_unit == pytest.approx(2.0 * np.log(89.0))
    np.testing.assert_allclose(np.linalg.norm(found.pushes, axis=1), found.dose_unit)
    np.testing.assert_allclose(found.pushes[0], found.dose_unit * found.direction)
    assert found.direction @ u == pytest.approx(1.0, abs=1e-9)
    without = layer_directions(5, vectors, MAGNITUDES, SteerParams(direction="pc1", n_random=4, orthogonal_null=False))
    assert without.pushes.shape == (5, u.size)


def test_a_layer_with_non_finite_vectors_has_no_direction():
    vectors, _ = planted()
    vectors[2, 1, 3] = np.inf
    for source in ("probe", "pc1"):
        with pytest.raises(AnalysisError, match="Inf/NaN"):
            layer_directions(0, vectors, MAGNITUDES, SteerParams(direction=source))


def test_the_top_dimension_share_is_the_weight_of_the_largest_coordinates():
    # squares 16, 9, 1, 1, 1 of 28: the three largest hold 26/28
    assert top_dimension_share(np.array([4.0, -3.0, 1.0, 1.0, -1.0])) == pytest.approx(26 / 28)
    assert top_dimension_share(np.ones(300)) == pytest.approx(3 / 300)
    assert top_dimension_share(np.array([0.0, 5.0, 0.0]), count=1) == pytest.approx(1.0)
    assert np.isnan(top_dimension_share(np.zeros(4)))
