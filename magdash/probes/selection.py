"""Which layers decode unseen magnitudes best, with the choice of the best accounted for.

The layer with the largest held-out-magnitude R² is the maximum of as many noisy scores as there
are layers: on SmolLM2 most of its 32 layers lie within a few hundredths of one another, and
naming one of them "the best", with an interval that ignores the choice, reads noise as a
finding. So the runs report the *band* of layers that cannot be told from the best.

With R_l the held-out R² of layer l among the L layers that have one, b = argmax_l R_l, the gaps
g_l = R_b - R_l, and the bootstrap replicates R*_l of every layer from the same draws of
magnitudes (:class:`~magdash.probes.scores.BootstrapDraws`), each gap has the paired replicates
g*_l = R*_b - R*_l and the lower bound

    gap_low_l = the a-quantile of g*_l,   a = (1 - ci) / (L - 1),

the one-sided percentile bound of the gap at a Bonferroni-adjusted level. The band is
{l : gap_low_l <= 0}: the layers whose R² the draws cannot put below the best's (the best itself,
gap 0, always). Why the level holds the choice: the truly best layer l0 falls out only if its
test against the chosen b rejects "R_l0 >= R_b"; b can be any of the other L - 1 layers, each
such test rejects a true hypothesis with probability at most a, so l0 falls out with probability
at most (L - 1) a = 1 - ci. The percentile bound needs no normal approximation, so a layer
whose R² swings widely across draws (one magnitude's prediction far off) widens only its own
bound. Draws in which a score is undefined (one magnitude drawn every time) are left out.
Without replicates the bounds are NaN and the band is the best layer alone, which the runs must
then not present as a winner.
"""

from __future__ import annotations

import math

import numpy as np


def best_band(r2: np.ndarray, replicates: np.ndarray, ci: float) -> tuple[int, np.ndarray, np.ndarray]:
    """The best layer's index, each layer's adjusted lower bound of its gap to it, and the band.

    Args:
        r2: each layer's held-out R², (n_layers,) (NaN where a layer has none).
        replicates: their bootstrap replicates from the same draws, (n_boot, n_layers).
        ci: the confidence level of the band.

    Returns:
        (index of the largest R², (n_layers,) gap lower bounds, (n_layers,) boolean band); the index
        is -1, the bounds NaN and the band empty when no R² is finite.
    """
    r2 = np.asarray(r2, dtype=np.float64)
    finite = np.isfinite(r2)
    bounds = np.full(r2.size, math.nan)
    if not finite.any():
        return -1, bounds, np.zeros(r2.size, dtype=bool)
    best = int(np.nanargmax(r2))
    draws = np.asarray(replicates, dtype=np.float64)
    if draws.size:
        draws = draws[np.isfinite(draws[:, finite]).all(axis=1)]
    if draws.shape[0] == 0:
        return best, bounds, np.arange(r2.size) == best
    level = (1.0 - ci) / max(int(finite.sum()) - 1, 1)
    gap_draws = draws[:, [best]] - draws[:, finite]
    bounds[finite] = np.quantile(gap_draws, level, axis=0)
    bounds[best] = 0.0
    return best, bounds, finite & (bounds <= 0)
