"""What a test can conclude with the points it has.

Some tests cannot reach a chosen level however strong the effect, because the number of points
bounds the smallest p they can give:

- the exact two-sided Wilcoxon signed-rank test over n pairs: p >= 2 / 2^n (every difference of
  one sign, the only arrangement as extreme in each direction), so 3 pairs give 0.25 at best and
  it takes 6 pairs to reach 0.05;
- the exact two-sided Spearman test over n points: p >= 2 / n! (the two perfect orderings),
  so 3 layers give 0.33 and 4 give 0.083;
- a permutation (or Monte Carlo) test of k resamples: p >= 1 / (k + 1);
- a two-sided bootstrap test of k resamples, p = 2 (1 + #resamples on the other side of 0) / (k + 1)
  (:func:`magdash.variability.stimulus_bootstrap.bootstrap_p`): p >= 2 / (k + 1);

Wherever magdash prints a p-value it prints :func:`unreachable_note` beside it when the test
cannot reach the level, so that "not significant" is read as "could not have been" (docs/science.md,
"The unit of replication").
"""

from __future__ import annotations

import math

from magdash.formatting import fixed, format_p
from magdash.params import DEFAULT_CI

SIGNIFICANCE_LEVEL = 0.05
"""The two-sided level a p-value is read against unless a parameter says otherwise."""

_SMALLEST_P = {
    "wilcoxon": lambda n: 2.0 / 2.0**n if n >= 1 else math.nan,
    "spearman": lambda n: min(1.0, 2.0 / math.factorial(n)) if n >= 2 else math.nan,
    "permutation": lambda k: 1.0 / (k + 1) if k >= 1 else math.nan,
    "bootstrap": lambda k: min(1.0, 2.0 / (k + 1)) if k >= 1 else math.nan,
}
"""Each test's smallest attainable two-sided p with n points (permutation, bootstrap: n resamples)."""

_UNITS = {"wilcoxon": "pairs", "spearman": "points", "permutation": "resamples",
          "bootstrap": "resamples"}

TESTS = tuple(_SMALLEST_P)


def smallest_p(test: str, n: int) -> float:
    """The smallest two-sided p ``test`` can give with ``n`` points (NaN when it is undefined).

    Args:
        test: one of :data:`TESTS`.
        n: pairs (Wilcoxon), points (Spearman) or resamples (permutation, bootstrap).
    """
    if test not in _SMALLEST_P:
        raise ValueError(f"unknown test {test!r}; choose one of {', '.join(TESTS)}")
    return float(_SMALLEST_P[test](int(n)))


def can_reach(test: str, n: int, level: float = SIGNIFICANCE_LEVEL) -> bool:
    """Whether ``test`` with ``n`` points can give a p below ``level`` at all.

    Args:
        test: one of :data:`TESTS`.
        n: pairs, points or resamples, as :func:`smallest_p`.
        level: the two-sided level.
    """
    smallest = smallest_p(test, n)
    return math.isfinite(smallest) and smallest < level


def unreachable_note(test: str, n: int, level: float = SIGNIFICANCE_LEVEL, unit: str | None = None) -> str:
    """A sentence saying that ``test`` cannot reach ``level`` with ``n`` points, or "" when it can.

    Args:
        test: one of :data:`TESTS`.
        n: pairs, points or resamples, as :func:`smallest_p`.
        level: the two-sided level.
        unit: what the points are called ("layers"); the test's own word by default.
    """
    if can_reach(test, n, level):
        return ""
    unit = unit or _UNITS[test]
    smallest = smallest_p(test, n)
    if not math.isfinite(smallest):
        return f"with {n} {unit} this test is undefined"
    return (f"with {n} {unit} the smallest p this test can give is {smallest:.2g}, "
            f"so it cannot reach {level:g} however large the effect")


def layer_test_note(n_layers: int) -> str:
    """The sentence that goes with a test over core layers (the paper's t-tests, Spearman and Wilcoxon).

    Args:
        n_layers: the layers (or layer pairs) the test ran over.
    """
    return (f"a test over {n_layers} core layers, which share their stimuli and are not independent replications: "
            "its real size exceeds its nominal level (the design simulator measures it for a model)")


def stimulus_estimate(estimate: float, interval: tuple[float, float], p: float, n_resamples: int, *,
                      level: float = DEFAULT_CI, digits: int = 4) -> str:
    """An estimate with its stimulus-bootstrap interval and p, in words:
    ``-0.0400, 95% CI [-0.0450, -0.0350] (stimulus bootstrap, 9,981 resamples), p = 2.0e-04``; with
    too few resamples to reach :data:`SIGNIFICANCE_LEVEL`, that too; without resamples, says so.

    Args:
        estimate: the statistic on the data.
        interval: its stimulus-bootstrap interval (low, high).
        p: the two-sided bootstrap p of 0.
        n_resamples: the resamples behind them.
        level: the interval's level.
        digits: decimals of the estimate and the interval.
    """
    value = fixed(estimate, digits)
    low, high = interval
    if not (n_resamples and math.isfinite(low) and math.isfinite(high)):
        return f"{value} (no stimulus-bootstrap interval: the bootstrap was off)"
    text = (f"{value}, {level:.0%} CI [{fixed(low, digits)}, {fixed(high, digits)}] (stimulus bootstrap, "
            f"{n_resamples:,} resamples), p = {format_p(p)}")
    note = unreachable_note("bootstrap", n_resamples)
    return f"{text}; {note}" if note else text
