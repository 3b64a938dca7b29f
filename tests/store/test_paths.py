"""Hostile store paths through the Python API and the CLI: nothing at a user's path is ever
harmed, and reading never creates.

Every case of ``tests.support.HOSTILE_STORE_PATHS`` (an empty file, a FIFO, a folder, a socket,
a device stand-in, symbolic links, ``..``, a path elsewhere, a /proc file, a very long and a
non-UTF-8 name, a read-only folder, a file as parent) is given to ``Store`` (reading and
creating) and to the reading and creating commands. A reading call on a path with no store
says so and creates nothing; any other refusal is one clear message; the file system areas
involved are byte-for-byte as before (``tree_state``), and no call can block (a FIFO or a
device is never opened).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from magdash.cli import main
from magdash.errors import MagdashError, NoStoreError
from magdash.store import Store
from tests.support import HOSTILE_STORE_PATHS, hostile_path_params, make_device_stand_in, record, tree_state

pytestmark = pytest.mark.timeout(120)  # a call that blocked on a FIFO would end here

CASES = hostile_path_params()


@pytest.fixture
def areas(tmp_path):
    """(folder, outside, make): the folder the path is in, a sibling folder holding a real store,
    and the case's builder; the npz an import would read lies in a third folder."""
    folder, outside, inputs = tmp_path / "folder", tmp_path / "outside", tmp_path / "inputs"
    for area in (folder, outside, inputs):
        area.mkdir()
    rng = np.random.default_rng(2)
    Store(outside / "store.duckdb").import_arrays("m", rng.normal(size=(4, 2, 3, 4)), (1, 2, 3, 4),
                                                  carriers=("a {n}", "b {n}"), stimuli="s")
    np.savez(inputs / "vectors.npz", per_carrier=rng.normal(size=(4, 2, 3, 4)), magnitudes=np.arange(1, 5))
    return folder, outside, inputs


def _existing_store(path: str) -> bool:
    return os.path.realpath(path).endswith("/outside/store.duckdb")


@pytest.mark.parametrize("case", CASES)
def test_the_api_never_harms_what_is_at_the_path(case, areas, tmp_path):
    folder, outside, _ = areas
    path = HOSTILE_STORE_PATHS[case](folder, outside)
    record("api store path", 2)
    before = tree_state(tmp_path)
    if _existing_store(path):  # a link to a real store is that store
        assert Store(path, create=False).model_names() == ["m"]
        assert tree_state(tmp_path) == before
        return
    with pytest.raises(MagdashError) as reading:
        Store(path, create=False)
    assert "Traceback" not in str(reading.value) and str(reading.value).strip()
    assert tree_state(tmp_path) == before, f"{case}: reading changed the file system"
    creatable = isinstance(reading.value, NoStoreError) and case in ("'..' out of the folder", "absolute path elsewhere")
    if creatable:  # nothing is there: asked to create, the API creates the store, and only it
        Store(path)
        added = set(tree_state(tmp_path)) - set(before)
        real = os.path.realpath(path)
        assert {os.path.realpath(p) for p in added} <= {real, f"{real}.shards", os.path.dirname(real)}
        return
    with pytest.raises(MagdashError):
        Store(path)
    assert tree_state(tmp_path) == before, f"{case}: creating changed the file system"


READING = {
    "list": lambda store, folder: ["list", "--store", store],
    "analyze": lambda store, folder: ["analyze", "--model", "m", "--n-boot", "0", "--store", store],
    "export": lambda store, folder: ["export", "--model", "m", "--out", str(folder / "out.npz"), "--store", store],
    "freq corr": lambda store, folder: ["freq", "corr", "--model", "m", "--source", "openwebtext-500k",
                                        "--store", store],
}


