"""The DuckDB store: schema, every SQL statement, transactions, locking and retry.

Vectors are content-addressed. A stored vector is keyed by the model's identity
(``model_id``: weights fingerprint, dtype, transformers version, token position) and the
stimulus item's key (sentence text plus the number's character span), so extracting what is
stored is a no-op and a killed run resumes with only what is missing. Each batch is written in
one transaction together with its completion markers, so a crash never leaves half a batch.

DuckDB lets one process at a time hold a file open for writing. The store therefore never
keeps a connection: every operation opens one, does its work and closes it, retrying while
another process holds the lock. A CLI extraction and the dashboard can share one store; each
waits at most for the other's current batch.

The store records its schema version in ``meta``. A store of an older version is migrated
forward in one transaction when it is first opened (so a failed migration leaves it as it was);
a newer one, a DuckDB file that is not a magdash store, or a damaged file is refused with a
message and left untouched. Storage failures while writing (a full disk, a damaged file) become
a :class:`~magdash.errors.StoreError`; the transaction under way is rolled back, so what was
stored before it is kept.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from magdash.errors import StoreError
from magdash.models import LAST_LAYER_CHOICES, POST_NORM_LABEL
from magdash.overflow import count_nonfinite, nonfinite_rows
from magdash.stimuli import StimulusSet

log = logging.getLogger(__name__)

SCHEMA_VERSION = 3
"""1: the first release. 2: adds ``nonfinite``, the vectors holding Inf or NaN, per layer.
3: one stimulus set per content (sets with the same sentences merged; the paper's named 'paper')."""
DEFAULT_STORE = Path("cache") / "magdash.duckdb"
STORE_ENV = "MAGDASH_STORE"
LOCK_TIMEOUT_ENV = "MAGDASH_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT_S = 120.0
_FIRST_RETRY_DELAY_S = 0.02
# Hidden-state floats barely compress, yet analysing them for compression made every
# checkpoint (each connection close) several times slower; see bench/extract.py.
_CONNECTION_CONFIG = {"force_compression": "uncompressed"}

_SCHEMA = (
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
# Failures of the storage itself rather than of a statement: they are reported as StoreError.
_STORAGE_ERRORS = (
    duckdb.IOException,
    duckdb.SerializationException,
    duckdb.InternalException,
    duckdb.FatalException,
    duckdb.OutOfMemoryException,
    duckdb.PermissionException,
)

# One lock per store file inside this process: DuckDB refuses a second connection with a
# different configuration, and Streamlit serves every browser session from one process.
_PROCESS_LOCKS: dict[str, threading.RLock] = {}
_PROCESS_LOCKS_GUARD = threading.Lock()


@dataclass(frozen=True)
class ModelRecord:
    """A model as stored: its user-facing name and everything that identifies its vectors."""

    name: str
    model_id: str
    source: str
    fingerprint: str
    dtype: str
    transformers_version: str
    architecture: str
    n_blocks: int
    hidden_size: int
    layer_labels: tuple[str, ...]
    position: str = "last"
    is_random: bool = False

    @property
    def n_layers(self) -> int:
        return len(self.layer_labels)


@dataclass(frozen=True)
class LayerData:
    """One layer's number-token vectors for a stimulus set."""

    layer: int
    label: str
    magnitudes: np.ndarray
    carriers: list[str]
    vectors: np.ndarray  # (n_magnitudes, n_carriers, d) float32

    @property
    def n_nonfinite(self) -> int:
        """How many vectors hold Inf or NaN (magdash.overflow). Counted when asked, not on every
        read: the analysis checks the arrays it is given itself."""
        return count_nonfinite(self.vectors)


def default_store_path() -> Path:
    return Path(os.environ.get(STORE_ENV) or DEFAULT_STORE)


def _process_lock(path: str) -> threading.RLock:
    with _PROCESS_LOCKS_GUARD:
        return _PROCESS_LOCKS.setdefault(path, threading.RLock())


def _is_lock_conflict(error: Exception) -> bool:
    message = str(error).lower()
    return "lock" in message and ("conflicting" in message or "could not set" in message)


def _is_storage_failure(error: duckdb.Error) -> bool:
    """A failure of the file rather than of a statement. DuckDB raises its bare ``Error`` for a
    block whose checksum does not match (a damaged file)."""
    return isinstance(error, _STORAGE_ERRORS) or type(error) in (duckdb.Error, duckdb.DatabaseError) or _disk_is_full(error)


def _disk_is_full(error: Exception) -> bool:
    text = str(error).lower()
    return "no space left" in text or "file too large" in text or "disk quota" in text


# DuckDB writes a main header and two database headers, 4 KiB each, before any data block.
_DUCKDB_HEADERS_BYTES = 3 * 4096


def _remove_if_creation_was_interrupted(path: Path) -> None:
    """Delete a store file that provably holds no data, so a run killed while creating the store
    does not block every later run: the file is empty or a DuckDB header cut short, there is no
    write-ahead log beside it, and no process has it open (DuckDB holds an fcntl lock on it).
    Any other file is left for DuckDB to open or refuse.
    """
    try:
        import fcntl
    except ImportError:  # Windows: no fcntl, so no safe way to know the file is unused
        return
    try:
        size = path.stat().st_size
    except (FileNotFoundError, NotADirectoryError):
        return
    if size >= _DUCKDB_HEADERS_BYTES or Path(f"{path}.wal").exists():
        return
    try:
        with open(path, "rb+") as handle:
            if size and handle.read(12)[8:12] != b"DUCK":
                return
            # Fails while another process holds the file: it is creating the store right now.
            fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            log.warning("store %s holds no data (its creation was interrupted); starting it afresh", path)
            path.unlink()
    except OSError:
        return


def _encode_vectors(vectors: np.ndarray) -> pa.Array:
    """One little-endian float32 blob per row, built without a Python object per row."""
    rows = np.ascontiguousarray(vectors, dtype="<f4")
    width = rows.shape[1] * 4
    offsets = np.arange(rows.shape[0] + 1, dtype=np.int32) * width
    return pa.Array.from_buffers(
        pa.binary(), rows.shape[0], [None, pa.py_buffer(offsets), pa.py_buffer(rows.reshape(-1).view(np.uint8))]
    )


def _decode_vectors_into(out: np.ndarray, rows: np.ndarray, blobs: pa.ChunkedArray) -> None:
    """Write float32 blob ``i`` into ``out[rows[i]]`` (``out`` is (n, dim)), chunk by chunk.

    Each chunk's data buffer is viewed in place, so a layer is copied once, straight to its
    final position, and never held twice.
    """
    dim = out.shape[1]
    width = dim * 4
    start = 0
    for chunk in blobs.chunks:
        if chunk.null_count:
            raise StoreError("the store holds an empty vector; run extract again to repair it")
        offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int32, count=len(chunk) + 1, offset=chunk.offset * 4)
        if len(chunk) and not np.all(np.diff(offsets) == width):
            raise StoreError(f"stored vectors are not {dim}-dimensional float32; the store is damaged")
        data = np.frombuffer(chunk.buffers()[2], dtype=np.uint8, count=len(chunk) * width, offset=int(offsets[0]))
        out[rows[start:start + len(chunk)]] = data.view("<f4").reshape(len(chunk), dim)
        start += len(chunk)


def vector_table(model_id: str, layer: int) -> str:
    """Name of the table holding one model's vectors at one layer.

    Each (model, layer) has its own table so that reading a layer scans only that layer's
    rows: DuckDB materialises the blob column of every row group a scan touches, so a shared
    table would make every layer read cost the whole store. The name is derived from a hash,
    so no user text ever reaches an identifier.
    """
    digest = hashlib.sha1(model_id.encode()).hexdigest()[:20]
    return f"vec_{digest}_{int(layer)}"


class Store:
    """A magdash store file. Cheap to create; holds no connection between calls."""

    def __init__(self, path: str | os.PathLike | None = None, *, lock_timeout_s: float | None = None):
        self.path = Path(path) if path else default_store_path()
        if lock_timeout_s is None:
            lock_timeout_s = float(os.environ.get(LOCK_TIMEOUT_ENV, DEFAULT_LOCK_TIMEOUT_S))
        self.lock_timeout_s = lock_timeout_s
        try:
            is_folder = self.path.is_dir()
            self._lock_key = str(self.path.resolve())
        except (OSError, ValueError) as error:
            # A name too long for the file system, or one with a NUL byte, cannot be a file.
            shown = str(self.path) if len(str(self.path)) <= 80 else str(self.path)[:77] + "..."
            reason = error.strerror if isinstance(error, OSError) else str(error)
            raise StoreError(
                f"cannot use {shown!r} as a store file ({reason}); give a path such as cache/magdash.duckdb"
            ) from None
        if is_folder:
            raise StoreError(f"store path {str(self.path)!r} is a folder: give a file name such as magdash.duckdb")
        self._ensure_schema()

    # -- connections -------------------------------------------------------------------

    @contextmanager
    def _connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with _process_lock(self._lock_key):
            connection = self._open_with_retry()
            try:
                try:
                    yield connection
                finally:
                    connection.close()
            except duckdb.Error as error:
                # A commit that cannot write its log fails as a TransactionException, which
                # otherwise means a conflict: only the text tells a full disk apart.
                if _is_storage_failure(error):
                    raise self._storage_error(error) from None
                raise

    def _storage_error(self, error: duckdb.Error) -> StoreError:
        """The message for a failure of the store file itself, saying what was kept and what to do."""
        first_line = str(error).splitlines()[0]
        text = str(error).lower()
        where = repr(str(self.path))
        if _disk_is_full(error):
            return StoreError(
                f"the disk is full: could not write store {where} ({first_line}). Everything stored "
                "before this write is kept; free some space (or move the store with --store) and run "
                "again to carry on where it stopped"
            )
        if isinstance(error, duckdb.OutOfMemoryException):
            return StoreError(
                f"DuckDB ran out of memory working on store {where} ({first_line}). Everything stored "
                "before is kept; free memory or lower --batch-size and run again"
            )
        if "permission denied" in text or isinstance(error, duckdb.PermissionException):
            return StoreError(f"cannot write store {where}: permission denied; point --store at a file you can write")
        return StoreError(
            f"store {where} is damaged or unreadable ({first_line}); the operation was rolled back. "
            "Restore the store from a copy, or point --store at another file"
        )

    def _open_with_retry(self) -> duckdb.DuckDBPyConnection:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(f"cannot create the store folder {str(self.path.parent)!r}: {error.strerror}") from None
        _remove_if_creation_was_interrupted(self.path)
        deadline = time.monotonic() + self.lock_timeout_s
        delay = _FIRST_RETRY_DELAY_S
        while True:
            existed = self.path.exists()
            try:
                return duckdb.connect(str(self.path), config=_CONNECTION_CONFIG)
            except duckdb.IOException as error:
                if _disk_is_full(error):
                    if not existed:  # a header cut short by the full disk: leave nothing behind
                        for leftover in (self.path, Path(f"{self.path}.wal")):
                            leftover.unlink(missing_ok=True)
                    raise self._storage_error(error) from None
                if not _is_lock_conflict(error):
                    raise StoreError(
                        f"cannot open store {str(self.path)!r}: it is not a readable DuckDB file "
                        f"({str(error).splitlines()[0]}); point --store at another file"
                    ) from None
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"store {str(self.path)!r} stayed busy for {self.lock_timeout_s:.0f} s "
                        "(another process is writing to it); try again when it finishes"
                    ) from None
                if delay == _FIRST_RETRY_DELAY_S:
                    log.info("store %s is busy in another process; waiting up to %.0f s", self.path, self.lock_timeout_s)
                time.sleep(delay)
                delay = min(delay * 1.5, 0.5)
            except duckdb.Error as error:
                raise StoreError(
                    f"cannot open store {str(self.path)!r}: {str(error).splitlines()[0]}; "
                    "point --store at another file"
                ) from None

    @contextmanager
    def _transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._connect() as connection:
            connection.begin()
            try:
                yield connection
            except BaseException:
                # A failed write may already have aborted the transaction; the original error matters.
                with suppress(duckdb.Error):
                    connection.rollback()
                raise
            connection.commit()

    def _ensure_schema(self) -> None:
        """Create a new store, migrate an older one, or refuse a file magdash cannot read right."""
        with self._transaction() as connection:
            tables = {
                row[0] for row in connection.execute(
                    "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
                ).fetchall()
            }
            if not tables:
                for statement in _SCHEMA:
                    connection.execute(statement)
                connection.execute("INSERT INTO meta VALUES ('schema_version', ?)", [str(SCHEMA_VERSION)])
                return
            version = self._stored_schema_version(connection, tables)
            for step in range(version, SCHEMA_VERSION):
                log.warning("migrating store %s from schema %d to %d", self.path, step, step + 1)
                _MIGRATIONS[step](connection)
                connection.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(step + 1)])

    def _stored_schema_version(self, connection: duckdb.DuckDBPyConnection, tables: set[str]) -> int:
        where = repr(str(self.path))
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

    def schema_version(self) -> int:
        with self._connect() as connection:
            row = connection.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row[0])

    # -- models ------------------------------------------------------------------------

    def register_model(self, record: ModelRecord) -> None:
        """Add a model under its name; the same identity again is a no-op.

        A different checkpoint under a taken name is refused rather than mixed in, so two
        checkpoints never share cache entries and nothing stored is overwritten.
        """
        with self._transaction() as connection:
            _register_model(connection, record)

    def register(self, stimuli: StimulusSet, record: ModelRecord, *, join_stored: bool = False) -> str:
        """Register a stimulus set and a model in one transaction: if either is refused, neither is stored.

        With ``join_stored`` (for a set name magdash chose) sentences already stored under another
        name join that set. Returns the name the set is stored under.
        """
        with self._transaction() as connection:
            if join_stored:
                stimuli = _as_stored(connection, stimuli)
            _register_stimulus_set(connection, stimuli)
            _register_model(connection, record)
        return stimuli.name

    def model_record(self, name: str) -> ModelRecord:
        with self._connect() as connection:
            row = connection.execute(
                "SELECT name, model_id, source, fingerprint, dtype, transformers_version, architecture,"
                " n_blocks, hidden_size, layer_labels, position, is_random FROM models WHERE name = ?",
                [name],
            ).fetchone()
        if row is None:
            known = ", ".join(self.model_names()) or "none yet"
            raise StoreError(f"no model named {name!r} in the store (stored: {known}); extract or import it first")
        return ModelRecord(
            name=row[0], model_id=row[1], source=row[2], fingerprint=row[3], dtype=row[4],
            transformers_version=row[5], architecture=row[6], n_blocks=int(row[7]),
            hidden_size=int(row[8]), layer_labels=tuple(json.loads(row[9])), position=row[10],
            is_random=bool(row[11]),
        )

    def find_model_by_id(self, model_id: str) -> str | None:
        with self._connect() as connection:
            row = connection.execute(
                "SELECT name FROM models WHERE model_id = ? ORDER BY created_at LIMIT 1", [model_id]
            ).fetchone()
        return None if row is None else row[0]

    def model_names(self) -> list[str]:
        with self._connect() as connection:
            rows = connection.execute("SELECT name FROM models ORDER BY name").fetchall()
        return [r[0] for r in rows]

    def list_models(self) -> pd.DataFrame:
        """Every stored model with its identity and the stimulus sets it has, complete or not."""
        with self._connect() as connection:
            models = connection.execute(
                "SELECT name, model_id, source, architecture, n_blocks, hidden_size, dtype, position,"
                " is_random, fingerprint, transformers_version, created_at FROM models ORDER BY name"
            ).df()
            progress = self._progress_query(connection)
            flagged = connection.execute(
                "SELECT model_id, list(DISTINCT layer ORDER BY layer) AS layers FROM nonfinite GROUP BY model_id"
            ).fetchall()
        complete = progress[progress["done"] == progress["total"]]
        sets = complete.groupby("model_id")["set_name"].apply(lambda s: ", ".join(sorted(s)))
        models["stimulus_sets"] = models["model_id"].map(sets).fillna("")
        layers = {model_id: ", ".join(map(str, flagged_layers)) for model_id, flagged_layers in flagged}
        models["nonfinite_layers"] = models["model_id"].map(layers).fillna("")
        return models

    def _progress_query(self, connection: duckdb.DuckDBPyConnection) -> pd.DataFrame:
        return connection.execute(
            """
            WITH totals AS (SELECT set_name, count(*) AS total FROM stimulus_items GROUP BY set_name),
                 hits AS (
                    SELECT d.model_id, i.set_name, count(*) AS done
                    FROM done d JOIN stimulus_items i ON i.item_key = d.item_key
                    GROUP BY d.model_id, i.set_name)
            SELECT h.model_id, h.set_name, h.done, t.total
            FROM hits h JOIN totals t USING (set_name)
            """
        ).df()

    def extraction_progress(self) -> pd.DataFrame:
        """One row per (model, stimulus set) with stored and total item counts."""
        with self._connect() as connection:
            progress = self._progress_query(connection)
            names = connection.execute("SELECT name, model_id FROM models").df()
        merged = names.merge(progress, on="model_id")
        return merged[["name", "set_name", "done", "total"]].sort_values(["name", "set_name"], ignore_index=True)

    # -- stimulus sets -----------------------------------------------------------------

    def register_stimulus_set(self, stimuli: StimulusSet) -> None:
        """Store a stimulus set; the same content again is a no-op, a changed one is refused, and
        so is a new name for sentences stored under another (one content is one set: see
        :meth:`known_as`)."""
        with self._transaction() as connection:
            _register_stimulus_set(connection, stimuli)

    def known_as(self, stimuli: StimulusSet) -> StimulusSet:
        """``stimuli`` under the name its sentences are stored as, when that is another name.

        For names magdash chose itself (a default), so that the same sentences never become a
        second set: a model would then have both, and every analysis would ask which one.
        """
        with self._connect() as connection:
            return _as_stored(connection, stimuli)

    def stimulus_set(self, name: str) -> StimulusSet:
        with self._connect() as connection:
            row = connection.execute(
                "SELECT carriers, magnitudes FROM stimulus_sets WHERE name = ?", [name]
            ).fetchone()
        if row is None:
            known = ", ".join(self.stimulus_set_names()) or "none yet"
            raise StoreError(f"no stimulus set named {name!r} in the store (stored: {known})")
        return StimulusSet(name, tuple(json.loads(row[0])), tuple(json.loads(row[1])))

    def stimulus_set_names(self) -> list[str]:
        with self._connect() as connection:
            rows = connection.execute("SELECT name FROM stimulus_sets ORDER BY name").fetchall()
        return [r[0] for r in rows]

    def stimulus_sets_for(self, name: str) -> list[str]:
        """The stimulus sets completely extracted for model ``name``."""
        model_id = self.model_record(name).model_id
        with self._connect() as connection:
            progress = self._progress_query(connection)
        rows = progress[(progress["model_id"] == model_id) & (progress["done"] == progress["total"])]
        return sorted(rows["set_name"])

    def resolve_stimuli(self, name: str, stimuli: str | None) -> str:
        """The stimulus set to use: the one asked for, else the model's only complete set."""
        available = self.stimulus_sets_for(name)
        if stimuli is not None:
            if stimuli not in available:
                listed = ", ".join(available) or "none"
                raise StoreError(
                    f"model {name!r} has no complete stimulus set {stimuli!r} (it has: {listed}); "
                    "extract it first"
                )
            return stimuli
        if len(available) == 1:
            return available[0]
        if not available:
            raise StoreError(f"model {name!r} has no complete stimulus set yet; run extract first")
        raise StoreError(
            f"model {name!r} has several stimulus sets ({', '.join(available)}); choose one with --stimuli"
        )

    # -- vectors -----------------------------------------------------------------------

    def missing_item_keys(self, model_id: str, set_name: str) -> set[str]:
        with self._connect() as connection:
            rows = connection.execute(
                "SELECT item_key FROM stimulus_items WHERE set_name = ? "
                "EXCEPT SELECT item_key FROM done WHERE model_id = ?",
                [set_name, model_id],
            ).fetchall()
        return {r[0] for r in rows}

    def write_vectors(self, model_id: str, item_keys: Sequence[str], vectors: np.ndarray) -> int:
        """Store ``vectors`` (n_items, n_layers, d) for ``item_keys`` in one transaction.

        Items already marked done (another run got there first) are skipped, so concurrent
        extractions of the same model never duplicate rows. Returns how many items were written.
        """
        vectors = np.asarray(vectors)
        if vectors.ndim != 3 or vectors.shape[0] != len(item_keys):
            raise ValueError("vectors must have shape (len(item_keys), n_layers, d)")
        with self._transaction() as connection:
            connection.register("batch_keys", pa.table({"item_key": list(item_keys)}))
            already = {
                r[0] for r in connection.execute(
                    "SELECT d.item_key FROM done d JOIN batch_keys b USING (item_key) WHERE d.model_id = ?",
                    [model_id],
                ).fetchall()
            }
            connection.unregister("batch_keys")
            keep = []
            for index, key in enumerate(item_keys):
                if key not in already:
                    already.add(key)
                    keep.append(index)
            if not keep:
                return 0
            kept = vectors[keep]
            keys = pa.array([item_keys[i] for i in keep])
            for layer in range(vectors.shape[1]):
                table = vector_table(model_id, layer)
                connection.execute(f"CREATE TABLE IF NOT EXISTS {table} (item_key VARCHAR, vec BLOB)")
                connection.register("batch_rows", pa.table({"item_key": keys, "vec": _encode_vectors(kept[:, layer])}))
                connection.execute(f"INSERT INTO {table} SELECT * FROM batch_rows")
                connection.unregister("batch_rows")
            flagged_items, flagged_layers = np.nonzero(nonfinite_rows(kept))
            _insert_nonfinite(connection, model_id, flagged_layers.tolist(), [item_keys[keep[i]] for i in flagged_items])
            connection.register("batch_done", pa.table({"model_id": [model_id] * len(keys), "item_key": keys}))
            connection.execute("INSERT INTO done SELECT * FROM batch_done")
            connection.unregister("batch_done")
        return len(keep)

    def nonfinite_summary(self) -> pd.DataFrame:
        """(name, set_name, layer, vectors): how many stored vectors hold Inf or NaN, where any do."""
        with self._connect() as connection:
            return connection.execute(
                "SELECT m.name, i.set_name, n.layer, count(*) AS vectors FROM nonfinite n "
                "JOIN models m ON m.model_id = n.model_id JOIN stimulus_items i ON i.item_key = n.item_key "
                "GROUP BY m.name, i.set_name, n.layer ORDER BY m.name, i.set_name, n.layer"
            ).df()

    def nonfinite_counts(self, name: str, stimuli: str) -> dict[int, int]:
        """Layer -> how many of the stimulus set's stored vectors hold Inf or NaN (flagged layers only)."""
        self.model_record(name)  # an unknown model is an error, not "nothing flagged"
        return nonfinite_counts_in(self.nonfinite_summary(), name, stimuli)

    def read_layer(self, name: str, stimuli: str, layer: int) -> LayerData:
        """One layer's vectors as a (n_magnitudes, n_carriers, d) float32 array."""
        return next(self.read_layers(name, stimuli, [layer]))

    def read_layers(self, name: str, stimuli: str, layers: Sequence[int] | None = None) -> Iterator[LayerData]:
        """Yield layers one at a time (all by default), so memory holds one layer at most.

        Each layer is read on its own short connection, so a writer in another process waits
        at most for one layer read, never for the caller's work between layers.
        """
        record = self.model_record(name)
        stimulus_set = self.stimulus_set(stimuli)
        layers = range(record.n_layers) if layers is None else list(layers)
        for layer in layers:
            if not 0 <= layer < record.n_layers:
                raise StoreError(f"layer {layer} does not exist for {name!r}: use 0..{record.n_layers - 1}")
        n_magnitudes, n_carriers = len(stimulus_set.magnitudes), len(stimulus_set.carriers)
        position = {item.key: index for index, item in enumerate(stimulus_set.items)}
        for layer in layers:
            table = vector_table(record.model_id, layer)
            with self._connect() as connection:
                exists = connection.execute(
                    "SELECT count(*) FROM duckdb_tables() WHERE table_name = ?", [table]
                ).fetchall()[0][0]
                rows = pa.table({"item_key": pa.array([], pa.string()), "vec": pa.array([], pa.binary())})
                if exists:
                    rows = connection.sql(
                        f"SELECT item_key, vec FROM {table} "
                        "WHERE item_key IN (SELECT item_key FROM stimulus_items WHERE set_name = ?)",
                        params=[stimuli],
                    ).to_arrow_table()
            if rows.num_rows != n_magnitudes * n_carriers:
                raise StoreError(
                    f"model {name!r} has {rows.num_rows} of {n_magnitudes * n_carriers} vectors of "
                    f"stimulus set {stimuli!r} at layer {layer}; run extract again to finish it"
                )
            vectors = np.empty((n_magnitudes, n_carriers, record.hidden_size), dtype=np.float32)
            targets = np.fromiter((position[key] for key in rows.column("item_key").to_pylist()), dtype=np.int64)
            _decode_vectors_into(vectors.reshape(-1, record.hidden_size), targets, rows.column("vec"))
            # Let the fetched rows go before the caller works on this layer.
            del rows
            yield LayerData(
                layer=layer,
                label=record.layer_labels[layer],
                magnitudes=np.asarray(stimulus_set.magnitudes, dtype=np.float64),
                carriers=list(stimulus_set.carriers),
                vectors=vectors,
            )

    def data_fingerprint(self, name: str, stimuli: str) -> str:
        """Changes whenever the vectors behind (model, stimulus set) can have changed."""
        record = self.model_record(name)
        stimulus_set = self.stimulus_set(stimuli)
        missing = len(self.missing_item_keys(record.model_id, stimuli))
        payload = f"{record.model_id}|{stimulus_set.content_hash}|{missing}"
        return hashlib.sha1(payload.encode()).hexdigest()[:20]

    # -- analysis cache ----------------------------------------------------------------

    def get_result(self, key: str) -> bytes | None:
        with self._connect() as connection:
            row = connection.execute("SELECT payload FROM results WHERE key = ?", [key]).fetchone()
        return None if row is None else bytes(row[0])

    def put_result(self, key: str, kind: str, payload: bytes) -> None:
        with self._transaction() as connection:
            connection.execute("DELETE FROM results WHERE key = ?", [key])
            connection.execute("INSERT INTO results (key, kind, payload) VALUES (?, ?, ?)", [key, kind, payload])

    # -- frequency sources -------------------------------------------------------------

    def put_frequency_source(self, name: str, counts: pd.DataFrame, provenance: dict) -> None:
        """Store (or replace) a frequency source: ``counts`` has columns number and count."""
        if not isinstance(name, str) or not name.strip():
            raise StoreError("a frequency source needs a non-empty name")
        table = pa.table({
            "source": [name] * len(counts),
            "number": pd.to_numeric(counts["number"]).astype("int64").to_numpy(),
            "count": pd.to_numeric(counts["count"]).astype("int64").to_numpy(),
        })
        with self._transaction() as connection:
            connection.execute("DELETE FROM frequency_counts WHERE source = ?", [name])
            connection.execute("DELETE FROM frequency_sources WHERE name = ?", [name])
            connection.execute(
                "INSERT INTO frequency_sources (name, provenance) VALUES (?, ?)", [name, json.dumps(provenance)]
            )
            connection.register("new_counts", table)
            connection.execute("INSERT INTO frequency_counts SELECT * FROM new_counts")
            connection.unregister("new_counts")

    def get_frequency_source(self, name: str) -> tuple[pd.DataFrame, dict]:
        with self._connect() as connection:
            row = connection.execute("SELECT provenance FROM frequency_sources WHERE name = ?", [name]).fetchone()
            if row is None:
                raise StoreError(f"no frequency source named {name!r} in the store")
            counts = connection.execute(
                "SELECT number, count FROM frequency_counts WHERE source = ? ORDER BY number", [name]
            ).df()
        return counts, json.loads(row[0])

    def list_frequency_sources(self) -> pd.DataFrame:
        with self._connect() as connection:
            return connection.execute(
                """
                SELECT s.name, count(c.number) AS n_numbers, coalesce(sum(c.count), 0) AS total, s.provenance
                FROM frequency_sources s LEFT JOIN frequency_counts c ON c.source = s.name
                GROUP BY s.name, s.provenance ORDER BY s.name
                """
            ).df()

    # -- npz import and export -----------------------------------------------------------

    def import_arrays(
        self,
        name: str,
        per_carrier: np.ndarray,
        magnitudes: Sequence[float] | None,
        *,
        carriers: Sequence[str] | None = None,
        layer_labels: Sequence[str] | None = None,
        stimuli: str | None = None,
        source: str = "import",
        n_blocks: int | None = None,
        last_layer: str = "block",
    ) -> tuple[ModelRecord, str]:
        """Store hidden states extracted elsewhere as model ``name``.

        ``per_carrier`` has shape (n_magnitudes, n_carriers, n_layers, d). Carriers that are
        templates with ``{n}`` keep their sentences (and so match a stimulus set extracted here,
        such as the paper's); other labels become templates ``"<label> {n}"``. Without a
        ``stimuli`` name the set takes the name its sentences are already stored under, else
        'paper' for the paper's, else ``<name>-stimuli``. ``last_layer="post-norm"`` says the
        last stored layer is the output of the final norm with no pre-norm copy before it (the
        paper's files: transformers' ``hidden_states[-1]``): it is labelled so, and the model
        has one block fewer than layers past the embeddings, which keeps it out of the default
        core band. ``n_blocks`` gives the block count otherwise read from the labels. The
        model's identity is a hash of the arrays, so importing the same file twice is a no-op.
        Returns the stored record and the stimulus set's name.
        """
        per_carrier, magnitudes, carriers, layer_labels = validate_import_arrays(
            per_carrier, magnitudes, carriers, layer_labels
        )
        n_magnitudes, n_carriers, n_layers, dim = per_carrier.shape
        layer_labels, n_blocks = _imported_layers(layer_labels, n_blocks, last_layer)
        digest = hashlib.sha256()
        digest.update(np.ascontiguousarray(per_carrier).tobytes())
        digest.update(json.dumps([magnitudes, carriers, layer_labels, n_blocks]).encode())
        fingerprint = f"sha256:{digest.hexdigest()[:32]}"
        model_id = hashlib.sha1(f"{fingerprint}|import".encode()).hexdigest()[:20]
        set_name = stimuli if stimuli is not None else _import_set_name(name, carriers, magnitudes, fingerprint)
        stimulus_set = StimulusSet(set_name, tuple(carriers), tuple(magnitudes))
        record = ModelRecord(
            name=name, model_id=model_id, source=source, fingerprint=fingerprint, dtype="float32",
            transformers_version="", architecture="imported", n_blocks=n_blocks,
            hidden_size=dim, layer_labels=tuple(layer_labels), position="imported", is_random=False,
        )
        set_name = self.register(stimulus_set, record, join_stored=stimuli is None)
        index = {(item.magnitude, item.carrier_index): item.key for item in stimulus_set.items}
        keys = [index[(m, c)] for m in stimulus_set.magnitudes for c in range(n_carriers)]
        order = np.argsort(magnitudes, kind="stable")
        flat = per_carrier[order].reshape(n_magnitudes * n_carriers, n_layers, dim)
        chunk = max(1, (64 << 20) // max(1, n_layers * dim * 4))
        for start in range(0, len(keys), chunk):
            self.write_vectors(model_id, keys[start:start + chunk], flat[start:start + chunk])
        return record, set_name

    def export_arrays(self, name: str, stimuli: str) -> dict[str, np.ndarray]:
        """The reference layout: per_carrier (n_magnitudes, n_carriers, n_layers, d), labels and
        the block count (so that an import gives back the same core band)."""
        record = self.model_record(name)
        layers = list(self.read_layers(name, stimuli))
        return {
            "per_carrier": np.stack([layer.vectors for layer in layers], axis=2).astype(np.float32),
            "magnitudes": layers[0].magnitudes,
            "carriers": np.asarray(layers[0].carriers, dtype=str),
            "layer_labels": np.asarray(record.layer_labels, dtype=str),
            "n_blocks": np.asarray(record.n_blocks),
        }


def _register_model(connection: duckdb.DuckDBPyConnection, record: ModelRecord) -> None:
    row = connection.execute(
        "SELECT model_id, fingerprint, dtype FROM models WHERE name = ?", [record.name]
    ).fetchone()
    if row is not None:
        if row[0] == record.model_id:
            return
        raise StoreError(
            f"the store already holds a different model named {record.name!r} "
            f"(fingerprint {row[1][:12]}, {row[2]}); pass --name to store this one under another name"
        )
    values = asdict(record)
    values["layer_labels"] = json.dumps(list(record.layer_labels))
    columns = list(values)
    connection.execute(
        f"INSERT INTO models ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
        [values[c] for c in columns],
    )


def _register_stimulus_set(connection: duckdb.DuckDBPyConnection, stimuli: StimulusSet) -> None:
    from magdash.stimuli import check_reserved_name

    check_reserved_name(stimuli)
    row = connection.execute("SELECT content_hash FROM stimulus_sets WHERE name = ?", [stimuli.name]).fetchone()
    if row is not None:
        if row[0] == stimuli.content_hash:
            return
        raise StoreError(
            f"a different stimulus set named {stimuli.name!r} is already stored; choose another name with --stimuli"
        )
    stored = _stored_name_for_content(connection, stimuli.content_hash)
    if stored is not None:
        raise StoreError(
            f"the stored stimulus set {stored!r} holds these same sentences: use the name {stored!r} "
            "(or leave the name out) rather than a second name for them"
        )
    connection.execute(
        "INSERT INTO stimulus_sets (name, content_hash, carriers, magnitudes) VALUES (?, ?, ?, ?)",
        [stimuli.name, stimuli.content_hash, json.dumps(list(stimuli.carriers)), json.dumps(list(stimuli.magnitudes))],
    )
    items = pa.table({
        "set_name": [stimuli.name] * len(stimuli.items),
        "magnitude": [item.magnitude for item in stimuli.items],
        "carrier_index": [item.carrier_index for item in stimuli.items],
        "item_key": [item.key for item in stimuli.items],
        "sentence": [item.sentence for item in stimuli.items],
        "span_start": [item.start for item in stimuli.items],
        "span_end": [item.end for item in stimuli.items],
    })
    connection.register("new_items", items)
    connection.execute("INSERT INTO stimulus_items SELECT * FROM new_items")
    connection.unregister("new_items")


def _stored_name_for_content(connection: duckdb.DuckDBPyConnection, content_hash: str) -> str | None:
    row = connection.execute(
        "SELECT name FROM stimulus_sets WHERE content_hash = ? ORDER BY created_at, name LIMIT 1", [content_hash]
    ).fetchone()
    return None if row is None else row[0]


def _as_stored(connection: duckdb.DuckDBPyConnection, stimuli: StimulusSet) -> StimulusSet:
    """``stimuli`` renamed to the stored set holding the same sentences, if there is one."""
    stored = _stored_name_for_content(connection, stimuli.content_hash)
    if stored is None or stored == stimuli.name:
        return stimuli
    return StimulusSet(stored, stimuli.carriers, stimuli.magnitudes)


def nonfinite_counts_in(summary: pd.DataFrame, name: str, stimuli: str) -> dict[int, int]:
    """Layer -> flagged vectors of (``name``, ``stimuli``) in a :meth:`Store.nonfinite_summary`."""
    rows = summary[(summary["name"] == name) & (summary["set_name"] == stimuli)]
    return {int(layer): int(count) for layer, count in zip(rows["layer"], rows["vectors"], strict=True)}


def _insert_nonfinite(
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
                _decode_vectors_into(vectors, np.arange(batch.num_rows), pa.chunked_array([batch.column(1)]))
                batch_keys = batch.column(0).to_pylist()
                for row in np.flatnonzero(nonfinite_rows(vectors)):
                    layers.append(layer)
                    keys.append(batch_keys[row])
        # Written after the scans: a new statement on this connection would end the open reader.
        _insert_nonfinite(connection, model_id, layers, keys)


def _merge_duplicate_stimulus_sets(connection: duckdb.DuckDBPyConnection) -> None:
    """Migration 2 -> 3: one stimulus set per content.

    Earlier releases stored the same sentences under several names (an import without carriers
    made a set per model), and every model then listed all of them, so an analysis without
    ``--stimuli`` could not choose. Each group of sets with the same content keeps one name:
    'paper' for the paper's sentences (a lone set of them is renamed 'paper'), else the set
    stored first. The vectors are keyed by sentence, not by set, so none move; analyses cached
    under a dropped name are simply computed again under the kept one.
    """
    from magdash.stimuli import PAPER_SET_NAME, paper_stimuli

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


_MIGRATIONS = {1: _flag_stored_nonfinite_vectors, 2: _merge_duplicate_stimulus_sets}
"""Schema version -> the step that brings a store of that version to the next one."""


def _imported_layers(
    layer_labels: Sequence[str], n_blocks: int | None, last_layer: str
) -> tuple[list[str], int]:
    """The labels and block count of imported layers.

    ``last_layer="post-norm"``: the last layer is the final norm's output of the last block,
    L = n_layers - 1. Else ``n_blocks`` when given, else read from the labels: all layers but
    the embeddings, and but a trailing post-norm layer (a magdash export: L+1 is post-norm).
    """
    labels = list(layer_labels)
    n_layers = len(labels)
    if last_layer not in LAST_LAYER_CHOICES:
        raise StoreError(f"last layer must be one of {', '.join(LAST_LAYER_CHOICES)}, got {last_layer!r}")
    if last_layer == "post-norm":
        if n_layers < 3:
            raise StoreError(f"{n_layers} layers cannot end in a post-norm layer: it needs the embeddings and two more")
        if n_blocks is not None and int(n_blocks) != n_layers - 1:
            raise StoreError(
                f"the file says {int(n_blocks)} blocks, but a post-norm last layer after {n_layers - 1} layers "
                f"means {n_layers - 1}: leave out the post-norm option or fix n_blocks"
            )
        labels[-1] = POST_NORM_LABEL
        return labels, n_layers - 1
    if n_blocks is not None:
        if not 1 <= int(n_blocks) <= n_layers - 1:
            raise StoreError(f"n_blocks is {int(n_blocks)}: with {n_layers} layers it must be 1..{n_layers - 1}")
        return labels, int(n_blocks)
    extra = 2 if n_layers > 2 and "post-norm" in labels[-1].lower() else 1
    return labels, max(n_layers - extra, 1)


def _import_set_name(name: str, carriers: Sequence[str], magnitudes: Sequence[int], fingerprint: str) -> str:
    from magdash.stimuli import MAX_SET_NAME_CHARS, PAPER_CARRIERS, PAPER_MAGNITUDES, PAPER_SET_NAME

    if tuple(carriers) == PAPER_CARRIERS and tuple(sorted(magnitudes)) == PAPER_MAGNITUDES:
        return PAPER_SET_NAME
    derived = f"{name}-stimuli"
    # A model name too long to carry a set name must not be refused for a name the user never gave.
    return derived if len(derived) <= MAX_SET_NAME_CHARS else f"import-{fingerprint.removeprefix('sha256:')[:16]}"


def validate_import_arrays(
    per_carrier: np.ndarray,
    magnitudes: Sequence[float] | None,
    carriers: Sequence[str] | None,
    layer_labels: Sequence[str] | None,
) -> tuple[np.ndarray, list[int], list[str], list[str]]:
    """Check an imported array set and fill in optional labels; raise StoreError saying what to fix."""
    from magdash.stimuli import PLACEHOLDER

    array = np.asarray(per_carrier)
    if array.dtype.kind not in "fiu":
        raise StoreError(f"per_carrier holds {array.dtype} values: it must be a float array")
    if array.ndim != 4:
        raise StoreError(
            f"per_carrier has shape {array.shape}: it must be (n_magnitudes, n_carriers, n_layers, d)"
        )
    if min(array.shape) < 1:
        raise StoreError(f"per_carrier has an empty axis {array.shape}")
    array = array.astype(np.float32, copy=False)
    if not np.isfinite(array).any():
        raise StoreError("per_carrier holds no finite values (all NaN or infinite)")
    if magnitudes is None:
        raise StoreError(
            "the file has no 'magnitudes' array: say which magnitude each row of per_carrier is "
            "(e.g. --magnitudes paper for the paper's files)"
        )
    magnitude_array = np.asarray(magnitudes).ravel()
    if magnitude_array.dtype.kind not in "fiu":
        raise StoreError("magnitudes must be numbers")
    if len(magnitude_array) != array.shape[0]:
        raise StoreError(
            f"{len(magnitude_array)} magnitudes for {array.shape[0]} rows of per_carrier: they must match"
        )
    if not np.all(np.isfinite(magnitude_array)) or np.any(magnitude_array <= 0):
        raise StoreError("magnitudes must be positive numbers")
    if np.any(magnitude_array != np.round(magnitude_array)):
        raise StoreError("magnitudes must be whole numbers")
    magnitude_list = [int(m) for m in magnitude_array]
    if len(set(magnitude_list)) != len(magnitude_list):
        raise StoreError("magnitudes repeat: each row of per_carrier needs its own magnitude")
    n_carriers, n_layers = array.shape[1], array.shape[2]
    if carriers is None:
        labels = [f"carrier {i + 1}" for i in range(n_carriers)]
    else:
        labels = [str(c) for c in np.asarray(carriers).ravel()]
        if len(labels) != n_carriers:
            raise StoreError(f"{len(labels)} carriers for {n_carriers} columns of per_carrier: they must match")
    if not all(label.count(PLACEHOLDER) == 1 for label in labels):
        labels = [f"{label} {PLACEHOLDER}" if PLACEHOLDER not in label else label for label in labels]
    if len(set(labels)) != len(labels):
        raise StoreError("carrier labels repeat: give each carrier its own label")
    if layer_labels is None:
        layer_names = ["embeddings"] + [f"layer {i}" for i in range(1, n_layers)]
    else:
        layer_names = [str(label) for label in np.asarray(layer_labels).ravel()]
        if len(layer_names) != n_layers:
            raise StoreError(f"{len(layer_names)} layer labels for {n_layers} layers: they must match")
    return array, magnitude_list, labels, layer_names


def read_npz(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """Load an npz without pickle; StoreError for unreadable files or a missing per_carrier."""
    try:
        with open(path, "rb") as handle:
            signature = handle.read(6)
    except FileNotFoundError:
        raise StoreError(f"no file {str(path)!r}") from None
    except (OSError, ValueError) as error:
        raise StoreError(f"cannot read {str(path)!r}: {getattr(error, 'strerror', None) or error}") from None
    if signature.startswith(b"\x93NUMPY"):
        raise StoreError(f"{str(path)!r} is a single .npy array; save the arrays together with numpy.savez")
    if signature[:4] not in (b"PK\x03\x04", b"PK\x05\x06"):  # a zip archive, as every .npz is
        raise StoreError(f"{str(path)!r} is not an .npz file (not a zip archive); save it with numpy.savez")
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {key: data[key] for key in data.files}
    except FileNotFoundError:
        raise StoreError(f"no file {str(path)!r}") from None
    except ValueError as error:
        raise StoreError(f"cannot read {str(path)!r} without pickle ({error}); save plain arrays") from None
    except (OSError, EOFError) as error:
        raise StoreError(f"{str(path)!r} is not a readable .npz file ({error})") from None
    except Exception as error:  # noqa: BLE001 - zipfile raises many kinds for corrupt archives
        raise StoreError(f"{str(path)!r} is not a readable .npz file ({type(error).__name__})") from None
    if "per_carrier" not in arrays:
        raise StoreError(f"{str(path)!r} has no 'per_carrier' array (it has: {', '.join(arrays) or 'nothing'})")
    return arrays


def import_inputs(
    arrays: dict[str, np.ndarray], magnitudes: Sequence[int] | None = None, carriers: Sequence[str] | None = None
) -> tuple[np.ndarray | None, np.ndarray | list[str] | None, int | None]:
    """(magnitudes, carriers, n_blocks) for an import of ``arrays`` (as :func:`read_npz` gives them).

    ``magnitudes`` and ``carriers`` given by the user fill in what the file lacks (the paper's
    files hold neither) and must agree with what it has.
    """
    stored_magnitudes = arrays.get("magnitudes")
    if (
        magnitudes is not None
        and stored_magnitudes is not None
        and np.asarray(stored_magnitudes).ravel().tolist() != list(magnitudes)
    ):
        raise StoreError("the file's magnitudes differ from those given: leave out --magnitudes or fix the file")
    stored_carriers = arrays.get("carriers")
    if (
        carriers is not None
        and stored_carriers is not None
        and [str(c) for c in np.asarray(stored_carriers).ravel()] != list(carriers)
    ):
        raise StoreError("the file's carriers differ from those given: leave out --carriers or fix the file")
    n_blocks = arrays.get("n_blocks")
    if n_blocks is not None:
        n_blocks_array = np.asarray(n_blocks)
        if n_blocks_array.shape != () or n_blocks_array.dtype.kind not in "iu":
            raise StoreError("n_blocks in the file must be a single whole number")
        n_blocks = int(n_blocks_array)
    return (
        stored_magnitudes if stored_magnitudes is not None else (None if magnitudes is None else np.asarray(magnitudes)),
        stored_carriers if stored_carriers is not None else (None if carriers is None else list(carriers)),
        n_blocks,
    )
