"""The store's vectors: Parquet shards in a folder beside its DuckDB file, which is their catalog.

A store ``cache/magdash.duckdb`` keeps its vectors in ``cache/magdash.duckdb.shards/``: one
Parquet file per model and write batch, ``<model folder>/<shard id>.parquet``. A shard holds the
batch's item keys (``item_key``) and one column per layer (``l0`` .. ``l{L-1}``), each value a
fixed-size binary of ``d`` little-endian float32: Parquet's FIXED_LEN_BYTE_ARRAY, which pyarrow
writes and reads about twice as fast as a list of floats (no repetition levels), uncompressed
(hidden states do not compress), one row group, no statistics. A layer read therefore reads one
column chunk of each shard and nothing else. The catalog's ``done`` table says which shard and
row hold each (model, item); ``shards`` lists the registered files.

Why a crash never leaves a registered half-shard (the order of :func:`new_shard`):

1. the shard is written under ``<id>.parquet.tmp`` while the writer holds ``flock`` on it;
2. it is flushed to disk (``fsync``), renamed to ``<id>.parquet`` and its folder is fsynced;
3. the caller registers it, with its items' completion markers, in one DuckDB transaction;
4. only then is the lock released; a shard not registered by then is deleted.

A process killed between 1 and 3 leaves an unregistered file and no lock (the kernel drops it
with the process). :func:`sweep` deletes such files when a process first opens the store. It
never deletes a file some writer still holds (the ``flock`` probe fails), and it reads the
catalog again after taking the locks, so a shard registered in the meantime is kept. A sweep
worker's shard (:func:`write_shard` with ``for_worker``) is written by a process that does not hold the
catalog and is registered later by the driver, so it is left alone for ``WORKER_GRACE_S``.
Registered shards are immutable and never deleted, so readers read them without any lock.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from magdash.errors import StoreError
from magdash.norm_outliers import vector_norms
from magdash.store.connection import disk_full_error, disk_is_full
from magdash.store.connection import fsync_folder as _fsync_folder  # a name the fault tests patch

log = logging.getLogger(__name__)

SHARD_FORMAT = "magdash-shard-1"
"""Written into every shard's Parquet metadata; a reader refuses a shard of another format."""

WORKER_GRACE_S = 3600.0
"""How long a sweep worker's shard may wait, unregistered, for the driver that registers it."""

WRITE_BATCH_BYTES = 256 << 20
"""The most vectors written as one shard (an import, the migration, an extraction's or a sweep
worker's batch): large enough that a shard's registration (a DuckDB connection and transaction,
tens of ms) is a small part of its writing, small enough that the layer-major copy a shard of
item-major vectors needs stays a fraction of the array the caller already holds."""

_METADATA_KEY = b"magdash"
_SUFFIX = ".parquet"
_PARTIAL_SUFFIX = ".parquet.tmp"
_WORKER_MARK = ".worker"


def shard_folder(store_path: Path) -> Path:
    """The folder of a store file's shards: the file's name with ``.shards`` added."""
    return Path(f"{store_path}.shards")


def model_folder(model_id: str) -> str:
    """The subfolder of a model's shards, derived from a hash so no user text reaches a path."""
    return hashlib.sha1(model_id.encode()).hexdigest()[:20]


