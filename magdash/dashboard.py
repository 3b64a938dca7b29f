"""Pure helpers behind the Streamlit pages: view state, store inventory, cache keys.

The dashboard (``app.py`` and ``pages/``) keeps widgets and layout only; everything it decides
lives here, free of Streamlit, so it can be tested directly:

- :class:`ViewState`: the global choices (store, model, stimulus set, measure, core band,
  statistical conventions) and
  the page choices worth bookmarking (layer, second model, bootstrap size), read from and
  written to the URL query string (:func:`view_from_query`, :func:`view_to_query`) and
  repaired against what the store holds (:func:`reconcile_view`);
- :class:`StoreInventory`: what a store holds, read once per change of the store file, with a
  data token per (model, stimulus set) that changes only when the vectors behind it change,
  so cached analyses survive unrelated writes (such as the analysis cache itself);
- :class:`AnalysisKey` and :class:`LayerKey`: cheap, hashable names of what a figure is drawn
  from, so the page caches key on them rather than on results.

Jobs live in :mod:`magdash.dashboard_jobs`, stimuli input in :mod:`magdash.dashboard_stimuli`,
figures and tables in :mod:`magdash.dashboard_figures`.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from magdash.analysis import PRIMARY_MEASURES, AnalysisParams
from magdash.conventions import CONVENTION_NAMES, MAGDASH
from magdash.errors import MagdashError
from magdash.fits import DEFAULT_N_BOOT
from magdash.hypotheses import default_core_layers
from magdash.overflow import nonfinite_warning
from magdash.stimuli import PAPER_SET_NAME
from magdash.store import ModelRecord, Store, default_store_path, nonfinite_counts_in

# -- pages -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PageSpec:
    """One page of the app: its navigation group, file under ``pages/``, title and URL path."""

    group: str
    file: str
    title: str
    icon: str
    url_path: str


PAGES: tuple[PageSpec, ...] = (
    PageSpec("Data", "pages/home.py", "Home", ":material/home:", "home"),
    PageSpec("Data", "pages/extract.py", "Extract", ":material/download:", "extract"),
    PageSpec("Data", "pages/stimuli.py", "Stimuli", ":material/edit_note:", "stimuli"),
    PageSpec("Noise", "pages/scaling.py", "Scaling", ":material/show_chart:", "scaling"),
    PageSpec("Noise", "pages/weber.py", "Weber", ":material/rule:", "weber"),
    PageSpec("Noise", "pages/frequency.py", "Frequency", ":material/bar_chart:", "frequency"),
    PageSpec("Noise", "pages/compare.py", "Compare", ":material/compare_arrows:", "compare"),
    PageSpec("Geometry", "pages/geometry.py", "Geometry", ":material/scatter_plot:", "geometry"),
    PageSpec("Depth", "pages/depth.py", "Depth", ":material/layers:", "depth"),
)
"""Every page, in navigation order; groups follow Data · Noise · Geometry · Depth."""


def page_groups(pages: Sequence[PageSpec] = PAGES, *, root: str | os.PathLike = ".") -> dict[str, list[PageSpec]]:
    """Pages by group, keeping only those whose file exists under ``root``."""
    groups: dict[str, list[PageSpec]] = {}
    for page in pages:
        if (Path(root) / page.file).is_file():
            groups.setdefault(page.group, []).append(page)
    return groups


SCIENCE_NOTES = Path(__file__).resolve().parent.parent / "docs" / "science.md"


def science_notes() -> str | None:
    """docs/science.md — how every number is computed, the two conventions, the known
    differences from the paper — when the repository is at hand (None for a bare install)."""
    try:
        return SCIENCE_NOTES.read_text(encoding="utf-8")
    except OSError:
        return None


# -- view state --------------------------------------------------------------------------

MEASURE_CHOICES = ("eucl", "residual", "proj", "pairwise", "trace")
"""Measures offered in the sidebar: the paper's three plus its two secondary ones."""

DASHBOARD_BOOTSTRAP_LAYERS = "all"
"""The dashboard bootstraps every layer, so the alpha profile has CI bands at every depth."""

QUERY_KEYS = ("store", "model", "stimuli", "measure", "core", "layer", "vs", "boot", "conv")

CONVENTION_LABELS = {"magdash": "magdash", "paper": "the paper's script"}
"""How the sidebar names each set of statistical conventions."""


