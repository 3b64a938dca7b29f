"""Steering a stored model: what to run first when it has no comparison trials; on a tiny decoder with
trials and vectors, a run cached with its metric rows and read back from the cache the second time."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import magdash as md
from magdash.cli import main
from magdash.errors import AnalysisError
from magdash.extract_params import ExtractParams
from magdash.steering.directions import layer_directions, top_dimension_share
from magdash.steering.steer_params import SteerParams
from magdash.store import Store

MAGNITUDES = [2, 3, 5, 8, 13, 21, 34, 55]
CARRIERS = ["a {n}", "b {n}", "c {n}"]


def planted_vectors(dim: int, n_layers: int, seed: int = 0) -> np.ndarray:
    """(magnitudes, carriers, layers, d): centroids moving along log n on one direction, with noise."""
    rng = np.random.default_rng(seed)
    direction = rng.normal(size=dim)
    centroids = np.log(MAGNITUDES)[:, None, None] * direction[None, None, :] * np.ones((1, n_layers, 1))
    noise = 0.1 * rng.normal(size=(len(MAGNITUDES), len(CARRIERS), n_layers, dim))
    return (centroids[:, None] + noise).astype(np.float32)


def test_a_model_without_comparison_trials_is_told_to_run_them_first(tmp_path, capsys):
    path = tmp_path / "store.duckdb"
    store = Store(path)
    store.put("vectors-only", planted_vectors(8, 3), MAGNITUDES, carriers=CARRIERS)
    with pytest.raises(AnalysisError, match=r"no comparison trials.*md\.behave\(store, model\)"):
        md.steer(store, "vectors-only")
    assert main(["steer", "--model", "vectors-only", "--store", str(path)]) == 2
    assert "run them first: magdash behave --model vectors-only" in capsys.readouterr().err


def test_a_run_is_cached_with_its_rows_and_read_back(tmp_path, capsys):
    from magdash.trial_extraction import run_trials
    from tests.test_trial_extraction import build_comparison_model, design

    folder = build_comparison_model(tmp_path / "cmp", chat=False)
    store = Store(tmp_path / "store.duckdb")
    run = run_trials(str(folder), design(references=(10,), ratios=(1.5, 2.0), pairs=2), store,
                     ExtractParams(device="cpu"), name="cmp")
    vectors = planted_vectors(32, 3)
    store.put("cmp", vectors, MAGNITUDES, carriers=CARRIERS)
    params = SteerParams(layers=(0, 2), doses=(0.5, 1.0), n_random=3, n_boot=50, direction="pc1")
    first = md.steer(store, "cmp", params=params, extract_params=ExtractParams(device="cpu", batch_size=4))
    assert not first.from_cache
    assert first.layers["layer"].tolist() == [0, 2] and first.n_trials == len(run.trials)
    assert set(first.doses["kind"]) == {"magnitude", "random", "orthogonal"}
    # The dose unit is the span of the stored centroids along the layer's direction.
    expected = layer_directions(2, vectors[:, :, 2], MAGNITUDES, params).dose_unit
    assert first.layers.set_index("layer").loc[2, "dose_unit"] == pytest.approx(expected, rel=1e-6)
    direction = layer_directions(2, vectors[:, :, 2], MAGNITUDES, params).direction
    assert first.layers.set_index("layer").loc[2, "top_dimension_share"] == pytest.approx(
        top_dimension_share(direction), rel=1e-9)
    assert np.isfinite(first.layers["magnitude_effect"]).all() and first.layers["magnitude_effect"].iloc[0] > 0
    rows = store.metric_table("steering_layers")
    assert sorted(rows["layer"]) == [0, 2] and set(rows["model"]) == {"cmp"} and set(rows["direction"]) == {"pc1"}
    again = md.steer(store, "cmp", params=params)
    assert again.from_cache
    pd.testing.assert_frame_equal(again.layers, first.layers, check_dtype=False)
    # The command line with the same choices reads the cached result (nothing is loaded).
    assert main(["steer", "--model", "cmp", "--store", str(tmp_path / "store.duckdb"), "--layers", "0,2",
                 "--doses", "0.5,1", "--n-random", "3", "--steer-n-boot", "50", "--direction", "pc1", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [record["layer"] for record in printed["records"]] == [0, 2]
    assert printed["records"][0]["specificity"] == pytest.approx(float(first.layers["specificity"].iloc[0]))
    # The last layer's output at the operand's token reaches no later position: nothing moves, and
    # specificity (0 / 0) is undefined, written null.
    assert printed["records"][1]["magnitude_effect"] == 0.0 and printed["records"][1]["specificity"] is None
    assert any("no direction moves" in line for line in printed["warnings"])
    with pytest.raises(AnalysisError, match="layers=7"):
        md.steer(store, "cmp", params=params, layers=(7,))


def test_a_model_without_vectors_is_told_to_extract_them(tmp_path):
    store = Store(tmp_path / "store.duckdb")
    store.put_trials("trials-only", "published", imported_trials())
    with pytest.raises(AnalysisError, match=r"no stored vectors.*md\.extract"):
        md.steer(store, "trials-only")


def imported_trials():
    """Four trials of the paper's design with made-up outputs, as an import stores them."""
    return md.paper_comparisons().trials().head(4).assign(logit_a=1.0, logit_b=0.0, prob_a=0.6, prob_b=0.3,
                                                          chosen="A", correct=True)


