"""The store: schema, content addressing, transactions, concurrency, npz round trips."""

import logging
import subprocess
import sys
import textwrap
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from magdash.errors import StoreError
from magdash.stimuli import StimulusSet
from magdash.store import ModelRecord, Store, read_npz

SET = StimulusSet("tiny", ("A {n} b.", "C {n} d."), (1, 2, 3))


def _record(name="m", model_id="id-1", n_blocks=2, d=4):
    labels = ("embeddings",) + tuple(f"block {i}" for i in range(1, n_blocks + 1))
    return ModelRecord(name, model_id, "test", "fp", "float32", "5", "Test", n_blocks, d, labels)


def _fill(store, record, rng):
    store.register_stimulus_set(SET)
    store.register_model(record)
    vectors = rng.normal(size=(len(SET.items), record.n_layers, record.hidden_size)).astype(np.float32)
    keys = [item.key for item in SET.items]
    assert store.write_vectors(record.model_id, keys, vectors) == len(keys)
    return vectors


def test_store_default_path_follows_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("MAGDASH_STORE", str(tmp_path / "env.duckdb"))
    assert Store().path == tmp_path / "env.duckdb"
    assert (tmp_path / "env.duckdb").exists()


def test_vectors_round_trip_in_magnitude_carrier_order(store, rng):
    record = _record()
    vectors = _fill(store, record, rng)
    layer = store.read_layer("m", "tiny", 1)
    expected = vectors[:, 1].reshape(3, 2, 4)
    np.testing.assert_array_equal(layer.vectors, expected)
    assert layer.label == "block 1"
    np.testing.assert_array_equal(layer.magnitudes, [1, 2, 3])
    assert store.stimulus_sets_for("m") == ["tiny"]
    assert store.resolve_stimuli("m", None) == "tiny"


def test_writing_the_same_items_twice_is_a_no_op(store, rng):
    record = _record()
    vectors = _fill(store, record, rng)
    keys = [item.key for item in SET.items]
    assert store.write_vectors(record.model_id, keys, vectors) == 0
    assert store.read_layer("m", "tiny", 0).vectors.shape == (3, 2, 4)


def test_a_failed_batch_leaves_nothing_behind(store, rng):
    store.register_stimulus_set(SET)
    store.register_model(_record())
    keys = [item.key for item in SET.items]
    with pytest.raises(ValueError):
        store.write_vectors("id-1", keys, rng.normal(size=(2, 3, 4)))
    assert store.missing_item_keys("id-1", "tiny") == set(keys)


def test_a_different_checkpoint_under_a_taken_name_is_refused(store, rng):
    _fill(store, _record(), rng)
    with pytest.raises(StoreError, match="different model named 'm'"):
        store.register_model(_record(model_id="id-2"))
    store.register_model(_record())


def test_a_changed_stimulus_set_under_a_taken_name_is_refused(store):
    store.register_stimulus_set(SET)
    with pytest.raises(StoreError, match="choose another name"):
        store.register_stimulus_set(StimulusSet("tiny", ("A {n} b.",), (1, 2, 3)))


def test_missing_model_and_incomplete_sets_say_what_to_do(store, rng):
    with pytest.raises(StoreError, match="extract or import it first"):
        store.model_record("nope")
    store.register_stimulus_set(SET)
    store.register_model(_record())
    store.write_vectors("id-1", [SET.items[0].key], rng.normal(size=(1, 3, 4)))
    with pytest.raises(StoreError, match="run extract again"):
        store.read_layer("m", "tiny", 0)
    with pytest.raises(StoreError, match="no complete stimulus set"):
        store.resolve_stimuli("m", None)


def test_results_cache_round_trip(store):
    assert store.get_result("k") is None
    store.put_result("k", "analysis", b"one")
    store.put_result("k", "analysis", b"two")
    assert store.get_result("k") == b"two"


def test_newer_schema_is_refused(tmp_path):
    import duckdb

    path = tmp_path / "future.duckdb"
    Store(path)
    connection = duckdb.connect(str(path))
    connection.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    connection.close()
    with pytest.raises(StoreError, match="newer magdash"):
        Store(path)


def test_a_file_that_is_not_a_store_gives_a_clear_error(tmp_path):
    path = tmp_path / "notes.duckdb"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="cannot open store"):
        Store(path)


