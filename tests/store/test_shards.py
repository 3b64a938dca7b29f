"""The store's vectors as Parquet shards: what a shard holds, registration, the sweep of files
no transaction registered, and what a missing, damaged or unwritable shard does."""

from __future__ import annotations

import errno
import os
import time

import duckdb
import numpy as np
import pyarrow.parquet as pq
import pytest

from magdash.errors import StoreError
from magdash.stimuli import StimulusSet
from magdash.store import ModelRecord, Store, database, shards

SET = StimulusSet("tiny", ("A {n} b.", "C {n} d."), (1, 2, 3, 4))
KEYS = [item.key for item in SET.items]
RECORD = ModelRecord("m", "id-1", "test", "fp", "float32", "5", "Test", 2, 4, ("embeddings", "block 1", "block 2"))


@pytest.fixture
def store(tmp_path) -> Store:
    store = Store(tmp_path / "store.duckdb")
    store.register(SET, RECORD)
    return store


@pytest.fixture
def vectors(rng) -> np.ndarray:
    return rng.normal(size=(len(KEYS), RECORD.n_layers, RECORD.hidden_size)).astype(np.float32)


def registered(store: Store) -> set[str]:
    with duckdb.connect(str(store.path), read_only=True) as connection:
        return {row[0] for row in connection.execute("SELECT shard FROM shards").fetchall()}


def stored(store: Store) -> np.ndarray:
    """Every stored vector as (items in the set's order, layers, d)."""
    return np.stack([layer.vectors.reshape(len(KEYS), -1) for layer in store.read_layers("m", "tiny")], axis=1)


def test_each_write_is_one_registered_shard_that_pyarrow_reads(store, vectors):
    assert store.write_vectors(RECORD.model_id, KEYS[:5], vectors[:5]) == 5
    assert store.write_vectors(RECORD.model_id, KEYS[5:], vectors[5:]) == 3
    names = shards.shard_files(store.shards)
    assert len(names) == 2 and set(names) == registered(store)
    assert np.array_equal(stored(store).view(np.uint32), vectors.view(np.uint32))
    first = next(name for name in names if pq.ParquetFile(store.shards / name).metadata.num_rows == 5)
    table = pq.read_table(store.shards / first)
    assert table.column_names == ["item_key", "l0", "l1", "l2"]
    assert table.column("item_key").to_pylist() == KEYS[:5]
    layer_1 = np.frombuffer(table.column("l1").combine_chunks().buffers()[1], dtype="<f4").reshape(5, 4)
    assert np.array_equal(layer_1, vectors[:5, 1])
    metadata = pq.read_schema(store.shards / first).metadata
    assert b'"format": "magdash-shard-1"' in metadata[b"magdash"]


def test_a_write_of_items_already_stored_writes_no_shard(store, vectors):
    store.write_vectors(RECORD.model_id, KEYS, vectors)
    before = shards.shard_files(store.shards)
    assert store.write_vectors(RECORD.model_id, KEYS, vectors * 2) == 0
    assert shards.shard_files(store.shards) == before
    assert np.array_equal(stored(store), vectors)


def test_a_shard_whose_items_were_stored_meanwhile_registers_only_the_new_ones(store, vectors):
    store.write_vectors(RECORD.model_id, KEYS[:3], vectors[:3])
    # A worker extracted every item before the first write was registered: its shard holds all.
    late = shards.write_shard(store.shards, RECORD.model_id, KEYS, vectors * 2, for_worker=True)
    assert store.register_worker_shard(RECORD.model_id, late) == len(KEYS) - 3
    got = stored(store)
    assert np.array_equal(got[:3], vectors[:3]) and np.array_equal(got[3:], vectors[3:] * 2)
    assert store.register_worker_shard(RECORD.model_id, late) == 0


def test_nonfinite_vectors_are_flagged_from_the_shard(store, vectors):
    vectors[2, 1, 0] = np.nan
    vectors[6, 1, 3] = np.inf
    vectors[6, 2, 3] = -np.inf
    store.write_vectors(RECORD.model_id, KEYS, vectors)
    assert store.nonfinite_counts("m", "tiny") == {1: 2, 2: 1}
    assert np.array_equal(stored(store).view(np.uint32), vectors.view(np.uint32))


def test_files_no_transaction_registered_are_swept_when_a_process_opens_the_store(store, vectors, monkeypatch):
    store.write_vectors(RECORD.model_id, KEYS[:4], vectors[:4])
    kept = shards.shard_files(store.shards)
    orphan = shards.write_shard(store.shards, RECORD.model_id, KEYS[4:], vectors[4:])  # a kill before registering
    partial = store.shards / (orphan.name.removesuffix(".parquet") + "-other.parquet.tmp")
    partial.write_bytes(b"PAR1 cut short")  # a kill while writing
    assert len(shards.shard_files(store.shards)) == 3
    Store(store.path)  # this process swept the store already: nothing happens
    assert len(shards.shard_files(store.shards)) == 3
    monkeypatch.setattr(database, "_SWEPT", set())  # as a new process
    Store(store.path)
    assert shards.shard_files(store.shards) == kept
    assert store.missing_item_keys(RECORD.model_id, "tiny") == set(KEYS[4:])
    assert store.write_vectors(RECORD.model_id, KEYS[4:], vectors[4:]) == 4
    assert np.array_equal(stored(store), vectors)


