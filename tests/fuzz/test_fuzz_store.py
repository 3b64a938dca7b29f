"""Fuzzing the store's entry points (issue 45): cached payloads and store paths.

A cached payload is untrusted input (stores are shared and mailed): any bytes under a result's key,
with the checksum kept or recomputed by someone who knows the format, either decode or are a miss
(:data:`magdash.runs.cache.UNREADABLE_PAYLOAD`), never another exception, and a miss changes nothing
in the store. Any store path either opens a store or is refused with one of magdash's errors, and
reading never creates anything.
"""

from __future__ import annotations

import contextlib
import copy
import io
import os
import zlib
from pathlib import Path

import duckdb
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from magdash.errors import MagdashError
from magdash.jsonio import pack, unpack
from magdash.runs.analysis_runs import ANALYSIS, analyze
from magdash.runs.cache import UNREADABLE_PAYLOAD, lookup
from magdash.runs.depth_runs import SAMPLES
from magdash.runs.frequency_runs import E5
from magdash.store import Store
from magdash.store.schema import result_checksum
from magdash.variability.analysis_params import AnalysisParams
from tests.fuzz.budget import fuzz_settings
from tests.support import file_state, tree_state

KINDS = (ANALYSIS, E5, SAMPLES)


@pytest.fixture(scope="module")
def analysed(tmp_path_factory) -> tuple[Path, str, bytes]:
    """A store with one cached analysis: its path, the result's key and its payload."""
    path = tmp_path_factory.mktemp("fuzz-store") / "store.duckdb"
    store = Store(path)
    store.import_arrays("m", np.random.default_rng(7).normal(size=(4, 2, 3, 5)), (1, 2, 3, 4),
                        carriers=("a {n}", "b {n}"), stimuli="s")
    analyze(store, "m", "s", AnalysisParams(n_boot=0))
    with duckdb.connect(str(path), read_only=True) as connection:
        key, payload = connection.execute("SELECT key, payload FROM results").fetchone()
    return path, key, bytes(payload)


def _decodes_or_is_unreadable(payload: bytes) -> None:
    for kind in KINDS:
        try:
            kind.decode(payload)
        except UNREADABLE_PAYLOAD:
            continue


@st.composite
def _mutated(draw, original: bytes) -> bytes:
    """``original`` with a few bytes flipped, cut, inserted or dropped."""
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 4))):
        action = draw(st.sampled_from(["flip", "cut", "insert", "drop"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if action == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif action == "cut":
            del data[at:]
        elif action == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif data:
            del data[at]
    return bytes(data)


def _npz(arrays: dict[str, np.ndarray]) -> bytes:
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()


_ARRAYS = st.dictionaries(
    st.sampled_from(["layers", "dims", "counts", "nonfinite", "n_blocks", "eigenvalues_0", "omegas_0", "other"]),
    st.lists(st.integers(-3, 10**6), max_size=6).map(lambda values: np.asarray(values, dtype=np.int64)),
    max_size=8,
)


@fuzz_settings(800)
@given(data=st.data())
def test_any_payload_bytes_decode_or_are_unreadable(analysed, data):
    _, _, payload = analysed
    candidate = data.draw(st.one_of(
        st.binary(max_size=512),
        _mutated(payload),
        _mutated(zlib.compress(b'{"model": "m"}')),
        _ARRAYS.map(_npz),
        _ARRAYS.map(_npz).flatmap(_mutated),
    ))
    _decodes_or_is_unreadable(candidate)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)


def _paths(document, prefix=()) -> list[tuple]:
    """Every key path into the document's dicts and lists, up to three deep."""
    found = []
    if len(prefix) < 3:
        items = document.items() if isinstance(document, dict) else enumerate(document) if isinstance(document, list) else ()
        for key, value in items:
            found.append((*prefix, key))
            found.extend(_paths(value, (*prefix, key)))
    return found


@fuzz_settings(150)
@given(data=st.data())
def test_cached_documents_of_another_shape_decode_or_are_unreadable(analysed, data):
    _, _, payload = analysed
    document = copy.deepcopy(unpack(payload))
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(document)))
        parent = document
        for step in path[:-1]:
            parent = parent[step]
        if data.draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            parent[path[-1]] = data.draw(_JSON)
        if not _paths(document):
            break
    with contextlib.suppress(UNREADABLE_PAYLOAD):
        ANALYSIS.decode(pack(document))


@fuzz_settings(30)
@given(data=st.data())
def test_an_edited_payload_is_a_miss_and_a_miss_changes_nothing(analysed, data):
    path, key, payload = analysed
    edited = data.draw(st.one_of(st.binary(max_size=256), _mutated(payload)))
    recompute_checksum = data.draw(st.booleans())  # an editor who knows the format, or one who does not
    checksum = result_checksum(key, edited) if recompute_checksum else result_checksum(key, payload)
    with duckdb.connect(str(path)) as connection:
        connection.execute("UPDATE results SET payload = ?, checksum = ? WHERE key = ?", [edited, checksum, key])
    before = file_state(path)
    found = lookup(Store(path), ANALYSIS, key)
    if edited != payload and not recompute_checksum:
        assert found is None, "an edited payload passed its checksum"
    if found is None:
        assert file_state(path) == before, "a miss changed the store"


_NAME_CHARACTERS = st.characters(blacklist_categories=("Cs",), blacklist_characters="/")
_SEGMENT = st.one_of(
    st.text(_NAME_CHARACTERS, min_size=1, max_size=40),
    st.sampled_from([".", "...", " ", "store.duckdb", "a.shards", "\x00", "x" * 300, "\udcff", "-", "~"]),
).filter(lambda segment: segment != "..")


@fuzz_settings(520)
@given(segments=st.lists(_SEGMENT, min_size=1, max_size=3), read_only=st.booleans())
def test_any_store_path_opens_a_store_or_is_refused_and_reading_creates_nothing(segments, read_only, tmp_path_factory):
    folder = tmp_path_factory.mktemp("paths", numbered=True)
    (folder / "a.shards").mkdir()
    (folder / "store.duckdb").write_bytes(b"not a store")
    before = tree_state(folder)
    path = os.path.join(str(folder), *segments)
    try:
        Store(path, create=False, read_only=read_only)
    except MagdashError as error:
        assert str(error).strip() and "Traceback" not in str(error)
    else:
        pytest.fail(f"{path!r} opened as a store, though none is there")
    assert tree_state(folder) == before, f"reading {path!r} changed the file system"
