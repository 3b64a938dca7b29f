"""The store's schema, its version, and the migrations that bring an older store forward.

The store records its schema version in ``meta``. A store of an older version is migrated
forward in one transaction when it is first opened (so a failed migration leaves it as it
was); a newer one, a DuckDB file that is not a magdash store, or a damaged file is refused
with a message and left untouched. Opening a current store writes nothing.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from magdash.errors import StoreError
from magdash.norm_outliers import vector_norms
from magdash.overflow import nonfinite_rows
from magdash.stimuli import PAPER_SET_NAME, paper_stimuli
from magdash.store import metrics, shards, trials
from magdash.store.codec import decode_vectors_into, vector_table
from magdash.store.connection import StoreFile

log = logging.getLogger(__name__)

SCHEMA_VERSION = 11
"""1: the first release. 2: adds ``nonfinite``, the vectors holding Inf or NaN, per layer.
3: one stimulus set per content (sets with the same sentences merged; the paper's named 'paper').
4: the metric tables (:mod:`magdash.store.metrics`), filled from the cached results.
5: vectors in Parquet shards beside the file (:mod:`magdash.store.shards`): ``shards``, and
``done`` says where each item is; the ``vec_*`` tables are gone.
6: the design simulator's metric tables (``designs``, ``design_h1``, ``design_e6``, ``design_ci``).
7: ``models.sequence_start`` (whether a BOS token was prepended to each sentence) and
``vector_norms``, every stored vector's L2 norm per layer, from which the outlier flags are read.
8: ``stimulus_sets.number_format`` (how the numbers are written: :data:`magdash.stimuli.NUMBER_FORMATS`;
'digits' for the sets stored before), ``number_tokens`` (per model and item, how the number was
tokenized: :mod:`magdash.tokenization`), ``digit_splitting`` (per model, whether its tokenizer splits
digits), ``stimuli_b`` in ``comparisons`` and ``comparison_tests`` (a model compared with itself on the
same stimuli in another number format), the tokenization metric tables, and every metric table an
older store lacks.
9: the metric columns of inference at the unit of replication: the stimulus bootstrap's interval and p
of the mean core alpha (``hypotheses``), of E4's difference and ratio (``e4``) and of a comparison's mean
delta (``comparison_tests``), and whether each test over layers can reach .05 (``h4_reachable``,
``wilcoxon_reachable``); E5's raw correlation renamed ``raw_*`` beside the partial one and its
interval; the depth bootstrap's resampled units and the interval of mean Omega; the rows of a
Marchenko-Pastur fit that did not converge lose sigma², edge, margin and gap; seeds are BIGINT;
every metric table gains the columns it lacks (the probes' baseline, strata, constant-error null and
``probe_best_layers`` among them).
10: ``results.checksum``, a digest of each cached result's key and payload (:func:`result_checksum`): a
payload that is not what magdash wrote (edited, damaged, swapped under another key) is computed again.
The results cached before get the digest of what they hold when the store is migrated.
11: the trials of forced-choice comparisons (:mod:`magdash.store.trials`): ``comparison_sets``, ``trials``,
``trial_runs``, empty in a migrated store, the behaviour's metric tables (``behaviour_fits``,
``behaviour_weber_law``) and the steering's (``steering_layers``)."""

_SHARDS_SCHEMA = 5  # the first schema whose vectors are in shards, not tables

_SHARDS_TABLE = """CREATE TABLE IF NOT EXISTS shards (
    shard VARCHAR PRIMARY KEY, model_id VARCHAR NOT NULL, n_rows INTEGER, n_layers INTEGER, dim INTEGER,
    n_bytes BIGINT, created_at TIMESTAMP DEFAULT current_timestamp)"""

_VECTOR_NORMS_TABLE = (
    "CREATE TABLE IF NOT EXISTS vector_norms (model_id VARCHAR, item_key VARCHAR, layer INTEGER, norm FLOAT)"
)

