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

from magdash.errors import MagdashError, StoreError
from magdash.stimuli import StimulusSet
from magdash.store import ModelRecord, Store, read_npz
from magdash.store.schema import result_checksum

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
    with pytest.raises(StoreError, match="is not a DuckDB file, not a magdash store; magdash has not changed it"):
        Store(path)
    assert path.read_bytes() == b"this is not a database" * 100


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
    assert set(read_npz(path)) == {"per_carrier", "magnitudes", "carriers", "layer_labels", "n_blocks"}


@pytest.mark.slow
def test_an_uncompressed_npz_is_imported_batch_by_batch_without_reading_it_whole(store, rng, tmp_path, monkeypatch):
    import tracemalloc

    from magdash.store import shards

    per_carrier = rng.normal(size=(100, 5, 8, 1024)).astype(np.float32)  # 16 MB
    np.savez(tmp_path / "plain.npz", per_carrier=per_carrier, magnitudes=np.arange(1, 101))
    np.savez_compressed(tmp_path / "packed.npz", per_carrier=per_carrier, magnitudes=np.arange(1, 101))
    monkeypatch.setattr(shards, "WRITE_BATCH_BYTES", 1 << 20)
    peaks = {}
    for name in ("plain", "packed"):
        tracemalloc.start()
        try:
            arrays = read_npz(tmp_path / f"{name}.npz")
            store.import_arrays(name, arrays["per_carrier"], arrays["magnitudes"])
            del arrays
            peaks[name] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        np.testing.assert_array_equal(store.export_arrays(name, store.stimulus_sets_for(name)[0])["per_carrier"],
                                      per_carrier)
    assert peaks["plain"] < per_carrier.nbytes / 4 < per_carrier.nbytes <= peaks["packed"]


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
        connection.execute("INSERT INTO results (key, kind, payload, checksum) VALUES ('held', 'x', 'y'::BLOB, ?)",
                           [{result_checksum("held", b"y")!r}])
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


@pytest.mark.slow
def test_the_same_sentences_are_one_stimulus_set(store, rng, capsys):
    from magdash.cli import main

    first, first_set = store.import_arrays("first", rng.normal(size=(6, 3, 3, 4)), [1, 2, 3, 4, 5, 6])
    second, second_set = store.import_arrays("second", rng.normal(size=(6, 3, 3, 4)), [1, 2, 3, 4, 5, 6])
    assert first_set == second_set == "first-stimuli"
    assert store.stimulus_set_names() == ["first-stimuli"]
    assert store.stimulus_sets_for("first") == store.stimulus_sets_for("second") == ["first-stimuli"]
    # each model analyses without naming its stimulus set
    for name in ("first", "second"):
        assert main(["analyze", "--model", name, "--store", str(store.path), "--n-boot", "0", "--json"]) == 0
    capsys.readouterr()
    # a new name for the same sentences is refused, and nothing is stored
    with pytest.raises(StoreError, match="'first-stimuli' holds these same sentences: use the name 'first-stimuli'"):
        store.import_arrays("third", rng.normal(size=(6, 3, 3, 4)), [1, 2, 3, 4, 5, 6], stimuli="renamed")
    assert store.model_names() == ["first", "second"] and store.stimulus_set_names() == ["first-stimuli"]
    # other sentences are another set
    _, other = store.import_arrays("third", rng.normal(size=(6, 3, 3, 4)), [1, 2, 3, 4, 5, 7])
    assert other == "third-stimuli"
    assert store.known_as(StimulusSet("anything", store.stimulus_set("first-stimuli").carriers, (1, 2, 3, 4, 5, 6))).name == "first-stimuli"


