"""The probes' sentences make no claim their numbers do not carry: without bootstrap resamples
no band, no verdict on the baseline and no test of beta; with them, the verdicts follow the
intervals and the permutation p."""

from __future__ import annotations

import numpy as np
import pytest

from magdash.probes.findings import baseline_sentence, exponent_sentence, probe_findings
from magdash.probes.probe import run_probes
from magdash.probes.probe_params import ProbeParams
from tests.probes.support import MAGNITUDES, planted_layer


@pytest.fixture(scope="module")
def layers():
    first, _ = planted_layer(noise="weber", size=0.1, seed=1, offsets=0.5, isotropic=0.05)
    second, _ = planted_layer(noise="weber", size=0.1, seed=2, offsets=0.5, isotropic=0.05)
    return [("a", first), ("b", second)]


def test_without_resamples_nothing_is_judged(layers):
    result = run_probes(layers, MAGNITUDES, ProbeParams(n_boot=0, targets=("log",)), model="planted")
    band, baseline, exponent = probe_findings(result)
    assert "no band of layers that cannot be told from it is computed, so this is no choice of a best layer" in band
    assert "whether it exceeds the baseline is not tested" in baseline and "not shown" not in baseline
    assert "beta is not tested against it" in exponent
    assert "says nothing" not in exponent and "changes with n" not in exponent


def test_with_resamples_the_verdicts_follow_the_numbers(layers):
    result = run_probes(layers, MAGNITUDES, ProbeParams(n_boot=500, targets=("log",)), model="planted")
    scores = result.score_table("magnitude", "log").set_index("layer")
    assert (scores["r2_over_baseline_low"] > 0).all()
    assert "the probe adds" in baseline_sentence(result, 0) and "not shown" not in baseline_sentence(result, 0)
    scaling = result.decoded_scaling.set_index("layer")
    for layer in (0, 1):
        expected = ("says nothing about the model's noise" if scaling.loc[layer, "beta_null_p"] >= 0.05
                    else "changes with n beyond")
        assert expected in exponent_sentence(result, None, layer)
    assert np.isfinite(scaling["beta_null_p"]).all()
