"""Any two models on the same stimuli: layerwise differences of the scaling exponent.

E6 of Cacioli (arXiv 2604.04469) compares Llama-3-8B Instruct with Base; the same test serves
every pairing (a trained model against its ``@random`` architecture-only copy, two model
families, two checkpoints).

Depth alignment. A layer l of a model with L blocks sits at depth fraction gamma = l / L
(0 = embeddings, 1 = output of the last block; the post-norm extra layer is not aligned).
Each layer l_a of model A is paired with the layer of model B nearest in depth,
``l_b = floor(gamma_a * L_b + 1/2)``; with equal depths this is l_b = l_a. The core band is
model A's (default floor(L_a/2) .. L_a - 1), so put the model whose band you mean first.

Per aligned pair: delta = alpha_A - alpha_B, each alpha fitted with its own point rules (the
outlier rule, V > 0, >= 5 points; :mod:`magdash.variability.fits`). Its bootstrap CI resamples the
magnitudes jointly: resample r draws one multiset of magnitudes, both models are refitted on
it (each keeping only its own usable points) and the percentile interval is taken over
alpha*_A - alpha*_B. Joint resampling keeps the pairing of the two models' V(n), so shared
stimulus effects cancel in the difference.

Over the core layers, what leads is the mean difference with the interval and p of the stimulus
bootstrap (:mod:`magdash.variability.stimulus_bootstrap`): each resample draws carriers and
magnitudes once, for every layer of both models, so the interval of the mean over layers carries
their correlation; layers are not replications, the stimuli are. Beside it, the paper's E6
statistic, a Wilcoxon signed-rank test of the paired alphas over the core layers, a nominal test
over layers that share the stimuli (and unable to reach 0.05 with fewer than 6 pairs:
``wilcoxon_reachable``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.formatting import layer_span
from magdash.params import DEFAULT_CI, ProgressCallback
from magdash.result_codec import PayloadCodec, stored_as
from magdash.significance import can_reach, unreachable_note
from magdash.variability.analysis import AnalysisResult, core_resamples, resamples_wanted, stimulus_resamples
from magdash.variability.analysis_params import (
    BOOTSTRAP_LAYER_CHOICES,
    AnalysisParams,
    FitRules,
    default_core_layers,
)
from magdash.variability.conventions import MAGDASH
from magdash.variability.fits import fit_scaling, percentile_interval, resample_counts, scaling_mask, weighted_slopes
from magdash.variability.html_summary import html_summary
from magdash.variability.hypotheses import NO_INTERVAL, NO_P, NO_RESAMPLES, paired_wilcoxon
from magdash.variability.measures import OUTLIER_RULE_MEASURES, measure_title
from magdash.variability.stimulus_bootstrap import mean_over_layers, summarise


def align_by_depth(n_blocks_a: int, n_blocks_b: int) -> pd.DataFrame:
    """Pair every layer 0..L_a of model A with the nearest-depth layer of model B.

    Columns: layer_a, layer_b, gamma_a, gamma_b (depth fractions l / L).
    """
    if n_blocks_a < 1 or n_blocks_b < 1:
        raise AnalysisError(f"models need at least one block, got {n_blocks_a} and {n_blocks_b}")
    layer_a = np.arange(n_blocks_a + 1)
    gamma_a = layer_a / n_blocks_a
    layer_b = np.floor(gamma_a * n_blocks_b + 0.5).astype(int)
    return pd.DataFrame(
        {
            "layer_a": layer_a,
            "layer_b": layer_b,
            "gamma_a": gamma_a,
            "gamma_b": layer_b / n_blocks_b,
        }
    )


def slope_difference(
    magnitudes: np.ndarray,
    values_a: np.ndarray,
    values_b: np.ndarray,
    *,
    rules: FitRules,
) -> tuple[float, float, float, float, float]:
    """(alpha_a, alpha_b, delta, ci_low, ci_high) for one pair of layers on the same magnitudes.

    The CI comes from jointly resampled magnitudes (module docstring), a percentile interval
    whatever ``rules.ci_method``; NaN when either model has no fit or ``rules.n_boot`` is 0.

    Args:
        magnitudes: n of each point (1-D).
        values_a: model A's V(n) at one layer.
        values_b: model B's V(n) at the paired layer.
        rules: the fits' points and the joint bootstrap (resamples, seed, level, stream).
    """
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    estimate = rules.without_interval()
    fit_a = fit_scaling(magnitudes, values_a, rules=estimate)
    fit_b = fit_scaling(magnitudes, values_b, rules=estimate)
    delta = fit_a.alpha - fit_b.alpha
    if not (fit_a.has_fit and fit_b.has_fit) or rules.n_boot == 0:
        return fit_a.alpha, fit_b.alpha, delta, math.nan, math.nan
    mask_a, _ = scaling_mask(magnitudes, values_a, rules=rules)
    mask_b, _ = scaling_mask(magnitudes, values_b, rules=rules)
    # Masked points get weight 0; fill them with finite numbers so 0 * value stays 0.
    log_n = _safe_log(magnitudes, mask_a | mask_b)
    log_a = _safe_log(values_a, mask_a)
    log_b = _safe_log(values_b, mask_b)
    differences = []
    for counts in resample_counts(magnitudes.size, rules.n_boot, rules.seed, stream=rules.stream):
        differences.append(
            weighted_slopes(log_n, log_a, counts * mask_a)
            - weighted_slopes(log_n, log_b, counts * mask_b)
        )
    low, high = percentile_interval(np.concatenate(differences), rules.ci)
    return fit_a.alpha, fit_b.alpha, delta, low, high


def _safe_log(values: np.ndarray, usable: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    out = np.zeros(values.shape)
    out[usable] = np.log(values[usable])
    return out


@dataclass(frozen=True)
class ModelComparison:
    """Layerwise alpha differences of model A minus model B for one measure.

    ``layers`` has one row per layer of A: layer_a, layer_b, gamma_a, gamma_b, core (in A's
    core band), alpha_a, alpha_b, delta, ci_low, ci_high. ``core_layers`` are A's indices; the
    means, the stimulus bootstrap and the Wilcoxon test run over them.

    Attributes:
        measure: the measure compared.
        layers: the layerwise table (above).
        core_layers: model A's core layers.
        mean_alpha_a: A's mean core alpha.
        mean_alpha_b: B's mean alpha at the paired layers.
        mean_delta: the mean of delta over the core layers where both have a fit.
        mean_delta_ci: its stimulus-bootstrap interval (low, high): the estimate that leads; NaN without one.
        mean_delta_p: the two-sided stimulus-bootstrap p of a mean delta of 0.
        n_resamples: the stimulus resamples the interval rests on.
        wilcoxon_statistic: the Wilcoxon signed-rank statistic of the paired core alphas (the paper's E6 test,
            over layers that share the stimuli).
        wilcoxon_p: its p.
        n_pairs: the layers paired.
        wilcoxon_reachable: whether that many pairs can give p below 0.05 at all.
        ci: the level of every interval (the layers' and the mean delta's).
    """

    measure: str
    layers: pd.DataFrame
    core_layers: list[int]
    mean_alpha_a: float
    mean_alpha_b: float
    mean_delta: float
    mean_delta_ci: tuple[float, float] = field(metadata=NO_INTERVAL)
    mean_delta_p: float = field(metadata=NO_P)
    n_resamples: int = field(metadata=NO_RESAMPLES)
    wilcoxon_statistic: float
    wilcoxon_p: float
    n_pairs: int
    wilcoxon_reachable: bool = field(metadata=stored_as(
        missing=lambda document: can_reach("wilcoxon", document["n_pairs"])))
    ci: float = DEFAULT_CI

    # The cache's order: the layers last.
    _payload_order = ("measure", "core_layers", "mean_alpha_a", "mean_alpha_b", "mean_delta", "mean_delta_ci",
                     "mean_delta_p", "n_resamples", "wilcoxon_statistic", "wilcoxon_p", "n_pairs",
                     "wilcoxon_reachable", "ci", "layers")

    def summary(self) -> dict[str, Any]:
        """The core-layer summary: mean alphas, the mean delta with its stimulus-bootstrap interval
        and p, and the Wilcoxon test."""
        low, high = self.mean_delta_ci
        return {
            "mean_alpha_a": self.mean_alpha_a,
            "mean_alpha_b": self.mean_alpha_b,
            "mean_delta": self.mean_delta,
            "mean_delta_ci_low": low,
            "mean_delta_ci_high": high,
            "mean_delta_p": self.mean_delta_p,
            "n_resamples": self.n_resamples,
            "wilcoxon_statistic": self.wilcoxon_statistic,
            "wilcoxon_p": self.wilcoxon_p,
            "n_pairs": self.n_pairs,
            "wilcoxon_reachable": self.wilcoxon_reachable,
        }


def compare_models(
    magnitudes: np.ndarray,
    values_a: np.ndarray,
    values_b: np.ndarray,
    *,
    n_blocks_a: int,
    n_blocks_b: int,
    measure: str,
    rules: FitRules,
    core_layers: Sequence[int] | None = None,
    bootstrap_layers: str = "core",
    resampled_a: np.ndarray | None = None,
    resampled_b: np.ndarray | None = None,
) -> ModelComparison:
    """Compare two models' per-layer V arrays (shape (n_layers, n_magnitudes)) for one measure.

    ``rules`` are the fits' points and the joint bootstrap (:func:`slope_difference`).
    ``core_layers`` are model A's indices (default its core band). ``bootstrap_layers``
    chooses where the joint-resampling CI is computed: "core" (default), "all" or "none".
    ``resampled_a`` and ``resampled_b`` (B, K) hold, for each of A's K core layers in order, A's alpha
    and B's alpha at the paired layer in each stimulus resample, the same draws for both
    (:mod:`magdash.variability.stimulus_bootstrap`): the mean delta's interval at level ``rules.ci`` and
    its p. None: no interval (NaN).
    """
    values_a = np.asarray(values_a, dtype=np.float64)
    values_b = np.asarray(values_b, dtype=np.float64)
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    if values_a.shape[1] != magnitudes.size or values_b.shape[1] != magnitudes.size:
        raise AnalysisError(
            "both models must be measured on the same magnitudes; analyse them on the same "
            "stimulus set"
        )
    if bootstrap_layers not in BOOTSTRAP_LAYER_CHOICES:
        raise AnalysisError(
            f"bootstrap_layers must be one of {', '.join(BOOTSTRAP_LAYER_CHOICES)}, "
            f"got {bootstrap_layers!r}"
        )
    if values_a.shape[0] < n_blocks_a + 1 or values_b.shape[0] < n_blocks_b + 1:
        raise AnalysisError("each model needs V for layers 0..L (embeddings and every block)")
    core = list(default_core_layers(n_blocks_a) if core_layers is None else core_layers)
    outside = [layer for layer in core if not 0 <= layer <= n_blocks_a]
    if outside:
        raise AnalysisError(f"core layers {outside} lie outside model A's layers 0..{n_blocks_a}")
    table = align_by_depth(n_blocks_a, n_blocks_b)
    table["core"] = table["layer_a"].isin(core)
    results = []
    for row in table.itertuples(index=False):
        with_ci = bootstrap_layers == "all" or (bootstrap_layers == "core" and row.core)
        results.append(
            slope_difference(
                magnitudes,
                values_a[row.layer_a],
                values_b[row.layer_b],
                rules=rules if with_ci else rules.without_interval(),
            )
        )
    columns = ["alpha_a", "alpha_b", "delta", "ci_low", "ci_high"]
    table[columns] = pd.DataFrame(results, columns=columns, index=table.index)
    core_rows = table.set_index("layer_a").loc[core]
    statistic, p_value, n_pairs = paired_wilcoxon(core_rows["alpha_a"], core_rows["alpha_b"])
    mean_delta = _nanmean(core_rows["delta"])
    differences = None
    if resampled_a is not None and resampled_b is not None:
        if np.shape(resampled_a) != np.shape(resampled_b) or np.shape(resampled_a)[1] != len(core):
            raise AnalysisError(
                f"resampled alphas of shapes {np.shape(resampled_a)} and {np.shape(resampled_b)} for {len(core)} core layers")
        paired = np.isfinite(core_rows["delta"].to_numpy(dtype=np.float64))
        differences = mean_over_layers(np.asarray(resampled_a) - np.asarray(resampled_b), paired)
    lead = summarise(differences, mean_delta, rules.ci)
    return ModelComparison(
        measure=measure,
        layers=table,
        core_layers=core,
        mean_alpha_a=_nanmean(core_rows["alpha_a"]),
        mean_alpha_b=_nanmean(core_rows["alpha_b"]),
        mean_delta=mean_delta,
        mean_delta_ci=lead.ci,
        mean_delta_p=lead.p,
        n_resamples=lead.n_resamples,
        wilcoxon_statistic=statistic,
        wilcoxon_p=p_value,
        n_pairs=n_pairs,
        wilcoxon_reachable=can_reach("wilcoxon", n_pairs),
        ci=rules.ci,
    )


def _nanmean(values: pd.Series) -> float:
    array = values.to_numpy(dtype=np.float64)
    finite = array[np.isfinite(array)]
    return float(finite.mean()) if finite.size else math.nan


@dataclass
class ComparisonResult(PayloadCodec):
    """Model A minus model B on the same stimuli, one :class:`ModelComparison` per measure.

    Attributes:
        model_a: the model the differences start from (its core band is used).
        model_b: the model subtracted.
        stimuli: the stimulus set model A was measured on (model B too, unless ``stimuli_b``).
        core_layers: model A's core layers.
        measures: measure -> the layerwise comparison (deltas, joint-bootstrap CIs, Wilcoxon test).
        conventions: the conventions of the analyses compared.
        stimuli_b: model B's stimulus set when it is not ``stimuli``: the same carriers and magnitudes in
            another number format (a format variant, where model B is model A itself); None otherwise.
    """

    model_a: str
    model_b: str
    stimuli: str
    core_layers: list[int]
    measures: dict[str, ModelComparison]
    conventions: str = MAGDASH
    stimuli_b: str | None = None

    _payload_order = ("model_a", "model_b", "stimuli", "stimuli_b", "core_layers", "conventions", "measures")

    @property
    def label_b(self) -> str:
        """Model B as the results name it: its name, with its stimulus set when that differs."""
        return f"{self.model_b} on {self.stimuli_b}" if self.stimuli_b else self.model_b

    @property
    def table(self) -> pd.DataFrame:
        """Every measure's layers in one tidy table: measure, then :class:`ModelComparison`'s ``layers`` columns."""
        frames = [item.layers.assign(measure=name)[["measure", *item.layers.columns]]
                  for name, item in self.measures.items()]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["measure"])

    def summary_table(self) -> pd.DataFrame:
        """One row per measure: the core-layer means of both alphas, of delta with its stimulus-bootstrap
        interval and p, and the Wilcoxon test over the layers."""
        return pd.DataFrame([{"measure": measure_title(name), **item.summary()} for name, item in self.measures.items()])

    def _repr_html_(self) -> str:
        """The notebook's view: the two models, the core band, each measure's core summary."""
        facts = [("stimuli", self.stimuli or "arrays"), ("core band (model A's)", layer_span(self.core_layers)),
                 ("conventions", self.conventions)]
        notes = ["every layer: .table; per measure: .measures[name].layers; charts: magdash.charts.comparison"]
        summary = self.summary_table().rename(columns={
            "mean_alpha_a": f"mean alpha {self.model_a}", "mean_alpha_b": f"mean alpha {self.model_b}",
            "mean_delta": "mean delta alpha (A − B)", "mean_delta_ci_low": "stimulus CI low",
            "mean_delta_ci_high": "stimulus CI high", "mean_delta_p": "stimulus bootstrap p",
            "n_resamples": "resamples", "wilcoxon_statistic": "Wilcoxon W (layers)", "wilcoxon_p": "Wilcoxon p (layers)",
            "n_pairs": "layer pairs", "wilcoxon_reachable": "Wilcoxon can reach .05"})
        return html_summary(f"{self.model_a} minus {self.model_b}", facts, [("Over the core layers", summary)], notes)

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``compare --json`` shape: per measure, its summary (the mean delta's stimulus-bootstrap
        interval as ``mean_delta_ci_low`` and ``mean_delta_ci_high``, and ``wilcoxon_note``: why the Wilcoxon
        test cannot reach .05 with its pairs, "" when it can) and its layers as records."""
        return {
            "model_a": self.model_a,
            "model_b": self.model_b,
            "stimuli": self.stimuli,
            "stimuli_b": self.stimuli_b or self.stimuli,
            "conventions": self.conventions,
            "core_layers": list(self.core_layers),
            "measures": {
                name: {**item.summary(), "wilcoxon_note": unreachable_note("wilcoxon", item.n_pairs, unit="layer pairs"),
                       "layers": item.layers.to_dict(orient="records")}
                for name, item in self.measures.items()
            },
        }


