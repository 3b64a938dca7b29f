"""Input checks (each refusal says what is needed), the labels and the control task."""

from __future__ import annotations

import numpy as np
import pytest

from magdash.errors import AnalysisError
from magdash.probes.labels import Labels, NonFiniteVectors, check_magnitudes, check_vectors, control_permutation
from magdash.probes.probe import probe_layer
from magdash.probes.probe_params import ProbeParams

PARAMS = ProbeParams(n_boot=20)


def layer(n_magnitudes=10, n_carriers=4, dim=6, seed=0):
    return np.random.default_rng(seed).standard_normal((n_magnitudes, n_carriers, dim)).astype(np.float32)


def test_too_few_magnitudes_for_the_held_out_magnitude_folds():
    with pytest.raises(AnalysisError, match=r"5 folds need at least 7 magnitudes .* got 6; add magnitudes or lower"):
        probe_layer(layer(6), np.arange(1, 7), PARAMS)
    probe_layer(layer(6), np.arange(1, 7), ProbeParams(n_boot=20, magnitude_folds=4))


def test_two_carriers_are_refused_with_the_reason():
    with pytest.raises(AnalysisError, match=r"at least 3 carriers, got 2: each training fold must keep two contexts"):
        probe_layer(layer(n_carriers=2), np.arange(1, 11), PARAMS)


def test_non_positive_magnitudes_are_refused_for_the_log_target_only():
    magnitudes = np.arange(0, 10)
    with pytest.raises(AnalysisError, match=r"log target needs positive magnitudes, got \[0.0\]"):
        probe_layer(layer(), magnitudes, PARAMS)
    linear = probe_layer(layer(), magnitudes, ProbeParams(n_boot=20, targets=("linear",)))
    decoded = linear.decoded.set_index("magnitude")
    assert np.isnan(decoded.loc[0, "weber_fraction"]) and np.isfinite(decoded.loc[1, "weber_fraction"])


@pytest.mark.parametrize(("magnitudes", "message"), [
    ([1, 2, 2, 3, 4, 5, 6, 7, 8, 9], r"each magnitude must appear once .* repeated: \[2.0\]"),
    ([1, 2, np.nan, 4, 5, 6, 7, 8, 9, 10], "finite"),
    ([[1, 2], [3, 4]], "one magnitude per row"),
])
def test_bad_magnitudes(magnitudes, message):
    with pytest.raises(AnalysisError, match=message):
        check_magnitudes(magnitudes, PARAMS)


@pytest.mark.parametrize(("vectors", "message"), [
    (np.zeros((10, 4)), r"shape \(n_magnitudes, n_carriers, d\), got shape \(10, 4\)"),
    (np.zeros((9, 4, 3)), "vectors for 9 magnitudes, expected 10"),
    (np.zeros((10, 4, 0)), "no dimensions"),
])
def test_bad_vector_shapes(vectors, message):
    with pytest.raises(AnalysisError, match=message):
        check_vectors(vectors, 10, PARAMS)


def test_more_carrier_folds_than_carriers():
    with pytest.raises(AnalysisError, match="carrier_folds=5 exceeds the 4 carriers"):
        check_vectors(layer(), 10, ProbeParams(carrier_folds=5))


def test_inf_and_nan_vectors_are_refused_naming_their_rows():
    vectors = layer()
    vectors[2, 1, 3] = np.inf
    vectors[7, 0, 0] = np.nan
    with pytest.raises(NonFiniteVectors, match=r"2 vector\(s\) .* Inf/NaN \(magnitude rows 2, 7\).*bfloat16") as caught:
        probe_layer(vectors, np.arange(1, 11), PARAMS)
    assert caught.value.count == 2 and isinstance(caught.value, AnalysisError)


def test_the_control_task_permutes_labels_per_magnitude_the_same_for_every_carrier():
    magnitudes = np.array([1.0, 2, 5, 10, 20, 50, 100])
    labels = Labels.for_design(magnitudes, ProbeParams(control_seed=3))
    assert labels.columns == (("real", "log"), ("real", "linear"), ("control", "log"), ("control", "linear"))
    permutation = control_permutation(magnitudes.size, 3)
    assert sorted(permutation) == list(range(magnitudes.size))
    np.testing.assert_array_equal(labels.values[:, labels.index("control", "linear")], magnitudes[permutation])
    np.testing.assert_array_equal(labels.values[:, labels.index("control", "log")], np.log(magnitudes[permutation]))
    np.testing.assert_array_equal(labels.reference[:, labels.index("control", "log")], magnitudes[permutation])
    rows = labels.rows(3)
    assert rows.shape == (21, 4)
    np.testing.assert_array_equal(rows[3:6], np.repeat(labels.values[1:2], 3, axis=0))  # every carrier of magnitude 1
    assert not np.array_equal(control_permutation(magnitudes.size, 4), permutation)
    np.testing.assert_array_equal(control_permutation(magnitudes.size, 3), permutation)