def test_import_export_round_trip(store, rng, tmp_path):
    per_carrier = rng.normal(size=(4, 3, 5, 6)).astype(np.float32)
    record, stimuli = store.import_arrays("ext", per_carrier, [10, 1, 5, 2])
    assert stimuli == "ext-stimuli" and record.n_blocks == 4
    exported = store.export_arrays("ext", stimuli)
    order = np.argsort([10, 1, 5, 2])
    np.testing.assert_array_equal(exported["per_carrier"], per_carrier[order])
    np.testing.assert_array_equal(exported["magnitudes"], [1, 2, 5, 10])
    again, _ = store.import_arrays("ext", per_carrier, [10, 1, 5, 2])
    assert again.model_id == record.model_id
    path = tmp_path / "out.npz"
    np.savez(path, **exported)
    assert set(read_npz(path)) == {"per_carrier", "magnitudes", "carriers", "layer_labels"}


@pytest.mark.parametrize(
    ("array", "magnitudes", "message"),
    [
        (np.zeros((2, 2, 2)), [1, 2], "must be \\(n_magnitudes"),
        (np.full((2, 1, 1, 3), np.nan), [1, 2], "no finite values"),
        (np.zeros((2, 1, 1, 3)), [1, 0], "positive"),
        (np.zeros((2, 1, 1, 3)), [1], "must match"),
        (np.zeros((2, 1, 1, 3)), [1, 1], "repeat"),
        (np.array([[[["a"]]]]), [1], "float array"),
    ],
)
def test_bad_import_arrays(store, array, magnitudes, message):
    with pytest.raises(StoreError, match=message):
        store.import_arrays("bad", array, magnitudes)
    assert store.model_names() == []


def test_reader_waits_for_a_writer_in_another_process(tmp_path, rng):
    path = tmp_path / "shared.duckdb"
    store = Store(path, lock_timeout_s=300)
    _fill(store, _record(), rng)
    holder = textwrap.dedent(f"""
        import duckdb, sys
        connection = duckdb.connect({str(path)!r})
        connection.begin()
        connection.execute("INSERT INTO results VALUES ('held', 'x', 'y'::BLOB, now())")
        print('locked', flush=True)
        sys.stdin.readline()  # hold the lock until the parent says so
        connection.commit()
        connection.close()
    """)
    waiting = threading.Event()

    class WaitSeen(logging.Handler):
        def emit(self, record):
            if "busy in another process" in record.getMessage():
                waiting.set()

    handler = WaitSeen()
    store_log = logging.getLogger("magdash.store")
    store_log.addHandler(handler)
    previous_level = store_log.level
    store_log.setLevel(logging.INFO)
    process = subprocess.Popen([sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout.readline().strip() == "locked"
        with ThreadPoolExecutor(1) as pool:
            reading = pool.submit(store.read_layer, "m", "tiny", 2)
            # The reader meets the other process's lock and waits; only then is the lock let go.
            assert waiting.wait(300), "the reader never reported waiting for the lock"
            assert not reading.done()
            process.stdin.write("release\n")
            process.stdin.flush()
            layer = reading.result(timeout=300)
        assert process.wait(timeout=60) == 0
    finally:
        store_log.removeHandler(handler)
        store_log.setLevel(previous_level)
        if process.poll() is None:
            process.kill()
            process.wait()
    assert layer.vectors.shape == (3, 2, 4)
    assert store.get_result("held") == b"y"


def test_threads_share_a_store_while_one_writes(tmp_path, rng):
    store = Store(tmp_path / "threads.duckdb")
    _fill(store, _record(), rng)
    errors = []

    def read_many():
        try:
            for _ in range(20):
                assert store.read_layer("m", "tiny", 1).vectors.shape == (3, 2, 4)
        except Exception as error:  # noqa: BLE001 - collected for the assertion below
            errors.append(error)

    def write_many():
        try:
            for index in range(20):
                store.put_result(f"k{index}", "x", b"payload")
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=read_many) for _ in range(3)] + [threading.Thread(target=write_many)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert store.get_result("k19") == b"payload"


def test_read_layers_holds_no_layer_it_has_handed_out(store, rng):
    # While the next layer is read, the previous one must be free unless the caller keeps it.
    _fill(store, _record(n_blocks=3), rng)
    layers = store.read_layers("m", "tiny")
    handed_out = []
    for data in layers:
        handed_out.append(weakref.ref(data.vectors))
        del data
        assert handed_out[-1]() is None, f"layer {len(handed_out) - 1} is still held by the reader"
    assert len(handed_out) == 4
