"""Where vectors go and how fast: the store's Parquet shards side by side with the previous
release's store (schema 4: vectors in DuckDB tables) and with plain Parquet files.

The issue's case by default: 1000 magnitudes x 5 carriers x 33 layers x 1024 floats (676 MB
of float32). Each round, on the same array:

1. **previous release** (``--previous REV``, default 7b5447e, the last release of schema 4,
   unpacked with ``git archive`` and run in a subprocess on the same array, saved as .npy):
   ``import_arrays``, every layer through ``read_layer`` (what a page reads) and through
   ``read_layers`` (what an analysis reads), the store's size;
2. the same three on this checkout, plus:
3. **store write**: the store's write path alone (``Store.write_vectors`` in the import's batches
   of ``shards.WRITE_BATCH_BYTES``, 256 MB: one shard each, fsynced, renamed, and registered with its
   items' completion markers and non-finite flags in one transaction); ``import`` adds to it the
   SHA-256 of the whole array that is an imported model's identity;
4. **Parquet floor**: ``pyarrow.parquet.write_table`` of one uncompressed file per layer with a
   fixed-size float list column, no fsync (the issue's reference, 437 MB/s on its machine);
5. ``export --format parquet`` and its ``import`` into a new store.

Prints MB/s per round, medians and the ratios. Targets (issue 17): store write >= 400 MB/s,
store size <= 1.05x the floats, layer reads >= 3x the previous release's.

Run: ``python bench/storage.py [--magnitudes 1000] [--layers 33] [--dim 1024] [--rounds 3]``
(from a git clone, for the previous release; ``--previous none`` skips it).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from magdash.stimuli import StimulusSet  # noqa: E402
from magdash.store import Store  # noqa: E402
from magdash.store.npz import import_arrays, write_per_carrier  # noqa: E402
from magdash.store.records import ModelRecord  # noqa: E402

CARRIERS = ("I saw {n} birds.", "There were {n} chairs.", "She paid {n} dollars.", "We ran {n} miles.",
            "They sold {n} tickets.")


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def timed(run) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


PREVIOUS_RELEASE = "7b5447e"

# Run by the previous release's interpreter path: its own magdash, the same steps as this one's.
_PREVIOUS_ROUND = """
import json, shutil, sys, tempfile, time
from pathlib import Path
import numpy as np
sys.path.insert(0, sys.argv[1])
from magdash.store import Store
from magdash.store.npz import import_arrays
vectors = np.load(sys.argv[2])
work = Path(tempfile.mkdtemp(dir=sys.argv[3]))
store = Store(work / "store.duckdb")
carriers = json.loads(sys.argv[4])
started = time.perf_counter()
import_arrays(store, "m", vectors, list(range(1, vectors.shape[0] + 1)), carriers=carriers, stimuli="bench")
seconds = {"import": time.perf_counter() - started}
started = time.perf_counter()
for layer in range(vectors.shape[2]):
    store.read_layer("m", "bench", layer)
