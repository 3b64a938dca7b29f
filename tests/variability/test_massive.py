"""Alpha with the massive-activation dimensions dropped: planted data whose answer is known."""

from __future__ import annotations

import json

import numpy as np
import pytest

from magdash.cli import main
from magdash.errors import AnalysisError
from magdash.runs.analysis_runs import massive_control
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES
from magdash.variability.analysis_params import AnalysisParams

MAGNITUDES = np.asarray(PAPER_MAGNITUDES, dtype=np.float64)
ALPHA = -0.3
MASSIVE = [2, 40]


def massive_arrays(seed: int = 4, dim: int = 64, n_layers: int = 5) -> np.ndarray:
    """V_eucl proportional to n^ALPHA in the ordinary dimensions; two massive ones (mean ~500)
    whose noise does not scale with n and, being far larger, hides the planted exponent."""
    rng = np.random.default_rng(seed)
    out = np.empty((MAGNITUDES.size, len(PAPER_CARRIERS), n_layers, dim), dtype=np.float32)
    for layer in range(n_layers):
        means = np.outer(np.log(MAGNITUDES), rng.normal(size=dim)) * 4.0
        noise = rng.normal(size=(MAGNITUDES.size, len(PAPER_CARRIERS), dim)) * (MAGNITUDES**ALPHA)[:, None, None]
        vectors = means[:, None, :] + (0.0 if layer == 0 else noise)
        if layer:
            vectors[..., MASSIVE] = 500.0 + 50.0 * rng.normal(size=(MAGNITUDES.size, len(PAPER_CARRIERS), 2))
        out[:, :, layer] = vectors
    return out


@pytest.fixture
def massive_store(store):
    store.import_arrays("massive", massive_arrays(), PAPER_MAGNITUDES, carriers=list(PAPER_CARRIERS))
    return store


def test_dropping_the_massive_dimensions_recovers_the_planted_exponent(massive_store):
    control = massive_control(massive_store, "massive", params=AnalysisParams(n_boot=0, measures=("eucl",)))
    summary = control.summary().set_index("measure").loc["eucl"]
    assert abs(summary["mean_alpha_raw"]) < 0.1  # the massive noise, which does not scale with n
    assert summary["mean_alpha_dropped"] == pytest.approx(ALPHA, abs=0.05)
    assert summary["shift"] == pytest.approx(summary["mean_alpha_dropped"] - summary["mean_alpha_raw"])
    layers = control.layers()
    assert sorted(control.dropped.massive_dims[1]) == MASSIVE and control.dropped.massive_dims[0] == []
    assert set(layers.loc[layers["layer"] > 0, "n_massive"]) == {2}
    assert control.raw.params.massive == "keep" and control.dropped.params.massive == "drop"
    assert not control.raw.massive_dims  # nothing dropped from the raw analysis
    with pytest.raises(AnalysisError, match="keeps or drops"):
        AnalysisParams(massive="standardise")


@pytest.mark.slow
def test_the_cli_reports_the_control_beside_the_raw_alpha(massive_store, capsys):
    args = ["analyze", "--model", "massive", "--store", str(massive_store.path), "--n-boot", "0",
            "--measures", "eucl", "--massive-control"]
    assert main([*args, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    control = document["massive_control"]
    assert control["massive_ratio"] == 10.0 and control["summary"][0]["measure"] == "eucl"
    assert control["summary"][0]["mean_alpha_dropped"] == pytest.approx(ALPHA, abs=0.05)
    assert document["params"]["massive"] == "keep"
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "massive-dimension control" in out and "dimensions dropped by layer: 1 [" in out
    assert "mean core alpha raw" in out
    assert main(["analyze", "--model", "massive", "--store", str(massive_store.path), "--n-boot", "0",
                 "--massive", "drop", "--json"]) == 0
    dropped = json.loads(capsys.readouterr().out)
    assert dropped["params"]["massive"] == "drop" and sorted(dropped["massive_dims"]["1"]) == MASSIVE
