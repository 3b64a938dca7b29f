"""``magdash probe``: the text table, --json (NaN as null) with the @random control and the
comparison, --no-control, --report, the cache, and a design the probes cannot use as one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from magdash.cli import main
from magdash.presentation.report import extract_manifest
from magdash.store import Store
from tests.support import copy_store

MAGNITUDES = (np.arange(1, 11) * 4.0).tolist()
CARRIERS = [f"Carrier {i} holds {{n}} items." for i in range(4)]
FAST = ["--probe-n-boot", "20", "--quiet"]


def arrays(code: float, seed: int, carriers: int = 4) -> np.ndarray:
    """(10 magnitudes, ``carriers``, 3 layers, 6 d): log n along one direction, stronger by layer."""
    rng = np.random.default_rng(seed)
    signal = np.log(MAGNITUDES)[:, None, None, None] * code * np.arange(3)[None, None, :, None] * rng.normal(size=6)
    return (signal + 0.1 * rng.normal(size=(10, carriers, 3, 6))).astype(np.float32)


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    path = tmp_path_factory.mktemp("probe-cli") / "store.duckdb"
    store = Store(path)
    store.import_arrays("planted", arrays(2.0, 0), MAGNITUDES, carriers=CARRIERS, stimuli="toy")
    store.import_arrays("planted@random", arrays(0.0, 1), MAGNITUDES, carriers=CARRIERS, stimuli="toy")
    store.import_arrays("two", arrays(2.0, 2, carriers=2), MAGNITUDES, carriers=["A {n}.", "B {n}."], stimuli="pair")
    return path


@pytest.fixture
def path(made, tmp_path):
    return str(copy_store(made, tmp_path))


def test_the_text_table_shows_every_layer_with_the_random_control(path, capsys):
    assert main(["probe", "--model", "planted", "--store", path, *FAST]) == 0
    out = capsys.readouterr().out
    assert "model: planted   stimuli: toy   10 magnitudes x 4 carriers   20 bootstrap resamples" in out
    assert "[log] probe of log n" in out and "[linear] probe of n" in out
    rows = [line for line in out.splitlines() if line.strip().startswith(("0 ", "1 ", "2 "))]
    assert len(rows) == 2 * 3 and all("@random" not in row for row in rows)
    assert "@random R²" in out and "baseline" in out and "within" in out and "null" in out
    assert "baseline: the held-out R² of each number's digit count alone, on the probe's folds" in out
    # the sentences: the band (not a winner unless alone), the baseline, the exponent against its null
    assert "planted: a linear probe of log n decodes unseen magnitudes" in out
    assert "Knowing only each number's digit count gives" in out or "is not shown to exceed what knowing only" in out
    assert "a read-out whose error is the same ratio at every n gives" in out


@pytest.mark.slow
def test_json_holds_the_model_the_control_and_the_comparison_with_nan_as_null(path, capsys):
    assert main(["probe", "--model", "planted", "--store", path, "--json", *FAST]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["model"] == "planted" and document["params"]["n_boot"] == 20
    assert document["directions"][0]["cosine_previous_layer"] is None  # NaN at the first layer
    assert document["control"]["model"] == "planted@random"
    assert len(document["comparison"]) == len(document["scores"])
    assert len(document["scaling_comparison"]) == len(document["decoded_scaling"])
    assert {"baseline_r2", "r2_within_strata", "r2_over_baseline_low"} <= set(document["scores"][0])
    assert {"beta_null", "beta_null_p", "note"} <= set(document["decoded_scaling"][0])
    assert document["strata_by"] == "digit count" and len(document["strata"]) == 10
    assert sum(row["best"] for row in document["best_layers"]) == 2  # one best layer per target
    last = [row for row in document["scores"] if row["layer"] == 2 and row["scheme"] == "carrier"
            and row["target"] == "log" and row["task"] == "real"]
    assert last[0]["r2"] > 0.9
    assert main(["probe", "--model", "planted", "--store", path, "--json", "--no-control", *FAST]) == 0
    alone = json.loads(capsys.readouterr().out)
    assert alone["control"] is None and alone["comparison"] is None and alone["scaling_comparison"] is None
    assert alone["scores"] == document["scores"]  # the same probes, from the cache


@pytest.mark.slow
def test_the_report_and_the_cache(path, tmp_path, capsys, monkeypatch):
    report = tmp_path / "probes.html"
    assert main(["probe", "--model", "planted", "--store", path, "--report", str(report), "--layer", "1", *FAST]) == 0
    document = report.read_text(encoding="utf-8")
    assert ">Probes: is magnitude decodable? (planted)</h2>" in document
    assert "Decoded magnitude against n, layer 1 of planted" in document
    manifest = extract_manifest(document)
    assert [m["name"] for m in manifest["models"]] == ["planted", "planted@random"]
    assert manifest["probe_parameters"]["n_boot"] == 20 and manifest["models"][0]["probe_from_cache"] is False
    capsys.readouterr()

    def no_second_computation(*args, **kwargs):
        raise AssertionError("the probes were computed again")

    monkeypatch.setattr("magdash.probes.probe.run_probes", no_second_computation)
    assert main(["probe", "--model", "planted", "--store", path, *FAST]) == 0
    with pytest.raises(AssertionError, match="computed again"):
        main(["probe", "--model", "planted", "--store", path, "--no-cache", *FAST])


def test_too_few_carriers_is_one_line_saying_what_is_needed(path, capsys):
    before = Store(path).metric_table("probes")
    assert main(["probe", "--model", "two", "--store", path, *FAST]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines == ["magdash: error: held-out carriers need at least 3 carriers, got 2: each training fold must "
                     "keep two contexts, so the probe can tell magnitude from context, and each magnitude needs two "
                     "held-out predictions to have a spread across carriers"]
    assert Store(path).metric_table("probes").equals(before)
