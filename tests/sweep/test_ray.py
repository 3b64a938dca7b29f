"""Sweeps on a local Ray cluster (the machine's 2 CPUs, one per session): the same store as
in-process, a killed worker retried with nothing registered twice, failures kept to their task."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from magdash.store import Store
from magdash.store.shards import shard_files
from magdash.sweep.runner import load_plan, run_sweep
from magdash.sweep.sweep_params import SweepParams
from tests.support import KillWorkerOnce, duplicate_rows, stored_vectors, write_plan

pytestmark = pytest.mark.slow

ON_RAY = SweepParams(ray="auto")


@pytest.fixture(scope="module")
def swept(tmp_path_factory, tiny_llama, tiny_mistral, ray_cluster):
    """One plan (a missing model, two tiny models) run in-process and on Ray."""
    folder = tmp_path_factory.mktemp("sweep")
    plan = load_plan(write_plan(folder, {"broken": folder / "nope", "llama": tiny_llama, "mistral": tiny_mistral}))
    local, remote = Store(folder / "local.duckdb"), Store(folder / "ray.duckdb")
    local_summary, ray_summary = run_sweep(plan, local), run_sweep(plan, remote, ON_RAY)
    # Only the missing model fails, in both; any other failure is shown with its message.
    for summary in (local_summary, ray_summary):
        assert [o.cell.store_name for o in summary.failed] == ["broken"], [o.line for o in summary.failed]
    return folder, local_summary, local, ray_summary, remote


def test_the_store_after_a_ray_sweep_equals_the_in_process_one(swept):
    _, local_summary, local, ray_summary, remote = swept
    local_vectors, ray_vectors = stored_vectors(local), stored_vectors(remote)
    assert local_vectors.keys() == ray_vectors.keys()
    assert {name for name, _, _ in ray_vectors} == {"llama", "mistral"}
    for key, vectors in local_vectors.items():
        np.testing.assert_array_equal(ray_vectors[key], vectors)
    columns = ["name", "model_id", "n_blocks", "hidden_size", "stimulus_sets"]
    assert local.list_models()[columns].equals(remote.list_models()[columns])
    assert local_summary.frame().drop(columns="seconds").equals(ray_summary.frame().drop(columns="seconds"))


def test_ray_workers_write_the_shards_and_the_driver_registers_them(swept):
    *_, remote = swept
    with duckdb.connect(str(remote.path), read_only=True) as connection:
        registered = {row[0] for row in connection.execute("SELECT shard FROM shards").fetchall()}
    assert registered and all(name.endswith(".worker.parquet") for name in registered)
    assert set(shard_files(remote.shards)) == registered


def test_a_bad_model_fails_that_task_alone_with_its_message(swept):
    *_, ray_summary, remote = swept
    statuses = {(o.kind, o.cell.store_name): o.status for o in ray_summary.outcomes}
    assert statuses == {
        ("extract", "broken"): "failed", ("analyze", "broken"): "not run",
        ("extract", "llama"): "done", ("analyze", "llama"): "done",
        ("extract", "mistral"): "done", ("analyze", "mistral"): "done",
    }
    (failure,) = ray_summary.failed
    assert "no model" in failure.detail and "nope" in failure.detail
    assert duplicate_rows(remote.path) == 0


def test_a_task_asking_for_more_than_the_cluster_has_fails_alone(swept, tmp_path, tiny_llama):
    plan_path = write_plan(tmp_path, {"llama": tiny_llama, "greedy": tiny_llama})
    plan_path.write_text(plan_path.read_text().replace('name = "greedy"\n', 'name = "greedy"\nnum_gpus = 1\n'))
    store = Store(tmp_path / "store.duckdb")
    summary = run_sweep(load_plan(plan_path), store, ON_RAY)
    assert [(o.cell.store_name, o.kind, o.status) for o in summary.outcomes] == [
        ("llama", "extract", "done"), ("llama", "analyze", "done"),
        ("greedy", "extract", "failed"), ("greedy", "analyze", "not run"),
    ]
    assert summary.failed[0].detail == "asks for 1 GPUs per task; the Ray cluster has 0 in all"


def test_a_worker_killed_mid_job_is_retried_and_nothing_is_stored_twice(swept, tmp_path, tiny_llama):
    folder, _, local, *_ = swept
    plan = load_plan(write_plan(tmp_path, {"llama": tiny_llama}))
    killer = KillWorkerOnce(tmp_path / "killed", tmp_path / "events.log", at=2)
    store = Store(tmp_path / "store.duckdb")
    summary = run_sweep(plan, store, ON_RAY, worker_progress=killer)
    assert not summary.failed, [o.line for o in summary.failed]
    assert (tmp_path / "killed").exists()
    events = (tmp_path / "events.log").read_text().splitlines()
    # Batches of 8 of 60 sentences: the first attempt logged 2 and died, the retry all 8.
    assert [line.split()[-1] for line in events] == ["8/60", "16/60"] + [f"{n}/60" for n in (*range(8, 60, 8), 60)]
    assert len({line.split()[0] for line in events}) == 2  # two worker processes
    assert [(o.kind, o.status) for o in summary.outcomes] == [("extract", "done"), ("analyze", "done")]
    assert summary.outcomes[0].detail == "60 sentences"
    assert duplicate_rows(store.path) == 0
    assert store.extraction_progress()[["done", "total"]].values.tolist() == [[60, 60]]
    expected = {key: vectors for key, vectors in stored_vectors(local).items() if key[0] == "llama"}
    for key, vectors in stored_vectors(store).items():
        np.testing.assert_array_equal(vectors, expected[key])
