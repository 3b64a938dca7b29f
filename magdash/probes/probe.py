"""Probes of one layer (:func:`probe_layer`) and of a model's layers, one in memory at a time
(:func:`run_probes`).

Per layer: the vectors' coordinates (:mod:`magdash.probes.basis`), one multi-target ridge per
fold for every (task, target) label column (:mod:`magdash.probes.crossval`) in both schemes, the
held-out scores with their intervals (:mod:`magdash.probes.scores`) beside the strata's baseline
on the same folds and the R² within strata (:mod:`magdash.probes.baseline`), the selectivity, the
direction of a probe fitted on all rows against the centroids' PC1
(:func:`magdash.variability.measures.magnitude_axis`), and the decoded scalar variability from
the held-out-carrier predictions with its constant-error null (:mod:`magdash.probes.decoded`).
Over layers, the band of layers that decode unseen magnitudes best (:mod:`magdash.probes.selection`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.params import ProgressCallback
from magdash.probes.baseline import Strata, magnitude_strata, stratum_mean_predictions, within_strata_r2
from magdash.probes.basis import FeatureBasis, feature_basis, layer_moments
from magdash.probes.crossval import CrossValidation, FoldFit, cross_validate, fit_ridge, magnitude_groups, splits
from magdash.probes.decoded import (
    PermutationDraws,
    constant_error_null,
    decoded_scaling,
    decoded_spread,
    null_p,
    permutation_draws,
)
from magdash.probes.labels import Labels, NonFiniteVectors, check_magnitudes, check_vectors, refuse_nonfinite
from magdash.probes.probe_params import SCHEMES, ProbeParams
from magdash.probes.result import (
    DECODED_COLUMNS,
    DIRECTION_COLUMNS,
    SCALING_COLUMNS,
    SCORE_COLUMNS,
    SELECTIVITY_COLUMNS,
    LayerProbe,
    ProbeResult,
)
from magdash.probes.scores import SCORES, BootstrapDraws, held_out_scores, percentile_interval
from magdash.variability.measures import magnitude_axis

log = logging.getLogger(__name__)

# Salt of the stream that draws the rows on which a large fold chooses its penalty (under params.seed).
_ALPHA_ROWS_STREAM = 1


def oriented_axis(centroids: np.ndarray, magnitudes: np.ndarray, axis: np.ndarray | None = None) -> np.ndarray:
    """The centroids' PC1 (:func:`magnitude_axis`, or ``axis`` when given), signed so that its
    coordinates rise with n (whatever order the magnitudes come in)."""
    axis = magnitude_axis(centroids) if axis is None else np.asarray(axis, dtype=np.float64)
    if axis.shape != centroids.shape[1:]:
        raise AnalysisError(f"the magnitude axis has shape {axis.shape}; the layer's vectors have {centroids.shape[1]} "
                            "dimensions")
    coordinates = (centroids - centroids.mean(axis=0)) @ axis
    if np.ptp(coordinates) > 0 and np.corrcoef(coordinates, magnitudes)[0, 1] < 0:
        axis = -axis
    return axis


def _cosine(a: np.ndarray, b: np.ndarray) -> float:
    norms = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / norms) if norms > 0 else math.nan


def probe_layer(vectors: np.ndarray, magnitudes, params: ProbeParams | None = None, *,
                draws: BootstrapDraws | None = None, axis: np.ndarray | None = None,
                strata: Strata | None = None, permutations: PermutationDraws | None = None) -> LayerProbe:
    """The probes of one layer.

    Args:
        vectors: (n_magnitudes, n_carriers, d), any float dtype (float32 as stored); x[i, c] is
            the vector of magnitude i in carrier c.
        magnitudes: the n of each row of ``vectors``, distinct (positive for the log target).
        params: the probe's choices (defaults when None).
        draws: bootstrap draws to share across layers (:func:`run_probes` passes one); made
            from ``params`` when None.
        axis: a precomputed PC1 of the layer's centroids (d,), e.g. the variability analysis's;
            computed here when None, and oriented with n either way.
        strata: the magnitudes' strata of the baseline (:func:`magdash.probes.baseline.magnitude_strata`);
            their digit counts when None.
        permutations: the constant-error null's permutations to share across layers (:func:`run_probes`
            passes one); made from ``params`` when None.

    Raises:
        AnalysisError: a design the probes cannot use (too few carriers or magnitudes,
            non-positive magnitudes for the log target, Inf/NaN vectors), saying what is needed.
    """
    params = params or ProbeParams()
    magnitudes = check_magnitudes(magnitudes, params)
    x = check_vectors(vectors, magnitudes.size, params)
    draws = draws or BootstrapDraws(params.n_boot, params.seed)
    strata = strata or magnitude_strata(magnitudes)
    if strata.codes.size != magnitudes.size:
        raise AnalysisError(f"the strata name {strata.codes.size} magnitudes, the layer has {magnitudes.size}: "
                            "give one stratum per magnitude")
    permutations = permutations or permutation_draws(params.n_boot, params.seed)
    n_magnitudes, n_carriers, dim = x.shape
    labels = Labels.for_design(magnitudes, params)
    label_rows = labels.rows(n_carriers)
    alphas = np.asarray(params.alphas)
    rng = np.random.default_rng([params.seed, _ALPHA_ROWS_STREAM])
    with _one_blas_thread():
        centroids, total_variance = layer_moments(x)
        if not math.isfinite(total_variance):
            refuse_nonfinite(x)
        basis = feature_basis(x, centroids, total_variance, exact_max_vectors=params.exact_max_vectors,
                              n_components=params.n_components)
        if axis is None and not basis.exact:
            axis = basis.components[0]  # PC1 of the centroids, from the same decomposition
        axis = oriented_axis(centroids, magnitudes, axis)
        del centroids
        groups = magnitude_groups(n_magnitudes, n_carriers)
        folds = {scheme: splits(scheme, magnitudes, n_carriers, magnitude_folds=params.magnitude_folds,
                                carrier_folds=params.carrier_folds) for scheme in SCHEMES}
        runs = {scheme: cross_validate(basis.features, label_rows, groups, folds[scheme], alphas, params.alpha_rows,
                                       rng) for scheme in SCHEMES}
        baselines = {scheme: stratum_mean_predictions(label_rows, np.repeat(strata.codes, n_carriers), folds[scheme])
                     for scheme in SCHEMES}
        everything = fit_ridge(basis.features, label_rows, groups, alphas, params.alpha_rows, rng)
        scores, selectivity, r2_replicates = _score_tables(runs, baselines, labels, strata, alphas, params, draws,
                                                           n_carriers)
        decoded, scaling, without_spread = _decoded_tables(
            runs["carrier"].predictions.reshape(n_magnitudes, n_carriers, -1), labels, magnitudes, params,
            draws.counts(n_magnitudes), permutations)
        directions, vectors_by_target = _direction_table(basis, everything, runs["carrier"], labels, params, axis,
                                                         without_spread)
    return LayerProbe(scores=scores, selectivity=selectivity, directions=directions, decoded=decoded,
                      decoded_scaling=scaling, exact=basis.exact, n_features=basis.n_features,
                      variance_kept=basis.variance_kept, direction_vectors=vectors_by_target, axis=axis,
                      r2_replicates=r2_replicates)


def _one_blas_thread():
    """Every matrix here is small (the folds' decompositions: a few hundred rows or columns) or
    tall and thin (20,000 x 4096 vectors times 32 components), where OpenBLAS's threads save
    little and on a busy machine cost 2-20x (measured with other processes running: one layer
    of the paper's design 0.4 s against 7 s; the centroid PCA of a 1,000 x 20 layer 0.3 s
    against 1.5 s)."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")


