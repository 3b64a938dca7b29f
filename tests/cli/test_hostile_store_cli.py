"""The command line on shared stores (issue 45): a stored frequency source replaced only with
``--replace``, totals beyond 64 bits printed alike by every command."""

from __future__ import annotations

import json

from magdash.cli import main
from magdash.runs.frequency_runs import load_source
from magdash.store import Store
from tests.support import file_state


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
