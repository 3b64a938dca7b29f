"""Inf/NaN activations: finding them and saying what they mean.

A model run in float16 can overflow: float16 tops out at 65,504, and the residual stream of
large models grows past that in late layers (the massive activations of Sun et al. 2024,
arXiv 2402.17762), giving Inf, and NaN after the next norm. Such vectors carry no magnitude
information, and one of them turns every variability measure of its layer into NaN or Inf.
magdash therefore flags, per layer, how many stored vectors are not finite, and leaves any
layer that has one out of every fit and diagnostic — the whole layer, because dropping some
items would unbalance the magnitudes and carriers the measures compare.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

_ROWS_PER_CHECK = 4096


def nonfinite_rows(vectors: np.ndarray) -> np.ndarray:
    """Boolean mask over every axis but the last: True where a vector holds Inf or NaN.

    Checked in slices of rows, so the temporary mask never costs more than a few MB even for a
    layer of 20,000 x 4,096 floats.
    """
    rows = vectors.reshape(-1, vectors.shape[-1])
    mask = np.empty(rows.shape[0], dtype=bool)
    for start in range(0, rows.shape[0], _ROWS_PER_CHECK):
        mask[start:start + _ROWS_PER_CHECK] = ~np.isfinite(rows[start:start + _ROWS_PER_CHECK]).all(axis=1)
    return mask.reshape(vectors.shape[:-1])


def count_nonfinite(vectors: np.ndarray) -> int:
    """How many vectors (rows along the last axis) hold Inf or NaN."""
    return int(nonfinite_rows(vectors).sum())


def _layer_list(layers: Sequence[int]) -> str:
    return ("layer " if len(layers) == 1 else "layers ") + ", ".join(str(layer) for layer in layers)


def nonfinite_warning(model: str, counts: Mapping[int, int], total: int | None = None) -> str | None:
    """One sentence naming the flagged layers of ``model`` and what to do; None when none is.

    ``counts`` maps a layer to its number of non-finite vectors; ``total`` is the number of
    vectors per layer, when known.
    """
    flagged = {layer: count for layer, count in sorted(counts.items()) if count}
    if not flagged:
        return None
    worst = max(flagged.values())
    share = f" (up to {worst} of {total} vectors per layer)" if total else f" (up to {worst} vectors per layer)"
    return (
        f"{model}: {_layer_list(list(flagged))} {'holds' if len(flagged) == 1 else 'hold'} Inf/NaN activations{share}, "
        "as float16 overflow gives; they are left out of every fit and diagnostic. "
        "Extract again with dtype='bfloat16' (or 'float32') under another name= to analyse them."
    )