def comparison_params(params: AnalysisParams, n_blocks_a: int, n_blocks_b: int) -> AnalysisParams:
    """The parameters model B is analysed with: ``params``, but a chosen core band is model A's,
    so a model of another depth keeps its own default band.

    Args:
        params: the comparison's analysis parameters (model A's).
        n_blocks_a: model A's transformer blocks.
        n_blocks_b: model B's transformer blocks.
    """
    return params if n_blocks_b == n_blocks_a else dataclasses.replace(params, core_layers=None)


LayerReader = Callable[[int], np.ndarray]
"""A model's vectors of one layer, (n_magnitudes, n_carriers, d) as stored, by layer index."""


def paired_layers(result_a: AnalysisResult, result_b: AnalysisResult) -> tuple[list[int], list[int]]:
    """(model A's core layers, model B's layer paired with each by depth): the layers a
    comparison's stimulus bootstrap reads.

    Args:
        result_a: model A's analysis.
        result_b: model B's analysis.
    """
    table = align_by_depth(result_a.n_blocks, result_b.n_blocks).set_index("layer_a")
    core = list(result_a.core_layers)
    return core, [int(table.loc[layer, "layer_b"]) for layer in core]


def compare_analyses(
    result_a: AnalysisResult,
    result_b: AnalysisResult,
    params: AnalysisParams,
    *,
    read_a: LayerReader | None = None,
    read_b: LayerReader | None = None,
    progress: ProgressCallback | None = None,
    stimuli_b: str | None = None,
) -> ComparisonResult:
    """Model A minus model B for each measure of ``params``, from their two analyses
    (:func:`compare_models` on each measure's V, over model A's core band).

    Args:
        result_a: model A's analysis with ``params``.
        result_b: model B's analysis, on the same magnitudes, with
            :func:`comparison_params`.
        params: the analysis parameters (measures, bootstrap, outlier rule, conventions).
        read_a: model A's vectors by layer: with ``read_b``, the stimulus bootstrap of the mean difference
            over the core layers (each of A's core layers and B's paired layers read once, one at a time;
            :mod:`magdash.variability.stimulus_bootstrap`). None: no interval (NaN).
        read_b: model B's vectors by layer.
        progress: called as ``progress(done, total)`` after each measure (its joint bootstrap
            takes seconds).
        stimuli_b: model B's stimulus set when it is not model A's (a number-format variant); None: the same.
    """
    if not np.array_equal(result_a.magnitudes, result_b.magnitudes):
        raise AnalysisError(
            f"{result_a.stimuli!r} and {stimuli_b!r} hold different magnitudes: a comparison pairs the same magnitudes"
            if stimuli_b else "the two models were measured on different magnitudes"
        )
    resampled_a: dict[str, dict[int, np.ndarray]] = {}
    resampled_b: dict[str, dict[int, np.ndarray]] = {}
    layers_a, layers_b = paired_layers(result_a, result_b)
    if read_a is not None and read_b is not None and resamples_wanted(params):
        # The comparison's own point rules: the paper's conventions fit E6 without the outlier rule.
        rule = OUTLIER_RULE_MEASURES if params.rules.e6_outlier_rule else frozenset()
        resampled_a = stimulus_resamples(((layer, read_a(layer)) for layer in layers_a), result_a.magnitudes,
                                         params, outlier_rule=rule)
        resampled_b = stimulus_resamples(((layer, read_b(layer)) for layer in dict.fromkeys(layers_b)),
                                         result_b.magnitudes, params, outlier_rule=rule)
    measures = {}
    for measure in params.measures:
        measures[measure] = compare_models(
            result_a.magnitudes,
            result_a.values[measure],
            result_b.values[measure],
            n_blocks_a=result_a.n_blocks,
            n_blocks_b=result_b.n_blocks,
            measure=measure,
            rules=params.fit_rules(drop_outliers=measure in OUTLIER_RULE_MEASURES and params.rules.e6_outlier_rule),
            core_layers=result_a.core_layers,
            bootstrap_layers=params.bootstrap_layers,
            resampled_a=core_resamples(resampled_a.get(measure, {}), layers_a, params.n_boot),
            resampled_b=core_resamples(resampled_b.get(measure, {}), layers_b, params.n_boot),
        )
        if progress is not None:
            progress(len(measures), len(params.measures))
    return ComparisonResult(result_a.model, result_b.model, result_a.stimuli, result_a.core_layers, measures,
                            params.conventions, stimuli_b)
