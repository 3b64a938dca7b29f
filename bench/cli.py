"""How fast the command line answers: every ``--help``, and a cached ``analyze``, as whole processes.

Each command runs in a fresh ``python -m magdash`` process (what a user waits for: the
interpreter's start, the imports and the work), ``--repeats`` times; the medians are printed
beside the target. A cached ``analyze`` (the second run on a small imported store) also reports
which heavy packages its process imported: it should pay for what it uses (the store, pandas,
the result's decoding), never torch or transformers.

Targets: any ``--help`` under 0.5 s; a cached ``analyze`` imports neither torch nor transformers.
Run: ``python bench/cli.py [--repeats 5]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HELP_TARGET_S = 0.5
HEAVY = ("torch", "transformers", "streamlit", "altair", "sklearn", "ray")
COMMANDS = [
    [], ["extract"], ["list"], ["import"], ["export"], ["compact"], ["backfill"], ["analyze"], ["compare"],
    ["freq", "corr"], ["depth"], ["controls"], ["design"], ["probe"], ["behave"], ["steer"], ["sweep"],
]
REPORT_IMPORTS = """
import json, sys
from magdash.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "loaded": sorted(name for name in %r if name in sys.modules)}), file=sys.stderr)
"""


def timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def make_store(folder: Path, env: dict[str, str]) -> Path:
    """A store holding one imported model of 26 magnitudes x 5 carriers x 8 layers x 64 d."""
    script = (
        "import numpy as np, sys\n"
        "from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES\n"
        "from magdash.store import Store\n"
        "vectors = np.random.default_rng(0).normal(size=(26, 5, 8, 64)).astype(np.float32)\n"
        "Store(sys.argv[1]).import_arrays('bench', vectors, PAPER_MAGNITUDES, carriers=PAPER_CARRIERS)\n"
    )
    path = folder / "bench.duckdb"
    subprocess.run([sys.executable, "-c", script, str(path)], cwd=ROOT, env=env, check=True)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rows = []
    for command in COMMANDS:
        times = [timed([sys.executable, "-m", "magdash", *command, "--help"], env) for _ in range(args.repeats)]
        rows.append((" ".join(["magdash", *command, "--help"]), statistics.median(times)))
    with tempfile.TemporaryDirectory() as folder:
        store = make_store(Path(folder), env)
        analyze = ["analyze", "--model", "bench", "--store", str(store), "--n-boot", "200", "--json"]
        first = timed([sys.executable, "-m", "magdash", *analyze], env)
        cached = [timed([sys.executable, "-m", "magdash", *analyze], env) for _ in range(args.repeats)]
        run = subprocess.run([sys.executable, "-c", REPORT_IMPORTS % (HEAVY,), *analyze], cwd=ROOT, env=env,
                             check=True, capture_output=True, text=True)
        loaded = json.loads(run.stderr.strip().splitlines()[-1])["loaded"]
    width = max(len(name) for name, _ in rows)
    print(f"{'command':<{width}}  median s  (target {HELP_TARGET_S} s, {args.repeats} runs each)")
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds:8.3f}  {'ok' if seconds < HELP_TARGET_S else 'OVER'}")
    print(f"\nanalyze, computed: {first:.2f} s; from the cache: median {statistics.median(cached):.2f} s "
          f"({first / statistics.median(cached):.1f}x faster)")
    print(f"heavy packages a cached analyze imported: {', '.join(loaded) or 'none'} (of {', '.join(HEAVY)})")


if __name__ == "__main__":
    main()
