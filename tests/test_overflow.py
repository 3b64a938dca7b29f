"""Inf/NaN activations (float16 overflow): found when stored, flagged per layer, left out of every
fit and diagnostic, and announced — by the CLI on stderr (stdout JSON stays clean) and in the app."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from magdash.cli import main
from magdash.extraction import extract
from magdash.overflow import count_nonfinite, nonfinite_rows, nonfinite_warning
from magdash.runs.analysis_runs import analyze
from magdash.stimuli import PAPER_CARRIERS, StimulusSet
from magdash.store import Store
from magdash.variability.analysis import run_analysis
from magdash.variability.analysis_params import AnalysisParams
from tests.support import APP, build_tiny_model, scan_component_manifests_once

MAGNITUDES = tuple(range(1, 31))


def test_nonfinite_rows_marks_each_vector_with_an_inf_or_nan():
    vectors = np.zeros((3, 2, 4), dtype=np.float32)
    vectors[0, 1, 3] = np.inf
    vectors[2, 0, 0] = np.nan
    vectors[1, 1, :] = -np.inf
    expected = np.array([[False, True], [False, True], [True, False]])
    np.testing.assert_array_equal(nonfinite_rows(vectors), expected)
    assert count_nonfinite(vectors) == 3


def test_nonfinite_rows_across_its_internal_slices():
    vectors = np.ones((10_000, 3), dtype=np.float32)
    poisoned = [0, 4095, 4096, 8191, 9999]
    vectors[poisoned, 1] = np.nan
    assert list(np.flatnonzero(nonfinite_rows(vectors))) == poisoned


def test_the_warning_names_layers_and_advice():
    assert nonfinite_warning("m", {}) is None and nonfinite_warning("m", {3: 0}) is None
    one = nonfinite_warning("m", {4: 2}, total=130)
    assert "layer 4 holds Inf/NaN" in one and "2 of 130" in one and "bfloat16" in one
    assert "layers 2, 5 hold" in nonfinite_warning("m", {5: 1, 2: 7})


def test_the_store_flags_what_it_writes_once(store):
    stimuli = StimulusSet("s", ("a {n} b", "c {n} d"), (1, 2, 3))
    store.register_stimulus_set(stimuli)
    keys = [item.key for item in stimuli.items]
    vectors = np.random.default_rng(0).normal(size=(len(keys), 4, 8)).astype(np.float32)
    vectors[1, 2, 0] = np.inf
    vectors[4, 2, 5] = np.nan
    vectors[4, 3, :] = np.nan
    store.write_vectors("model-id", keys[:3], vectors[:3])
    store.write_vectors("model-id", keys, vectors)  # the first three are already stored: no new flags
    store.register_model(_record("m", "model-id", n_layers=4, hidden=8))
    assert store.nonfinite_counts("m", "s") == {2: 2, 3: 1}
    assert [layer.n_nonfinite for layer in store.read_layers("m", "s")] == [0, 0, 2, 1]
    assert list(store.list_models()["nonfinite_layers"]) == ["2, 3"]


def _record(name, model_id, n_layers, hidden):
    from magdash.store import ModelRecord

    return ModelRecord(
        name=name, model_id=model_id, source="test", fingerprint="f", dtype="float32", transformers_version="",
        architecture="test", n_blocks=n_layers - 1, hidden_size=hidden,
        layer_labels=tuple(f"layer {i}" for i in range(n_layers)),
    )


def test_a_flagged_layer_is_left_out_and_the_others_are_unchanged(rng):
    magnitudes = np.arange(1, 21, dtype=np.float64)
    clean = [rng.normal(size=(20, 5, 16)) * magnitudes[:, None, None] ** 0.3 for _ in range(5)]
    poisoned = [layer.copy() for layer in clean]
    poisoned[3][7, 2, 11] = np.inf
    params = AnalysisParams(n_boot=200)
    reference = run_analysis(((f"l{i}", v) for i, v in enumerate(clean)), magnitudes, n_blocks=4, params=params)
    result = run_analysis(((f"l{i}", v) for i, v in enumerate(poisoned)), magnitudes, n_blocks=4, params=params)
    assert result.nonfinite_layers == {3: 1} and reference.nonfinite_layers == {}
    for measure in params.measures:
        alphas, expected = result.alphas(measure), reference.alphas(measure)
        assert np.isnan(alphas[3]) and np.isfinite(expected[3])
        np.testing.assert_array_equal(np.delete(alphas, 3), np.delete(expected, 3))
        assert result.hypotheses[measure].n_valid == reference.hypotheses[measure].n_valid - 1
    assert np.isnan(result.geometry.loc[3, "rsa_log_euclidean"])
    assert "layer 3 holds Inf/NaN" in result.warnings()[0]
    assert reference.warnings() == []
    restored = type(result).from_payload(result.to_payload())
    assert restored.nonfinite_layers == {3: 1} and restored.warnings() == result.warnings()


@pytest.fixture(scope="module")
def overflowing_model(tmp_path_factory) -> Path:
    """A tiny Llama whose block-2 MLP writes about 6e5 into the residual stream: fine in float32,
    beyond float16's 65,504, so block 2 gives Inf and the layers after it Inf or NaN."""
    import torch
    from transformers import AutoModelForCausalLM

    folder = build_tiny_model(tmp_path_factory.mktemp("models") / "overflow", "llama")
    model = AutoModelForCausalLM.from_pretrained(folder)
    with torch.no_grad():
        model.model.layers[1].mlp.down_proj.weight.mul_(1e8)
    model.save_pretrained(folder, safe_serialization=True)
    return folder


