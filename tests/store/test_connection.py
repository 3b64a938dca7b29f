"""The store file's own failure paths, provoked in-process: a full disk or a refused permission
while a store is created or attached, a detach whose checkpoint fails, a store another process
created meanwhile or that vanished, abandoned temporary files, read-only writes, outputs that
cannot be written. Each ends in a message and leaves nothing half-done."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys

import duckdb
import numpy as np
import pytest

from magdash.errors import MagdashError, NoStoreError, ReadOnlyStoreError, StoreError
from magdash.output_files import check_output_path, is_npz_export, is_report, write_output
from magdash.store import ModelRecord, Store, connection
from magdash.store.connection import StoreFile

RECORD = ModelRecord("m", "id-m", "test", "sha256:x", "float32", "5", "Tiny", 1, 4, ("embeddings", "block 1"))


class FailingEngine:
    """The process's DuckDB instance, but statements starting with ``prefix`` raise ``error``."""

    def __init__(self, engine, prefix: str, error: Exception, times: int = 1):
        self.engine, self.prefix, self.error, self.left = engine, prefix, error, times

    def execute(self, sql, *args):
        if sql.startswith(self.prefix) and self.left:
            self.left -= 1
            raise self.error
        return self.engine.execute(sql, *args)

    def cursor(self):
        return self.engine.cursor()


@pytest.fixture
def failing(monkeypatch):
    """``failing(prefix, error)`` makes the engine raise ``error`` on the next such statement."""
    real = connection._engine()

    def install(prefix: str, error: Exception, times: int = 1) -> FailingEngine:
        fake = FailingEngine(real, prefix, error, times)
        monkeypatch.setattr(connection, "_engine", lambda: fake)
        return fake

    return install


def _nothing_beside(folder, *names) -> None:
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)


@pytest.mark.parametrize(("message", "said"), [
    ("IO Error: No space left on device", "the disk is full: could not write a new store"),
    ("IO Error: Permission denied", "permission denied; point store= at a folder you can write"),
    ("IO Error: something else", "cannot create store"),
])
def test_a_creation_that_fails_leaves_nothing_at_the_path(message, said, tmp_path, failing):
    failing("ATTACH", duckdb.IOException(message))
    with pytest.raises(StoreError, match=said):
        Store(tmp_path / "new.duckdb")
    _nothing_beside(tmp_path)


@pytest.mark.parametrize(("code", "said"), [(errno.ENOSPC, "the disk is full"), (errno.EPERM, "cannot create store")])
def test_a_link_into_place_that_fails_leaves_nothing(code, said, tmp_path, monkeypatch):
    def refuse(*_args):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(connection.os, "link", refuse)
    with pytest.raises(StoreError, match=said):
        Store(tmp_path / "new.duckdb")
    _nothing_beside(tmp_path)


def test_a_store_another_process_created_meanwhile_is_kept_and_opened(tmp_path, monkeypatch, rng):
    target = tmp_path / "shared.duckdb"
    other = Store(tmp_path / "other.duckdb")
    other.import_arrays("theirs", rng.normal(size=(3, 1, 2, 4)), (1, 2, 3), stimuli="s")
    real_link = os.link

    def created_first(_source, destination):  # theirs, with a model in it, lands first
        real_link(other.path, destination)
        raise FileExistsError(errno.EEXIST, "exists")

    monkeypatch.setattr(connection.os, "link", created_first)
    assert Store(target).model_names() == ["theirs"]
    assert not [p for p in tmp_path.iterdir() if ".creating-" in p.name]


def test_a_creation_whose_folder_cannot_be_made_says_so(tmp_path):
    with pytest.raises(StoreError, match="cannot create the store folder"):
        Store("/proc/self/no-such-folder/store.duckdb")


def test_a_store_that_vanished_is_not_created_again(tmp_path):
    store = Store(tmp_path / "s.duckdb")
    store.path.unlink()
    with pytest.raises(NoStoreError, match="is gone: it was moved or deleted"):
        store.model_names()
    _nothing_beside(tmp_path)


def test_a_shard_folder_that_is_a_file_is_refused_untouched(tmp_path):
    Store(tmp_path / "s.duckdb")  # no vectors yet: no shard folder
    (tmp_path / "s.duckdb.shards").write_text("mine")
    with pytest.raises(StoreError, match="where the store keeps its vectors, is not a folder"):
        Store(tmp_path / "s.duckdb")
    assert (tmp_path / "s.duckdb.shards").read_text() == "mine"


@pytest.mark.parametrize(("message", "said"), [
    ("IO Error: No space left on device", "the disk is full"),
    ("IO Error: The file is not a valid DuckDB database file!", "it is not a readable DuckDB file"),
])
def test_an_attach_that_fails_is_a_message(message, said, tmp_path, failing):
    store = Store(tmp_path / "s.duckdb")
    failing("ATTACH", duckdb.IOException(message))
    with pytest.raises(StoreError, match=said):
        store.model_names()
    assert store.model_names() == []  # the next call attaches as usual