_NUMBER_TOKENS_TABLE = """CREATE TABLE IF NOT EXISTS number_tokens (
    model_id VARCHAR, item_key VARCHAR, n_tokens INTEGER, kept_id BIGINT, kept_text VARCHAR,
    kept_ids BIGINT[], span_texts VARCHAR[], n_chars INTEGER)"""
"""Per (model, item), :class:`magdash.tokenization.NumberTokens`: how many tokens overlap the number's
span and the characters each covers (``span_texts``), the tokens whose vectors are stored
(``kept_ids``: one under ``last`` and ``first``, every overlapping one under ``mean``), the kept
token standing for the item (its id and text) and the written number's length in characters."""

_DIGIT_SPLITTING_TABLE = """CREATE TABLE IF NOT EXISTS digit_splitting (
    model_id VARCHAR, splits_digits VARCHAR, rule VARCHAR, chunk INTEGER, share_whole DOUBLE,
    tokens_by_digits VARCHAR, example VARCHAR, description VARCHAR)"""
"""Per model, :class:`magdash.tokenization.DigitSplitting` of its tokenizer (``tokens_by_digits`` as JSON)."""

_TABLES = (
    "CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
    """CREATE TABLE IF NOT EXISTS models (
        name VARCHAR PRIMARY KEY, model_id VARCHAR NOT NULL, source VARCHAR, fingerprint VARCHAR,
        dtype VARCHAR, transformers_version VARCHAR, architecture VARCHAR, n_blocks INTEGER,
        hidden_size INTEGER, layer_labels VARCHAR, position VARCHAR, is_random BOOLEAN,
        created_at TIMESTAMP DEFAULT current_timestamp, sequence_start VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS stimulus_sets (
        name VARCHAR PRIMARY KEY, content_hash VARCHAR, carriers VARCHAR, magnitudes VARCHAR,
        created_at TIMESTAMP DEFAULT current_timestamp, number_format VARCHAR DEFAULT 'digits')""",
    """CREATE TABLE IF NOT EXISTS stimulus_items (
        set_name VARCHAR, magnitude BIGINT, carrier_index INTEGER, item_key VARCHAR,
        sentence VARCHAR, span_start INTEGER, span_end INTEGER)""",
    "CREATE TABLE IF NOT EXISTS done (model_id VARCHAR, item_key VARCHAR, shard VARCHAR, row_index INTEGER)",
    _SHARDS_TABLE,
    """CREATE TABLE IF NOT EXISTS results (
        key VARCHAR PRIMARY KEY, kind VARCHAR, payload BLOB,
        created_at TIMESTAMP DEFAULT current_timestamp, checksum VARCHAR)""",
    """CREATE TABLE IF NOT EXISTS frequency_sources (
        name VARCHAR PRIMARY KEY, provenance VARCHAR,
        created_at TIMESTAMP DEFAULT current_timestamp)""",
    "CREATE TABLE IF NOT EXISTS frequency_counts (source VARCHAR, number BIGINT, count BIGINT)",
    "CREATE TABLE IF NOT EXISTS nonfinite (model_id VARCHAR, layer INTEGER, item_key VARCHAR)",
    _VECTOR_NORMS_TABLE,
    _NUMBER_TOKENS_TABLE,
    _DIGIT_SPLITTING_TABLE,
)


def create_tables(connection: duckdb.DuckDBPyConnection) -> None:
    """Write a new store's tables and schema version (:meth:`StoreFile.create` runs this on the
    new file, under its temporary name, in one transaction)."""
    for statement in (*_TABLES, *metrics.schema_statements()):
        connection.execute(statement)
    trials.create(connection)
    connection.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])


