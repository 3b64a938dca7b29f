"""Hostile files and text, generated: each input parses or is refused with a magdash error.

The parsers of what a user or a file hands magdash (issue 45): CSV cells on their way out (a text
cell never reaches a spreadsheet as a formula), npz imports, GGUF headers, safetensors headers,
carrier text and uploads. Each input either parses or raises one of magdash's typed errors
(:class:`~magdash.errors.MagdashError`), never another exception.
"""

from __future__ import annotations

import csv
import io
import json
import struct
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from magdash.dashboard import stimuli_page as ds
from magdash.errors import ModelLoadError, StimulusError, StoreError
from magdash.presentation.export import FORMULA_STARTS, table_to_csv
from magdash.sources.gguf import read_metadata
from magdash.sources.loading import check_safetensors
from magdash.stimuli import StimulusSet, parse_carrier_text
from magdash.store import import_inputs, read_npz, validate_import_arrays
from tests.fuzz.budget import fuzz_settings
from tests.support import write_tiny_gguf


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz-files")


# -- CSV cells ------------------------------------------------------------------------------------

_CELL = st.text(alphabet=st.sampled_from(list("=+-@\t\r\n\"',;0123456789.eE aZ{}|!") + ["α", "—"]), max_size=12)


@fuzz_settings(300)
@given(cells=st.lists(_CELL, min_size=1, max_size=5), header=_CELL,
       numbers=st.lists(st.floats(allow_nan=True, allow_infinity=True, width=32), min_size=5, max_size=5))
def test_no_text_cell_reaches_a_spreadsheet_as_a_formula(cells, header, numbers):
    label = header if header not in ("", "model", "alpha") else f"{header}label"
    frame = pd.DataFrame({"model": cells, label: cells, "alpha": numbers[: len(cells)]})
    rows = list(csv.reader(io.StringIO(table_to_csv(frame).decode("utf-8"), newline="")))
    assert len(rows) == len(cells) + 1  # a CR or LF inside a cell never starts a row
    assert not rows[0][1].startswith(FORMULA_STARTS) or float(rows[0][1]) is not None
    for row, text in zip(rows[1:], cells, strict=True):
        for written in row[:2]:
            # the cell as written: the text itself, or the text after a ' when it could start a formula
            assert written in (text, "'" + text)
            if written == text and text.startswith(FORMULA_STARTS):
                float(text)  # only a plain number is left as it is
    assert [float(value) if value else np.nan for value in (row[2] for row in rows[1:])] == pytest.approx(
        [float(np.float32(n)) for n in numbers[: len(cells)]], nan_ok=True)


# -- npz imports ----------------------------------------------------------------------------------


def _good_npz() -> bytes:
    buffer = io.BytesIO()
    rng = np.random.default_rng(1)
    np.savez(buffer, per_carrier=rng.normal(size=(3, 2, 2, 4)).astype(np.float32), magnitudes=np.arange(1, 4),
             carriers=np.asarray(["a {n}", "b {n}"]), n_blocks=np.asarray(1))
    return buffer.getvalue()


GOOD_NPZ = _good_npz()
_MEMBERS = st.sampled_from(["per_carrier.npy", "magnitudes.npy", "carriers.npy", "layer_labels.npy", "n_blocks.npy",
                            "x.npy", "../evil.npy", "per_carrier"])


def _npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


_ARRAYS = st.one_of(
    st.binary(max_size=64),
    st.tuples(st.lists(st.integers(0, 4), max_size=5), st.sampled_from(["<f4", "<i8", "<U3", "|b1", "<c8"])).map(
        lambda t: _npy(np.zeros(t[0], dtype=t[1]))),
)


@pytest.mark.filterwarnings("ignore:Duplicate name")  # zipfile's, writing a hostile archive
@fuzz_settings(500)
@given(case=st.one_of(
    st.tuples(st.integers(0, len(GOOD_NPZ) - 1), st.integers(0, 255), st.booleans()).map(lambda t: ("edit", *t)),
    st.lists(st.tuples(_MEMBERS, _ARRAYS, st.booleans()), max_size=4).map(lambda m: ("zip", m)),
))
def test_an_npz_is_read_or_refused_with_a_store_error(folder, case):
    if case[0] == "edit":
        _, offset, value, cut = case
        data = bytearray(GOOD_NPZ)
        data[offset] = value
        data = bytes(data[:offset] if cut else data)
    else:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for member, content, packed in case[1]:
                archive.writestr(member, content, zipfile.ZIP_DEFLATED if packed else zipfile.ZIP_STORED)
        data = buffer.getvalue()
    path = folder / "case.npz"
    path.write_bytes(data)
    try:
        arrays = read_npz(path)
        magnitudes, carriers, _n_blocks = import_inputs(arrays, None, None)
        if magnitudes is not None:
            validate_import_arrays(arrays["per_carrier"], magnitudes, carriers, arrays.get("layer_labels"))
    except (StoreError, StimulusError):
        return


