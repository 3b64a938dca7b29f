"""The trials of forced-choice comparisons (:mod:`magdash.comparison_stimuli`): their tables and
every SQL statement on them, called by :class:`magdash.store.Store`'s trial methods.

- ``comparison_sets``: one row per named design: its content hash (the identity the trials are
  keyed by) and its definition as JSON (NULL for imported trials, which have no design object:
  their hash is ``imported:<name>``);
- ``trials``: one row per (model, set hash, trial id), the trials frame's columns
  (:data:`TRIAL_COLUMNS`); a row once written is never rewritten, so a run interrupted half way
  keeps what it did and the next one does only the rest;
- ``trial_runs``: per (model, set hash), the facts of the run as JSON (the chat template applied or
  not, the option tokens used, the model's identity).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence

import duckdb
import pandas as pd
import pyarrow as pa

from magdash.comparison_stimuli import ComparisonSet, ComparisonTemplate
from magdash.errors import StoreError

TRIAL_COLUMNS: tuple[tuple[str, str], ...] = (
    ("trial_id", "VARCHAR"), ("task", "VARCHAR"), ("template", "VARCHAR"), ("format", "VARCHAR"),
    ("reference", "DOUBLE"), ("ratio", "DOUBLE"), ("pair", "INTEGER"), ("larger", "VARCHAR"),
    ("value_a", "VARCHAR"), ("value_b", "VARCHAR"), ("question", "VARCHAR"), ("prompt", "VARCHAR"),
    ("logit_a", "DOUBLE"), ("logit_b", "DOUBLE"), ("prob_a", "DOUBLE"), ("prob_b", "DOUBLE"),
    ("chosen", "VARCHAR"), ("correct", "BOOLEAN"),
)
"""The stored columns of a trial and their SQL types: the contract's trials frame (task, reference,
ratio, larger, value_a, value_b, prompt, logit_a, logit_b, prob_a, prob_b, chosen, correct) and
``trial_id``, ``template``, ``format``, ``pair``, ``question`` (the text before any chat template)."""
REQUIRED_COLUMNS = ("task", "reference", "ratio", "larger", "value_a", "value_b", "prompt",
                    "logit_a", "logit_b", "prob_a", "prob_b", "chosen", "correct")
"""The columns a frame must hold to be stored; the others are filled (``trial_id`` from the row's content)."""
IMPORTED_PREFIX = "imported:"

TABLES = (
    """CREATE TABLE IF NOT EXISTS comparison_sets (
        name VARCHAR PRIMARY KEY, content_hash VARCHAR NOT NULL, definition VARCHAR,
        created_at TIMESTAMP DEFAULT current_timestamp)""",
    "CREATE TABLE IF NOT EXISTS trials (model VARCHAR NOT NULL, set_hash VARCHAR NOT NULL, "
    + ", ".join(f"{name} {kind}" for name, kind in TRIAL_COLUMNS)
    + ", created_at TIMESTAMP DEFAULT current_timestamp, PRIMARY KEY (model, set_hash, trial_id))",
    """CREATE TABLE IF NOT EXISTS trial_runs (
        model VARCHAR NOT NULL, set_hash VARCHAR NOT NULL, facts VARCHAR,
        created_at TIMESTAMP DEFAULT current_timestamp, PRIMARY KEY (model, set_hash))""",
)


def first_row(connection: duckdb.DuckDBPyConnection, sql: str, values: Sequence[object]) -> tuple | None:
    """The first row ``sql`` gives, or None, with the result read to its end (DuckDB refuses other work on a
    connection whose result is unfinished)."""
    rows = connection.execute(sql, list(values)).fetchall()
    return rows[0] if rows else None


def create(connection: duckdb.DuckDBPyConnection) -> None:
    """Create the trial tables (a new store, and the migration from schema 10)."""
    for statement in TABLES:
        connection.execute(statement)


def definition(comparisons: ComparisonSet) -> str:
    """A design as JSON, enough to build it again (:func:`from_definition`)."""
    fields = {f.name: getattr(comparisons, f.name) for f in dataclasses.fields(comparisons) if f.init}
    fields["templates"] = [[template.name, template.text] for template in comparisons.templates]
    return json.dumps(fields, sort_keys=True)


def from_definition(text: str) -> ComparisonSet:
    """The design :func:`definition` wrote."""
    fields = json.loads(text)
    fields["templates"] = tuple(ComparisonTemplate(name, template) for name, template in fields["templates"])
    for name in ("references", "ratios", "number_formats", "options"):
        fields[name] = tuple(fields[name])
    return ComparisonSet(**fields)


def put_set(connection: duckdb.DuckDBPyConnection, comparisons: ComparisonSet) -> None:
    """Register a design under its name; the same name for another design is refused."""
    stored = first_row(connection, "SELECT content_hash FROM comparison_sets WHERE name = ?",
                                [comparisons.name])
    if stored is not None and stored[0] != comparisons.content_hash:
        raise StoreError(f"the comparison set {comparisons.name!r} is stored with another design: choose another name")
    if stored is None:
        connection.execute("INSERT INTO comparison_sets (name, content_hash, definition) VALUES (?, ?, ?)",
                           [comparisons.name, comparisons.content_hash, definition(comparisons)])


def set_hash(connection: duckdb.DuckDBPyConnection, set_name: str, *, create_imported: bool = False) -> str:
    """The content hash the trials of ``set_name`` are keyed by; with ``create_imported``, a name not
    stored yet is registered as imported trials (no design object)."""
    stored = first_row(connection, "SELECT content_hash FROM comparison_sets WHERE name = ?", [set_name])
    if stored is not None:
        return stored[0]
    if not create_imported:
        raise StoreError(f"no comparison set {set_name!r} in the store", parameters=("comparisons",))
    imported = IMPORTED_PREFIX + set_name
    connection.execute("INSERT INTO comparison_sets (name, content_hash, definition) VALUES (?, ?, NULL)",
                       [set_name, imported])
    return imported


def complete_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every stored column, in order: missing optional columns filled (``trial_id``
    from the row's content and position, ``question`` from ``prompt``), a missing required one refused."""
    missing = [name for name in REQUIRED_COLUMNS if name not in frame.columns]
    if missing:
        raise StoreError(f"the trials lack the columns {', '.join(missing)}: give the trials frame's columns")
    frame = frame.reset_index(drop=True).copy()
    if "question" not in frame.columns:
        frame["question"] = frame["prompt"]
    for name, default in (("template", ""), ("format", ""), ("pair", 0)):
        if name not in frame.columns:
            frame[name] = default
    if "trial_id" not in frame.columns:
        frame["trial_id"] = [
            hashlib.sha1(f"{index}\0{row.prompt}\0{row.larger}\0{row.reference!r}\0{row.ratio!r}".encode()).hexdigest()[:20]
            for index, row in enumerate(frame.itertuples(index=False))
        ]
    if frame["trial_id"].duplicated().any():
        raise StoreError("the trials hold a trial_id twice: each trial once")
    return frame[[name for name, _ in TRIAL_COLUMNS]]


def put(connection: duckdb.DuckDBPyConnection, model: str, hash_: str, frame: pd.DataFrame) -> int:
    """Insert the trials not stored yet; returns how many were new."""
    table = pa.Table.from_pandas(complete_frame(frame), preserve_index=False)
    before = _count(connection, model, hash_)
    connection.register("incoming_trials", table)
    try:
        columns = ", ".join(name for name, _ in TRIAL_COLUMNS)
        connection.execute(
            f"INSERT INTO trials (model, set_hash, {columns}) SELECT ?, ?, {columns} FROM incoming_trials "
            "ON CONFLICT DO NOTHING", [model, hash_])
    finally:
        connection.unregister("incoming_trials")
    return _count(connection, model, hash_) - before


def _count(connection: duckdb.DuckDBPyConnection, model: str, hash_: str) -> int:
    row = first_row(connection, "SELECT count(*) FROM trials WHERE model = ? AND set_hash = ?", [model, hash_])
    return int(row[0]) if row else 0


def read(connection: duckdb.DuckDBPyConnection, model: str, hash_: str) -> pd.DataFrame:
    """The stored trials of ``model`` on the design ``hash_``, in the order of their ids (a store does
    not keep the order rows were written in, and a fit's bootstrap must not depend on it)."""
    columns = ", ".join(name for name, _ in TRIAL_COLUMNS)
    return connection.execute(
        f"SELECT {columns} FROM trials WHERE model = ? AND set_hash = ? ORDER BY trial_id",
        [model, hash_]).df()


def stored_ids(connection: duckdb.DuckDBPyConnection, model: str, hash_: str, trial_ids: Sequence[str]) -> set[str]:
    """Which of ``trial_ids`` are stored for ``model`` on ``hash_``."""
    connection.register("asked_trials", pa.table({"trial_id": pa.array(list(trial_ids), pa.string())}))
    try:
        rows = connection.execute(
            "SELECT a.trial_id FROM asked_trials a JOIN trials t ON t.trial_id = a.trial_id "
            "WHERE t.model = ? AND t.set_hash = ?", [model, hash_]).fetchall()
    finally:
        connection.unregister("asked_trials")
    return {row[0] for row in rows}
