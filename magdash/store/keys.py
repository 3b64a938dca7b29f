"""Keys of cached results: a hash of what was computed, from what, by which version of the code."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from magdash.jsonio import to_jsonable


def result_key(kind: str, version: str | int, **parts: Any) -> str:
    """The key under which :meth:`Store.put_result` keeps a result of ``kind``.

    It hashes ``version`` (bumped whenever the code that computes ``kind`` can give another
    result) and every part (data fingerprints and parameters, dataclasses included), so new
    data, other parameters or a new version give a new key and old entries are simply unused.
    """
    document = {"kind": kind, "version": version, **to_jsonable(parts, keep_nan=True)}
    text = json.dumps(document, sort_keys=True, allow_nan=True)
    return f"{kind}:{hashlib.sha256(text.encode()).hexdigest()}"
