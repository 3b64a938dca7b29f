"""The strata's baseline and the R² within strata: by hand, on the paper's design (where 86.5 % of
the variance of ln n lies between digit counts), and on planted layers that encode only the digit
count or log n itself."""

from __future__ import annotations

import math

import numpy as np
import pytest

from magdash.errors import AnalysisError
from magdash.probes.baseline import (
    DIGITS,
    DIGITS_AND_TOKENS,
    magnitude_strata,
    stratum_mean_predictions,
    within_strata_r2,
)
from magdash.probes.crossval import splits
from magdash.probes.findings import baseline_sentence
from magdash.probes.probe import probe_layer, run_probes
from magdash.probes.probe_params import ProbeParams
from magdash.probes.scores import BootstrapDraws
from magdash.stimuli import PAPER_MAGNITUDES
from magdash.tokenization import digit_count

PAPER = np.asarray(PAPER_MAGNITUDES, dtype=np.float64)


def test_strata_are_digit_counts_crossed_with_token_counts():
    strata = magnitude_strata(np.array([7.0, 40, 1000, 300, 15]))
    assert strata.by == DIGITS and strata.labels == ("1 digit", "2 digits", "3 digits", "4 digits")
    assert strata.names() == ["1 digit", "2 digits", "4 digits", "3 digits", "2 digits"]
    grouped = magnitude_strata(np.array([7.0, 40, 1000, 300, 347]), [1, 1, 2, 1, 2])  # WordPiece: 34 ##7
    assert grouped.by == DIGITS_AND_TOKENS
    assert grouped.names() == ["1 digit, 1 token", "2 digits, 1 token", "4 digits, 2 tokens", "3 digits, 1 token",
                               "3 digits, 2 tokens"]
    with pytest.raises(AnalysisError, match="2 token counts for 5 magnitudes"):
        magnitude_strata(np.array([7.0, 40, 1000, 300, 347]), [1, 2])
    with pytest.raises(AnalysisError, match="the strata name 5 magnitudes, the layer has 26"):
        probe_layer(one_hot_digit_layer(PAPER), PAPER, ProbeParams(n_boot=0), strata=strata)
    assert [digit_count(value) for value in (0.5, 9, 10, 999.9, 1000)] == [1, 1, 2, 3, 4]


def test_stratum_means_by_hand_with_a_fallback_for_an_untrained_stratum():
    labels = np.array([[1.0], [2.0], [10.0], [14.0], [100.0]])
    codes = np.array([0, 0, 1, 1, 2])
    folds = [(np.array([0, 2, 3]), np.array([1, 4])), (np.array([1, 2, 4]), np.array([0, 3]))]
    predictions = stratum_mean_predictions(labels, codes, folds)
    # fold 1: row 1 -> stratum 0's training mean 1; row 4's stratum has no training row -> (1+10+14)/3
    # fold 2: row 0 -> 2; row 3 -> 10; row 2 is tested by no fold
    np.testing.assert_allclose(predictions[:, 0], [2.0, 1.0, np.nan, 10.0, 25.0 / 3])


@pytest.mark.parametrize(("scheme", "expected"), [("carrier", 0.8645), ("magnitude", 0.8250)])
def test_the_paper_design_owes_most_of_its_variance_to_the_digit_count(scheme, expected):
    y = np.log(PAPER)
    strata = magnitude_strata(PAPER)
    between = sum(np.sum(strata.codes == code) * (y[strata.codes == code].mean() - y.mean()) ** 2
                  for code in range(len(strata.labels)))
    assert between / np.sum((y - y.mean()) ** 2) == pytest.approx(0.8645, abs=1e-4)  # the 86.5 %
    carriers = 5
    rows = np.repeat(y, carriers)[:, None]
    folds = splits(scheme, PAPER, carriers, magnitude_folds=5, carrier_folds=0)
    predictions = stratum_mean_predictions(rows, np.repeat(strata.codes, carriers), folds)[:, 0]
    tested = np.isfinite(predictions)
    r2 = 1 - np.sum((rows[tested, 0] - predictions[tested]) ** 2) / np.sum((rows[tested, 0] - rows[tested, 0].mean()) ** 2)
    assert r2 == pytest.approx(expected, abs=1e-4)


