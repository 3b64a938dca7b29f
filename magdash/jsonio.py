"""JSON conversion shared by the CLI, the report and the result cache, and the cache's payloads:
plain data, compressed, never pickle."""

from __future__ import annotations

import dataclasses
import json
import math
import zlib
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


def to_jsonable(value: Any, *, keep_nan: bool = False) -> Any:
    """Return ``value`` as plain JSON types.

    Dataclasses become dicts, numpy scalars and arrays become Python numbers and lists. Non-finite
    floats become ``None``, so the result can go through ``json.dumps(..., allow_nan=False)``
    (what users read), or stay as they are with ``keep_nan`` (the result cache, which reads its
    own NaN back).
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name), keep_nan=keep_nan) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_jsonable(v, keep_nan=keep_nan) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v, keep_nan=keep_nan) for v in value]
    if isinstance(value, np.ndarray):
        return [to_jsonable(v, keep_nan=keep_nan) for v in value.tolist()]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        number = float(value)
        return number if keep_nan or math.isfinite(number) else None
    return value


def pack(document: Any) -> bytes:
    """A result cache payload: ``document`` as zlib-compressed JSON, NaN kept (never pickle, so a
    shared store cannot run code)."""
    return zlib.compress(json.dumps(to_jsonable(document, keep_nan=True), allow_nan=True).encode(), 6)


MAX_PAYLOAD_BYTES = 256 * 2**20
"""The most a cached payload may hold once decompressed (the largest results magdash writes are a few
tens of MB of JSON): a payload that would be larger is refused before it is, so a small "zip bomb" in a
shared store cannot fill the memory."""


def unpack(payload: bytes) -> Any:
    """The document :func:`pack` wrote; a ``ValueError`` for a payload that is not one (not zlib, not
    JSON, cut short, or larger than :data:`MAX_PAYLOAD_BYTES` decompressed, which is never decompressed
    in full)."""
    inflater = zlib.decompressobj()
    try:
        text = inflater.decompress(payload, MAX_PAYLOAD_BYTES)
    except zlib.error as error:
        raise ValueError(f"not a compressed payload ({error})") from None
    if inflater.unconsumed_tail:
        raise ValueError(f"the payload holds more than {MAX_PAYLOAD_BYTES:,} bytes once decompressed")
    if not inflater.eof:
        raise ValueError("the payload is cut short")
    return json.loads(text)


def check_npz_payload(payload: bytes) -> None:
    """Refuse (``ValueError``) a cached npz payload (a phase run's samples) that is not a zip archive,
    or whose members would hold more than :data:`MAX_PAYLOAD_BYTES` once decompressed, before NumPy
    decompresses any of them."""
    import io
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(payload)) as archive:
            declared = sum(member.file_size for member in archive.infolist())
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, NotImplementedError) as error:
        raise ValueError(f"not an npz payload ({error})") from None
    if declared > MAX_PAYLOAD_BYTES:
        raise ValueError(f"the payload holds {declared:,} bytes once decompressed, more than {MAX_PAYLOAD_BYTES:,}")


def frame_to_plain(frame: pd.DataFrame, *, dtypes: bool = True) -> dict[str, Any]:
    """A DataFrame as plain data for a payload: its columns, their values and (unless
    ``dtypes`` is False, the older controls payload's form) their dtypes."""
    document: dict[str, Any] = {"columns": list(frame.columns)}
    if dtypes:
        document["dtypes"] = [str(t) for t in frame.dtypes]
    document["data"] = {c: frame[c].tolist() for c in frame.columns}
    return document


def frame_from_plain(document: dict[str, Any]) -> pd.DataFrame:
    """The DataFrame :func:`frame_to_plain` wrote: each column back in its dtype, or, for a
    document without dtypes, None read back as NaN in object columns."""
    import pandas as pd  # only here: the CLI imports this module before any command needs pandas

    frame = pd.DataFrame({c: document["data"][c] for c in document["columns"]})
    if "dtypes" not in document:
        for column in frame.columns:
            if frame[column].dtype == object:
                frame[column] = frame[column].map(lambda v: math.nan if v is None else v)
        return frame
    for column, dtype in zip(document["columns"], document["dtypes"], strict=True):
        if dtype not in ("object", "str", "string"):
            frame[column] = frame[column].astype(dtype)
    return frame
