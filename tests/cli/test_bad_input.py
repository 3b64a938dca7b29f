"""Bad input at every CLI subcommand, generated with hypothesis: exit 2, one line, nothing lost.

Covered: carrier files for ``extract --carriers`` (binary, invalid UTF-8, tens of
MB, empty, blank, no or two ``{n}``, other braces, 10,000 lines, a folder, a missing file);
``--magnitudes`` specs; npz files for ``import`` (shapes, empty axes, dtypes, pickles, NaN/Inf,
zero variance, magnitudes, carriers and labels that do not fit, truncated or foreign files);
damaged store files (truncated, flipped bytes, random bytes, empty, text, a folder, a DuckDB
file that is not a magdash store, a damaged schema-1 store) under every subcommand that takes
``--store``; hostile model, stimulus-set and frequency-source names (SQL, quotes, unicode,
newlines, NUL, 10,000 characters, blanks); the analysis options.

Every refusal must be exit status 2 with one line ``magdash: error: ...`` on stderr and must
leave the store file byte for byte as it was. The commands run in-process through
:func:`magdash.cli.main` (fast); :func:`test_the_real_program_behaves_like_main` shows that the
real program gives the same exit status and message. Each generated case is counted with
:func:`tests.support.record`.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from magdash.cli import main
from magdash.errors import MagdashError
from magdash.stimuli import MAX_CARRIERS, PAPER_CARRIERS, StimulusSet, parse_magnitudes
from magdash.store import Store
from tests.support import (
    ARBITRARY_SPECS,
    BASE_SET,
    BASE_SHAPE,
    CARRIER_FILE_BYTES,
    CARRIERS,
    CSV_BYTES,
    DATA,
    MAGNITUDES,
    NAME_BATCHES,
    build_base_store,
    copy_store,
    expected_carriers_from_bytes,
    file_state,
    magnitude_specs,
    npz_payloads,
    payload_arrays,
    payload_must_be_refused,
    record,
    save_npz,
)

pytestmark = pytest.mark.bad_input

MISSING_MODEL = "no-such-model-anywhere"


@dataclass
class CliResult:
    code: int
    out: str
    err: str


def run_cli(*argv) -> CliResult:
    """``magdash ARGV`` in this process: exit status, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(arg) for arg in argv])
        except SystemExit as exit_:  # argparse's own refusals
            code = exit_.code
    return CliResult(code, out.getvalue(), err.getvalue())