@dataclass(frozen=True)
class ViewState:
    """What the user is looking at. ``None`` means "the default for this model/store".

    ``core`` is an inclusive layer band (first, last) and only set when it differs from the
    model's default band floor(L/2) .. L-1; ``other`` is the second model of Compare;
    ``conventions`` magdash's statistical conventions or the paper's (:mod:`magdash.conventions`).
    """

    store: str
    model: str | None = None
    stimuli: str | None = None
    measure: str = "eucl"
    core: tuple[int, int] | None = None
    layer: int | None = None
    other: str | None = None
    n_boot: int = DEFAULT_N_BOOT
    conventions: str = MAGDASH


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


def parse_band(text: str) -> tuple[int, int]:
    """``"3-5"`` -> (3, 5); a single ``"4"`` -> (4, 4). Raises ValueError when unreadable."""
    parts = [p.strip() for p in text.split("-")]
    if len(parts) == 1:
        first = last = int(parts[0])
    elif len(parts) == 2:
        first, last = int(parts[0]), int(parts[1])
    else:
        raise ValueError(text)
    if first < 0 or last < first:
        raise ValueError(text)
    return first, last


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
                f"measure {values['measure']!r} in the link is unknown; showing "
                f"{view.measure} (choose from {', '.join(MEASURE_CHOICES)})"
            )
    if values["core"]:
        try:
            changes["core"] = parse_band(values["core"])
        except ValueError:
            notes.append(f"core band {values['core']!r} in the link is not FIRST-LAST; using the default band")
    if values["layer"]:
        if (layer := _non_negative_int(values["layer"])) is None:
            notes.append(f"layer {values['layer']!r} in the link is not a layer index; using the default layer")
        else:
            changes["layer"] = layer
    if values["boot"]:
        if (n_boot := _non_negative_int(values["boot"])) is None:
            notes.append(f"bootstrap size {values['boot']!r} in the link is not a whole number >= 0; using {DEFAULT_N_BOOT}")
        else:
            changes["n_boot"] = n_boot
    if values["conv"]:
        if values["conv"] in CONVENTION_NAMES:
            changes["conventions"] = values["conv"]
        else:
            notes.append(
                f"conventions {values['conv']!r} in the link are unknown; showing magdash's "
                f"(choose from {', '.join(CONVENTION_NAMES)})"
            )
    return dataclasses.replace(view, **changes), notes


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
    if view.measure != "eucl":
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
    return query


# -- store inventory ---------------------------------------------------------------------


def store_stamp(path: str | os.PathLike) -> tuple[int, int, int, int]:
    """(mtime, size) of the store file and its write-ahead log: changes whenever anything is written.

    Reading a DuckDB file changes neither, so the inventory is re-read only after a write (an
    extraction here or in a CLI, a new frequency source, a cached analysis).
    """
    stamp: list[int] = []
    for candidate in (Path(path), Path(f"{path}.wal")):
        try:
            info = candidate.stat()
            stamp += [info.st_mtime_ns, info.st_size]
        except OSError:
            stamp += [0, -1]
    return tuple(stamp)  # type: ignore[return-value]


@dataclass(frozen=True)
class StoreInventory:
    """What a store holds: models, their complete stimulus sets and extraction progress."""

    path: str
    models: pd.DataFrame
    records: dict[str, ModelRecord]
    complete_sets: dict[str, list[str]]
    progress: pd.DataFrame
    stimulus_sets: list[str]
    nonfinite: pd.DataFrame  # Store.nonfinite_summary()

    @property
    def is_empty(self) -> bool:
        return not self.records

    @property
    def usable_models(self) -> list[str]:
        """Models with at least one completely extracted stimulus set (trained models first)."""
        names = [name for name, sets in self.complete_sets.items() if sets]
        return sorted(names, key=lambda n: (is_control(self.records[n]), n))

    @property
    def incomplete(self) -> pd.DataFrame:
        """(name, set_name, done, total) of extractions that stopped before the end."""
        if self.progress.empty:
            return self.progress
        return self.progress[self.progress["done"] < self.progress["total"]].reset_index(drop=True)

    def record(self, name: str) -> ModelRecord:
        try:
            return self.records[name]
        except KeyError:
            known = ", ".join(self.records) or "none yet"
            raise MagdashError(f"no model named {name!r} in this store (stored: {known})") from None

    def overflow_warning(self, model: str, stimuli: str) -> str | None:
        """The Inf/NaN warning for (model, stimuli), or None when no stored vector is flagged."""
        return nonfinite_warning(model, nonfinite_counts_in(self.nonfinite, model, stimuli))

    def data_token(self, model: str, stimuli: str) -> str:
        """Changes exactly when the vectors of (model, stimuli) can have changed."""
        record = self.record(model)
        rows = self.progress[(self.progress["name"] == model) & (self.progress["set_name"] == stimuli)]
        done = int(rows["done"].iloc[0]) if len(rows) else 0
        return f"{record.model_id}|{stimuli}|{done}"

    def models_sharing(self, stimuli: str) -> list[str]:
        """Usable models that have ``stimuli`` completely extracted."""
        return [name for name in self.usable_models if stimuli in self.complete_sets[name]]