def _selectivity(real, control):
    """Real-task minus control-task R², each floored at 0 (no better than predicting the mean):
    a control probe that does worse than the mean has learnt nothing that transfers, however
    much worse, so the difference stays within [-1, 1] like Hewitt & Liang's accuracy gap."""
    return np.maximum(real, 0.0) - np.maximum(control, 0.0)


def _score_tables(runs: dict[str, CrossValidation], baselines: dict[str, np.ndarray], labels: Labels,
                  strata: Strata, alphas: np.ndarray, params: ProbeParams, draws: BootstrapDraws,
                  n_carriers: int) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, np.ndarray]]:
    """The ``scores`` and ``selectivity`` rows of every scheme, and per target the replicates of the
    real labels' held-out-magnitude R² (for the band of best layers)."""
    column_targets = tuple(target for _, target in labels.columns)
    score_rows, selectivity_rows, r2_replicates = [], [], {}
    n_magnitudes = labels.values.shape[0]
    for scheme, cv in runs.items():
        predictions = cv.predictions.reshape(n_magnitudes, n_carriers, -1)
        tested = np.isfinite(predictions).all(axis=(1, 2))
        counts = draws.counts(int(tested.sum()))
        # The probe's and the baseline's predictions scored in one pass over the draws: columns side by side.
        baseline = baselines[scheme].reshape(n_magnitudes, n_carriers, -1)[tested]
        both_point, both_replicates = held_out_scores(
            np.concatenate([predictions[tested], baseline], axis=2), np.tile(labels.values[tested], 2),
            np.tile(labels.reference[tested], 2), column_targets * 2, counts)
        n_columns = len(column_targets)
        point = {name: values[:n_columns] for name, values in both_point.items()}
        replicates = {name: values[:, :n_columns] for name, values in both_replicates.items()}
        baseline_point = {"r2": both_point["r2"][n_columns:]}
        baseline_replicates = {"r2": both_replicates["r2"][:, n_columns:]}
        within, within_replicates, n_within = within_strata_r2(predictions[tested], labels.values[tested],
                                                               strata.codes[tested], counts)
        intervals = {name: percentile_interval(replicates[name], params.ci) for name in SCORES}
        over_baseline = percentile_interval(replicates["r2"] - baseline_replicates["r2"], params.ci)
        within_interval = percentile_interval(within_replicates, params.ci)
        chosen = cv.alphas
        at_floor = (chosen <= alphas[0]).mean(axis=0)
        for column, (task, target) in enumerate(labels.columns):
            row: dict[str, object] = {"scheme": scheme, "target": target, "task": task}
            for name in SCORES:
                row[name] = float(point[name][column])
                row[f"{name}_low"] = float(intervals[name][0][column])
                row[f"{name}_high"] = float(intervals[name][1][column])
            row.update(baseline_r2=float(baseline_point["r2"][column]),
                       r2_over_baseline=float(point["r2"][column] - baseline_point["r2"][column]),
                       r2_over_baseline_low=float(over_baseline[0][column]),
                       r2_over_baseline_high=float(over_baseline[1][column]),
                       r2_within_strata=float(within[column]), r2_within_strata_low=float(within_interval[0][column]),
                       r2_within_strata_high=float(within_interval[1][column]), n_strata_within=n_within,
                       share_nonpositive=float(point["share_nonpositive"][column]),
                       alpha=float(np.median(chosen[:, column])), alpha_at_floor=float(at_floor[column]),
                       n_folds=len(cv.folds), n_magnitudes=int(tested.sum()))
            score_rows.append(row)
            if scheme == "magnitude" and task == "real":
                r2_replicates[target] = replicates["r2"][:, column]
        for target in params.targets:
            real, control = labels.index("real", target), labels.index("control", target)
            difference = _selectivity(replicates["r2"][:, real], replicates["r2"][:, control])
            low, high = percentile_interval(difference[:, None], params.ci)
            selectivity_rows.append({"scheme": scheme, "target": target,
                                     "selectivity": float(_selectivity(point["r2"][real], point["r2"][control])),
                                     "selectivity_low": float(low[0]), "selectivity_high": float(high[0])})
    return (pd.DataFrame(score_rows, columns=SCORE_COLUMNS),
            pd.DataFrame(selectivity_rows, columns=SELECTIVITY_COLUMNS), r2_replicates)


