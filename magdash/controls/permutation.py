"""A permutation null for alpha: could shuffled magnitude labels give the same slope?

For one layer and measure, the fit uses m points (log n_i, log V_i) (the measure's point rules,
:func:`magdash.variability.fits.scaling_mask`). Under the null that V does not depend on n, any
assignment of the m magnitudes to the m values of V is as likely as the observed one. Each
permutation pi gives the slope

    alpha*_pi = sum_i (x_pi(i) - xbar)(y_i - ybar) / sxx,

where sxx is unchanged by permuting x, so all permutations are one product of a (P, m) matrix
of permuted centred log n with the centred log V: no loop. The two-sided p-value counts the
permutations at least as extreme, plus the observed assignment itself (Phipson & Smyth 2010):

    p = (1 + #{|alpha*_pi| >= |alpha|}) / (1 + P).

With P = 10,000 the smallest p is 1/10,001. The permutations are drawn once per point count m
from ``numpy.random.default_rng(seed)`` and shared by every layer with that m, so a result is
reproducible and layers are compared on the same draws. Unlike the parametric p of the OLS
slope, this one needs no normality of the residuals, but it still assumes exchangeable points.
"""

from __future__ import annotations

import math

import numpy as np

from magdash.controls.controls_params import DEFAULT_N_PERM
from magdash.errors import AnalysisError
from magdash.variability.analysis_params import FitRules
from magdash.variability.fits import MIN_POINTS, scaling_mask

# Permutation rows per chunk: bounds the (P, m) index matrix for long magnitude lists.
_CHUNK_ELEMENTS = 2_000_000


class PermutationNull:
    """Permutations of m points, drawn once per m from one seeded generator (``stream``, when given,
    salts the seed, so that another analysis's permutations under the same seed are its own)."""

    def __init__(self, n_perm: int = DEFAULT_N_PERM, seed: int = 0, *, stream: int | None = None):
        if n_perm < 1:
            raise AnalysisError(f"the permutation null needs at least 1 permutation, got {n_perm}")
        if seed < 0:
            raise AnalysisError(f"the seed must be 0 or more, got {seed}")
        self.n_perm = int(n_perm)
        self.seed = int(seed)
        self._entropy = [self.seed] if stream is None else [self.seed, int(stream)]
        self._orders: dict[int, np.ndarray] = {}

    def orders(self, m: int) -> np.ndarray:
        """(n_perm, m) permutations of range(m), the same for every call with this m."""
        if m not in self._orders:
            generator = np.random.default_rng([*self._entropy, m])
            self._orders[m] = generator.permuted(np.tile(np.arange(m, dtype=np.int32), (self.n_perm, 1)), axis=1)
        return self._orders[m]

    def slopes(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The n_perm slopes of y on permuted x (module docstring)."""
        x = np.asarray(x, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        xc = x - x.mean()
        yc = y - y.mean()
        sxx = float(xc @ xc)
        orders = self.orders(x.size)
        step = max(1, _CHUNK_ELEMENTS // max(1, x.size))
        return np.concatenate([xc[orders[start:start + step]] @ yc for start in range(0, self.n_perm, step)]) / sxx

    def p_value(
        self,
        magnitudes: np.ndarray,
        values: np.ndarray,
        *,
        rules: FitRules,
    ) -> float:
        """Two-sided permutation p of the OLS alpha of log V on log n; NaN when there is no fit.

        Args:
            magnitudes: n of each point (1-D).
            values: V(n), aligned with ``magnitudes``.
            rules: the fit's point rules (the bootstrap fields are not used).
        """
        magnitudes = np.asarray(magnitudes, dtype=np.float64)
        values = np.asarray(values, dtype=np.float64)
        keep, _ = scaling_mask(magnitudes, values, rules=rules)
        if np.count_nonzero(keep) < MIN_POINTS:
            return math.nan
        x = np.log(magnitudes[keep])
        y = np.log(values[keep])
        xc = x - x.mean()
        if float(xc @ xc) == 0:
            return math.nan
        observed = float(xc @ (y - y.mean())) / float(xc @ xc)
        null = self.slopes(x, y)
        # A relative tolerance keeps permutations that tie the observed slope (up to rounding) in.
        extreme = np.count_nonzero(np.abs(null) >= abs(observed) * (1 - 1e-12))
        return (1.0 + extreme) / (1.0 + self.n_perm)
