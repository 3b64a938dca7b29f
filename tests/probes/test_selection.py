"""The band of best layers: by hand, on planted scores that can and cannot be told apart, and
over a run whose layers carry the same code or none."""

from __future__ import annotations

import math

import numpy as np
import pytest

from magdash.probes.findings import band_sentence
from magdash.probes.probe import run_probes
from magdash.probes.probe_params import ProbeParams
from magdash.probes.selection import best_band
from tests.probes.support import MAGNITUDES, planted_layer


def test_the_gap_bound_by_hand():
    r2 = np.array([0.5, 0.9, 0.85])
    replicates = np.array([[0.5, 0.9, 0.80], [0.6, 0.8, 0.90], [0.4, 0.9, 0.85], [0.5, 1.0, 0.85]])
    best, bounds, band = best_band(r2, replicates, ci=0.9)
    # level (1 - 0.9) / 2 = 0.05 of the paired gaps R*_1 - R*_l
    assert best == 1 and bounds[1] == 0.0
    assert bounds[0] == pytest.approx(np.quantile([0.4, 0.2, 0.5, 0.5], 0.05))
    assert bounds[2] == pytest.approx(np.quantile([0.1, -0.1, 0.05, 0.15], 0.05))
    assert band.tolist() == [False, True, True]


def test_scores_that_draws_tell_apart_leave_the_best_alone_and_noise_gives_a_band():
    rng = np.random.default_rng(0)
    common = rng.normal(0, 0.02, (2000, 1))  # the draws move every layer together
    apart = np.array([0.60, 0.90, 0.70, 0.80])
    best, bounds, band = best_band(apart, apart + common + rng.normal(0, 0.005, (2000, 4)), 0.95)
    assert best == 1 and band.tolist() == [False, True, False, False] and (bounds[[0, 2, 3]] > 0).all()
    close = np.array([0.900, 0.901, 0.899, 0.600])
    best, _, band = best_band(close, close + common + rng.normal(0, 0.01, (2000, 4)), 0.95)
    assert best == 1 and band.tolist() == [True, True, True, False]


def test_without_draws_or_scores():
    best, bounds, band = best_band(np.array([0.2, 0.5]), np.empty((0, 2)), 0.95)
    assert best == 1 and np.isnan(bounds).all() and band.tolist() == [False, True]
    best, bounds, band = best_band(np.array([math.nan, math.nan]), np.empty((0, 2)), 0.95)
    assert best == -1 and not band.any()
    # a layer without a score is never in the band, and the level counts the layers with one
    best, _, band = best_band(np.array([0.9, math.nan, 0.9]), np.array([[0.9, math.nan, 0.9], [0.8, 1.0, 0.9]]), 0.95)
    assert best == 0 and band.tolist() == [True, False, True]


def test_layers_with_the_same_code_share_the_band_and_an_empty_layer_is_out():
    first, _ = planted_layer(seed=1, offsets=0.5, isotropic=0.05)
    second, _ = planted_layer(seed=2, offsets=0.5, isotropic=0.05)
    empty = np.random.default_rng(3).standard_normal(first.shape).astype(np.float32)
    result = run_probes([("a", first), ("noise", empty), ("b", second)], MAGNITUDES,
                        ProbeParams(n_boot=400, targets=("log",)), model="planted")
    best, band = result.best_and_band("log")
    assert best in (0, 2) and band == [0, 2]
    rows = result.best_layers.set_index("layer")
    assert rows.loc[1, "gap_low"] > 0.5 and not rows.loc[1, "in_band"]
    assert "about equally well at layers 0, 2 (2 of 3 probed" in band_sentence(result)
    alone = run_probes([("a", first), ("noise", empty)], MAGNITUDES, ProbeParams(n_boot=400, targets=("log",)),
                       model="planted")
    assert "decodes unseen magnitudes best at layer 0 (a) at" in band_sentence(alone)
    unbounded = run_probes([("a", first), ("b", second)], MAGNITUDES, ProbeParams(n_boot=0, targets=("log",)))
    assert "no band of layers that cannot be told from it is computed" in band_sentence(unbounded)