def _direction_table(basis: FeatureBasis, everything: FoldFit, carrier_cv: CrossValidation, labels: Labels,
                     params: ProbeParams, axis: np.ndarray,
                     without_spread: set[str]) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Each real-task probe's direction against PC1 and against the held-out-carrier folds'
    directions. For the targets ``without_spread`` no magnitude's held-out predictions differ
    between carriers beyond rounding (the carriers' vectors are alike): the folds were fitted to
    the same vectors, so their agreement says nothing and ``fold_cosine`` is NaN."""
    rows, vectors = [], {}
    for target in params.targets:
        column = labels.index("real", target)
        direction = basis.direction(everything.coef[column])
        vectors[target] = direction
        fold_cosines = [_cosine(fold.coef[column], everything.coef[column]) for fold in carrier_cv.folds]
        rows.append({"target": target, "cosine_pc1": _cosine(direction, axis),
                     "fold_cosine": math.nan if target in without_spread else float(np.mean(fold_cosines)),
                     "cosine_previous_layer": math.nan, "alpha": float(everything.alpha[column])})
    return pd.DataFrame(rows, columns=DIRECTION_COLUMNS), vectors


def _decoded_tables(carrier_predictions: np.ndarray, labels: Labels, magnitudes: np.ndarray, params: ProbeParams,
                    counts: np.ndarray,
                    permutations: PermutationDraws | None) -> tuple[pd.DataFrame, pd.DataFrame, set[str]]:
    """The decoded variability per magnitude and its scaling against the constant-error null, per
    target (real task), and the targets whose predictions have no spread between carriers beyond
    rounding at any magnitude."""
    frames, rows, without_spread = [], [], set()
    for target in params.targets:
        spread = decoded_spread(carrier_predictions[:, :, labels.index("real", target)], magnitudes, target)
        if not spread.has_spread:
            without_spread.add(target)
        frames.append(pd.DataFrame({"target": target, "magnitude": magnitudes, **spread.columns()}))
        point, replicates = decoded_scaling(spread, magnitudes, counts)
        beta_low, beta_high = percentile_interval(replicates["beta"][:, None], params.ci)
        weber_low, weber_high = percentile_interval(replicates["weber_mean"][:, None], params.ci)
        beta_null, null_betas = constant_error_null(spread, magnitudes, permutations)
        null_low, null_high = percentile_interval(null_betas[:, None], params.ci)
        rows.append({**point, "target": target, "beta_low": float(beta_low[0]), "beta_high": float(beta_high[0]),
                     "beta_null": beta_null, "beta_null_low": float(null_low[0]),
                     "beta_null_high": float(null_high[0]),
                     "beta_null_p": null_p(float(point["beta"]), beta_null, null_betas),
                     "weber_mean_low": float(weber_low[0]), "weber_mean_high": float(weber_high[0])})
    return (pd.concat(frames, ignore_index=True)[DECODED_COLUMNS],
            pd.DataFrame(rows, columns=SCALING_COLUMNS), without_spread)


def run_probes(
    layers: Iterable,
    magnitudes,
    params: ProbeParams | None = None,
    *,
    model: str = "",
    stimuli: str = "",
    n_layers: int | None = None,
    progress: ProgressCallback | None = None,
    strata: Strata | None = None,
) -> ProbeResult:
    """The probes of every layer, from an iterable that yields one layer at a time.

    Args:
        layers: per layer, in layer order, either ``(label, vectors)`` or the vectors alone
            (labelled by their index); vectors as for :func:`probe_layer`. Each layer is dropped
            once probed, so a generator that reads one layer at a time keeps memory at one layer.
        magnitudes: the n of each row of the vectors.
        params: the probe's choices (defaults when None).
        model, stimuli: names carried into the result.
        n_layers: the total for ``progress`` (0 when unknown).
        progress: called as ``progress(done_layers, n_layers)`` after each layer.
        strata: the magnitudes' strata of the baseline (:func:`magdash.probes.baseline.magnitude_strata`:
            digit count, crossed with token count where the items' token facts are known); their
            digit counts when None.

    A layer holding an Inf or NaN vector (float16 overflow) is not probed: it is listed in
    ``nonfinite_layers`` and the warnings, as in the variability analysis. Every layer's
    intervals use the same bootstrap draws of the magnitudes, and its constant-error null the
    same permutations.
    """
    params = params or ProbeParams()
    magnitudes = check_magnitudes(magnitudes, params)
    draws = BootstrapDraws(params.n_boot, params.seed)
    permutations = permutation_draws(params.n_boot, params.seed)
    strata = strata or magnitude_strata(magnitudes)
    probed: list[tuple[int, str, LayerProbe | None, int]] = []
    previous: dict[str, np.ndarray] = {}
    n_carriers = 0
    # Counted by hand: enumerate() would keep the previous layer alive while the next is read.
    index = -1
    for item in layers:
        index += 1
        label, vectors = item if isinstance(item, tuple) else (str(index), item)
        del item
        try:
            log.info("probing layer %d (%s)", index, label)
            probe = probe_layer(vectors, magnitudes, params, draws=draws, strata=strata, permutations=permutations)
        except NonFiniteVectors as error:
            log.info("layer %d (%s) holds %d Inf/NaN vectors: not probed", index, label, error.count)
            probed.append((index, label, None, error.count))
            previous = {}
        else:
            for row, target in enumerate(probe.directions["target"]):
                if target in previous:
                    probe.directions.loc[row, "cosine_previous_layer"] = _cosine(
                        previous[target], probe.direction_vectors[target])
            previous = probe.direction_vectors
            probe.direction_vectors, probe.axis = {}, None  # a run keeps tables, not d-vectors
            probed.append((index, label, probe, 0))
        n_carriers = np.shape(vectors)[1]
        del vectors
        if progress is not None:
            progress(index + 1, n_layers or 0)
    if not probed:
        raise AnalysisError("there are no layers to probe")
    return ProbeResult.from_layers(probed, model=model, stimuli=stimuli, magnitudes=magnitudes,
                                   n_carriers=n_carriers, params=params, strata=strata)