def read_inventory(store: Store) -> StoreInventory:
    """Everything the sidebar and the home page need, in a handful of queries."""
    models = store.list_models()
    records = {name: store.model_record(name) for name in models["name"]}
    complete = {
        name: sorted(s for s in (sets or "").split(", ") if s)
        for name, sets in zip(models["name"], models["stimulus_sets"], strict=True)
    }
    return StoreInventory(
        path=str(store.path),
        models=models,
        records=records,
        complete_sets=complete,
        progress=store.extraction_progress(),
        stimulus_sets=store.stimulus_set_names(),
        nonfinite=store.nonfinite_summary(),
    )


def is_control(record: ModelRecord) -> bool:
    """A random-weight control: extracted with ``@random``, or imported under such a name."""
    return record.is_random or "@random" in record.name


def control_name(model: str) -> str:
    """The ``@random`` architecture-only control of a model name (``minilm`` -> ``minilm@random``)."""
    base = model.split("@random")[0]
    return f"{base}@random"


def reconcile_view(view: ViewState, inventory: StoreInventory) -> tuple[ViewState, list[str]]:
    """Repair a view against what the store holds; one message per choice that had to change."""
    notes: list[str] = []
    usable = inventory.usable_models
    if not usable:
        return dataclasses.replace(view, model=None, stimuli=None, core=None, layer=None, other=None), notes
    model = view.model
    if model not in usable:
        if model:
            notes.append(f"model {model!r} is not (completely) in this store; showing {usable[0]!r}")
        model = usable[0]
    sets = inventory.complete_sets[model]
    stimuli = view.stimuli
    if stimuli not in sets:
        if stimuli:
            notes.append(f"{model!r} has no complete stimulus set {stimuli!r}; showing {_preferred_set(sets)!r}")
        stimuli = _preferred_set(sets)
    record = inventory.record(model)
    core = view.core
    if core is not None:
        if core[1] >= record.n_layers or core[0] > core[1]:
            notes.append(f"core band {core[0]}-{core[1]} does not fit {model!r} (layers 0..{record.n_layers - 1}); using its default band")
            core = None
        elif list(range(core[0], core[1] + 1)) == default_core_layers(record.n_blocks):
            core = None
    layer = view.layer
    if layer is not None and layer >= record.n_layers:
        notes.append(f"layer {layer} does not exist in {model!r}; showing the default layer")
        layer = None
    other = view.other
    partners = [name for name in inventory.models_sharing(stimuli) if name != model]
    if other not in partners:
        if other:
            notes.append(f"{other!r} cannot be compared with {model!r} on {stimuli!r}; choose another model")
        control = control_name(model)
        other = control if control in partners else (partners[0] if partners else None)
    return dataclasses.replace(view, model=model, stimuli=stimuli, core=core, layer=layer, other=other), notes


def _preferred_set(sets: Sequence[str]) -> str:
    return PAPER_SET_NAME if PAPER_SET_NAME in sets else sets[0]


def core_band(view: ViewState, record: ModelRecord) -> tuple[int, int]:
    """The inclusive core band shown for a model: the view's choice, else the default."""
    if view.core is not None:
        return view.core
    default = default_core_layers(record.n_blocks)
    return default[0], default[-1]