def test_an_extraction_without_a_set_name_joins_the_stored_set_of_its_sentences(store):
    from magdash.cli.extract_command import custom_stimulus_set

    class Args:
        carriers = None
        magnitudes = "1-6"
        stimuli = None
        number_format = None

    stimuli = custom_stimulus_set(Args())
    store.register_stimulus_set(StimulusSet("mine", stimuli.carriers, stimuli.magnitudes))
    assert stimuli.name.startswith("custom-") and store.known_as(stimuli).name == "mine"
    Args.magnitudes = "paper"
    assert custom_stimulus_set(Args()).name == "paper"
    Args.stimuli = "my-paper"
    with pytest.raises(MagdashError, match="the paper's stimuli, stored under the name 'paper'"):
        custom_stimulus_set(Args())
    # the paper's carriers and magnitudes in another format are the set paper-<format>, never 'paper'
    Args.stimuli, Args.number_format = None, "words"
    assert custom_stimulus_set(Args()).name == "paper-words"
    assert custom_stimulus_set(Args()).number_format == "words"


def _paper_file(path, rng, n_layers=33, dim=8):
    """The layout of the paper's hidden_states.npz: per_carrier (26, 5, 33, d), centroids and
    icc_per_layer, no magnitudes, carriers or labels."""
    from magdash.stimuli import PAPER_MAGNITUDES

    per_carrier = rng.normal(size=(len(PAPER_MAGNITUDES), 5, n_layers, dim)).astype(np.float32)
    per_carrier *= np.asarray(PAPER_MAGNITUDES, dtype=np.float32)[:, None, None, None] ** -0.05
    np.savez_compressed(path, per_carrier=per_carrier, centroids=per_carrier.mean(axis=1),
                        icc_per_layer=np.zeros(n_layers))
    return per_carrier


def test_the_papers_npz_layout_imports_with_one_command(store, rng, tmp_path, capsys):
    from magdash.cli import main
    from magdash.layers import POST_NORM_LABEL
    from magdash.runs.analysis_runs import analyze
    from magdash.variability.analysis_params import AnalysisParams

    path = tmp_path / "hidden_states.npz"
    per_carrier = _paper_file(path, rng)
    base = ["import", str(path), "--store", str(store.path)]
    assert main([*base, "--name", "llama"]) == 2
    assert "no 'magnitudes' array" in capsys.readouterr().err and store.model_names() == []
    assert main([*base, "--name", "llama", "--magnitudes", "paper", "--carriers", "paper", "--last-layer", "post-norm"]) == 0
    out = capsys.readouterr().out
    assert "stimulus set 'paper'" in out and "33 layers, 32 blocks" in out and "default core layers 16-31" in out
    record = store.model_record("llama")
    assert record.n_blocks == 32 and record.n_layers == 33
    assert record.layer_labels[-1] == POST_NORM_LABEL and record.layer_labels[31] == "layer 31"
    np.testing.assert_array_equal(store.read_layer("llama", "paper", 32).vectors, per_carrier[:, :, 32])
    result = analyze(store, "llama", params=AnalysisParams(n_boot=0, conventions="paper"))
    assert result.core_layers == list(range(16, 32)) and result.stimuli == "paper"
    assert result.hypotheses["eucl"].h4_layers == list(range(33))
    # exported and imported again, it keeps its block count (and so its core band)
    exported = tmp_path / "again.npz"
    assert main(["export", "--model", "llama", "--out", str(exported), "--store", str(store.path)]) == 0
    assert main(["import", str(exported), "--name", "again", "--store", str(store.path)]) == 0
    assert store.model_record("again").n_blocks == 32
    assert store.model_record("again").layer_labels == record.layer_labels


