"""Variability of a magnitude's representation across carrier sentences (Cacioli, arXiv 2604.04469).

Every measure takes the vectors of one layer, ``x`` of shape ``(n_magnitudes, n_carriers, d)``,
where ``x[n, c]`` is the hidden state at the number token of magnitude ``n`` in carrier ``c``,
and returns one value per magnitude, ``V`` of shape ``(n_magnitudes,)``. With ``C`` carriers and
the centroid ``m[n] = mean_c x[n, c]``:

- ``eucl``      V(n) = mean_c ||x[n,c] - m[n]||                      (primary, "raw")
- ``residual``  V_eucl after removing sentence identity: s[c] = mean_n x[n,c] - grand mean,
                x'[n,c] = x[n,c] - s[c]                              (co-primary)
- ``proj``      V(n) = SD (ddof=1) over c of x[n,c] . u, u = PC1 of the centred centroids of
                this layer (an SD, not a variance)
- ``pairwise``  mean over carrier pairs c < c' of ||x[n,c] - x[n,c']||
- ``trace``     sum_c ||x[n,c] - m[n]||^2 / (C - 1)  (trace of the carrier covariance)
- ``cv``        V_eucl(n) / ||m[n]||
- ``on_axis``   variance (ddof=1) over c of (x[n,c] - m[n]) . u        (E4; = V_proj^2)
- ``off_axis``  mean_c ||(x[n,c] - m[n]) - ((x[n,c] - m[n]) . u) u||^2   (E4)

Stored vectors are float32; every sum here runs in float64, one block of magnitudes at a time
(:class:`Block`), so a 1000-magnitude layer never needs a full float64 copy in memory. The
quantities several measures share — the deviations from the centroid, their squared norms,
their coordinates on u — are computed once per block, and the layer-wide ones (centroids,
sentence offsets, u) once per layer (:class:`LayerVectors`), however many measures are asked
for. The magnitude axis u comes from the small centroid matrix (see :func:`magnitude_axis`),
never from a d x d covariance.

Adding a measure is one function of a :class:`Block` returning V for the block's magnitudes,
its value on carriers drawn with replacement (below), plus one :class:`Measure` entry in
:data:`MEASURES` with its title, unit, outlier rule and roles. Each registered measure is also
callable on a layer array directly: ``MEASURES["eucl"](x)``.

Carriers drawn with replacement (the stimulus bootstrap, :mod:`magdash.variability.stimulus_bootstrap`):
a draw is a vector of counts w over the C carriers (sum W = C), and every measure of the drawn
carriers — the layer's vectors with carrier c repeated w_c times — follows from a layer's
:class:`CarrierMoments` alone, without its d-dimensional vectors. With e[n,c] = x[n,c] - m[n],
the Gram matrix G[n] = (e[n,c] . e[n,c']) and a = w / W, the drawn carriers' centroid is
m[n] + sum_c a_c e[n,c], so each drawn carrier's squared distance to it is

    q[n,c] = G[n]_cc - 2 (G[n] a)_c + a' G[n] a,

and V_eucl = sum_c a_c sqrt(q), V_trace = sum_c w_c q / (W - 1), V_pairwise =
sum_{c,c'} w_c w_c' D[n]_cc' / (W (W - 1)) with D the distances between carriers (a carrier drawn
twice is at distance 0 from itself, as the repeated vectors are), V_residual the same as V_eucl on
the Gram matrix of the vectors without their sentence offsets, and the projection measures the
weighted SD and variance (ddof 1) of p[n,c] = e[n,c] . u. The magnitude axis u and the sentence
offsets s[c] are the layer's own, from every stimulus, in every draw: the interval is conditional
on them. With w = 1 every formula gives the measure itself (``tests/variability/test_measures.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from magdash.errors import AnalysisError

MIN_CARRIERS = 2
"""V is a spread across carrier sentences: an analysis needs at least two of them (so leaving
carriers out must keep two)."""

# Float64 elements per block of magnitudes (about 32 MB): bounds the temporary copies.
_BLOCK_ELEMENTS = 4_000_000


def _check_layer(x: np.ndarray, min_carriers: int = MIN_CARRIERS) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 3:
        raise AnalysisError(
            f"expected layer vectors of shape (n_magnitudes, n_carriers, d), got shape {x.shape}"
        )
    if x.shape[1] < min_carriers:
        raise AnalysisError(
            f"variability needs at least {min_carriers} carrier sentences, got {x.shape[1]}"
        )
    return x


def magnitude_axis(centroid_matrix: np.ndarray) -> np.ndarray:
    """PC1 of the centred centroids: the unit vector u of largest variance among ``m[n]``.

    With the centred centroid matrix ``C = M - mean = U S V^T`` (n x d), ``u = V[0]``. It is
    computed from the top eigenvector of the smaller Gram matrix: for n <= d,
    ``C C^T = U S^2 U^T`` (n x n) and ``u = C^T U[:, 0] / S[0]``; for n > d, ``C^T C`` (d x d) is
    the smaller one. A d x d covariance is never formed for the usual n < d, and the top
    eigenvector of a 1000 x 1000 Gram matrix takes a fraction of a second where a full SVD of
    the 1000 x 4096 matrix takes tens of seconds on two cores.

    The sign of a principal axis is arbitrary; here it is chosen so that the coordinate of the
    last centroid is at least that of the first (for ascending magnitudes, larger numbers lie on
    the positive side). Measures that use u only through squares or SDs do not depend on it.
    """
    import scipy.linalg  # here, not at import: the parameters import this module's registry

    centred = np.asarray(centroid_matrix, dtype=np.float64)
    centred = centred - centred.mean(axis=0, keepdims=True)
    n, d = centred.shape
    if n < 2 or not np.any(centred):
        # No spread between centroids: every direction is equally "PC1"; use a fixed one so the
        # projection measures stay defined (they then report the spread along that axis).
        axis = np.zeros(d)
        axis[0] = 1.0
        return axis
    if n <= d:
        _, top = scipy.linalg.eigh(centred @ centred.T, subset_by_index=[n - 1, n - 1])
        axis = centred.T @ top[:, 0]
    else:
        _, top = scipy.linalg.eigh(centred.T @ centred, subset_by_index=[d - 1, d - 1])
        axis = top[:, 0]
    axis = axis / np.linalg.norm(axis)
    coordinates = centred @ axis
    if coordinates[-1] < coordinates[0]:
        axis = -axis
    return axis


def _deviations(values: np.ndarray) -> np.ndarray:
    """x[n, c] - m[n] for a float64 block, exactly zero when a magnitude's carriers coincide.

    Subtracting the first carrier before averaging removes the large common part of the
    vectors first: identical vectors (a context-free embedding layer) then give exactly 0
    rather than rounding noise that a log-log fit would mistake for data.
    """
    return _centre_in_place(values - values[:, :1])


def _centre_in_place(shifted: np.ndarray) -> np.ndarray:
    """Subtract the mean over carriers in place (a fresh 4 MB array costs more than the sums)."""
    shifted -= shifted.mean(axis=1, keepdims=True)
    return shifted


class LayerVectors:
    """One layer's vectors with the layer-wide quantities that measures share, each computed once.

    ``axis`` may pass a precomputed :func:`magnitude_axis`.
    """

    def __init__(self, x: np.ndarray, *, axis: np.ndarray | None = None, min_carriers: int = MIN_CARRIERS):
        self.x = _check_layer(x, min_carriers)
        self.n_magnitudes, self.n_carriers, self.dim = self.x.shape
        self._given_axis = axis
        per_magnitude = max(1, self.n_carriers * self.dim)
        self._step = max(1, _BLOCK_ELEMENTS // per_magnitude)

    @cached_property
    def _whole(self) -> np.ndarray | None:
        """The whole layer in float64 when it fits in one block (converted once, then reused)."""
        if self._step >= self.n_magnitudes:
            return np.asarray(self.x, dtype=np.float64)
        return None

    def float_blocks(self) -> Iterator[tuple[slice, np.ndarray]]:
        """Consecutive magnitudes as float64 arrays ``(rows, values)``."""
        if self._whole is not None:
            yield slice(0, self.n_magnitudes), self._whole
            return
        for start in range(0, self.n_magnitudes, self._step):
            rows = slice(start, min(start + self._step, self.n_magnitudes))
            yield rows, np.asarray(self.x[rows], dtype=np.float64)

    def blocks(self) -> Iterator[tuple[slice, Block]]:
        for rows, values in self.float_blocks():
            yield rows, Block(values, self)

    @cached_property
    def _means(self) -> tuple[np.ndarray, np.ndarray]:
        """(centroids (n, d), carrier means over magnitudes (C, d)) in one pass."""
        centroid_matrix = np.empty((self.n_magnitudes, self.dim))
        carrier_sums = np.zeros((self.n_carriers, self.dim))
        for rows, values in self.float_blocks():
            centroid_matrix[rows] = values.mean(axis=1)
            carrier_sums += values.sum(axis=0)
        return centroid_matrix, carrier_sums / self.n_magnitudes

    @property
    def centroids(self) -> np.ndarray:
        """Centroid of each magnitude over carriers, ``m[n] = mean_c x[n, c]``: (n, d) float64."""
        return self._means[0]

    @cached_property
    def offsets(self) -> np.ndarray:
        """Sentence identity s[c] = mean_n x[n, c] - grand mean: (C, d) float64."""
        carrier_means = self._means[1]
        return carrier_means - carrier_means.mean(axis=0, keepdims=True)

    @cached_property
    def axis(self) -> np.ndarray:
        """The magnitude axis u (PC1 of the centred centroids)."""
        if self._given_axis is not None:
            return np.asarray(self._given_axis, dtype=np.float64)
        return magnitude_axis(self.centroids)

    def moments(self) -> CarrierMoments:
        """The layer's :class:`CarrierMoments`, in one pass over its blocks."""
        n, c = self.n_magnitudes, self.n_carriers
        gram, residual_gram = np.empty((n, c, c)), np.empty((n, c, c))
        projections, centroid_dots, centroid_squares = np.empty((n, c)), np.empty((n, c)), np.empty(n)
        for rows, block in self.blocks():
            deviations, residual = block.deviations, block.residual_deviations
            gram[rows] = deviations @ deviations.transpose(0, 2, 1)
            residual_gram[rows] = residual @ residual.transpose(0, 2, 1)
            projections[rows] = block.projections
            centroid = self.centroids[rows]
            centroid_dots[rows] = np.einsum("nd,ncd->nc", centroid, deviations)
            centroid_squares[rows] = np.einsum("nd,nd->n", centroid, centroid)
        return CarrierMoments(gram, residual_gram, projections, centroid_dots, centroid_squares)

    def compute(self, names: Sequence[str]) -> dict[str, np.ndarray]:
        """Every measure in ``names`` in one pass over the layer's blocks."""
        measures = [get_measure(name) for name in names]
        out = {m.name: np.empty(self.n_magnitudes) for m in measures}
        for rows, block in self.blocks():
            for measure in measures:
                out[measure.name][rows] = measure.per_block(block)
        return out