def analysis_params(view: ViewState) -> AnalysisParams:
    """The analysis parameters of a view; the default band is passed as None to share caches."""
    measures = PRIMARY_MEASURES if view.measure in PRIMARY_MEASURES else (*PRIMARY_MEASURES, view.measure)
    core = None if view.core is None else tuple(range(view.core[0], view.core[1] + 1))
    return AnalysisParams(
        measures=measures,
        core_layers=core,
        n_boot=view.n_boot,
        bootstrap_layers=DASHBOARD_BOOTSTRAP_LAYERS,
        conventions=view.conventions,
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


def inventory_table(inventory: StoreInventory) -> pd.DataFrame:
    """The home page's model table: one row per stored model with its sets and progress."""
    if inventory.is_empty:
        return pd.DataFrame(columns=["model", "architecture", "blocks", "width", "dtype", "position", "control", "complete sets", "unfinished"])
    rows = []
    for name, record in inventory.records.items():
        unfinished = inventory.incomplete[inventory.incomplete["name"] == name]
        rows.append(
            {
                "model": name,
                "architecture": record.architecture,
                "blocks": record.n_blocks,
                "width": record.hidden_size,
                "dtype": record.dtype,
                "position": record.position,
                "control": "random weights" if is_control(record) else "",
                "complete sets": ", ".join(inventory.complete_sets.get(name, [])),
                "unfinished": ", ".join(f"{r.set_name} ({r.done}/{r.total})" for r in unfinished.itertuples()),
            }
        )
    return pd.DataFrame(rows)


# -- what a figure is drawn from ---------------------------------------------------------


@dataclass(frozen=True)
class AnalysisKey:
    """Identifies one cached analysis: store, model, stimuli, parameters and data token.

    Cheap to hash, so the Streamlit caches key on it instead of on results.
    """

    store: str
    model: str
    stimuli: str
    params: AnalysisParams
    token: str


@dataclass(frozen=True)
class LayerKey:
    """Identifies one layer's stored vectors."""

    store: str
    model: str
    stimuli: str
    layer: int
    token: str


def analysis_key(view: ViewState, inventory: StoreInventory, model: str | None = None) -> AnalysisKey:
    """The analysis of ``model`` (default: the view's) with the view's parameters.

    Another model keeps its own default core band unless it has the view model's depth.
    """
    name = model or view.model
    if name is None or view.stimuli is None:
        raise MagdashError("no model is selected: extract one on the Extract page first")
    record = inventory.record(name)
    own = view
    if name != view.model and view.core is not None and record.n_blocks != inventory.record(view.model).n_blocks:
        own = dataclasses.replace(view, core=None)
    return AnalysisKey(view.store, name, view.stimuli, analysis_params(own), inventory.data_token(name, view.stimuli))


def layer_key(view: ViewState, inventory: StoreInventory, layer: int) -> LayerKey:
    return LayerKey(view.store, view.model, view.stimuli, int(layer), inventory.data_token(view.model, view.stimuli))


def depth_axis(records: Sequence[ModelRecord]) -> str:
    """Plot against layer index when all models have the same depth, else against gamma = l / L."""
    return "layer" if len({r.n_blocks for r in records}) <= 1 else "gamma"


@dataclass(frozen=True)
class ComparisonKey:
    """Identifies one cached comparison of model A (with its core band) against model B."""

    store: str
    model_a: str
    model_b: str
    stimuli: str
    params: AnalysisParams
    token_a: str
    token_b: str


def comparison_key(view: ViewState, inventory: StoreInventory) -> ComparisonKey:
    """The view's model against its second model (``view.other``) on the view's stimuli."""
    if view.model is None or view.other is None or view.stimuli is None:
        raise MagdashError("a comparison needs two models with the same stimulus set: extract a second one")
    return ComparisonKey(
        view.store, view.model, view.other, view.stimuli, analysis_params(view),
        inventory.data_token(view.model, view.stimuli), inventory.data_token(view.other, view.stimuli),
    )


@dataclass(frozen=True)
class SourceKey:
    """Identifies a frequency source; ``stamp`` changes when the store is written."""

    store: str
    name: str
    stamp: tuple


@dataclass(frozen=True)
class PhaseKey:
    """Identifies the depth diagnostics of one model's stored number-token vectors."""

    store: str
    model: str
    stimuli: str
    token: str
    n_boot: int


TRAINED_SERIES = "trained"
CONTROL_SERIES = "random control"


def phase_keys(view: ViewState, inventory: StoreInventory) -> dict[str, PhaseKey]:
    """The view's model ("trained") and, when stored on the same stimuli, its @random control."""
    from magdash.phase_run import control_name as phase_control

    if view.model is None or view.stimuli is None:
        raise MagdashError("no model is selected: extract one on the Extract page first")

    def key(name: str) -> PhaseKey:
        return PhaseKey(view.store, name, view.stimuli, inventory.data_token(name, view.stimuli), view.n_boot)

    keys = {TRAINED_SERIES: key(view.model)}
    control = phase_control(view.model)
    if control != view.model and control in inventory.models_sharing(view.stimuli):
        keys[CONTROL_SERIES] = key(control)
    return keys
