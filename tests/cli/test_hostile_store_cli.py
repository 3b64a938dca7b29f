"""The command line on shared stores (issue 45): a stored frequency source replaced only with
``--replace``, totals beyond 64 bits printed alike by every command, an extraction refused by its
model that leaves the store (and the model cache) as they were, and a store on a read-only file
system, which the commands that only read open read-only, saying so; two extractions of one model at
once, the second waiting for the first and using its vectors."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import numpy as np
import pytest

from magdash.cli import main
from magdash.runs.frequency_runs import load_source
from magdash.store import Store
from tests.support import file_state, tree_state


def test_freq_import_csv_refuses_a_stored_name_without_replace(tmp_path, capsys):
    store = str(tmp_path / "store.duckdb")
    four, two = tmp_path / "four.csv", tmp_path / "two.csv"
    four.write_text("number,count\n1,4\n2,3\n3,2\n4,1\n", encoding="utf-8")
    two.write_text("number,count\n1,7\n2,7\n", encoding="utf-8")
    assert main(["freq", "import-csv", str(four), "--name", "X", "--store", store]) == 0
    capsys.readouterr()
    before = file_state(store)
    assert main(["freq", "import-csv", str(two), "--name", "X", "--store", store]) == 2
    error = capsys.readouterr().err.strip().splitlines()
    assert len(error) == 1 and error[0].startswith("magdash: error: a frequency source named 'X' is already stored")
    assert "pass --replace to replace it" in error[0]
    assert file_state(store) == before
    assert list(load_source("X", Store(store)).counts["count"]) == [4, 3, 2, 1]
    assert main(["freq", "import-csv", str(two), "--name", "X", "--replace", "--store", store]) == 0
    assert list(load_source("X", Store(store)).counts["count"]) == [7, 7]


def test_freq_count_refuses_a_stored_name_before_counting(tmp_path, capsys):
    store = str(tmp_path / "store.duckdb")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("5 cats and 7 dogs\n", encoding="utf-8")
    more = tmp_path / "more.txt"
    more.write_text("9 birds and 11 fish\n", encoding="utf-8")
    assert main(["freq", "count", str(corpus), "--name", "c", "--store", store]) == 0
    capsys.readouterr()
    before = file_state(store)
    assert main(["freq", "count", str(corpus), str(more), "--name", "c", "--store", store]) == 2
    assert "'c' is already stored (1,000 numbers, total count 2)" in capsys.readouterr().err
    assert file_state(store) == before
    assert main(["freq", "count", str(corpus), str(more), "--name", "c", "--replace", "--store", store]) == 0
    assert load_source("c", Store(store)).total == 4


def test_freq_totals_beyond_64_bits_agree_between_import_and_list(tmp_path, capsys):
    store = str(tmp_path / "store.duckdb")
    counts = tmp_path / "huge.csv"
    counts.write_text("number,count\n" + "".join(f"{n},{2**53}\n" for n in range(1, 2000)), encoding="utf-8")
    exact = 1999 * 2**53
    assert main(["freq", "import-csv", str(counts), "--name", "huge", "--store", store]) == 0
    assert f"total count {exact:,}" in capsys.readouterr().out
    assert main(["freq", "list", "--store", store]) == 0
    assert f"total {exact:,}" in capsys.readouterr().out
    assert main(["freq", "list", "--json", "--store", store]) == 0
    assert {row["name"]: row["total"] for row in json.loads(capsys.readouterr().out)}["huge"] == exact


# -- an extraction refused by its model ---------------------------------------------------------


def _set_config(folder: Path, **changes) -> None:
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))


BROKEN_MODELS = {
    "weights of another shape": lambda folder: _set_config(folder, hidden_size=64),
    "an architecture transformers does not know": lambda folder: _set_config(
        folder, model_type="nosuchmodel", architectures=["NoSuchModel"]),
}


@pytest.mark.parametrize("case", BROKEN_MODELS)
def test_an_extraction_refused_by_its_model_leaves_the_store_as_it_was(case, tiny_llama, tmp_path, capsys):
    broken = tmp_path / "broken"
    shutil.copytree(tiny_llama, broken)
    BROKEN_MODELS[case](broken)
    stores = tmp_path / "stores"
    stores.mkdir()
    store = stores / "store.duckdb"
    Store(store).import_arrays("kept", np.zeros((3, 1, 2, 4)), (1, 2, 3), carriers=("a {n}",), stimuli="s")
    before = tree_state(stores)
    assert main(["extract", "--model", str(broken), "--magnitudes", "1-5", "--store", str(store), "--quiet"]) == 2
    assert capsys.readouterr().err.startswith("magdash: error: ")
    assert tree_state(stores) == before, "the refused extraction changed the store"
    assert Store(store).stimulus_set_names() == ["s"]


@pytest.mark.parametrize("case", BROKEN_MODELS)
def test_an_extraction_refused_by_its_model_creates_no_store(case, tiny_llama, tmp_path, capsys):
    """With no store at the path, the store is created only once the model has loaded."""
    broken = tmp_path / "broken"
    shutil.copytree(tiny_llama, broken)
    BROKEN_MODELS[case](broken)
    stores = tmp_path / "stores"
    stores.mkdir()
    assert main(["extract", "--model", str(broken), "--magnitudes", "1-5", "--store", str(stores / "new.duckdb"),
                 "--quiet"]) == 2
    assert capsys.readouterr().err.startswith("magdash: error: ")
    assert list(stores.iterdir()) == [], "the refused extraction created a store"


def test_an_extraction_refusing_carriers_that_put_the_number_first_leaves_the_store_as_it_was(tmp_path, capsys):
    from tests.support import build_tiny_model

    folder = build_tiny_model(tmp_path / "no-bos", "llama", start="no-bos")
    stores = tmp_path / "stores"
    stores.mkdir()
    store = stores / "store.duckdb"
    Store(store).import_arrays("kept", np.zeros((3, 1, 2, 4)), (1, 2, 3), carriers=("a {n}",), stimuli="s")
    before = tree_state(stores)
    assert main(["extract", "--model", str(folder), "--magnitudes", "1,7", "--store", str(store), "--quiet"]) == 2
    assert "--allow-number-first" in capsys.readouterr().err
    assert tree_state(stores) == before, "the refused extraction changed the store"


def test_a_conversion_that_fails_leaves_no_lock_file_in_the_model_cache(tmp_path, monkeypatch):
    from magdash.errors import ModelLoadError
    from magdash.sources import gguf

    def refuse(*_args):
        raise ModelLoadError("the GGUF file cannot be converted")

    monkeypatch.setattr(gguf, "_convert_into", refuse)
    info = gguf.GGUFInfo(tmp_path / "model.gguf", "0" * 64, "llama", "Q4_0", "digest")
    cache = tmp_path / "cache"
    with pytest.raises(ModelLoadError):
        gguf.converted_folder(info, "float32", cache)
    assert list(cache.iterdir()) == []


# -- a store on a read-only file system ----------------------------------------------------------


class ReadOnlyFileSystem:
    """The process's DuckDB instance on a read-only file system: attaching a file for writing fails
    with DuckDB's own error; a read-only attachment works."""

    def __init__(self, engine):
        self.engine = engine

    def execute(self, sql, *args):
        if sql.startswith("ATTACH") and "READ_ONLY" not in sql:
            path = sql.split("'")[1]
            raise duckdb.IOException(f'IO Error: Cannot open file "{path}": Read-only file system')
        return self.engine.execute(sql, *args)

    def cursor(self):
        return self.engine.cursor()