class Block:
    """Consecutive magnitudes of one layer in float64, with the arrays measures share (cached)."""

    def __init__(self, values: np.ndarray, layer: LayerVectors):
        self.values = values
        self.layer = layer

    @property
    def n_carriers(self) -> int:
        return self.values.shape[1]

    @cached_property
    def deviations(self) -> np.ndarray:
        """x[n, c] - m[n], shape (b, C, d)."""
        return _deviations(self.values)

    @cached_property
    def squared_norms(self) -> np.ndarray:
        """||x[n, c] - m[n]||^2, shape (b, C)."""
        return np.einsum("ncd,ncd->nc", self.deviations, self.deviations)

    @cached_property
    def projections(self) -> np.ndarray:
        """(x[n, c] - m[n]) . u, shape (b, C): centring changes no SD or variance over carriers
        and makes them exactly 0 when the carriers coincide."""
        return self.deviations @ self.layer.axis

    @cached_property
    def centroid_norms(self) -> np.ndarray:
        return np.linalg.norm(self.values.mean(axis=1), axis=1)

    @cached_property
    def residual_deviations(self) -> np.ndarray:
        """Deviations from the centroid after removing the sentence offsets s[c]."""
        adjusted = self.values - self.layer.offsets[np.newaxis]
        adjusted -= adjusted[:, :1].copy()
        return _centre_in_place(adjusted)


