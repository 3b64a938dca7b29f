"""Opening a store file: DuckDB's one-writer lock, retry, and storage failures as messages.

DuckDB lets one process at a time hold a file open for writing. A store therefore never keeps
its file open between operations: every operation attaches it, does its work and detaches it,
retrying while another process holds the lock. A CLI extraction and the dashboard can share one
store; each waits at most for the other's current batch.

The files are attached to one in-memory DuckDB instance per process (``ATTACH ... AS alias``,
then ``USE alias``) rather than opened with ``duckdb.connect(path)``: starting a DuckDB
instance builds its catalog of built-in functions, about 15-20 ms every time, while attaching
a file to a running one takes about 2 ms. Holding the attachment holds the file lock, exactly
as an open connection does; detaching releases it (and checkpoints, as closing did). Storage failures while writing (a full disk, a damaged
file) become a :class:`~magdash.errors.StoreError` that says what was kept and what to do; the
transaction under way is rolled back, so what was stored before it is kept.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import secrets
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from glob import escape as glob_escape
from pathlib import Path

import duckdb

from magdash.errors import NoStoreError, ReadOnlyStoreError, StoreError

log = logging.getLogger(__name__)

DEFAULT_STORE = Path("cache") / "magdash.duckdb"
STORE_ENV = "MAGDASH_STORE"
LOCK_TIMEOUT_ENV = "MAGDASH_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT_S = 120.0
_FIRST_RETRY_DELAY_S = 0.02
# A waiting process retries at least this often: other processes' operations are short (a few
# milliseconds each), so a writer polling more slowly would keep missing the gaps between a
# busy dashboard's reads.
_LONGEST_RETRY_DELAY_S = 0.1
# Hidden-state floats barely compress, yet analysing them for compression made every
# checkpoint (each connection close) several times slower; see bench/extract.py.
_CONNECTION_CONFIG = {"force_compression": "uncompressed"}

# Failures of the storage itself rather than of a statement: they are reported as StoreError.
_STORAGE_ERRORS = (
    duckdb.IOException,
    duckdb.SerializationException,
    duckdb.InternalException,
    duckdb.FatalException,
    duckdb.OutOfMemoryException,
    duckdb.PermissionException,
)

# One lock per store file inside this process: Streamlit serves every browser session from one
# process, and a file is attached to the process's instance once, under one alias, at a time.
_PROCESS_LOCKS: dict[str, threading.RLock] = {}
_PROCESS_LOCKS_GUARD = threading.Lock()

# The process's DuckDB instance (made again in a forked child: an instance is not fork-safe),
# and how many connections of this process use each attached file (under its file's lock).
_ENGINE: duckdb.DuckDBPyConnection | None = None
_ENGINE_PID = 0
_ATTACHED: dict[str, int] = {}
# The store files this process found it cannot write, and said so (once each).
_SAID_READ_ONLY: set[str] = set()


def _engine() -> duckdb.DuckDBPyConnection:
    global _ENGINE, _ENGINE_PID
    with _PROCESS_LOCKS_GUARD:
        if _ENGINE is None or os.getpid() != _ENGINE_PID:
            # Nothing is ever downloaded: a file that is not a DuckDB store is refused, not
            # handed to an extension fetched from the internet.
            _ENGINE = duckdb.connect(":memory:", config={
                **_CONNECTION_CONFIG, "autoinstall_known_extensions": False,
            })
            _ENGINE_PID = os.getpid()
            _ATTACHED.clear()
        return _ENGINE


def _quoted(text: str) -> str:
    """A SQL string literal (ATTACH takes no parameters)."""
    return "'" + text.replace("'", "''") + "'"


def default_store_path() -> Path:
    return Path(os.environ.get(STORE_ENV) or DEFAULT_STORE)


def _process_lock(path: str) -> threading.RLock:
    with _PROCESS_LOCKS_GUARD:
        return _PROCESS_LOCKS.setdefault(path, threading.RLock())


def _is_lock_conflict(error: Exception) -> bool:
    message = str(error).lower()
    return "lock" in message and ("conflicting" in message or "could not set" in message)


def _cannot_be_written(error: duckdb.Error) -> bool:
    """Whether DuckDB could not open a file for writing that it can read (the path was checked):
    a read-only file system, or a file the user may not write."""
    message = str(error).lower()
    return "read-only file system" in message or "permission denied" in message


def _is_storage_failure(error: duckdb.Error) -> bool:
    """A failure of the file rather than of a statement. DuckDB raises its bare ``Error`` for a
    block whose checksum does not match (a damaged file)."""
    return (isinstance(error, _STORAGE_ERRORS) or type(error) in (duckdb.Error, duckdb.DatabaseError) or disk_is_full(error)
            or _cannot_be_written(error))


def disk_is_full(error: Exception) -> bool:
    """Whether ``error`` is a full disk, a file-size limit or a quota. DuckDB reports these only in
    its message text; an ``OSError`` says so in its errno."""
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        return True
    text = str(error).lower()
    return "no space left" in text or "file too large" in text or "disk quota" in text


def disk_full_error(what: str, reason: str | None) -> StoreError:
    """The one message for a write that found the disk full: what could not be written, and that
    everything stored before it is kept (every write is one transaction or one renamed file)."""
    return StoreError(
        f"the disk is full: could not write {what} ({reason}). Everything stored before this write "
        "is kept; free some space (or move the store: store=) and run again to carry on where it stopped"
    )


def _new_store_disk_full_error(path: Path, reason: str) -> StoreError:
    """The message for a new store that a full disk kept from being created: nothing existed before,
    so nothing was kept and there is nothing to carry on (:func:`disk_full_error` says both)."""
    return StoreError(
        f"the disk is full: could not write a new store at {_shown(path)} ({reason}). Nothing was created there; "
        "free some space (or point store= at another disk) and run again", parameters=("store",),
    )


# A DuckDB file holds its format's magic at these bytes of its first header.
_DUCKDB_MAGIC, _DUCKDB_MAGIC_AT = b"DUCK", slice(8, 12)
_CREATING = ".creating-"


def _through_link(path: Path) -> Path:
    """The store a symbolic link at ``path`` points to, else ``path``. A store is its file and the
    shard folder beside it (``<file>.shards``): reached through a link, both must be the target's, or
    its vectors would be written beside the link, where the store never finds them. A link to
    nothing stays as it is, to be refused by name."""
    if os.path.islink(path) and os.path.exists(path):
        return Path(os.path.realpath(path))
    return path


def _shown(path: Path) -> str:
    text = str(path)
    return repr(text if len(text) <= 120 else text[:117] + "...")


def _kind_of(mode: int) -> str:
    for test, kind in ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


class StoreFile:
    """One store file: short connections and transactions on it, with lock retry.

    Opening checks the path before DuckDB sees it, so that nothing at a user's path is ever
    harmed: a folder, a device, a FIFO or a socket is refused at once (nothing is opened, so
    nothing can block), and so is a regular file that is not a DuckDB file, empty ones
    included; a path with nothing at it is a :class:`~magdash.errors.NoStoreError` unless
    ``create``. A new store is written under a temporary name beside the path and linked into
    place only once its tables are written (:meth:`create`), so no half-created store can be
    left at the path. ``read_only`` attaches the file read-only: nothing is written to it.
    """

    def __init__(self, path: str | os.PathLike | None = None, *, lock_timeout_s: float | None = None,
                 create: bool = True, read_only: bool = False):
        self.path = _through_link(Path(path) if path else default_store_path())
        if lock_timeout_s is None:
            lock_timeout_s = float(os.environ.get(LOCK_TIMEOUT_ENV, DEFAULT_LOCK_TIMEOUT_S))
        self.lock_timeout_s = lock_timeout_s
        self.read_only = read_only
        self._cannot_write: str | None = None  # why the file cannot be written, once that made it read-only
        try:
            self._lock_key = str(self.path.resolve())
            self._lock_key.encode("utf-8")
        except (OSError, ValueError, UnicodeError) as error:
            # A name too long for the file system, one with a NUL byte or one that is not UTF-8
            # (DuckDB takes UTF-8 paths) cannot be a store file.
            reason = error.strerror if isinstance(error, OSError) and error.strerror else "not a usable file name"
            raise StoreError(
                f"cannot use {_shown(self.path)} as a store file ({reason}); give a path such as cache/magdash.duckdb"
            ) from None
        self.exists = self._check_path()
        if not self.exists and (read_only or not create):
            raise NoStoreError(
                f"no store at {_shown(self.path)}: nothing was created there. A store is created by "
                "`magdash extract`, `magdash import` or `magdash sweep` (or the dashboard's first run)"
            )

    def _check_path(self) -> bool:
        """Whether a store file is at the path; refuses anything else that is there."""
        where = _shown(self.path)
        try:
            status = os.stat(self.path)
        except FileNotFoundError:
            if os.path.lexists(self.path):
                raise StoreError(f"store path {where} is a symbolic link to nothing; magdash has not "
                                 "followed it: point store= at a file", parameters=("store",)) from None
            status = None
        except NotADirectoryError:
            raise StoreError(f"cannot use {where} as a store: a folder on its path is a file") from None
        except OSError as error:
            raise StoreError(f"cannot use {where} as a store ({error.strerror})") from None
        shards = Path(f"{self.path}.shards")
        if status is None:
            if os.path.lexists(shards):
                raise StoreError(
                    f"{_shown(shards)} is already there: a new store at {where} would keep its vectors there. "
                    "magdash has not changed it: move it, or choose another store name"
                )
            return False
        if stat.S_ISDIR(status.st_mode):
            raise StoreError(f"store path {where} is a folder: give a file name such as magdash.duckdb")
        if not stat.S_ISREG(status.st_mode):
            raise StoreError(f"store path {where} is {_kind_of(status.st_mode)}, not a store file; magdash "
                             "has not opened it: give a file name such as cache/magdash.duckdb")
        try:
            with open(self.path, "rb") as handle:
                head = handle.read(12)
        except OSError as error:
            raise StoreError(f"cannot read store {where} ({error.strerror})") from None
        if head[_DUCKDB_MAGIC_AT] != _DUCKDB_MAGIC:
            what = "an empty file" if not head else "not a DuckDB file"
            raise StoreError(f"{where} is {what}, not a magdash store; magdash has not changed it: point "
                             "store= at a store, or at a new file name to create one", parameters=("store",))
        if os.path.lexists(shards) and not shards.is_dir():
            raise StoreError(f"{_shown(shards)}, where the store keeps its vectors, is not a folder; "
                             "magdash has not changed it: move it away")
        return True

    def create(self, write_tables: Callable[[duckdb.DuckDBPyConnection], None]) -> None:
        """Create the store: its tables written by ``write_tables`` into a new file under a
        temporary name beside the path, checkpointed, fsynced, then linked into place (a link
        never replaces a file: a store another process created meanwhile is kept, and opened).

        A creation killed half-way leaves only its temporary file, which is never the store and
        is removed by the next creation once no process holds it.
        """
        folder = self.path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StoreError(f"cannot create the store folder {_shown(folder)}: {error.strerror}") from None
        _remove_abandoned_creations(self.path)
        staging = folder / f".{self.path.name}{_CREATING}{os.getpid()}-{secrets.token_hex(4)}"
        alias = f"{self._alias}_new"
        try:
            engine = _engine()
            with _process_lock(self._lock_key):
                try:
                    engine.execute(f"ATTACH {_quoted(str(staging))} AS {alias} (TYPE DUCKDB)")
                    connection = engine.cursor()
                    try:
                        connection.execute(f"USE {alias}")
                        connection.begin()
                        write_tables(connection)
                        connection.commit()
                    finally:
                        connection.close()
                    engine.execute(f"DETACH {alias}")
                except duckdb.Error as error:
                    with suppress(duckdb.Error):
                        engine.execute(f"DETACH DATABASE IF EXISTS {alias}")
                    if disk_is_full(error):
                        raise _new_store_disk_full_error(self.path, str(error).splitlines()[0]) from None
                    if "permission denied" in str(error).lower():
                        raise StoreError(f"cannot create store {_shown(self.path)}: permission denied; point "
                                         "store= at a folder you can write", parameters=("store",)) from None
                    raise StoreError(f"cannot create store {_shown(self.path)} ({str(error).splitlines()[0]})") from None
                if Path(f"{staging}.wal").exists():  # DETACH checkpoints: a log left means the file is not whole
                    raise _new_store_disk_full_error(self.path, "its checkpoint did not complete")
                with open(staging, "rb+") as handle:
                    os.fsync(handle.fileno())
                try:
                    os.link(staging, self.path)
                except FileExistsError:
                    log.info("store %s was created by another process meanwhile", self.path)
                fsync_folder(folder)
        except OSError as error:
            if disk_is_full(error):
                raise _new_store_disk_full_error(self.path, error.strerror or str(error)) from None
            raise StoreError(f"cannot create store {_shown(self.path)} ({error.strerror or error})") from None
        finally:
            for leftover in (staging, Path(f"{staging}.wal")):
                with suppress(OSError):
                    leftover.unlink()
        self.exists = self._check_path()

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection whose default database is this file (attached for the block)."""
        with _process_lock(self._lock_key):
            connection = self._open_with_retry()
            try:
                try:
                    yield connection
                finally:
                    self._release(connection)
            except duckdb.Error as error:
                # A commit that cannot write its log fails as a TransactionException, which
                # otherwise means a conflict: only the text tells a full disk apart.
                if _is_storage_failure(error):
                    raise self._storage_error(error) from None
                raise

    @contextmanager
    def session(self) -> Iterator[None]:
        """Keep the file open for the block, so that the connections made inside are cheap.

        Opening a DuckDB file starts a database instance (its catalog of built-in functions,
        its header, its tables): about 20 ms, while a connection to an instance that is already
        open takes well under one. A block of several short operations (an analysis's lookups,
        the dashboard's inventory) therefore opens the file once. Each operation still has its
        own connection and transaction. The file stays locked for the block's duration, as for
        one operation, so a session must not be held across a computation: other processes
        and this process's other threads wait for it.
        """
        with self.connect():
            yield

    def _storage_error(self, error: duckdb.Error) -> StoreError:
        """The message for a failure of the store file itself, saying what was kept and what to do."""
        first_line = str(error).splitlines()[0]
        text = str(error).lower()
        where = repr(str(self.path))
        if disk_is_full(error):
            return disk_full_error(f"store {where}", first_line)
        if isinstance(error, duckdb.OutOfMemoryException):
            return StoreError(
                f"DuckDB ran out of memory working on store {where} ({first_line}). Everything stored "
                "before is kept; free memory or lower batch_size= and run again",
                parameters=("batch_size",),
            )
        if "read-only file system" in text:
            # The file opened for writing, but its folder cannot take the write-ahead log: a writable
            # file in a read-only folder.
            return ReadOnlyStoreError(
                f"cannot write store {where}: its folder is on a read-only file system ({first_line}); nothing was "
                "changed. Copy the store to a folder you can write, or point store= at another file",
                parameters=("store",),
            )
        if "permission denied" in text or isinstance(error, duckdb.PermissionException):
            return ReadOnlyStoreError(f"cannot write store {where}: permission denied; point store= at a file you can write",
                                      parameters=("store",))
        return StoreError(
            f"store {where} is damaged or unreadable ({first_line}); the operation was rolled back. "
            "Restore the store from a copy, or point store= at another file"
        )

    def _open_with_retry(self) -> duckdb.DuckDBPyConnection:
        if _ATTACHED.get(self._alias):  # this thread holds the file already (a session)
            return self._use_attached()
        options = "TYPE DUCKDB, READ_ONLY" if self.read_only else "TYPE DUCKDB"
        deadline = time.monotonic() + self.lock_timeout_s
        delay = _FIRST_RETRY_DELAY_S
        while True:
            # DuckDB creates a file it is asked to attach: a store removed since it was checked
            # must not come back as an empty one.
            if not self._check_path():
                raise NoStoreError(f"the store {_shown(self.path)} is gone: it was moved or deleted")
            try:
                _engine().execute(f"ATTACH {_quoted(str(self.path))} AS {self._alias} ({options})")
                return self._use_attached()
            except duckdb.IOException as error:
                if disk_is_full(error):
                    raise self._storage_error(error) from None
                if not self.read_only and _cannot_be_written(error):
                    self._fall_back_to_read_only(error)
                    options = "TYPE DUCKDB, READ_ONLY"
                    continue
                if not _is_lock_conflict(error):
                    raise StoreError(
                        f"cannot open store {str(self.path)!r}: it is not a readable DuckDB file "
                        f"({str(error).splitlines()[0]}); point store= at another file"
                    ) from None
                if time.monotonic() > deadline:
                    raise StoreError(
                        f"store {str(self.path)!r} stayed busy for {self.lock_timeout_s:.0f} s "
                        "(another process is writing to it); try again when it finishes"
                    ) from None
                if delay == _FIRST_RETRY_DELAY_S:
                    log.info("store %s is busy in another process; waiting up to %.0f s", self.path, self.lock_timeout_s)
                time.sleep(delay)
                delay = min(delay * 1.5, _LONGEST_RETRY_DELAY_S)
            except duckdb.Error as error:
                raise StoreError(
                    f"cannot open store {str(self.path)!r}: {str(error).splitlines()[0]}; "
                    "point store= at another file"
                ) from None

    def _fall_back_to_read_only(self, error: duckdb.IOException) -> None:
        """Open the file read-only from now on, since it cannot be written (a read-only file system,
        a file the user may not write): what only reads works, and says so; a write is refused by
        :meth:`check_writable` with the reason."""
        self.read_only = True
        cause = "its file system is read-only" if "read-only file system" in str(error).lower() \
            else "this user may not write it"
        self._cannot_write = cause
        with _PROCESS_LOCKS_GUARD:
            if self._lock_key in _SAID_READ_ONLY:  # a process opens a store many times: said once
                return
            _SAID_READ_ONLY.add(self._lock_key)
        log.warning("store %s cannot be written (%s): it is opened read-only, so nothing is written to it "
                    "and results computed now are not kept", self.path, cause)

    @property
    def _alias(self) -> str:
        mode = "ro" if self.read_only else "rw"
        return f"magdash_{mode}_" + hashlib.sha1(self._lock_key.encode("utf-8")).hexdigest()[:16]

    def _use_attached(self) -> duckdb.DuckDBPyConnection:
        connection = _engine().cursor()
        try:
            connection.execute(f"USE {self._alias}")
        except BaseException:
            connection.close()
            self._detach_if_unused()
            raise
        _ATTACHED[self._alias] = _ATTACHED.get(self._alias, 0) + 1
        return connection

    def _release(self, connection: duckdb.DuckDBPyConnection) -> None:
        """Close ``connection``; the last one of this file detaches it, which checkpoints it and
        releases DuckDB's lock on it for other processes."""
        connection.close()
        _ATTACHED[self._alias] -= 1
        self._detach_if_unused()

    def _detach_if_unused(self) -> None:
        if _ATTACHED.get(self._alias, 0) > 0:
            return
        _ATTACHED.pop(self._alias, None)
        try:
            _engine().execute(f"DETACH DATABASE IF EXISTS {self._alias}")
        except duckdb.Error as error:
            still = _engine().execute(
                "SELECT count(*) FROM duckdb_databases() WHERE database_name = ?", [self._alias]).fetchall()[0][0]
            if still:
                raise
            # Detached, but its checkpoint failed (a full disk): what was committed stays in the
            # write-ahead log and is replayed on the next open, as when a closing connection's
            # checkpoint fails.
            log.info("store %s detached without its checkpoint (%s)", self.path, str(error).splitlines()[0])

    def compact(self) -> tuple[int, int]:
        """Rewrite the file without the space freed inside it; returns its size before and after.

        DuckDB reuses the blocks of dropped tables but gives back to the file system only those
        at the file's end (the migration to schema 5 drops every vector table, wherever its
        blocks lie, and results replaced leave holes too). The catalog is copied into a new
        file beside this one (``COPY FROM DATABASE``), fsynced and renamed over it while this
        connection still holds DuckDB's lock on the old file, so no other process can write to
        the old file meanwhile; one waiting for the lock opens the new file. The old connection
        wrote nothing since its checkpoint, so closing it touches neither the new file nor its
        log. A failure before the rename leaves the store as it was and no copy behind.
        """
        # A temporary name of the kind a creation uses: what a killed compaction leaves is
        # removed like an abandoned creation, and no other file near the store is ever touched.
        _remove_abandoned_creations(self.path)
        copy = self.path.with_name(f".{self.path.name}{_CREATING}compact-{os.getpid()}-{secrets.token_hex(4)}")
        with self.connect() as connection:
            self.check_writable("compacting it rewrites the file")
            connection.execute("CHECKPOINT")
            before = self.path.stat().st_size
            database = connection.execute("SELECT current_database()").fetchall()[0][0].replace('"', '""')
            target = f"{self._alias}_compact"
            try:
                connection.execute(f"ATTACH {_quoted(str(copy))} AS {target} (TYPE DUCKDB)")
                connection.execute(f'COPY FROM DATABASE "{database}" TO {target}')
                connection.execute(f"DETACH {target}")
                if Path(f"{copy}.wal").exists():  # DETACH checkpoints: a log left means the copy is not whole
                    raise StoreError(f"the compacted copy of store {str(self.path)!r} was not checkpointed")
                with open(copy, "rb+") as handle:
                    os.fsync(handle.fileno())
                os.replace(copy, self.path)
            except BaseException as error:
                with suppress(duckdb.Error):
                    connection.execute(f"DETACH DATABASE IF EXISTS {target}")
                for leftover in (copy, Path(f"{copy}.wal")):
                    with suppress(OSError):  # nothing there, or a folder that takes no change (read-only)
                        leftover.unlink()
                if isinstance(error, OSError):
                    if disk_is_full(error):
                        raise disk_full_error(f"a compacted copy of store {str(self.path)!r}", error.strerror) from None
                    raise StoreError(
                        f"could not compact store {str(self.path)!r} ({error.strerror or error}); it is as it was"
                    ) from None
                raise
        fsync_folder(self.path.parent)
        return before, self.path.stat().st_size

    def check_writable(self, what: str | None = None) -> None:
        """Refuse a write to a store open read-only, saying why it is (``what``: the operation refused,
        for its message).

        Args:
            what: the operation that needs write access ("compacting it rewrites the file"), if any.
        """
        if not self.read_only:
            return
        needs = f"; {what}, which needs write access" if what else ""
        if self._cannot_write is None:
            raise ReadOnlyStoreError(f"store {_shown(self.path)} is open read-only: nothing is written to it{needs}")
        raise ReadOnlyStoreError(
            f"store {_shown(self.path)} is open read-only, since {self._cannot_write}: nothing is written to it{needs}. "
            "Copy it to a folder you can write, or point store= at another file", parameters=("store",),
        )

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        self.check_writable()
        with self.connect() as connection:
            connection.begin()
            try:
                yield connection
            except BaseException:
                # A failed write may already have aborted the transaction; the original error matters.
                with suppress(duckdb.Error):
                    connection.rollback()
                raise
            connection.commit()


def _remove_abandoned_creations(path: Path) -> None:
    """Remove the temporary files of creations of ``path`` that were killed: those no process
    holds (DuckDB locks a file it has attached). Only names magdash gives its own temporary
    files are looked at."""
    try:
        import fcntl
    except ImportError:  # Windows: no way to tell an abandoned file from one being written
        return
    for candidate in path.parent.glob(f".{glob_escape(path.name)}{_CREATING}*"):
        if candidate.name.endswith(".wal") or not candidate.is_file():
            continue
        try:
            with open(candidate, "rb+") as handle:
                fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                for leftover in (candidate, Path(f"{candidate}.wal")):
                    leftover.unlink(missing_ok=True)
        except OSError:
            continue


def fsync_folder(folder: Path) -> None:
    """Make a rename in ``folder`` durable (not every file system lets a folder be fsynced)."""
    with suppress(OSError):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
