"""Sweep benchmark: one Ray worker vs two on this machine, and the per-sentence cost of a forward pass.

Workload: ``--models`` tiny random Llama models (``--blocks`` blocks, d = ``--hidden``, +8, +16, ...,
built locally) x two dtypes (float32, bfloat16) on ``--magnitudes`` x the paper's 5 carriers, task
``extract``. The same plan runs on a local Ray cluster of 1 CPU and then of 2 CPUs, each into a
fresh store; Ray's start-up (``ray.init``) is timed apart and must be under 10% of a sweep.
Target: 2 workers at least 1.6x the throughput of 1. The machine may be shared, so the load
average is printed beside the numbers. It also prints the in-process cost per sentence (the
cluster estimate in docs/how-to/ray-cluster.md scales it by FLOPs).
Run: ``python bench/sweep.py [--models 4] [--magnitudes 1-4000] [--blocks 4] [--hidden 256]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from magdash.store import Store  # noqa: E402
from magdash.sweep.runner import load_plan, run_sweep
from magdash.sweep.sweep_params import SweepParams
from tests.support import build_tiny_model  # noqa: E402


def write_plan(folder: Path, models: list[Path], magnitudes: str) -> Path:
    entries = "".join(f'[[models]]\nspec = "{m}"\nname = "m{i}"\n' for i, m in enumerate(models))
    path = folder / "plan.toml"
    path.write_text(f'tasks = ["extract"]\ndtypes = ["float32", "bfloat16"]\n{entries}'
                    f'[[stimuli]]\nname = "bench"\nmagnitudes = "{magnitudes}"\n')
    return path


def ray_sweep(plan, folder: Path, cpus: int) -> tuple[float, float, int]:
    import ray

    started = time.perf_counter()
    ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).resolve().parents[1])}})
    startup = time.perf_counter() - started
    try:
        started = time.perf_counter()
        summary = run_sweep(plan, Store(folder / f"ray{cpus}.duckdb"), SweepParams(ray="auto"))
        seconds = time.perf_counter() - started
    finally:
        ray.shutdown()
    assert not summary.failed, [o.line for o in summary.failed]
    sentences = sum(int(o.detail.split()[0]) for o in summary.outcomes)
    return startup, seconds, sentences


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", type=int, default=4)
    parser.add_argument("--magnitudes", default="1-4000")
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    args = parser.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # Widths differ by a little so each model has its own weights (the same weights would be
        # one model in the store, extracted once).
        models = [build_tiny_model(folder / f"model{i}", "llama", n_blocks=args.blocks, hidden=args.hidden + 8 * i)
                  for i in range(args.models)]
        plan = load_plan(write_plan(folder, models, args.magnitudes))
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
        started = time.perf_counter()
        one_cell = load_plan(write_plan(folder, models[:1], args.magnitudes))
        summary = run_sweep(one_cell, Store(folder / "local.duckdb"))
        local = time.perf_counter() - started
        sentences = sum(int(o.detail.split()[0]) for o in summary.outcomes)
        print(f"in-process, 1 model x 2 dtypes: {sentences} sentences in {local:.1f} s "
              f"({1000 * local / sentences:.2f} ms a sentence, model loads included; d={args.hidden}, {args.blocks} blocks)")
        results = {}
        for cpus in (1, 2):
            startup, seconds, sentences = ray_sweep(plan, folder, cpus)
            results[cpus] = sentences / seconds
            print(f"Ray, {cpus} worker(s): {sentences} sentences in {seconds:.1f} s = {results[cpus]:.0f} sentences/s; "
                  f"ray.init {startup:.1f} s ({100 * startup / seconds:.1f}% of the sweep)")
        print(f"throughput 2 workers / 1 worker: {results[2] / results[1]:.2f}x (target >= 1.6x)")
        print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
              "(other work on the machine lowers the ratio)")


if __name__ == "__main__":
    main()
