"""The view: what the user is looking at, kept in the URL and repaired against the store.

:class:`ViewState` holds the global choices (store, model, stimulus set, measure, core band,
statistical conventions) and the page choices worth bookmarking (layer, second model, bootstrap size), read from and
written to the URL query string (:func:`view_from_query`, :func:`view_to_query`) and repaired
against what the store holds (:func:`reconcile_view`). The analysis and phase parameters of a
view are built here, from the same params dataclasses as the CLI's.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from magdash.dashboard.inventory import StoreInventory
from magdash.errors import MagdashError
from magdash.names import control_name
from magdash.params import DEFAULT_N_BOOT, parse_band
from magdash.phase.phase_params import PhaseParams
from magdash.stimuli import default_stimulus_set
from magdash.store import ModelRecord, default_store_path
from magdash.variability.analysis_params import AnalysisParams, default_core_layers
from magdash.variability.conventions import CONVENTION_NAMES, MAGDASH
from magdash.variability.measures import BROWSABLE_MEASURES, DEFAULT_MEASURE, MIN_CARRIERS, PRIMARY_MEASURES

MEASURE_CHOICES = BROWSABLE_MEASURES
"""Measures offered in the sidebar: the paper's three plus its two secondary ones."""

QUERY_KEYS = ("store", "model", "stimuli", "measure", "core", "layer", "vs", "boot", "conv", "leave")

CONVENTION_LABELS = {"magdash": "magdash", "paper": "the paper's script"}
"""How the sidebar names each set of statistical conventions."""


@dataclass(frozen=True)
class WholeNumberRange:
    """The whole numbers a choice may take: its widget's ``min_value`` and ``max_value`` and the
    bounds the URL parser clamps to, so a link cannot ask for what the widget refuses."""

    low: int
    high: int

    def clamp(self, value: int) -> int:
        """``value`` moved into the range."""
        return min(max(value, self.low), self.high)


N_BOOT_RANGE = WholeNumberRange(0, 100_000)
"""Bootstrap resamples (``?boot=``): 0 skips the intervals; at most ten times the paper's 10,000."""

ECHO_LIMIT = 80
"""The most characters of a link's value a note repeats (a value can be megabytes long)."""


def cut(value: object) -> str:
    """``str(value)`` cut to :data:`ECHO_LIMIT` characters, as a note repeats a link's value."""
    text = str(value)
    return text if len(text) <= ECHO_LIMIT else text[: ECHO_LIMIT - 3] + "..."


def echo(value: object) -> str:
    """A text value from a link as a note quotes it: the ``repr`` of :func:`cut`."""
    return repr(cut(value))


@dataclass(frozen=True)
class ViewState:
    """What the user is looking at. ``None`` means "the default for this model/store".

    ``core`` is an inclusive layer band (first, last) and only set when it differs from the
    model's default band floor(L/2) .. L-1; ``other`` is the second model of Compare;
    ``conventions`` magdash's statistical conventions or the paper's
    (:mod:`magdash.variability.conventions`); ``exclude`` the carriers (indices into the
    stimulus set's) the analyses leave out, as ``analyze --exclude-carrier`` does.
    """

    store: str
    model: str | None = None
    stimuli: str | None = None
    measure: str = DEFAULT_MEASURE
    core: tuple[int, int] | None = None
    layer: int | None = None
    other: str | None = None
    n_boot: int = DEFAULT_N_BOOT
    conventions: str = MAGDASH
    exclude: tuple[int, ...] = ()


_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|<>~$:])")


def escape_markdown(text: str) -> str:
    """``text`` shown literally by a Markdown renderer (names, paths, messages from user input).

    Streamlit never renders HTML here, but Markdown would still turn ``[x](url)`` into a link
    or ``![x](url)`` into an image fetch; a backslash before every special character prevents it.
    """
    return _MARKDOWN_SPECIAL.sub(r"\\\1", str(text))


def default_store() -> str:
    return str(default_store_path())