def test_the_sweep_spares_a_shard_a_writer_still_holds(store, vectors):
    with shards.new_shard(store.shards, RECORD.model_id, KEYS, vectors) as shard:
        assert store.sweep_shards() == []
        assert (store.shards / shard.name).exists()
    assert not (store.shards / shard.name).exists()  # never registered: removed by its writer
    assert shards.shard_files(store.shards) == []


def test_a_workers_shard_waits_for_its_driver_then_is_swept(store, vectors):
    shard = shards.write_shard(store.shards, RECORD.model_id, KEYS, vectors, for_worker=True)
    assert store.sweep_shards() == []
    old = time.time() - shards.WORKER_GRACE_S - 60
    os.utime(store.shards / shard.name, (old, old))
    assert store.sweep_shards() == [shard.name]
    with pytest.raises(StoreError, match="not in .*run the sweep again"):
        store.register_worker_shard(RECORD.model_id, shard)
    assert store.missing_item_keys(RECORD.model_id, "tiny") == set(KEYS)


def test_a_missing_or_damaged_shard_is_a_message(store, vectors):
    store.write_vectors(RECORD.model_id, KEYS, vectors)
    (name,) = shards.shard_files(store.shards)
    path = store.shards / name
    content = path.read_bytes()
    path.write_bytes(content[: len(content) // 2])
    with pytest.raises(StoreError, match="damaged or unreadable"):
        store.read_layer("m", "tiny", 0)
    path.unlink()
    with pytest.raises(StoreError, match="missing from .*copy or move both"):
        store.read_layer("m", "tiny", 0)


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EFBIG])
def test_a_full_disk_while_writing_a_shard_keeps_everything_before(store, vectors, monkeypatch, code):
    store.write_vectors(RECORD.model_id, KEYS[:4], vectors[:4])
    before = shards.shard_files(store.shards)

    def full(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(shards.pq, "write_table", full)
    with pytest.raises(StoreError, match="the disk is full"):
        store.write_vectors(RECORD.model_id, KEYS[4:], vectors[4:])
    assert shards.shard_files(store.shards) == before and registered(store) == set(before)
    assert store.missing_item_keys(RECORD.model_id, "tiny") == set(KEYS[4:])
    monkeypatch.undo()
    store.write_vectors(RECORD.model_id, KEYS[4:], vectors[4:])
    assert np.array_equal(stored(store), vectors)


def test_a_failed_registration_deletes_its_shard(store, vectors, monkeypatch):
    def refuse(*args, **kwargs):
        raise duckdb.IOException("IO Error: No space left on device")

    monkeypatch.setattr(database, "insert_nonfinite", refuse)
    with pytest.raises(StoreError, match="the disk is full"):
        store.write_vectors(RECORD.model_id, KEYS, vectors)
    assert shards.shard_files(store.shards) == [] and registered(store) == set()
    assert store.missing_item_keys(RECORD.model_id, "tiny") == set(KEYS)


def _writers_meeting_a_slow_catalog(store, vectors, monkeypatch, fail: bool = False):
    """Four threads each write two items while the first registration holds the catalog; returns
    each thread's outcome and the batches the catalog was handed."""
    import threading

    batches, first_started, release = [], threading.Event(), threading.Event()
    original = Store._register_shards

    def slow(self, waiting):
        batches.append([shard.item_keys for _, shard in waiting])
        if len(batches) == 1:
            first_started.set()
            release.wait(10)  # the others finish their shards and queue meanwhile
        if fail and len(batches) > 1:
            raise StoreError("the catalog refused the batch")
        return original(self, waiting)

    monkeypatch.setattr(Store, "_register_shards", slow)
    outcomes = [None] * 4

    def write(index):
        try:
            outcomes[index] = store.write_vectors(RECORD.model_id, KEYS[2 * index:2 * index + 2],
                                                  vectors[2 * index:2 * index + 2])
        except StoreError as error:
            outcomes[index] = error

    first = threading.Thread(target=write, args=(0,))
    first.start()
    assert first_started.wait(10)
    others = [threading.Thread(target=write, args=(index,)) for index in (1, 2, 3)]
    for thread in others:
        thread.start()
    deadline = time.monotonic() + 10
    while len(store._registrations._waiting) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
    release.set()
    for thread in (first, *others):
        thread.join(10)
    return outcomes, batches


def test_shards_finished_while_the_catalog_is_busy_are_registered_in_one_transaction(store, vectors, monkeypatch):
    outcomes, batches = _writers_meeting_a_slow_catalog(store, vectors, monkeypatch)
    assert outcomes == [2, 2, 2, 2]
    assert len(batches) == 2 and len(batches[0]) == 1 and len(batches[1]) == 3  # 4 shards, 2 transactions
    np.testing.assert_array_equal(stored(store), vectors)
    assert len(registered(store)) == 4 and len(shards.shard_files(store.shards)) == 4


def test_a_failed_group_registration_fails_each_of_its_writers_and_deletes_their_shards(store, vectors, monkeypatch):
    outcomes, batches = _writers_meeting_a_slow_catalog(store, vectors, monkeypatch, fail=True)
    assert outcomes[0] == 2 and all(isinstance(outcome, StoreError) for outcome in outcomes[1:])
    assert len(batches) == 2 and len(batches[1]) == 3
    assert len(registered(store)) == 1 and len(shards.shard_files(store.shards)) == 1  # the three are gone
    assert store.missing_item_keys(RECORD.model_id, "tiny") == set(KEYS[2:])


def test_a_set_read_before_it_was_complete_is_read_again_once_it_is(store, vectors):
    store.write_vectors(RECORD.model_id, KEYS[:5], vectors[:5])
    with pytest.raises(StoreError, match="5 of 8 vectors"):
        store.read_layer("m", "tiny", 0)
    store.write_vectors(RECORD.model_id, KEYS[5:], vectors[5:])
    assert np.array_equal(stored(store), vectors)  # the same Store object sees the new shard


def test_flags_come_from_float64_norms_so_huge_finite_vectors_are_not_flagged(store, vectors):
    vectors[1, 0, :] = 3e38  # finite float32 whose squares overflow float32, not float64
    vectors[3, 2, 1] = np.nan
    store.write_vectors(RECORD.model_id, KEYS, vectors)
    assert store.nonfinite_counts("m", "tiny") == {2: 1}


def test_a_float64_value_beyond_float32_is_flagged_as_the_inf_the_shard_holds(store, vectors):
    wide = vectors.astype(np.float64)
    wide[5, 1, 2] = 1e39
    store.write_vectors(RECORD.model_id, KEYS, wide)
    assert store.nonfinite_counts("m", "tiny") == {1: 1}
    assert np.isposinf(stored(store)[5, 1, 2])


def test_a_layer_major_batch_becomes_a_shard_without_copying_its_layers(vectors):
    layer_major = np.ascontiguousarray(vectors.transpose(1, 0, 2))
    table = shards._shard_table("id-1", KEYS, [layer_major.transpose(1, 0, 2)])
    for layer in range(RECORD.n_layers):
        column = table.column(shards.layer_column(layer)).chunk(0)
        assert column.buffers()[1].address == layer_major[layer].ctypes.data
    row_major = shards._shard_table("id-1", KEYS, [vectors])  # each layer gathered into a new buffer
    assert row_major.column("l1").chunk(0).buffers()[1].address != vectors[:, 1].ctypes.data
    assert row_major.equals(table)


def test_batches_are_written_where_they_lie_and_read_back_as_one(store, vectors):
    """An extraction's batches reach the shard unjoined: each layer-major batch is a chunk of every
    layer's column (its own memory, no copy), and the shard reads back as the joined vectors."""
    batches = [np.ascontiguousarray(vectors[rows].transpose(1, 0, 2)) for rows in (slice(0, 3), slice(3, None))]
    parts = [batch.transpose(1, 0, 2) for batch in batches]
    table = shards._shard_table("id-1", KEYS, parts)
    for layer in range(RECORD.n_layers):
        chunks = table.column(shards.layer_column(layer)).chunks
        assert [chunk.buffers()[1].address for chunk in chunks] == [batch[layer].ctypes.data for batch in batches]
    assert store.write_vectors(RECORD.model_id, KEYS, parts) == len(KEYS)
    np.testing.assert_array_equal(stored(store), vectors)


def test_norms_the_device_computed_are_stored_and_flag_as_the_stores_own(store, vectors):
    vectors[2, 1, 0] = np.nan
    given = np.linalg.norm(vectors.astype(np.float64), axis=-1) * 1.5  # marked: the store must keep these
    with shards.new_shard(store.shards, RECORD.model_id, KEYS, vectors, given) as shard:
        np.testing.assert_allclose(shard.norms, given.astype(np.float32))
        assert (shard.flagged_rows, shard.flagged_layers) == ((2,), (1,))
    with shards.new_shard(store.shards, RECORD.model_id, KEYS, vectors) as computed:
        np.testing.assert_allclose(computed.norms * 1.5, given, rtol=1e-6)
        assert (computed.flagged_rows, computed.flagged_layers) == ((2,), (1,))


def test_norms_of_the_wrong_shape_are_refused_before_any_file_is_written(store, vectors):
    with pytest.raises(ValueError, match=r"norms must have shape \(8, 3\)"):
        store.write_vectors(RECORD.model_id, KEYS, vectors, np.ones((len(KEYS), 2)))
    with pytest.raises(ValueError, match="one row per item key"):
        store.write_vectors(RECORD.model_id, KEYS[:3], [vectors[:2], vectors[2:4]])
    assert shards.shard_files(store.shards) == [] and registered(store) == set()
