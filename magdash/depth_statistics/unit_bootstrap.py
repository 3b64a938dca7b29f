"""Bootstrap of per-layer means over the independent units the vectors come from.

The vectors of one layer are not independent draws: the tokens of one text share its topic,
style and length, and the number-token vectors of one magnitude (or of one carrier sentence)
share that magnitude (or sentence). Resampling vectors as if they were independent gives
intervals that are too narrow, the more so the more vectors each unit holds (the design effect
1 + (m - 1) ICC of m vectors per unit with intra-unit correlation ICC; Kish 1965). So the units are
resampled, each with all of its vectors:

- one factor (all-token mode: the text, a chunk of a document or a prompt, each token comes
  from): the cluster bootstrap (Davison & Hinkley 1997, *Bootstrap Methods and their
  Application*, section 3.8): draw K of the K units with replacement and keep every vector of
  each draw;
- two crossed factors (number-token mode: magnitude x carrier): the pigeonhole bootstrap
  (Owen 2007, *The pigeonhole bootstrap*, Ann. Appl. Stat. 1:386): magnitudes and carriers are
  drawn independently and a vector counts (times its magnitude was drawn) x (times its carrier
  was drawn); its variance of a mean is mildly conservative.

One draw of the units serves every layer (the same texts are seen at every depth), which keeps
the dependence between depths that a change of m(gamma) from one layer to the next rests on.
With each cell's (a unit, or a magnitude-carrier pair) sum S_c and count N_c of finite values,
a resample's mean is sum_c w_c S_c / sum_c w_c N_c, w_c the product of the draw counts of the
cell's units, so a resample costs O(cells) whatever the number of vectors.

Few units give a rough interval whatever is done: with fewer than :data:`FEW_UNITS` in a factor
the percentile interval is known to be too narrow (Cameron, Gelbach & Miller 2008, Rev. Econ.
Stat. 90:414, on inference with few clusters), and the text that shows it says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from magdash.errors import AnalysisError
from magdash.variability.fits import index_counts

FEW_UNITS = 20
"""Fewer units than this in a factor: the interval is said to be rough (Cameron, Gelbach & Miller 2008
find cluster-based inference unreliable with 5 to 30 clusters)."""

VECTOR_UNIT = "vector"
"""The unit of vectors that carry no unit: each is its own (the i-th vector of every layer the same one)."""

# Resample-by-cell weight matrices are built in blocks of at most this many cells.
_BLOCK_CELLS = 4_000_000

_PLURALS = {"magnitude": "magnitudes", "carrier": "carriers", "chunk": "chunks", "prompt": "prompts",
            VECTOR_UNIT: "vectors"}


@dataclass(frozen=True)
class ResampledUnits:
    """What a bootstrap resampled: each factor's name and how many units it has.

    Attributes:
        names: the factors, e.g. ("chunk",) or ("magnitude", "carrier").
        counts: the number of distinct units of each factor.
    """

    names: tuple[str, ...] = ()
    counts: tuple[int, ...] = ()

    @property
    def few(self) -> bool:
        """Whether a factor has fewer than :data:`FEW_UNITS` units (the interval is rough)."""
        return any(count < FEW_UNITS for count in self.counts)

    def caveat(self) -> str:
        """The sentence an interval over few units carries ("" with enough of them)."""
        if not self.few:
            return ""
        return (f"the intervals rest on {self.describe()}: with fewer than {FEW_UNITS} units a percentile "
                "interval is rough and tends to be too narrow")

    def describe(self) -> str:
        """"15 chunks", "26 magnitudes x 5 carriers"; "" when nothing was resampled."""
        return " x ".join(f"{count} {_PLURALS.get(name, name + 's') if count != 1 else name}"
                          for name, count in zip(self.names, self.counts, strict=True))


def default_units(count: int) -> np.ndarray:
    """Unit codes of ``count`` vectors that carry none: each vector its own unit, shape (count, 1)."""
    return np.arange(count, dtype=np.int64)[:, None]


def unit_bootstrap_means(
    values: Sequence[np.ndarray],
    units: Sequence[np.ndarray],
    n_boot: int,
    rng: np.random.Generator,
) -> tuple[np.ndarray, tuple[int, ...]]:
    """Means of each layer's ``values`` over ``n_boot`` resamples of the units, and each factor's unit count.

    Args:
        values: per layer, the values whose mean is resampled (NaN ignored), shape (n_l,).
        units: per layer, each value's unit codes, shape (n_l, k): k = 1 (a text) or 2 crossed
            factors (magnitude, carrier); a code names the same unit at every layer.
        n_boot: resamples.
        rng: the generator; the units are drawn once per resample for every layer.

    Returns:
        The (n_boot, n_layers) resampled means (NaN where a resample holds none of a layer's
        finite values) and the number of units of each factor.
    """
    if len(values) != len(units) or not values:
        raise AnalysisError(f"{len(values)} layers of values for {len(units)} layers of unit codes")
    codes = [np.asarray(u, dtype=np.int64).reshape(len(v), -1) for v, u in zip(values, units, strict=True)]
    factors = {c.shape[1] for c in codes}
    if len(factors) != 1:
        raise AnalysisError(f"every layer's vectors need the same unit factors, got {sorted(factors)} factors")
    stacked = np.concatenate(codes)
    # Each factor's units as 0..K-1, then the cells (distinct combinations) each vector falls in.
    labels = [np.unique(stacked[:, f]) for f in range(stacked.shape[1])]
    indexed = np.column_stack([np.searchsorted(labels[f], stacked[:, f]) for f in range(stacked.shape[1])])
    sizes = tuple(len(label) for label in labels)
    # One code per cell (row-major, so the cells come out in np.unique(axis=0)'s order): a 1-D unique
    # is several times faster than the row-wise one over every layer's vectors.
    flat_cells, cell_of = np.unique(np.ravel_multi_index(indexed.T, sizes), return_inverse=True)
    cells = np.column_stack(np.unravel_index(flat_cells, sizes))
    cell_of = cell_of.reshape(-1)
    sums = np.zeros((len(cells), len(values)))
    counts = np.zeros((len(cells), len(values)))
    start = 0
    for layer, layer_values in enumerate(values):
        layer_values = np.asarray(layer_values, dtype=np.float64)
        finite = np.isfinite(layer_values)
        where = cell_of[start:start + layer_values.size]
        start += layer_values.size
        sums[:, layer] = np.bincount(where[finite], weights=layer_values[finite], minlength=len(cells))
        counts[:, layer] = np.bincount(where[finite], minlength=len(cells))
    out = np.empty((n_boot, len(values)))
    block = max(1, min(n_boot, _BLOCK_CELLS // max(len(cells), max(sizes))))
    for first in range(0, n_boot, block):
        rows = min(block, n_boot - first)
        weights = np.ones((rows, len(cells)))
        for factor, size in enumerate(sizes):
            weights *= _draw_counts(size, rows, rng)[:, cells[:, factor]]
        with np.errstate(invalid="ignore", divide="ignore"):
            out[first:first + rows] = (weights @ sums) / (weights @ counts)
    return out, sizes


def _draw_counts(size: int, rows: int, rng: np.random.Generator) -> np.ndarray:
    """(rows, size) counts of how often each of ``size`` units is drawn in ``size`` draws with replacement."""
    return index_counts(rng.integers(0, size, size=(rows, size), dtype=np.int64), size).astype(np.float64)