def test_a_failed_use_detaches_again(tmp_path, monkeypatch):
    store = Store(tmp_path / "s.duckdb")
    real = connection._engine()

    class BrokenCursor:
        def __init__(self):
            self.cursor = real.cursor()

        def execute(self, sql, *args):
            if sql.startswith("USE"):
                raise duckdb.IOException("IO Error: cannot use it")
            return self.cursor.execute(sql, *args)

        def close(self):
            self.cursor.close()

    class Engine(FailingEngine):
        def cursor(self):
            return BrokenCursor()

    monkeypatch.setattr(connection, "_engine", lambda: Engine(real, "never", None))
    with pytest.raises(StoreError):
        store.model_names()
    monkeypatch.undo()
    attached = real.execute("SELECT count(*) FROM duckdb_databases() WHERE database_name LIKE 'magdash_%'").fetchone()[0]
    assert attached == 0  # released for other processes


def test_a_detach_whose_checkpoint_fails_still_releases_the_file(tmp_path, monkeypatch):
    store = Store(tmp_path / "s.duckdb")
    real = connection._engine()

    class DetachesThenFails(FailingEngine):
        def execute(self, sql, *args):
            if sql.startswith("DETACH") and self.left:
                self.left -= 1
                self.engine.execute(sql, *args)  # detached, as DuckDB does before the checkpoint fails
                raise duckdb.IOException("IO Error: Detached database, but CHECKPOINT during DETACH failed")
            return self.engine.execute(sql, *args)

    fake = DetachesThenFails(real, "DETACH", None)
    monkeypatch.setattr(connection, "_engine", lambda: fake)
    store.register_model(RECORD)  # no error: what was committed is in the write-ahead log
    monkeypatch.undo()
    assert Store(store.path).model_names() == ["m"]


def test_a_detach_that_fails_and_keeps_the_file_attached_is_an_error(tmp_path, failing):
    store = Store(tmp_path / "s.duckdb")
    failing("DETACH", duckdb.IOException("IO Error: could not detach"))
    with pytest.raises(StoreError):
        store.model_names()


def test_storage_errors_say_what_happened():
    file = StoreFile.__new__(StoreFile)
    file.path = connection.Path("x.duckdb")
    assert "ran out of memory" in str(file._storage_error(duckdb.OutOfMemoryException("Out of Memory Error: no")))
    assert "permission denied" in str(file._storage_error(duckdb.PermissionException("Permission Error: no")))
    assert "damaged or unreadable" in str(file._storage_error(duckdb.IOException("IO Error: checksum")))
    assert connection._kind_of(0) == "not a regular file"


def test_abandoned_creations_are_removed_but_not_one_a_process_holds(tmp_path):
    target = tmp_path / "s.duckdb"
    abandoned = tmp_path / ".s.duckdb.creating-1-aa"
    held = tmp_path / ".s.duckdb.creating-2-bb"
    folder_like = tmp_path / ".s.duckdb.creating-3-cc"
    for path in (abandoned, held):
        path.write_bytes(b"")
    folder_like.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys, time\nh = open(sys.argv[1], 'rb+')\n"
         "fcntl.lockf(h, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(60)", str(held)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        Store(target)
    finally:
        holder.kill()
        holder.wait()
    assert not abandoned.exists() and held.exists() and folder_like.is_dir()


def test_a_read_only_store_refuses_writes_and_keeps_no_result(tmp_path):
    Store(tmp_path / "s.duckdb")
    before = (tmp_path / "s.duckdb").read_bytes()
    store = Store(tmp_path / "s.duckdb", read_only=True)
    with pytest.raises(ReadOnlyStoreError, match="open read-only"):
        store.register_model(RECORD)
    with pytest.raises(ReadOnlyStoreError):
        store.write_vectors("id-m", ["k"], np.zeros((1, 2, 4), dtype=np.float32))
    store.put_result("key", "analysis", b"payload")  # computed, not kept
    store.put_metric_rows("key", "analysis", {})
    assert store.get_result("key") is None
    assert (tmp_path / "s.duckdb").read_bytes() == before
    with pytest.raises(NoStoreError):
        Store(tmp_path / "absent.duckdb", read_only=True)


def test_outputs_are_refused_where_they_cannot_go_and_replace_only_their_own_kind(tmp_path):
    with pytest.raises(MagdashError, match="not a usable file name"):
        check_output_path("bad\0name.npz", what="the export", ours=is_npz_export)

    def broken(_path):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(MagdashError, match="No space left on device"):
        write_output(tmp_path / "out.npz", broken, what="the export", ours=is_npz_export)
    _nothing_beside(tmp_path)
    assert not is_report(tmp_path) and not is_npz_export(tmp_path)  # a folder is neither
    (tmp_path / "page.html").write_text("<!DOCTYPE html><p>someone else's</p>")
    assert not is_report(tmp_path / "page.html")
    write_output(tmp_path / "report.html", lambda p: p.write_text('<!DOCTYPE html><script id="magdash-manifest">'),
                 what="the report", ours=is_report)
    assert is_report(tmp_path / "report.html")
    link = tmp_path / "link.html"
    link.symlink_to(tmp_path / "report.html")
    with pytest.raises(MagdashError, match="a symbolic link"):
        check_output_path(link, what="the report", ours=is_report)
    assert stat.S_ISLNK(os.lstat(link).st_mode)
