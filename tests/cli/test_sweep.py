"""``magdash sweep``: the summary on stdout, one line per failed task on stderr, exit 1; a bad plan exits 2."""

import pytest

from magdash.cli import main
from tests.support import write_plan


@pytest.mark.slow
def test_sweep_prints_a_summary_and_one_line_per_failure(tmp_path, tiny_llama, capsys):
    plan = write_plan(tmp_path, {"broken": tmp_path / "nope", "llama": tiny_llama})
    store = str(tmp_path / "store.duckdb")
    assert main(["sweep", str(plan), "--store", store, "--quiet"]) == 1
    captured = capsys.readouterr()
    assert "4 tasks: 2 done, 0 skipped, 1 failed, 1 not run" in captured.out
    errors = captured.err.strip().splitlines()
    assert len(errors) == 1 and errors[0].startswith("magdash: error: extract broken / small: no model")
    plan.write_text(plan.read_text().replace('name = "broken"', 'name = "gone"').replace(str(tmp_path / "nope"),
                                                                                      str(tiny_llama)))
    assert main(["sweep", str(plan), "--store", store, "--quiet"]) == 0
    assert "4 tasks: 2 done, 2 skipped, 0 failed, 0 not run" in capsys.readouterr().out


def test_a_bad_plan_exits_2_with_one_line(tmp_path, capsys):
    plan = tmp_path / "plan.toml"
    plan.write_text('tasks = ["dance"]\n', encoding="utf-8")
    assert main(["sweep", str(plan), "--store", str(tmp_path / "s.duckdb")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["magdash: error: plan.toml: tasks 'dance' is not one of extract, analyze, depth, controls, probe, behave, steer"]
    assert not (tmp_path / "s.duckdb").exists()
