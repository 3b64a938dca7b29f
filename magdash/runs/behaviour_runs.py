"""The behaviour (:mod:`magdash.behaviour`) of a model's stored comparison trials, cached in the store.

A model's trials on a comparison set (:meth:`Store.trials <magdash.store.Store.trials>`: run by
:func:`magdash.trial_extraction.run_trials`, or imported from a published file by
:func:`import_trials`) are fitted by :func:`magdash.behaviour.behaviour_result.fit_behaviour`; the
:class:`~magdash.behaviour.behaviour_result.BehaviourResult` is kept under a key hashing the model, the
comparison set, the trials themselves (:func:`trials_fingerprint`: a resumed run that adds trials gives
a new key), every :class:`~magdash.behaviour.behaviour_params.BehaviourParams` field and
:data:`~magdash.behaviour.behaviour_result.BEHAVIOUR_VERSION`, with its metric rows
(``behaviour_fits``, ``behaviour_weber_law``: :func:`magdash.runs.rows.behaviour_rows`).

The trials are the kind's source, as vectors are the other kinds': :class:`StoredTrials` (cached in
its store) or a trials frame (not cached), through one function, :func:`behaviour_of_trials`.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from magdash.behaviour.behaviour_params import BehaviourParams
from magdash.behaviour.behaviour_result import BEHAVIOUR_VERSION, BehaviourResult
from magdash.behaviour.trial_frames import FIT_COLUMNS
from magdash.comparison_stimuli import ComparisonSet
from magdash.errors import AnalysisError
from magdash.formatting import format_number
from magdash.names import control_name
from magdash.params import ProgressCallback
from magdash.runs import rows
from magdash.runs.cache import CachedKind, cached_result, lookup, result_key

if TYPE_CHECKING:
    from magdash.sources.loading import LoadedModel

log = logging.getLogger(__name__)

BEHAVIOUR = CachedKind("behaviour", BehaviourResult.to_payload, BehaviourResult.from_payload, rows.behaviour_rows)


@dataclass(frozen=True)
class StoredTrials:
    """A model's stored trials on one comparison set: the behaviour kind's stored source.

    Attributes:
        store: the :class:`~magdash.store.Store` holding them.
        model: the model's name in the store.
        comparisons: the comparison set's name.
    """

    store: object
    model: str
    comparisons: str

    def frame(self) -> pd.DataFrame:
        """The trials in the order of their ids (:meth:`Store.trials <magdash.store.Store.trials>`): the
        bootstraps resample rows within cells, so the order is part of the result; an imported paper's ids
        (``task:pair_id``) give its file's order in every cell, so its bootstrap draws as it did."""
        return self.store.trials(self.model, self.comparisons)  # pyright: ignore[reportAttributeAccessIssue] - a Store


def trials_fingerprint(trials: pd.DataFrame, read: Sequence[str] = FIT_COLUMNS) -> str:
    """A hash of the columns a result reads, row by row in a canonical order: the data part of a
    behaviour (or steering) result's cache key (trials added by a resumed run, or replaced, give another).

    Args:
        trials: the trials frame.
        read: the columns the result reads (default: the fits').
    """
    columns = [column for column in read if column in trials.columns]
    ordered = trials.loc[:, columns].sort_values(columns, kind="mergesort").reset_index(drop=True)
    text = ordered.to_csv(index=False, float_format="%.17g")
    return hashlib.sha256(text.encode()).hexdigest()


def behaviour_key(model: str, comparisons: str, trials: pd.DataFrame, params: BehaviourParams) -> str:
    """The cache key of the behaviour of ``model``'s ``trials`` on ``comparisons`` with ``params``.

    Args:
        model: the model's name in the store.
        comparisons: the comparison set's name.
        trials: the stored trials (their :func:`trials_fingerprint` enters the key).
        params: the fits' choices.
    """
    return result_key("behaviour", BEHAVIOUR_VERSION, model=model, comparisons=comparisons,
                      data=trials_fingerprint(trials), params=params)


