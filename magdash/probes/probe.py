"""Probes of one layer (:func:`probe_layer`) and of a model's layers, one in memory at a time
(:func:`run_probes`).

Per layer: the vectors' coordinates (:mod:`magdash.probes.basis`), one multi-target ridge per
fold for every (task, target) label column (:mod:`magdash.probes.crossval`) in both schemes, the
held-out scores with their intervals (:mod:`magdash.probes.scores`), the selectivity, the
direction of a probe fitted on all rows against the centroids' PC1
(:func:`magdash.variability.measures.magnitude_axis`), and the decoded scalar variability from
the held-out-carrier predictions (:mod:`magdash.probes.decoded`).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.params import ProgressCallback
from magdash.probes.basis import FeatureBasis, feature_basis, layer_moments
from magdash.probes.crossval import CrossValidation, FoldFit, cross_validate, fit_ridge, magnitude_groups, splits
from magdash.probes.decoded import decoded_scaling, decoded_spread
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
                draws: BootstrapDraws | None = None, axis: np.ndarray | None = None) -> LayerProbe:
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

    Raises:
        AnalysisError: a design the probes cannot use (too few carriers or magnitudes,
            non-positive magnitudes for the log target, Inf/NaN vectors), saying what is needed.
    """
    params = params or ProbeParams()
    magnitudes = check_magnitudes(magnitudes, params)
    x = check_vectors(vectors, magnitudes.size, params)
    draws = draws or BootstrapDraws(params.n_boot, params.seed)
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
        runs = {scheme: cross_validate(
            basis.features, label_rows, groups,
            splits(scheme, magnitudes, n_carriers, magnitude_folds=params.magnitude_folds,
                   carrier_folds=params.carrier_folds),
            alphas, params.alpha_rows, rng) for scheme in SCHEMES}
        everything = fit_ridge(basis.features, label_rows, groups, alphas, params.alpha_rows, rng)
        scores, selectivity = _score_tables(runs, labels, alphas, params, draws, n_carriers)
        directions, vectors_by_target = _direction_table(basis, everything, runs["carrier"], labels, params, axis)
        decoded, scaling = _decoded_tables(runs["carrier"].predictions.reshape(n_magnitudes, n_carriers, -1),
                                           labels, magnitudes, params, draws.counts(n_magnitudes))
    return LayerProbe(scores=scores, selectivity=selectivity, directions=directions, decoded=decoded,
                      decoded_scaling=scaling, exact=basis.exact, n_features=basis.n_features,
                      variance_kept=basis.variance_kept, direction_vectors=vectors_by_target, axis=axis)


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


def _score_tables(runs: dict[str, CrossValidation], labels: Labels, alphas: np.ndarray, params: ProbeParams,
                  draws: BootstrapDraws, n_carriers: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ``scores`` and ``selectivity`` rows of every scheme."""
    column_targets = tuple(target for _, target in labels.columns)
    score_rows, selectivity_rows = [], []
    for scheme, cv in runs.items():
        predictions = cv.predictions.reshape(labels.values.shape[0], n_carriers, -1)
        tested = np.isfinite(predictions).all(axis=(1, 2))
        point, replicates = held_out_scores(predictions[tested], labels.values[tested], labels.reference[tested],
                                            column_targets, draws.counts(int(tested.sum())))
        intervals = {name: percentile_interval(replicates[name], params.ci) for name in SCORES}
        chosen = cv.alphas
        at_floor = (chosen <= alphas[0]).mean(axis=0)
        for column, (task, target) in enumerate(labels.columns):
            row = {"scheme": scheme, "target": target, "task": task}
            for name in SCORES:
                row[name] = float(point[name][column])
                row[f"{name}_low"] = float(intervals[name][0][column])
                row[f"{name}_high"] = float(intervals[name][1][column])
            row.update(share_nonpositive=float(point["share_nonpositive"][column]),
                       alpha=float(np.median(chosen[:, column])), alpha_at_floor=float(at_floor[column]),
                       n_folds=len(cv.folds), n_magnitudes=int(tested.sum()))
            score_rows.append(row)
        for target in params.targets:
            real, control = labels.index("real", target), labels.index("control", target)
            difference = _selectivity(replicates["r2"][:, real], replicates["r2"][:, control])
            low, high = percentile_interval(difference[:, None], params.ci)
            selectivity_rows.append({"scheme": scheme, "target": target,
                                     "selectivity": float(_selectivity(point["r2"][real], point["r2"][control])),
                                     "selectivity_low": float(low[0]), "selectivity_high": float(high[0])})
    return (pd.DataFrame(score_rows, columns=SCORE_COLUMNS),
            pd.DataFrame(selectivity_rows, columns=SELECTIVITY_COLUMNS))


def _direction_table(basis: FeatureBasis, everything: FoldFit, carrier_cv: CrossValidation, labels: Labels,
                     params: ProbeParams, axis: np.ndarray) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Each real-task probe's direction against PC1 and against the held-out-carrier folds' directions."""
    rows, vectors = [], {}
    for target in params.targets:
        column = labels.index("real", target)
        direction = basis.direction(everything.coef[column])
        vectors[target] = direction
        fold_cosines = [_cosine(fold.coef[column], everything.coef[column]) for fold in carrier_cv.folds]
        rows.append({"target": target, "cosine_pc1": _cosine(direction, axis),
                     "fold_cosine": float(np.mean(fold_cosines)), "cosine_previous_layer": math.nan,
                     "alpha": float(everything.alpha[column])})
    return pd.DataFrame(rows, columns=DIRECTION_COLUMNS), vectors


def _decoded_tables(carrier_predictions: np.ndarray, labels: Labels, magnitudes: np.ndarray, params: ProbeParams,
                    counts: np.ndarray) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The decoded variability per magnitude and its scaling, per target (real task)."""
    frames, rows = [], []
    for target in params.targets:
        spread = decoded_spread(carrier_predictions[:, :, labels.index("real", target)], magnitudes, target)
        frames.append(pd.DataFrame({"target": target, "magnitude": magnitudes, **spread}))
        point, replicates = decoded_scaling(spread, magnitudes, counts)
        beta_low, beta_high = percentile_interval(replicates["beta"][:, None], params.ci)
        weber_low, weber_high = percentile_interval(replicates["weber_mean"][:, None], params.ci)
        rows.append({**point, "target": target, "beta_low": float(beta_low[0]), "beta_high": float(beta_high[0]),
                     "weber_mean_low": float(weber_low[0]), "weber_mean_high": float(weber_high[0])})
    return (pd.concat(frames, ignore_index=True)[DECODED_COLUMNS],
            pd.DataFrame(rows, columns=SCALING_COLUMNS))


def run_probes(
    layers: Iterable,
    magnitudes,
    params: ProbeParams | None = None,
    *,
    model: str = "",
    stimuli: str = "",
    n_layers: int | None = None,
    progress: ProgressCallback | None = None,
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

    A layer holding an Inf or NaN vector (float16 overflow) is not probed: it is listed in
    ``nonfinite_layers`` and the warnings, as in the variability analysis. Every layer's
    intervals use the same bootstrap draws of the magnitudes.
    """
    params = params or ProbeParams()
    magnitudes = check_magnitudes(magnitudes, params)
    draws = BootstrapDraws(params.n_boot, params.seed)
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
            probe = probe_layer(vectors, magnitudes, params, draws=draws)
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
                                   n_carriers=n_carriers, params=params)
