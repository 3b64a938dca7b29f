"""The directions a layer is steered along: the magnitude direction, its dose unit and the nulls.

Cacioli 2026 (arXiv 2603.20642, Paradigm D, ``scripts/paradigm_d_causal.py``):

- the magnitude direction u of a layer is the unit weight vector of a ridge probe of log n on the
  number vectors (:func:`probe_direction`: magdash's probe fitted on every vector, its penalty by
  GCV, as :mod:`magdash.probes` fits the ``directions`` table's direction), or PC1 of the
  magnitudes' centroids m[n], signed so that its coordinates rise with n (:func:`pc1_direction`);
- one dose unit is the span of the centroids' projections on u, ``max_n m[n].u - min_n m[n].u``
  (:func:`dose_unit`): a push of dose 1 moves a number along u by as much as the whole range of
  magnitudes lies along it;
- the null is ``k`` random unit directions, standard normal draws normalised (the paper's
  ``RandomState(42).randn(10, d)``: :func:`random_directions`), and, as a second null, ``k`` random
  unit directions orthogonal to u (:func:`orthogonal_directions`); each is pushed with the same
  norm as u.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from magdash.errors import AnalysisError
from magdash.probes.basis import feature_basis, layer_moments
from magdash.probes.crossval import fit_ridge, magnitude_groups
from magdash.probes.labels import check_magnitudes, check_vectors, target_values
from magdash.probes.probe import oriented_axis
from magdash.probes.probe_params import ProbeParams
from magdash.steering.steer_params import SteerParams

DIRECTION_KINDS = ("magnitude", "random", "orthogonal")
"""What each steered direction is: the magnitude direction, a random null, an orthogonal null."""

_ORTHOGONAL_STREAM = 1
"""Salt of the orthogonal null's draws under the seed (the random null takes the seed alone, as the paper)."""


def probe_direction(vectors: np.ndarray, magnitudes, params: ProbeParams | None = None) -> np.ndarray:
    """The unit weight vector (d,) of the ridge probe of log n fitted on every vector of a layer.

    The probe is :mod:`magdash.probes`' (features scaled by the layer's total variance, the same basis,
    the penalty chosen by GCV with the one-standard-error rule); its weight vector w maps back to the
    layer's d dimensions and ``u = w / |w|`` points the way log n rises.

    Args:
        vectors: (n_magnitudes, n_carriers, d), x[i, c] the vector of magnitude i in carrier c.
        magnitudes: the n of each row of ``vectors``, positive and distinct.
        params: the probe's choices (defaults when None); only its log target is read.

    Raises:
        AnalysisError: a design the probe cannot use, or a probe without a direction (w = 0).
    """
    params = dataclasses.replace(params or ProbeParams(), targets=("log",))
    magnitudes = check_magnitudes(magnitudes, params)
    x = check_vectors(vectors, magnitudes.size, params)
    n_magnitudes, n_carriers, _ = x.shape
    centroids, total_variance = layer_moments(x)
    if not np.isfinite(total_variance):
        raise AnalysisError("the layer holds Inf/NaN vectors: it has no probe direction to steer along")
    basis = feature_basis(x, centroids, total_variance, exact_max_vectors=params.exact_max_vectors,
                          n_components=params.n_components)
    labels = np.repeat(target_values(magnitudes, "log")[:, None], n_carriers, axis=0)
    rng = np.random.default_rng([params.seed, 1])  # the stream magdash.probes chooses a large fold's rows from
    fit = fit_ridge(basis.features, labels, magnitude_groups(n_magnitudes, n_carriers), np.asarray(params.alphas),
                    params.alpha_rows, rng)
    direction = basis.direction(fit.coef[0])
    if not np.any(direction):
        raise AnalysisError("the probe of log n has a zero weight vector here: the layer has no probe direction")
    return direction


def pc1_direction(vectors: np.ndarray, magnitudes) -> np.ndarray:
    """PC1 of a layer's centroids (d,), unit length, signed so that its coordinates rise with n
    (:func:`magdash.probes.probe.oriented_axis`).

    Args:
        vectors: (n_magnitudes, n_carriers, d).
        magnitudes: the n of each row of ``vectors``.
    """
    centroids = _centroids(vectors)
    return oriented_axis(centroids, np.asarray(magnitudes, dtype=np.float64))


def _centroids(vectors: np.ndarray) -> np.ndarray:
    x = np.asarray(vectors)
    if x.ndim != 3 or x.shape[0] < 2:
        raise AnalysisError(f"expected layer vectors of shape (n_magnitudes >= 2, n_carriers, d), got shape {x.shape}")
    centroids = x.mean(axis=1, dtype=np.float64)
    if not np.isfinite(centroids).all():
        raise AnalysisError("the layer holds Inf/NaN vectors: it has no direction to steer along")
    return centroids


