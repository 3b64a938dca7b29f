"""End to end on a tiny decoder with a PLANTED readout (tests/test_trial_steering.py: the A-vs-B logit
difference reads one known direction u, carried to the answer by block READER_BLOCK): steered along u
against the random and orthogonal nulls, the layers before the reader come out specific and
functionally relevant, the layers after it move nothing."""

from __future__ import annotations

import numpy as np
import pytest

from magdash.extract_params import ExtractParams
from magdash.sources.resolve import resolve_model
from magdash.steering.directions import direction_kinds, orthogonal_directions, random_directions
from magdash.steering.steer_params import SteerParams
from magdash.steering.steer_result import summarise_steering
from magdash.trial_extraction import load_for_trials
from magdash.trial_steering import steer_trials
from tests.test_trial_steering import READER_BLOCK, build_planted_model, design_trials

UNIT = 0.003
"""One dose unit: a push the planted reader notices, small enough that p(A) stays far from 1, where the
readout is near linear in the push's component along u (a saturated p would compress specificity)."""


@pytest.fixture(scope="module")
def steered(tmp_path_factory):
    folder, u, _ = build_planted_model(tmp_path_factory.mktemp("models") / "planted")
    loaded = load_for_trials(resolve_model(str(folder)), ExtractParams())
    params = SteerParams(doses=(0.5, 1.0), n_boot=200)
    pushes = np.vstack([u[None, :], random_directions(params.n_random, u.size, params.seed),
                        orthogonal_directions(u, params.n_orthogonal, params.seed)]) * UNIT
    kinds = direction_kinds(params)
    trials = design_trials()
    layers = range(len(loaded.layer_labels))
    frame = steer_trials(loaded, trials, {layer: pushes for layer in layers}, params.doses, "a", 8, labels=kinds,
                         chat=False)
    baseline = frame.drop_duplicates("trial_id").loc[:, ["trial_id", "p_a_unpatched", "p_b_unpatched"]].rename(
        columns={"p_a_unpatched": "p_a", "p_b_unpatched": "p_b"}).merge(trials[["trial_id", "larger"]], on="trial_id")
    return summarise_steering(frame, baseline, kinds, params, dose_units=dict.fromkeys(layers, UNIT)), u


def test_the_layers_before_the_reader_are_specific_and_relevant(steered):
    result, u = steered
    before = result.layers[result.layers["layer"] < READER_BLOCK]
    assert len(before) == READER_BLOCK
    assert before["relevant"].all() and (before["share_above_random"] == 1.0).all()
    # A random unit direction r holds |cos(r, u)| of u: near linear, specificity is the inverse of its mean
    # over the null (about sqrt(pi d / 2), several times 1); an orthogonal one holds none of u and moves nothing.
    expected = 1 / np.abs(random_directions(10, u.size, 42) @ u).mean()
    assert before["specificity"].to_numpy() == pytest.approx(expected, rel=0.15)
    assert (before["specificity_low"] > 3).all()
    assert (before["specificity_orthogonal"] > 1e3).all()
    # Pushing a's number along u raises p(A): the model chooses the pushed operand more.
    assert (before["shift"] > 0).all() and (before["shift_low"] > 0).all()
    assert np.abs(before["random_shift"]).max() < before["shift"].min()
    assert before["option_mass"].to_numpy() == pytest.approx(1.0, abs=0.1)


def test_the_layers_after_the_reader_move_nothing(steered):
    result, _ = steered
    after = result.layers[result.layers["layer"] >= READER_BLOCK]
    assert not after.empty
    assert np.abs(after["magnitude_effect"]).max() < 1e-9 and not after["relevant"].any()
    assert result.relevant_layers() == list(range(READER_BLOCK))