def _eucl(block: Block) -> np.ndarray:
    return np.sqrt(block.squared_norms).mean(axis=1)


def _residual(block: Block) -> np.ndarray:
    deviations = block.residual_deviations
    return np.sqrt(np.einsum("ncd,ncd->nc", deviations, deviations)).mean(axis=1)


def _proj(block: Block) -> np.ndarray:
    return block.projections.std(axis=1, ddof=1)


def _pairwise(block: Block) -> np.ndarray:
    # Distances from the Gram matrix of the deviations: translation changes no distance, and
    # centring first avoids cancellation between large norms.
    gram = block.deviations @ block.deviations.transpose(0, 2, 1)
    first, second = np.triu_indices(block.n_carriers, k=1)
    norms = block.squared_norms
    squared = norms[:, first] + norms[:, second] - 2.0 * gram[:, first, second]
    return np.sqrt(np.clip(squared, 0.0, None)).mean(axis=1)


def _trace(block: Block) -> np.ndarray:
    return block.squared_norms.sum(axis=1) / (block.n_carriers - 1)


def _cv(block: Block) -> np.ndarray:
    norms = block.centroid_norms
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(norms > 0, _eucl(block) / norms, np.nan)


def _on_axis(block: Block) -> np.ndarray:
    return block.projections.var(axis=1, ddof=1)


