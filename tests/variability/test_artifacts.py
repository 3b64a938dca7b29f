"""Artifacts the analysis looks for itself (magdash/variability/artifacts.py), on planted vectors
and hand-computed cases: outlier vectors named exactly, a carrier that drives the result, the
points the outlier rule dropped, and leaving carriers out."""

from __future__ import annotations

import math

import numpy as np
import pytest

from magdash.errors import AnalysisError
from magdash.norm_outliers import OUTLIER_NORM_FACTOR
from magdash.params import ranges
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES
from magdash.variability.analysis import AnalysisResult, run_analysis
from magdash.variability.analysis_params import AnalysisParams
from magdash.variability.artifacts import carrier_influence, outlier_vector_mask

MAGNITUDES = np.asarray(PAPER_MAGNITUDES, dtype=np.float64)
SINK_CARRIER, SINK_MAGNITUDES, SINK_LAYERS = 2, (1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3)
PARAMS = AnalysisParams(n_boot=200)


def planted(sink: bool = True, seed: int = 5) -> np.ndarray:
    """(layers, magnitudes, carriers, d): V ~ n^0.1 everywhere; with ``sink`` carrier 2's vectors
    of magnitudes 1-9 at layers 1-3 are 100x the others' norm (a first-position sink)."""
    rng = np.random.default_rng(seed)
    layers = rng.normal(size=(5, MAGNITUDES.size, len(PAPER_CARRIERS), 16))
    layers *= (MAGNITUDES ** 0.1)[None, :, None, None]
    layers[..., 0] += (20.0 + 3.0 * np.log(MAGNITUDES))[None, :, None]  # norms alike over magnitudes
    if sink:
        rows = [list(PAPER_MAGNITUDES).index(m) for m in SINK_MAGNITUDES]
        for layer in SINK_LAYERS:
            layers[layer][np.ix_(rows, [SINK_CARRIER])] *= 100.0
    return layers


def analyse(layers: np.ndarray, params: AnalysisParams = PARAMS) -> AnalysisResult:
    return run_analysis(((f"layer {i}", x) for i, x in enumerate(layers)), MAGNITUDES, n_blocks=4,
                        params=params, model="planted", carriers=PAPER_CARRIERS)


def test_outlier_vectors_are_flagged_exactly_and_named():
    result = analyse(planted())
    flagged = {(item.layer, item.magnitude, item.carrier) for item in result.outlier_vectors}
    assert flagged == {(layer, m, SINK_CARRIER) for layer in SINK_LAYERS for m in SINK_MAGNITUDES}
    assert all(item.norm_ratio > OUTLIER_NORM_FACTOR for item in result.outlier_vectors)
    lines = result.artifact_warnings()
    outlier_line = next(line for line in lines if "norm over" in line)
    assert "carrier 2 ('{n} was the value.')" in outlier_line
    assert "magnitudes 1-9 at layers 1-3" in outlier_line and "--exclude-carrier 2" in outlier_line
    assert any(line.startswith("planted: carrier 2") for line in result.warnings())
    assert analyse(planted(sink=False)).outlier_vectors == []


def test_a_carrier_that_drives_the_result_is_named_where_the_result_is():
    result = analyse(planted())
    drivers = {measure: [i.carrier for i in result.carrier_influence(measure) if i.drives]
               for measure in PARAMS.measures}
    assert SINK_CARRIER in drivers["proj"]
    line = next(line for line in result.artifact_warnings() if "V_proj: leaving out carrier 2" in line)
    assert "the result rests on that carrier" in line
    summary = result.to_json()
    assert summary["carrier_influence"]["proj"][SINK_CARRIER]["drives"] is True
    clean = analyse(planted(sink=False))
    assert not [i for m in PARAMS.measures for i in clean.carrier_influence(m) if i.sign_differs]


def test_leaving_the_carrier_out_removes_the_artifact_and_keeps_the_carriers_named():
    result = analyse(planted(), AnalysisParams(n_boot=200, exclude_carriers=(SINK_CARRIER,)))
    assert result.outlier_vectors == []
    assert result.carriers == list(PAPER_CARRIERS)
    assert all(np.isnan(alphas[:, SINK_CARRIER]).all() for alphas in result.carrier_alphas.values())
    assert not [line for line in result.artifact_warnings() if "carrier 2" in line]
    with pytest.raises(AnalysisError, match="the stimulus set has carriers 0 to 4"):
        analyse(planted(), AnalysisParams(exclude_carriers=(7,)))
    with pytest.raises(AnalysisError, match="leaves 1; V needs at least 2"):
        analyse(planted(), AnalysisParams(exclude_carriers=(0, 1, 2, 3)))


def test_the_dropped_points_are_said_with_their_magnitudes():
    result = analyse(planted())
    dropped = result.dropped_points("eucl")
    assert dropped and all(set(ms) <= set(SINK_MAGNITUDES) for ms in dropped.values())
    assert set(dropped) <= set(result.core_layers)
    line = next(line for line in result.artifact_warnings() if line.startswith("V_eucl: the 3x-median"))
    assert f"magnitude(s) {ranges(sorted({m for ms in dropped.values() for m in ms}))}" in line
    assert result.dropped_points("proj") == {}  # V_proj has no outlier rule


def test_the_carrier_rule_by_hand():
    rows = carrier_influence(0.10, 0.05, [0.12, 0.20, -0.01, math.nan])
    assert [(r.sign_differs, r.drives) for r in rows] == [(False, False), (False, True), (True, True), (False, False)]
    no_ci = carrier_influence(0.10, math.nan, [0.5, -0.5])
    assert [r.drives for r in no_ci] == [False, True]  # without CIs only the sign counts


def test_the_outlier_mask_and_ranges_by_hand():
    vectors = np.ones((3, 2, 4))
    vectors[1, 0] *= OUTLIER_NORM_FACTOR * 1.01
    assert outlier_vector_mask(vectors).tolist() == [[False, False], [True, False], [False, False]]
    assert not outlier_vector_mask(np.zeros((2, 2, 3))).any()
    assert ranges([9, 1, 2, 3, 5, 7, 8]) == "1-3, 5, 7-9" and ranges([4]) == "4"


def test_the_checks_survive_the_cache():
    result = analyse(planted())
    again = AnalysisResult.from_payload(result.to_payload())
    assert again.outlier_vectors == result.outlier_vectors and again.carriers == result.carriers
    assert again.artifact_warnings() == result.artifact_warnings()
