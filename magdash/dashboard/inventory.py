"""What a store holds, read once per change of the store file.

A data token per (model, stimulus set) changes only when the vectors behind it change, so
cached analyses survive unrelated writes (such as the analysis cache itself).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from magdash.errors import MagdashError
from magdash.names import model_of_control
from magdash.overflow import nonfinite_warning
from magdash.sources.gguf import quantization
from magdash.store import ModelRecord, Store, nonfinite_counts_in


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
class TrialSet:
    """One model's stored comparison trials (issue 41) on one comparison set, and how many there are:
    what the Behaviour page offers, and the number a cached behaviour result is keyed on."""

    model: str
    comparisons: str
    trials: int


@dataclass(frozen=True)
class SteeringRun:
    """One cached steering result (issue 42), read from its rows in the store's ``steering_layers``
    table: what the Steering page offers, and the cache key it reads the result by."""

    model: str
    stimuli: str
    comparisons: str
    direction: str
    operand: str
    layers: tuple[int, ...]
    trials: int
    result_key: str


RANDOM_WEIGHTS = "random (control)"
"""The weights of an ``@random`` control in the home page's table."""


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
    carriers: dict[str, tuple[str, ...]] = field(default_factory=dict)  # set name -> its carrier templates
    trial_sets: tuple[TrialSet, ...] = ()
    """The models' comparison trials by comparison set (the store's trials table, schema 11); empty
    where the store holds none."""
    steering_runs: tuple[SteeringRun, ...] = ()
    """The cached steering results, oldest first (the store's ``steering_layers`` rows by result)."""

    @property
    def is_empty(self) -> bool:
        return not self.records

    def model_label(self, name: str) -> str:
        """How every model picker shows a stored model: its name, and "(random-weight control)"
        after a control's, the one home of a model's display name.

        Args:
            name: the model's name in the store.
        """
        record = self.records.get(name)
        return f"{name} (random-weight control)" if record is not None and is_control(record) else name

    def control_note(self, model: str, stimuli: str, purpose: str) -> str:
        """What a page says when the view's model has no random-weight control beside it on
        ``stimuli``: extract its control, or, when the model is a control itself (a control of a
        control is no reference), choose its trained model.

        Args:
            model: the view's model.
            stimuli: the view's stimulus set.
            purpose: what the control would show, ending the sentence ("to compare the curves with
                the architecture alone").
        """
        record = self.records.get(model)
        if record is not None and is_control(record):
            trained = model_of_control(model)
            choice = (f"choose {trained} in the sidebar" if trained in self.records else
                      f"extract and choose its trained model, {trained}")
            return f"{model} is itself a random-weight control (the architecture alone): {choice} {purpose}."
        return (f"No random-weight control of {model} is stored on {stimuli!r}: extract it (Extract page, "
                f"'@random control') {purpose}.")

    def second_model_example(self, model: str) -> str:
        """A model to extract beside ``model`` for a comparison: its @random control, or, when it is a
        control itself, its trained model (never a control of a control).

        Args:
            model: the view's model.
        """
        record = self.records.get(model)
        if record is not None and is_control(record):
            return f"its trained model, {model_of_control(model)}"
        return "its @random control"

    @property
    def usable_models(self) -> list[str]:
        """Models with at least one completely extracted stimulus set (trained models first)."""
        names = [name for name, sets in self.complete_sets.items() if sets]
        return sorted(names, key=lambda n: (is_control(self.records[n]), n))

    @property
    def registered(self) -> tuple[str, ...]:
        """Every stored model in the order it was stored: the charts give each model the
        colour of its place here (``chart_style.model_colors``), which a model added later cannot shift."""
        if "created_at" not in self.models or self.models.empty:
            return tuple(self.records)
        ordered = self.models.sort_values(["created_at", "name"], kind="stable")
        return tuple(str(name) for name in ordered["name"])

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
    """Everything the sidebar and the home page need, in a handful of queries on one open file."""
    with store.session():
        models = store.list_models()
        records = {name: store.model_record(name) for name in models["name"]}
        complete = {
            name: sorted(s for s in (sets or "").split(", ") if s)
            for name, sets in zip(models["name"], models["stimulus_sets"], strict=True)
        }
        carriers = store.set_carriers()  # by set name, in name order: the sets' names too
        trial_sets = tuple(TrialSet(str(row["model"]), str(row["set_name"]), int(row["n_trials"]))
                           for row in store.trial_models().to_dict(orient="records"))
        return StoreInventory(
            path=str(store.path),
            models=models,
            records=records,
            complete_sets=complete,
            progress=store.extraction_progress(),
            stimulus_sets=list(carriers),
            nonfinite=store.nonfinite_summary(),
            carriers=carriers,
            trial_sets=trial_sets,
            steering_runs=_steering_runs(store.metric_table("steering_layers")),
        )


def _steering_runs(rows: pd.DataFrame) -> tuple[SteeringRun, ...]:
    """The cached steering results, one per result key, from their ``steering_layers`` rows (in the
    order they were computed)."""
    found = []
    for key, run in rows.groupby("result_key", sort=False):
        first = run.iloc[0]
        found.append(SteeringRun(str(first["model"]), str(first["stimuli"]), str(first["comparisons"]),
                                 str(first["direction"]), str(first["operand"]),
                                 tuple(sorted(int(layer) for layer in run["layer"])), int(first["n_trials"]), str(key)))
    return tuple(found)


def empty_inventory(path: str) -> StoreInventory:
    """The inventory of a path where no store is yet (the dashboard never creates one to read it)."""
    return StoreInventory(
        path=str(path),
        models=pd.DataFrame(columns=["name", "model_id", "stimulus_sets", "nonfinite_layers"]),
        records={},
        complete_sets={},
        progress=pd.DataFrame(columns=["name", "set_name", "done", "total"]),
        stimulus_sets=[],
        nonfinite=pd.DataFrame(columns=["name", "set_name", "layer", "vectors"]),
    )


def is_control(record: ModelRecord) -> bool:
    """A random-weight control: extracted with ``@random``, or imported under such a name."""
    return record.is_random or "@random" in record.name



def inventory_table(inventory: StoreInventory) -> pd.DataFrame:
    """The home page's model table: one row per stored model with its sets and progress.

    Narrow enough for the page's column at 1280 px: the weights say in a few words whether they
    are trained, random (an ``@random`` control) or a dequantized GGUF (the dtype has its own
    column), and the unfinished column is there only when an extraction is unfinished.
    """
    columns = ["model", "architecture", "blocks", "width", "dtype", "weights", "position", "complete sets"]
    if inventory.is_empty:
        return pd.DataFrame(columns=[*columns, "unfinished"])
    rows = []
    for name, record in inventory.records.items():
        unfinished = inventory.incomplete[inventory.incomplete["name"] == name]
        kind = quantization(record.fingerprint)
        rows.append(
            {
                "model": name,
                "architecture": record.architecture,
                "blocks": record.n_blocks,
                "width": record.hidden_size,
                "dtype": record.dtype,
                "weights": RANDOM_WEIGHTS if is_control(record) else f"{kind} GGUF, dequantized" if kind else "trained",
                "position": record.position,
                "complete sets": ", ".join(inventory.complete_sets.get(name, [])),
                "unfinished": ", ".join(f"{r.set_name} ({r.done}/{r.total})" for r in unfinished.itertuples()),
            }
        )
    table = pd.DataFrame(rows)
    return table if table["unfinished"].astype(bool).any() else table.loc[:, columns]
