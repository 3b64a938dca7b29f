"""The Behaviour page's logic, free of Streamlit: which models have comparison trials, the key of a
cached behaviour result, what the page says where there are none, the tasks of a result, and the
analysis of the same model's vectors to set beside its behaviour.

The figures and the sentences beside them (trials not measured, position bias, thresholds beyond
the tested ratios) are :mod:`magdash.presentation.behaviour_figures`', which the report shares; the results are the fits of
:mod:`magdash.behaviour`, cached in the store, so ``magdash behave`` with the same parameters and the
page share one result.
"""

from __future__ import annotations

from dataclasses import dataclass

from magdash.behaviour.behaviour_params import BehaviourParams
from magdash.dashboard.inventory import StoreInventory, TrialSet
from magdash.dashboard.keys import AnalysisKey, analysis_key
from magdash.dashboard.view import ViewState
from magdash.presentation.behaviour_figures import CONVENTION_LABELS, VARIANT_LABELS, BehaviourFrames
from magdash.variability.conventions import MAGDASH, PAPER

NO_TRIALS = ("Nothing to show yet: the Behaviour page needs a model's number comparisons (forced-choice "
             "trials such as \"Which is larger: A) 47 or B) 52?\"), and {where}. Run `magdash behave --model MODEL` "
             "(or `md.behave(...)` in Python) to measure a model, or `magdash behave --import FILE --name NAME` "
             "to read a published trial file.")
"""What the page says where the store holds no trials; ``{where}`` names the store."""


@dataclass(frozen=True)
class BehaviourKey:
    """Identifies the behaviour result of one model's trials: store, model, comparison set, the
    number of trials (it changes when trials are added, as a resumed run adds them) and the fits'
    parameters (the sidebar's bootstrap size; every other as in ``magdash behave``)."""

    store: str
    model: str
    comparisons: str
    trials: int
    params: BehaviourParams


def trial_sets(inventory: StoreInventory) -> tuple[TrialSet, ...]:
    """The (model, comparison set) pairs of the store that have trials, trained models first."""
    return tuple(sorted(inventory.trial_sets, key=lambda found: ("@random" in found.model, found.model,
                                                                 found.comparisons)))


def behaviour_key(store: str, chosen: TrialSet, n_boot: int, conventions: str = MAGDASH) -> BehaviourKey:
    """The key of the cached behaviour result of ``chosen``'s trials: magdash's conventions, and the paper's
    beside them where the page shows the paper's (its bootstrap refits each resample by Nelder-Mead, so it
    is fitted only when asked for).

    Args:
        store: the store's path.
        chosen: the model and comparison set shown.
        n_boot: the bootstrap resamples of the fits' intervals.
        conventions: the conventions shown (:data:`~magdash.variability.conventions.CONVENTION_NAMES`).
    """
    fitted = (MAGDASH,) if conventions == MAGDASH else (MAGDASH, PAPER)
    return BehaviourKey(store, chosen.model, chosen.comparisons, chosen.trials,
                        BehaviourParams(n_boot=n_boot, conventions=fitted))


def trial_set_label(found: TrialSet) -> str:
    """How the page's picker shows a model's trials: "model · comparison set (N trials)"."""
    return f"{found.model} · {found.comparisons} ({found.trials:,} trials)"


def no_trials_message(store: str, exists: bool) -> str:
    """What the page says where there are no trials, naming the store and what to run.

    Args:
        store: the store's path.
        exists: whether a store is at that path.
    """
    where = f"the store at {store} holds none" if exists else f"there is no store at {store} yet"
    return NO_TRIALS.format(where=where)


def tasks(result: BehaviourFrames) -> list[str]:
    """The tasks (prompt templates) of a result, in the order of its cells."""
    return list(dict.fromkeys(str(task) for task in result.cells["task"]))


def fitted(result: BehaviourFrames, column: str) -> list[str]:
    """The variants (``column="variant"``) or conventions (``"conventions"``) the result's fits hold,
    in the order of the figures' labels: what the page's radios offer."""
    held = set(result.fits[column].astype(str))
    labels = VARIANT_LABELS if column == "variant" else CONVENTION_LABELS
    return [name for name in labels if name in held]


def representation_key(view: ViewState, inventory: StoreInventory, model: str) -> AnalysisKey | None:
    """The analysis of ``model``'s vectors on the view's stimuli, with the view's parameters, to set its
    representation beside its behaviour; None where those vectors are not stored (imported trials,
    a model measured but not extracted).

    Args:
        view: the sidebar's view (its stimuli and analysis parameters).
        inventory: what the store holds.
        model: the model whose trials are shown.
    """
    if view.stimuli is None or view.stimuli not in inventory.complete_sets.get(model, []):
        return None
    return analysis_key(view, inventory, model)