def test_import_options_must_agree_with_the_file(store, rng, tmp_path, capsys):
    from magdash.cli import main

    path = tmp_path / "six.npz"
    np.savez(path, per_carrier=rng.normal(size=(6, 2, 3, 4)), magnitudes=np.arange(1, 7),
             carriers=np.array(["A {n}.", "B {n}."]))
    base = ["import", str(path), "--name", "m", "--store", str(store.path)]
    assert main([*base, "--magnitudes", "1-7"]) == 2
    assert "magnitudes differ" in capsys.readouterr().err
    carriers = tmp_path / "carriers.txt"
    carriers.write_text("A {n}.\nC {n}.\n")
    assert main([*base, "--carriers", str(carriers)]) == 2
    assert "carriers differ" in capsys.readouterr().err
    assert main([*base, "--last-layer", "post-norm", "--magnitudes", "1-6"]) == 0
    assert store.model_record("m").n_blocks == 2 and store.model_names() == ["m"]
    bare = tmp_path / "bare.npz"
    np.savez(bare, per_carrier=rng.normal(size=(6, 2, 3, 4)))
    assert main(["import", str(bare), "--name", "n", "--magnitudes", "1-6", "--carriers", str(carriers),
                 "--store", str(store.path)]) == 0
    assert store.stimulus_set(store.stimulus_sets_for("n")[0]).carriers == ("A {n}.", "C {n}.")
    with pytest.raises(StoreError, match="n_blocks is 3: with 3 layers it must be 1..2"):
        store.import_arrays("x", rng.normal(size=(6, 2, 3, 4)), [1, 2, 3, 4, 5, 6], n_blocks=3)
    with pytest.raises(StoreError, match="cannot end in a post-norm layer"):
        store.import_arrays("x", rng.normal(size=(6, 2, 2, 4)), [1, 2, 3, 4, 5, 6], last_layer="post-norm")


def test_outsized_vectors_are_flagged_from_the_norms_stored_with_them(store, rng):
    """Planted: carrier 1's vectors of magnitudes 2 and 5 at layers 1-2 are 100x the others' norm."""
    from magdash.runs.analysis_runs import analyze
    from magdash.variability.analysis_params import AnalysisParams

    magnitudes = (1, 2, 3, 4, 5, 6)
    arrays = rng.normal(size=(len(magnitudes), 3, 4, 8)).astype(np.float32)
    arrays[..., 0] += 5.0
    for layer in (1, 2):
        arrays[[1, 4], 1, layer] *= 100.0
    store.import_arrays("planted", arrays, magnitudes, carriers=("a {n}", "b {n}", "c {n}"), stimuli="s")
    flagged = store.outlier_vectors("planted", "s")
    assert list(zip(flagged["layer"], flagged["magnitude"], flagged["carrier"], strict=True)) == [
        (1, 2, 1), (1, 5, 1), (2, 2, 1), (2, 5, 1)]
    assert flagged["sentence"].tolist() == ["b 2", "b 5", "b 2", "b 5"]
    norms = np.linalg.norm(arrays.astype(np.float64), axis=-1)
    for row in flagged.itertuples():
        assert row.norm == pytest.approx(norms[magnitudes.index(row.magnitude), row.carrier, row.layer], rel=1e-6)
        assert row.median_norm == pytest.approx(np.median(norms[:, :, row.layer]), rel=1e-6)
        assert row.ratio > 10
    # the analysis applies the same rule to the vectors it reads: the same vectors
    result = analyze(store, "planted", "s", AnalysisParams(n_boot=0))
    assert {(o.layer, o.magnitude, o.carrier) for o in result.outlier_vectors} == set(
        zip(flagged["layer"], flagged["magnitude"], flagged["carrier"], strict=True))
    assert store.outlier_vectors("planted", "s", factor=1000.0).empty
    # what `extract` prints from them: one line for the carrier, its magnitudes and layers
    from magdash.cli.common import outsized_vector_warnings

    assert outsized_vector_warnings(store, "planted", "s") == [
        f"planted: carrier 1 ('b {{n}}'): 4 vector(s) of magnitudes 2, 5 at layers 1-2 have a norm over 10x their "
        f"layer's median (up to {flagged['ratio'].max():,.0f}x), as at an attention sink; "
        "analyze --exclude-carrier 1 leaves it out"]
    with pytest.raises(StoreError, match="no stimulus set named 'other'"):
        store.outlier_vectors("planted", "other")