def _off_axis(block: Block) -> np.ndarray:
    # ||e - (e.u) u||^2 = ||e||^2 - (e.u)^2 for a unit u: no d-dimensional residual is formed.
    return np.clip(block.squared_norms - block.projections**2, 0.0, None).mean(axis=1)


@dataclass(frozen=True)
class CarrierMoments:
    """What every measure of one layer needs to be recomputed on carriers drawn with replacement
    (module docstring), per magnitude: N x C x C and N x C numbers instead of N x C x d.

    Attributes:
        gram: (N, C, C) ``e[n,c] . e[n,c']`` with ``e[n,c] = x[n,c] - m[n]``.
        residual_gram: (N, C, C) the same after removing the sentence offsets s[c].
        projections: (N, C) ``e[n,c] . u``, u the layer's magnitude axis.
        centroid_dots: (N, C) ``m[n] . e[n,c]``.
        centroid_squares: (N,) ``||m[n]||^2``.
    """

    gram: np.ndarray
    residual_gram: np.ndarray
    projections: np.ndarray
    centroid_dots: np.ndarray
    centroid_squares: np.ndarray

    @property
    def n_carriers(self) -> int:
        return self.projections.shape[1]


class DrawnCarriers:
    """Carriers drawn with replacement, ``counts`` (b, C) per draw, against one layer's moments,
    with the quantities several measures share (module docstring), each computed once."""

    def __init__(self, moments: CarrierMoments, counts: np.ndarray):
        self.moments = moments
        self.counts = np.asarray(counts, dtype=np.float64)
        self.total = float(moments.n_carriers)
        self.shares = self.counts / self.total

    def squared_distances(self, gram: np.ndarray) -> np.ndarray:
        """q[b,n,c]: each carrier's squared distance to the drawn carriers' centroid."""
        pulled = np.einsum("ncd,bd->bnc", gram, self.shares)
        spread = np.einsum("bnc,bc->bn", pulled, self.shares)
        diagonal = np.einsum("ncc->nc", gram)
        return np.clip(diagonal[np.newaxis] - 2.0 * pulled + spread[..., np.newaxis], 0.0, None)

    @cached_property
    def distances_sq(self) -> np.ndarray:
        return self.squared_distances(self.moments.gram)

    def mean_over_draws(self, values: np.ndarray) -> np.ndarray:
        """sum_c a_c values[b,n,c]: the mean over the drawn carriers, (b, N)."""
        return np.einsum("bnc,bc->bn", values, self.shares)

    @cached_property
    def projections_centred(self) -> np.ndarray:
        """(e . u) of each carrier minus its mean over the drawn carriers, (b, N, C); exactly 0 for
        a draw of one carrier."""
        p = self.moments.projections
        return p[np.newaxis] - np.einsum("nc,bc->bn", p, self.shares)[..., np.newaxis]

    @cached_property
    def projection_variance(self) -> np.ndarray:
        """Variance (ddof 1) over the drawn carriers of e . u, (b, N)."""
        return np.einsum("bnc,bc->bn", self.projections_centred**2, self.counts) / (self.total - 1.0)


