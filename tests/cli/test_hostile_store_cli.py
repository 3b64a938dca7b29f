"""The command line on shared stores (issue 45): a stored frequency source replaced only with
``--replace``, totals beyond 64 bits printed alike by every command, an extraction refused by its
model that leaves the store (and the model cache) as they were."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

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