def assert_refused(result: CliResult, *fragments: str) -> str:
    """Exit 2 and exactly one line ``magdash: error: ...`` holding every fragment; returns it."""
    assert result.code == 2, result
    lines = [line for line in result.err.split("\n") if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got: {result.err!r}"
    assert lines[0].startswith("magdash: error: "), lines[0]
    assert "\r" not in lines[0] and "Traceback" not in result.err
    for fragment in fragments:
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
    return lines[0]


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    """A store to copy for every case, and the input files the commands need."""
    folder = tmp_path_factory.mktemp("bad-input-cli")
    paths = {"folder": folder, "store": build_base_store(folder / "base.duckdb")}
    paths["npz"] = folder / "good.npz"
    np.savez(paths["npz"], per_carrier=np.random.default_rng(5).normal(size=BASE_SHAPE),
             magnitudes=np.asarray(MAGNITUDES), carriers=np.asarray(CARRIERS))
    paths["csv"] = folder / "counts.csv"
    paths["csv"].write_text("number,count\n1,10\n2,5\n3,1\n")
    paths["corpus"] = folder / "corpus.txt"
    paths["corpus"].write_text("There were 3 cats, 5 dogs and 13 birds.\nThen 2 more came.\n")
    paths["v1"] = folder / "v1.duckdb"
    with gzip.open(DATA / "store_v1.duckdb.gz", "rb") as source, open(paths["v1"], "wb") as target:
        shutil.copyfileobj(source, target)
    return paths


# -- extract --carriers -----------------------------------------------------------------------
# A folder given as --store fails only after the stimuli are read, so these cases never open a
# store or a model: a good carrier file gets the store's complaint, a bad one its own.


@settings(max_examples=120)
@given(CARRIER_FILE_BYTES)
def test_extract_reads_carrier_files_by_the_rules(files, data):
    record("cli extract --carriers")
    with tempfile.TemporaryDirectory() as folder:
        carriers = Path(folder) / "carriers.txt"
        carriers.write_bytes(data)
        result = run_cli("extract", "--model", MISSING_MODEL, "--carriers", carriers, "--store", folder, "--quiet")
    if expected_carriers_from_bytes(data) is None:
        assert_refused(result, "carrier")
    else:
        assert_refused(result, "is a folder")


def _lines(count: int) -> bytes:
    return "".join(f"Sentence {i} holds {{n}} things.\n" for i in range(count)).encode()


CARRIER_FILES = {
    "random bytes": (lambda folder: _write(folder / "c.txt", bytes(range(256)) * 40), "not UTF-8"),
    "invalid UTF-8": (lambda folder: _write(folder / "c.txt", b"There are {n} caf\xe9s.\n"), "not UTF-8"),
    "UTF-16": (lambda folder: _write(folder / "c.txt", "There are {n} items.\n".encode("utf-16")), "not UTF-8"),
    "huge": (lambda folder: _write(folder / "c.txt", _lines(900_000)), "is over 20 MB"),
    "empty": (lambda folder: _write(folder / "c.txt", b""), "no carrier sentences"),
    "whitespace only": (lambda folder: _write(folder / "c.txt", b"  \n\t\n \r\n"), "no carrier sentences"),
    "no placeholder": (lambda folder: _write(folder / "c.txt", b"There are items.\n"), "no {n} placeholder"),
    "two placeholders": (lambda folder: _write(folder / "c.txt", b"{n} is {n}.\n"), "2 {n} placeholders"),
    "other braces": (lambda folder: _write(folder / "c.txt", b"There are {} or {0} or {N} items.\n"), "no {n}"),
    "a blank line inside": (lambda folder: _write(folder / "c.txt", b"A {n}.\n\nB {n}.\n"), "line 2 is empty"),
    "a repeated line": (lambda folder: _write(folder / "c.txt", b"A {n}.\nA {n}.\n"), "repeats line 1"),
    "a line too long": (lambda folder: _write(folder / "c.txt", b"x" * 600 + b" {n}\n"), "keep it under 500"),
    "10,001 lines": (lambda folder: _write(folder / "c.txt", _lines(MAX_CARRIERS + 1)), "at most 10,000"),
    "a folder": (lambda folder: folder, "Is a directory"),
    "a missing file": (lambda folder: folder / "absent.txt", "No such file"),
}


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("case", list(CARRIER_FILES))
def test_extract_refuses_bad_carrier_files_before_touching_the_store(tmp_path, case):
    record("cli extract --carriers")
    make, message = CARRIER_FILES[case]
    carriers = make(tmp_path)
    store = tmp_path / "never-created.duckdb"
    result = run_cli("extract", "--model", MISSING_MODEL, "--carriers", carriers, "--store", store, "--quiet")
    assert_refused(result, "carrier", message)
    assert not store.exists(), "bad stimuli must be refused before a store is created"


def test_extract_accepts_ten_thousand_carrier_lines(tmp_path):
    """10,000 sentences is the documented maximum: accepted, and only the model is then missing."""
    record("cli extract --carriers")
    carriers = _write(tmp_path / "c.txt", _lines(MAX_CARRIERS))
    result = run_cli("extract", "--model", MISSING_MODEL, "--carriers", carriers, "--store", tmp_path / "s.duckdb",
                     "--quiet")
    assert_refused(result, f"no model {MISSING_MODEL!r}")


# -- extract --magnitudes ------------------------------------------------------------------------


def expected_magnitude_error(spec: str) -> str | None:
    """The message the spec must be refused with (None: it is good), from the Python API."""
    try:
        StimulusSet("check", PAPER_CARRIERS, tuple(parse_magnitudes(spec)))
    except MagdashError as error:
        return str(error)
    return None


@settings(max_examples=250)
@given(st.one_of(magnitude_specs().map(lambda case: case[0]), ARBITRARY_SPECS))
def test_extract_reads_magnitude_specs_like_the_api(files, spec):
    # Python 3.11's argparse drops an option's value that is exactly "--" (it reads it as the end
    # of the options), so the command line sees an empty spec there: refused too, in other words.
    assume(spec != "--")
    record("cli extract --magnitudes")
    result = run_cli("extract", "--model", MISSING_MODEL, f"--magnitudes={spec}", "--store", files["folder"],
                     "--quiet")
    expected = expected_magnitude_error(spec)
    line = assert_refused(result)
    if expected is None:
        assert "is a folder" in line, "a good spec gets as far as the store"
    else:
        assert line == f"magdash: error: {expected}"


@pytest.mark.parametrize(("spec", "message"), [
    ("", "empty magnitude spec"), ("   ", "empty magnitude spec"), ("0", "not positive"), ("-5", "not positive"),
    ("5-1", "runs backwards"), ("1-2000000", "over a million"), ("9" * 5000, "out of range"),
    ("1.5", "cannot read '1.5'"), ("1,,2", "cannot read ''"), ("paper,x", "cannot read 'x'"),
    ("1-1000000", "sentences"),  # a million magnitudes x the paper's 5 carriers
])
def test_extract_refuses_bad_magnitude_specs_before_touching_the_store(tmp_path, spec, message):
    record("cli extract --magnitudes")
    store = tmp_path / "never-created.duckdb"
    result = run_cli("extract", "--model", MISSING_MODEL, f"--magnitudes={spec}", "--store", store, "--quiet")
    assert_refused(result, message)
    assert not store.exists()


@pytest.mark.parametrize(("options", "message"), [
    (["--batch-size", "0"], "--batch-size 0 must be a whole number of at least 1"),
    (["--batch-size", "-3"], "--batch-size -3 must be a whole number of at least 1"),
    (["--name", ""], "--name '' is blank"),
    (["--name", " \t"], "is blank"),
    (["--stimuli", "unknown-set"], "no stored stimulus set 'unknown-set'"),
    (["--stimuli", "", "--magnitudes", "1-3"], "non-empty name"),
    (["--stimuli", "paper", "--magnitudes", "1-3"], "kept for the paper's stimuli"),
    (["--stimuli", "s" * 101, "--magnitudes", "1-3"], "at most 100"),
])
def test_extract_refuses_bad_options(files, tmp_path, options, message):
    record("cli extract options")
    path = copy_store(files["store"], tmp_path)
    before = file_state(path)
    assert_refused(run_cli("extract", "--model", MISSING_MODEL, *options, "--store", path, "--quiet"), message)
    assert file_state(path) == before


def test_extract_refuses_an_unknown_device_in_one_line(tiny_llama, tmp_path):
    record("cli extract options")
    path = tmp_path / "store.duckdb"
    result = run_cli("extract", "--model", tiny_llama, "--device", "tpu", "--magnitudes", "1-3", "--store", path,
                     "--quiet")
    assert_refused(result, "tpu")


# -- import (npz) -----------------------------------------------------------------------------------


@settings(max_examples=50)
@given(npz_payloads())
def test_import_follows_the_rules_and_refusals_leave_the_store_alone(files, payload):
    record("cli import npz")
    arrays = payload_arrays(payload)
    with tempfile.TemporaryDirectory() as folder:
        path = copy_store(files["store"], Path(folder))
        npz = save_npz(Path(folder) / "case.npz", arrays)
        before = file_state(path)
        with np.errstate(over="ignore", invalid="ignore"):
            result = run_cli("import", npz, "--name", "imported", "--store", path)
        if payload_must_be_refused(arrays):
            assert_refused(result)
            assert file_state(path) == before, "a refused import changed the store"
        else:
            assert result.code == 0, result
            assert "imported" in Store(path).model_names()


NPZ_FILES = {
    "truncated": (lambda good, folder: _write(folder / "x.npz", good.read_bytes()[:300]), "not a readable .npz"),
    "one byte flipped": (lambda good, folder: _write(folder / "x.npz", _flip(good.read_bytes(), 200)), ".npz"),
    "not a zip": (lambda good, folder: _write(folder / "x.npz", b"number,count\n1,2\n"), "not an .npz file"),
    "empty": (lambda good, folder: _write(folder / "x.npz", b""), "not an .npz file"),
    "a plain .npy": (lambda good, folder: _npy(folder / "x.npy"), "a single .npy array"),
    "a folder without layer files": (lambda good, folder: folder, "holds no layer files (layer-000.parquet"),
    "a missing file": (lambda good, folder: folder / "absent.npz", "no file"),
    "no per_carrier": (lambda good, folder: _npz(folder, magnitudes=[1, 2]), "no 'per_carrier' array"),
    "no magnitudes": (lambda good, folder: _npz(folder, per_carrier=np.ones((2, 1, 1, 2))), "no 'magnitudes' array"),
    "pickled objects": (lambda good, folder: _npz(folder, per_carrier=np.array([{"a": 1}], dtype=object),
                                                  magnitudes=[1]), "without pickle"),
    "all NaN": (lambda good, folder: _npz(folder, per_carrier=np.full((2, 1, 1, 3), np.nan), magnitudes=[1, 2]),
                "no finite values"),
    "all Inf": (lambda good, folder: _npz(folder, per_carrier=np.full((2, 1, 1, 3), np.inf), magnitudes=[1, 2]),
                "no finite values"),
    "3-D": (lambda good, folder: _npz(folder, per_carrier=np.ones((2, 1, 3)), magnitudes=[1, 2]), "shape (2, 1, 3)"),
    "an empty axis": (lambda good, folder: _npz(folder, per_carrier=np.ones((2, 0, 1, 3)), magnitudes=[1, 2]),
                      "empty axis"),
    "complex": (lambda good, folder: _npz(folder, per_carrier=np.ones((2, 1, 1, 3), complex), magnitudes=[1, 2]),
                "complex128"),
    "strings": (lambda good, folder: _npz(folder, per_carrier=np.full((2, 1, 1, 3), "x"), magnitudes=[1, 2]),
                "must be a float array"),
    "too few magnitudes": (lambda good, folder: _npz(folder, per_carrier=np.ones((3, 1, 1, 2)), magnitudes=[1, 2]),
                           "must match"),
    "repeated magnitudes": (lambda good, folder: _npz(folder, per_carrier=np.ones((2, 1, 1, 2)), magnitudes=[4, 4]),
                            "repeat"),
    "fractional magnitudes": (lambda good, folder: _npz(folder, per_carrier=np.ones((2, 1, 1, 2)),
                                                        magnitudes=[1, 2.5]), "whole numbers"),
    "zero magnitude": (lambda good, folder: _npz(folder, per_carrier=np.ones((2, 1, 1, 2)), magnitudes=[0, 2]),
                       "positive"),
    "carriers that do not fit": (lambda good, folder: _npz(folder, per_carrier=np.ones((2, 2, 1, 2)),
                                                           magnitudes=[1, 2], carriers=["a {n}"]), "must match"),
    "layer labels that do not fit": (lambda good, folder: _npz(folder, per_carrier=np.ones((2, 1, 2, 2)),
                                                               magnitudes=[1, 2], layer_labels=["x"]), "must match"),
}


def _flip(data: bytes, offset: int) -> bytes:
    return data[:offset] + bytes([data[offset] ^ 0xFF]) + data[offset + 1:]


def _npy(path: Path) -> Path:
    np.save(path, np.ones((2, 1, 1, 2)))
    return path


def _npz(folder: Path, **arrays) -> Path:
    return save_npz(folder / "case.npz", {key: np.asarray(value) for key, value in arrays.items()})


@pytest.mark.parametrize("case", list(NPZ_FILES))
def test_import_refuses_bad_npz_files(files, tmp_path, case):
    record("cli import npz")
    make, message = NPZ_FILES[case]
    path = copy_store(files["store"], tmp_path)
    before = file_state(path)
    assert_refused(run_cli("import", make(files["npz"], tmp_path), "--name", "x", "--store", path), message)
    assert file_state(path) == before


def test_import_refuses_a_taken_name_and_keeps_both_the_store_and_the_old_model(files, tmp_path):
    record("cli import npz")
    path = copy_store(files["store"], tmp_path)
    before = file_state(path)
    # other sentences than the stored set's, so that only the model name stands in the way
    npz = _npz(tmp_path, per_carrier=np.random.default_rng(3).normal(size=BASE_SHAPE),
               magnitudes=[m + 1000 for m in MAGNITUDES], carriers=CARRIERS)
    assert_refused(run_cli("import", npz, "--name", "base", "--stimuli", "fresh-set", "--store", path),
                   "already holds a different model named 'base'")
    assert file_state(path) == before, "the refused import registered its stimulus set anyway"


def test_import_refuses_to_call_other_stimuli_paper(files, tmp_path):
    """'paper' is kept for the paper's stimuli; taking it would make `extract --model minilm` fail."""
    record("cli import npz")
    path = copy_store(files["store"], tmp_path)
    before = file_state(path)
    assert_refused(run_cli("import", files["npz"], "--name", "mine", "--stimuli", "paper", "--store", path), "paper")
    assert file_state(path) == before


def _import(files, folder: Path, name: str, per_carrier: np.ndarray) -> Path:
    path = copy_store(files["store"], folder)
    npz = _npz(folder, per_carrier=per_carrier, magnitudes=MAGNITUDES, carriers=CARRIERS)
    assert run_cli("import", npz, "--name", name, "--stimuli", BASE_SET, "--store", path).code == 0
    return path


def _analysis_commands(name: str) -> list[list[str]]:
    return [
        ["analyze", "--model", name, "--n-boot", "10", "--json"],
        ["compare", "--model", name, "--model", "base", "--n-boot", "10", "--json"],
        ["depth", "--model", name, "--n-boot", "10", "--json"],
        ["freq", "corr", "--model", name, "--source", "toy", "--n-boot", "10", "--layers", "0-3", "--json"],
    ]


@pytest.mark.parametrize("fill", ["zeros", "one value per magnitude"])
def test_zero_variance_is_analysed_without_a_crash(files, tmp_path, fill):
    """V = 0 everywhere: no fit (null in JSON) or a clear refusal, never a traceback."""
    values = {"zeros": np.zeros(BASE_SHAPE),
              "one value per magnitude": np.broadcast_to(np.arange(6.0)[:, None, None, None], BASE_SHAPE)}[fill]
    path = _import(files, tmp_path, "flat", values)
    for command in _analysis_commands("flat"):
        record("cli analyses on zero variance")
        result = run_cli(*command, "--store", path)
        if result.code == 2:
            assert_refused(result)
            continue
        assert result.code == 0, result
        payload = json.loads(result.out)
        if command[0] == "analyze":
            alphas = [layer[m]["alpha"] for layer in payload["layers"] for m in ("eucl", "residual", "proj")]
            assert all(alpha is None for alpha in alphas), "no variability can give no slope"


def test_partly_non_finite_layers_are_flagged_and_left_unfitted(files, tmp_path):
    """NaN in layer 1 and Inf in layer 3: the import is kept, analyze warns and leaves them unfitted."""
    record("cli analyses on partial NaN/Inf")
    values = np.random.default_rng(9).normal(size=BASE_SHAPE)
    values[2, 1, 1, :] = np.nan
    values[4, 0, 3, 5] = np.inf
    path = _import(files, tmp_path, "overflowed", values)
    result = run_cli("analyze", "--model", "overflowed", "--n-boot", "0", "--json", "--store", path)
    assert result.code == 0, result
    warnings = [line for line in result.err.splitlines() if "warning" in line]
    assert warnings, f"no warning on stderr: {result.err!r}"
    assert re.search(r"layers?\D*\b1\b\D+\b3\b", warnings[0]), warnings[0]
    layers = {entry["layer"]: entry for entry in json.loads(result.out)["layers"]}
    for layer in (1, 3):
        assert all(layers[layer][m]["alpha"] is None for m in ("eucl", "residual", "proj")), layers[layer]
    assert layers[2]["eucl"]["alpha"] is not None
    for command in _analysis_commands("overflowed")[1:]:
        record("cli analyses on partial NaN/Inf")
        other = run_cli(*command, "--store", path)
        if other.code != 0:
            assert_refused(other)


# -- export and frequency inputs -------------------------------------------------------------------


@pytest.mark.parametrize(("options", "message"), [
    (["--model", "nobody"], "no model named 'nobody'"),
    (["--model", "base", "--stimuli", "nope"], "no complete stimulus set 'nope'"),
    (["--model", "base", "--out", "MISSING/x.npz"], "cannot write"),
])
def test_export_refuses_bad_requests(files, tmp_path, options, message):
    record("cli export")
    path = copy_store(files["store"], tmp_path)
    before = file_state(path)
    out = ["--out", tmp_path / "x.npz"] if "--out" not in options else []
    argv = [str(tmp_path / "missing" / "x.npz") if arg == "MISSING/x.npz" else arg for arg in options]
    assert_refused(run_cli("export", *argv, *out, "--store", path), message)
    assert file_state(path) == before


@settings(max_examples=40)
@given(CSV_BYTES)
def test_freq_import_csv_stores_a_clean_source_or_refuses(files, data):
    record("cli freq import-csv")
    with tempfile.TemporaryDirectory() as folder:
        path = copy_store(files["store"], Path(folder))
        csv = _write(Path(folder) / "counts.csv", data)
        before = file_state(path)
        result = run_cli("freq", "import-csv", csv, "--name", "uploaded", "--json", "--store", path)
        if result.code != 0:
            assert_refused(result)
            assert file_state(path) == before
            return
        fits = run_cli("freq", "list", "--json", "--store", path)
        assert "uploaded" in {row["name"] for row in json.loads(fits.out)}


CORPUS_BYTES = st.one_of(
    st.binary(max_size=300),
    st.lists(st.sampled_from([*"0123456789 .,-\n\t{}\"", "abc", "text", "é", "2020.", "twenty-one", "\n\n"]),
             max_size=60).map(lambda pieces: "".join(pieces).encode()),
    st.lists(st.sampled_from(['{"text": "12 and 7"}', '{"body": 3}', "{", '{"text": null}', "[]", "7"]),
             max_size=5).map(lambda lines: "\n".join(lines).encode()),
)


@settings(max_examples=30)
@given(data=CORPUS_BYTES, fmt=st.sampled_from(["auto", "text", "gzip", "jsonl", "parquet"]),
       suffix=st.sampled_from([".txt", ".jsonl", ".gz", ".parquet"]))
def test_freq_count_counts_or_refuses(files, data, fmt, suffix):
    record("cli freq count")
    with tempfile.TemporaryDirectory() as folder:
        path = copy_store(files["store"], Path(folder))
        corpus = _write(Path(folder) / f"corpus{suffix}", data)
        before = file_state(path)
        result = run_cli("freq", "count", corpus, "--format", fmt, "--name", "counted", "--threads", "1",
                         "--store", path)
        if result.code != 0:
            assert_refused(result)
            assert file_state(path) == before
        else:
            assert "source 'counted' stored" in result.out


# -- damaged store files ----------------------------------------------------------------------------

READ_ONLY = {"list", "export", "freq list", "freq fits"}


def store_commands(paths: dict[str, Path], out: Path) -> dict[str, list]:
    """One command line per subcommand that takes --store (the store path is added after)."""
    return {
        "list": ["list", "--json"],
        "export": ["export", "--model", "base", "--out", out / "out.npz"],
        "import": ["import", paths["npz"], "--name", "newcomer"],
        "analyze": ["analyze", "--model", "base", "--n-boot", "0"],
        "compare": ["compare", "--model", "base", "--model", "other", "--n-boot", "0"],
        "depth": ["depth", "--model", "base", "--n-boot", "0"],
        "controls": ["controls", "--model", "base", "--n-boot", "0", "--n-perm", "50"],
        "design": ["design", "--model", "base", "--n-boot", "0", "--studies", "10", "--points", "2", "--design-boot", "0"],
        "probe": ["probe", "--model", "base", "--probe-n-boot", "0", "--magnitude-folds", "3"],
        "extract": ["extract", "--model", MISSING_MODEL, "--magnitudes", "1-3", "--quiet"],
        "freq list": ["freq", "list"],
        "freq fits": ["freq", "fits", "--source", "toy"],
        "freq corr": ["freq", "corr", "--model", "base", "--source", "toy", "--n-boot", "0"],
        "freq import-csv": ["freq", "import-csv", paths["csv"], "--name", "mine"],
        "freq count": ["freq", "count", paths["corpus"], "--name", "corpus"],
    }


COMMAND_NAMES = list(store_commands({"npz": Path(), "csv": Path(), "corpus": Path()}, Path()))


def check_damaged_store_run(command: str, argv: list, path: Path, *, current_schema: bool) -> None:
    before = file_state(path)
    result = run_cli(*argv, "--store", path)
    assert result.code in (0, 2), result
    if result.code == 2:
        assert_refused(result)
    # A schema-1 store is migrated on opening, by design. A writing command may commit a batch
    # before it meets a damaged block further on; the refusal then rolls back only its own batch.
    if command in READ_ONLY and current_schema:
        assert file_state(path) == before, f"{command} only reads, yet the store changed"


# A damage recipe is drawn, not the bytes, so a failing case prints in a line. Cuts keep the
# three 4 KiB DuckDB headers: a shorter file holds no data and may be started afresh (below).
HEADERS = 3 * 4096
DAMAGE = st.one_of(
    st.tuples(st.just("truncate at"), st.floats(0, 1, exclude_max=True)),
    st.tuples(st.just("flip bytes at"), st.lists(st.floats(0, 1, exclude_max=True), min_size=1, max_size=20)),
    st.tuples(st.just("zero the block at"), st.floats(0, 1, exclude_max=True)),
    st.tuples(st.just("append"), st.binary(min_size=1, max_size=3000)),
)


def damaged(raw: bytes, damage: tuple) -> bytes:
    kind, where = damage
    if kind == "truncate at":
        return raw[: HEADERS + int(where * (len(raw) - HEADERS))]
    if kind == "flip bytes at":
        data = bytearray(raw)
        for fraction in where:
            data[int(fraction * len(raw))] ^= 0xA5
        return bytes(data)
    if kind == "zero the block at":
        start = int(where * len(raw)) // 4096 * 4096
        return raw[:start] + bytes(len(raw[start:start + 4096])) + raw[start + 4096:]
    return raw + where


@settings(max_examples=60)
@given(source=st.sampled_from(["store", "v1"]), damage=DAMAGE, command=st.sampled_from(COMMAND_NAMES))
def test_damaged_stores_are_refused_and_left_as_they_were(files, source, damage, command):
    record("cli damaged store")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "store.duckdb"
        path.write_bytes(damaged(files[source].read_bytes(), damage))
        check_damaged_store_run(command, store_commands(files, Path(folder))[command], path,
                                current_schema=source == "store")


def _first_half(path: Path) -> bytes:
    data = path.read_bytes()
    return data[: len(data) // 2]


def _foreign_duckdb(path: Path) -> None:
    connection = duckdb.connect(str(path))
    connection.execute("CREATE TABLE measurements (subject VARCHAR, value DOUBLE)")
    connection.execute("INSERT INTO measurements VALUES ('a', 1.5), ('b', 2.5)")
    connection.close()


STORE_FILES = {
    "text": lambda path, files: path.write_text("this is not a database\n" * 100),
    "random bytes": lambda path, files: path.write_bytes(np.random.default_rng(3).bytes(300_000)),
    "half of a store": lambda path, files: path.write_bytes(_first_half(files["store"])),
    "half of a schema-1 store": lambda path, files: path.write_bytes(_first_half(files["v1"])),
    "a DuckDB file of another program": lambda path, files: _foreign_duckdb(path),
}


@pytest.mark.parametrize("kind", list(STORE_FILES))
@pytest.mark.parametrize("command", COMMAND_NAMES)
def test_unusable_store_files_are_refused_untouched(files, tmp_path, kind, command):
    record("cli damaged store")
    path = tmp_path / "store.duckdb"
    STORE_FILES[kind](path, files)
    before = file_state(path)
    message = assert_refused(run_cli(*store_commands(files, tmp_path)[command], "--store", path))
    assert file_state(path) == before
    if kind == "a DuckDB file of another program":
        assert "not a magdash store" in message


@pytest.mark.parametrize("kind", ["empty", "a header cut short"])
@pytest.mark.parametrize("command", COMMAND_NAMES)
def test_a_store_file_without_data_is_refused_or_started_afresh(files, tmp_path, kind, command):
    """An empty file, or one cut inside DuckDB's headers, holds nothing to lose (a store whose
    creation was interrupted): it may be refused untouched or become a new, empty store."""
    record("cli damaged store")
    path = tmp_path / "store.duckdb"
    path.write_bytes(b"" if kind == "empty" else files["store"].read_bytes()[:5000])
    before = file_state(path)
    result = run_cli(*store_commands(files, tmp_path)[command], "--store", path)
    assert result.code in (0, 2), result
    if result.code == 2:
        assert_refused(result)
    if file_state(path) != before:
        stored = json.loads(run_cli("list", "--json", "--store", path).out)["models"]
        assert {model["name"] for model in stored} <= {"newcomer"}, "a store started afresh holds only new data"


@pytest.mark.parametrize("command", COMMAND_NAMES)
def test_a_folder_as_store_is_refused(files, tmp_path, command):
    record("cli damaged store")
    folder = tmp_path / "store.duckdb"
    folder.mkdir()
    assert_refused(run_cli(*store_commands(files, tmp_path)[command], "--store", folder), "is a folder")
    assert list(folder.iterdir()) == []


def test_a_schema_1_store_is_read_with_its_data_intact(files, tmp_path):
    """A store written by the previous release is migrated, and keeps every vector."""
    record("cli old schema store")
    path = copy_store(files["v1"], tmp_path)
    listing = run_cli("list", "--json", "--store", path)
    assert listing.code == 0, listing
    assert {"tiny", "with-nan"} <= {model["name"] for model in json.loads(listing.out)["models"]}
    out = tmp_path / "tiny.npz"
    assert run_cli("export", "--model", "tiny", "--stimuli", "six", "--out", out, "--store", path).code == 0
    with np.load(out) as exported, np.load(DATA / "store_v1_expected.npz") as expected:
        np.testing.assert_array_equal(exported["per_carrier"], expected["tiny"])


# -- hostile names ----------------------------------------------------------------------------------


def _name_npz(folder: Path, name: str, *, own_magnitudes: bool = False) -> Path:
    """Vectors seeded by ``name``; with ``own_magnitudes`` on magnitudes of the name's own, so
    that each name has its own sentences (one content is one stimulus set)."""
    seed = int(hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:12], 16)
    values = np.random.default_rng(seed).normal(size=BASE_SHAPE)
    magnitudes = [m + 100 * (1 + seed % 10_000) for m in MAGNITUDES] if own_magnitudes else MAGNITUDES
    return _npz(folder, per_carrier=values, magnitudes=magnitudes, carriers=CARRIERS)


def listing(path: Path) -> dict:
    result = run_cli("list", "--json", "--store", path)
    assert result.code == 0, result
    return json.loads(result.out)


@settings(max_examples=12)
@given(NAME_BATCHES)
def test_model_names_are_stored_exactly_or_refused(files, names):
    with tempfile.TemporaryDirectory() as folder:
        path = copy_store(files["store"], Path(folder))
        stored = set()
        for name in names:
            record("cli model name")
            before = file_state(path)
            result = run_cli("import", _name_npz(Path(folder), name), f"--name={name}", "--stimuli", BASE_SET,
                             "--store", path)
            if result.code != 0 or not name.strip():
                assert_refused(result, "blank" if not name.strip() else "")
                assert file_state(path) == before
                continue
            stored.add(name)
        after = listing(path)
        assert {model["name"] for model in after["models"]} == {"base", "other"} | stored
        assert after["stimulus_sets"] == [BASE_SET]


@settings(max_examples=10)
@given(NAME_BATCHES)
def test_stimulus_set_names_are_stored_exactly_or_refused(files, names):
    with tempfile.TemporaryDirectory() as folder:
        path = copy_store(files["store"], Path(folder))
        stored = set()
        for name in names:
            record("cli stimulus set name")
            before = file_state(path)
            model = "model-" + hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
            result = run_cli("import", _name_npz(Path(folder), name, own_magnitudes=True), "--name", model,
                             f"--stimuli={name}", "--store", path)
            if result.code != 0 or not name.strip():
                assert_refused(result, "blank" if not name.strip() else "")
                assert file_state(path) == before
                continue
            stored.add(name)
        assert set(listing(path)["stimulus_sets"]) == {BASE_SET} | stored


@settings(max_examples=10)
@given(NAME_BATCHES)
def test_frequency_source_names_are_stored_or_refused(files, names):
    with tempfile.TemporaryDirectory() as folder:
        path = copy_store(files["store"], Path(folder))
        stored = {"toy"}
        for name in names:
            record("cli frequency source name")
            before = file_state(path)
            result = run_cli("freq", "import-csv", files["csv"], f"--name={name}", "--store", path)
            if result.code != 0:
                assert_refused(result)
                assert file_state(path) == before
                continue
            assert name.strip(), "a blank source name was stored"
            stored.add(name.strip())  # stored without surrounding blanks, found under either
            fits = run_cli("freq", "fits", f"--source={name}", "--json", "--store", path)
            assert fits.code == 0 and json.loads(fits.out)["source"] == name.strip(), fits
        sources = run_cli("freq", "list", "--json", "--store", path)
        assert {row["name"] for row in json.loads(sources.out) if row["kind"] == "csv"} == stored


SQL_NAME = "x'); DROP TABLE models; --"
WILD_NAME = "Robert\"); DROP TABLE stimulus_sets;--\n\\ 😀 名前 \t%_"


def test_hostile_names_survive_a_real_extraction_and_every_command(tiny_llama, tmp_path):
    record("cli model name")
    record("cli stimulus set name")
    path = tmp_path / "store.duckdb"
    carriers = _write(tmp_path / "c.txt", b"There are {n} items.\n{n} was the value.\n")
    result = run_cli("extract", "--model", tiny_llama, f"--name={SQL_NAME}", f"--stimuli={WILD_NAME}",
                     "--carriers", carriers, "--magnitudes", "1-6", "--store", path, "--quiet", "--device", "cpu")
    assert result.code == 0, result
    after = listing(path)
    assert [model["name"] for model in after["models"]] == [SQL_NAME]
    assert after["stimulus_sets"] == [WILD_NAME]
    analysis = run_cli("analyze", f"--model={SQL_NAME}", "--n-boot", "0", "--json", "--store", path)
    assert analysis.code == 0, analysis
    assert (json.loads(analysis.out)["model"], json.loads(analysis.out)["stimuli"]) == (SQL_NAME, WILD_NAME)
    exported = run_cli("export", f"--model={SQL_NAME}", "--out", tmp_path / "x.npz", "--store", path)
    assert exported.code == 0, exported
    long_name = "y" * 10_000
    imported = run_cli("import", tmp_path / "x.npz", f"--name={long_name}", f"--stimuli={WILD_NAME}", "--store", path)
    assert imported.code == 0, imported
    assert {model["name"] for model in listing(path)["models"]} == {SQL_NAME, long_name}


# -- analysis options --------------------------------------------------------------------------------

# Short values: parse_layer_range builds the whole list of a range, so "0-99999999" would
# allocate gigabytes (see the report); a long --n-boot would run for minutes by design.
OPTION_TEXT = st.one_of(
    st.text(max_size=8),
    st.text(alphabet="0123456789-,. eE+naif", max_size=7),
    st.sampled_from(["0-99999999999", "3-1", "-1", "1e999", "nan,nan", "1,inf", "0.8,1.2,1.4", "eucl,,proj", ",",
                     "x'); DROP TABLE results; --"]),
)
ANALYSIS_OPTIONS = st.sampled_from(["--core", "--window", "--measures", "--boundary", "--seed"])


@settings(max_examples=30)
@given(option=ANALYSIS_OPTIONS, value=OPTION_TEXT, command=st.sampled_from(["analyze", "compare", "freq corr"]))
def test_analysis_options_give_a_result_or_one_line(files, option, value, command):
    record("cli analysis options")
    if command == "freq corr":
        option = {"--core": "--layers", "--window": "--missing", "--measures": "--source",
                  "--boundary": "--layers"}.get(option, option)
        argv = ["freq", "corr", "--model", "base", "--source", "toy", "--n-boot", "0"]
    else:
        argv = [command, "--model", "base", *(["--model", "other"] if command == "compare" else []), "--n-boot", "0"]
    with tempfile.TemporaryDirectory() as folder:
        path = copy_store(files["store"], Path(folder))
        before = file_state(path)
        result = run_cli(*argv, f"{option}={value}", "--store", path)
        if result.code == 2 and "usage:" in result.err:
            assert re.search(r": error: argument", result.err), result.err  # argparse refuses the type
        elif result.code == 2:
            assert_refused(result)
            assert file_state(path) == before
        else:
            assert result.code == 0, result


@pytest.mark.parametrize(("command", "message"), [
    (["analyze", "--model", "base", "--seed", "-1", "--n-boot", "5"], "--seed -1 must be a whole number from 0 to 2**63 - 1"),
    (["compare", "--model", "base", "--model", "other", "--seed", "-1", "--n-boot", "5"],
     "--seed -1 must be a whole number from 0 to 2**63 - 1"),
    (["depth", "--model", "base", "--seed", "-1", "--n-boot", "5"], "--seed -1 must be a whole number from 0 to 2**63 - 1"),
    (["freq", "corr", "--model", "base", "--source", "toy", "--seed", "-1", "--n-boot", "5"], "--seed -1 must be a whole number from 0 to 2**63 - 1"),
    (["analyze", "--model", "base", "--n-boot", "-1"], "--n-boot -1 must be 0 or more"),
    (["depth", "--model", "base", "--n-boot", "-1"], "--n-boot -1 must be 0 or more"),
    (["freq", "corr", "--model", "base", "--source", "toy", "--n-boot", "-1"], "--n-boot -1 must be 0 or more"),
    (["freq", "count", "CORPUS", "--threads", "-1"], "threads must be at least 1"),
    (["freq", "count", "CORPUS", "--threads", "0"], "threads must be at least 1"),
    (["freq", "count", "CORPUS", "--range", "9-2"], "0 <= LOW <= HIGH"),
    (["analyze", "--model", "base", "--core", "0-99999999999"], "no model has that many"),
    (["analyze", "--model", "base", "--core", "3-1"], "run backwards: write 1-3"),
    (["compare", "--model", "base", "--model", "base", "--n-boot", "5"], "two different models, or one model on two stimulus sets; both are 'base' on 'base-set'"),
    (["depth", "--model", "base", "--prompts", "BINARY"], "prompts file"),
    (["depth", "--model", "base", "--prompts", "EMPTY"], "is empty"),
    (["depth", "--model", "base", "--prompts", "FOLDER"], "prompts file"),
    (["probe", "--model", "base"], "held-out magnitudes in 5 folds need at least 7 magnitudes (one inner magnitude "
                                   "per fold, plus the smallest and largest, which are always trained on), got 6"),
    (["probe", "--model", "base", "--magnitude-folds", "3", "--carrier-folds", "4"], "--carrier-folds 4 exceeds the 3 carriers"),
    (["probe", "--model", "base", "--carrier-folds", "1"], "--carrier-folds 1: give 0 (leave one carrier out) or at least 2"),
    (["probe", "--model", "base", "--targets", "cube"], "unknown probe target(s) cube; choose from log, linear"),
    (["probe", "--model", "base", "--alphas", "x"], "cannot read --alphas 'x'"),
    (["probe", "--model", "base", "--probe-n-boot", "-1"], "--probe-n-boot -1 must be a whole number >= 0"),
    (["probe", "--model", "base", "--layer", "9"], "--layer 9 is not a layer of base: choose 0-3"),
])
def test_analysis_commands_refuse_bad_values_in_one_line(files, tmp_path, command, message):
    record("cli analysis options")
    (tmp_path / "binary.txt").write_bytes(b"\xff\xfe\x00\x01" * 100)
    (tmp_path / "empty.txt").write_bytes(b" \n")
    substitutes = {"CORPUS": files["corpus"], "BINARY": tmp_path / "binary.txt", "EMPTY": tmp_path / "empty.txt",
                   "FOLDER": tmp_path}
    path = copy_store(files["store"], tmp_path)
    before = file_state(path)
    result = run_cli(*[substitutes.get(arg, arg) for arg in command], "--store", path)
    assert_refused(result, message)
    assert file_state(path) == before


# -- the real program ---------------------------------------------------------------------------------

REAL_PROGRAM_CASES = {
    "magnitudes": lambda f, d: ["extract", "--model", MISSING_MODEL, "--magnitudes", "9" * 5000, "--store", d / "s"],
    "carriers": lambda f, d: ["extract", "--model", MISSING_MODEL, "--carriers", _write(d / "c.txt", bytes(256)),
                              "--store", d / "s"],
    "npz": lambda f, d: ["import", _write(d / "x.npz", b"PK\x03\x04 torn"), "--name", "x", "--store", f["store"]],
    "store": lambda f, d: ["list", "--store", _write(d / "torn.duckdb", f["store"].read_bytes()[:20_000])],
    "seed": lambda f, d: ["analyze", "--model", "base", "--seed", "-2", "--store", f["store"]],
    "name": lambda f, d: ["import", f["npz"], f"--name={SQL_NAME}", "--store", copy_store(f["store"], d)],
}


@pytest.mark.parametrize("case", list(REAL_PROGRAM_CASES))
def test_the_real_program_behaves_like_main(files, tmp_path, case):
    """``python -m magdash`` gives the same exit status and message as main(), and no traceback."""
    record("cli real program")
    argv = [str(arg) for arg in REAL_PROGRAM_CASES[case](files, tmp_path)]
    real = subprocess.run([sys.executable, "-m", "magdash", *argv], capture_output=True, text=True, timeout=300)
    assert "Traceback" not in real.stderr, real.stderr
    if case == "name":
        assert real.returncode == 0, real.stderr
        listed = subprocess.run([sys.executable, "-m", "magdash", "list", "--json", "--store", argv[-1]],
                                capture_output=True, text=True, timeout=300)
        assert SQL_NAME in {model["name"] for model in json.loads(listed.stdout)["models"]}
        return
    in_process = run_cli(*argv)
    assert real.returncode == in_process.code == 2
    assert real.stderr == in_process.err
    assert_refused(in_process)
