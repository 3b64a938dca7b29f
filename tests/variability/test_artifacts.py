"""Artifacts the analysis looks for itself (magdash/variability/artifacts.py), on planted vectors
and hand-computed cases: outlier vectors named exactly, a carrier that drives the result, the
points the outlier rule dropped, and leaving carriers out."""

from __future__ import annotations

import math

import numpy as np
import pytest

from magdash.caveats import Severity
from magdash.cli.common import command_line_leave_out
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
    assert "magnitudes 1-9 at layers 1-3" in outlier_line and "--exclude-carrier" not in outlier_line
    # Each surface says how to leave the carrier out in its own words: Python's parameter here,
    # the command line's option (magdash.cli.common.command_line_leave_out), the sidebar's caption.
    [python] = [line for line in result.warnings() if line.startswith("planted: carrier 2")]
    assert python.endswith("(exclude_carriers=(2,) leaves it out)")
    [caveat] = [c for c in result.caveats() if "norm over" in c.text]
    assert caveat.line(command_line_leave_out).endswith("(--exclude-carrier 2 leaves it out)")
    assert caveat.line(lambda _carrier: "") == f"planted: {caveat.text}"
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
    """One rule: the mean without the carrier is more than the half-width from the full mean; a sign flip
    counts only then."""
    rows = carrier_influence(0.10, 0.05, [0.12, 0.20, -0.01, 0.0501, 0.04, math.nan])
    assert [(r.sign_differs, r.drives) for r in rows] == [
        (False, False), (False, True), (True, True), (False, False), (False, True), (False, False)]
    assert rows[1].how() == "by more than its CI half-width 0.05"
    assert rows[2].how() == "by more than its CI half-width 0.05, and changes its sign"
    # The case: 0.00137 -> -0.0000944 changes the sign by 0.00147, inside a half-width of 0.01: noise.
    [noise] = carrier_influence(0.00137, 0.01, [-0.0000944])
    assert noise.sign_differs and not noise.drives and noise.judged
    [beyond] = carrier_influence(0.00137, 0.01, [-0.0150])  # the same flip, 0.0164 away: beyond it
    assert beyond.sign_differs and beyond.drives
    no_ci = carrier_influence(0.10, math.nan, [0.5, -0.5])
    assert [(r.drives, r.judged) for r in no_ci] == [(False, False), (False, False)]  # no CIs: never by the sign


def test_a_carrier_inside_the_uncertainty_is_not_a_warning_and_one_beyond_it_is():
    """Planted: V_eucl flat in n in every carrier (true alpha 0: the mean core alpha's sign is noise); then
    carrier 4 alone spreads as n^1 at every layer, which the others do not."""
    rng = np.random.default_rng(0)
    base = rng.normal(size=(5, MAGNITUDES.size, len(PAPER_CARRIERS), 16))

    def with_tilt(tilt: float) -> AnalysisResult:
        layers = base.copy()
        layers[:, :, 4] *= (MAGNITUDES ** tilt)[None, :, None]
        return analyse(layers)

    quiet = with_tilt(0.0)
    influences = quiet.carrier_influence("eucl")
    flips = [item for item in influences if item.sign_differs]
    assert flips, "the planted noise around 0 changes the sign without some carrier"
    assert all(abs(item.mean_without - item.mean_all) < item.half_width for item in flips)
    assert not [i for i in influences if i.drives]  # the old rule (any sign change) flagged them
    assert not [line for line in quiet.artifact_warnings() if "leaving out" in line]
    loud = with_tilt(1.0)
    assert [item.carrier for item in loud.carrier_influence("eucl") if item.drives] == [4]
    [line] = [line for line in loud.artifact_warnings() if "V_eucl: leaving out" in line]
    # Without carrier 4 the mean falls back to about 0, so its sign changes too: beyond the half-width, that counts.
    assert "carrier 4" in line and "by more than its CI half-width" in line and "and changes its sign" in line
    [caveat] = [c for c in loud.caveats() if "V_eucl: leaving out" in c.text]
    assert caveat.severity == Severity.CAUTION and caveat.measures == ("eucl",) and caveat.model == "planted"
    assert caveat.carrier == 4


def test_without_an_interval_the_carrier_check_is_a_note_not_a_verdict():
    result = analyse(planted(), AnalysisParams(n_boot=0))
    assert not [i for m in PARAMS.measures for i in result.carrier_influence(m) if i.drives]
    [note] = [c for c in result.caveats() if "not judged" in c.text]
    assert note.severity == Severity.NOTE and set(note.measures) == set(PARAMS.measures)
    # The sink is still the serious caveat, of every measure, first in the lines.
    sink = result.caveats()[0]
    assert (sink.severity, sink.measures, sink.carrier) == (Severity.SERIOUS, (), SINK_CARRIER)
    assert result.warnings()[0].startswith("planted: carrier 2")


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