@pytest.fixture(scope="module")
def overflow_store(overflowing_model, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("overflow") / "store.duckdb"
    store = Store(path)
    stimuli = StimulusSet("s", PAPER_CARRIERS, MAGNITUDES)
    extract(str(overflowing_model), stimuli, store, name="fp16", dtype="float16")
    extract(str(overflowing_model), stimuli, store, name="fp32", dtype="float32")
    return path


def test_real_float16_overflow_is_flagged_per_layer(overflow_store):
    store = Store(overflow_store)
    total = len(MAGNITUDES) * len(PAPER_CARRIERS)
    assert store.nonfinite_counts("fp16", "s") == {2: total, 3: total, 4: total}
    assert store.nonfinite_counts("fp32", "s") == {}
    result = analyze(store, "fp16", "s", AnalysisParams(n_boot=0))
    assert set(result.nonfinite_layers) == {2, 3, 4}
    assert np.isfinite(result.alphas("eucl")[1]) and np.isnan(result.alphas("eucl")[2:]).all()


@pytest.mark.slow
def test_the_cli_warns_on_stderr_and_keeps_json_clean(overflow_store, capsys):
    store = str(overflow_store)
    assert main(["analyze", "--model", "fp16", "--store", store, "--json", "--n-boot", "0"]) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert [layer["eucl"]["alpha"] is None for layer in document["layers"]] == [True, False, True, True, True]
    assert "magdash: warning: fp16: layers 2, 3, 4 hold Inf/NaN" in captured.err
    assert main(["compare", "--model", "fp16", "--model", "fp32", "--store", store, "--n-boot", "0"]) == 0
    assert "fp16: layers 2, 3, 4" in capsys.readouterr().err
    assert main(["depth", "--model", "fp16", "--store", store, "--json", "--n-boot", "0"]) == 0
    captured = capsys.readouterr()
    assert [layer["layer"] for layer in json.loads(captured.out)["layers"]] == [0, 1]
    assert "layers 2, 3, 4" in captured.err
    assert main(["list", "--store", store]) == 0
    assert "Inf/NaN vectors at layers 2, 3, 4" in capsys.readouterr().out
    assert main(["analyze", "--model", "fp32", "--store", store, "--n-boot", "0"]) == 0
    # fp32 holds no Inf/NaN; without CIs the only line left says the carrier check is not judged.
    assert [line for line in capsys.readouterr().err.splitlines() if "warning" in line] == [
        "magdash: warning: fp32: V_eucl, V_residual, V_proj: whether one carrier drives the result is not judged "
        "without the core layers' CIs (n_boot = 0 or bootstrap_layers = 'none')"]


@pytest.mark.slow
def test_the_app_shows_the_warning_in_the_sidebar(overflow_store, monkeypatch):
    from streamlit.testing.v1 import AppTest

    scan_component_manifests_once()
    monkeypatch.setenv("MAGDASH_STORE", str(overflow_store))
    app = AppTest.from_file(str(APP), default_timeout=300)
    app.query_params.update({"model": "fp16", "stimuli": "s"})
    app.run()
    assert not app.exception
    warnings = [str(element.value) for element in app.sidebar.warning]
    assert any("Inf/NaN" in text and "2, 3, 4" in text for text in warnings), warnings