def ensure_schema(store_file: StoreFile, shard_folder: Path) -> None:
    """Migrate an older store, or refuse a file magdash cannot read right.

    ``shard_folder`` is where the store's vectors go (:mod:`magdash.store.shards`); the
    migration to schema 5 writes the vectors of older stores there, and the file is then
    rewritten without the space their tables held. A store opened read-only is never migrated:
    an older one is refused with what to do.
    """
    with store_file.connect() as connection:
        tables = {
            row[0] for row in connection.execute(
                "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
            ).fetchall()
        }
        version = _stored_schema_version(store_file, connection, tables)
    if version == SCHEMA_VERSION:
        return
    if store_file.read_only:
        raise StoreError(
            f"store {str(store_file.path)!r} is of schema {version}, which this magdash reads after migrating "
            f"it to {SCHEMA_VERSION}; a read-only store is never changed: open it once without read-only "
            "(a `Store` of it, or `magdash list`) to migrate it"
        )
    step = version
    try:
        with store_file.transaction() as connection:
            version = _stored_schema_version(store_file, connection, tables)  # another process may have migrated it
            for step in range(version, SCHEMA_VERSION):
                log.warning("migrating store %s from schema %d to %d", store_file.path, step, step + 1)
                MIGRATIONS[step](connection, shard_folder)
                connection.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(step + 1)])
    except duckdb.Error as error:
        # The transaction was rolled back: the file is as it was. Data magdash did not write (a value
        # a column cannot take) is the usual cause, and no retry helps.
        raise StoreError(
            f"store {str(store_file.path)!r} could not be migrated from schema {step} to {step + 1} "
            f"({str(error).splitlines()[0]}); it is left as it was: its tables hold data magdash did not write, "
            "so open a copy made before the edit, or a new store"
        ) from None
    if version < _SHARDS_SCHEMA:
        _give_back_vector_tables_space(store_file)


def _give_back_vector_tables_space(store_file: StoreFile) -> None:
    """After the vector tables moved into shards, rewrite the file without their space. The
    migration is committed by now: a failure here (a full disk) leaves a working store that is
    only larger, and says how to try again."""
    try:
        before, after = store_file.compact()
    except StoreError as error:
        log.warning("store %s keeps the space of its old vector tables (%s); run `magdash compact` later",
                    store_file.path, error)
        return
    log.warning("store %s: the space of its old vector tables is given back (%.1f MB -> %.1f MB)",
                store_file.path, before / 1e6, after / 1e6)


def _stored_schema_version(store_file: StoreFile, connection: duckdb.DuckDBPyConnection, tables: set[str]) -> int:
    where = repr(str(store_file.path))
    if not tables:
        raise StoreError(
            f"{where} is a DuckDB file with no tables, not a magdash store; magdash has not changed it: "
            "point store= at a store, or at a new file name to create one"
        )
    if "meta" not in tables or "models" not in tables:
        listed = ", ".join(sorted(tables)[:5]) + (" ..." if len(tables) > 5 else "")
        raise StoreError(
            f"{where} is a DuckDB file but not a magdash store (it has tables {listed}); "
            "magdash has not changed it: point store= at another file"
        )
    row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    version = row[0] if row is not None else None
    if version is None or not str(version).isdigit() or int(version) < 1:
        raise StoreError(
            f"store {where} records no valid schema version ({version!r}); magdash has not "
            "changed it: point store= at another file"
        )
    if int(version) > SCHEMA_VERSION:
        raise StoreError(
            f"store {where} was written by a newer magdash (schema {version}, this one reads "
            f"up to {SCHEMA_VERSION}): upgrade magdash"
        )
    return int(version)


def result_checksum(key: str, payload: bytes) -> str:
    """The digest kept beside a cached result (``results.checksum``): of its key and its payload, so
    a payload edited, damaged or copied under another key no longer matches.

    Args:
        key: the result's cache key.
        payload: the result's payload as stored.
    """
    return hashlib.sha256(key.encode("utf-8") + b"\0" + bytes(payload)).hexdigest()


def schema_version(store_file: StoreFile) -> int:
    with store_file.connect() as connection:
        row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()[0]
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