# -- GGUF headers ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def good_gguf(folder) -> bytes:
    return write_tiny_gguf(folder / "tiny.gguf").read_bytes()


_U64S = st.sampled_from([0, 1, 3, 8, 2**31, 2**32 - 1, 2**40, 2**62, 2**63, 2**64 - 1])


@fuzz_settings(600)
@given(case=st.one_of(
    # a byte of a valid file changed, or the file cut short
    st.tuples(st.integers(0, 479), st.integers(0, 255), st.booleans()).map(lambda t: ("edit", *t)),
    # a count or length of a valid file replaced by a hostile one
    st.tuples(st.integers(0, 472), _U64S).map(lambda t: ("u64", *t)),
    # a header of generated counts, types and lengths
    st.tuples(st.sampled_from([1, 2, 3, 2**24]), _U64S, _U64S,
              st.lists(st.one_of(st.integers(0, 13).map(lambda n: struct.pack("<I", n)),
                                 _U64S.map(lambda n: struct.pack("<Q", n)), st.binary(max_size=6)), max_size=24))
    .map(lambda t: ("made", *t)),
))
def test_a_gguf_header_is_read_or_refused_with_a_model_load_error(folder, good_gguf, case):
    if case[0] == "edit":
        _, offset, value, cut = case
        data = bytearray(good_gguf)
        data[offset % len(data)] = value
        data = bytes(data[:offset] if cut else data)
    elif case[0] == "u64":
        _, offset, number = case
        data = good_gguf[:offset] + struct.pack("<Q", number) + good_gguf[offset + 8:]
    else:
        _, version, n_tensors, n_keys, parts = case
        data = b"GGUF" + struct.pack("<IQQ", version, n_tensors, n_keys) + b"".join(parts)
    path = folder / "case.gguf"
    path.write_bytes(data)
    try:
        metadata = read_metadata(path)
    except ModelLoadError as error:
        assert str(path) in str(error)
        return
    assert isinstance(metadata, dict)


# -- safetensors headers --------------------------------------------------------------------------

_TENSOR = st.fixed_dictionaries({
    "dtype": st.sampled_from(["F32", "F16", "BF16", "I64", "F4", "nonsense", 3]),
    "shape": st.one_of(st.lists(st.integers(-1, 6), max_size=3), st.just("4")),
    "data_offsets": st.one_of(st.lists(st.integers(-8, 2**64), min_size=2, max_size=2), st.lists(st.integers(0, 64),
                                                                                                  max_size=3)),
})


@fuzz_settings(500)
@given(case=st.one_of(
    st.tuples(st.dictionaries(st.sampled_from(["w", "b", "__metadata__", "é"]), _TENSOR, max_size=3),
              st.integers(0, 64), st.sampled_from([None, 0, 2**63, 2**64 - 1, 7])).map(lambda t: ("json", *t)),
    st.binary(max_size=40).map(lambda data: ("raw", data)),
))
def test_a_safetensors_header_is_read_or_refused_with_a_model_load_error(folder, case):
    if case[0] == "json":
        _, tensors, data_bytes, length = case
        raw = json.dumps(tensors).encode()
        data = struct.pack("<Q", len(raw) if length is None else length) + raw + bytes(data_bytes)
    else:
        data = case[1]
    path = folder / "model.safetensors"
    path.write_bytes(data)
    try:
        check_safetensors(path)
    except ModelLoadError as error:
        assert str(path) in str(error)


# -- carrier text and uploads ---------------------------------------------------------------------

_CARRIER_TEXT = st.lists(st.sampled_from(["{n}", "{", "}", "n", " ", "a", "\r", "\n", "\r\n", "\0", "\t", "\u2028", "é",
                                           "\ufeff"]), max_size=24).map("".join)


@fuzz_settings(600)
@given(text=_CARRIER_TEXT, as_upload=st.sampled_from([None, ".txt", ".csv"]))
def test_carrier_text_is_read_or_refused_with_a_stimulus_error(text, as_upload):
    if as_upload is None:
        typed = ds.carriers_from_text(text)
        if "\0" in text:  # the text box refuses it, as an upload and a carrier file do
            assert not typed.ok and "holds a NUL character" in typed.problems[0]
            return
        try:
            carriers = parse_carrier_text(text)
        except StimulusError:
            assert not typed.ok
            return
        assert typed.ok and typed.carriers == carriers
        assert "\r" not in "".join(carriers) and "\n" not in "".join(carriers)  # every line end ends a line
        return
    uploaded = ds.read_carrier_upload(f"carriers{as_upload}", text.encode("utf-8"))
    if uploaded.ok:
        StimulusSet("uploaded", tuple(uploaded.carriers), (7,))
    else:
        assert uploaded.problems