def direct_within_r2(predictions, labels, codes, weights):
    """The pooled within-stratum R² written out: labels and predictions about their stratum's
    weighted means, strata with fewer than two distinct drawn magnitudes left out."""
    sse = sst = 0.0
    for code in np.unique(codes):
        members = (codes == code) & (weights > 0)
        if members.sum() < 2:
            continue
        w = np.repeat(weights[members], predictions.shape[1])
        y = np.repeat(labels[members], predictions.shape[1])
        p = predictions[members].ravel()
        y_mean, p_mean = np.average(y, weights=w), np.average(p, weights=w)
        sse += np.sum(w * ((y - y_mean) - (p - p_mean)) ** 2)
        sst += np.sum(w * (y - y_mean) ** 2)
    return 1 - sse / sst if sst > 0 else math.nan


def test_the_within_strata_score_and_its_replicates_against_the_direct_sums():
    rng = np.random.default_rng(3)
    labels = np.log(PAPER)
    codes = magnitude_strata(PAPER).codes
    predictions = labels[:, None] + 0.3 * rng.standard_normal((PAPER.size, 4)) + 0.5 * codes[:, None]
    counts = BootstrapDraws(40, 1).counts(PAPER.size)
    point, replicates, pooled = within_strata_r2(predictions[:, :, None], labels[:, None], codes, counts)
    assert pooled == 3  # 1000 is the only four-digit magnitude
    assert point[0] == pytest.approx(direct_within_r2(predictions, labels, codes, np.ones(PAPER.size)))
    for draw in range(5):
        assert replicates[draw, 0] == pytest.approx(direct_within_r2(predictions, labels, codes, counts[draw]))
    # a shift per stratum is forgiven within strata; a read-out constant within each stratum scores 0
    constant = np.repeat(np.array([labels[codes == code].mean() for code in codes])[:, None], 4, axis=1)
    assert within_strata_r2(constant[:, :, None], labels[:, None], codes, counts)[0][0] == pytest.approx(0.0, abs=1e-12)
    single = within_strata_r2(constant[:3, :, None], labels[:3, None], np.arange(3), counts[:, :3])
    assert math.isnan(single[0][0]) and single[2] == 0


def one_hot_digit_layer(magnitudes: np.ndarray, n_carriers: int = 5, dim: int = 16, seed: int = 0) -> np.ndarray:
    """A layer that encodes only the digit count: one direction per digit count, carrier noise."""
    rng = np.random.default_rng(seed)
    codes = magnitude_strata(magnitudes).codes
    directions = np.linalg.qr(rng.standard_normal((dim, dim)))[0][: codes.max() + 1]
    vectors = 3.0 * directions[codes][:, None, :] + 0.01 * rng.standard_normal((magnitudes.size, n_carriers, dim))
    return vectors.astype(np.float32)


def test_a_probe_of_a_layer_that_encodes_only_the_digit_count_scores_at_its_baseline():
    params = ProbeParams(n_boot=500, targets=("log",))
    probe = probe_layer(one_hot_digit_layer(PAPER), PAPER, params)
    for scheme in ("carrier", "magnitude"):
        row = probe.score(scheme, "log")
        assert row["r2"] > 0.8  # a high R², all of it the digit count's
        assert row["r2"] == pytest.approx(row["baseline_r2"], abs=0.02), scheme
        assert row["r2_over_baseline_low"] <= 0, scheme
        assert row["r2_within_strata"] < 0.05, scheme
    result = run_probes([("digits", one_hot_digit_layer(PAPER))], PAPER, params, model="digits only")
    assert "the probe is not shown to exceed what knowing only each number's digit count gives" in baseline_sentence(
        result, 0)


def test_a_probe_of_log_n_exceeds_its_baseline_within_strata():
    rng = np.random.default_rng(1)
    direction = rng.standard_normal(16)
    direction /= np.linalg.norm(direction)
    code = np.log(PAPER)[:, None] + 0.05 * rng.standard_normal((PAPER.size, 5))
    vectors = (3.0 * code[:, :, None] * direction + 0.01 * rng.standard_normal((PAPER.size, 5, 16))).astype(np.float32)
    row = probe_layer(vectors, PAPER, ProbeParams(n_boot=500, targets=("log",))).score("magnitude", "log")
    assert row["baseline_r2"] == pytest.approx(0.825, abs=1e-3)
    assert row["r2_over_baseline_low"] > 0.1 and row["r2_within_strata"] > 0.9
    assert row["r2_within_strata_low"] <= row["r2_within_strata"] <= row["r2_within_strata_high"]
