"""``magdash behave``: the published trials imported and fitted (``--json`` records, the paper's -0.174
flagged), a second import storing nothing, and bad input refused in one line naming the problem."""

from __future__ import annotations

import json

import pytest

from magdash.behaviour.paper import STATUS_NEGATIVE
from magdash.behaviour.published import SHIPPED_TRIALS, shipped_file
from magdash.cli import main
from magdash.store import Store

SHIPPED = str(shipped_file(SHIPPED_TRIALS))


def _records(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_an_imported_file_gives_a_record_per_task_and_reference_with_the_paper_flag(tmp_path, capsys):
    store = str(tmp_path / "s.duckdb")
    argv = ["behave", "--import", SHIPPED, "--name", "llama", "--store", store, "--conventions", "paper",
            "--behaviour-n-boot", "0", "--json", "--quiet"]
    assert main(argv) == 0
    document = _records(capsys)
    records = document["records"]
    assert {(record["task"], record["reference"]) for record in records} == {
        (task, reference) for task in ("B1", "B2", "B3") for reference in (10.0, 30.0, 100.0, 300.0, 1000.0)}
    assert all({"task", "reference", "weber_fraction", "model"} <= set(record) for record in records)
    [at_1000] = [record for record in records if record["task"] == "B1" and record["reference"] == 1000.0]
    assert at_1000["weber_fraction"] == pytest.approx(-0.1735622714696955, abs=1e-6)
    assert at_1000["status"] == STATUS_NEGATIVE == "threshold below ratio 1 (the paper's function)"
    assert at_1000["in_range"] is False and at_1000["model"] == "llama"
    # the paper's other B1 references are inside the tested ratios
    assert all(record["in_range"] for record in records if record["task"] == "B1" and record["reference"] != 1000.0)
    assert len(Store(store).trials("llama", at_1000["comparisons"])) == 4500

    # a second import stores nothing new and gives the same records
    assert main(argv) == 0
    assert _records(capsys)["records"] == records
    assert len(Store(store).trials("llama", at_1000["comparisons"])) == 4500


@pytest.mark.slow
def test_the_magdash_conventions_give_b1_weber_fractions_with_intervals(tmp_path, capsys):
    assert main(["behave", "--import", SHIPPED, "--name", "llama", "--store", str(tmp_path / "s.duckdb"),
                 "--behaviour-n-boot", "20", "--json", "--quiet"]) == 0
    records = [record for record in _records(capsys)["records"] if record["task"] == "B1"]
    assert {record["conventions"] for record in records} == {"magdash"}
    assert {record["variant"] for record in records} == {"choice", "graded"}
    # magdash's conventions never give a negative Weber fraction
    assert all(record["weber_fraction"] is None or record["weber_fraction"] >= 0 for record in records)
    assert any(record["wf_low"] is not None for record in records)


def test_an_import_without_a_name_is_refused_in_one_line(tmp_path, capsys):
    assert main(["behave", "--import", SHIPPED, "--store", str(tmp_path / "s.duckdb"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("magdash: error:") and "--name" in err[0]
    assert not (tmp_path / "s.duckdb").exists()  # refused before the store is opened


def test_a_refused_file_or_a_model_that_does_not_load_leaves_no_store(tmp_path, capsys):
    broken = tmp_path / "trials.json"
    broken.write_text('[{"task_type": "B1"}]', encoding="utf-8")
    store = tmp_path / "s.duckdb"
    assert main(["behave", "--import", str(broken), "--name", "llama", "--store", str(store), "--quiet"]) == 2
    assert "lacks" in capsys.readouterr().err
    assert main(["behave", "--model", str(tmp_path / "no-such-model"), "--store", str(store), "--quiet"]) == 2
    assert "no-such-model" in capsys.readouterr().err
    assert not store.exists() and not list(tmp_path.glob("s.duckdb*"))


@pytest.mark.parametrize(("text", "said"), [
    ("Which is larger: A) {a} or B) ?", "{b}"),
    ("Which is larger: A) {a} or B) {b}? {b}", "{b}"),
])
def test_a_template_without_exactly_one_b_is_refused_in_one_line_naming_it(tmp_path, capsys, text, said):
    templates = tmp_path / "templates.txt"
    templates.write_text(f"Which is larger: A) {{a}} or B) {{b}}?\n{text}\n", encoding="utf-8")
    code = main(["behave", "--model", "absent-model", "--templates", str(templates),
                 "--store", str(tmp_path / "s.duckdb"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith("magdash: error:") and said in err[0] and "line 2" in err[0]
    assert "Traceback" not in err[0]


def test_an_unreadable_templates_file_is_refused_in_one_line(tmp_path, capsys):
    code = main(["behave", "--model", "absent-model", "--templates", str(tmp_path / "none.txt"),
                 "--store", str(tmp_path / "s.duckdb"), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "cannot read the templates file" in err[0]