def _first(value: str | Sequence[str] | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return value[-1] if len(value) else None


def view_from_query(query: Mapping[str, str | Sequence[str]], store: str | None = None) -> tuple[ViewState, list[str]]:
    """A view from URL query parameters, and a message for every value that had to be ignored."""
    notes: list[str] = []
    values = {key: _first(query.get(key)) for key in QUERY_KEYS}
    view = ViewState(store=(values["store"] or "").strip() or store or default_store())
    changes: dict[str, Any] = {}
    for key in ("model", "stimuli"):
        if values[key]:
            changes[key] = values[key]
    if values["vs"]:
        changes["other"] = values["vs"]
    if values["measure"]:
        if values["measure"] in MEASURE_CHOICES:
            changes["measure"] = values["measure"]
        else:
            notes.append(
                f"measure {echo(values['measure'])} in the link is unknown; showing "
                f"{view.measure} (choose from {', '.join(MEASURE_CHOICES)})"
            )
    if values["core"]:
        try:
            changes["core"] = parse_band(values["core"])
        except MagdashError as error:
            # A reversed band (9-1) is FIRST-LAST backwards: say so rather than "not FIRST-LAST".
            problem = str(error).split(": ", 1)[1] if "run backwards" in str(error) else "is not FIRST-LAST"
            reason = f"runs backwards ({problem})" if "run backwards" in str(error) else problem
            notes.append(f"core band {echo(values['core'])} in the link {reason}; using the default band")
    if values["layer"]:
        if (layer := _non_negative_int(values["layer"])) is None:
            notes.append(f"layer {echo(values['layer'])} in the link is not a layer index; using the default layer")
        else:
            changes["layer"] = layer
    if values["boot"]:
        n_boot, note = _whole_number(values["boot"], N_BOOT_RANGE, "bootstrap size", DEFAULT_N_BOOT)
        changes["n_boot"] = n_boot
        notes += [note] if note else []
    if values["conv"]:
        if values["conv"] in CONVENTION_NAMES:
            changes["conventions"] = values["conv"]
        else:
            notes.append(
                f"conventions {echo(values['conv'])} in the link are unknown; showing magdash's "
                f"(choose from {', '.join(CONVENTION_NAMES)})"
            )
    if values["leave"]:
        parts = [_non_negative_int(part) for part in values["leave"].split(",")]
        if None in parts:
            notes.append(f"carriers to leave out {echo(values['leave'])} in the link are not carrier numbers "
                         "(0, 1, ... separated by commas); leaving none out")
        else:
            changes["exclude"] = tuple(sorted(set(parts)))
    return dataclasses.replace(view, **changes), notes


def _whole_number(text: str, bounds: WholeNumberRange, what: str, default: int) -> tuple[int, str | None]:
    """A whole number from a link, clamped to its widget's ``bounds``, and the note to show
    where it was not one or was out of range (None where it was used as given)."""
    try:
        number = int(text)
    except ValueError:  # also a number of more than 4,300 digits (Python's guard)
        return default, f"{what} {echo(text)} in the link is not a whole number; using {default:,}"
    clamped = bounds.clamp(number)
    if clamped == number:
        return number, None
    side = "below" if number < bounds.low else "above"
    return clamped, (f"{what} {echo(text)} in the link is {side} what the sidebar allows "
                     f"({bounds.low:,} to {bounds.high:,}); using {clamped:,}")


def _non_negative_int(text: str) -> int | None:
    try:
        number = int(text)
    except ValueError:
        return None
    return number if number >= 0 else None


def view_to_query(view: ViewState, store: str | None = None) -> dict[str, str]:
    """The query string of a view: only what differs from the defaults."""
    query: dict[str, str] = {}
    if view.store != (store or default_store()):
        query["store"] = view.store
    if view.model:
        query["model"] = view.model
    if view.stimuli:
        query["stimuli"] = view.stimuli
    if view.measure != DEFAULT_MEASURE:
        query["measure"] = view.measure
    if view.core is not None:
        query["core"] = f"{view.core[0]}-{view.core[1]}"
    if view.layer is not None:
        query["layer"] = str(view.layer)
    if view.other:
        query["vs"] = view.other
    if view.n_boot != DEFAULT_N_BOOT:
        query["boot"] = str(view.n_boot)
    if view.conventions != MAGDASH:
        query["conv"] = view.conventions
    if view.exclude:
        query["leave"] = ",".join(map(str, view.exclude))
    return query


def reconcile_view(view: ViewState, inventory: StoreInventory) -> tuple[ViewState, list[str]]:
    """Repair a view against what the store holds; one message per choice that had to change."""
    notes: list[str] = []
    usable = inventory.usable_models
    if not usable:
        return dataclasses.replace(view, model=None, stimuli=None, core=None, layer=None, other=None), notes
    model = view.model
    if model not in usable:
        if model:
            notes.append(f"model {echo(model)} is not (completely) in this store; showing {usable[0]!r}")
        model = usable[0]
    sets = inventory.complete_sets[model]
    stimuli = view.stimuli
    if stimuli not in sets:
        if stimuli:
            notes.append(f"{model!r} has no complete stimulus set {echo(stimuli)}; showing {_preferred_set(sets)!r}")
        stimuli = _preferred_set(sets)
    record = inventory.record(model)
    core = view.core
    if core is not None:
        if core[1] >= record.n_layers or core[0] > core[1]:
            notes.append(f"core band {cut(f'{core[0]}-{core[1]}')} does not fit {model!r} (layers 0..{record.n_layers - 1}); using its default band")
            core = None
        elif list(range(core[0], core[1] + 1)) == default_core_layers(record.n_blocks):
            core = None
    layer = view.layer
    if layer is not None and layer >= record.n_layers:
        notes.append(f"layer {cut(layer)} does not exist in {model!r}; showing the default layer")
        layer = None
    other = view.other
    partners = [name for name in inventory.models_sharing(stimuli) if name != model]
    if other not in partners:
        if other:
            notes.append(f"{echo(other)} cannot be compared with {model!r} on {stimuli!r}; choose another model")
        control = control_name(model)
        other = control if control in partners else (partners[0] if partners else None)
    exclude = view.exclude
    carriers = inventory.carriers.get(stimuli, ())
    if exclude and (max(exclude) >= len(carriers) or len(carriers) - len(exclude) < MIN_CARRIERS):
        notes.append(f"carriers {cut(', '.join(map(str, exclude)))} cannot be left out of {stimuli!r} (carriers 0 to "
                     f"{len(carriers) - 1}; V needs at least {MIN_CARRIERS} of them); leaving none out")
        exclude = ()
    return dataclasses.replace(view, model=model, stimuli=stimuli, core=core, layer=layer, other=other,
                               exclude=exclude), notes


def carriers_to_leave_out(n_carriers: int) -> bool:
    """Whether a stimulus set of ``n_carriers`` has any carrier to spare: the sidebar offers to leave
    carriers out only then (an analysis keeps :data:`~magdash.variability.measures.MIN_CARRIERS`)."""
    return n_carriers > MIN_CARRIERS


def exclude_refusal(n_carriers: int, exclude: Sequence[int]) -> str | None:
    """Why leaving ``exclude`` out of a set of ``n_carriers`` carriers cannot be done (None: it can):
    an analysis needs :data:`~magdash.variability.measures.MIN_CARRIERS` of them to remain.

    Args:
        n_carriers: the stimulus set's carriers.
        exclude: the carriers chosen to be left out.
    """
    remaining = n_carriers - len(set(exclude))
    if remaining >= MIN_CARRIERS:
        return None
    return (f"Leaving out {len(set(exclude))} of the {n_carriers} carriers would leave {remaining}: V is a spread "
            f"across carrier sentences, so at least {MIN_CARRIERS} must remain (leave out at most "
            f"{n_carriers - MIN_CARRIERS}). Nothing was left out.")


def _preferred_set(sets: Sequence[str]) -> str:
    """The set shown first: the library's default set (:func:`default_stimulus_set`), else, where
    the model holds several others, the first (the sidebar offers the rest)."""
    return default_stimulus_set(sets) or sets[0]


def core_band(view: ViewState, record: ModelRecord) -> tuple[int, int]:
    """The inclusive core band shown for a model: the view's choice, else the default."""
    if view.core is not None:
        return view.core
    default = default_core_layers(record.n_blocks)
    return default[0], default[-1]


def phase_params(view: ViewState) -> PhaseParams:
    """The phase parameters of a view: the sidebar's bootstrap size, the rest as in the CLI."""
    return PhaseParams(n_boot=view.n_boot)


def analysis_params(view: ViewState) -> AnalysisParams:
    """The analysis parameters of a view; the default band is passed as None to share caches."""
    measures = PRIMARY_MEASURES if view.measure in PRIMARY_MEASURES else (*PRIMARY_MEASURES, view.measure)
    core = None if view.core is None else tuple(range(view.core[0], view.core[1] + 1))
    return AnalysisParams(
        measures=measures,
        core_layers=core,
        n_boot=view.n_boot,
        conventions=view.conventions,  # bootstrap CIs on the core layers: the CLI's and the API's default
        exclude_carriers=view.exclude,
    )


def default_layer(view: ViewState, record: ModelRecord) -> int:
    """The layer shown when none is chosen: the middle of the core band."""
    if view.layer is not None and view.layer < record.n_layers:
        return view.layer
    first, last = core_band(view, record)
    return (first + last) // 2


def layer_options(record: ModelRecord) -> list[str]:
    """Readable layer choices: ``"3 · block 3"``; the index comes first so it parses back."""
    return [f"{index} · {label}" for index, label in enumerate(record.layer_labels)]


def layer_from_option(option: str) -> int:
    return int(option.split("·", 1)[0].strip())
