"""Bad input at every public Python entry point, generated with hypothesis.

Covered: magnitude specs (``parse_magnitudes``), carrier text and files (``parse_carrier_text``,
``read_carrier_file``), ``StimulusSet``, npz files and arrays (``read_npz``,
``validate_import_arrays``, ``Store.import_arrays``), hostile model, stimulus-set and
frequency-source names, ``extract`` options, ``analyze`` / ``compare`` parameters, the
frequency functions and ``to_jsonable``.

The property everywhere: a call either succeeds with a sane result or raises a
:class:`~magdash.errors.MagdashError` with a message; never another exception. Calls that are
refused leave the store exactly as it was (every table's rows compared before and after).
Each generated case is counted with :func:`tests.casecount.record`.

The strategies and store helpers here are shared with ``test_bad_input_cli.py``.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import tempfile
import zipfile
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from magdash.errors import MagdashError, StimulusError, StoreError
from magdash.stimuli import (
    MAX_CARRIER_CHARS,
    MAX_CARRIER_FILE_BYTES,
    MAX_CARRIERS,
    MAX_MAGNITUDE,
    PAPER_MAGNITUDES,
    PLACEHOLDER,
    StimulusSet,
    parse_carrier_text,
    parse_magnitudes,
    read_carrier_file,
)
from magdash.store import Store, read_npz, validate_import_arrays
from tests.casecount import record

# -- the store every module starts from ---------------------------------------------------

MAGNITUDES = (1, 2, 3, 5, 8, 13)
CARRIERS = ("There are {n} items.", "The count reached {n}.", "{n} was the value.")
BASE_SET = "base-set"
BASE_SHAPE = (len(MAGNITUDES), len(CARRIERS), 4, 8)  # magnitudes, carriers, layers, d


def build_base_store(path: Path) -> Path:
    """A small real store: models "base" and "other" on one set, a frequency source "toy"."""
    store = Store(path)
    rng = np.random.default_rng(20260404)
    for name in ("base", "other"):
        store.import_arrays(name, rng.normal(size=BASE_SHAPE), MAGNITUDES, carriers=CARRIERS, stimuli=BASE_SET)
    counts = pd.DataFrame({"number": MAGNITUDES, "count": [600, 500, 400, 300, 200, 100]})
    store.put_frequency_source("toy", counts, {"kind": "csv", "note": "made by the bad-input tests"})
    return path


def store_contents(path: Path) -> dict[str, list[str]]:
    """Every table's rows (sorted), read through a read-only connection that cannot change the file."""
    connection = duckdb.connect(str(path), read_only=True)
    try:
        tables = [row[0] for row in connection.execute(
            "SELECT table_name FROM duckdb_tables() ORDER BY table_name").fetchall()]
        return {table: sorted(map(repr, connection.execute(f'SELECT * FROM "{table}"').fetchall()))
                for table in tables}
    finally:
        connection.close()


def file_state(path: Path) -> tuple[bytes, bool]:
    """The store file's bytes and whether a write-ahead log sits beside it.

    A refused call must not write at all, so comparing bytes is the strict check, and cheap.
    """
    path = Path(path)
    return path.read_bytes(), Path(f"{path}.wal").exists()


def copy_store(source: Path, folder: Path) -> Path:
    target = Path(folder) / "store.duckdb"
    shutil.copyfile(source, target)
    return target


@pytest.fixture(scope="module")
def base_store(tmp_path_factory) -> Path:
    return build_base_store(tmp_path_factory.mktemp("bad-input-api") / "base.duckdb")


@pytest.fixture(scope="module")
def base_contents(base_store) -> dict[str, list[str]]:
    return store_contents(base_store)


def assert_clear_message(error: BaseException) -> None:
    """A user-facing error: a MagdashError with a non-empty message."""
    assert isinstance(error, MagdashError), f"{type(error).__name__}: {error}"
    assert str(error).strip(), f"{type(error).__name__} without a message"


# -- magnitude specs ----------------------------------------------------------------------

_SPACES = st.sampled_from(["", " ", "  ", "\t"])


