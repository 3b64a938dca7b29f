"""Compute or load: the one path by which every result computed over a store is kept in it.

A result is cached under a key that hashes what was computed (its kind), from what (the data
fingerprints of the vectors behind it), with which parameters, by which version of the code
(:func:`result_key`); new data, other parameters or a new version give a new key, and old entries
are simply unused. Its payload is plain data (compressed JSON, or an npz without objects), never
pickle, so a shared store cannot run code.

The metric rows of a result (:mod:`magdash.store.metrics`, built by :mod:`magdash.runs.rows`)
come from here alone: :func:`cached_result` writes them with the payload in one transaction when
it computes a result, and, for a result cached before its tables existed (a migrated store, or
rows deleted by hand), when it next reads it. :func:`backfill` writes every missing row at once
(``python -m magdash backfill``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import pandas as pd

from magdash.errors import MagdashError
from magdash.jsonio import to_jsonable

log = logging.getLogger(__name__)

UNREADABLE_PAYLOAD = (
    ArithmeticError, AttributeError, EOFError, LookupError, MagdashError, MemoryError, NotImplementedError, OSError,
    RecursionError, TypeError, ValueError, zipfile.BadZipFile, zlib.error,
)
"""What decoding a payload that is not what magdash wrote raises (random bytes, an empty or cut payload,
JSON of another shape, an npz of other arrays, one too large): the result is then computed again. A
store is shared data, so its payloads are read as untrusted input."""

Result = TypeVar("Result")
Rows = Mapping[str, pd.DataFrame]


def result_key(kind: str, version: str | int, **parts: Any) -> str:
    """The key under which a result of ``kind`` is cached.

    It hashes ``version`` (bumped whenever the code that computes ``kind`` can give another
    result) and every part (data fingerprints and parameters, dataclasses included).

    Args:
        kind: the result's kind, the key's prefix (``analysis``, ``compare``, ...).
        version: the version of the code that computes it.
        parts: everything else the result depends on, as JSON-able values.
    """
    document = {"kind": kind, "version": version, **to_jsonable(parts, keep_nan=True)}
    text = json.dumps(document, sort_keys=True, allow_nan=True)
    return f"{kind}:{hashlib.sha256(text.encode()).hexdigest()}"


@dataclass(frozen=True)
class CachedKind:
    """How results of one kind are kept: written as a payload, read back, and (for kinds that
    have metric tables) turned into rows; ``rows`` may return None for a payload that cannot
    name its rows' identity (controls cached before schema 4).

    Attributes:
        name: the kind's name, the store's ``results.kind`` (``analysis``, ``compare``, ...).
        encode: turns a result into the payload kept in the store.
        decode: turns a payload back into the result.
        rows: turns a result into its metric rows (table name -> frame); None for kinds without metric tables.
    """

    name: str
    encode: Callable[[Any], bytes]
    decode: Callable[[bytes], Any]
    rows: Callable[[Any], Rows | None] | None = None


def lookup(store, kind: CachedKind, key: str, *, rows: Callable[[Any], Rows | None] | None = None) -> Any | None:
    """The result cached under ``key`` (None when there is none), its metric rows written first
    if it was cached before its tables existed.

    Args:
        store: the :class:`~magdash.store.Store` to read.
        kind: how results of this kind are decoded and turned into rows.
        key: the result's cache key (:func:`result_key`).
        rows: the rows of this result when they need more than the payload holds (a design's
            identity); default ``kind.rows``.
    """
    rows = rows or kind.rows
    payload = store.get_result(key)  # None too when the payload does not match its checksum
    if payload is None:
        return None
    log.info("%s %s found in the cache", kind.name, key[:24])
    try:
        result = kind.decode(payload)
    except UNREADABLE_PAYLOAD as error:
        log.warning("the cached %s result %s cannot be read (%s); it is computed again", kind.name, key[:24],
                    _reason(error))
        return None
    if rows is not None and not store.has_metric_rows(key, kind.name):
        _write_rows(store, key, kind, rows(result))
    return result


def keep(store, kind: CachedKind, key: str, result: Any, *, rows: Callable[[Any], Rows | None] | None = None) -> None:
    """Cache ``result`` under ``key`` with its metric rows, in one transaction (nothing on a
    read-only store); arguments as :func:`lookup`'s.

    Args:
        store: the :class:`~magdash.store.Store` to write.
        kind: how results of this kind are encoded and turned into rows.
        key: the result's cache key (:func:`result_key`).
        result: the result to keep.
        rows: the rows of this result when they need more than the payload holds; default ``kind.rows``.
    """
    rows = rows or kind.rows
    store.put_result(key, kind.name, kind.encode(result), (rows(result) or {}) if rows is not None else {})


def cached_result(
    store, kind: CachedKind, key: str, compute: Callable[[], Result], *, use_cache: bool = True,
    rows: Callable[[Result], Rows | None] | None = None,
) -> Result:
    """The result cached under ``key``, or ``compute()``'s, kept with its metric rows
    (:func:`lookup`, then :func:`keep`); ``use_cache=False`` recomputes and replaces it.

    A run that looks several things up first does so in one ``store.session()`` and calls
    :func:`lookup` and :func:`keep` itself, since a session must not be held across a computation.

    Args:
        store: the :class:`~magdash.store.Store` to read and write.
        kind: how results of this kind are kept.
        key: the result's cache key (:func:`result_key`).
        compute: computes the result when it is not cached (or ``use_cache`` is False).
        use_cache: False recomputes and replaces the cached result.
        rows: the rows of this result when they need more than the payload holds; default ``kind.rows``.
    """
    found = lookup(store, kind, key, rows=rows) if use_cache else None
    if found is not None:
        return found
    result = compute()
    keep(store, kind, key, result, rows=rows)
    return result


def _write_rows(store, key: str, kind: CachedKind, rows: Rows | None) -> bool:
    if rows is None:
        log.warning("cached %s result %s does not name its model: its rows are written when it is next computed",
                    kind.name, key)
        return False
    store.put_metric_rows(key, kind.name, rows)
    return True


def _reason(error: BaseException) -> str:
    """An error's type and the first line of its message, cut short (a payload's text can be anything)."""
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text[:200]}" if text else type(error).__name__


def backfill(store, kinds: Mapping[str, CachedKind]) -> dict[str, int]:
    """Write the metric rows of every cached result of ``kinds`` that has none; returns how many
    results got rows, per kind. A payload that cannot be read as a current result (an older code
    version's) is left as it is and logged: its rows appear when it is next computed.

    Args:
        store: the :class:`~magdash.store.Store` whose cached results are read.
        kinds: the kinds to backfill, by name.
    """
    written: dict[str, int] = {}
    for name, kind in kinds.items():
        if kind.rows is None:
            continue
        count = 0
        for key in store.results_without_rows(name):
            payload = store.get_result(key)
            if payload is None:  # not what magdash wrote (logged): computed again when next asked for
                continue
            try:
                result = kind.decode(payload)
            except UNREADABLE_PAYLOAD as error:
                log.warning("cached %s result %s has no metric rows (%s)", name, key, _reason(error))
                continue
            count += _write_rows(store, key, kind, kind.rows(result))
        written[name] = count
    return written
