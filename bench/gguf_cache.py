"""GGUF models (named gguf_cache.py, not gguf.py, which would shadow the gguf package here): what the conversion cache buys, and the first-run button on a real decoder.

1. The first-ever load of a built-in GGUF decoder (dequantize + tokenizer conversion + save).
2. Side by side, whole processes (``python -m magdash extract``, fresh store each time) on the
   paper's stimuli: the model named by its GGUF spec with the conversion cached, against the
   converted folder given directly. Target: ratio at most 1.5 (what remains is hashing the GGUF
   file and reading its header).
3. With ``--first-run``: the Home page's first-run protocol (minilm, smollm2 and their random
   controls: extract, analyse, compare) on a fresh store, once from an empty model cache and
   ``--repeats`` times with the conversion cached. Target: under 60 s cached on two cores.

Run: ``python bench/gguf_cache.py [--model smollm2] [--repeats 3] [--first-run]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TARGET_RATIO = 1.5
TARGET_FIRST_RUN_S = 60.0


def timed_process(args: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "magdash", *args], cwd=ROOT, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def first_run(store: Path) -> float:
    from magdash import dashboard
    from magdash.dashboard.jobs import run_first_protocol
    from magdash.store import Store

    started = time.perf_counter()
    assert run_first_protocol(Store(store), dashboard.analysis_params(dashboard.ViewState(store=str(store))))
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2", help="a GGUF model spec (default: smollm2)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--first-run", action="store_true", help="also time the first-run protocol")
    args = parser.parse_args()

    from magdash.sources import resolve_model
    from magdash.sources.gguf import converted_folder

    with tempfile.TemporaryDirectory(prefix="magdash-bench-gguf-") as tmp:
        work = Path(tmp)
        cache = work / "models"
        env = {**os.environ, "MAGDASH_MODEL_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
        os.environ["MAGDASH_MODEL_CACHE"] = str(cache)
        started = time.perf_counter()
        source = resolve_model(args.model)
        folder = converted_folder(source.gguf, "float32", cache)
        print(f"first-ever load of {args.model} ({source.gguf.quantization}): converted in "
              f"{time.perf_counter() - started:.1f} s")

        gguf_times, folder_times = [], []
        for index in range(args.repeats):
            gguf_times.append(timed_process(
                ["extract", "--model", args.model, "--store", str(work / f"g{index}.duckdb"), "--quiet"], env))
            folder_times.append(timed_process(
                ["extract", "--model", str(folder), "--store", str(work / f"f{index}.duckdb"), "--quiet"], env))
        gguf_s, folder_s = statistics.median(gguf_times), statistics.median(folder_times)
        ratio = gguf_s / folder_s
        print(f"whole-process extraction of the paper's set, median of {args.repeats}: "
              f"{args.model} (conversion cached) {gguf_s:.1f} s, converted folder directly {folder_s:.1f} s, "
              f"ratio {ratio:.3f} (target <= {TARGET_RATIO}: {'met' if ratio <= TARGET_RATIO else 'NOT met'})")

        if args.first_run:
            empty = work / "empty-cache"
            os.environ["MAGDASH_MODEL_CACHE"] = str(empty)
            print(f"first run from an empty model cache: {first_run(work / 'first-empty.duckdb'):.1f} s")
            os.environ["MAGDASH_MODEL_CACHE"] = str(cache)
            times = [first_run(work / f"first{index}.duckdb") for index in range(args.repeats)]
            median = statistics.median(times)
            print(f"first run, conversion cached, median of {args.repeats}: {median:.1f} s "
                  f"({', '.join(f'{t:.1f}' for t in times)}; target < {TARGET_FIRST_RUN_S:.0f} s: "
                  f"{'met' if median < TARGET_FIRST_RUN_S else 'NOT met'})")


if __name__ == "__main__":
    main()
