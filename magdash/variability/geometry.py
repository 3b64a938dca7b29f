"""Log-compressive geometry of the magnitude centroids (Cacioli, arXiv 2603.20642).

Per layer, with m[n] the centroid of magnitude n over carriers:

- representational dissimilarity matrices (RDMs) of the centroids: Euclidean
  ``||m[a] - m[b]||`` and cosine ``1 - m[a].m[b] / (||m[a]|| ||m[b]||)``;
- model RDMs: log-ratio ``|log a - log b|`` (Weber–Fechner) and linear ``|a - b|``;
- RSA: Spearman correlation between the upper triangles (a < b) of a centroid RDM and a
  model RDM. A log-compressive code correlates better with the log-ratio model;
- the PC1 coordinate of each centred centroid, correlated with log n (Pearson and Spearman).
  A principal axis has no sign of its own; it is oriented so that the Pearson correlation with
  log n is >= 0, which makes the coordinate comparable across layers and models.

No p-values are given for RSA: the entries of an RDM are not independent, so the usual
Spearman p-value would be wrong. Magnitudes <= 0 have no log; log-model entries involving them
are left out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from magdash.errors import AnalysisError
from magdash.significance import statistic_and_p
from magdash.variability.measures import magnitude_axis

RDM_METRICS = ("euclidean", "cosine")
MODEL_RDMS = ("log", "linear")


def centroid_rdm(centroid_matrix: np.ndarray, metric: str = "euclidean") -> np.ndarray:
    """Dissimilarity matrix (n x n) between centroids, Euclidean or cosine distance."""
    m = np.asarray(centroid_matrix, dtype=np.float64)
    if metric == "euclidean":
        # Distances are translation invariant; centring first keeps the Gram trick accurate.
        centred = m - m.mean(axis=0, keepdims=True)
        gram = centred @ centred.T
        squared_norms = np.diag(gram)
        squared = squared_norms[:, None] + squared_norms[None, :] - 2.0 * gram
        rdm = np.sqrt(np.clip(squared, 0.0, None))
    elif metric == "cosine":
        norms = np.linalg.norm(m, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            unit = m / norms[:, None]
            rdm = 1.0 - unit @ unit.T
        rdm[norms == 0, :] = np.nan
        rdm[:, norms == 0] = np.nan
        rdm = np.clip(rdm, 0.0, 2.0)
    else:
        raise AnalysisError(f"unknown RDM metric {metric!r}; choose from {', '.join(RDM_METRICS)}")
    np.fill_diagonal(rdm, 0.0)
    return rdm


def model_rdm(magnitudes: np.ndarray, kind: str = "log") -> np.ndarray:
    """Model RDM: ``|log a - log b|`` (kind="log", NaN where a or b <= 0) or ``|a - b|``."""
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    if kind == "log":
        coordinate = np.full(magnitudes.shape, np.nan)
        positive = magnitudes > 0
        coordinate[positive] = np.log(magnitudes[positive])
    elif kind == "linear":
        coordinate = magnitudes
    else:
        raise AnalysisError(f"unknown model RDM {kind!r}; choose from {', '.join(MODEL_RDMS)}")
    return np.abs(coordinate[:, None] - coordinate[None, :])


def _upper(rdm: np.ndarray) -> np.ndarray:
    return rdm[np.triu_indices(rdm.shape[0], k=1)]


def _rank_correlation(ranks_a: np.ndarray, ranks_b: np.ndarray) -> float:
    """Pearson correlation of two rank vectors (= Spearman of the underlying values)."""
    if ranks_a.size < 3 or np.ptp(ranks_a) == 0 or np.ptp(ranks_b) == 0:
        return math.nan
    a = ranks_a - ranks_a.mean()
    b = ranks_b - ranks_b.mean()
    return float(a @ b / math.sqrt((a @ a) * (b @ b)))


def rsa(rdm_a: np.ndarray, rdm_b: np.ndarray) -> float:
    """Spearman correlation of the upper triangles (a < b) of two RDMs, over finite pairs."""
    from scipy import stats

    rdm_a = np.asarray(rdm_a, dtype=np.float64)
    rdm_b = np.asarray(rdm_b, dtype=np.float64)
    if rdm_a.shape != rdm_b.shape or rdm_a.ndim != 2 or rdm_a.shape[0] != rdm_a.shape[1]:
        raise AnalysisError(f"RDMs must be square and of equal shape: {rdm_a.shape}, {rdm_b.shape}")
    a = _upper(rdm_a)
    b = _upper(rdm_b)
    finite = np.isfinite(a) & np.isfinite(b)
    return _rank_correlation(stats.rankdata(a[finite]), stats.rankdata(b[finite]))


@dataclass(frozen=True)
class ModelRdms:
    """The log-ratio and linear model RDMs of a magnitude set, upper triangles ranked once.

    Every layer of a model is compared with the same two model RDMs; ranking their
    n(n-1)/2 entries once instead of per layer matters for 1000 magnitudes (500k pairs).
    """

    values: dict[str, np.ndarray]
    finite: dict[str, np.ndarray]
    ranks: dict[str, np.ndarray]

    @classmethod
    def for_magnitudes(cls, magnitudes: np.ndarray) -> ModelRdms:
        from scipy import stats

        values, finite, ranks = {}, {}, {}
        for kind in MODEL_RDMS:
            upper = _upper(model_rdm(magnitudes, kind))
            values[kind] = upper
            finite[kind] = np.isfinite(upper)
            ranks[kind] = stats.rankdata(upper[finite[kind]])
        return cls(values, finite, ranks)

    def correlate(self, rdm: np.ndarray) -> dict[str, float]:
        """RSA of a centroid RDM with each model RDM (Spearman over pairs finite in both)."""
        from scipy import stats

        upper = _upper(np.asarray(rdm, dtype=np.float64))
        finite_rdm = np.isfinite(upper)
        ranked: dict[bytes, np.ndarray] = {}  # the layer's ranks, shared by equal pair sets
        result = {}
        for kind in MODEL_RDMS:
            if not finite_rdm[self.finite[kind]].all():
                both = finite_rdm & self.finite[kind]
                result[kind] = _rank_correlation(
                    stats.rankdata(upper[both]), stats.rankdata(self.values[kind][both])
                )
                continue
            key = self.finite[kind].tobytes()
            if key not in ranked:
                ranked[key] = stats.rankdata(upper[self.finite[kind]])
            result[kind] = _rank_correlation(ranked[key], self.ranks[kind])
        return result


@dataclass(frozen=True)
class Pc1Coordinates:
    """Centroid coordinates on PC1, oriented to correlate positively with log n."""

    coordinates: np.ndarray
    pearson: float
    spearman: float
    explained: float  # fraction of the centroids' variance on PC1


def pc1_coordinates(
    centroid_matrix: np.ndarray, magnitudes: np.ndarray, axis: np.ndarray | None = None
) -> Pc1Coordinates:
    """PC1 coordinate of each centred centroid and its correlation with log n.

    ``axis`` may pass a precomputed :func:`magdash.variability.measures.magnitude_axis`.
    """
    from scipy import stats

    m = np.asarray(centroid_matrix, dtype=np.float64)
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    if axis is None:
        axis = magnitude_axis(m)
    centred = m - m.mean(axis=0, keepdims=True)
    coordinates = centred @ axis
    total = float(np.einsum("nd,nd->", centred, centred))
    explained = float(coordinates @ coordinates) / total if total > 0 else math.nan
    positive = magnitudes > 0
    log_n = np.log(magnitudes[positive])
    on_axis = coordinates[positive]
    if log_n.size < 3 or np.ptp(on_axis) == 0 or np.ptp(log_n) == 0:
        return Pc1Coordinates(coordinates, math.nan, math.nan, explained)
    pearson, _ = statistic_and_p(stats.pearsonr(on_axis, log_n))
    if pearson < 0:
        coordinates = -coordinates
        on_axis = -on_axis
        pearson = -pearson
    spearman, _ = statistic_and_p(stats.spearmanr(on_axis, log_n))
    return Pc1Coordinates(coordinates, pearson, spearman, explained)


@dataclass(frozen=True)
class LayerGeometry:
    """RSA of the centroid RDMs against the two model RDMs, and the PC1 summary, for a layer."""

    rsa_log_euclidean: float
    rsa_linear_euclidean: float
    rsa_log_cosine: float
    rsa_linear_cosine: float
    pc1_pearson: float
    pc1_spearman: float
    pc1_explained: float


def layer_geometry(
    centroid_matrix: np.ndarray,
    magnitudes: np.ndarray,
    axis: np.ndarray | None = None,
    models: ModelRdms | None = None,
) -> LayerGeometry:
    """Every geometry summary of one layer from its centroids (shape (n_magnitudes, d)).

    ``axis`` may pass a precomputed :func:`magdash.variability.measures.magnitude_axis`, ``models`` the
    :class:`ModelRdms` of the magnitudes (computed here when not given).
    """
    models = models or ModelRdms.for_magnitudes(magnitudes)
    euclidean = models.correlate(centroid_rdm(centroid_matrix, "euclidean"))
    cosine = models.correlate(centroid_rdm(centroid_matrix, "cosine"))
    pc1 = pc1_coordinates(centroid_matrix, magnitudes, axis)
    return LayerGeometry(
        rsa_log_euclidean=euclidean["log"],
        rsa_linear_euclidean=euclidean["linear"],
        rsa_log_cosine=cosine["log"],
        rsa_linear_cosine=cosine["linear"],
        pc1_pearson=pc1.pearson,
        pc1_spearman=pc1.spearman,
        pc1_explained=pc1.explained,
    )
