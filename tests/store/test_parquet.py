"""Parquet folders: a model's vectors exported one file per layer, read by DuckDB and pandas as
they are, and imported back bit for bit (with the model's identity, so a moved extraction is
found stored); another tool's folder imports like an npz; bad folders are refused with what to
fix and leave the store untouched."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from magdash.cli import main
from magdash.errors import StoreError
from magdash.extraction import extract
from magdash.stimuli import StimulusSet
from magdash.store import Store
from magdash.store.npz import import_arrays
from magdash.store.parquet import MANIFEST, layer_file, read_parquet_folder
from tests.support import file_state

MAGNITUDES = [1, 2, 3, 5, 8, 13, 21]
CARRIERS = ["I saw {n} birds.", "There were {n} chairs.", "She paid {n} dollars."]


@pytest.fixture
def stored(store, rng) -> Store:
    vectors = rng.normal(size=(len(MAGNITUDES), len(CARRIERS), 4, 8)).astype(np.float32)
    vectors[2, 1, 3, 0] = np.inf  # a flagged vector travels and is flagged again
    vectors[4, 0, 1, 5] = np.nan
    import_arrays(store, "m", vectors, MAGNITUDES, carriers=CARRIERS, stimuli="seven", n_blocks=2)
    return store


def layer_tables(folder) -> list[pa.Table]:
    return [pq.read_table(folder / layer_file(layer)) for layer in range(4)]


def test_a_folder_round_trips_exactly_with_the_models_identity(stored, tmp_path):
    folder = tmp_path / "export"
    written = stored.export_parquet("m", "seven", folder)
    assert [path.name for path in written] == [layer_file(layer) for layer in range(4)] + [MANIFEST]
    other = Store(tmp_path / "other.duckdb")
    record, set_name = other.import_parquet_folder(folder, "copy")
    original = stored.model_record("m")
    assert record.model_id == original.model_id and record.fingerprint == original.fingerprint
    assert record.layer_labels == original.layer_labels and record.n_blocks == 2 and set_name == "seven"
    for layer in range(4):
        a, b = stored.read_layer("m", "seven", layer).vectors, other.read_layer("copy", "seven", layer).vectors
        assert a.tobytes() == b.tobytes()  # bit for bit, NaN and Inf included
    assert other.nonfinite_counts("copy", "seven") == stored.nonfinite_counts("m", "seven") == {1: 1, 3: 1}
    again = tmp_path / "again"
    other.export_parquet("copy", "seven", again)
    for first, second in zip(layer_tables(folder), layer_tables(again), strict=True):
        assert first.drop_columns(["vector"]).equals(second.drop_columns(["vector"]))
        assert first.schema.equals(second.schema)
        # compared as bytes: a table's equals() counts NaN as unequal to itself
        assert (first["vector"].combine_chunks().flatten().to_numpy().tobytes()
                == second["vector"].combine_chunks().flatten().to_numpy().tobytes())
    manifests = [json.loads((path / MANIFEST).read_text()) for path in (folder, again)]
    manifests[1]["model"]["name"] = "m"
    assert manifests[0] == manifests[1]


def test_duckdb_and_pandas_read_the_files_as_they_are(stored, tmp_path):
    folder = tmp_path / "export"
    stored.export_parquet("m", "seven", folder)
    expected = stored.read_layer("m", "seven", 2).vectors
    frame = pd.read_parquet(folder / layer_file(2))
    assert list(frame.columns) == ["magnitude", "carrier", "sentence", "vector"]
    np.testing.assert_array_equal(np.stack(frame["vector"].to_numpy()).reshape(expected.shape), expected)
    assert frame["sentence"].iloc[4] == "There were 2 chairs."
    rows = duckdb.sql(
        f"SELECT filename, magnitude, carrier, vector FROM read_parquet('{folder}/layer-*.parquet', filename = true) "
        "WHERE magnitude = 13 AND carrier = 2 ORDER BY filename"
    ).fetchall()
    assert len(rows) == 4
    np.testing.assert_array_equal(np.asarray(rows[2][3], dtype=np.float32), expected[5, 2])


def test_another_tools_folder_imports_like_an_npz(store, rng, tmp_path):
    folder = tmp_path / "theirs"
    folder.mkdir()
    vectors = rng.normal(size=(len(MAGNITUDES), len(CARRIERS), 3, 6))
    for layer in range(3):
        rows = [(m, c, vectors[i, c, layer].tolist()) for i, m in enumerate(MAGNITUDES) for c in range(len(CARRIERS))]
        frame = pd.DataFrame(rows, columns=["magnitude", "carrier", "vector"]).sample(frac=1, random_state=layer)
        frame.to_parquet(folder / layer_file(layer))  # shuffled rows, float64 lists, no manifest
    record, set_name = store.import_parquet_folder(folder, "theirs", carriers=CARRIERS)
    assert record.source == "import:theirs" and record.n_layers == 3
    for layer in range(3):
        np.testing.assert_array_equal(store.read_layer("theirs", set_name, layer).vectors,
                                      vectors[:, :, layer].astype(np.float32))
    assert store.stimulus_set(set_name).carriers == tuple(CARRIERS)


def test_an_imported_extraction_is_found_stored(tiny_llama, tmp_path):
    stimuli = StimulusSet("few", ("I saw {n} birds.", "We had {n} cups."), (1, 7, 42))
    server = Store(tmp_path / "server.duckdb")
    extract(str(tiny_llama), stimuli, server, name="tiny", device="cpu")
    server.export_parquet("tiny", "few", tmp_path / "moved")
    laptop = Store(tmp_path / "laptop.duckdb")
    laptop.import_parquet_folder(tmp_path / "moved", "tiny")
    # the same checkpoint, dtype and position: nothing is missing, nothing is run
    result = extract(str(tiny_llama), stimuli, laptop, name="tiny", device="cpu")
    assert result.extracted == 0 and result.already_stored == result.total == 6
    assert laptop.read_layer("tiny", "few", 1).vectors.tobytes() == server.read_layer("tiny", "few", 1).vectors.tobytes()


def break_folder(folder, how: str) -> None:
    if how == "gap":
        (folder / layer_file(1)).unlink()
    elif how == "column":
        table = pq.read_table(folder / layer_file(0)).drop_columns(["carrier"])
        pq.write_table(table, folder / layer_file(0))
    elif how == "duplicate":
        table = pq.read_table(folder / layer_file(2))
        pq.write_table(pa.concat_tables([table, table.slice(0, 1)]), folder / layer_file(2))
    elif how == "ragged":
        frame = pd.read_parquet(folder / layer_file(3))
        frame.at[0, "vector"] = np.zeros(3, dtype=np.float32)
        frame.to_parquet(folder / layer_file(3))
    elif how == "magnitudes":
        table = pq.read_table(folder / layer_file(1))
        table = table.set_column(0, "magnitude", pa.array(np.asarray(table["magnitude"]) + 1))
        pq.write_table(table, folder / layer_file(1))
    elif how == "manifest":
        document = json.loads((folder / MANIFEST).read_text())
        document["version"] = 99
        (folder / MANIFEST).write_text(json.dumps(document))
    elif how == "blocks":
        document = json.loads((folder / MANIFEST).read_text())
        document["model"]["n_blocks"] = 99
        (folder / MANIFEST).write_text(json.dumps(document))
    elif how == "garbled":
        (folder / layer_file(0)).write_bytes(b"not parquet at all")


@pytest.mark.parametrize("how, message", [
    ("gap", r"lacks layer files for layers \[1\]"),
    ("column", r"lacks the columns \['carrier'\]"),
    ("duplicate", "exactly one row per carrier"),
    ("ragged", "same, non-zero length"),
    ("magnitudes", "other magnitudes or carriers"),
    ("manifest", "version 99; this magdash reads 1"),
    ("blocks", "n_blocks 99 does not fit 4 layers"),
    ("garbled", "not a readable Parquet file"),
])
def test_a_bad_folder_is_refused_and_the_store_untouched(stored, tmp_path, capsys, how, message):
    folder = tmp_path / "export"
    stored.export_parquet("m", "seven", folder)
    break_folder(folder, how)
    with pytest.raises(StoreError, match=message):
        read_parquet_folder(folder)
    before = file_state(stored.path)
    assert main(["import", str(folder), "--name", "broken", "--store", str(stored.path)]) == 2
    assert message.split("\\")[0].split("(")[0][:12] in capsys.readouterr().err
    assert file_state(stored.path) == before


def test_the_cli_exports_and_imports_a_folder(stored, tmp_path, capsys):
    folder = tmp_path / "cli-export"
    base = ["--store", str(stored.path)]
    assert main(["export", "--model", "m", "--format", "parquet", "--out", str(folder), *base]) == 0
    assert "4 layer files and magdash.json" in capsys.readouterr().out
    assert main(["export", "--model", "m", "--format", "parquet", "--out", str(folder), *base]) == 2
    assert "not an empty folder" in capsys.readouterr().err
    assert main(["import", str(folder), "--name", "back", *base]) == 0
    assert "'back'" in capsys.readouterr().out
    assert stored.model_record("back").model_id == stored.model_record("m").model_id
    assert main(["import", str(folder), "--name", "other", "--last-layer", "post-norm", *base]) == 2
    assert "gives its layers" in capsys.readouterr().err
    assert stored.stimulus_sets_for("back") == ["seven"]