def trial_sets_of(store, model: str) -> list[str]:
    """The comparison sets on which ``model`` has stored trials, by name.

    Args:
        store: the :class:`~magdash.store.Store`.
        model: the model's name.
    """
    found = store.trial_models()
    return sorted(str(name) for name in found.loc[found["model"] == model, "set_name"])


def only_trial_set(store, model: str, comparisons: str | None) -> str:
    """``comparisons``, or the model's only comparison set when None; a model without trials, or with
    several sets and none named, is refused saying what to give.

    Args:
        store: the :class:`~magdash.store.Store`.
        model: the model's name.
        comparisons: the comparison set's name, or None.
    """
    held = trial_sets_of(store, model)
    if comparisons is not None:
        if comparisons not in held:
            where = f"on {', '.join(held)}" if held else "on no comparison set"
            raise AnalysisError(f"{model!r} has no trials on the comparison set {comparisons!r} in this store "
                                f"(it has trials {where}): run the comparisons first, md.behave(store, model, "
                                "comparisons=...)", parameters=("comparisons",))
        return comparisons
    if not held:
        raise AnalysisError(f"{model!r} has no comparison trials in this store: run them first "
                            "(md.behave(store, model) runs the paper's design), or import published trials "
                            "(trials_file=)", parameters=("model",))
    if len(held) > 1:
        raise AnalysisError(f"{model!r} has trials on several comparison sets ({', '.join(held)}): give "
                            "comparisons=", parameters=("comparisons",))
    return held[0]