@pytest.fixture
def analysed_store(tmp_path) -> Path:
    """A store holding a model and its cached analysis."""
    path = tmp_path / "stores" / "store.duckdb"
    store = Store(path)
    store.import_arrays("m", np.random.default_rng(4).normal(size=(4, 2, 3, 5)), (1, 2, 3, 4),
                        carriers=("a {n}", "b {n}"), stimuli="s")
    assert main(["analyze", "--model", "m", "--stimuli", "s", "--n-boot", "0", "--json", "--store", str(path)]) == 0
    return path


def _on_read_only_file_system(monkeypatch) -> None:
    from magdash.store import connection

    read_only = ReadOnlyFileSystem(connection._engine())
    monkeypatch.setattr(connection, "_engine", lambda: read_only)
    monkeypatch.setattr(connection, "_SAID_READ_ONLY", set(), raising=False)


def _read_commands_work_and_writes_are_refused(path: Path, tmp_path: Path, capsys, caplog) -> None:
    before = tree_state(path.parent)
    capsys.readouterr()
    with caplog.at_level(logging.WARNING):
        assert main(["list", "--store", str(path)]) == 0
        assert "m " in capsys.readouterr().out
        assert main(["analyze", "--model", "m", "--stimuli", "s", "--n-boot", "0", "--json", "--store", str(path)]) == 0
        assert json.loads(capsys.readouterr().out)["model"] == "m"
        assert main(["export", "--model", "m", "--stimuli", "s", "--out", str(tmp_path / "out.npz"), "--store", str(path)]) == 0
        assert (tmp_path / "out.npz").is_file()
    said = [r.getMessage() for r in caplog.records if "opened read-only" in r.getMessage()]
    assert len(said) == 1 and "read-only" in said[0], said  # said once, however often the store is opened
    capsys.readouterr()
    for command, needs in ((["compact"], "compacting it rewrites the file, which needs write access"),
                           (["import", str(tmp_path / "out.npz"), "--name", "again"], "nothing is written to it")):
        assert main([*command, "--store", str(path)]) == 2
        error = capsys.readouterr().err.strip().splitlines()
        assert len(error) == 1 and error[0].startswith("magdash: error: store") and needs in error[0], error
        assert "IO Error" not in error[0]
    assert tree_state(path.parent) == before


def test_reading_commands_fall_back_to_read_only_on_a_read_only_file_system(analysed_store, tmp_path, capsys, caplog,
                                                                             monkeypatch):
    _on_read_only_file_system(monkeypatch)
    _read_commands_work_and_writes_are_refused(analysed_store, tmp_path, capsys, caplog)