def _eucl_drawn(drawn: DrawnCarriers) -> np.ndarray:
    return drawn.mean_over_draws(np.sqrt(drawn.distances_sq))


def _residual_drawn(drawn: DrawnCarriers) -> np.ndarray:
    return drawn.mean_over_draws(np.sqrt(drawn.squared_distances(drawn.moments.residual_gram)))


def _proj_drawn(drawn: DrawnCarriers) -> np.ndarray:
    return np.sqrt(drawn.projection_variance)


def _pairwise_drawn(drawn: DrawnCarriers) -> np.ndarray:
    gram = drawn.moments.gram
    diagonal = np.einsum("ncc->nc", gram)
    distances = np.sqrt(np.clip(diagonal[:, :, None] + diagonal[:, None, :] - 2.0 * gram, 0.0, None))
    pairs = np.einsum("bc,ncd,bd->bn", drawn.counts, distances, drawn.counts)
    return pairs / (drawn.total * (drawn.total - 1.0))


def _trace_drawn(drawn: DrawnCarriers) -> np.ndarray:
    return np.einsum("bnc,bc->bn", drawn.distances_sq, drawn.counts) / (drawn.total - 1.0)


def _cv_drawn(drawn: DrawnCarriers) -> np.ndarray:
    moments = drawn.moments
    # ||m + sum_c a_c e_c||^2 = ||m||^2 + 2 sum_c a_c (m . e_c) + a' G a
    spread = np.einsum("ncd,bc,bd->bn", moments.gram, drawn.shares, drawn.shares)
    norms_sq = moments.centroid_squares[np.newaxis] + 2.0 * np.einsum(
        "nc,bc->bn", moments.centroid_dots, drawn.shares) + spread
    norms = np.sqrt(np.clip(norms_sq, 0.0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(norms > 0, _eucl_drawn(drawn) / norms, np.nan)


def _on_axis_drawn(drawn: DrawnCarriers) -> np.ndarray:
    return drawn.projection_variance


def _off_axis_drawn(drawn: DrawnCarriers) -> np.ndarray:
    return drawn.mean_over_draws(np.clip(drawn.distances_sq - drawn.projections_centred**2, 0.0, None))


@dataclass(frozen=True)
class Measure:
    """A registered variability measure and every fact about it that a table, chart, choice list
    or help text shows: V for a :class:`Block`'s magnitudes, its display title, what it is, its
    unit, the colour every chart draws it in (its own: :func:`measure_registry` refuses a colour
    already taken), whether the 3x-median outlier rule applies to its fits (the paper: V_eucl and
    V_residual), and its roles.

    Calling it on a layer array ``x`` (optionally with ``axis=``) returns V for every magnitude.
    """

    name: str
    title: str
    per_block: Callable[[Block], np.ndarray]
    drawn: Callable[[DrawnCarriers], np.ndarray]
    """V of every magnitude on carriers drawn with replacement, (b, N) (module docstring)."""
    description: str
    unit: str
    color: str
    """The measure's colour in every chart (a hex colour, ``#RRGGBB``)."""
    outlier_rule: bool = False
    primary: bool = False
    """One of the paper's three measures, analysed by default."""
    browsable: bool = False
    """A measure whose scaling a reader can pick in the app (the ratios and E4's variances are
    derived quantities, shown on their own figures)."""
    carrier_distances: bool = False
    """The mean of each carrier's distance to a centroid, so the Scaling chart can draw those distances."""

    def __call__(self, x: np.ndarray, *, axis: np.ndarray | None = None) -> np.ndarray:
        return LayerVectors(x, axis=axis).compute([self.name])[self.name]

    def on_drawn_carriers(self, moments: CarrierMoments, counts: np.ndarray) -> np.ndarray:
        """V of every magnitude on each draw of carriers, (b, N).

        Args:
            moments: the layer's :class:`CarrierMoments`.
            counts: (b, C) how many times each carrier was drawn, C draws a row.
        """
        return self.drawn(DrawnCarriers(moments, counts))

    @property
    def explained(self) -> str:
        """``V_eucl: mean distance of the carriers to their centroid, activation units``."""
        return f"{self.title}: {self.description}, {self.unit}"


def measure_registry(*measures: Measure) -> dict[str, Measure]:
    """The measures by name, in order; refuses two of one name, or two of one colour (a new measure
    would silently draw in another's colour, and a chart of both could not tell them apart).

    Args:
        measures: the :class:`Measure` entries.
    """
    registry: dict[str, Measure] = {}
    colors: dict[str, str] = {}
    for measure in measures:
        if measure.name in registry:
            raise AnalysisError(f"two measures are named {measure.name!r}; give each a name of its own")
        color = measure.color.lower()
        if len(color) != 7 or not color.startswith("#") or any(c not in "0123456789abcdef" for c in color[1:]):
            raise AnalysisError(f"measure {measure.name!r} has colour {measure.color!r}; give a hex colour, #RRGGBB")
        if color in colors:
            raise AnalysisError(
                f"measures {colors[color]!r} and {measure.name!r} share the colour {measure.color}; give each a "
                "colour of its own"
            )
        registry[measure.name] = measure
        colors[color] = measure.name
    return registry


# Colours: Okabe–Ito's colour-blind-safe palette, then Tol's olive (Okabe–Ito's yellow is the Weber window).
MEASURES: dict[str, Measure] = measure_registry(
    Measure("eucl", "V_eucl", _eucl, _eucl_drawn, "mean distance of the carriers to their centroid",
            "activation units", color="#0072B2", outlier_rule=True, primary=True, browsable=True,
            carrier_distances=True),
    Measure("residual", "V_residual", _residual, _residual_drawn, "V_eucl after removing sentence offsets",
            "activation units", color="#E69F00", outlier_rule=True, primary=True, browsable=True,
            carrier_distances=True),
    Measure("proj", "V_proj", _proj, _proj_drawn, "SD (ddof=1) of the carriers on the magnitude axis",
            "activation units", color="#009E73", primary=True, browsable=True),
    Measure("pairwise", "V_pairwise", _pairwise, _pairwise_drawn, "mean distance between carrier pairs",
            "activation units", color="#CC79A7", browsable=True),
    Measure("trace", "V_trace", _trace, _trace_drawn, "trace of the carrier covariance (ddof=1)", "squared units",
            color="#56B4E9", browsable=True),
    Measure("cv", "CV", _cv, _cv_drawn, "V_eucl / norm of the centroid", "a ratio", color="#000000"),
    Measure("on_axis", "on-axis variance", _on_axis, _on_axis_drawn, "variance (ddof=1) on the magnitude axis",
            "squared units", color="#D55E00"),
    Measure("off_axis", "off-axis variance", _off_axis, _off_axis_drawn, "mean squared norm off the magnitude axis",
            "squared units", color="#6A3D9A"),
)
"""Every variability measure by name. A new measure: one block function, one entry here (and its
formula in docs/science.md); every table, chart, choice list and help text reads its facts here."""

DEFAULT_MEASURE = "eucl"
"""The measure a chart, a page, an E5 table or a figure of the API shows unless told otherwise:
V_eucl, the paper's primary measure."""

PRIMARY_MEASURES = tuple(name for name, m in MEASURES.items() if m.primary)
"""The paper's three measures: V_eucl (primary), V_residual (co-primary), V_proj."""
BROWSABLE_MEASURES = tuple(name for name, m in MEASURES.items() if m.browsable)
CARRIER_MEASURES = tuple(name for name, m in MEASURES.items() if m.carrier_distances)
OUTLIER_RULE_MEASURES = frozenset(name for name, m in MEASURES.items() if m.outlier_rule)
"""Measures fitted with the 3x-median outlier rule (the paper: V_eucl and V_residual)."""


def measure_title(name: str) -> str:
    """A measure's display title (``V_eucl``), or the name itself for an unregistered one."""
    return MEASURES[name].title if name in MEASURES else name


def get_measure(name: str) -> Measure:
    try:
        return MEASURES[name]
    except KeyError:
        known = ", ".join(MEASURES)
        raise AnalysisError(f"unknown measure {name!r}; choose from {known}") from None


def compute_measure(name: str, x: np.ndarray, *, axis: np.ndarray | None = None) -> np.ndarray:
    """The registered measure ``name`` on one layer (``axis``: a precomputed magnitude axis)."""
    return LayerVectors(x, axis=axis).compute([get_measure(name).name])[name]


def centroids(x: np.ndarray) -> np.ndarray:
    """Centroid of each magnitude over carriers, ``m[n] = mean_c x[n, c]``: (n, d) float64."""
    return LayerVectors(x, min_carriers=1).centroids


def sentence_offsets(x: np.ndarray) -> np.ndarray:
    """Sentence identity s[c] = mean_n x[n, c] - grand mean: (C, d) float64."""
    return LayerVectors(x).offsets


def v_eucl(x: np.ndarray) -> np.ndarray:
    """V_eucl(n) = mean over carriers of the Euclidean distance to the magnitude's centroid."""
    return MEASURES["eucl"](x)


def v_residual(x: np.ndarray) -> np.ndarray:
    """V_eucl after subtracting each carrier's sentence offset s[c] from all its vectors.

    A sentence that shifts every number by the same vector inflates V_eucl at every magnitude
    equally; removing ``s[c]`` leaves only the magnitude-specific scatter.
    """
    return MEASURES["residual"](x)


def v_proj(x: np.ndarray, axis: np.ndarray | None = None) -> np.ndarray:
    """V_proj(n) = SD (ddof=1) over carriers of the projection of x[n, c] on PC1 of the centroids."""
    return MEASURES["proj"](x, axis=axis)


def v_pairwise(x: np.ndarray) -> np.ndarray:
    """Mean Euclidean distance over all carrier pairs c < c' of one magnitude."""
    return MEASURES["pairwise"](x)


def v_trace(x: np.ndarray) -> np.ndarray:
    """Trace of the carrier covariance: sum_c ||x[n,c] - m[n]||^2 / (C - 1)."""
    return MEASURES["trace"](x)


def cv(x: np.ndarray) -> np.ndarray:
    """Coefficient of variation V_eucl(n) / ||m[n]|| (NaN where the centroid is the zero vector)."""
    return MEASURES["cv"](x)


def on_axis_variance(x: np.ndarray, axis: np.ndarray | None = None) -> np.ndarray:
    """E4 on-axis variance: variance (ddof=1) over carriers of the deviations' PC1 coordinate."""
    return MEASURES["on_axis"](x, axis=axis)


def off_axis_variance(x: np.ndarray, axis: np.ndarray | None = None) -> np.ndarray:
    """E4 off-axis variance: mean over carriers of ||deviation||^2 minus its PC1 part squared.

    Divides by C (a mean of squared norms), as the paper defines it.
    """
    return MEASURES["off_axis"](x, axis=axis)
