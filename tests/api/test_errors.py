"""Bad input to the Python API raises magdash's own error saying what to fix, as the CLI does:
never another exception, and nothing is stored."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings

import magdash as md
from magdash.errors import AnalysisError, MagdashError
from tests.support import npz_payloads, payload_arrays, payload_must_be_refused, record

MAGNITUDES = list(range(1, 9))
GOOD = np.random.default_rng(0).normal(size=(8, 3, 4, 6)).astype(np.float32)


def nan_at(layer: int) -> np.ndarray:
    vectors = GOOD.copy()
    vectors[2, 1, layer, 3] = np.nan
    return vectors


@pytest.mark.parametrize(("data", "magnitudes", "carriers", "says"), [
    (GOOD[:, :, 0], MAGNITUDES, None, "must be (n_magnitudes, n_carriers, n_layers, d)"),
    (GOOD[None], MAGNITUDES, None, "must be (n_magnitudes, n_carriers, n_layers, d)"),
    (GOOD[:, :, :0], MAGNITUDES, None, "empty axis"),
    (GOOD, MAGNITUDES[:-1], None, "7 magnitudes for the 8 rows"),
    (GOOD, None, None, "say which magnitude each row"),
    (GOOD, [m + 0.5 for m in MAGNITUDES], None, "whole numbers"),
    (GOOD, [0, *MAGNITUDES[1:]], None, "positive"),
    (GOOD, [1, 1, *MAGNITUDES[2:]], None, "magnitudes [1] repeat"),
    (GOOD, ["a"] * 8, None, "must be numbers"),
    (nan_at(2), MAGNITUDES, None, "Inf or NaN vectors at layers 2 (1)"),
    (GOOD[:, :1], MAGNITUDES, None, "at least 2"),
    (GOOD, MAGNITUDES, ["a {n}", "b {n}"], "2 carriers for the 3 columns"),
    (GOOD.astype(bool), MAGNITUDES, None, "float array"),
    (np.full(GOOD.shape, "x"), MAGNITUDES, None, "float array"),
    ("cache/magdash.duckdb", MAGNITUDES, None, "open a store with magdash.Store(path)"),
])
def test_bad_arrays_are_refused_with_what_to_fix(data, magnitudes, carriers, says):
    with pytest.raises(AnalysisError, match=None) as caught:
        md.analyze(data, magnitudes=magnitudes, carriers=carriers)
    assert says in str(caught.value)


@pytest.mark.parametrize(("call", "says"), [
    (lambda s: md.analyze(s), "name the stored model"),
    (lambda s: md.analyze(s, 3), "name the stored model"),
    (lambda s: md.analyze(s, "nothing"), "'nothing'"),
    (lambda s: md.analyze(s, "m", n_bootz=3), "unknown option(s) n_bootz"),
    (lambda s: md.analyze(s, "m", params=md.DepthParams()), "params must be a AnalysisParams"),
    (lambda s: md.analyze(s, "m", n_boot=-1), "n_boot=-1 must be 0 or more"),
    (lambda s: md.compare(s, "m"), "name both models"),
    (lambda s: md.compare(s, "m", "m"), "two different models"),
    (lambda s: md.controls(s, "m", random=GOOD), "finds the @random control itself"),
    (lambda s: md.controls(s, "m", variants={"x": GOOD}), "names of stored models"),
    (lambda s: md.depth(s, "m", massive="nope"), "massive"),
    (lambda s: md.layer_vectors(s, 9, "m"), "no layer 9"),
    (lambda s: md.rdm(s, 1, "m", metric="manhattan"), "metric must be one of"),
    (lambda s: md.e5(s, "m", source="nope"), "no frequency source named 'nope'"),
    (lambda s: md.extract("minilm", 42, store=s), "stimuli must be a StimulusSet"),
    (lambda s: md.extract("minilm", store="cache/magdash.duckdb"), "extract needs a store"),
    (lambda s: md.extract("no-such-model-anywhere", store=s), "no-such-model-anywhere"),
    (lambda s: md.extract("minilm", store=s, dtype="float7"), "float7"),
    (lambda s: s.put("m2", GOOD), "say which magnitude"),
    (lambda s: s.put("m2", md.Activations(GOOD, MAGNITUDES), MAGNITUDES), "Activations carry their own"),
    (lambda s: s.put("m", GOOD * 2, MAGNITUDES), "'m'"),
])
def test_bad_calls_on_a_store_are_refused_and_leave_it_alone(tmp_path, call, says):
    store = md.Store(tmp_path / "store.duckdb")
    store.put("m", GOOD, MAGNITUDES)
    before = (store.model_names(), store.stimulus_set_names())
    with pytest.raises(MagdashError) as caught:
        call(store)
    assert says in str(caught.value)
    assert (store.model_names(), store.stimulus_set_names()) == before


@pytest.mark.parametrize(("call", "says"), [
    (lambda: md.analyze(md.Activations(GOOD, MAGNITUDES), magnitudes=MAGNITUDES), "Activations carry their own"),
    (lambda: md.analyze(GOOD, "model", magnitudes=MAGNITUDES), "model and stimuli name what a store holds"),
    (lambda: md.compare(md.Activations(GOOD, MAGNITUDES), md.Activations(GOOD, MAGNITUDES)), "both arrays are named"),
    (lambda: md.compare(md.Activations(GOOD, MAGNITUDES, name="a"),
                        md.Activations(GOOD[:-1], MAGNITUDES[:-1], name="b")), "different stimuli"),
    (lambda: md.compare(GOOD, GOOD, "b", magnitudes=MAGNITUDES), "magdash.compare(activations_a, activations_b)"),
    (lambda: md.controls(GOOD, magnitudes=MAGNITUDES, variants=["x"]), "variants maps each variant's name"),
    (lambda: md.Activations(GOOD, MAGNITUDES, layer_labels=["a"]), "1 layer labels for the 4 layers"),
    (lambda: md.Activations(GOOD, MAGNITUDES, n_blocks=9), "n_blocks is 9"),
    (lambda: md.Activations(GOOD, MAGNITUDES, last_layer="top"), "last_layer must be one of"),
    (lambda: md.Activations(GOOD, MAGNITUDES, name=""), "name must be a non-empty string"),
    (lambda: md.layer_vectors(GOOD, 4, magnitudes=MAGNITUDES), "no layer 4"),
    (lambda: md.charts.scaling(md.analyze(GOOD, magnitudes=MAGNITUDES, n_boot=0), measure="abs"), "was not analysed"),
    (lambda: md.charts.scaling(md.analyze(GOOD, magnitudes=MAGNITUDES, n_boot=0), layer=7), "no layer 7"),
    (lambda: md.charts.rdm(md.analyze(GOOD, magnitudes=MAGNITUDES, n_boot=0), 1, GOOD[:3, :, 1]), "shape (3, 3, 6)"),
])
def test_bad_calls_on_arrays_are_refused(call, says):
    with pytest.raises(MagdashError) as caught:
        call()
    assert says in str(caught.value)


def test_nonfinite_vectors_pass_only_when_allowed():
    activations = md.Activations(nan_at(1), MAGNITUDES, allow_nonfinite=True)
    assert md.analyze(activations, n_boot=0).nonfinite_layers == {1: 1}
    with pytest.raises(AnalysisError, match="allow_nonfinite=True"):
        md.Activations(nan_at(1), MAGNITUDES)
    with pytest.raises(AnalysisError, match="no finite values"):
        md.Activations(np.full(GOOD.shape, np.inf, dtype=np.float32), MAGNITUDES, allow_nonfinite=True)


@pytest.mark.bad_input
@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(npz_payloads())
def test_put_follows_the_import_rules_and_needs_two_carriers(tmp_path_factory, payload):
    # Store.put takes what an npz import takes (the same rules, stated in tests.support), less arrays
    # of one carrier, which the analyses cannot use; a refusal leaves the store as it was.
    arrays = payload_arrays(payload)
    assume("magnitudes" in arrays)
    record("api Store.put")
    values = arrays["per_carrier"]
    refuse = payload_must_be_refused(arrays) or values.ndim < 2 or values.shape[1] < 2
    store = md.Store(tmp_path_factory.mktemp("put") / "store.duckdb")
    before = (store.model_names(), store.stimulus_set_names())
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            record_, _ = store.put("put", values, arrays["magnitudes"], carriers=arrays.get("carriers"),
                                   layer_labels=arrays.get("layer_labels"), allow_nonfinite=True)
    except MagdashError as error:
        assert str(error) and "\n" not in str(error).strip()
        assert refuse, f"refused a valid array {payload}: {error}"
        assert (store.model_names(), store.stimulus_set_names()) == before
        return
    assert not refuse, f"accepted an array the rules refuse: {payload}"
    assert record_.n_layers == values.shape[2] and record_.source == "array"
