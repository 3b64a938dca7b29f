"""bench/gpu_check.py, the prepared GPU check (issue 33), run where the tests run: on the CPU.

``--device cpu --small`` runs every section with small sizes: the device comparisons become
CPU-versus-CPU, the float16/bfloat16 checks and the out-of-memory path (a simulated card) stay.
Its timings are printed, never asserted here.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from tests.support import ROOT

SCRIPT = ROOT / "bench" / "gpu_check.py"


@functools.cache
def _gpu_check():
    """The script as a module (its dataclasses need it registered while it runs)."""
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_layer_errors_are_relative_frobenius_norms_and_nan_fails(tmp_path):
    check = _gpu_check()
    reference = np.zeros((2, 2, 3), dtype=np.float32)
    reference[:, 0] = [[3.0, 0.0, 0.0], [0.0, 4.0, 0.0]]  # layer 0: ||ref|| = 5
    reference[:, 1] = 1.0
    vectors = reference.copy()
    vectors[0, 0, 2] = 0.5  # layer 0: ||diff|| = 0.5
    vectors[1, 1, 0] = np.nan
    errors = check.layer_errors(vectors, reference)
    assert errors[0] == pytest.approx(0.1) and math.isnan(errors[1])
    report = check.Report(tmp_path / "report.json")
    report.check("correctness", "layer 0", errors[0], 0.2)
    report.check("correctness", "worst layer", check.worst(errors), 1.0)
    assert [row.passed for row in report.rows] == [True, False] and not report.passed
    report.save()
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["passed"] is False and [row["passed"] for row in saved["rows"]] == [True, False]
    assert "FAIL" in report.table().splitlines()[3]


def test_a_step_that_raises_is_a_failed_row_and_the_run_goes_on(tmp_path):
    check = _gpu_check()
    report = check.Report(tmp_path / "report.json")

    def broken():
        raise RuntimeError("CUDA error: an illegal memory access was encountered\nmore")

    assert check.guarded(report, "scale", "batch 256", broken) is None
    assert check.guarded(report, "scale", "batch 32", lambda: 7) == 7
    (row,) = report.rows
    assert (row.section, row.check, row.passed) == ("scale", "batch 256 ran", False)
    assert row.measured == "RuntimeError: CUDA error: an illegal memory access was encountered"
    assert "broken" in report.details["errors"]["scale: batch 256"]


def test_floor_batches_come_back_in_the_items_order():
    check = _gpu_check()
    items = check.paper_stimuli().items[:3]
    batches = [check.NumberVectors([items[2].key], np.full((1, 2, 1), 2.0), None),
               check.NumberVectors([items[0].key, items[1].key], np.array([[[0.0]] * 2, [[1.0]] * 2]), None)]
    assert check.in_item_order(items, batches)[:, 0, 0].tolist() == [0.0, 1.0, 2.0]


def test_norm_errors_are_relative_and_only_for_norms_a_device_computed():
    check = _gpu_check()
    vectors = np.array([[[3.0, 4.0]], [[6.0, 8.0]]])
    batches = [check.NumberVectors(["a", "b"], vectors, np.array([[5.0], [10.0 * (1 + 1e-9)]])),
               check.NumberVectors(["c"], vectors[:1], None)]
    assert check.norm_errors(batches) == [pytest.approx(1e-9, rel=1e-6)]


@pytest.mark.slow
def test_the_gpu_check_runs_on_the_cpu_and_its_checks_pass(tmp_path):
    out = tmp_path / "gpu_check.json"
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--device", "cpu", "--small", "--out", str(out), "--work", str(tmp_path)],
        capture_output=True, text=True, timeout=1200, cwd=ROOT,
    )
    shown = f"rc {result.returncode}\n{result.stdout[-6000:]}\n{result.stderr[-6000:]}"
    assert result.returncode == 0, shown
    report = json.loads(out.read_text())
    assert report["passed"] and "errors" not in report, shown
    rows = report["rows"]
    checks = [row for row in rows if row["passed"] is not None]
    assert all(row["passed"] for row in checks), shown
    assert {row["section"] for row in checks} == {"environment", "correctness", "scale", "oom", "spectra"}
    correctness = [row["check"] for row in rows if row["section"] == "correctness"]
    for family in ("llama", "gemma", "bert"):
        for what in ("float32 cpu vs cpu", "float16", "bfloat16", "right padding", "left padding", "device_map=auto"):
            assert any(check.startswith(family) and what in check for check in correctness), (family, what)
    # The out-of-memory path: magdash's one-line error, nothing stored, then a rerun that completes.
    oom = report["oom"]
    assert oom["error_type"] == "MagdashError" and "batch_size=" in oom["message"], oom
    assert oom["held"] == 0
    assert oom["resumed"]["already_stored"] == 0 and oom["resumed"]["extracted"] == oom["sentences"]
    # Both batch sizes of the large set were extracted and compared with the floor.
    assert set(report["scale"]["large"]) == {"32", "128"}
    assert report["spectra"]["layers"] == report["scale"]["model"]["layers"]
    assert report["environment"]["imported"] and "gguf" not in report["environment"]["imported"]
    # The table comes last, one line per row.
    lines = result.stdout.rstrip().splitlines()
    header = max(i for i, line in enumerate(lines) if line.split()[:2] == ["section", "check"])
    assert f"{len(rows)} rows, 0 failed" in lines[header + 2 + len(rows)]
    assert "full numbers" in lines[-1]