def _padded(text: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(_SPACES, text, _SPACES).map("".join)


# Pieces with the numbers they must stand for ...
_VALID_NUMBER = st.integers(1, MAX_MAGNITUDE).flatmap(
    lambda n: st.sampled_from([str(n), f"+{n}", f"00{n}"]).map(lambda text, n=n: (text, {n}))
)
_VALID_RANGE = st.tuples(st.integers(1, 5000), st.integers(0, 300)).map(
    lambda pair: (f"{pair[0]} - {pair[0] + pair[1]}" if pair[1] % 2 else f"{pair[0]}-{pair[0] + pair[1]}",
                  set(range(pair[0], pair[0] + pair[1] + 1)))
)
_PAPER = st.sampled_from(["paper", "PAPER", "Paper"]).map(lambda text: (text, set(PAPER_MAGNITUDES)))
VALID_PIECES = st.one_of(_VALID_NUMBER, _VALID_RANGE, _PAPER)
# ... and pieces no spec may contain.
INVALID_PIECES = st.one_of(
    st.sampled_from([
        "", "0", "-0", "00", "x", "1.5", "1e3", "1--2", "-", "1-", "-1-2", "1 2", "½", "∞", "nan", "inf",
        "0-5", "5-3", "1-2000002", "9" * 5000, "1-" + "9" * 5000, "-" + "9" * 5000, "papers", "1_000",
        "0x10", "10000000000000", "\x00", "1\x00", "paper-5",
    ]),
    st.integers(max_value=0).map(str),
    st.integers(MAX_MAGNITUDE + 1).map(str),
    st.tuples(st.integers(2, 10**6), st.integers(1, 10**6)).map(lambda p: f"{p[0] + p[1]}-{p[0]}"),
)


@st.composite
def magnitude_specs(draw) -> tuple[str, set[int] | None]:
    """A spec from the grammar and the set it stands for (None: it must be refused)."""
    pieces = draw(st.lists(st.one_of(VALID_PIECES.map(lambda p: (p, True)),
                                     INVALID_PIECES.map(lambda text: ((text, set()), False))),
                           min_size=1, max_size=6))
    spaced = [(draw(_padded(st.just(text))), values, ok) for (text, values), ok in pieces]
    spec = ",".join(text for text, _, _ in spaced)
    if not all(ok for _, _, ok in spaced):
        return spec, None
    return spec, set().union(*(values for _, values, _ in spaced))


ARBITRARY_SPECS = st.one_of(
    st.text(max_size=60),
    st.text(alphabet="0123456789-+, \tpaerPAER.x", max_size=40),
    st.lists(st.integers(-5, 10**14).map(str), max_size=6).map(",".join),
)


def check_magnitudes_or_refusal(spec: str) -> list[int] | None:
    """Run parse_magnitudes; check that any result is sane and any error is a StimulusError."""
    try:
        values = parse_magnitudes(spec)
    except StimulusError as error:
        assert_clear_message(error)
        assert "\n" not in str(error), "a magnitude message is one line"
        return None
    assert values, "an accepted spec gives at least one magnitude"
    assert values == sorted(set(values))
    assert all(type(v) is int and 1 <= v <= MAX_MAGNITUDE for v in values)
    return values


@settings(max_examples=400)
@given(magnitude_specs())
def test_parse_magnitudes_follows_the_grammar(case):
    record("api parse_magnitudes")
    spec, expected = case
    values = check_magnitudes_or_refusal(spec)
    if expected is None:
        assert values is None, f"{spec!r} should be refused, got {values[:10]}"
    else:
        assert values == sorted(expected)


@settings(max_examples=300)
@given(ARBITRARY_SPECS)
def test_parse_magnitudes_never_crashes(spec):
    record("api parse_magnitudes")
    check_magnitudes_or_refusal(spec)


@pytest.mark.parametrize("spec", [
    "9" * 5000, "1-" + "9" * 5000, "1-1000000,1000001-2000000", ",".join(["1-1000000"] * 3), "paper," * 50_000,
])
def test_huge_magnitude_specs_are_refused_quickly(spec):
    record("api parse_magnitudes")
    with pytest.raises(StimulusError, match="out of range|million"):
        parse_magnitudes(spec)


# -- carrier text and files ----------------------------------------------------------------

_CARRIER_PIECES = st.sampled_from([
    "There are", " ", "items", ".", "{n}", "{n}", "{", "}", "{N}", "{{n}}", "{0}", "{}", "\t", "é", "😀", "\\",
    "'", '"', "\r", "x" * 250,
])
CARRIER_LINES = st.lists(_CARRIER_PIECES, max_size=6).map("".join)
CARRIER_TEXTS = st.one_of(
    st.tuples(st.lists(CARRIER_LINES, max_size=8), st.sampled_from(["\n", "\r\n"]),
              st.sampled_from(["", "\n", "\n\n  \n"])).map(lambda t: t[1].join(t[0]) + t[2]),
    st.text(max_size=200),
)
CARRIER_FILE_BYTES = st.one_of(
    CARRIER_TEXTS.map(lambda text: text.encode("utf-8")),
    CARRIER_TEXTS.map(lambda text: b"\xef\xbb\xbf" + text.encode("utf-8")),  # a BOM
    CARRIER_TEXTS.map(lambda text: text.encode("utf-16")),  # NUL bytes throughout
    st.binary(max_size=400),
)


def expected_carriers(text: str) -> list[str] | None:
    """The carriers a text stands for, by the documented rules; None when it must be refused.

    One sentence per line (LF or CRLF; carriage returns ending a line are dropped), trailing blank lines ignored; each line non-blank with
    exactly one {n}, at most MAX_CARRIER_CHARS characters, no repeats, at most MAX_CARRIERS lines.
    """
    lines = [line.rstrip("\r") for line in text.split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines or len(lines) > MAX_CARRIERS or len(set(lines)) != len(lines):
        return None
    for line in lines:
        if not line.strip() or line.count(PLACEHOLDER) != 1 or len(line) > MAX_CARRIER_CHARS:
            return None
    return lines


def expected_carriers_from_bytes(data: bytes) -> list[str] | None:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
    return None if "\0" in text else expected_carriers(text)


@settings(max_examples=300)
@given(CARRIER_TEXTS)
def test_parse_carrier_text_follows_the_rules(text):
    record("api parse_carrier_text")
    expected = expected_carriers(text)
    try:
        carriers = parse_carrier_text(text)
    except StimulusError as error:
        assert_clear_message(error)
        assert expected is None, f"{text!r} should give {expected}, got: {error}"
        return
    assert carriers == expected


@settings(max_examples=150)
@given(CARRIER_FILE_BYTES)
def test_read_carrier_file_follows_the_rules(data):
    record("api read_carrier_file")
    expected = expected_carriers_from_bytes(data)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "carriers.txt"
        path.write_bytes(data)
        try:
            carriers = read_carrier_file(str(path))
        except StimulusError as error:
            assert_clear_message(error)
            assert expected is None, f"{data!r} should give {expected}, got: {error}"
            return
    assert carriers == expected


def _numbered_lines(count: int) -> str:
    return "".join(f"Sentence {i} holds {{n}} things.\n" for i in range(count))


@pytest.mark.parametrize(
    ("make_file", "message"),
    [
        (lambda folder: folder, "Is a directory"),
        (lambda folder: folder / "absent.txt", "No such file"),
        (lambda folder: str(folder / "a\0b.txt"), "cannot read carrier file"),
        (lambda folder: _write(folder / "empty.txt", b""), "no carrier sentences"),
        (lambda folder: _write(folder / "blank.txt", b" \n\t\n\n"), "no carrier sentences"),
        (lambda folder: _write(folder / "none.txt", b"There are items.\n"), "no {n} placeholder"),
        (lambda folder: _write(folder / "two.txt", b"{n} and {n}\n"), "2 {n} placeholders"),
        (lambda folder: _write(folder / "latin1.txt", "Caf\u00e9 {n}\n".encode("latin-1")), "not UTF-8"),
        (lambda folder: _write(folder / "nul.txt", b"a {n}\0\n"), "binary"),
        (lambda folder: _write(folder / "many.txt", _numbered_lines(MAX_CARRIERS + 1).encode()), "at most 10,000"),
        # Tens of MB: refused as a whole, never read in part and judged on a cut-off last line.
        (lambda folder: _write(folder / "huge.txt", _numbered_lines(1_000_000).encode()), "is over 20 MB"),
    ],
)
def test_read_carrier_file_refusals(tmp_path, make_file, message):
    record("api read_carrier_file")
    with pytest.raises(StimulusError) as raised:
        read_carrier_file(str(make_file(tmp_path)))
    assert message in str(raised.value)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_ten_thousand_carriers_are_accepted(tmp_path):
    record("api read_carrier_file")
    path = _write(tmp_path / "ten-thousand.txt", _numbered_lines(MAX_CARRIERS).encode())
    carriers = read_carrier_file(str(path))
    assert len(carriers) == MAX_CARRIERS
    assert carriers[9_999] == "Sentence 9999 holds {n} things."
    stimuli = StimulusSet("ten-thousand", tuple(carriers), tuple(PAPER_MAGNITUDES))
    assert len(stimuli.items) == MAX_CARRIERS * len(PAPER_MAGNITUDES)
    assert path.stat().st_size < MAX_CARRIER_FILE_BYTES


# -- StimulusSet -----------------------------------------------------------------------------

NAMES = st.one_of(
    st.sampled_from([
        "x'); DROP TABLE models; --", 'x"; DROP TABLE stimulus_sets; --', "' OR '1'='1", "\\", "\\'", "%", "_",
        "a\nb", "a\r\nb", "\t", "é", "😀", "名前", "\u202eevil", "a\x00b", "", " ", "   ", "x" * 10_000, "NULL",
        "null", "None", "-", "--name", "vec_0_0", "models", "meta", "paper", "custom-00000000",
    ]),
    st.text(max_size=40),
)


@settings(max_examples=150)
@given(
    name=NAMES,
    carriers=st.lists(CARRIER_LINES, max_size=4),
    magnitudes=st.lists(st.one_of(st.integers(-3, MAX_MAGNITUDE + 3), st.floats(allow_nan=True, allow_infinity=True),
                                  st.sampled_from([np.int64(7), np.float32(2.0), np.uint64(2**63)])), max_size=6),
)
def test_stimulus_set_builds_consistent_items_or_refuses(name, carriers, magnitudes):
    record("api StimulusSet")
    try:
        stimuli = StimulusSet(name, tuple(carriers), tuple(magnitudes))
    except MagdashError as error:
        assert_clear_message(error)
        return
    assert stimuli.name == name
    assert len(stimuli.items) == len(stimuli.carriers) * len(stimuli.magnitudes)
    for item in stimuli.items:
        assert item.sentence[item.start:item.end] == str(item.magnitude)


# -- npz payloads -------------------------------------------------------------------------------

VALUE_KINDS = ("float32", "float64", "float16", "int32", "uint8", "bool", "complex64", "str", "datetime", "object")
FILLS = ("normal", "zeros", "constant", "all_nan", "all_inf", "partial_nan", "partial_inf", "overflow_all",
         "overflow_some")
MAGNITUDE_KINDS = ("ok", "ok_float", "ok_column", "short", "long", "duplicate", "fraction", "negative", "zero", "nan",
                   "inf", "too_large", "string", "bool", "missing")
CARRIER_KINDS = (None, "templates", "labels", "mixed", "blank", "short", "long", "duplicate", "two_placeholders",
                 "too_long", "numbers")
LAYER_LABEL_KINDS = (None, "ok", "repeated", "short", "long")


@st.composite
def npz_payloads(draw) -> dict:
    """Arrays for an npz import, good and bad, with what the issue's rules say must happen."""
    if draw(st.booleans()):
        shape = tuple(draw(st.integers(1, high)) for high in (7, 3, 4, 5))
    else:
        shape = tuple(draw(st.lists(st.integers(0, 3), max_size=5)))
    return {
        "shape": shape,
        "kind": draw(st.sampled_from(VALUE_KINDS)),
        "fill": draw(st.sampled_from(FILLS)),
        "magnitudes": draw(st.sampled_from(MAGNITUDE_KINDS)),
        "carriers": draw(st.sampled_from(CARRIER_KINDS)),
        "layer_labels": draw(st.sampled_from(LAYER_LABEL_KINDS)),
        "seed": draw(st.integers(0, 2**32 - 1)),
    }


def payload_arrays(payload: dict) -> dict[str, np.ndarray]:
    """The arrays of a payload, as an npz would hold them."""
    rng = np.random.default_rng(payload["seed"])
    shape = payload["shape"]
    values = rng.normal(size=shape)
    fill = payload["fill"]
    flat = values.reshape(-1)
    if fill == "zeros":
        values = np.zeros(shape)
    elif fill == "constant":
        values = np.full(shape, 3.25)
    elif fill in ("all_nan", "all_inf", "overflow_all"):
        values = np.full(shape, {"all_nan": np.nan, "all_inf": -np.inf, "overflow_all": 1e300}[fill])
    elif fill in ("partial_nan", "partial_inf", "overflow_some") and flat.size > 1:
        flat[rng.integers(0, flat.size)] = {"partial_nan": np.nan, "partial_inf": np.inf, "overflow_some": -1e300}[fill]
    kind = payload["kind"]
    with np.errstate(invalid="ignore", over="ignore"):
        if kind == "str":
            per_carrier = values.astype(str)
        elif kind == "datetime":
            per_carrier = np.zeros(shape, dtype="datetime64[s]")
        elif kind == "object":
            per_carrier = values.astype(object)
        elif kind in ("int32", "uint8"):
            per_carrier = np.nan_to_num(values, nan=0, posinf=7, neginf=0).clip(0, 200).astype(kind)
        else:
            per_carrier = values.astype(kind)
    arrays = {"per_carrier": per_carrier}
    n_magnitudes = shape[0] if shape else 1
    n_carriers = shape[1] if len(shape) > 1 else 1
    n_layers = shape[2] if len(shape) > 2 else 1
    magnitudes = np.arange(1, n_magnitudes + 1) * 3
    chosen = payload["magnitudes"]
    variants = {
        "ok": magnitudes, "ok_float": magnitudes.astype(float), "ok_column": magnitudes.reshape(-1, 1),
        "short": magnitudes[:-1], "long": np.append(magnitudes, 10_000), "duplicate": np.ones_like(magnitudes),
        "fraction": magnitudes + 0.5, "negative": -magnitudes, "zero": magnitudes - 3,
        "nan": np.where(magnitudes == 3, np.nan, magnitudes), "inf": np.where(magnitudes == 3, np.inf, magnitudes),
        "too_large": magnitudes + MAX_MAGNITUDE, "string": magnitudes.astype(str), "bool": magnitudes > 0,
    }
    if chosen != "missing":
        arrays["magnitudes"] = variants[chosen]
    templates = [f"Sentence {i} has {{n}}." for i in range(n_carriers)]
    carrier_variants = {
        "templates": templates, "labels": [f"label {i}" for i in range(n_carriers)],
        "mixed": [t if i % 2 else f"label {i}" for i, t in enumerate(templates)], "blank": [""] + templates[1:],
        "short": templates[:-1], "long": [*templates, "extra {n}"], "duplicate": ["same {n}"] * n_carriers,
        "two_placeholders": ["{n} or {n}"] + templates[1:], "too_long": ["x" * 600 + " {n}"] + templates[1:],
        "numbers": list(range(100, 100 + n_carriers)),
    }
    if payload["carriers"] is not None:
        arrays["carriers"] = np.asarray(carrier_variants[payload["carriers"]])
    label_variants = {
        "ok": [f"layer {i}" for i in range(n_layers)], "repeated": ["same"] * n_layers,
        "short": [f"layer {i}" for i in range(n_layers - 1)], "long": [f"layer {i}" for i in range(n_layers + 1)],
    }
    if payload["layer_labels"] is not None:
        arrays["layer_labels"] = np.asarray(label_variants[payload["layer_labels"]])
    return arrays


def payload_must_be_refused(arrays: dict[str, np.ndarray]) -> bool:
    """The issue's rules for an import, stated independently of the code under test."""
    if "per_carrier" not in arrays or "magnitudes" not in arrays:
        return True
    values = arrays["per_carrier"]
    if values.dtype.kind not in "fiu" or values.ndim != 4 or 0 in values.shape:
        return True
    with np.errstate(over="ignore"):
        if not np.isfinite(values.astype(np.float32)).any():
            return True  # all non-finite (NaN, Inf, or float32 overflow)
    n_magnitudes, n_carriers, n_layers, _ = values.shape
    magnitudes = np.asarray(arrays["magnitudes"]).ravel()
    if magnitudes.dtype.kind not in "fiu" or magnitudes.size != n_magnitudes:
        return True
    if not np.isfinite(magnitudes).all() or (magnitudes <= 0).any() or (magnitudes != np.round(magnitudes)).any():
        return True
    if len(set(magnitudes.tolist())) != magnitudes.size or magnitudes.max() > MAX_MAGNITUDE:
        return True
    if "carriers" in arrays:
        labels = [str(c) for c in np.asarray(arrays["carriers"]).ravel()]
        if len(labels) != n_carriers or any(label.count(PLACEHOLDER) > 1 for label in labels):
            return True
        templates = [label if PLACEHOLDER in label else f"{label} {PLACEHOLDER}" for label in labels]
        if len(set(templates)) != len(templates) or any(len(t) > MAX_CARRIER_CHARS for t in templates):
            return True
    return "layer_labels" in arrays and np.asarray(arrays["layer_labels"]).size != n_layers


def save_npz(path: Path, arrays: dict[str, np.ndarray]) -> Path:
    np.savez(path, **arrays)  # object arrays are pickled, as a careless exporter would do
    return path


@settings(max_examples=120, suppress_health_check=[HealthCheck.too_slow])
@given(npz_payloads())
def test_validate_import_arrays_follows_the_rules(payload):
    arrays = payload_arrays(payload)
    assume("magnitudes" in arrays)  # a missing array is read_npz's refusal, tested through the CLI
    record("api validate_import_arrays")
    refuse = payload_must_be_refused(arrays)
    try:
        with np.errstate(over="ignore"):
            checked, magnitudes, carriers, labels = validate_import_arrays(
                arrays["per_carrier"], arrays["magnitudes"], arrays.get("carriers"), arrays.get("layer_labels"))
        # What validation lets through must also make a stimulus set (the import's next step).
        StimulusSet("check", tuple(carriers), tuple(magnitudes))
    except MagdashError as error:
        assert_clear_message(error)
        assert refuse, f"refused a valid import {payload}: {error}"
        return
    assert not refuse, f"accepted an import the rules refuse: {payload}"
    assert checked.dtype == np.float32 and checked.shape == arrays["per_carrier"].shape
    assert len(labels) == checked.shape[2] and len(carriers) == checked.shape[1]


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(npz_payloads())
def test_store_import_arrays_round_trips_or_leaves_the_store_alone(base_store, payload):
    arrays = payload_arrays(payload)
    assume("magnitudes" in arrays)
    record("api Store.import_arrays")
    refuse = payload_must_be_refused(arrays)
    with tempfile.TemporaryDirectory() as folder:
        path = copy_store(base_store, Path(folder))
        before = file_state(path)
        store = Store(path)
        try:
            with np.errstate(over="ignore"):
                stored, stimuli = store.import_arrays(
                    "imported", arrays["per_carrier"], arrays["magnitudes"], carriers=arrays.get("carriers"),
                    layer_labels=arrays.get("layer_labels"))
        except MagdashError as error:
            assert_clear_message(error)
            assert refuse, f"refused a valid import {payload}: {error}"
            assert file_state(path) == before, "a refused import changed the store"
            return
        assert not refuse, f"accepted an import the rules refuse: {payload}"
        with np.errstate(over="ignore"):
            expected = arrays["per_carrier"].astype(np.float32)
        order = np.argsort(np.asarray(arrays["magnitudes"]).ravel(), kind="stable")
        last = stored.n_layers - 1
        np.testing.assert_array_equal(store.read_layer("imported", stimuli, last).vectors, expected[order][:, :, last])
        assert {"base", "other"} <= set(store.model_names())


@settings(max_examples=80)
@given(st.one_of(
    st.binary(max_size=300),
    st.tuples(st.integers(0, 2000), st.booleans()).map(lambda t: ("cut", t[0], t[1])),
    st.dictionaries(st.sampled_from(["per_carrier.npy", "magnitudes.npy", "x.npy", "../evil.npy"]),
                    st.binary(max_size=80), max_size=3).map(lambda members: ("zip", list(members.items()))),
))
def test_read_npz_reads_or_refuses(good_npz_bytes, case):
    record("api read_npz")
    if isinstance(case, bytes):
        data = case
    elif case[0] == "cut":
        _, offset, flip = case
        data = bytearray(good_npz_bytes[: offset % len(good_npz_bytes)] if not flip else good_npz_bytes)
        if flip and data:
            data[offset % len(data)] ^= 0xFF
        data = bytes(data)
    else:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for member, content in case[1]:
                archive.writestr(member, content)
        data = buffer.getvalue()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "case.npz"
        path.write_bytes(data)
        try:
            arrays = read_npz(path)
        except StoreError as error:
            assert_clear_message(error)
            return
    assert {"per_carrier", "magnitudes"} <= set(arrays)


@pytest.fixture(scope="module")
def good_npz_bytes(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("npz") / "good.npz"
    np.savez(path, per_carrier=np.ones(BASE_SHAPE, np.float32), magnitudes=np.asarray(MAGNITUDES))
    return path.read_bytes()


# -- hostile names ------------------------------------------------------------------------------

CORE_TABLES = {"meta", "models", "stimulus_sets", "stimulus_items", "done", "results", "frequency_sources",
               "frequency_counts"}


def assert_nothing_lost(after: dict[str, list[str]], before: dict[str, list[str]]) -> None:
    """Every table and every row that was there before is still there."""
    assert set(after) >= CORE_TABLES, f"tables lost: {CORE_TABLES - set(after)}"
    for table, rows in before.items():
        assert table in after, f"table {table} lost"
        assert set(rows) <= set(after[table]), f"rows of {table} lost"


def _arrays_for(name: str) -> np.ndarray:
    """Distinct data per name, so every name is a model of its own."""
    seed = int(hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:12], 16)
    return np.random.default_rng(seed).normal(size=BASE_SHAPE)


# Several names per case: one copy of the store then serves them all.
NAME_BATCHES = st.lists(NAMES, min_size=1, max_size=4, unique=True)


@settings(max_examples=12)
@given(NAME_BATCHES)
def test_model_names_round_trip_exactly(base_store, base_contents, names):
    with tempfile.TemporaryDirectory() as folder:
        path = copy_store(base_store, Path(folder))
        store = Store(path)
        stored = set()
        for name in names:
            record("api model name")
            before = file_state(path)
            try:
                model, _ = store.import_arrays(name, _arrays_for(name), MAGNITUDES, carriers=CARRIERS, stimuli=BASE_SET)
            except MagdashError as error:
                assert_clear_message(error)
                assert file_state(path) == before, f"refusing {name!r} changed the store"
                continue
            assert model.name == name
            assert store.model_record(name).name == name
            stored.add(name)
        assert set(store.model_names()) == {"base", "other"} | stored
        assert_nothing_lost(store_contents(path), base_contents)


@settings(max_examples=15)
@given(NAME_BATCHES)
def test_stimulus_set_names_round_trip_exactly(base_store, base_contents, names):
    with tempfile.TemporaryDirectory() as folder:
        path = copy_store(base_store, Path(folder))
        store = Store(path)
        stored = set()
        for name in names:
            record("api stimulus set name")
            before = file_state(path)
            try:
                store.register_stimulus_set(StimulusSet(name, CARRIERS[:2], (4, 5)))
            except MagdashError as error:
                assert_clear_message(error)
                assert file_state(path) == before, f"refusing {name!r} changed the store"
                continue
            assert store.stimulus_set(name).name == name
            stored.add(name)
        assert set(store.stimulus_set_names()) == {BASE_SET} | stored
        assert_nothing_lost(store_contents(path), base_contents)


@settings(max_examples=12)
@given(NAME_BATCHES)
def test_frequency_source_names_round_trip(base_store, base_contents, names):
    from magdash.frequency import FrequencySource, load_source, save_source

    with tempfile.TemporaryDirectory() as folder:
        path = copy_store(base_store, Path(folder))
        store = Store(path)
        stored = {"toy"}
        for name in names:
            record("api frequency source name")
            before = file_state(path)
            counts = pd.DataFrame({"number": [1, 2, 3], "count": [3, 2, len(name) + 1]})
            try:
                save_source(store, FrequencySource(name, counts, {"kind": "csv"}))
            except MagdashError as error:
                assert_clear_message(error)
                assert file_state(path) == before, f"refusing {name!r} changed the store"
                continue
            # Sources are stored under the name without surrounding blanks, and found by either.
            assert list(load_source(name, store).counts["count"]) == [3, 2, len(name) + 1]
            assert list(load_source(name.strip(), store).counts["count"]) == [3, 2, len(name) + 1]
            stored.add(name.strip())
        assert set(store.list_frequency_sources()["name"]) == stored
        assert_nothing_lost(store_contents(path), {k: v for k, v in base_contents.items() if "frequency" not in k})


# -- extract options ----------------------------------------------------------------------------


@pytest.mark.parametrize("options", [
    {"batch_size": 0}, {"batch_size": -8}, {"padding_side": "top"}, {"padding_side": ""},
    {"position": "middle"}, {"position": ""}, {"dtype": "float8"}, {"device": "tpu"},
    {"device_map": "everywhere"},
], ids=lambda options: "-".join(f"{k}={v}" for k, v in options.items()))
def test_extract_refuses_bad_options_and_stores_nothing(tiny_llama, tmp_path, options):
    record("api extract options")
    from magdash.extract import extract

    path = tmp_path / "store.duckdb"
    store = Store(path)
    before = file_state(path)
    stimuli = StimulusSet("bad-options", CARRIERS[:1], (1, 2, 3))
    with pytest.raises(MagdashError) as raised:
        extract(str(tiny_llama), stimuli, store, name="tiny", **options)
    assert_clear_message(raised.value)
    assert file_state(path) == before, f"extract(**{options}) was refused but changed the store"


# -- analyze and compare --------------------------------------------------------------------------

ANALYSIS_PARAMS = st.fixed_dictionaries({}, optional={
    "measures": st.lists(st.sampled_from(["eucl", "residual", "proj", "pairwise", "trace", "cv", "on_axis",
                                          "off_axis", "", "EUCL", "x'); DROP TABLE results; --"]), max_size=4),
    "core_layers": st.one_of(st.none(), st.lists(st.integers(-3, 6), max_size=4)),
    "n_boot": st.integers(-3, 25),
    "seed": st.integers(0, 2**64),
    "ci": st.floats(allow_nan=True, allow_infinity=True),
    "window": st.tuples(st.floats(allow_nan=True), st.floats(allow_nan=True)),
    "boundary": st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=3),
    "bootstrap_layers": st.sampled_from(["core", "all", "none", "", "some"]),
    "outlier_factor": st.floats(min_value=-1, max_value=1e6, allow_nan=False),
})


@settings(max_examples=25)
@given(params=ANALYSIS_PARAMS, model=st.sampled_from(["base", "nobody", "x'); DROP TABLE models; --"]),
       stimuli=st.sampled_from([None, BASE_SET, "nope"]))
def test_analyze_gives_a_result_or_a_message(base_store, params, model, stimuli):
    record("api analyze")
    from magdash.variability.analysis import AnalysisParams, analyze

    with tempfile.TemporaryDirectory() as folder:
        path = copy_store(base_store, Path(folder))
        before = file_state(path)
        try:
            result = analyze(Store(path), model, stimuli, AnalysisParams(**params))
        except MagdashError as error:
            assert_clear_message(error)
            assert file_state(path) == before
            return
        assert model == "base" and stimuli in (None, BASE_SET)
        assert len(result.layer_labels) == BASE_SHAPE[2]
        json.dumps(result.to_json(), default=str)


@pytest.mark.parametrize("core", [(99,), (-1,), (0, 4), ()])
def test_analyze_refuses_a_core_band_outside_the_model(base_store, base_contents, core):
    record("api analyze")
    from magdash.variability.analysis import AnalysisParams, analyze

    with pytest.raises(MagdashError, match="core"):
        analyze(Store(base_store), "base", BASE_SET, AnalysisParams(core_layers=core, n_boot=0))
    assert store_contents(base_store) == base_contents


def test_analyze_refuses_a_negative_seed_with_a_message(base_store, base_contents):
    """NumPy's generators take only seeds >= 0; a negative one must be refused, not crash."""
    record("api analyze")
    from magdash.variability.analysis import AnalysisParams, analyze

    with pytest.raises(MagdashError, match="seed"):
        analyze(Store(base_store), "base", BASE_SET, AnalysisParams(seed=-1, n_boot=10))
    assert store_contents(base_store) == base_contents


@pytest.mark.parametrize(("model_a", "model_b", "stimuli"), [
    ("base", "nobody", None), ("nobody", "base", None), ("base", "other", "nope"), ("base", "base", "nope"),
])
def test_compare_refuses_unknown_models_and_sets(base_store, base_contents, model_a, model_b, stimuli):
    record("api compare")
    from magdash.variability.analysis import AnalysisParams, compare

    with pytest.raises(MagdashError):
        compare(Store(base_store), model_a, model_b, stimuli, AnalysisParams(n_boot=0))
    assert store_contents(base_store) == base_contents


# -- frequency ---------------------------------------------------------------------------------

_CSV_CELLS = st.sampled_from(["1", "2", "3", "12.0", "-4", "0", "1e3", "x", "", " 7 ", "nan", "inf", "9" * 30,
                              "2.5", '"5"', "1,2"])
CSV_TEXTS = st.one_of(
    st.tuples(
        st.sampled_from(["number,count", "Number , Count", "count,number", "n,c", "", "# comment\nnumber,count",
                         "number;count"]),
        st.lists(st.tuples(_CSV_CELLS, _CSV_CELLS).map(",".join), max_size=6),
    ).map(lambda t: "\n".join([t[0], *t[1]])),
    st.text(max_size=80),
)
CSV_BYTES = st.one_of(CSV_TEXTS.map(str.encode), st.binary(max_size=200),
                      CSV_TEXTS.map(lambda text: text.encode("utf-16")))


@settings(max_examples=200)
@given(CSV_BYTES)
def test_read_counts_csv_gives_a_clean_source_or_a_message(data):
    record("api read_counts_csv")
    from magdash.frequency import read_counts_csv

    try:
        source = read_counts_csv(data, name="mine")
    except MagdashError as error:
        assert_clear_message(error)
        assert "\n" not in str(error)
        return
    numbers, counts = source.counts["number"], source.counts["count"]
    assert numbers.is_unique and numbers.is_monotonic_increasing
    assert (numbers >= 0).all() and (counts >= 0).all() and counts.sum() > 0


@settings(max_examples=100)
@given(
    magnitudes=st.lists(st.one_of(st.integers(-5, 2000), st.floats(allow_nan=True, allow_infinity=True)), max_size=8),
    counts=st.dictionaries(st.integers(0, 2000), st.one_of(st.integers(-2, 10**6), st.floats(allow_nan=True)),
                           max_size=8),
    missing=st.sampled_from(["error", "zero", "skip"]),
    n_boot=st.integers(-2, 30),
    confidence=st.floats(allow_nan=True, allow_infinity=True),
    seed=st.integers(-3, 2**32),
)
def test_frequency_functions_give_results_or_messages(magnitudes, counts, missing, n_boot, confidence, seed):
    record("api frequency functions")
    from magdash.frequency import counts_for_magnitudes, e5_correlation, fit_distributions

    values = np.linspace(1.0, 2.0, num=max(len(magnitudes), 1))[: len(magnitudes)]
    calls = [
        lambda: counts_for_magnitudes(magnitudes, counts, missing),
        lambda: e5_correlation(magnitudes, {3: values}, counts, n_boot=n_boot, confidence=confidence, seed=seed,
                               missing=missing),
        lambda: fit_distributions(counts),
    ]
    for call in calls:
        try:
            call()
        except MagdashError as error:
            assert_clear_message(error)


def test_frequency_store_calls_refuse_without_changing_the_store(base_store, base_contents, tmp_path):
    from magdash.frequency import FrequencySource, count_corpus, e5_from_store, load_source, save_source

    store = Store(base_store)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("There were 3 cats and 5 dogs.\n")
    counts = pd.DataFrame({"number": [1, 2], "count": [1, 1]})
    calls = [
        lambda: save_source(store, FrequencySource("wordfreq", counts, {})),
        lambda: save_source(store, FrequencySource("   ", counts, {})),
        lambda: load_source("nope", store),
        lambda: e5_from_store(store, "nobody", "toy"),
        lambda: e5_from_store(store, "base", "toy", layers=[99]),
        lambda: e5_from_store(store, "base", "toy", layers=[]),
        lambda: e5_from_store(store, "base", "toy", seed=-1, n_boot=5),
        lambda: e5_from_store(store, "base", "toy", missing="sometimes"),
        lambda: count_corpus([corpus], threads=-1),
        lambda: count_corpus([corpus], threads=0),
        lambda: count_corpus([tmp_path / "absent.txt"]),
        lambda: count_corpus([tmp_path]),
    ]
    for call in calls:
        record("api frequency functions")
        with pytest.raises(MagdashError) as raised:
            call()
        assert_clear_message(raised.value)
    assert store_contents(base_store) == base_contents


# -- JSON output --------------------------------------------------------------------------------

JSON_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=10),
    st.sampled_from([np.float32("nan"), np.float64("-inf"), np.int64(5), np.bool_(True), np.arange(3.0),
                     np.array([np.nan, 1.0])]),
)


@settings(max_examples=150)
@given(st.recursive(JSON_LEAVES, lambda children: st.one_of(
    st.lists(children, max_size=4), st.tuples(children, children),
    st.dictionaries(st.one_of(st.text(max_size=5), st.integers()), children, max_size=4)), max_leaves=12))
def test_to_jsonable_always_gives_strict_json(value):
    record("api to_jsonable")
    from magdash.jsonio import to_jsonable

    # allow_nan=False raises on any NaN or infinity left in the structure.
    json.loads(json.dumps(to_jsonable(value), allow_nan=False))
