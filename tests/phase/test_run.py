"""``magdash depth``: JSON shape, planted transition through the store, all-token mode, cache."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from magdash import dashboard as db
from magdash.cli import build_parser, main
from magdash.cli.options import params_from_args
from magdash.names import control_name
from magdash.params import DEFAULT_N_BOOT
from magdash.phase.omega import isotropic_omega_mean
from magdash.phase.phase_params import PhaseParams
from magdash.runs.depth_runs import phase_from_store, phase_from_texts
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES

LAYER_KEYS = {"layer", "gamma", "omega_mean", "dip_p", "n_spikes", "mp_edge", "sigma2",
              "effective_rank", "participation_ratio"}
LABELS = ["embeddings", "block 1", "block 2", "block 3", "block 4 (pre-norm residual)",
          "final norm (post-norm)"]
DIM = 48


def planted_arrays(seed: int, solid_from: int = 2) -> np.ndarray:
    """(26 magnitudes, 5 carriers, 6 layers, d): isotropic before ``solid_from``, then sparse
    vectors built from 3 prototypes (object-like, 2 spikes)."""
    rng = np.random.default_rng(seed)
    n_mag, n_car = len(PAPER_MAGNITUDES), len(PAPER_CARRIERS)
    prototypes = np.zeros((3, DIM))
    for j in range(3):
        prototypes[j, rng.choice(DIM, 2, replace=False)] = 8.0
    layers = []
    for layer in range(len(LABELS)):
        noise = rng.standard_normal((n_mag, n_car, DIM))
        if layer < solid_from:
            layers.append(noise)
        else:
            labels = np.arange(n_mag * n_car).reshape(n_mag, n_car) % 3
            layers.append(prototypes[labels] + 0.2 * noise)
    return np.stack(layers, axis=2).astype(np.float32)


@pytest.fixture
def phase_store(store):
    store.import_arrays("planted", planted_arrays(1), PAPER_MAGNITUDES, carriers=PAPER_CARRIERS,
                        layer_labels=LABELS)
    store.import_arrays("planted@random", planted_arrays(2, solid_from=99), PAPER_MAGNITUDES,
                        carriers=PAPER_CARRIERS, layer_labels=LABELS)
    return store


def run_json(capsys, *args) -> dict:
    capsys.readouterr()
    assert main(["depth", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_shape_and_planted_transition(phase_store, capsys):
    payload = run_json(capsys, "--model", "planted", "--store", str(phase_store.path), "--n-boot", "200")
    assert {"model", "gamma_c", "layers"} <= set(payload)  # the original keys are kept
    assert payload["model"] == "planted"
    assert payload["gamma_c"] == pytest.approx(0.5)
    assert [row["layer"] for row in payload["layers"]] == list(range(6))
    for row in payload["layers"]:
        assert set(row) >= LAYER_KEYS
        assert row["mp_converged"] and isinstance(row["n_spikes"], int) and row["mp_cap"] > 0
    assert payload["layers"][5]["gamma"] is None  # post-norm layer: no depth fraction
    assert payload["layers"][1]["n_spikes"] == 0 and payload["layers"][3]["n_spikes"] == 2
    assert abs(payload["layers"][0]["omega_mean"] - isotropic_omega_mean(DIM)) < 0.02


@pytest.mark.slow
def test_control_is_reported_beside_the_model(phase_store, capsys):
    payload = run_json(capsys, "--model", "planted", "--store", str(phase_store.path), "--control")
    control = payload["control"]
    assert control["model"] == "planted@random"
    assert {"model", "gamma_c", "layers"} <= set(control)
    assert all(row["n_spikes"] == 0 for row in control["layers"])
    assert control_name("x:float16") == "x@random:float16"


@pytest.mark.slow
def test_missing_control_and_text_output(store, capsys):
    store.import_arrays("alone", planted_arrays(3), PAPER_MAGNITUDES, carriers=PAPER_CARRIERS,
                        layer_labels=LABELS)
    assert main(["depth", "--model", "alone", "--store", str(store.path), "--control"]) == 2
    assert "extract it first" in capsys.readouterr().err
    assert main(["depth", "--model", "alone", "--store", str(store.path)]) == 0
    out = capsys.readouterr().out
    assert "gamma_c (largest change of mean Omega): 0.500" in out
    assert "isotropic-Gaussian baseline" in out


@pytest.mark.slow
def test_the_cli_and_the_app_give_gamma_c_the_same_interval(phase_store, capsys):
    # Both take their phase parameters from PhaseParams: the same resamples, so the same interval.
    cli = params_from_args(PhaseParams, build_parser().parse_args(["depth", "--model", "planted"]))
    inventory = db.read_inventory(phase_store)
    view, _ = db.reconcile_view(db.ViewState(store=str(phase_store.path), model="planted"), inventory)
    app = db.phase_keys(view, inventory)[db.TRAINED_SERIES].params
    assert cli == app == PhaseParams() and cli.n_boot == DEFAULT_N_BOOT
    assert main(["depth", "--model", "planted", "--store", str(phase_store.path)]) == 0
    order = phase_from_store(phase_store, "planted", params=app).order
    expected = (f"(95% bootstrap interval {order.low:.3f}-{order.high:.3f}, {DEFAULT_N_BOOT} resamples of "
                "26 magnitudes x 5 carriers, each with all of its vectors)")
    out = capsys.readouterr().out
    assert expected in out and "rest on 26 magnitudes x 5 carriers" in out  # 5 carriers: a rough interval


def test_results_are_cached_in_the_store(phase_store, monkeypatch):
    first = phase_from_store(phase_store, "planted", params=PhaseParams(n_boot=0))

    def no_reading(*_args, **_kwargs):
        raise AssertionError("vectors read although the samples are cached")

    monkeypatch.setattr(type(phase_store), "read_layer", no_reading)
    monkeypatch.setattr(type(phase_store), "read_layers", no_reading)
    again = phase_from_store(phase_store, "planted", params=PhaseParams(n_boot=0))
    for before, after in zip(first.samples, again.samples, strict=True):
        np.testing.assert_array_equal(before.eigenvalues, after.eigenvalues)


def test_prompts_run_every_token_through_the_model(tiny_llama, tmp_path, capsys, monkeypatch):
    from transformers import AutoTokenizer

    text = " ".join(f"The count reached {n}. There are {n} items." for n in range(1, 61))
    prompts = tmp_path / "prompts.txt"
    prompts.write_text(text, encoding="utf-8")
    store_path = str(tmp_path / "s.duckdb")
    args = ["--model", str(tiny_llama), "--prompts", str(prompts), "--store", store_path,
            "--max-length", "64", "--n-boot", "50", "--device", "cpu"]
    payload = run_json(capsys, *args, "--control")
    assert {"model", "gamma_c", "layers", "control"} <= set(payload)
    assert len(payload["layers"]) == 5  # embeddings, 3 blocks, post-norm
    assert payload["layers"][4]["gamma"] is None
    assert math.isfinite(payload["gamma_c"]) and payload["control"]["model"].endswith("@random")

    result = phase_from_texts(str(tiny_llama), text, max_length=64, params=PhaseParams(n_boot=0), device="cpu")
    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    n_tokens = len(tokenizer(text, add_special_tokens=False)["input_ids"])
    assert {s.count for s in result.samples} == {n_tokens}  # every real token, no specials
    assert {s.dim for s in result.samples} == {32}
    # Each token keeps the chunk it came from (the bootstrap's unit), whatever order the batches ran in.
    from magdash.runs.depth_runs import document_chunks
    from magdash.sources import load_model, resolve_model

    chunks = document_chunks(load_model(resolve_model(str(tiny_llama)), device="cpu"), text, 64)
    per_chunk = [len(tokenizer(chunk, add_special_tokens=False)["input_ids"]) for chunk in chunks]
    assert len(chunks) > 2
    for sample in result.samples:
        assert sample.unit_names == ("chunk",)
        np.testing.assert_array_equal(np.bincount(sample.units[:, 0], minlength=len(chunks)), per_chunk)
    assert payload["gamma_c_units"] == {"chunk": len(chunks)}

    import magdash.sources

    def no_loading(*_args, **_kwargs):
        raise AssertionError("model loaded although the samples are cached")

    monkeypatch.setattr(magdash.sources, "load_model", no_loading)
    assert run_json(capsys, *args)["layers"] == payload["layers"]


def test_empty_prompts_file_is_a_user_error(tmp_path, tiny_llama, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_text("  \n", encoding="utf-8")
    assert main(["depth", "--model", str(tiny_llama), "--prompts", str(empty),
                 "--store", str(tmp_path / "s.duckdb")]) == 2
    assert "empty" in capsys.readouterr().err
