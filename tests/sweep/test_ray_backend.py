"""The Ray backend's parts that need no cluster: the message without Ray, and the task body.
A real cluster runs in test_ray.py (slow)."""

from __future__ import annotations

import sys

import pytest

from magdash.errors import MagdashError
from magdash.sweep import ray_backend


def test_without_ray_the_backend_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(MagdashError, match=r"ray= needs Ray: pip install 'magdash\[ray\]'"):
        ray_backend.RayBackend(ray_backend.LOCAL, retries=1)


def test_a_task_runs_its_job_on_its_cpus_with_labelled_progress():
    import torch

    reports = []
    before = torch.get_num_threads()
    try:
        def work(job, progress):
            progress(1, job)
            return job * 2, torch.get_num_threads()

        output = ray_backend._run_job(work, 21, 1, "extract tiny", lambda *report: reports.append(report))
        assert output == (42, 1)
        assert reports == [("extract tiny", 1, 21)]
        assert ray_backend._run_job(lambda job, progress: progress, 0, 1, "x", None) is None
    finally:
        torch.set_num_threads(before)
