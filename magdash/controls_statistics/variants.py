"""Variants of one model: another dtype, another weights file (a GGUF quantization), another
token position, another number format, and the ``@random`` architecture-only control.

A variant is a second stored extraction of the same architecture on the same stimuli
(:func:`magdash.runs.controls_runs.is_variant`), or the model itself on the same carriers and
magnitudes written in another number format (:func:`magdash.runs.controls_runs.format_variant_set`). Its alphas are compared with the model's layer by
layer by :func:`magdash.runs.analysis_runs.compare`
(delta = alpha_model - alpha_variant with a joint bootstrap CI that resamples the magnitudes of
both at once; Wilcoxon over the core layers, E6 of Cacioli 2026), and summarised over the core
band by the largest |delta alpha| and the layer where it occurs (:func:`variant_summary`).

What counts as a problem (:func:`variant_problem`): the variant's mean core alpha has the other
sign, or its largest |delta| over the core band is at least |mean core alpha| of the model
(the precision or position changes alpha by as much as the effect itself).

The ``@random`` control (:func:`random_problem`) is a problem when the trained model cannot be
told from its architecture: the stimulus-bootstrap interval of the mean core delta (carriers and
magnitudes resampled once for every core layer of both models, :mod:`magdash.variability.stimulus_bootstrap`)
covers 0. Counting the core layers whose own CI excludes 0 (as before 2026-12) counted one
observation as many times as the layers that share it; the count is still reported. No verdict
without the interval (e.g. with the bootstrap off).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class VariantSummary:
    """One variant against the model for one measure, over the model's core band.

    Attributes:
        variant: the variant's name.
        kind: what differs from the model.
        measure: the measure compared.
        mean_alpha_model: the model's mean core alpha.
        mean_alpha_variant: the variant's mean alpha over the same layers.
        max_abs_delta: the largest |delta alpha| over the core band.
        layer_of_max: the layer where it is.
        ci_low_at_max: the joint-bootstrap CI of delta there, lower end.
        ci_high_at_max: its upper end.
        layers_ci_excludes_zero: core layers whose delta CI excludes 0.
        layers_with_ci: core layers with a CI.
        n_core: the number of core layers.
        mean_delta: the mean delta over the core layers.
        mean_delta_ci_low: its stimulus-bootstrap interval, lower end (the estimate that leads).
        mean_delta_ci_high: upper end.
        mean_delta_p: the two-sided stimulus-bootstrap p of a mean delta of 0.
        wilcoxon_p: the Wilcoxon signed-rank p over the core layers (a nominal test: they share the stimuli).
        wilcoxon_reachable: whether that many pairs can give p below .05 at all.
    """

    variant: str
    kind: str
    measure: str
    mean_alpha_model: float
    mean_alpha_variant: float
    max_abs_delta: float
    layer_of_max: int
    ci_low_at_max: float
    ci_high_at_max: float
    layers_ci_excludes_zero: int
    layers_with_ci: int
    n_core: int
    mean_delta: float
    mean_delta_ci_low: float
    mean_delta_ci_high: float
    mean_delta_p: float
    wilcoxon_p: float
    wilcoxon_reachable: bool


def variant_summary(comparison, measure: str, kind: str) -> VariantSummary:
    """Summarise a :class:`~magdash.variability.compare.ComparisonResult` (model A = the model)."""
    item = comparison.measures[measure]
    core = item.layers[item.layers["core"]]
    deltas = np.abs(core["delta"].to_numpy(dtype=np.float64))
    layer_of_max, max_delta, low, high = -1, math.nan, math.nan, math.nan
    if np.isfinite(deltas).any():
        position = int(np.nanargmax(deltas))
        row = core.iloc[position]
        layer_of_max, max_delta = int(row["layer_a"]), float(deltas[position])
        low, high = float(row["ci_low"]), float(row["ci_high"])
    excludes = int(((core["ci_low"] > 0) | (core["ci_high"] < 0)).sum())
    with_ci = int((np.isfinite(core["ci_low"].to_numpy(dtype=np.float64))).sum())
    return VariantSummary(
        variant=comparison.label_b,
        kind=kind,
        measure=measure,
        mean_alpha_model=item.mean_alpha_a,
        mean_alpha_variant=item.mean_alpha_b,
        max_abs_delta=max_delta,
        layer_of_max=layer_of_max,
        ci_low_at_max=low,
        ci_high_at_max=high,
        layers_ci_excludes_zero=excludes,
        layers_with_ci=with_ci,
        n_core=len(core),
        mean_delta=item.mean_delta,
        mean_delta_ci_low=item.mean_delta_ci[0],
        mean_delta_ci_high=item.mean_delta_ci[1],
        mean_delta_p=item.mean_delta_p,
        wilcoxon_p=item.wilcoxon_p,
        wilcoxon_reachable=item.wilcoxon_reachable,
    )


def variant_problem(summary: VariantSummary) -> bool | None:
    """True when the variant changes the result (module docstring); None without fits."""
    model, variant = summary.mean_alpha_model, summary.mean_alpha_variant
    if not (math.isfinite(model) and math.isfinite(variant) and math.isfinite(summary.max_abs_delta)):
        return None
    return bool(np.sign(model) != np.sign(variant) or summary.max_abs_delta >= abs(model))


def random_problem(summary: VariantSummary) -> bool | None:
    """True when the stimulus-bootstrap interval of the mean core delta covers 0: the model's mean core
    alpha cannot be told from its @random control's; None without the interval."""
    low, high = summary.mean_delta_ci_low, summary.mean_delta_ci_high
    if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(summary.mean_alpha_model)):
        return None
    return bool(low <= 0 <= high)
