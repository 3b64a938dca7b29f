"""Memory benchmark: analysing a large model holds one layer in memory at a time.

Workload: a synthetic model — magnitudes 1..1000 x 20 carriers x 33 layers x d = 4096
(660,000 float32 vectors, 10.8 GB) — with a planted exponent alpha = -0.05. One layer alone
is 328 MB in float32. Each side runs in a fresh subprocess that reports its own peak resident
set size from ``resource.getrusage``, doing the full analysis (3 measures on every layer,
10,000-resample bootstrap on the core layers, E3, E4, noise models, geometry):

* ``generated``: :func:`magdash.variability.analysis.run_analysis` over layers generated one at a time in
  the process (no store): the floor set by the analysis itself;
* ``store``: the same model written through the store's write API
  (``Store.register_stimulus_set``, ``register_model``, ``write_vectors``), then
  :func:`magdash.runs.analysis_runs.analyze`, which reads it back with ``Store.read_layers``.

Peak RSS is the child's own high-water mark (``VmHWM``): ``ru_maxrss`` would also count the
parent's, which Linux carries into a child it spawns, and the parent is large after building
the store.

Target: peak RSS under 2 GB.
Run: ``python bench/analysis_memory.py [--magnitudes 1000] [--store PATH] [--keep] [--skip-store]``;
a store already built at PATH is reused (it takes about 11 GB of disk at full size).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

try:
    import magdash  # noqa: F401
except ModuleNotFoundError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MODEL = "bench-memory"
STIMULI = "bench-1000x20"
N_MAGNITUDES, N_CARRIERS, N_BLOCKS, DIM = 1000, 20, 32, 4096
ALPHA = -0.05
ITEMS_PER_WRITE = 400


def build_store(path: Path, n_magnitudes: int = N_MAGNITUDES, seed: int = 0) -> None:
    """Write the synthetic model through Store.register_* and Store.write_vectors, in chunks."""
    from magdash.stimuli import StimulusSet
    from magdash.store import ModelRecord, Store

    store = Store(path)
    carriers = tuple(f"Carrier sentence number {i} says {{n}} here." for i in range(N_CARRIERS))
    stimuli = StimulusSet(STIMULI, carriers, tuple(range(1, n_magnitudes + 1)))
    store.register_stimulus_set(stimuli)
    labels = ("embeddings", *(f"block {i}" for i in range(1, N_BLOCKS + 1)))
    record = ModelRecord(
        name=MODEL, model_id="bench-memory-synthetic", source="synthetic", fingerprint="synthetic",
        dtype="float32", transformers_version="", architecture="synthetic", n_blocks=N_BLOCKS,
        hidden_size=DIM, layer_labels=labels, position="synthetic",
    )  # fmt: skip
    store.register_model(record)
    missing = store.missing_item_keys(record.model_id, STIMULI)
    items = [item for item in stimuli.items if item.key in missing]
    rng = np.random.default_rng(seed)
    directions = rng.normal(size=(N_BLOCKS + 1, DIM)).astype(np.float32) * 3.0
    bases = rng.normal(size=(N_BLOCKS + 1, DIM)).astype(np.float32) * 10.0
    started = time.perf_counter()
    for start in range(0, len(items), ITEMS_PER_WRITE):
        chunk = items[start:start + ITEMS_PER_WRITE]
        magnitudes = np.array([item.magnitude for item in chunk], dtype=np.float32)
        log_n = np.log(magnitudes)[:, None, None]
        vectors = rng.standard_normal((len(chunk), N_BLOCKS + 1, DIM), dtype=np.float32)
        vectors *= (magnitudes**ALPHA)[:, None, None]
        vectors[:, 0] = 0.0  # embeddings: context-free, V = 0
        vectors += log_n * directions[None] + bases[None]
        store.write_vectors(record.model_id, [item.key for item in chunk], vectors)
        done = start + len(chunk)
        print(f"\rbuilding store: {done}/{len(items)} items, {time.perf_counter() - started:.0f} s",
              end="", flush=True)  # fmt: skip
    if items:
        print()


def generated_layers(n_magnitudes: int, seed: int = 0):
    """The same kind of model as :func:`build_store`, produced one layer at a time."""
    rng = np.random.default_rng(seed)
    magnitudes = np.arange(1, n_magnitudes + 1, dtype=np.float32)
    for layer in range(N_BLOCKS + 1):
        vectors = rng.standard_normal((n_magnitudes, N_CARRIERS, DIM), dtype=np.float32)
        vectors *= (magnitudes**ALPHA)[:, None, None] * (layer > 0)
        vectors += (np.log(magnitudes)[:, None] * rng.normal(size=DIM).astype(np.float32) * 3.0)[:, None, :]
        yield ("embeddings" if layer == 0 else f"block {layer}"), vectors
        del vectors


def peak_rss_mib() -> float:
    """This process's peak resident set (VmHWM, reset at exec), in MiB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux, where /proc exists


