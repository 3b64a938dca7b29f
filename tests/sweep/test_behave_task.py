"""The sweep's ``behave`` task: the paper's comparisons run on a cell's model and fitted with the plan's
``[behave]`` table, and a second sweep skips the done cell without loading the model."""

from __future__ import annotations

import pytest

from magdash import trial_extraction
from magdash.comparison_stimuli import paper_comparisons
from magdash.runs.behaviour_runs import behaviour
from magdash.sweep.runner import load_plan, run_sweep
from tests.support import write_plan
from tests.test_trial_extraction import build_comparison_model


@pytest.mark.slow
def test_the_behave_task_runs_the_paper_design_then_is_skipped(tmp_path, store, monkeypatch):
    decoder = build_comparison_model(tmp_path / "cmp", chat=False)
    plan = load_plan(write_plan(tmp_path, {"cmp": decoder}, tasks='["behave"]',
                                extra="[behave]\nn_boot = 10\nvariants = [\"choice\"]\n"))
    assert plan.behave.n_boot == 10 and plan.behave.variants == ("choice",)
    summary = run_sweep(plan, store)
    assert [(o.kind, o.cell.store_name, o.status) for o in summary.outcomes] == [("behave", "cmp", "done")]
    design = paper_comparisons()
    assert len(store.trials("cmp", design.name)) == design.n_trials
    cached = behaviour(store, "cmp", design.name, plan.behave)
    assert cached.from_cache and cached.params == plan.behave
    detail = summary.outcomes[0].detail
    assert detail.startswith("median Weber fraction ") or detail.startswith("no Weber fraction defined")

    def never(*_args, **_kwargs):
        raise AssertionError("a done cell loaded its model")

    monkeypatch.setattr(trial_extraction, "load_for_trials", never)
    assert [o.status for o in run_sweep(plan, store).outcomes] == ["skipped"]
