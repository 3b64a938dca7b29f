"""In-process sweeps: every task runs, done work is skipped, a failure stays with its task."""

from __future__ import annotations

import os

import numpy as np
import pytest

from magdash.errors import MagdashError, PlanError
from magdash.extraction import extract
from magdash.stimuli import StimulusSet
from magdash.sweep.runner import load_plan, run_sweep
from magdash.sweep.sweep_params import SweepParams
from magdash.sweep.tasks import TASK_KINDS, TaskKind
from tests.support import stored_vectors, write_plan


def _statuses(summary):
    return [(o.kind, o.cell.store_name, o.status) for o in summary.outcomes]


@pytest.mark.slow
def test_a_sweep_runs_every_task_then_skips_them_all(tmp_path, store, tiny_llama):
    plan = load_plan(write_plan(tmp_path, {"llama": tiny_llama}, tasks='["extract", "analyze", "depth"]'))
    seen = []
    summary = run_sweep(plan, store, progress=lambda done, total: seen.append((done, total)))
    assert _statuses(summary) == [("extract", "llama", "done"), ("analyze", "llama", "done"),
                                  ("depth", "llama", "done")]
    assert summary.outcomes[0].detail == "60 sentences"
    assert summary.outcomes[1].detail.startswith("mean core alpha (eucl) ")
    assert summary.outcomes[2].detail.startswith("gamma_c ")
    assert seen[0] == (0, 3) and seen[-1] == (3, 3)
    assert store.stimulus_sets_for("llama") == ["small"]
    again = run_sweep(plan, store)
    assert [o.status for o in again.outcomes] == ["skipped"] * 3
    frame = again.frame()
    assert list(frame["status"]) == ["skipped"] * 3 and set(frame["model"]) == {"llama"}


@pytest.mark.slow
def test_the_controls_task_caches_the_controls_and_is_skipped_after(tmp_path, store, tiny_llama):
    from magdash.runs.controls_runs import run_controls

    plan = load_plan(write_plan(tmp_path, {"llama": tiny_llama}, tasks='["extract", "controls"]',
                                extra="[controls]\nn_perm = 200\n"))
    summary = run_sweep(plan, store)
    assert _statuses(summary) == [("extract", "llama", "done"), ("controls", "llama", "done")]
    cached = run_controls(store, "llama", "small", plan.controls_params)
    assert cached.from_cache and cached.params.n_perm == 200 and cached.analysis.params.n_boot == 20
    flagged = {v.control for m in cached.measures for v in cached.verdicts(m) if v.problem}
    detail = summary.outcomes[1].detail
    assert detail == (f"problems: {', '.join(sorted(flagged))}" if flagged else "no control flags a problem")
    assert [o.status for o in run_sweep(plan, store).outcomes] == ["skipped", "skipped"]


@pytest.mark.slow
def test_the_probe_task_caches_the_probes_and_is_skipped_after(tmp_path, store, tiny_llama):
    from magdash.runs.probe_runs import probe

    plan = load_plan(write_plan(tmp_path, {"llama": tiny_llama}, tasks='["extract", "probe"]',
                                extra="[probe]\nn_boot = 20\nmagnitude_folds = 3\n"))
    summary = run_sweep(plan, store)
    assert _statuses(summary) == [("extract", "llama", "done"), ("probe", "llama", "done")]
    cached = probe(store, "llama", "small", plan.probe)
    assert cached.from_cache and cached.params.n_boot == 20 and cached.params.magnitude_folds == 3
    scores = cached.score_table("magnitude", "log", "real")
    best = scores.loc[scores["r2"].idxmax()]
    assert summary.outcomes[1].detail == f"best held-out-magnitude R² (log) {best['r2']:.3f} at layer {int(best['layer'])}"
    assert not store.metric_table("probe_scores").empty
    assert [o.status for o in run_sweep(plan, store).outcomes] == ["skipped", "skipped"]


@pytest.mark.slow
def test_a_gguf_model_is_converted_in_the_plans_model_cache(tmp_path, store, smollm2, monkeypatch):
    from magdash.sources.gguf import MODEL_CACHE_ENV

    # The session's conversion of smollm2 is in $MAGDASH_MODEL_CACHE; the plan names that folder
    # while the environment points elsewhere, so only the plan's folder can give a conversion.
    session_cache = os.environ[MODEL_CACHE_ENV]
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv(MODEL_CACHE_ENV, str(elsewhere))
    plan_path = write_plan(tmp_path, {"smol": "smollm2"}, tasks='["extract"]', magnitudes="1-2",
                           extra=f'model_cache = "{session_cache}"\n')
    summary = run_sweep(load_plan(plan_path), store)
    assert [(o.status, o.detail) for o in summary.outcomes] == [("done", "10 sentences")]
    assert not elsewhere.exists()
    assert store.model_record("smol").fingerprint.startswith("gguf:Q4_1:")


