"""The sweep's ``steer`` task: after ``extract`` and ``behave`` on a cell, the cell's model steered on its
trials with the plan's ``[steer]`` table; a second sweep skips the done cell without loading the model;
a cell without trials fails saying which task to list first."""

from __future__ import annotations

import pytest

from magdash import trial_extraction
from magdash.comparison_stimuli import paper_comparisons
from magdash.runs.steer_runs import steer
from magdash.steering.steer_params import SteerParams
from magdash.sweep.runner import load_plan, run_sweep
from tests.support import write_plan
from tests.test_trial_extraction import build_comparison_model

STEER_TABLE = '[steer]\nlayers = "0-1"\ndoses = [1.0]\nn_random = 2\nn_boot = 10\ndirection = "pc1"\n'


@pytest.mark.slow
def test_the_steer_task_runs_after_extract_and_behave_then_is_skipped(tmp_path, store, monkeypatch):
    decoder = build_comparison_model(tmp_path / "cmp", chat=False)
    plan = load_plan(write_plan(tmp_path, {"cmp": decoder}, tasks='["extract", "behave", "steer"]',
                                extra="[behave]\nn_boot = 10\nvariants = [\"choice\"]\n" + STEER_TABLE))
    assert plan.steer == SteerParams(layers=(0, 1), doses=(1.0,), n_random=2, n_boot=10, direction="pc1")
    assert plan.params_for("steer") is plan.steer
    summary = run_sweep(plan, store)
    assert [(o.kind, o.status) for o in summary.outcomes] == [("extract", "done"), ("behave", "done"),
                                                               ("steer", "done")]
    cached = steer(store, "cmp", "small", paper_comparisons().name, plan.steer)
    assert cached.from_cache and cached.params == plan.steer
    assert cached.layers["layer"].tolist() == [0, 1] and cached.n_trials == paper_comparisons().n_trials
    assert summary.outcomes[2].detail.startswith("relevant at ")

    def never(*_args, **_kwargs):
        raise AssertionError("a done cell loaded its model")

    monkeypatch.setattr(trial_extraction, "load_for_trials", never)
    assert [o.status for o in run_sweep(plan, store).outcomes] == ["skipped", "skipped", "skipped"]


@pytest.mark.slow
def test_a_cell_without_trials_fails_naming_the_task_to_list_first(tmp_path, store):
    decoder = build_comparison_model(tmp_path / "cmp", chat=False)
    plan = load_plan(write_plan(tmp_path, {"cmp": decoder}, tasks='["extract", "steer"]', extra=STEER_TABLE))
    outcomes = run_sweep(plan, store).outcomes
    assert [(o.kind, o.status) for o in outcomes] == [("extract", "done"), ("steer", "failed")]
    assert 'list the "behave" task before "steer"' in outcomes[1].detail
    # Nothing was cached: the cell is not done, and runs again once its trials exist.
    assert [o.status for o in run_sweep(plan, store).outcomes] == ["skipped", "failed"]
