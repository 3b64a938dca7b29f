"""The Steering page's logic, free of Streamlit: the cached steering results a store holds, the key
the page reads one by, what the page says where there is none (what to run first), and the
analysis and probes of the same model to set beside the causal profile.

A steering run loads the model and makes one forward pass per prompt, layer, direction and dose
(about 100 s per layer x direction x dose for the paper's 240 prompts on a laptop's CPU), so the page
never starts one: it shows the results ``magdash steer`` (or ``md.steer``) cached in the store, and
the command that computes one. The figures and sentences are
:mod:`magdash.presentation.steering_figures`', which the report shares.
"""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass

from magdash.dashboard.inventory import SteeringRun, StoreInventory
from magdash.dashboard.keys import AnalysisKey, analysis_key
from magdash.dashboard.probes_page import ProbeKey, probe_params
from magdash.dashboard.view import ViewState
from magdash.params import ranges

SECONDS_PER_PASS = 19
"""About how long one layer x direction x dose takes over the paper's 240 prompts on 2 CPU cores (a
135M-parameter decoder: 78 ms a prompt, ``bench/steer.py``, docs/benchmarks.md): what the page says a run costs."""


@dataclass(frozen=True)
class SteerKey:
    """Identifies one cached steering result: the store and the result's cache key (the page reads
    only what ``magdash steer`` cached, so the key is the one the run wrote), with the names the
    page shows."""

    store: str
    model: str
    stimuli: str
    comparisons: str
    result_key: str


def steering_runs(inventory: StoreInventory) -> tuple[SteeringRun, ...]:
    """The store's cached steering results, trained models first, newest last."""
    return tuple(sorted(inventory.steering_runs, key=lambda run: "@random" in run.model))


def steer_key(store: str, run: SteeringRun) -> SteerKey:
    """The key of the cached steering result ``run``.

    Args:
        store: the store's path.
        run: the cached run shown.
    """
    return SteerKey(store, run.model, run.stimuli, run.comparisons, run.result_key)


def run_label(run: SteeringRun) -> str:
    """How the page's picker shows a run: model, comparison set, direction, operand, layers, prompts."""
    return (f"{run.model} · {run.comparisons} · {run.direction} direction, operand {run.operand} · "
            f"layers {ranges(list(run.layers))} ({run.trials:,} prompts)")


def steer_command(store: str, model: str) -> str:
    """The command that steers ``model``'s stored trials in ``store`` with the paper's defaults."""
    return f"magdash steer --model {shlex.quote(model)} --store {shlex.quote(store)}"


def cost_sentence(n_layers: int, n_trials: int, n_random: int = 10, orthogonal: bool = True,
                  n_doses: int = 4) -> str:
    """About what a run costs on a CPU (:data:`SECONDS_PER_PASS` per layer x direction x dose at 240
    prompts, in proportion to the prompts), and how to make it cheaper.

    Args:
        n_layers: the layers steered.
        n_trials: the prompts.
        n_random: the random directions.
        orthogonal: whether the orthogonal null is steered too.
        n_doses: the doses.
    """
    directions = 1 + n_random * (2 if orthogonal else 1)
    seconds = SECONDS_PER_PASS * n_layers * directions * n_doses * n_trials / 240
    if seconds >= 3600:
        span = f"{seconds / 3600:.1f} hours"
    elif seconds >= 90:
        span = f"{round(seconds / 60)} minutes"
    else:
        span = f"{max(1, round(seconds))} seconds"
    return (f"With the defaults ({n_layers} layers x {directions} directions x {n_doses} doses over {n_trials} "
            f"prompts) that is about {span} on a CPU for a model of 135M parameters (about {SECONDS_PER_PASS} s "
            "per layer x direction x dose for 240 prompts; more for a larger model, far less on a GPU); "
            "a few layers, one dose and two random directions without the orthogonal null are a first look in "
            "minutes (`magdash steer --help`).")


def no_steering_message(inventory: StoreInventory | None, store: str, exists: bool) -> tuple[str, str | None]:
    """What the page says where the store holds no steering result, and the command to run first
    (None where there is nothing to run it on): no store or no trials (``magdash behave``), trials but
    no vectors (``magdash extract``), both (``magdash steer``).

    Args:
        inventory: what the store holds (None where there is no store).
        store: the store's path.
        exists: whether a store is at that path.
    """
    start = ("Nothing to show yet: the Steering page shows a model's choices in number comparisons pushed along "
             "its magnitude direction, layer by layer, against random directions (Cacioli 2026's Paradigm D).")
    if inventory is None or not exists:
        return (f"{start} There is no store at {store} yet: extract a model (Extract page), then run its "
                "comparisons with `magdash behave --model MODEL` and steer them with `magdash steer --model MODEL`.",
                None)
    with_trials = [found.model for found in inventory.trial_sets if "@random" not in found.model]
    if not with_trials:
        return (f"{start} It steers the prompts of a model's comparison trials, and the store at {store} holds "
                "none: run them first (about 2 minutes for a small model on a CPU).",
                f"magdash behave --model MODEL --store {shlex.quote(store)}")
    extracted = [model for model in with_trials if inventory.complete_sets.get(model)]
    if not extracted:
        model = with_trials[0]
        return (f"{start} The direction comes from the model's stored vectors, and {model} has trials but no "
                "vectors in this store: extract it first (Extract page, or the command below).",
                f"magdash extract --model {shlex.quote(model)} --store {shlex.quote(store)}")
    model = extracted[0]
    trials = next(found.trials for found in inventory.trial_sets if found.model == model)
    n_layers = inventory.record(model).n_layers
    return (f"{start} {model} has vectors and {trials:,} comparison trials: steer them with the command below "
            f"(the page shows the results it caches in the store; it never starts a run itself). "
            f"{cost_sentence(n_layers, trials)}", steer_command(store, model))


def _has_vectors(inventory: StoreInventory, run: SteeringRun) -> bool:
    """Whether the run's model has complete vectors on the run's stimuli in the store."""
    return run.stimuli in inventory.complete_sets.get(run.model, [])


def representation_key(view: ViewState, inventory: StoreInventory, run: SteeringRun) -> AnalysisKey | None:
    """The analysis of the run's model on the run's stimuli with the view's parameters (its RSA with the
    log-ratio model per layer); None where those vectors are not stored.

    Args:
        view: the sidebar's view (its analysis parameters).
        inventory: what the store holds.
        run: the steering shown.
    """
    if not _has_vectors(inventory, run):
        return None
    return analysis_key(dataclasses.replace(view, stimuli=run.stimuli), inventory, run.model)


def probe_key(view: ViewState, inventory: StoreInventory, run: SteeringRun) -> ProbeKey | None:
    """The probes of the run's model on its stimuli with the Probes page's parameters; None where those
    vectors are not stored.

    Args:
        view: the sidebar's view (its bootstrap size).
        inventory: what the store holds.
        run: the steering shown.
    """
    if not _has_vectors(inventory, run):
        return None
    return ProbeKey(view.store, run.model, run.stimuli, inventory.data_token(run.model, run.stimuli),
                    probe_params(view))