def dose_unit(centroids: np.ndarray, direction: np.ndarray) -> float:
    """One dose: the span ``max_n m[n].u - min_n m[n].u`` of the centroids' projections on the unit direction u.

    Args:
        centroids: (n_magnitudes, d) the magnitudes' centroids m[n].
        direction: (d,) the unit direction u.

    Raises:
        AnalysisError: the centroids do not spread along u (a push of one dose would be zero).
    """
    coordinates = np.asarray(centroids, dtype=np.float64) @ np.asarray(direction, dtype=np.float64)
    span = float(np.ptp(coordinates))
    if not np.isfinite(span) or span <= 0:
        raise AnalysisError("the magnitudes' centroids do not spread along the direction: it has no dose unit")
    return span


def random_directions(count: int, dim: int, seed: int) -> np.ndarray:
    """``count`` random unit directions (count, dim): standard normal draws, each divided by its norm
    (the paper's ``generate_random_directions``: the same draws for the same seed and dimension).

    Args:
        count: how many.
        dim: the residual stream's width d.
        seed: the draws' seed.
    """
    draws = np.random.RandomState(seed).standard_normal((count, dim))  # the paper's generator, for its draws
    return draws / np.linalg.norm(draws, axis=1, keepdims=True)


def orthogonal_directions(direction: np.ndarray, count: int, seed: int) -> np.ndarray:
    """``count`` random unit directions (count, d) orthogonal to the unit ``direction`` u: standard
    normal draws g, ``g - (g.u) u`` divided by its norm.

    Args:
        direction: (d,) the unit magnitude direction.
        count: how many.
        seed: the draws' seed (their own stream, not the random null's).

    Raises:
        AnalysisError: a one-dimensional stream, with no direction orthogonal to u.
    """
    u = np.asarray(direction, dtype=np.float64)
    if u.size < 2:
        raise AnalysisError("a one-dimensional residual stream has no direction orthogonal to the magnitude direction")
    draws = np.random.default_rng([seed, _ORTHOGONAL_STREAM]).standard_normal((count, u.size))
    for _ in range(2):  # twice: the second pass removes what rounding left of u
        draws -= np.outer(draws @ u, u)
    return draws / np.linalg.norm(draws, axis=1, keepdims=True)


@dataclass(frozen=True)
class LayerDirections:
    """What one layer is steered along.

    Attributes:
        layer: the layer (the extraction's numbering).
        direction: (d,) the unit magnitude direction u.
        dose_unit: the span of the centroids' projections on u.
        pushes: (k, d) every steered direction scaled to one dose unit: row 0 ``dose_unit * u``, then
            the random nulls, then the orthogonal ones, each of norm ``dose_unit``.
        kinds: each row's kind (:data:`DIRECTION_KINDS`).
    """

    layer: int
    direction: np.ndarray
    dose_unit: float
    pushes: np.ndarray
    kinds: tuple[str, ...]


TOP_DIMENSIONS = 3
"""How many coordinates :func:`top_dimension_share` sums: a direction that puts most of its weight on
a handful of coordinates may be reading a model's massive dimensions (a few activations orders of
magnitude above the rest: Sun et al. 2024, "Massive activations in large language models"), not magnitude."""


def top_dimension_share(direction: np.ndarray, count: int = TOP_DIMENSIONS) -> float:
    """The share of ``direction``'s squared norm held by its ``count`` largest coordinates (1/d to 1;
    about ``count``/d for a direction spread over every coordinate).

    Args:
        direction: the direction (any norm; 0 gives NaN).
        count: how many of the largest coordinates.
    """
    squared = np.square(np.asarray(direction, dtype=np.float64).ravel())
    total = float(squared.sum())
    if not total > 0:
        return float("nan")
    return float(np.sort(squared)[::-1][:count].sum() / total)


def direction_kinds(params: SteerParams) -> tuple[str, ...]:
    """The kind of each row of :attr:`LayerDirections.pushes` under ``params``.

    Args:
        params: the steering's choices.
    """
    return ("magnitude",) + ("random",) * params.n_random + ("orthogonal",) * params.n_orthogonal


def layer_directions(layer: int, vectors: np.ndarray, magnitudes, params: SteerParams | None = None,
                     probe_params: ProbeParams | None = None) -> LayerDirections:
    """A layer's magnitude direction (``params.direction``), its dose unit and its nulls.

    Args:
        layer: the layer's number.
        vectors: (n_magnitudes, n_carriers, d) the layer's number vectors.
        magnitudes: the n of each row of ``vectors``.
        params: the steering's choices (defaults when None).
        probe_params: the probe's choices for the ``probe`` direction (defaults when None).
    """
    params = params or SteerParams()
    if params.direction == "probe":
        direction = probe_direction(vectors, magnitudes, probe_params)
    else:
        direction = pc1_direction(vectors, magnitudes)
    span = dose_unit(_centroids(vectors), direction)
    rows = [direction[None, :], random_directions(params.n_random, direction.size, params.seed)]
    if params.n_orthogonal:
        rows.append(orthogonal_directions(direction, params.n_orthogonal, params.seed))
    return LayerDirections(layer=int(layer), direction=direction, dose_unit=span, pushes=span * np.vstack(rows),
                           kinds=direction_kinds(params))
