"""How stores before schema 5 laid vectors out: one table per (model, layer), one float32 blob a row.

Read only by the migrations (:mod:`magdash.store.schema`); schema 5 keeps vectors in Parquet
shards (:mod:`magdash.store.shards`).
"""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa

from magdash.errors import StoreError


def vector_table(model_id: str, layer: int) -> str:
    """Name of the table holding one model's vectors at one layer.

    Each (model, layer) has its own table so that reading a layer scans only that layer's
    rows: DuckDB materialises the blob column of every row group a scan touches, so a shared
    table would make every layer read cost the whole store. The name is derived from a hash,
    so no user text ever reaches an identifier.
    """
    digest = hashlib.sha1(model_id.encode()).hexdigest()[:20]
    return f"vec_{digest}_{int(layer)}"


def decode_vectors_into(out: np.ndarray, rows: np.ndarray, blobs: pa.ChunkedArray) -> None:
    """Write float32 blob ``i`` into ``out[rows[i]]`` (``out`` is (n, dim)), chunk by chunk.

    Each chunk's data buffer is viewed in place, so a layer is copied once, straight to its
    final position, and never held twice.
    """
    dim = out.shape[1]
    width = dim * 4
    start = 0
    for chunk in blobs.chunks:
        if chunk.null_count:
            raise StoreError("the store holds an empty vector; run extract again to repair it")
        offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int32, count=len(chunk) + 1, offset=chunk.offset * 4)
        if len(chunk) and not np.all(np.diff(offsets) == width):
            raise StoreError(f"stored vectors are not {dim}-dimensional float32; the store is damaged")
        data = np.frombuffer(chunk.buffers()[2], dtype=np.uint8, count=len(chunk) * width, offset=int(offsets[0]))
        out[rows[start:start + len(chunk)]] = data.view("<f4").reshape(len(chunk), dim)
        start += len(chunk)
