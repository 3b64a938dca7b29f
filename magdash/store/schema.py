"""The store's schema, its version, and the migrations that bring an older store forward.

The store records its schema version in ``meta``. A store of an older version is migrated
forward in one transaction when it is first opened (so a failed migration leaves it as it
was); a newer one, a DuckDB file that is not a magdash store, or a damaged file is refused
with a message and left untouched. Opening a current store writes nothing.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

import duckdb
import numpy as np
import pyarrow as pa

from magdash.errors import StoreError
from magdash.overflow import nonfinite_rows
from magdash.stimuli import PAPER_SET_NAME, paper_stimuli
from magdash.store import metrics
from magdash.store.codec import decode_vectors_into, vector_table
from magdash.store.connection import StoreFile

log = logging.getLogger(__name__)

SCHEMA_VERSION = 4
"""1: the first release. 2: adds ``nonfinite``, the vectors holding Inf or NaN, per layer.
3: one stimulus set per content (sets with the same sentences merged; the paper's named 'paper').
4: the metric tables (:mod:`magdash.store.metrics`), filled from the cached results."""

_TABLES = (
    "CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
    """CREATE TABLE IF NOT EXISTS models (
        name VARCHAR PRIMARY KEY, model_id VARCHAR NOT NULL, source VARCHAR, fingerprint VARCHAR,
        dtype VARCHAR, transformers_version VARCHAR, architecture VARCHAR, n_blocks INTEGER,
        hidden_size INTEGER, layer_labels VARCHAR, position VARCHAR, is_random BOOLEAN,
        created_at TIMESTAMP DEFAULT current_timestamp)""",
    """CREATE TABLE IF NOT EXISTS stimulus_sets (
        name VARCHAR PRIMARY KEY, content_hash VARCHAR, carriers VARCHAR, magnitudes VARCHAR,
        created_at TIMESTAMP DEFAULT current_timestamp)""",
    """CREATE TABLE IF NOT EXISTS stimulus_items (
        set_name VARCHAR, magnitude BIGINT, carrier_index INTEGER, item_key VARCHAR,
        sentence VARCHAR, span_start INTEGER, span_end INTEGER)""",
    "CREATE TABLE IF NOT EXISTS done (model_id VARCHAR, item_key VARCHAR)",
    """CREATE TABLE IF NOT EXISTS results (
        key VARCHAR PRIMARY KEY, kind VARCHAR, payload BLOB,
        created_at TIMESTAMP DEFAULT current_timestamp)""",
    """CREATE TABLE IF NOT EXISTS frequency_sources (
        name VARCHAR PRIMARY KEY, provenance VARCHAR,
        created_at TIMESTAMP DEFAULT current_timestamp)""",
    "CREATE TABLE IF NOT EXISTS frequency_counts (source VARCHAR, number BIGINT, count BIGINT)",
    "CREATE TABLE IF NOT EXISTS nonfinite (model_id VARCHAR, layer INTEGER, item_key VARCHAR)",
)


def ensure_schema(store_file: StoreFile) -> None:
    """Create a new store, migrate an older one, or refuse a file magdash cannot read right."""
    with store_file.transaction() as connection:
        tables = {
            row[0] for row in connection.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
            ).fetchall()
        }
        if not tables:
            for statement in (*_TABLES, *metrics.schema_statements()):
                connection.execute(statement)
            connection.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
            return
        version = _stored_schema_version(store_file, connection, tables)
        for step in range(version, SCHEMA_VERSION):
            log.warning("migrating store %s from schema %d to %d", store_file.path, step, step + 1)
            MIGRATIONS[step](connection)
            connection.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(step + 1)])


def _stored_schema_version(store_file: StoreFile, connection: duckdb.DuckDBPyConnection, tables: set[str]) -> int:
    where = repr(str(store_file.path))
    if "meta" not in tables or "models" not in tables:
        listed = ", ".join(sorted(tables)[:5]) + (" ..." if len(tables) > 5 else "")
        raise StoreError(
            f"{where} is a DuckDB file but not a magdash store (it has tables {listed}); "
            "magdash has not changed it: point --store at another file"
        )
    row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    version = row[0] if row is not None else None
    if version is None or not str(version).isdigit() or int(version) < 1:
        raise StoreError(
            f"store {where} records no valid schema version ({version!r}); magdash has not "
            "changed it: point --store at another file"
        )
    if int(version) > SCHEMA_VERSION:
        raise StoreError(
            f"store {where} was written by a newer magdash (schema {version}, this one reads "
            f"up to {SCHEMA_VERSION}): upgrade magdash"
        )
    return int(version)


def schema_version(store_file: StoreFile) -> int:
    with store_file.connect() as connection:
        row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    return int(row[0])


def insert_nonfinite(
    connection: duckdb.DuckDBPyConnection, model_id: str, layers: Sequence[int], item_keys: Sequence[str]
) -> None:
    """Flag the vectors at (``layers[i]``, ``item_keys[i]``) of ``model_id`` as non-finite."""
    if not len(item_keys):
        return
    connection.register("new_flags", pa.table({
        "model_id": pa.array([model_id] * len(item_keys), pa.string()),
        "layer": pa.array(layers, pa.int32()),
        "item_key": pa.array(item_keys, pa.string()),
    }))
    connection.execute("INSERT INTO nonfinite SELECT * FROM new_flags")
    connection.unregister("new_flags")


def _flag_stored_nonfinite_vectors(connection: duckdb.DuckDBPyConnection) -> None:
    """Migration 1 -> 2: create ``nonfinite`` and fill it by scanning every stored vector once."""
    connection.execute("CREATE TABLE nonfinite (model_id VARCHAR, layer INTEGER, item_key VARCHAR)")
    tables = {row[0] for row in connection.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    models = connection.execute("SELECT model_id, hidden_size, layer_labels FROM models").fetchall()
    for model_id, hidden_size, layer_labels in models:
        layers, keys = [], []
        for layer in range(len(json.loads(layer_labels))):
            table = vector_table(model_id, layer)
            if table not in tables:
                continue
            reader = connection.sql(f"SELECT item_key, vec FROM {table}").to_arrow_reader(1 << 14)
            for batch in reader:
                vectors = np.empty((batch.num_rows, int(hidden_size)), dtype=np.float32)
                decode_vectors_into(vectors, np.arange(batch.num_rows), pa.chunked_array([batch.column(1)]))
                batch_keys = batch.column(0).to_pylist()
                for row in np.flatnonzero(nonfinite_rows(vectors)):
                    layers.append(layer)
                    keys.append(batch_keys[row])
        # Written after the scans: a new statement on this connection would end the open reader.
        insert_nonfinite(connection, model_id, layers, keys)


def _merge_duplicate_stimulus_sets(connection: duckdb.DuckDBPyConnection) -> None:
    """Migration 2 -> 3: one stimulus set per content.

    Earlier releases stored the same sentences under several names (an import without carriers
    made a set per model), and every model then listed all of them, so an analysis without
    ``--stimuli`` could not choose. Each group of sets with the same content keeps one name:
    'paper' for the paper's sentences (a lone set of them is renamed 'paper'), else the set
    stored first. The vectors are keyed by sentence, not by set, so none move; analyses cached
    under a dropped name are simply computed again under the kept one.
    """
    paper_hash = paper_stimuli().content_hash
    rows = connection.execute("SELECT name, content_hash FROM stimulus_sets ORDER BY created_at, name").fetchall()
    names = {name for name, _ in rows}
    groups: dict[str, list[str]] = {}
    for name, content in rows:
        groups.setdefault(content, []).append(name)
    for content, members in groups.items():
        is_paper = content == paper_hash
        keep = PAPER_SET_NAME if is_paper and PAPER_SET_NAME in members else members[0]
        dropped = [name for name in members if name != keep]
        for name in dropped:
            connection.execute("DELETE FROM stimulus_items WHERE set_name = ?", [name])
            connection.execute("DELETE FROM stimulus_sets WHERE name = ?", [name])
        if dropped:
            log.warning("stimulus sets %s hold the same sentences as %r and are merged into it", dropped, keep)
        if is_paper and keep != PAPER_SET_NAME and PAPER_SET_NAME not in names:
            log.warning("stimulus set %r holds the paper's sentences: it is renamed %r", keep, PAPER_SET_NAME)
            connection.execute(
                "INSERT INTO stimulus_sets SELECT ?, content_hash, carriers, magnitudes, created_at "
                "FROM stimulus_sets WHERE name = ?",
                [PAPER_SET_NAME, keep],
            )
            connection.execute("DELETE FROM stimulus_sets WHERE name = ?", [keep])
            connection.execute("UPDATE stimulus_items SET set_name = ? WHERE set_name = ?", [PAPER_SET_NAME, keep])


def _add_metric_tables(connection: duckdb.DuckDBPyConnection) -> None:
    """Migration 3 -> 4: create the metric tables and fill them from the cached results."""
    for statement in metrics.schema_statements():
        connection.execute(statement)
    metrics.backfill(connection)


MIGRATIONS = {1: _flag_stored_nonfinite_vectors, 2: _merge_duplicate_stimulus_sets, 3: _add_metric_tables}
"""Schema version -> the step that brings a store of that version to the next one."""