def insert_vector_norms(
    connection: duckdb.DuckDBPyConnection, model_id: str, item_keys: Sequence[str], norms: np.ndarray
) -> None:
    """Record ``norms[i, layer]``, the L2 norm of item ``item_keys[i]``'s vector at ``layer``."""
    if not len(item_keys):
        return
    norms = np.asarray(norms, dtype=np.float32)
    n_layers = norms.shape[1]
    connection.register("new_norms", pa.table({
        "model_id": pa.array([model_id] * norms.size, pa.string()),
        "item_key": pa.array(np.repeat(np.asarray(item_keys, dtype=object), n_layers), pa.string()),
        "layer": pa.array(np.tile(np.arange(n_layers, dtype=np.int32), len(item_keys))),
        "norm": pa.array(norms.ravel()),
    }))
    connection.execute("INSERT INTO vector_norms SELECT * FROM new_norms")
    connection.unregister("new_norms")


def _flag_stored_nonfinite_vectors(connection: duckdb.DuckDBPyConnection) -> None:
    """Migration 1 -> 2: create ``nonfinite`` and fill it by scanning every stored vector once."""
    connection.execute("CREATE TABLE nonfinite (model_id VARCHAR, layer INTEGER, item_key VARCHAR)")
    tables = {row[0] for row in connection.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()").fetchall()}
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
    """Migration 3 -> 4: create the metric tables. The results cached before get their rows when
    they are next read, or all at once with ``python -m magdash backfill``
    (:mod:`magdash.runs.cache`): a migration never decodes results, whose types live above the store."""
    for statement in metrics.schema_statements():
        connection.execute(statement)


def _add_design_tables(connection: duckdb.DuckDBPyConnection) -> None:
    """Migration 5 -> 6: create the design simulator's metric tables. Designs cached before
    get their rows when they are next asked for (:func:`magdash.runs.design_runs.run_design`)."""
    for table in metrics.tables_of("design"):
        connection.execute(table.ddl())


def _add_sequence_start(connection: duckdb.DuckDBPyConnection) -> None:
    """Migration 6 -> 7, first step: ``models.sequence_start``, how each sentence began before its first word
    (:func:`magdash.sources.base.sequence_start_rule`). Models stored before were extracted as their
    tokenizer left the sentence: their rows say "" (not recorded)."""
    connection.execute("ALTER TABLE models ADD COLUMN IF NOT EXISTS sequence_start VARCHAR")
    connection.execute("UPDATE models SET sequence_start = '' WHERE sequence_start IS NULL")


def _record_vector_norms(connection: duckdb.DuckDBPyConnection, shard_folder: Path) -> None:
    """Migration 6 -> 7, second step: ``vector_norms``, filled by reading every registered shard
    once, a layer at a time (memory holds one shard's layer)."""
    connection.execute(_VECTOR_NORMS_TABLE)
    located = connection.execute(
        "SELECT d.shard, d.model_id, list(d.item_key ORDER BY d.row_index), list(d.row_index ORDER BY d.row_index),"
        " any_value(s.n_layers), any_value(s.dim) FROM done d JOIN shards s ON s.shard = d.shard GROUP BY d.shard, d.model_id"
    ).fetchall()
    for shard, model_id, item_keys, rows, n_layers, dim in located:
        rows = np.asarray(rows, dtype=np.int64)
        norms = np.empty((len(rows), n_layers), dtype=np.float32)
        vectors = np.empty((len(rows), dim), dtype=np.float32)
        try:
            for layer in range(n_layers):
                shards.read_layer_into(shard_folder, shard, layer, vectors, np.arange(len(rows)), rows)
                norms[:, layer] = vector_norms(vectors)
        except StoreError as error:  # reading its vectors will say so; the rest of the store opens
            log.warning("no norms recorded for the %d vectors of shard %s: %s", len(rows), shard, error)
            continue
        insert_vector_norms(connection, model_id, item_keys, norms)


def _sequence_start_and_vector_norms(connection: duckdb.DuckDBPyConnection, shard_folder: Path) -> None:
    """Migration 6 -> 7."""
    _add_sequence_start(connection)
    _record_vector_norms(connection, shard_folder)


def _add_tokenization(connection: duckdb.DuckDBPyConnection) -> None:
    """Migration 7 -> 8: number formats and token facts.

    Every stored set was written in digits (``number_format`` 'digits'). The stored models get no
    token facts here (a migration has no tokenizer): the next ``magdash extract`` of a model records
    them from its tokenizer alone, without running the model again, and until then an analysis says
    they are not recorded and gives no adjusted alpha. Comparisons stored before were of one stimulus
    set (``stimuli_b`` = ``stimuli``). Every metric table the store lacks is created (the
    tokenization tables and any added since the store's schema), all with ``IF NOT EXISTS``.
    """
    connection.execute("ALTER TABLE stimulus_sets ADD COLUMN IF NOT EXISTS number_format VARCHAR DEFAULT 'digits'")
    connection.execute("UPDATE stimulus_sets SET number_format = 'digits' WHERE number_format IS NULL")
    connection.execute(_NUMBER_TOKENS_TABLE)
    connection.execute(_DIGIT_SPLITTING_TABLE)
    for statement in metrics.schema_statements():
        connection.execute(statement)
    for table in ("comparisons", "comparison_tests"):
        connection.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS stimuli_b VARCHAR")
        connection.execute(f"UPDATE {table} SET stimuli_b = stimuli WHERE stimuli_b IS NULL")


_RENAMED_METRIC_COLUMNS = {"e5": {"rho": "raw_rho", "p": "raw_p", "ci_low": "raw_ci_low", "ci_high": "raw_ci_high"}}
"""Schema 9's renames: E5's raw correlation is named as such beside the partial one."""

_WIDENED_SEED_COLUMNS = ("seed", "control_seed")
"""Schema 9 keeps seeds as BIGINT (they were INTEGER, and a seed of 2**31 or more, which numpy
takes, could not be stored): :data:`magdash.params.SEED_LIMIT`."""

_UNFITTED_SPECTRUM_COLUMNS = ("sigma2", "mp_edge", "tw_margin", "largest_gap")
"""What a Marchenko-Pastur fit that did not converge no longer reports (schema 9)."""


def _metric_columns_of_schema_9(connection: duckdb.DuckDBPyConnection) -> None:
    """Migration 8 -> 9: E5 leads with the partial correlation, the depth bootstrap resamples units.

    ``e5``'s raw correlation columns get their ``raw_`` names; every metric table gains the
    columns it lacks (``e5``'s partial interval, ``phase_layers``' interval of mean Omega,
    ``phase_transitions``' resampled units), NULL in the rows stored before; and the rows of a
    Marchenko-Pastur fit that did not converge lose the sigma², edge, margin and gap: a fit
    that stopped at its cap or ran out of iterations has no bulk, and the numbers it stopped at
    depend on the stopping rule.
    """
    for table, renames in _RENAMED_METRIC_COLUMNS.items():
        present = _table_columns(connection, table)
        for old, new in renames.items():
            if old in present and new not in present:
                connection.execute(f'ALTER TABLE {table} RENAME COLUMN "{old}" TO "{new}"')
    metrics.add_missing_columns(connection)
    for table in metrics.METRIC_TABLES:
        present = _table_columns(connection, table.name)
        for name, sql_type, _ in table.columns:
            if name in _WIDENED_SEED_COLUMNS and present.get(name) != sql_type:
                connection.execute(f'ALTER TABLE {table.name} ALTER COLUMN "{name}" TYPE {sql_type}')
    cleared = ", ".join(f"{column} = NULL" for column in _UNFITTED_SPECTRUM_COLUMNS)
    connection.execute(f"UPDATE phase_layers SET {cleared} WHERE NOT mp_converged")


def _table_columns(connection: duckdb.DuckDBPyConnection, table: str) -> dict[str, str]:
    """``table``'s columns and their DuckDB types."""
    return dict(connection.execute(
        "SELECT column_name, data_type FROM duckdb_columns() WHERE database_name = current_database() "
        "AND table_name = ?", [table],
    ).fetchall())


_CHECKSUM_BATCH = 64
"""Payloads read at once while the migration to schema 10 digests them (memory holds these)."""


def _add_result_checksums(connection: duckdb.DuckDBPyConnection) -> None:
    """Migration 9 -> 10: ``results.checksum``, the digest of each cached result's key and payload as
    stored now (:func:`result_checksum`)."""
    connection.execute("ALTER TABLE results ADD COLUMN IF NOT EXISTS checksum VARCHAR")
    digests: list[tuple[str, str]] = []
    reader = connection.execute("SELECT key, payload FROM results WHERE checksum IS NULL")
    while rows := reader.fetchmany(_CHECKSUM_BATCH):
        digests.extend((key, result_checksum(key, payload)) for key, payload in rows)
    # Written after the scan: a new statement on this connection would end the open reader.
    connection.register("result_digests", pa.table({
        "key": pa.array([key for key, _ in digests], pa.string()),
        "checksum": pa.array([digest for _, digest in digests], pa.string()),
    }))
    connection.execute("UPDATE results SET checksum = d.checksum FROM result_digests d WHERE results.key = d.key")
    connection.unregister("result_digests")


def _move_vectors_to_shards(connection: duckdb.DuckDBPyConnection, shard_folder: Path) -> None:
    """Migration 4 -> 5: every model's vectors from its ``vec_*`` tables into shards.

    Each layer's table is scanned once, into a scratch array on disk beside the shards (so
    memory holds one read batch, whatever the model's size); the shards are then written from
    it (``shards.WRITE_BATCH_BYTES`` each) and registered, ``done`` gains each item's shard and row, and the
    tables are dropped, all in the migration's one transaction. A failure half-way rolls the
    transaction back, so the store is still at schema 4 with every table, and the shards it had
    written are deleted (or, after a kill, swept as unregistered on the next open). Items whose
    vectors are missing at some layer (a damaged table) are marked not done, so the next
    extraction computes them again.
    """
    tables = {row[0] for row in connection.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()").fetchall()}
    connection.execute(_SHARDS_TABLE)
    connection.execute("ALTER TABLE done ADD COLUMN shard VARCHAR")
    connection.execute("ALTER TABLE done ADD COLUMN row_index INTEGER")
    written: list[shards.Shard] = []
    try:
        for model_id, hidden_size, layer_labels in connection.execute(
            "SELECT DISTINCT m.model_id, m.hidden_size, m.layer_labels FROM models m "
            "JOIN done d USING (model_id)"
        ).fetchall():
            layers = [vector_table(model_id, layer) for layer in range(len(json.loads(layer_labels)))]
            _model_to_shards(connection, shard_folder, model_id, int(hidden_size), layers, tables, written)
        for table in sorted(tables):
            if table.startswith("vec_"):
                connection.execute(f"DROP TABLE {table}")
    except BaseException:
        for shard in written:
            (shard_folder / shard.name).unlink(missing_ok=True)
        raise


def _model_to_shards(
    connection: duckdb.DuckDBPyConnection, shard_folder: Path, model_id: str, dim: int,
    layer_tables: list[str], tables: set[str], written: list[shards.Shard],
) -> None:
    """Move one model's vectors into shards, adding each shard to ``written`` as soon as it is
    on disk, so a failure later in the same model still deletes it."""
    keys = [row[0] for row in connection.execute(
        "SELECT item_key FROM done WHERE model_id = ? ORDER BY item_key", [model_id]).fetchall()]
    index = {key: row for row, key in enumerate(keys)}
    n_layers = len(layer_tables)
    shard_folder.mkdir(parents=True, exist_ok=True)
    scratch_path = shard_folder / f"migration-{shards.model_folder(model_id)}.scratch"
    scratch = np.lib.format.open_memmap(scratch_path, mode="w+", dtype=np.float32, shape=(len(keys), n_layers, dim))
    try:
        complete = np.zeros(len(keys), dtype=np.int64)
        for layer, table in enumerate(layer_tables):
            if table not in tables:
                continue
            reader = connection.sql(f"SELECT item_key, vec FROM {table}").to_arrow_reader(1 << 14)
            for batch in reader:
                rows = np.fromiter((index.get(key, -1) for key in batch.column(0).to_pylist()), np.int64)
                known = rows >= 0
                values = np.empty((batch.num_rows, dim), dtype=np.float32)
                decode_vectors_into(values, np.arange(batch.num_rows), pa.chunked_array([batch.column(1)]))
                scratch[rows[known], layer] = values[known]
                complete[rows[known]] += 1
        whole = np.flatnonzero(complete == n_layers)
        if len(whole) < len(keys):
            log.warning("%d item(s) of model %s lack vectors at some layer: they will be extracted again",
                        len(keys) - len(whole), model_id)
        connection.execute("DELETE FROM done WHERE model_id = ?", [model_id])
        connection.execute("DELETE FROM nonfinite WHERE model_id = ? AND item_key NOT IN "
                            "(SELECT unnest(?::VARCHAR[]))", [model_id, [keys[row] for row in whole]])
        chunk = shards.items_per_batch(n_layers, dim)
        for start in range(0, len(whole), chunk):
            rows = whole[start:start + chunk]
            shard = shards.write_shard(shard_folder, model_id, [keys[row] for row in rows], scratch[rows])
            written.append(shard)
            connection.execute(
                "INSERT INTO shards (shard, model_id, n_rows, n_layers, dim, n_bytes) VALUES (?, ?, ?, ?, ?, ?)",
                [shard.name, model_id, len(rows), n_layers, dim, shard.n_bytes])
            connection.register("moved", pa.table({
                "model_id": pa.array([model_id] * len(rows), pa.string()),
                "item_key": pa.array(shard.item_keys, pa.string()),
                "shard": pa.array([shard.name] * len(rows), pa.string()),
                "row_index": pa.array(np.arange(len(rows), dtype=np.int32)),
            }))
            connection.execute("INSERT INTO done SELECT * FROM moved")
            connection.unregister("moved")
    finally:
        del scratch
        scratch_path.unlink(missing_ok=True)


def _migration(step: Callable[[duckdb.DuckDBPyConnection], None]) -> Migration:
    """A migration that works in the catalog alone."""
    return lambda connection, _shard_folder: step(connection)


Migration = Callable[[duckdb.DuckDBPyConnection, Path], None]

def _add_trials(connection: duckdb.DuckDBPyConnection) -> None:
    """Migration 10 -> 11: the trials of comparisons (:func:`magdash.store.trials.create`) and the metric
    tables of their fits (:func:`magdash.store.metrics.add_missing_columns`)."""
    trials.create(connection)
    metrics.add_missing_columns(connection)


MIGRATIONS: dict[int, Migration] = {
    1: _migration(_flag_stored_nonfinite_vectors),
    2: _migration(_merge_duplicate_stimulus_sets),
    3: _migration(_add_metric_tables),
    4: _move_vectors_to_shards,
    5: _migration(_add_design_tables),
    6: _sequence_start_and_vector_norms,
    7: _migration(_add_tokenization),
    8: _migration(_metric_columns_of_schema_9),
    9: _migration(_add_result_checksums),
    10: _migration(_add_trials),
}
"""Schema version -> the step that brings a store of that version to the next one."""
