"""Bad input at every public Python entry point, generated with hypothesis.

Covered: magnitude specs (``parse_magnitudes``), carrier text and files (``parse_carrier_text``,
``read_carrier_file``), ``StimulusSet``, npz files and arrays (``read_npz``,
``validate_import_arrays``, ``Store.import_arrays``), hostile model, stimulus-set and
frequency-source names, ``extract`` options, ``analyze`` / ``compare`` parameters, the
frequency functions and ``to_jsonable``.

The property everywhere: a call either succeeds with a sane result or raises a
:class:`~magdash.errors.MagdashError` with a message; never another exception. Calls that are
refused leave the store exactly as it was (every table's rows compared before and after).
Each generated case is counted with :func:`tests.support.record`; the strategies and the store
they start from are in :mod:`tests.support`, shared with the CLI's and the app's bad-input suites.
"""

from __future__ import annotations

import hashlib
import io
import json
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from magdash.errors import MagdashError, StimulusError, StoreError
from magdash.stimuli import (
    MAX_CARRIER_FILE_BYTES,
    MAX_CARRIERS,
    MAX_MAGNITUDE,
    PAPER_MAGNITUDES,
    StimulusSet,
    parse_carrier_text,
    parse_magnitudes,
    read_carrier_file,
)
from magdash.store import Store, read_npz, validate_import_arrays
from tests.support import (
    ARBITRARY_SPECS,
    BASE_SET,
    BASE_SHAPE,
    CARRIER_FILE_BYTES,
    CARRIER_LINES,
    CARRIER_TEXTS,
    CARRIERS,
    CSV_BYTES,
    MAGNITUDES,
    NAME_BATCHES,
    NAMES,
    build_base_store,
    copy_store,
    expected_carriers,
    expected_carriers_from_bytes,
    file_state,
    magnitude_specs,
    npz_payloads,
    payload_arrays,
    payload_must_be_refused,
    record,
    store_contents,
)

pytestmark = pytest.mark.bad_input

# -- the store every module starts from ---------------------------------------------------


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


# Pieces with the numbers they must stand for ...
# ... and pieces no spec may contain.


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
    assert "per_carrier" in set(arrays)  # magnitudes may come from the user (the paper's files have none)


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
                # Each name its own sentences: the same sentences under a second name are refused.
                own = 6 + int(hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:6], 16) % 10_000
                store.register_stimulus_set(StimulusSet(name, CARRIERS[:2], (4, 5, own)))
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
    from magdash.frequency import FrequencySource
    from magdash.runs.frequency_runs import load_source, save_source

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
    from magdash.extraction import extract

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
    from magdash.runs.analysis_runs import analyze
    from magdash.variability.analysis_params import AnalysisParams

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
    from magdash.runs.analysis_runs import analyze
    from magdash.variability.analysis_params import AnalysisParams

    with pytest.raises(MagdashError, match="core"):
        analyze(Store(base_store), "base", BASE_SET, AnalysisParams(core_layers=core, n_boot=0))
    assert store_contents(base_store) == base_contents


def test_analyze_refuses_a_negative_seed_with_a_message(base_store, base_contents):
    """NumPy's generators take only seeds >= 0; a negative one must be refused, not crash."""
    record("api analyze")
    from magdash.runs.analysis_runs import analyze
    from magdash.variability.analysis_params import AnalysisParams

    with pytest.raises(MagdashError, match="seed"):
        analyze(Store(base_store), "base", BASE_SET, AnalysisParams(seed=-1, n_boot=10))
    assert store_contents(base_store) == base_contents


@pytest.mark.parametrize(("model_a", "model_b", "stimuli"), [
    ("base", "nobody", None), ("nobody", "base", None), ("base", "other", "nope"), ("base", "base", "nope"),
])
def test_compare_refuses_unknown_models_and_sets(base_store, base_contents, model_a, model_b, stimuli):
    record("api compare")
    from magdash.runs.analysis_runs import compare
    from magdash.variability.analysis_params import AnalysisParams

    with pytest.raises(MagdashError):
        compare(Store(base_store), model_a, model_b, stimuli, AnalysisParams(n_boot=0))
    assert store_contents(base_store) == base_contents


# -- frequency ---------------------------------------------------------------------------------


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
    from magdash.frequency import FrequencySource, count_corpus
    from magdash.runs.frequency_runs import e5_from_store, load_source, save_source

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