def analyse(source: str, path: Path | None, n_magnitudes: int, n_boot: int) -> None:
    """Child process: run the analysis and print a JSON line with peak RSS and timings."""
    from magdash.runs.analysis_runs import analyze
    from magdash.store import Store
    from magdash.variability.analysis import run_analysis
    from magdash.variability.analysis_params import AnalysisParams

    started = time.perf_counter()
    params = AnalysisParams(n_boot=n_boot)
    if source == "store":
        result = analyze(Store(path), MODEL, STIMULI, params, use_cache=False)
    else:
        magnitudes = np.arange(1, n_magnitudes + 1, dtype=np.float64)
        result = run_analysis(generated_layers(n_magnitudes), magnitudes, n_blocks=N_BLOCKS, params=params)
    seconds = time.perf_counter() - started
    print(json.dumps({
        "peak_rss_mib": peak_rss_mib(),
        "seconds": seconds,
        "mean_core_alpha_eucl": result.hypotheses["eucl"].mean_alpha,
        "n_layers": result.n_layers,
    }))  # fmt: skip


def run_child(source: str, path: Path | None, n_magnitudes: int, n_boot: int) -> dict:
    command = [sys.executable, __file__, "--mode", source, "--magnitudes", str(n_magnitudes),
               "--n-boot", str(n_boot)]  # fmt: skip
    if path is not None:
        command += ["--store", str(path)]
    child = subprocess.run(command, capture_output=True, text=True)
    if child.returncode != 0:
        sys.exit(f"the {source} analysis subprocess failed:\n{child.stderr}")
    return json.loads(child.stdout.strip().splitlines()[-1])


def report(source: str, result: dict) -> None:
    alpha = result["mean_core_alpha_eucl"]
    print(f"{source:>9}: {result['seconds']:7.1f} s, peak RSS {result['peak_rss_mib']:6.0f} MiB "
          f"({result['peak_rss_mib'] / 1024:.2f} GiB; target < 2 GiB); "
          f"mean core alpha V_eucl {alpha:+.4f} (planted {ALPHA})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=("bench", "store", "generated"), default="bench")
    parser.add_argument("--store", default=None, help="store file to build or reuse (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary store")
    parser.add_argument("--skip-store", action="store_true", help="measure only the store-free floor")
    parser.add_argument("--n-boot", type=int, default=10_000)
    parser.add_argument("--magnitudes", type=int, default=N_MAGNITUDES, help="magnitudes 1..N (for a quick try)")
    args = parser.parse_args()
    if args.mode != "bench":
        analyse(args.mode, None if args.store is None else Path(args.store), args.magnitudes, args.n_boot)
        return
    one_layer_mib = args.magnitudes * N_CARRIERS * DIM * 4 / 2**20
    print(f"model: {args.magnitudes} magnitudes x {N_CARRIERS} carriers x {N_BLOCKS + 1} layers x d={DIM}; "
          f"one layer = {one_layer_mib:.0f} MiB float32; {args.n_boot} resamples on core layers")
    report("generated", run_child("generated", None, args.magnitudes, args.n_boot))
    if args.skip_store:
        return
    folder = None
    if args.store is None:
        folder = tempfile.mkdtemp(prefix="magdash-memory-")
        path = Path(folder) / "bench.duckdb"
    else:
        path = Path(args.store)
    try:
        build_store(path, args.magnitudes)
        print(f"store: {path.stat().st_size / 2**30:.1f} GiB on disk")
        report("store", run_child("store", path, args.magnitudes, args.n_boot))
    finally:
        if folder is not None and not args.keep:
            for leftover in Path(folder).iterdir():
                leftover.unlink()
            Path(folder).rmdir()
        elif folder is not None:
            print(f"store kept at {path}")


if __name__ == "__main__":
    main()