@pytest.mark.parametrize("case", CASES)
def test_cli_commands_give_one_line_and_never_harm_what_is_at_the_path(case, areas, tmp_path, capsys):
    folder, outside, inputs = areas
    path = HOSTILE_STORE_PATHS[case](folder, outside)
    before = tree_state(tmp_path)
    if _existing_store(path):
        assert main(["list", "--store", path]) == 0 and "m " in capsys.readouterr().out
        return
    for name, command in READING.items():
        record(f"cli {name} --store (hostile path)")
        assert main(command(path, outside)) == 2, name
        error = capsys.readouterr().err.strip().splitlines()
        assert len(error) == 1 and error[0].startswith("magdash: error:"), (name, error)
        assert tree_state(tmp_path) == before, f"{case}: {name} changed the file system"
    record("cli import --store (hostile path)")
    status = main(["import", str(inputs / "vectors.npz"), "--name", "x", "--store", path])
    message = capsys.readouterr()
    if case in ("'..' out of the folder", "absolute path elsewhere"):  # nothing there: the import creates it
        assert status == 0, message.err
        assert Store(path, create=False).model_names() == ["x"]
    else:
        assert status == 2 and message.err.startswith("magdash: error:"), message.err
        assert tree_state(tmp_path) == before, f"{case}: import changed the file system"


def test_a_reading_command_on_a_missing_store_names_the_commands_that_create_one(tmp_path, capsys):
    path = tmp_path / "nothing" / "here.duckdb"
    assert main(["analyze", "--model", "m", "--store", str(path)]) == 2
    error = capsys.readouterr().err
    assert "no store at" in error and "`magdash extract`" in error and "`magdash import`" in error
    assert not path.parent.exists()


@pytest.mark.parametrize("target", ["folder", "character device"])
def test_an_export_is_written_exactly_where_it_is_asked_for_or_refused(target, areas, tmp_path, capsys):
    """--out DIR or --out /dev/null once wrote DIR.npz or /dev/null.npz beside what was named."""
    folder, outside, _ = areas
    store = str(outside / "store.duckdb")
    named = folder / ("results" if target == "folder" else "null")
    named.mkdir() if target == "folder" else make_device_stand_in(named)
    before = tree_state(tmp_path)
    assert main(["export", "--model", "m", "--out", str(named), "--store", store]) == 2
    error = capsys.readouterr().err
    assert error.startswith("magdash: error:") and f"it is a {target}" in error, error
    assert tree_state(tmp_path) == before and not (folder / f"{named.name}.npz").exists()
    # A name without .npz is written as it is, not renamed.
    assert main(["export", "--model", "m", "--out", str(folder / "vectors"), "--store", store]) == 0
    assert f"wrote {folder / 'vectors'}:" in capsys.readouterr().out
    assert sorted(p.name for p in folder.iterdir()) == sorted([named.name, "vectors"])
    with np.load(folder / "vectors") as exported:
        assert exported["per_carrier"].shape == (4, 2, 3, 4)


@pytest.mark.parametrize("target", ["FIFO", "folder", "character device", "not an export", "no such folder"])
def test_an_export_or_report_never_writes_over_what_magdash_did_not_write(target, areas, tmp_path, capsys):
    folder, outside, _ = areas
    store = str(outside / "store.duckdb")
    out = {"FIFO": "pipe.npz", "folder": "dir.npz", "character device": "null.npz", "not an export": "notes.npz",
           "no such folder": "missing/out.npz"}[target]
    builders = {"FIFO": os.mkfifo, "folder": Path.mkdir, "character device": make_device_stand_in,
                "not an export": lambda p: p.write_bytes(b"my own notes"), "no such folder": lambda p: None}
    builders[target](folder / out)
    before = tree_state(tmp_path)
    assert main(["export", "--model", "m", "--out", str(folder / out), "--store", store]) == 2
    assert capsys.readouterr().err.startswith("magdash: error:")
    assert tree_state(tmp_path) == before
    # An earlier export is replaced, and nothing else is left beside it.
    assert main(["export", "--model", "m", "--out", str(folder / "mine.npz"), "--store", store]) == 0
    assert main(["export", "--model", "m", "--out", str(folder / "mine.npz"), "--store", store]) == 0
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]