def items_per_batch(n_layers: int, dim: int) -> int:
    """How many items of ``n_layers`` x ``dim`` float32 make up ``WRITE_BATCH_BYTES``."""
    return max(1, WRITE_BATCH_BYTES // max(1, n_layers * dim * 4))


def layer_column(layer: int) -> str:
    return f"l{int(layer)}"


@dataclass
class Shard:
    """A shard written to disk: its name in the folder, its items in row order, the layers and
    dimension of its vectors, which (row, layer) vectors hold Inf or NaN, and every vector's
    L2 norm, (rows, layers) (:mod:`magdash.norm_outliers`)."""

    name: str
    item_keys: tuple[str, ...]
    n_layers: int
    dim: int
    n_bytes: int
    flagged_rows: tuple[int, ...]
    flagged_layers: tuple[int, ...]
    norms: np.ndarray = field(repr=False, compare=False)
    registered: bool = field(default=False, compare=False)


VectorParts = np.ndarray | Sequence[np.ndarray]
"""A shard's vectors: one (n_items, n_layers, d) array, or consecutive parts of its rows (an
extraction's batches), written side by side without being joined into one array first."""


def _as_parts(vectors: VectorParts) -> list[np.ndarray]:
    parts = [vectors] if isinstance(vectors, np.ndarray) else list(vectors)
    with np.errstate(over="ignore"):  # a float64 value beyond float32 becomes the Inf that is flagged
        # As the shard holds them: flags and norms describe it.
        parts = [np.asarray(part, dtype=np.float32) for part in parts]
    if not parts or any(part.ndim != 3 or part.shape[1:] != parts[0].shape[1:] for part in parts):
        raise ValueError("vectors must be (n_items, n_layers, d) arrays of one n_layers and d")
    return parts


def _shard_table(model_id: str, item_keys: Sequence[str], parts: Sequence[np.ndarray]) -> pa.Table:
    _, n_layers, dim = parts[0].shape
    width = dim * 4
    columns = {"item_key": pa.array(list(item_keys), pa.string())}
    for layer in range(n_layers):
        # A Parquet column's values side by side: contiguous already where a part is layer-major
        # underneath (an extraction's batches), copied otherwise. Parts stay separate chunks,
        # which Parquet writes into one row group as they are.
        chunks = []
        for part in parts:
            values = np.ascontiguousarray(part[:, layer], dtype="<f4")
            chunks.append(pa.Array.from_buffers(pa.binary(width), len(part), [None, pa.py_buffer(values)]))
        columns[layer_column(layer)] = pa.chunked_array(chunks, pa.binary(width))
    description = {"format": SHARD_FORMAT, "model_id": model_id, "n_layers": n_layers, "dim": dim,
                   "dtype": "float32 little-endian"}
    return pa.table(columns).replace_schema_metadata({_METADATA_KEY: json.dumps(description).encode()})


def _lock(descriptor: int, *, wait: bool) -> bool:
    """``flock`` the open file: tied to this open file, so closing other handles to the same file
    (pyarrow's) keeps it, and any other open of the file, even in this process, is refused it."""
    try:
        import fcntl
    except ImportError:  # Windows: no flock, so no file counts as free and the sweep removes nothing
        return False
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        return False
    return True


@contextmanager
def extraction_turn(folder: Path, model_id: str) -> Iterator[bool]:
    """Hold the turn of ``model_id``'s extraction into the store whose shards are in ``folder``, so that
    two extractions of one model take turns instead of both doing the whole work: the second waits,
    then finds the first's vectors stored. Yields whether it waited for another.

    The turn is an ``flock`` on ``.extracting-<model>.lock`` in the folder (a name no shard has), removed
    on the way out, so an extraction leaves no file behind. A process that was waiting then holds a lock
    on the removed file that a newcomer does not see: at worst those two extract at once, as without a
    turn, and the store keeps one copy of each item. Where locks are unavailable (Windows, a folder that
    cannot be written) no turn is taken.

    Args:
        folder: the store's shard folder.
        model_id: the identity of the vectors about to be extracted.
    """
    made_folder = not folder.exists()
    path = folder / f".extracting-{model_folder(model_id)}.lock"
    try:
        import fcntl

        folder.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except (ImportError, OSError):
        yield False
        return
    try:
        waited = not _lock(descriptor, wait=False)
        if waited:
            log.warning("another extraction of this model into the store is under way: waiting for it to finish, "
                        "then extracting only what it did not store")
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield waited
    finally:
        with suppress(OSError):
            path.unlink()
        os.close(descriptor)
        if made_folder:
            with suppress(OSError):  # left only if a shard was written into it meanwhile
                folder.rmdir()


def _shard_write_error(error: OSError, folder: Path) -> StoreError:
    """The message for a shard that could not be written, saying what was kept."""
    where = repr(str(folder))
    if disk_is_full(error):
        return disk_full_error(f"a shard in {where}", error.strerror)
    if error.errno == errno.EACCES:
        return StoreError(f"cannot write the store's shard folder {where}: permission denied")
    return StoreError(f"could not write a shard in {where} ({error}); everything stored before is kept")


def _write(folder: Path, model_id: str, item_keys: Sequence[str], vectors: VectorParts, mark: str,
           norms: np.ndarray | None) -> tuple[Shard, int]:
    """Write a shard as steps 1-2 of the module's protocol; returns it and its locked descriptor."""
    parts = _as_parts(vectors)
    n_items, n_layers = sum(len(part) for part in parts), parts[0].shape[1]
    if n_items != len(item_keys):
        raise ValueError("vectors must have one row per item key")
    if norms is None:
        norms = np.concatenate([vector_norms(part) for part in parts])
    elif np.shape(norms) != (n_items, n_layers):
        raise ValueError(f"norms must have shape ({n_items}, {n_layers}), one per stored vector")
    # A float32 vector's float64 sum of squares cannot overflow, so its norm is finite exactly
    # when every value is: one pass over the batch finds both.
    flagged_rows, flagged_layers = np.nonzero(~np.isfinite(norms))
    with np.errstate(over="ignore"):  # a norm beyond float32's range is kept as the Inf it becomes
        norms = np.asarray(norms).astype(np.float32)
    name, partial, descriptor = _create_locked(folder, model_id, mark)
    final = folder / name
    try:
        pq.write_table(
            _shard_table(model_id, item_keys, parts), str(partial), compression="none",
            use_dictionary=False, write_statistics=False, row_group_size=max(1, len(item_keys)),
        )
        os.fsync(descriptor)
        os.rename(partial, final)
        _fsync_folder(final.parent)
    except BaseException as error:
        for leftover in (partial, final):
            leftover.unlink(missing_ok=True)
        os.close(descriptor)
        if isinstance(error, OSError):
            raise _shard_write_error(error, folder) from None
        raise
    shard = Shard(
        name=name, item_keys=tuple(item_keys), n_layers=n_layers, dim=parts[0].shape[2],
        n_bytes=final.stat().st_size, flagged_rows=tuple(flagged_rows.tolist()),
        flagged_layers=tuple(flagged_layers.tolist()), norms=norms,
    )
    return shard, descriptor


def _create_locked(folder: Path, model_id: str, mark: str) -> tuple[str, Path, int]:
    """Create an empty partial shard file and lock it. A sweep can open the new file and lock it
    before this process does, and then delete it: the file at the path is then another one (or
    none), which the inode comparison sees, and a new name is taken."""
    try:
        (folder / model_folder(model_id)).mkdir(parents=True, exist_ok=True)
        while True:
            name = f"{model_folder(model_id)}/{uuid.uuid4().hex}{mark}{_SUFFIX}"
            partial = folder / (name.removesuffix(_SUFFIX) + _PARTIAL_SUFFIX)
            descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            _lock(descriptor, wait=True)
            try:
                if os.stat(partial).st_ino == os.fstat(descriptor).st_ino:
                    return name, partial, descriptor
            except FileNotFoundError:
                pass
            os.close(descriptor)
    except OSError as error:
        raise _shard_write_error(error, folder) from None


@contextmanager
def new_shard(folder: Path, model_id: str, item_keys: Sequence[str], vectors: VectorParts,
              norms: np.ndarray | None = None) -> Iterator[Shard]:
    """Write ``vectors`` (n_items, n_layers, d) as a shard and hold it locked while the caller
    registers it (setting ``registered``); an unregistered shard is deleted on the way out.
    ``norms`` (n_items, n_layers), the vectors' float64 L2 norms where the caller has them
    (computed on the device that made the vectors), spare the writer a pass over the vectors."""
    shard, descriptor = _write(folder, model_id, item_keys, vectors, "", norms)
    try:
        yield shard
    finally:
        if not shard.registered:
            (folder / shard.name).unlink(missing_ok=True)
        os.close(descriptor)


def write_shard(
    folder: Path, model_id: str, item_keys: Sequence[str], vectors: VectorParts, *, for_worker: bool = False,
    norms: np.ndarray | None = None,
) -> Shard:
    """Write a shard and release its lock: for a writer that registers it while holding the
    catalog's lock already (the schema migration), or a sweep worker (``for_worker``), which holds
    no catalog and whose driver registers the shard later, so :func:`sweep` spares it for
    ``WORKER_GRACE_S``. ``norms`` as for :func:`new_shard`."""
    shard, descriptor = _write(folder, model_id, item_keys, vectors, _WORKER_MARK if for_worker else "", norms)
    os.close(descriptor)
    return shard


def check_worker_shard(folder: Path, shard: Shard) -> None:
    """Refuse to register a worker's shard that is not on disk as the worker described it."""
    path = folder / shard.name
    try:
        rows = pq.ParquetFile(path).metadata.num_rows
    except FileNotFoundError:
        raise StoreError(
            f"the worker's shard {shard.name} is not in {str(folder)!r}: workers must write to the "
            "driver's store folder (a file system every node shares); run the sweep again"
        ) from None
    except (OSError, pa.ArrowException) as error:
        raise StoreError(f"the worker's shard {shard.name} cannot be read ({error}); run the sweep again") from None
    if rows != len(shard.item_keys):
        raise StoreError(f"the worker's shard {shard.name} holds {rows} rows, not {len(shard.item_keys)}")


def read_layer_into(
    folder: Path, name: str, layer: int, out: np.ndarray, targets: np.ndarray, rows: np.ndarray
) -> None:
    """Copy row ``rows[i]`` of ``layer`` in shard ``name`` into ``out[targets[i]]`` (``out`` is (n, d))."""
    path = folder / name
    dim = out.shape[1]
    try:
        column = pq.ParquetFile(path, memory_map=True).read(columns=[layer_column(layer)]).column(0)
    except FileNotFoundError:
        raise StoreError(
            f"the store's shard {name} is missing from {str(folder)!r}: a store is its file and this "
            "folder together; copy or move both, or restore the folder from a copy"
        ) from None
    except (KeyError, OSError, pa.ArrowException) as error:
        raise StoreError(f"the store's shard {name} is damaged or unreadable ({error}); restore it from a copy") from None
    if column.type != pa.binary(dim * 4):
        raise StoreError(f"the store's shard {name} does not hold {dim}-dimensional float32 vectors; it is damaged")
    start = 0
    in_order = len(rows) == len(column) and np.array_equal(rows, np.arange(len(rows)))
    # Every row in order into one block of the grid (an import's or a batch's shard): plain copies.
    block = in_order and len(rows) and np.array_equal(targets, np.arange(targets[0], targets[0] + len(rows)))
    order = np.arange(len(rows)) if in_order else np.argsort(rows, kind="stable")  # in order: the identity
    sorted_rows = rows if in_order else rows[order]
    for chunk in column.chunks:
        stop = start + len(chunk)
        data = np.frombuffer(chunk.buffers()[1], dtype="<f4", count=len(chunk) * dim, offset=chunk.offset * dim * 4)
        data = data.reshape(len(chunk), dim)
        if block:
            out[targets[0] + start:targets[0] + stop] = data
        elif in_order:
            out[targets[start:stop]] = data
        else:
            first, last = np.searchsorted(sorted_rows, [start, stop])
            picked = order[first:last]
            out[targets[picked]] = data[rows[picked] - start]
        start = stop
    if len(rows) and int(sorted_rows[-1]) >= start:
        raise StoreError(f"the store's shard {name} has {start} rows but the catalog expects more; it is damaged")


def shard_files(folder: Path) -> list[str]:
    """Every shard file in the folder, finished or not, as names relative to it."""
    if not folder.is_dir():
        return []
    return sorted(
        f"{path.parent.name}/{path.name}" for path in folder.glob("*/*")
        if path.name.endswith((_SUFFIX, _PARTIAL_SUFFIX))
    )


def sweep(folder: Path, registered: Callable[[], set[str]]) -> list[str]:
    """Delete the folder's unregistered shard files that no writer holds; returns their names.

    ``registered`` reads the catalog's shard names; it is called again once the candidates are
    locked, so a shard registered while they were being locked is kept.
    """
    files = shard_files(folder)
    if not files:
        return []
    known = registered()
    now = time.time()
    held: list[tuple[str, int]] = []
    try:
        for name in files:
            if name in known:
                continue
            path = folder / name
            try:
                if _WORKER_MARK in name and now - path.stat().st_mtime < WORKER_GRACE_S:
                    continue
                descriptor = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            if _lock(descriptor, wait=False):
                held.append((name, descriptor))
            else:
                os.close(descriptor)
        known = registered() if held else known
        swept = []
        for name, _ in held:
            if name not in known:
                (folder / name).unlink(missing_ok=True)
                swept.append(name)
        return swept
    finally:
        for _, descriptor in held:
            os.close(descriptor)

