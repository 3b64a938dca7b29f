"""The result's tables survive the cache payload (plain compressed JSON, never pickle), its JSON,
its warnings, and two models' probes side by side."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

from magdash.errors import AnalysisError
from magdash.jsonio import to_jsonable
from magdash.probes.probe import run_probes
from magdash.probes.probe_params import ProbeParams
from magdash.probes.result import TABLES, ProbeResult, compare_probes, compare_scaling
from tests.probes.support import MAGNITUDES, planted_layer

PARAMS = ProbeParams(n_boot=50, carrier_folds=3)


@pytest.fixture(scope="module")
def result():
    first, _ = planted_layer(seed=1, offsets=0.5, isotropic=0.05)
    broken = first.copy()
    broken[0, 0, 0] = np.nan
    return run_probes([("a", first), ("b", broken)], MAGNITUDES, PARAMS, model="m", stimuli="s")


def test_the_payload_round_trip_gives_the_same_result(result):
    payload = result.to_payload()
    document = json.loads(zlib.decompress(payload))  # plain JSON: nothing in it can run code
    assert set(TABLES) <= set(document)
    again = ProbeResult.from_payload(payload)
    assert again.from_cache and not result.from_cache
    assert again.equals(result) and again.params == PARAMS
    for name in TABLES:
        assert list(getattr(again, name).dtypes) == list(getattr(result, name).dtypes), name
    assert again.nonfinite_layers == {1: 1}


def test_the_json_is_plain(result):
    document = json.loads(json.dumps(to_jsonable(result.to_json()), allow_nan=False))
    assert document["params"]["carrier_folds"] == 3 and document["layer_labels"] == ["a", "b"]
    assert len(document["scores"]) == len(result.scores) and document["warnings"] == result.warnings()


def test_the_smallest_penalty_of_the_grid_chosen_is_warned_about():
    vectors, _ = planted_layer(seed=1)
    single = run_probes([vectors, vectors], MAGNITUDES, ProbeParams(n_boot=10, alphas=(1.0,)), model="m")
    assert any("chose the grid's smallest ridge penalty (1)" in line and "layer(s) 0-1" in line
               for line in single.warnings())
    assert not run_probes([vectors], MAGNITUDES, ProbeParams(n_boot=10)).warnings()


def test_two_models_side_by_side(result):
    noise = np.random.default_rng(0).standard_normal((MAGNITUDES.size, 12, 24)).astype(np.float32)
    control = run_probes([("a", noise)], MAGNITUDES, PARAMS, model="m@random")
    table = compare_probes(result, control)
    assert len(table) == 8 and set(table["layer"]) == {0}
    row = table.set_index(["scheme", "target", "task"]).loc[("carrier", "log", "real")]
    assert row["r2_model"] > 0.9 and row["r2_control"] < 0.05
    assert row["r2_difference"] == pytest.approx(row["r2_model"] - row["r2_control"])
    fewer = run_probes([("a", noise[:-1])], MAGNITUDES[:-1], PARAMS)
    with pytest.raises(AnalysisError, match="different magnitudes"):
        compare_probes(result, fewer)
    scaling = compare_scaling(result, control)
    assert len(scaling) == 2 and set(scaling["layer"]) == {0}
    row = scaling.set_index("target").loc["log"]
    model_beta = result.decoded_scaling.set_index(["layer", "target"]).loc[(0, "log"), "beta"]
    assert row["beta_model"] == model_beta and row["beta_difference"] == pytest.approx(model_beta - row["beta_control"])
    with pytest.raises(AnalysisError, match="different magnitudes"):
        compare_scaling(result, fewer)


def test_the_strata_and_the_band_are_kept(result):
    assert result.strata_by == "digit count" and result.strata[:2] == ["1 digit", "1 digit"]
    assert result.strata[-1] == "4 digits" and len(result.strata) == MAGNITUDES.size
    document = result.to_json()
    assert document["strata"] == result.strata and document["strata_by"] == "digit count"
    assert result.best_layers["layer"].tolist() == [0, 0]  # one row per target; layer 1 holds a NaN: not probed
    assert result.best_and_band("log") == (0, [0])
    assert {"baseline_r2", "r2_within_strata"} <= set(document["scores"][0])