seconds["read_layer"] = time.perf_counter() - started
started = time.perf_counter()
list(store.read_layers("m", "bench"))
seconds["read_layers"] = time.perf_counter() - started
size = sum(p.stat().st_size for p in work.rglob("*") if p.is_file())
shutil.rmtree(work)
print(json.dumps({"seconds": seconds, "bytes": size}))
"""


def unpack_previous(revision: str, into: Path) -> Path | None:
    """The previous release's code, unpacked from this clone's history (None without git)."""
    target = into / "previous"
    target.mkdir()
    try:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision], check=True, capture_output=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def previous_round(code: Path, array: Path, work: Path, raw: int) -> dict[str, float]:
    output = subprocess.run(
        [sys.executable, "-c", _PREVIOUS_ROUND, str(code), str(array), str(work), json.dumps(CARRIERS)],
        check=True, capture_output=True, text=True, cwd=code,
    ).stdout
    measured = json.loads(output.strip().splitlines()[-1])
    rates = {f"previous_{name}": raw / 1e6 / value for name, value in measured["seconds"].items()}
    return {**rates, "previous_size": measured["bytes"] / raw}


def parquet_floor(folder: Path, flat: np.ndarray) -> None:
    folder.mkdir()
    n_items, n_layers, dim = flat.shape
    for layer in range(n_layers):
        values = pa.array(np.ascontiguousarray(flat[:, layer]).reshape(-1))
        pq.write_table(pa.table({"vector": pa.FixedSizeListArray.from_arrays(values, dim)}),
                       folder / f"layer-{layer:03d}.parquet", compression="none")


def one_round(vectors: np.ndarray, magnitudes: list[int], work: Path) -> dict[str, float]:
    raw = vectors.nbytes
    n_magnitudes, n_carriers, n_layers, dim = vectors.shape
    stimuli = StimulusSet("bench", CARRIERS, tuple(magnitudes))
    flat = vectors.reshape(n_magnitudes * n_carriers, n_layers, dim)
    record = ModelRecord("m", "bench-model", "bench", "fp", "float32", "", "bench", n_layers - 1, dim,
                         tuple(f"layer {i}" for i in range(n_layers)), "imported")
    store = Store(work / "store.duckdb")
    store.register(stimuli, record)
    seconds = {"store_write": timed(lambda: write_per_carrier(store, record.model_id, stimuli, vectors))}
    imported = Store(work / "imported.duckdb")
    seconds["import"] = timed(lambda: import_arrays(imported, "m", vectors, magnitudes, carriers=list(CARRIERS),
                                                    stimuli="bench"))
    seconds["read_layer"] = timed(lambda: [imported.read_layer("m", "bench", layer) for layer in range(n_layers)])
    seconds["read_layers"] = timed(lambda: list(imported.read_layers("m", "bench")))
    seconds["parquet_floor"] = timed(lambda: parquet_floor(work / "floor", flat))
    seconds["parquet_export"] = timed(lambda: store.export_parquet("m", "bench", work / "folder"))
    other = Store(work / "other.duckdb")
    seconds["parquet_import"] = timed(lambda: other.import_parquet_folder(work / "folder", "m"))
    rates = {name: raw / 1e6 / value for name, value in seconds.items()}
    store_bytes = sum(p.stat().st_size for p in work.glob("store.duckdb*") if p.is_file())
    return {
        **rates,
        "store_size": (store_bytes + folder_bytes(work / "store.duckdb.shards")) / raw,
        "folder_size": folder_bytes(work / "folder") / raw,
    }


def show(values: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.3f}x" if k.endswith("size") else f"{k} {v:.0f} MB/s" for k, v in values.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--magnitudes", type=int, default=1000)
    parser.add_argument("--layers", type=int, default=33)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--previous", default=PREVIOUS_RELEASE, help="git revision of the release to compare, or none")
    args = parser.parse_args()
    rng = np.random.default_rng(17)
    vectors = rng.normal(size=(args.magnitudes, len(CARRIERS), args.layers, args.dim)).astype(np.float32)
    magnitudes = list(range(1, args.magnitudes + 1))
    print(f"{vectors.nbytes / 1e6:.0f} MB of float32 ({args.magnitudes} x {len(CARRIERS)} x {args.layers} x {args.dim})")
    scratch = Path(tempfile.mkdtemp(prefix="magdash-storage-"))
    try:
        previous = None if args.previous == "none" else unpack_previous(args.previous, scratch)
        if previous is None and args.previous != "none":
            print(f"(no git history here: the previous release {args.previous} is not measured)")
        array = scratch / "vectors.npy"
        np.save(array, vectors)
        rounds = []
        for index in range(args.rounds):
            measured = {}
            if previous is not None:
                measured.update(previous_round(previous, array, scratch, vectors.nbytes))
            work = Path(tempfile.mkdtemp(dir=scratch))
            try:
                measured.update(one_round(vectors, magnitudes, work))
            finally:
                shutil.rmtree(work, ignore_errors=True)
            rounds.append(measured)
            print(f"round {index + 1}: {show(measured)}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    median = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    print(f"median: {show(median)}")
    ratios = [f"store write / Parquet floor {median['store_write'] / median['parquet_floor']:.2f}x"]
    if previous is not None:
        ratios += [
            f"import / previous import {median['import'] / median['previous_import']:.2f}x",
            f"read_layer / previous {median['read_layer'] / median['previous_read_layer']:.2f}x",
            f"read_layers / previous {median['read_layers'] / median['previous_read_layers']:.2f}x",
            f"store size / previous {median['store_size'] / median['previous_size']:.3f}",
        ]
    print("ratios (median): " + ", ".join(ratios))


if __name__ == "__main__":
    main()
