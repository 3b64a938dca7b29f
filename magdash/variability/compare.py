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
stimulus effects cancel in the difference. Over the core layers, a Wilcoxon signed-rank test
of the paired alphas (the paper's E6 statistic).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.formatting import layer_span
from magdash.jsonio import frame_from_plain, frame_to_plain, pack, unpack
from magdash.params import DEFAULT_N_BOOT, ProgressCallback
from magdash.variability.analysis_params import (
    BOOTSTRAP_LAYER_CHOICES,
    OUTLIER_FACTOR,
    AnalysisParams,
    default_core_layers,
)
from magdash.variability.conventions import MAGDASH
from magdash.variability.fits import fit_scaling, percentile_interval, resample_counts, scaling_mask, weighted_slopes
from magdash.variability.html_summary import html_summary
from magdash.variability.hypotheses import paired_wilcoxon
from magdash.variability.measures import OUTLIER_RULE_MEASURES, measure_title

if TYPE_CHECKING:
    from magdash.variability.analysis import AnalysisResult


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
    drop_outliers: bool,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    ci: float = 0.95,
    outlier_factor: float = OUTLIER_FACTOR,
    stream: str = "generator",
) -> tuple[float, float, float, float, float]:
    """(alpha_a, alpha_b, delta, ci_low, ci_high) for one pair of layers on the same magnitudes.

    The CI comes from jointly resampled magnitudes (module docstring); NaN when either model
    has no fit or ``n_boot`` is 0.
    """
    magnitudes = np.asarray(magnitudes, dtype=np.float64)
    rules = {"drop_outliers": drop_outliers, "outlier_factor": outlier_factor}
    fit_a = fit_scaling(magnitudes, values_a, n_boot=0, **rules)
    fit_b = fit_scaling(magnitudes, values_b, n_boot=0, **rules)
    delta = fit_a.alpha - fit_b.alpha
    if not (fit_a.has_fit and fit_b.has_fit) or n_boot == 0:
        return fit_a.alpha, fit_b.alpha, delta, math.nan, math.nan
    mask_a, _ = scaling_mask(magnitudes, values_a, **rules)
    mask_b, _ = scaling_mask(magnitudes, values_b, **rules)
    # Masked points get weight 0; fill them with finite numbers so 0 * value stays 0.
    log_n = _safe_log(magnitudes, mask_a | mask_b)
    log_a = _safe_log(values_a, mask_a)
    log_b = _safe_log(values_b, mask_b)
    differences = []
    for counts in resample_counts(magnitudes.size, n_boot, seed, stream=stream):
        differences.append(
            weighted_slopes(log_n, log_a, counts * mask_a)
            - weighted_slopes(log_n, log_b, counts * mask_b)
        )
    low, high = percentile_interval(np.concatenate(differences), ci)
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
    means and the Wilcoxon test run over them.
    """

    measure: str
    layers: pd.DataFrame
    core_layers: list[int]
    mean_alpha_a: float
    mean_alpha_b: float
    mean_delta: float
    wilcoxon_statistic: float
    wilcoxon_p: float
    n_pairs: int

    def summary(self) -> dict[str, float | int]:
        """The core-layer summary: mean alphas, mean delta and the Wilcoxon test."""
        return {
            "mean_alpha_a": self.mean_alpha_a,
            "mean_alpha_b": self.mean_alpha_b,
            "mean_delta": self.mean_delta,
            "wilcoxon_statistic": self.wilcoxon_statistic,
            "wilcoxon_p": self.wilcoxon_p,
            "n_pairs": self.n_pairs,
        }


def compare_models(
    magnitudes: np.ndarray,
    values_a: np.ndarray,
    values_b: np.ndarray,
    *,
    n_blocks_a: int,
    n_blocks_b: int,
    measure: str,
    drop_outliers: bool,
    core_layers: Sequence[int] | None = None,
    n_boot: int = DEFAULT_N_BOOT,
    seed: int = 0,
    ci: float = 0.95,
    bootstrap_layers: str = "core",
    outlier_factor: float = OUTLIER_FACTOR,
    stream: str = "generator",
) -> ModelComparison:
    """Compare two models' per-layer V arrays (shape (n_layers, n_magnitudes)) for one measure.

    ``core_layers`` are model A's indices (default its core band). ``bootstrap_layers``
    chooses where the joint-resampling CI is computed: "core" (default), "all" or "none";
    ``stream`` which random indices it draws (:mod:`magdash.variability.fits`).
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
                drop_outliers=drop_outliers,
                n_boot=n_boot if with_ci else 0,
                seed=seed,
                ci=ci,
                outlier_factor=outlier_factor,
                stream=stream,
            )
        )
    columns = ["alpha_a", "alpha_b", "delta", "ci_low", "ci_high"]
    table[columns] = pd.DataFrame(results, columns=columns, index=table.index)
    core_rows = table.set_index("layer_a").loc[core]
    statistic, p_value, n_pairs = paired_wilcoxon(core_rows["alpha_a"], core_rows["alpha_b"])
    return ModelComparison(
        measure=measure,
        layers=table,
        core_layers=core,
        mean_alpha_a=_nanmean(core_rows["alpha_a"]),
        mean_alpha_b=_nanmean(core_rows["alpha_b"]),
        mean_delta=_nanmean(core_rows["delta"]),
        wilcoxon_statistic=statistic,
        wilcoxon_p=p_value,
        n_pairs=n_pairs,
    )