def _mount(*args: str) -> bool:
    return subprocess.run(["mount", *args], capture_output=True).returncode == 0


def test_a_store_on_a_really_read_only_mount(analysed_store, tmp_path, capsys, caplog, monkeypatch):
    """The same on a real read-only file system: a read-only bind mount of the store's folder (where
    this process may mount; root in a container usually may)."""
    monkeypatch.setattr("magdash.store.connection._SAID_READ_ONLY", set(), raising=False)
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    if not _mount("--bind", str(analysed_store.parent), str(mounted)):
        pytest.skip("this process may not mount a file system")
    try:
        if not _mount("-o", "remount,ro,bind", str(mounted)):
            pytest.skip("this process may not remount read-only")
        _read_commands_work_and_writes_are_refused(mounted / analysed_store.name, tmp_path, capsys, caplog)
    finally:
        subprocess.run(["umount", str(mounted)], check=True)


def test_a_writable_store_file_in_a_read_only_folder(analysed_store, tmp_path, capsys, caplog):
    """A store file that can be written in a folder that cannot (so DuckDB cannot write its log beside
    it): reading works, a result computed is not kept (with a warning), and a write is one line."""
    writable = tmp_path / "writable.duckdb"
    shutil.copyfile(analysed_store, writable)
    mounted = tmp_path / "mounted"
    mounted.mkdir()
    if not _mount("--bind", str(analysed_store.parent), str(mounted)):
        pytest.skip("this process may not mount a file system")
    try:
        if not (_mount("-o", "remount,ro,bind", str(mounted))
                and _mount("--bind", str(writable), str(mounted / analysed_store.name))):
            pytest.skip("this process may not remount read-only")
        path = str(mounted / analysed_store.name)
        before = writable.read_bytes()
        capsys.readouterr()
        assert main(["list", "--store", path]) == 0
        with caplog.at_level(logging.WARNING):
            assert main(["analyze", "--model", "m", "--stimuli", "s", "--n-boot", "5", "--json", "--store", path]) == 0
        assert any("is not kept" in r.getMessage() and "read-only file system" in r.getMessage() for r in caplog.records)
        capsys.readouterr()
        for command in (["compact"], ["import", str(tmp_path / "none.npz"), "--name", "x"],
                        ["freq", "import-csv", str(tmp_path / "none.csv"), "--name", "x"]):
            (tmp_path / "none.csv").write_text("number,count\n1,2\n", encoding="utf-8")
            np.savez(tmp_path / "none.npz", per_carrier=np.zeros((3, 1, 2, 4)), magnitudes=np.arange(1, 4))
            assert main([*command, "--store", path]) == 2, command
            error = capsys.readouterr().err.strip().splitlines()
            assert len(error) == 1 and error[0].startswith("magdash: error: "), error
            assert "read-only file system" in error[0] and "Traceback" not in error[0], error
        assert writable.read_bytes() == before
    finally:
        subprocess.run(["umount", str(mounted / analysed_store.name)], check=False)
        subprocess.run(["umount", str(mounted)], check=False)


# -- two extractions of one model at once -----------------------------------------------------------


def test_a_second_extraction_of_a_model_waits_for_the_first_and_uses_its_vectors(tiny_llama, tmp_path, capsys):
    from magdash.extraction import extract
    from magdash.stimuli import StimulusSet

    store_path = tmp_path / "store.duckdb"
    stimuli = StimulusSet("mine", ("I saw {n} birds.", "There were {n} cars."), (1, 2, 3, 5, 8))
    first_inside, second_waiting = threading.Event(), threading.Event()

    class SeeWaiting(logging.Handler):
        def emit(self, record):
            if "another extraction of this model" in record.getMessage():
                second_waiting.set()

    def hold_until_the_second_waits(done: int, total: int) -> None:
        if not first_inside.is_set():
            first_inside.set()
            assert second_waiting.wait(120), "the second extraction did not wait for the first"

    handler = SeeWaiting()
    logging.getLogger("magdash.store").addHandler(handler)
    try:
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(extract, str(tiny_llama), stimuli, Store(store_path), name="tiny",
                                progress=hold_until_the_second_waits)
            assert first_inside.wait(300)
            status = main(["extract", "--model", str(tiny_llama), "--stimuli", "mine", "--name", "tiny", "--quiet",
                           "--store", str(store_path)])
            first_result = first.result()
    finally:
        logging.getLogger("magdash.store").removeHandler(handler)
    assert status == 0
    assert first_result.extracted == 10 and not first_result.waited
    out = capsys.readouterr().out
    assert "tiny / mine: all 10 sentences already stored (by another extraction of this model, which this one waited for)" in out
    with duckdb.connect(str(store_path), read_only=True) as connection:
        assert connection.execute("SELECT count(*), count(DISTINCT item_key) FROM done").fetchone() == (10, 10)
    assert not list(store_path.parent.glob("**/*.lock")), "the turn's lock file is left behind"