def test_imported_trials_have_no_model_to_steer(tmp_path):
    from magdash.runs.steer_runs import steer

    store = Store(tmp_path / "store.duckdb")
    store.put("imported", planted_vectors(8, 3), MAGNITUDES, carriers=CARRIERS)
    store.put_trials("imported", "published", imported_trials())
    with pytest.raises(AnalysisError, match="imported, not run by magdash"):
        steer(store, "imported", params=SteerParams(direction="pc1"))


def test_the_random_control_is_steered_beside_the_model_as_a_check(tmp_path, capsys):
    from magdash.runs.steer_runs import steer, steer_with_control
    from magdash.trial_extraction import run_trials
    from tests.test_trial_extraction import build_comparison_model, design

    folder = build_comparison_model(tmp_path / "cmp", chat=False)
    path = tmp_path / "store.duckdb"
    store = Store(path)
    trials = design(references=(10,), ratios=(1.5, 2.0), pairs=2)
    cpu = ExtractParams(device="cpu", batch_size=4)
    run_trials(str(folder), trials, store, cpu, name="cmp")
    store.put("cmp", planted_vectors(32, 3), MAGNITUDES, carriers=CARRIERS)
    params = SteerParams(layers=(0, 1), doses=(1.0,), n_random=3, n_boot=20, direction="pc1")
    # Without the control's trials, the model alone.
    alone, none, no_frame = steer_with_control(store, "cmp", params=params, extract_params=cpu)
    assert none is None and no_frame is None and not alone.from_cache
    control = run_trials(f"{folder}@random", trials, store, cpu, name="cmp@random")
    # The control's own random weights answer differently from the model's.
    assert not np.allclose(control.trials["prob_a"], store.trials("cmp", control.comparisons)["prob_a"])
    # Trials but no vectors: still the model alone.
    assert steer_with_control(store, "cmp", params=params, extract_params=cpu)[1] is None
    store.put("cmp@random", planted_vectors(32, 3, seed=1), MAGNITUDES, carriers=CARRIERS)
    result, controlled, beside = steer_with_control(store, "cmp", params=params, extract_params=cpu)
    assert result.from_cache and controlled is not None and beside is not None
    assert controlled.model == "cmp@random" and controlled.params == params and not controlled.from_cache
    assert controlled.n_trials == result.n_trials
    # The control's result is the kind's own run on the control, cached under its key.
    assert steer(store, "cmp@random", params=params).from_cache
    assert beside["layer"].tolist() == [0, 1]
    np.testing.assert_allclose(beside["specificity"], result.layers["specificity"], equal_nan=True)
    np.testing.assert_allclose(beside["specificity_control"], controlled.layers["specificity"], equal_nan=True)
    # The command line steers the control too and sets the two beside each other.
    assert main(["steer", "--model", "cmp", "--store", str(path), "--layers", "0,1", "--doses", "1",
                 "--n-random", "3", "--steer-n-boot", "20", "--direction", "pc1", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["model"] == "cmp" and printed["control"]["model"] == "cmp@random"
    assert [row["layer"] for row in printed["beside_control"]] == [0, 1]
    assert main(["steer", "--model", "cmp", "--store", str(path), "--layers", "0,1", "--doses", "1",
                 "--n-random", "3", "--steer-n-boot", "20", "--direction", "pc1"]) == 0
    text = capsys.readouterr().out
    assert "the @random control" in text and "cmp beside cmp@random per layer:" in text
