"""Steering a stored model along its magnitude directions (:mod:`magdash.steering`), cached in the store.

Cacioli 2026 (arXiv 2603.20642, Paradigm D): at each layer, ``dose x`` the magnitude direction is
added to the residual stream at one operand's number in the model's comparison prompts, and the
model's choice is read against the same push along random directions. A run here takes:

- the directions from the model's stored vectors on a stimulus set, one layer at a time
  (:func:`magdash.steering.directions.layer_directions`: the log-n probe's unit weight vector, fitted
  with the default :class:`~magdash.probes.probe_params.ProbeParams` as :mod:`magdash.probes` fits its
  ``directions`` table's, or PC1 of the centroids; the dose unit; the random and orthogonal nulls);
- the prompts from the model's stored comparison trials (:meth:`Store.trials <magdash.store.Store.trials>`,
  run by ``md.behave``), with the facts of their run (the spec and dtype loaded, whether the chat
  template was applied) so the steered prompts are the ones the trials saw;
- the model loaded with its head (:func:`magdash.trial_extraction.load_for_trials`), the patched passes
  (:func:`magdash.trial_steering.steer_trials`) and the summary
  (:func:`magdash.steering.steer_result.summarise_steering`).

The :class:`~magdash.steering.steer_result.SteerResult` is kept under a key hashing the model, the
stimuli and their data fingerprint, the comparison set and the fingerprint of its trials' prompts and probabilities
(:func:`magdash.runs.behaviour_runs.trials_fingerprint` of :data:`STEERED_COLUMNS`), every :class:`~magdash.steering.steer_params.SteerParams`
field, the probe's parameters and :data:`~magdash.steering.steer_result.STEER_VERSION`, with its
metric rows (``steering_layers``: :func:`magdash.runs.rows.steer_rows`).
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np
import pandas as pd

from magdash.errors import AnalysisError
from magdash.formatting import format_number
from magdash.names import control_name
from magdash.params import ProgressCallback, ranges
from magdash.probes.probe_params import ProbeParams
from magdash.runs import rows
from magdash.runs.behaviour_runs import only_trial_set, trial_sets_of, trials_fingerprint
from magdash.runs.cache import CachedKind, cached_result, lookup, result_key
from magdash.steering.steer_params import SteerParams
from magdash.steering.steer_result import STEER_VERSION, SteerResult

log = logging.getLogger(__name__)

STEERED_COLUMNS = ("trial_id", "question", "template", "value_a", "value_b", "larger", "prob_a", "prob_b")
"""The trial columns a steering result depends on: the prompts pushed, the correct option, the unpatched
probabilities (a trial run again on another device gives another key)."""

STEER = CachedKind("steer", SteerResult.to_payload, SteerResult.from_payload, rows.steer_rows)


def steer_key(store, model: str, stimuli: str, comparisons: str, trials, params: SteerParams) -> str:
    """The cache key of the steering of ``model``'s ``trials`` on ``comparisons`` along its directions on
    ``stimuli`` with ``params``.

    Args:
        store: the :class:`~magdash.store.Store` holding the model (its vectors' data fingerprint enters the key).
        model: the model's name in the store.
        stimuli: the stimulus set of the vectors.
        comparisons: the comparison set's name.
        trials: the stored trials (their fingerprint enters the key).
        params: the steering's choices.
    """
    return result_key("steer", STEER_VERSION, model=model, stimuli=stimuli, data=store.data_fingerprint(model, stimuli),
                      comparisons=comparisons, trials=trials_fingerprint(trials, STEERED_COLUMNS), params=params,
                      probe=ProbeParams() if params.direction == "probe" else None)


def _trial_run_facts(store, model: str, comparisons: str) -> dict:
    """The facts of the run that produced the trials: the spec and dtype to load, the chat template."""
    facts = store.trial_run(model, comparisons) or {}
    if not facts.get("spec"):
        raise AnalysisError(f"{model!r}'s trials on {comparisons!r} were imported, not run by magdash: there is no "
                            "model to steer; run the comparisons on the model itself, md.behave(store, model)",
                            parameters=("comparisons",))
    return facts


def _steered_layers(source, params: SteerParams) -> list[int]:
    if params.layers is None:
        return list(range(source.n_layers))
    outside = [layer for layer in params.layers if layer >= source.n_layers]
    if outside:
        raise AnalysisError(f"layers={ranges(outside)}: {source.name!r} has layers 0-{source.n_layers - 1} "
                            "(0 is the embeddings)", parameters=("layers",))
    return list(params.layers)


def steer(
    store,
    model: str,
    stimuli: str | None = None,
    comparisons: str | None = None,
    params: SteerParams | None = None,
    *,
    extract_params=None,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> SteerResult:
    """Steer ``model``'s stored comparison trials along its magnitude directions, layer by layer, cached
    in the store (module docstring).

    Args:
        store: the :class:`~magdash.store.Store` holding the model's vectors and trials.
        model: the model's name in the store.
        stimuli: the stimulus set of the vectors giving the directions; None takes the model's only complete one.
        comparisons: the comparison set of the trials; None takes the model's only one.
        params: the steering's choices (:class:`~magdash.steering.steer_params.SteerParams`; defaults when None).
        extract_params: the device and batch size of the patched passes
            (:class:`~magdash.extract_params.ExtractParams`; the dtype is the trials' run's).
        use_cache: False recomputes and replaces the cached result.
        progress: called as ``progress(done, total)`` forward passes (only when something is computed).

    Raises:
        AnalysisError: a model without comparison trials (run ``md.behave(store, model)`` first), with
            imported trials only, or without vectors (run ``md.extract`` first); layers it does not have.
    """
    params = params or SteerParams()
    set_name = _trial_set(store, model, comparisons)
    if model not in store.model_names():
        raise AnalysisError(f"{model!r} has comparison trials but no stored vectors: steering takes its magnitude "
                            "directions from them, so extract them first, md.extract(spec, md.paper_stimuli(), "
                            "store=store, name=model)", parameters=("model",))
    source = store.vectors(model, stimuli)
    trials = store.trials(model, set_name)
    facts = _trial_run_facts(store, model, set_name)
    key = steer_key(store, model, source.stimuli_name, set_name, trials, params)

    def compute() -> SteerResult:
        return _compute(source, set_name, trials, facts, params, extract_params, progress)

    return cached_result(store, STEER, key, compute, use_cache=use_cache)


def _trial_set(store, model: str, comparisons: str | None) -> str:
    """The comparison set whose trials are steered, refused with what to run first when there is none."""
    if not trial_sets_of(store, model):
        raise AnalysisError(f"{model!r} has no comparison trials in this store: steering pushes the prompts of its "
                            "trials, so run them first, md.behave(store, model) (the paper's design)",
                            parameters=("model",))
    return only_trial_set(store, model, comparisons)


def _compute(source, comparisons: str, trials, facts: dict, params: SteerParams, extract_params,
             progress: ProgressCallback | None) -> SteerResult:
    # The model and the hooks are imported only when something is steered, not to read a cached result.
    from magdash.extract_params import ExtractParams
    from magdash.steering.directions import layer_directions, top_dimension_share
    from magdash.steering.steer_result import summarise_steering
    from magdash.trial_extraction import load_for_trials, resolve_for_trials
    from magdash.trial_steering import steer_trials

    layers = _steered_layers(source, params)
    magnitudes = np.asarray(source.magnitudes, dtype=np.float64)
    pushes, units, shares, kinds = {}, {}, {}, ()
    for layer, _, vectors in source.layers(layers):
        found = layer_directions(layer, vectors, magnitudes, params)
        pushes[layer], units[layer], kinds = found.pushes, found.dose_unit, found.kinds
        shares[layer] = top_dimension_share(found.direction)
        del vectors
    extract_params = extract_params or ExtractParams()
    extract_params = dataclasses.replace(extract_params, dtype=facts.get("dtype", extract_params.dtype))
    loaded = load_for_trials(resolve_for_trials(facts["spec"], extract_params), extract_params)
    design = source.store.comparison_set(comparisons)
    options = tuple(design.options) if design is not None else ("A", "B")
    steered = steer_trials(loaded, trials, pushes, params.doses, params.operand, extract_params.batch_size, progress,
                           labels=kinds, chat=bool(facts.get("chat_template_applied")), options=options)
    unpatched = steered.drop_duplicates("trial_id").loc[:, ["trial_id", "p_a_unpatched", "p_b_unpatched"]]
    baseline = unpatched.rename(columns={"p_a_unpatched": "p_a", "p_b_unpatched": "p_b"}).merge(
        trials.loc[:, ["trial_id", "larger"]], on="trial_id", how="left")
    return summarise_steering(steered, baseline, kinds, params, dose_units=units, top_shares=shares, model=source.name,
                              stimuli=source.stimuli_name, comparisons=comparisons)


def steer_with_control(
    store,
    model: str,
    stimuli: str | None = None,
    comparisons: str | None = None,
    params: SteerParams | None = None,
    *,
    extract_params=None,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
    control_progress: ProgressCallback | None = None,
) -> tuple[SteerResult, SteerResult | None, pd.DataFrame | None]:
    """The steering of ``model`` and, when its ``@random`` control has vectors on the same stimulus set and
    trials on the same comparison set, the control's along its own directions, with the two side by side
    per layer: a check of the pipeline (random weights have no magnitude code to use, so no specificity is
    expected of the control; a control as specific as the model says the effect is the push, not the code).

    Args:
        store: the :class:`~magdash.store.Store` holding both models' vectors and trials.
        model: the model's name in the store.
        stimuli: the stimulus set of the vectors; None takes the model's only complete one.
        comparisons: the comparison set of the trials; None takes the model's only one.
        params: the steering's choices, the same for both (defaults when None).
        extract_params: the device and batch size of the patched passes.
        use_cache: False recomputes and replaces both cached results.
        progress: called as ``progress(done, total)`` forward passes of the model.
        control_progress: the same for the control's passes.

    Returns:
        The model's result, the control's (None when the control lacks the vectors or the trials) and
        the per-layer frame :func:`beside_control` of the two (None without a control).
    """
    result = steer(store, model, stimuli, comparisons, params, extract_params=extract_params, use_cache=use_cache,
                   progress=progress)
    control = control_name(model)
    if (control == model or result.comparisons not in trial_sets_of(store, control)
            or not _has_vectors(store, control, result.stimuli)):
        return result, None, None
    controlled = steer(store, control, result.stimuli, result.comparisons, result.params,
                       extract_params=extract_params, use_cache=use_cache, progress=control_progress)
    return result, controlled, beside_control(result, controlled)


def _has_vectors(store, model: str, stimuli: str) -> bool:
    """Whether ``model`` has stored vectors on the stimulus set ``stimuli`` (its magnitude directions)."""
    return model in store.model_names() and stimuli in store.stimulus_sets_for(model)


BESIDE_COLUMNS = ("specificity", "share_above_random", "relevant")
"""The per-layer summary columns :func:`beside_control` sets side by side."""


def beside_control(result: SteerResult, control: SteerResult) -> pd.DataFrame:
    """Per layer steered in both: the model's and its control's specificity, share of prompts above the
    random null and relevance, as ``<column>`` and ``<column>_control``.

    Args:
        result: the model's steering.
        control: its ``@random`` control's, with the same parameters.
    """
    columns = ["layer", *BESIDE_COLUMNS]
    return result.layers.loc[:, columns].merge(control.layers.loc[:, columns], on="layer", how="inner",
                                               suffixes=("", "_control"))


def steer_vectors(source, params: SteerParams | None = None, *, use_cache: bool = True,
                    progress: ProgressCallback | None = None) -> SteerResult:
    """The steering of a stored model's vectors (a :class:`~magdash.store.vectors.VectorSource` with its
    store) along its only comparison set's trials: the kind's compute over a source, as every kind has.

    Args:
        source: the model's stored vectors (:meth:`Store.vectors <magdash.store.Store.vectors>`).
        params: the steering's choices (defaults when None).
        use_cache: False recomputes and replaces the cached result.
        progress: called as ``progress(done, total)`` forward passes.

    Raises:
        AnalysisError: vectors without a store (steering runs the stored model on its stored trials).
    """
    if source.store is None:
        raise AnalysisError("steering needs a stored model: its trials and the spec that ran them are in the "
                            "store; give store.vectors(model)", parameters=("source",))
    return steer(source.store, source.name, source.stimuli_name, None, params, use_cache=use_cache,
                 progress=progress)


def cached_steer(store, model: str, stimuli: str, comparisons: str, params: SteerParams | None = None
                 ) -> SteerResult | None:
    """The steering of ``model`` if it is cached (never computed): what a report shows without
    loading the model.

    Args:
        store: the :class:`~magdash.store.Store` to look in.
        model: the model's name.
        stimuli: the stimulus set of the directions.
        comparisons: the comparison set's name.
        params: the steering's choices (defaults when None).
    """
    trials = store.trials(model, comparisons)
    if trials.empty:
        return None
    return lookup(store, STEER, steer_key(store, model, stimuli, comparisons, trials, params or SteerParams()))


SWEEP_TASK = "steer"
"""The sweep's task of the steering kind, and the name of the plan's table of its parameters."""


def _sweep_comparisons(store, name: str) -> str | None:
    """The comparison set a sweep cell steers: the paper's design (what the ``behave`` task runs) when
    the cell's model has its trials, else None (the model's only set, as :func:`steer` takes it)."""
    from magdash.comparison_stimuli import paper_comparisons

    paper = paper_comparisons().name
    return paper if paper in trial_sets_of(store, name) else None


def sweep_done(context) -> bool:
    """Whether a sweep cell's steering is cached: the cell's model has vectors on the cell's stimuli and
    comparison trials, and their steering with the plan's ``[steer]`` parameters is in the store.

    Args:
        context: the cell's :class:`magdash.sweep.tasks.TaskContext` (its store, cell and plan).
    """
    store, name, stimuli = context.store, context.cell.store_name, context.stimuli.name
    if not _has_vectors(store, name, stimuli):
        return False
    sets = trial_sets_of(store, name)
    comparisons = _sweep_comparisons(store, name) or (sets[0] if len(sets) == 1 else None)
    if comparisons is None:
        return False
    return cached_steer(store, name, stimuli, comparisons, context.plan.params_for(SWEEP_TASK)) is not None


def sweep_run(context) -> SteerResult:
    """A sweep cell's steering: the cell's model steered on its stored comparison trials along its
    directions on the cell's stimuli, with the plan's ``[steer]`` parameters, device and batch size.
    The trials and vectors come from the sweep's earlier tasks (``behave``, ``extract``): a cell
    without them fails with the task to list before this one.

    Args:
        context: the cell's :class:`magdash.sweep.tasks.TaskContext`.

    Raises:
        AnalysisError: the cell's model has no comparison trials or no vectors on the cell's stimuli.
    """
    from magdash.extract_params import ExtractParams

    store, cell, plan = context.store, context.cell, context.plan
    name, stimuli = cell.store_name, context.stimuli.name
    if not trial_sets_of(store, name):
        raise AnalysisError(f"{name!r} has no comparison trials to steer: list the \"behave\" task before "
                            "\"steer\" in the plan's tasks (or run md.behave(store, model) first)", parameters=("tasks",))
    if not _has_vectors(store, name, stimuli):
        raise AnalysisError(f"{name!r} has no vectors on {stimuli!r} to take the magnitude directions from: list "
                            "the \"extract\" task before \"steer\" in the plan's tasks (or run md.extract first)",
                            parameters=("tasks",))
    params = ExtractParams(dtype=cell.dtype, device=plan.device, device_map=cell.model.device_map,
                           batch_size=plan.batch_size, trust_remote_code=cell.model.trust_remote_code,
                           allow_pickle=cell.model.allow_pickle, model_cache=plan.model_cache)
    return steer(store, name, stimuli, _sweep_comparisons(store, name), plan.params_for(SWEEP_TASK),
                 extract_params=params)


def describe_steer(result: SteerResult) -> str:
    """A summary line: the layers where the magnitude direction is functionally relevant and the
    largest specificity."""
    relevant = result.relevant_layers()
    largest = result.layers["specificity"].max() if not result.layers.empty else float("nan")
    where = f"relevant at layer(s) {ranges(relevant)}" if relevant else "relevant at no layer"
    return f"{where}; largest specificity {format_number(float(largest), '.2f')}"
