"""Where vectors go and how fast: the DuckDB store against a Parquet folder, side by side.

The issue's case by default: 1000 magnitudes x 5 carriers x 33 layers x 1024 floats (676 MB
of float32). Each round, in one process, on the same array:

1. store write: ``import_arrays`` into a new store (the path an extraction's batches take);
2. Parquet export: ``export_parquet`` of that model (reads the store, writes a file per layer);
3. Parquet import: ``import_parquet_folder`` into another new store;
4. layer reads: every layer through ``Store.read_layer`` against ``pyarrow.parquet.read_table``
   of its file;

and the sizes on disk against the raw floats. Prints MB/s per round, medians and the ratios.
The store's write rate is what issue 17's Parquet-shard storage targets (400 MB/s); this
bench measures the interchange folder that already exists beside it.

Run: ``python bench/storage.py [--magnitudes 1000] [--layers 33] [--dim 1024] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from magdash.store import Store  # noqa: E402
from magdash.store.npz import import_arrays  # noqa: E402
from magdash.store.parquet import layer_file  # noqa: E402

CARRIERS = ["I saw {n} birds.", "There were {n} chairs.", "She paid {n} dollars.", "We ran {n} miles.",
            "They sold {n} tickets."]


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def one_round(vectors: np.ndarray, magnitudes: list[int], work: Path) -> dict[str, float]:
    raw = vectors.nbytes
    store = Store(work / "store.duckdb")
    started = time.perf_counter()
    _, stimuli = import_arrays(store, "m", vectors, magnitudes, carriers=CARRIERS, stimuli="bench")
    store_write = time.perf_counter() - started
    started = time.perf_counter()
    store.export_parquet("m", stimuli, work / "folder")
    export = time.perf_counter() - started
    other = Store(work / "other.duckdb")
    started = time.perf_counter()
    other.import_parquet_folder(work / "folder", "m")
    parquet_import = time.perf_counter() - started
    n_layers = vectors.shape[2]
    started = time.perf_counter()
    for layer in range(n_layers):
        store.read_layer("m", stimuli, layer)
    store_read = time.perf_counter() - started
    import pyarrow.parquet as pq

    started = time.perf_counter()
    for layer in range(n_layers):
        table = pq.read_table(work / "folder" / layer_file(layer), columns=["vector"])
        table.column("vector").combine_chunks().flatten().to_numpy()
    parquet_read = time.perf_counter() - started
    mb = raw / 1e6
    return {
        "store_write": mb / store_write, "parquet_export": mb / export, "parquet_import": mb / parquet_import,
        "store_read": mb / store_read, "parquet_read": mb / parquet_read,
        "store_size": sum(p.stat().st_size for p in work.glob("store.duckdb*")) / raw,  # with any WAL
        "folder_size": folder_bytes(work / "folder") / raw,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--magnitudes", type=int, default=1000)
    parser.add_argument("--layers", type=int, default=33)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(17)
    vectors = rng.normal(size=(args.magnitudes, len(CARRIERS), args.layers, args.dim)).astype(np.float32)
    magnitudes = list(range(1, args.magnitudes + 1))
    print(f"{vectors.nbytes / 1e6:.0f} MB of float32 ({args.magnitudes} x {len(CARRIERS)} x {args.layers} x {args.dim})")
    rounds = []
    for index in range(args.rounds):
        work = Path(tempfile.mkdtemp(prefix="magdash-storage-"))
        try:
            rounds.append(one_round(vectors, magnitudes, work))
        finally:
            shutil.rmtree(work, ignore_errors=True)
        print(f"round {index + 1}: " + ", ".join(
            f"{k} {v:.3f}x" if k.endswith("size") else f"{k} {v:.0f} MB/s" for k, v in rounds[-1].items()))
    median = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    print("median: " + ", ".join(
        f"{k} {v:.3f}x" if k.endswith("size") else f"{k} {v:.0f} MB/s" for k, v in median.items()))
    print(f"ratios (median): Parquet export / store write {median['parquet_export'] / median['store_write']:.2f}x, "
          f"Parquet layer read / store layer read {median['parquet_read'] / median['store_read']:.2f}x, "
          f"folder size / store size {median['folder_size'] / median['store_size']:.3f}")


if __name__ == "__main__":
    main()
