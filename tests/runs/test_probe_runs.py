"""The probes over a store: the store path gives what run_probes gives on the same arrays, the result
is cached (a new parameter is a new key), its metric rows are its tables, the @random control is
probed beside the model, and a design the probes cannot use is refused with what is needed."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from magdash.errors import AnalysisError
from magdash.probes.probe import run_probes
from magdash.probes.probe_params import ProbeParams
from magdash.probes.result import TABLES, compare_probes
from magdash.runs.backfill import backfill_store
from magdash.runs.probe_runs import (
    CONTROL_SERIES,
    PROBE,
    TRAINED_SERIES,
    baseline_strata,
    cached_probe,
    probe,
    probe_key,
    probe_with_control,
    stored_control,
)
from magdash.store import Store
from magdash.tokenization import NumberTokens
from tests.support import copy_store

MAGNITUDES = np.arange(1, 13) * 3.0
CARRIERS = [f"Carrier {i} holds {{n}} items." for i in range(4)]
FAST = ProbeParams(n_boot=20)


def planted(seed: int, code: float) -> np.ndarray:
    """(12 magnitudes, 4 carriers, 3 layers, 8 d): log n along a random direction, growing with the
    layer (``code`` times the layer index), in unit noise."""
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=8)
    direction /= np.linalg.norm(direction)
    strength = code * np.arange(3)[None, None, :, None]
    signal = np.log(MAGNITUDES)[:, None, None, None] * strength * direction
    return (signal + 0.1 * rng.normal(size=(12, 4, 3, 8))).astype(np.float32)


ARRAYS = {"planted": planted(0, 2.0), "planted@random": planted(1, 0.0)}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    path = tmp_path_factory.mktemp("probes") / "store.duckdb"
    store = Store(path)
    for name, arrays in ARRAYS.items():
        store.import_arrays(name, arrays, MAGNITUDES.tolist(), carriers=CARRIERS, stimuli="toy")
    return path


@pytest.fixture
def store(made, tmp_path):
    return Store(copy_store(made, tmp_path))


def array_path(store, name: str, params: ProbeParams = FAST):
    labels = store.model_record(name).layer_labels
    layers = [(labels[layer], ARRAYS[name][:, :, layer]) for layer in range(len(labels))]
    return run_probes(layers, MAGNITUDES, params, model=name, stimuli="toy")


@pytest.mark.slow
def test_the_store_path_equals_the_array_path_and_is_cached(store, monkeypatch):
    computed = probe(store, "planted", params=FAST)
    expected = array_path(store, "planted")
    assert not computed.from_cache and computed.equals(expected)
    assert computed.score_table()["r2"].iloc[-1] > 0.9  # the planted code is read at the last layer

    def no_second_computation(*args, **kwargs):
        raise AssertionError("the probes were computed again")

    monkeypatch.setattr("magdash.probes.probe.run_probes", no_second_computation)
    again = probe(store, "planted", "toy", FAST)
    assert again.from_cache and again.equals(expected)
    assert cached_probe(store, "planted", "toy", FAST).equals(expected)
    # another parameter is another key, computed anew
    other = dataclasses.replace(FAST, control_seed=1)
    assert probe_key(store, "planted", "toy", other) != probe_key(store, "planted", "toy", FAST)
    assert cached_probe(store, "planted", "toy", other) is None
    with pytest.raises(AssertionError, match="computed again"):
        probe(store, "planted", params=other)
    with pytest.raises(AssertionError, match="computed again"):
        probe(store, "planted", params=FAST, use_cache=False)


def test_the_metric_rows_are_the_result_tables(store):
    result = probe(store, "planted", params=FAST)
    key = probe_key(store, "planted", "toy", FAST)
    for table in TABLES:
        name = "probe_layers" if table == "layers" else f"probe_{table}"
        rows = store.metric_table(name)
        rows = rows[rows["result_key"] == key]
        assert (rows["model"] == "planted").all() and (rows["stimuli"] == "toy").all()
        frame = getattr(result, table)
        stored = rows.drop(columns=["result_key", "computed_at", "model", "stimuli"])[list(frame.columns)]
        order = [c for c in ("layer", "scheme", "target", "task", "magnitude") if c in frame.columns]
        pd.testing.assert_frame_equal(stored.sort_values(order).reset_index(drop=True),
                                      frame.sort_values(order).reset_index(drop=True), check_dtype=False)
    run = store.metric_table("probes")
    assert run[["model", "stimuli", "n_magnitudes", "n_carriers", "n_layers", "n_boot"]].values.tolist() == [
        ["planted", "toy", 12, 4, 3, 20]]
    assert list(run["targets"].iloc[0]) == ["log", "linear"]


def test_a_result_cached_without_rows_gets_them_by_a_backfill(store):
    result = probe(store, "planted", params=FAST)
    key = probe_key(store, "planted", "toy", FAST)
    store.put_result(key, "probe", PROBE.encode(result), {})  # the payload alone, as a migrated store has it
    assert store.results_without_rows("probe") == [key]
    assert backfill_store(store)["probe"] == 1
    assert len(store.metric_table("probe_scores")) == len(result.scores)


@pytest.mark.slow
def test_the_random_control_is_probed_beside_the_model(store):
    run = probe_with_control(store, "planted", params=FAST)
    control = array_path(store, "planted@random")
    assert run.control.equals(control) and run.result.equals(array_path(store, "planted"))
    pd.testing.assert_frame_equal(run.comparison, compare_probes(run.result, control))
    assert list(run.series()) == [TRAINED_SERIES, CONTROL_SERIES]
    last = run.comparison[(run.comparison["layer"] == 2) & (run.comparison["scheme"] == "carrier")
                          & (run.comparison["target"] == "log") & (run.comparison["task"] == "real")]
    assert last["r2_difference"].iloc[0] > 0.5  # the trained model decodes, its control does not
    document = run.to_json()
    assert document["control"]["model"] == "planted@random" and len(document["comparison"]) == len(run.comparison)
    alone = probe_with_control(store, "planted", params=FAST, random_control=False)
    assert alone.control is None and alone.comparison is None and alone.to_json()["control"] is None
    assert stored_control(store, "planted@random", "toy") is None  # a control has no control
    assert probe_with_control(store, "planted@random", params=FAST).control is None


@pytest.mark.parametrize(("carriers", "magnitudes", "params", "message"), [
    (2, 12, FAST, "held-out carriers need at least 3 carriers, got 2"),
    (4, 5, FAST, "held-out magnitudes in 5 folds need at least 7 magnitudes"),
    (4, 5, dataclasses.replace(FAST, magnitude_folds=2), None),
])
def test_a_design_the_probes_cannot_use_says_what_is_needed(tmp_path, carriers, magnitudes, params, message):
    store = Store(tmp_path / "small.duckdb")
    arrays = np.random.default_rng(0).normal(size=(magnitudes, carriers, 2, 4)).astype(np.float32)
    store.import_arrays("small", arrays, MAGNITUDES[:magnitudes].tolist(), carriers=CARRIERS[:carriers])
    if message is None:
        assert probe(store, "small", params=params).n_layers == 2
        return
    with pytest.raises(AnalysisError, match=message):
        probe(store, "small", params=params)
    assert store.metric_table("probes").empty


def test_a_report_shows_the_probes_only_once_cached(store):
    from magdash.reports import cached_probe_series

    assert cached_probe_series(store, "planted", "toy", FAST) == {}
    probe(store, "planted", params=FAST)
    assert list(cached_probe_series(store, "planted", "toy", FAST)) == [TRAINED_SERIES]
    probe(store, "planted@random", params=FAST)
    series = cached_probe_series(store, "planted", "toy", FAST)
    assert list(series) == [TRAINED_SERIES, CONTROL_SERIES] and all(r.from_cache for r in series.values())


def test_recorded_token_counts_refine_the_baseline_strata_and_enter_the_key(store):
    before = probe_key(store, "planted", "toy", FAST)
    assert probe(store, "planted", params=FAST).strata_by == "digit count"
    # a tokenizer that groups digits two by two: 3..9 one token, 12..36 one, none of three digits here
    items = store.stimulus_set("toy").items
    facts = [NumberTokens(item.magnitude, item.carrier_index, "last", 1 if item.magnitude < 30 else 2,
                          (item.magnitude,), item.magnitude, str(item.magnitude), (str(item.magnitude),),
                          len(str(item.magnitude)), len(str(item.magnitude))) for item in items]
    store.write_token_facts(store.model_record("planted").model_id, [item.key for item in items], facts)
    assert probe_key(store, "planted", "toy", FAST) != before
    strata = baseline_strata(store.number_tokens("planted", "toy"), MAGNITUDES)
    assert strata.labels == ("1 digit, 1 token", "2 digits, 1 token", "2 digits, 2 tokens")
    result = probe(store, "planted", params=FAST)
    assert not result.from_cache and result.strata_by == "digit count and token count"
    assert result.strata == strata.names()
    assert store.metric_table("probes")["baseline_strata"].tolist() == ["digit count", "digit count and token count"]
