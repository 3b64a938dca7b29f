"""The probes (:mod:`magdash.probes`) of a stored model, cached in the store, beside its ``@random`` control's.

:func:`probe` reads a model's stored vectors one layer at a time into
:func:`magdash.probes.probe.run_probes` (memory stays at one layer) and keeps the
:class:`~magdash.probes.result.ProbeResult` under a key hashing the model, the stimuli, their
data fingerprint, whether the items' token facts are recorded (they refine the baseline's strata:
:func:`baseline_strata`), every :class:`~magdash.probes.probe_params.ProbeParams` field and
:data:`~magdash.probes.result.PROBE_VERSION`, with its metric rows (``probes``, ``probe_scores``,
...: :func:`magdash.runs.rows.probe_rows`). :func:`probe_with_control` adds the same probes of the
model's ``@random`` control when it is stored on the same stimuli, and
:func:`~magdash.probes.result.compare_probes` of the two.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from magdash.names import control_name
from magdash.params import ProgressCallback
from magdash.probes.baseline import Strata, magnitude_strata
from magdash.probes.probe_params import ProbeParams
from magdash.probes.result import PROBE_VERSION, ProbeResult, compare_probes, compare_scaling
from magdash.runs import rows
from magdash.runs.cache import CachedKind, cached_result, lookup, result_key
from magdash.store.vectors import VectorSource, labelled_layers
from magdash.tokenization import NumberTokens, per_magnitude

log = logging.getLogger(__name__)

PROBE = CachedKind("probe", ProbeResult.to_payload, ProbeResult.from_payload, rows.probe_rows)

TRAINED_SERIES = "trained"
CONTROL_SERIES = "random control"
"""The names under which :meth:`ProbeRun.series` gives the model's and its control's results (the
figures' series, as on the Depth page)."""


def probe_key(store, model: str, stimuli: str, params: ProbeParams) -> str:
    """The cache key of the probes of ``model`` on ``stimuli`` with ``params``: with the data
    fingerprint and whether the items' token facts are recorded (probes computed before they were
    have strata of digit counts only).

    Args:
        store: the :class:`~magdash.store.Store` holding the model (its data fingerprint enters the key).
        model: the model's name in the store.
        stimuli: the stimulus set.
        params: the probes' choices.
    """
    return result_key("probe", PROBE_VERSION, model=model, stimuli=stimuli,
                      data=store.data_fingerprint(model, stimuli), params=params,
                      tokens=store.has_number_tokens(model, stimuli))


def baseline_strata(number_tokens: list[NumberTokens] | None, magnitudes: np.ndarray) -> Strata:
    """The strata of the probes' baseline: each magnitude's digit count, crossed with its token
    count (agreed over the carriers: :func:`magdash.tokenization.per_magnitude`) where the items'
    token facts are recorded.

    Args:
        number_tokens: the items' token facts (:meth:`magdash.store.Store.number_tokens`); None where not recorded.
        magnitudes: the set's magnitudes, in the order the vectors are read.
    """
    if number_tokens is None:
        return magnitude_strata(magnitudes)
    tokens = {fact.magnitude: fact.n_tokens for fact in per_magnitude(number_tokens)}
    return magnitude_strata(magnitudes, [tokens[int(magnitude)] for magnitude in magnitudes])


def probe(
    store,
    model: str,
    stimuli: str | None = None,
    params: ProbeParams | None = None,
    *,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> ProbeResult:
    """The probes of every layer of ``model`` on ``stimuli``, cached in the store (:func:`probe_vectors`
    of :meth:`Store.vectors <magdash.store.Store.vectors>`).

    Args:
        store: the :class:`~magdash.store.Store` holding the model's vectors.
        model: the model's name in the store.
        stimuli: the stimulus set; None takes the model's only complete one.
        params: the probes' choices (:class:`~magdash.probes.probe_params.ProbeParams`; defaults when None).
        use_cache: False recomputes and replaces the cached result.
        progress: called as ``progress(done_layers, total_layers)`` after each layer is probed
            (only when something is computed).

    Raises:
        AnalysisError: a design the probes cannot use (too few magnitudes or carriers for the
            cross-validation, magnitudes <= 0 for the log target), saying what is needed.
    """
    return probe_vectors(store.vectors(model, stimuli), params, use_cache=use_cache, progress=progress)


def probe_vectors(
    source: VectorSource,
    params: ProbeParams | None = None,
    *,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> ProbeResult:
    """The probes of every layer of a model's vectors, cached in a stored source's store.

    Args:
        source: the model's vectors (:class:`~magdash.store.vectors.VectorSource`).
        params: the probes' choices (:class:`~magdash.probes.probe_params.ProbeParams`; defaults when None).
        use_cache: a stored source only: False recomputes and replaces the cached result.
        progress: called as ``progress(done_layers, total_layers)`` after each layer is probed.

    Raises:
        AnalysisError: a design the probes cannot use, saying what is needed.
    """
    params = params or ProbeParams()

    def compute() -> ProbeResult:
        # The fits (scipy, scikit-learn) are imported only when something is probed, not to read a cached result.
        from magdash.probes.probe import run_probes

        magnitudes = np.asarray(source.magnitudes, dtype=np.float64)
        strata = baseline_strata(source.number_tokens(), magnitudes)
        return run_probes(labelled_layers(source), magnitudes, params, model=source.name, stimuli=source.stimuli_name,
                          n_layers=source.n_layers, progress=progress, strata=strata)

    store = source.store
    if store is None:
        return compute()
    key = probe_key(store, source.name, source.stimuli_name, params)
    return cached_result(store, PROBE, key, compute, use_cache=use_cache)


def cached_probe(store, model: str, stimuli: str, params: ProbeParams | None = None) -> ProbeResult | None:
    """The probes of ``model`` on ``stimuli`` if they are cached (never computed): what a report
    shows without making its reader wait for the probes.

    Args:
        store: the :class:`~magdash.store.Store` to look in.
        model: the model's name in the store.
        stimuli: the stimulus set.
        params: the probes' choices (defaults when None).
    """
    if model not in store.model_names() or stimuli not in store.stimulus_sets_for(model):
        return None
    return lookup(store, PROBE, probe_key(store, model, stimuli, params or ProbeParams()))


def stored_control(store, model: str, stimuli: str) -> str | None:
    """The name of ``model``'s ``@random`` control when it is stored completely on ``stimuli``
    (None otherwise, and for a model that is itself a control).

    Args:
        store: the :class:`~magdash.store.Store` to look in.
        model: the trained model's name.
        stimuli: the stimulus set the control must be complete on.
    """
    name = control_name(model)
    if name == model or name not in store.model_names() or stimuli not in store.stimulus_sets_for(name):
        return None
    return name


@dataclass
class ProbeRun:
    """The probes of a model and, when stored, of its ``@random`` control on the same stimuli.

    Attributes:
        result: the model's probes.
        control: its ``@random`` control's, with the same parameters (None when none is stored).
    """

    result: ProbeResult
    control: ProbeResult | None = None

    @property
    def comparison(self) -> pd.DataFrame | None:
        """The model's held-out scores beside the control's, layer by layer (:func:`compare_probes`)."""
        return None if self.control is None else compare_probes(self.result, self.control)

    @property
    def scaling_comparison(self) -> pd.DataFrame | None:
        """The model's decoded-noise exponent beside the control's, layer by layer (:func:`compare_scaling`)."""
        return None if self.control is None else compare_scaling(self.result, self.control)

    def series(self) -> dict[str, ProbeResult]:
        """The results by series (``trained``, ``random control``), as the figures take them."""
        found = {TRAINED_SERIES: self.result}
        if self.control is not None:
            found[CONTROL_SERIES] = self.control
        return found

    def to_json(self) -> dict[str, Any]:
        """The model's :meth:`ProbeResult.to_json`, with the control's under ``control``, the
        comparison's records under ``comparison`` and the decoded-noise exponents' under
        ``scaling_comparison`` (all null without a control)."""
        comparison, scaling = self.comparison, self.scaling_comparison
        return {**self.result.to_json(),
                "control": None if self.control is None else self.control.to_json(),
                "comparison": None if comparison is None else comparison.to_dict(orient="records"),
                "scaling_comparison": None if scaling is None else scaling.to_dict(orient="records")}


def probe_with_control(
    store,
    model: str,
    stimuli: str | None = None,
    params: ProbeParams | None = None,
    *,
    random_control: bool = True,
    use_cache: bool = True,
    progress: ProgressCallback | None = None,
) -> ProbeRun:
    """The probes of ``model`` (:func:`probe`) and, with ``random_control`` and when it is stored on
    the same stimuli, of its ``@random`` control with the same parameters.

    Args:
        store: the :class:`~magdash.store.Store` holding the model.
        model: the model's name in the store.
        stimuli: the stimulus set; None takes the model's only complete one.
        params: the probes' choices (defaults when None).
        random_control: False leaves the ``@random`` control out.
        use_cache: False recomputes and replaces the cached results.
        progress: called as ``progress(done_layers, total_layers)`` over the model's layers, then
            over the control's.
    """
    params = params or ProbeParams()
    result = probe(store, model, stimuli, params, use_cache=use_cache, progress=progress)
    name = stored_control(store, model, result.stimuli) if random_control else None
    control = None
    if name is not None:
        control = probe(store, name, result.stimuli, params, use_cache=use_cache, progress=progress)
    return ProbeRun(result, control)