def _nanmean(values: pd.Series) -> float:
    array = values.to_numpy(dtype=np.float64)
    finite = array[np.isfinite(array)]
    return float(finite.mean()) if finite.size else math.nan


@dataclass
class ComparisonResult:
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
        """One row per measure: the core-layer means of both alphas, of delta, and the Wilcoxon test."""
        return pd.DataFrame([{"measure": measure_title(name), **item.summary()} for name, item in self.measures.items()])

    def _repr_html_(self) -> str:
        """The notebook's view: the two models, the core band, each measure's core summary."""
        facts = [("stimuli", self.stimuli or "arrays"), ("core band (model A's)", layer_span(self.core_layers)),
                 ("conventions", self.conventions)]
        notes = ["every layer: .table; per measure: .measures[name].layers; charts: magdash.charts.comparison"]
        summary = self.summary_table().rename(columns={
            "mean_alpha_a": f"mean alpha {self.model_a}", "mean_alpha_b": f"mean alpha {self.model_b}",
            "mean_delta": "mean delta alpha (A − B)", "wilcoxon_statistic": "Wilcoxon W", "wilcoxon_p": "Wilcoxon p",
            "n_pairs": "layer pairs"})
        return html_summary(f"{self.model_a} minus {self.model_b}", facts, [("Over the core layers", summary)], notes)

    def to_json(self) -> dict[str, Any]:
        """The CLI's ``compare --json`` shape: per measure, its summary and its layers as records."""
        return {
            "model_a": self.model_a,
            "model_b": self.model_b,
            "stimuli": self.stimuli,
            "stimuli_b": self.stimuli_b or self.stimuli,
            "conventions": self.conventions,
            "core_layers": list(self.core_layers),
            "measures": {
                name: {**item.summary(), "layers": item.layers.to_dict(orient="records")}
                for name, item in self.measures.items()
            },
        }

    def to_payload(self) -> bytes:
        """The result as plain compressed JSON for the store's cache (never pickle)."""
        return pack(
            {
                "model_a": self.model_a,
                "model_b": self.model_b,
                "stimuli": self.stimuli,
                "stimuli_b": self.stimuli_b,
                "core_layers": self.core_layers,
                "conventions": self.conventions,
                "measures": {
                    name: {
                        **{
                            f.name: getattr(item, f.name)
                            for f in dataclasses.fields(item)
                            if f.name != "layers"
                        },
                        "layers": frame_to_plain(item.layers),
                    }
                    for name, item in self.measures.items()
                },
            }
        )

    @classmethod
    def from_payload(cls, payload: bytes) -> ComparisonResult:
        """The result a payload of :meth:`to_payload` holds.

        Args:
            payload: bytes written by :meth:`to_payload`.
        """
        document = unpack(payload)
        measures = {}
        for name, item in document["measures"].items():
            item["layers"] = frame_from_plain(item["layers"])
            measures[name] = ModelComparison(**item)
        return cls(
            model_a=document["model_a"],
            model_b=document["model_b"],
            stimuli=document["stimuli"],
            core_layers=list(document["core_layers"]),
            measures=measures,
            conventions=document["conventions"],
            stimuli_b=document.get("stimuli_b"),
        )


def comparison_params(params: AnalysisParams, n_blocks_a: int, n_blocks_b: int) -> AnalysisParams:
    """The parameters model B is analysed with: ``params``, but a chosen core band is model A's,
    so a model of another depth keeps its own default band.

    Args:
        params: the comparison's analysis parameters (model A's).
        n_blocks_a: model A's transformer blocks.
        n_blocks_b: model B's transformer blocks.
    """
    return params if n_blocks_b == n_blocks_a else dataclasses.replace(params, core_layers=None)


def compare_analyses(
    result_a: AnalysisResult,
    result_b: AnalysisResult,
    params: AnalysisParams,
    *,
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
        progress: called as ``progress(done, total)`` after each measure (its joint bootstrap
            takes seconds).
        stimuli_b: model B's stimulus set when it is not model A's (a number-format variant); None: the same.
    """
    if not np.array_equal(result_a.magnitudes, result_b.magnitudes):
        raise AnalysisError(
            f"{result_a.stimuli!r} and {stimuli_b!r} hold different magnitudes: a comparison pairs the same magnitudes"
            if stimuli_b else "the two models were measured on different magnitudes"
        )
    measures = {}
    for measure in params.measures:
        measures[measure] = compare_models(
            result_a.magnitudes,
            result_a.values[measure],
            result_b.values[measure],
            n_blocks_a=result_a.n_blocks,
            n_blocks_b=result_b.n_blocks,
            measure=measure,
            drop_outliers=measure in OUTLIER_RULE_MEASURES and params.rules.e6_outlier_rule,
            core_layers=result_a.core_layers,
            n_boot=params.n_boot,
            seed=params.seed,
            ci=params.ci,
            bootstrap_layers=params.bootstrap_layers,
            outlier_factor=params.outlier_factor,
            stream=params.rules.bootstrap_stream,
        )
        if progress is not None:
            progress(len(measures), len(params.measures))
    return ComparisonResult(result_a.model, result_b.model, result_a.stimuli, result_a.core_layers, measures,
                            params.conventions, stimuli_b)