def behaviour_of_trials(
    source: StoredTrials | pd.DataFrame,
    params: BehaviourParams | None = None,
    *,
    model: str = "",
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> BehaviourResult:
    """The behaviour of a model's trials: stored ones cached in their store, a frame not cached.

    Args:
        source: :class:`StoredTrials`, or a trials frame (:data:`magdash.behaviour.trial_frames.TRIAL_COLUMNS`).
        params: the fits' choices (:class:`~magdash.behaviour.behaviour_params.BehaviourParams`; defaults when None).
        model: a frame's model name, carried into the records (a stored source names its own).
        use_cache: a stored source only: False recomputes and replaces the cached result.
        progress: unused by the fits (they report nothing partial); accepted as every kind's run does.

    Raises:
        AnalysisError: trials the fits cannot read, saying what is missing.
    """
    del progress
    params = params or BehaviourParams()
    if isinstance(source, pd.DataFrame):
        return _fit(source, params, model)
    trials = source.frame()
    if trials.empty:
        raise AnalysisError(f"{source.model!r} has no trials on {source.comparisons!r}: run them first, "
                            "md.behave(store, model, comparisons=...)", parameters=("comparisons",))
    key = behaviour_key(source.model, source.comparisons, trials, params)
    return cached_result(source.store, BEHAVIOUR, key, lambda: _fit(trials, params, source.model, source.comparisons),
                         use_cache=use_cache)


def _fit(trials: pd.DataFrame, params: BehaviourParams, model: str, comparisons: str = "") -> BehaviourResult:
    # scipy's optimisers are imported only when something is fitted, not to read a cached result.
    from magdash.behaviour.behaviour_result import fit_behaviour

    return fit_behaviour(trials, params, model=model, comparisons=comparisons)


def behaviour(
    store,
    model: str,
    comparisons: str | None = None,
    params: BehaviourParams | None = None,
    *,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> BehaviourResult:
    """The behaviour of ``model``'s stored trials on ``comparisons``, cached in the store.

    Args:
        store: the :class:`~magdash.store.Store` holding the trials.
        model: the model's name in the store.
        comparisons: the comparison set; None takes the model's only one.
        params: the fits' choices (defaults when None).
        use_cache: False recomputes and replaces the cached result.
        progress: accepted as every kind's run does (the fits report nothing partial).

    Raises:
        AnalysisError: a model without trials, or with several sets and none named.
    """
    name = only_trial_set(store, model, comparisons)
    return behaviour_of_trials(StoredTrials(store, model, name), params, use_cache=use_cache, progress=progress)


def cached_behaviour(store, model: str, comparisons: str, params: BehaviourParams | None = None
                     ) -> BehaviourResult | None:
    """The behaviour of ``model`` on ``comparisons`` if it is cached (never computed): what a report
    shows without making its reader wait for the fits.

    Args:
        store: the :class:`~magdash.store.Store` to look in.
        model: the model's name.
        comparisons: the comparison set's name.
        params: the fits' choices (defaults when None).
    """
    if comparisons not in trial_sets_of(store, model):
        return None
    trials = store.trials(model, comparisons)
    return lookup(store, BEHAVIOUR, behaviour_key(model, comparisons, trials, params or BehaviourParams()))


def behaviour_with_control(store, model: str, comparisons: str, params: BehaviourParams | None = None
                           ) -> tuple[BehaviourResult, BehaviourResult | None, pd.DataFrame | None]:
    """The behaviour of ``model`` and, when its ``@random`` control has trials on the same set, the
    control's and their difference (model minus control: :func:`~magdash.behaviour.behaviour_result.compare_behaviour`).

    Args:
        store: the :class:`~magdash.store.Store`.
        model: the model's name.
        comparisons: the comparison set's name.
        params: the fits' choices (defaults when None).
    """
    from magdash.behaviour.behaviour_result import compare_behaviour

    result = behaviour(store, model, comparisons, params)
    control = control_name(model)
    if control == model or comparisons not in trial_sets_of(store, control):
        return result, None, None
    controlled = behaviour(store, control, comparisons, params)
    return result, controlled, compare_behaviour(result, controlled)


def import_trials(store, path: str | os.PathLike[str], name: str, comparisons: str | None = None) -> int:
    """Store the trials of a published trial file (the fields of the paper's
    ``paradigm_b_raw.json``: :func:`magdash.behaviour.published.read_published_trials`) as model
    ``name``'s; returns how many were new (an import repeated stores nothing).

    Args:
        store: the :class:`~magdash.store.Store` to write to.
        path: the trial file.
        name: the model's name in the store (the paper's model, say ``llama3-8b-instruct``).
        comparisons: the comparison set's name (default: ``imported-<file stem>``).
    """
    from magdash.behaviour.published import read_published_trials

    if not isinstance(name, str) or not name.strip():
        raise AnalysisError("imported trials need a model name: give name=", parameters=("name",))
    store.check_writable()
    trials = read_published_trials(Path(path))
    set_name = comparisons or f"imported-{Path(path).stem}".replace("_", "-")
    added = store.put_trials(name, set_name, trials)
    skipped = trials.attrs.get("skipped_tasks")
    if skipped:
        log.info("left out tasks that are not A/B choices: %s", ", ".join(map(str, skipped)))
    return added


def describe_behaviour(result: BehaviourResult) -> str:
    """A sweep summary's line: the median Weber fraction (choice, magdash conventions) over the
    references where one is defined.

    Args:
        result: the model's behaviour.
    """
    fractions = result.weber_fractions()["weber_fraction"].dropna()
    if fractions.empty:
        return "no Weber fraction defined (chance or thresholds outside the tested ratios)"
    return (f"median Weber fraction {format_number(float(fractions.median()), '.3f')} over {len(fractions)} "
            "reference(s)")


SWEEP_TASK = "behave"
"""The sweep's task of the behaviour kind, and the name of the plan's table of its parameters."""


def sweep_done(context) -> bool:
    """Whether a sweep cell's behaviour is stored: every trial of the paper's design
    (:func:`~magdash.comparison_stimuli.paper_comparisons`) for the cell's model, and their fits
    with the plan's ``[behave]`` parameters cached.

    Args:
        context: the cell's :class:`magdash.sweep.tasks.TaskContext` (its store, cell and plan).
    """
    from magdash.comparison_stimuli import paper_comparisons

    store, name, comparisons = context.store, context.cell.store_name, paper_comparisons()
    if store.missing_trials(name, comparisons):
        return False
    key = behaviour_key(name, comparisons.name, store.trials(name, comparisons.name), context.plan.params_for(SWEEP_TASK))
    return store.get_result(key) is not None


def sweep_run(context) -> BehaviourResult:
    """A sweep cell's behaviour: the paper's comparisons run on the cell's model (the trials stored
    are skipped, :func:`magdash.trial_extraction.run_trials`) with the plan's device, batch size and the
    cell's dtype, then fitted with the plan's ``[behave]`` parameters.

    Args:
        context: the cell's :class:`magdash.sweep.tasks.TaskContext`.
    """
    from magdash.comparison_stimuli import paper_comparisons
    from magdash.extract_params import ExtractParams
    from magdash.trial_extraction import run_trials

    cell, plan, comparisons = context.cell, context.plan, paper_comparisons()
    params = ExtractParams(dtype=cell.dtype, device=plan.device, device_map=cell.model.device_map,
                           batch_size=plan.batch_size, trust_remote_code=cell.model.trust_remote_code,
                           allow_pickle=cell.model.allow_pickle, model_cache=plan.model_cache)
    run_trials(cell.model.spec, comparisons, context.store, params, name=cell.store_name)
    return behaviour(context.store, cell.store_name, comparisons.name, plan.params_for(SWEEP_TASK))


def comparisons_to_run(store, name: str, comparisons) -> tuple[ComparisonSet | None, str]:
    """The design whose trials a behaviour run makes sure are stored, and the set's name: a
    :class:`~magdash.comparison_stimuli.ComparisonSet` as given; a stored set's name (its design, or
    None for imported trials, which are only fitted); None: the set the model already has trials on
    when it has exactly one, else the paper's design (:func:`~magdash.comparison_stimuli.paper_comparisons`).

    Args:
        store: the :class:`~magdash.store.Store`.
        name: the model's name in the store.
        comparisons: a design, a stored set's name, or None.
    """
    from magdash.comparison_stimuli import paper_comparisons

    if isinstance(comparisons, ComparisonSet):
        return comparisons, comparisons.name
    if comparisons is None:
        held = trial_sets_of(store, name)
        if len(held) != 1:
            design = paper_comparisons()
            return design, design.name
        comparisons = held[0]
    if not isinstance(comparisons, str):
        raise AnalysisError(f"comparisons must be a ComparisonSet or a stored set's name, got "
                            f"{type(comparisons).__name__}", parameters=("comparisons",))
    if comparisons not in set(store.comparison_sets()["name"]):
        raise AnalysisError(f"no comparison set {comparisons!r} in this store: give a ComparisonSet "
                            "(md.ComparisonSet(...), md.paper_comparisons()) or a stored set's name",
                            parameters=("comparisons",))
    return store.comparison_set(comparisons), comparisons


def behave(
    store,
    model: str | LoadedModel,
    comparisons=None,
    params: BehaviourParams | None = None,
    *,
    extract_params=None,
    name: str | None = None,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> BehaviourResult:
    """A model's comparisons run where not stored yet (:func:`magdash.trial_extraction.run_trials`:
    nothing is loaded when every trial is stored) and fitted (:func:`behaviour`), cached in the store.

    Args:
        store: the :class:`~magdash.store.Store`.
        model: a model spec (:mod:`magdash.sources`; ``@random`` controls included), the stored name of
            imported trials, or a model loaded with its head (:func:`magdash.trial_extraction.load_for_trials`).
        comparisons: the design (:func:`comparisons_to_run`).
        params: the fits' choices.
        extract_params: how the model is loaded and run (:class:`~magdash.extract_params.ExtractParams`).
        name: the model's name in the store (default: the spec, with a non-default dtype appended).
        use_cache: False refits and replaces the cached fits (stored trials are never run again).
        progress: called as ``progress(done, total)`` trials.
    """
    from magdash.extract_params import ExtractParams
    from magdash.names import default_name
    from magdash.trial_extraction import run_trials

    extract_params = extract_params or ExtractParams()
    if isinstance(model, str):
        stored_name = name or default_name(model, extract_params.dtype)
    else:
        stored_name = name or default_name(model.source.spec, model.dtype)
    design, set_name = comparisons_to_run(store, stored_name, comparisons)
    # Every trial stored: fitted without resolving the spec, so the stored name alone will do.
    if design is not None and store.missing_trials(stored_name, design):
        run = run_trials(model, design, store, extract_params, name=stored_name, progress=progress)
        stored_name = run.model
    return behaviour(store, stored_name, set_name, params, use_cache=use_cache)


def representation_measures(store, model: str, references, stimuli: str | None = None) -> pd.DataFrame | None:
    """The representation of ``model``'s numbers at each reference, from its stored vectors: ``cv``,
    CV(n) = V(n)/||m(n)|| averaged over the analysis' core layers (the analysis computed or read from the
    cache, default parameters), and ``decoded_wf``, the log-probe's decoded SD(n-hat)/n at its best layer
    when the probes are cached (never computed here). One row per reference among the stimuli's magnitudes;
    None when the model has no vectors in the store (imported trials, a model measured but not extracted).
    Alpha is one number per layer, not per reference, so it is not among them.

    Args:
        store: the :class:`~magdash.store.Store`.
        model: the model's name (its trials' and its vectors').
        references: the behaviour's references.
        stimuli: the stimulus set of the vectors (default: the model's only complete one).
    """
    import numpy as np

    from magdash.runs.analysis_runs import analyze
    from magdash.runs.probe_runs import cached_probe

    if model not in store.model_names():
        return None
    sets = store.stimulus_sets_for(model)
    if not sets or (stimuli is not None and stimuli not in sets):
        return None
    analysis = analyze(store, model, stimuli or (sets[0] if len(sets) == 1 else None))
    magnitudes = np.asarray(analysis.magnitudes, dtype=np.float64)
    cv = np.asarray(analysis.values["cv"], dtype=np.float64)[analysis.core_layers]
    probes = cached_probe(store, model, analysis.stimuli)
    decoded = None
    if probes is not None and "log" in probes.params.targets:
        best, _ = probes.best_and_band("log")
        if best is not None:
            rows = probes.decoded[(probes.decoded["layer"] == best) & (probes.decoded["target"] == "log")]
            decoded = dict(zip(rows["magnitude"].astype(float), rows["weber_fraction"].astype(float), strict=True))
    found = []
    for reference in sorted({float(value) for value in references}):
        where = np.flatnonzero(np.isclose(magnitudes, reference))
        if where.size:
            found.append({"reference": reference, "cv": float(np.nanmean(cv[:, where[0]])),
                          "decoded_wf": (decoded or {}).get(reference, float("nan"))})
    return pd.DataFrame(found, columns=["reference", "cv", "decoded_wf"])


def behaviour_beside_representation(store, result: BehaviourResult, stimuli: str | None = None) -> pd.DataFrame | None:
    """The correlation across references of the behavioural Weber fraction (choice, magdash conventions)
    with each representational measure of :func:`representation_measures`, per task, with the number of
    references it rests on and the sentence when that many cannot reach significance
    (:func:`magdash.behaviour.weber_law.behaviour_vs_representation`); None without stored vectors.

    Args:
        store: the :class:`~magdash.store.Store`.
        result: the model's behaviour.
        stimuli: the stimulus set of the vectors (default: the model's only complete one).
    """
    from magdash.behaviour.weber_law import behaviour_vs_representation

    measures = representation_measures(store, result.model, result.cells["reference"], stimuli)
    if measures is None:
        return None
    fits = result.weber_fractions()
    frames = []
    for task, task_fits in fits.groupby("task", sort=False):
        table = behaviour_vs_representation(task_fits.loc[:, ["reference", "weber_fraction"]].reset_index(drop=True), measures)
        table.insert(0, "task", task)
        frames.append(table)
    return pd.concat(frames, ignore_index=True) if frames else None