def test_the_sweep_stores_what_extract_stores(tmp_path, store, tiny_llama):
    plan = load_plan(write_plan(tmp_path, {"llama": tiny_llama}, tasks='["extract"]'))
    run_sweep(plan, store)
    reference = type(store)(tmp_path / "reference.duckdb")
    small = store.stimulus_set("small")
    extract(str(tiny_llama), small, reference, name="llama", batch_size=8)
    swept, extracted = stored_vectors(store), stored_vectors(reference)
    assert swept.keys() == extracted.keys() and len(swept) == 5
    for key, vectors in swept.items():
        np.testing.assert_array_equal(vectors, extracted[key])


@pytest.mark.slow
def test_resume_skips_done_tasks_and_finishes_a_partial_extraction(tmp_path, store, tiny_llama):
    plan = load_plan(write_plan(tmp_path, {"llama": tiny_llama}))
    small = StimulusSet("small", plan.stimuli[0].stimulus_set.carriers, plan.stimuli[0].stimulus_set.magnitudes)
    batches = iter(range(100))
    # A run stopped after its first batch of 8 sentences: the sweep finishes the other 52.
    partial = extract(str(tiny_llama), small, store, name="llama", batch_size=8,
                      should_stop=lambda: next(batches) >= 1)
    assert partial.cancelled and partial.extracted == 8
    summary = run_sweep(plan, store)
    assert _statuses(summary) == [("extract", "llama", "done"), ("analyze", "llama", "done")]
    assert summary.outcomes[0].detail == "52 sentences"
    analyze_only = load_plan(write_plan(tmp_path, {"llama": tiny_llama}, tasks='["extract", "analyze", "depth"]'))
    resumed = run_sweep(analyze_only, store)
    assert [o.status for o in resumed.outcomes] == ["skipped", "skipped", "done"]


@pytest.mark.slow
def test_a_bad_model_fails_alone_with_its_message(tmp_path, store, tiny_llama):
    plan = load_plan(write_plan(tmp_path, {"broken": tmp_path / "nope", "llama": tiny_llama}))
    summary = run_sweep(plan, store)
    assert _statuses(summary) == [
        ("extract", "broken", "failed"), ("analyze", "broken", "not run"),
        ("extract", "llama", "done"), ("analyze", "llama", "done"),
    ]
    (failure,) = summary.failed
    assert "no model" in failure.detail and "nope" in failure.detail
    assert failure.line.startswith("extract broken / small: no model")
    assert summary.outcomes[1].detail == "extract failed"
    assert summary.counts() == {"done": 2, "skipped": 0, "failed": 1, "not run": 1}
    assert store.model_names() == ["llama"]


def test_a_registered_task_kind_runs_and_a_bug_in_it_is_one_line(tmp_path, store, tiny_llama, monkeypatch):
    calls = []

    def run(context):
        calls.append(context.cell.store_name)
        if len(calls) == 1:
            raise RuntimeError("boom\nsecond line")
        return "counted"

    monkeypatch.setitem(TASK_KINDS, "count", TaskKind("count", lambda context: False, run))
    plan = load_plan(write_plan(tmp_path, {"a": tiny_llama, "b": tiny_llama}, tasks='["count"]'))
    summary = run_sweep(plan, store)
    assert calls == ["a", "b"]
    assert [(o.status, o.detail) for o in summary.outcomes] == [("failed", "RuntimeError: boom"), ("done", "counted")]


def test_a_stimulus_set_the_store_refuses_is_a_plan_error(tmp_path, store, tiny_llama):
    plan = load_plan(write_plan(tmp_path, {"llama": tiny_llama}))
    stored = plan.stimuli[0].stimulus_set
    store.register_stimulus_set(StimulusSet("other", stored.carriers, stored.magnitudes))
    with pytest.raises(PlanError, match="stimuli 'small'"):
        run_sweep(plan, store)
    text = write_plan(tmp_path, {"llama": tiny_llama}).read_text().replace('magnitudes = "1-12"\n', "")
    (tmp_path / "named.toml").write_text(text.replace('name = "small"', 'name = "unknown"'))
    with pytest.raises(PlanError, match="no stored stimulus set 'unknown'"):
        run_sweep(load_plan(tmp_path / "named.toml"), store)


def test_sweep_params_are_checked():
    with pytest.raises(MagdashError, match="ray= needs an address"):
        SweepParams(ray=" ")
    with pytest.raises(MagdashError, match="retries=-?\\S* must be 0 or more"):
        SweepParams(retries=-1)
