"""Where vectors go and how fast: the store's Parquet shards side by side with the DuckDB vector
tables of schema 4 and earlier, and with plain Parquet files.

The issue's case by default: 1000 magnitudes x 5 carriers x 33 layers x 1024 floats (676 MB
of float32). Each round, in one process, on the same array:

1. **store write**: the store's write path (``Store.write_vectors`` in the import's batches of
   ``WRITE_BATCH_BYTES``, 256 MB: one shard each, fsynced, renamed, and registered with its
   items' completion markers and non-finite flags in one transaction);
2. **import**: ``import_arrays`` end to end (the store write plus the SHA-256 of the whole
   array that is an imported model's identity);
3. **tables write**: the layout of schema 4 and earlier, rebuilt here because the package no
   longer writes it: one DuckDB table per layer, a float32 blob per row, the same batches, one
   transaction each;
4. **Parquet floor**: ``pyarrow.parquet.write_table`` of one uncompressed file per layer with a
   fixed-size float list column, no fsync (the issue's reference, 437 MB/s on its machine);
5. **layer reads**: every layer through ``Store.read_layers`` (what an analysis reads), through the tables (the schema-4
   reader: the layer's rows of the set, decoded straight into the array), and from the
   Parquet folder of ``export --format parquet`` (written and read back: export/import rates);

and the sizes on disk against the raw floats. Prints MB/s per round, medians and the ratios.
Targets (issue 17): store write >= 400 MB/s, store size <= 1.05x, layer reads >= 3x the
tables'.

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

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from magdash.stimuli import StimulusSet  # noqa: E402
from magdash.store import Store  # noqa: E402
from magdash.store.codec import decode_vectors_into, vector_table  # noqa: E402
from magdash.store.npz import WRITE_BATCH_BYTES, import_arrays, write_per_carrier  # noqa: E402
from magdash.store.parquet import layer_file  # noqa: E402
from magdash.store.records import ModelRecord  # noqa: E402

CARRIERS = ("I saw {n} birds.", "There were {n} chairs.", "She paid {n} dollars.", "We ran {n} miles.",
            "They sold {n} tickets.")


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def timed(run) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def tables_write(path: Path, flat: np.ndarray, keys: list[str]) -> None:
    """Schema 4's write path: per batch, one transaction inserting a blob row per item in each layer's table."""
    n_items, n_layers, dim = flat.shape
    chunk = max(1, WRITE_BATCH_BYTES // (n_layers * dim * 4))
    offsets = np.arange(chunk + 1, dtype=np.int32) * dim * 4
    with duckdb.connect(str(path), config={"force_compression": "uncompressed"}) as connection:
        for layer in range(n_layers):
            connection.execute(f"CREATE TABLE {vector_table('m', layer)} (item_key VARCHAR, vec BLOB)")
        for start in range(0, n_items, chunk):
            batch = flat[start:start + chunk]
            connection.begin()
            for layer in range(n_layers):
                rows = np.ascontiguousarray(batch[:, layer])
                blobs = pa.Array.from_buffers(pa.binary(), len(rows), [
                    None, pa.py_buffer(offsets[:len(rows) + 1]), pa.py_buffer(rows.reshape(-1).view(np.uint8))])
                connection.register("rows", pa.table({"item_key": keys[start:start + chunk], "vec": blobs}))
                connection.execute(f"INSERT INTO {vector_table('m', layer)} SELECT * FROM rows")
                connection.unregister("rows")
            connection.commit()


def tables_read(path: Path, keys: list[str], n_layers: int, dim: int) -> None:
    """Schema 4's layer reader: each layer's rows decoded in batches straight into its array."""
    position = {key: index for index, key in enumerate(keys)}
    with duckdb.connect(str(path), read_only=True) as connection:
        connection.register("wanted", pa.table({"item_key": keys}))
        for layer in range(n_layers):
            out = np.empty((len(keys), dim), dtype=np.float32)
            reader = connection.sql(
                f"SELECT item_key, vec FROM {vector_table('m', layer)} WHERE item_key IN (SELECT item_key FROM wanted)"
            ).to_arrow_reader(max(1, (32 << 20) // (4 * dim)))
            for batch in reader:
                targets = np.fromiter((position[k] for k in batch.column(0).to_pylist()), np.int64, batch.num_rows)
                decode_vectors_into(out, targets, pa.chunked_array([batch.column(1)]))


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
    keys = [item.key for item in stimuli.items]
    flat = vectors.reshape(n_magnitudes * n_carriers, n_layers, dim)
    record = ModelRecord("m", "bench-model", "bench", "fp", "float32", "", "bench", n_layers - 1, dim,
                         tuple(f"layer {i}" for i in range(n_layers)), "imported")
    store = Store(work / "store.duckdb")
    store.register(stimuli, record)
    seconds = {"store_write": timed(lambda: write_per_carrier(store, record.model_id, stimuli, vectors))}
    imported = Store(work / "imported.duckdb")
    seconds["import"] = timed(lambda: import_arrays(imported, "m", vectors, magnitudes, carriers=list(CARRIERS),
                                                    stimuli="bench"))
    seconds["tables_write"] = timed(lambda: tables_write(work / "tables.duckdb", flat, keys))
    seconds["parquet_floor"] = timed(lambda: parquet_floor(work / "floor", flat))
    seconds["parquet_export"] = timed(lambda: store.export_parquet("m", "bench", work / "folder"))
    other = Store(work / "other.duckdb")
    seconds["parquet_import"] = timed(lambda: other.import_parquet_folder(work / "folder", "m"))
    seconds["store_read"] = timed(lambda: list(store.read_layers("m", "bench")))
    seconds["tables_read"] = timed(lambda: tables_read(work / "tables.duckdb", keys, n_layers, dim))
    seconds["parquet_read"] = timed(lambda: [
        pq.read_table(work / "folder" / layer_file(layer), columns=["vector"]).column("vector")
        .combine_chunks().flatten().to_numpy() for layer in range(n_layers)])
    rates = {name: raw / 1e6 / value for name, value in seconds.items()}
    store_bytes = sum(p.stat().st_size for p in work.glob("store.duckdb*") if p.is_file())
    sizes = {
        "store_size": (store_bytes + folder_bytes(work / "store.duckdb.shards")) / raw,
        "tables_size": sum(p.stat().st_size for p in work.glob("tables.duckdb*")) / raw,
        "folder_size": folder_bytes(work / "folder") / raw,
    }
    return {**rates, **sizes}


def show(values: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.3f}x" if k.endswith("size") else f"{k} {v:.0f} MB/s" for k, v in values.items())


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
        print(f"round {index + 1}: {show(rounds[-1])}")
    median = {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}
    print(f"median: {show(median)}")
    print(f"ratios (median): store write / tables write {median['store_write'] / median['tables_write']:.2f}x, "
          f"store write / Parquet floor {median['store_write'] / median['parquet_floor']:.2f}x, "
          f"store layer read / tables layer read {median['store_read'] / median['tables_read']:.2f}x, "
          f"store size / tables size {median['store_size'] / median['tables_size']:.3f}")


if __name__ == "__main__":
    main()
