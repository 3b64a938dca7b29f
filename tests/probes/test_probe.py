"""The probes on planted layers: the code and its direction recovered, a constant Weber fraction
told from a constant absolute noise in decoded units, a constant-error read-out judged null, no
spread statistics at a context-free layer, pure noise not decoded, the control task, and a run
over layers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from magdash.errors import AnalysisError
from magdash.probes import decoded as decoded_module
from magdash.probes.findings import exponent_sentence
from magdash.probes.probe import probe_layer, run_probes
from magdash.probes.probe_params import ProbeParams
from magdash.probes.result import (
    DECODED_COLUMNS,
    DIRECTION_COLUMNS,
    LAYER_COLUMNS,
    SCALING_COLUMNS,
    SCORE_COLUMNS,
    SELECTIVITY_COLUMNS,
)
from magdash.stimuli import PAPER_MAGNITUDES
from magdash.variability.measures import MEASURES
from tests.probes.support import MAGNITUDES, planted_layer, planted_weber_fraction

PARAMS = ProbeParams(n_boot=300, exact_max_vectors=1024)  # 360 vectors: the exact path


@pytest.fixture(scope="module")
def with_contexts():
    """log n along u (carrier noise 0.1 in log units) plus carrier offsets, orthogonal to u, of
    SD 1 per dimension: ten times the code's noise."""
    vectors, direction = planted_layer(noise="weber", size=0.1, offsets=1.0, isotropic=0.05, seed=3)
    return probe_layer(vectors, MAGNITUDES, PARAMS), direction


def test_the_planted_code_is_decoded_in_both_schemes(with_contexts):
    probe, _ = with_contexts
    for scheme in ("carrier", "magnitude"):
        row = probe.score(scheme, "log")
        assert row["r2"] > 0.98 and row["spearman"] > 0.98, scheme
        assert row["r2_low"] <= row["r2"] <= row["r2_high"] and row["r2_low"] > 0.95
        assert row["error_log"] < 0.15 and row["share_nonpositive"] == 0
    assert probe.score("carrier", "log")["n_magnitudes"] == MAGNITUDES.size
    assert probe.score("magnitude", "log")["n_magnitudes"] == MAGNITUDES.size - 2


def test_the_planted_direction_is_recovered_and_is_pc1(with_contexts):
    probe, direction = with_contexts
    assert probe.direction_vectors["log"] @ direction > 0.99  # the sign too: it reads larger n as larger
    row = probe.directions.set_index("target").loc["log"]
    assert row["cosine_pc1"] > 0.99 and row["fold_cosine"] > 0.99
    assert probe.axis @ direction > 0.99


def test_the_control_task_is_learnt_far_worse_than_the_real_one(with_contexts):
    probe, _ = with_contexts
    for scheme in ("carrier", "magnitude"):
        assert probe.score(scheme, "log", "control")["r2"] < 0.2 < 0.98 < probe.score(scheme, "log")["r2"]
        selectivity = probe.selectivity.set_index(["scheme", "target"]).loc[(scheme, "log")]
        assert selectivity["selectivity"] > 0.8 and selectivity["selectivity_low"] > 0.7


@pytest.mark.parametrize(("seed", "exact_max_vectors"), [(0, 1024), (1, 1024), (0, 0)])
def test_a_constant_weber_fraction_and_a_constant_absolute_noise_are_told_apart(seed, exact_max_vectors):
    # Weber: n-hat = n e^e, SD(n-hat)/n = 0.1008 at every n -> beta = 1, the decoded Weber fraction
    # within 10 % of the planted one. Absolute: n-hat = n + e, SD = 0.5 at every n -> beta = 0.
    # Each slope within 0.15 of its value and its interval excluding the other's; on the exact
    # path and on the reduced one (8 centroid components).
    weber_vectors, _ = planted_layer(noise="weber", size=0.1, seed=seed)
    absolute_vectors, _ = planted_layer(noise="absolute", size=0.5, seed=seed)
    params = ProbeParams(n_boot=300, targets=("log",), exact_max_vectors=exact_max_vectors, n_components=8)
    weber = probe_layer(weber_vectors, MAGNITUDES, params).decoded_scaling.iloc[0]
    absolute = probe_layer(absolute_vectors, MAGNITUDES, params).decoded_scaling.iloc[0]
    assert abs(weber["beta"] - 1.0) < 0.15 and weber["beta_low"] > 0.5
    assert weber["weber_mean"] == pytest.approx(planted_weber_fraction(0.1), rel=0.10)
    assert weber["calibration"] == pytest.approx(1.0, abs=0.05)
    assert abs(absolute["beta"]) < 0.15 and absolute["beta_high"] < 0.5
    decoded = probe_layer(absolute_vectors, MAGNITUDES, params).decoded
    assert decoded["sd_decoded"].median() == pytest.approx(0.5, rel=0.15)


def test_pure_noise_is_not_decoded_out_of_sample():
    vectors = np.random.default_rng(11).standard_normal((20, 5, 30)).astype(np.float32)
    probe = probe_layer(vectors, np.arange(1, 21) * 5.0, PARAMS)
    # A fully shrunk probe predicts its training mean, which with every magnitude in every
    # held-out-carrier training fold is the labels' mean: R² = 0 up to rounding, never above.
    real = probe.scores[probe.scores["task"] == "real"]
    assert (real["r2"] <= 1e-4).all() and (real["r2_low"] <= 0).all()
    assert (probe.selectivity["selectivity"].abs() < 0.1).all()


def test_a_given_axis_is_used_and_oriented_with_n():
    vectors, direction = planted_layer(noise="weber", size=0.1, offsets=1.0, isotropic=0.05, seed=3)
    probe = probe_layer(vectors, MAGNITUDES, PARAMS, axis=-direction)
    np.testing.assert_array_equal(probe.axis, direction)
    with pytest.raises(AnalysisError, match=r"axis has shape \(3,\); the layer's vectors have 24 dimensions"):
        probe_layer(vectors, MAGNITUDES, PARAMS, axis=np.ones(3))


def test_the_magnitudes_order_does_not_change_the_real_scores():
    vectors, _ = planted_layer(noise="weber", size=0.2, offsets=0.5, isotropic=0.05, seed=5)
    order = np.random.default_rng(0).permutation(MAGNITUDES.size)
    first = probe_layer(vectors, MAGNITUDES, PARAMS)
    second = probe_layer(vectors[order], MAGNITUDES[order], PARAMS)
    for probe in (first, second):
        assert probe.directions["cosine_pc1"].min() > 0.9  # oriented with n whatever the order
    keys = ["scheme", "target", "task"]
    a = first.scores[first.scores["task"] == "real"].set_index(keys)["r2"]
    b = second.scores[second.scores["task"] == "real"].set_index(keys)["r2"]
    np.testing.assert_allclose(a.sort_index(), b.sort_index(), rtol=1e-8)


def test_the_reduced_path_agrees_with_the_exact_one_where_both_run():
    magnitudes = np.unique(np.round(np.geomspace(5, 1000, 60)))
    vectors, direction = planted_layer(noise="weber", size=0.1, magnitudes=magnitudes, n_carriers=6, dim=40,
                                       offsets=0.3, isotropic=0.05, seed=2)
    exact = probe_layer(vectors, magnitudes, PARAMS)
    reduced = probe_layer(vectors, magnitudes, ProbeParams(n_boot=300, exact_max_vectors=0, n_components=8))
    assert exact.exact and not reduced.exact and reduced.n_features == 8
    for scheme in ("carrier", "magnitude"):
        assert reduced.score(scheme, "log")["r2"] == pytest.approx(exact.score(scheme, "log")["r2"], abs=0.02)
    assert reduced.direction_vectors["log"] @ exact.direction_vectors["log"] > 0.99
    assert reduced.direction_vectors["log"] @ direction > 0.99
    slopes = [probe.decoded_scaling.set_index("target").loc["log"] for probe in (exact, reduced)]
    assert slopes[1]["beta"] == pytest.approx(slopes[0]["beta"], abs=0.1)
    assert slopes[1]["weber_mean"] == pytest.approx(slopes[0]["weber_mean"], rel=0.1)


def test_a_run_over_layers_keeps_tables_and_leaves_out_non_finite_layers():
    first, _ = planted_layer(seed=1, offsets=0.5, isotropic=0.05)
    second, _ = planted_layer(seed=1, offsets=0.5, isotropic=0.05, scale=6.0)
    broken = first.copy()
    broken[4, 2, 0] = np.inf
    calls = []
    result = run_probes([("emb", first), ("block 1", second), ("block 2", broken), ("block 3", first)],
                        MAGNITUDES, PARAMS, model="planted", stimuli="s", n_layers=4,
                        progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert result.layer_labels == ["emb", "block 1", "block 2", "block 3"] and result.n_layers == 4
    assert result.nonfinite_layers == {2: 1}
    assert list(result.layers.columns) == LAYER_COLUMNS
    assert result.layers["probed"].tolist() == [True, True, False, True]
    for name, columns in (("scores", SCORE_COLUMNS), ("selectivity", SELECTIVITY_COLUMNS),
                          ("directions", DIRECTION_COLUMNS), ("decoded", DECODED_COLUMNS),
                          ("decoded_scaling", SCALING_COLUMNS)):
        frame = getattr(result, name)
        assert list(frame.columns) == ["layer", "label", *columns], name
        assert sorted(frame["layer"].unique()) == [0, 1, 3], name
    assert len(result.scores) == 3 * 2 * 2 * 2 and len(result.decoded) == 3 * 2 * MAGNITUDES.size
    cosines = result.directions.set_index(["layer", "target"])["cosine_previous_layer"]
    assert math.isnan(cosines[(0, "log")]) and cosines[(1, "log")] > 0.99 and math.isnan(cosines[(3, "log")])
    assert any("layer 2 holds Inf/NaN" in line for line in result.warnings())
    table = result.score_table("carrier", "log")
    assert table["layer"].tolist() == [0, 1, 3] and (table["r2"] > 0.95).all()


def test_a_run_takes_bare_arrays_and_needs_a_layer():
    vectors, _ = planted_layer(seed=1)
    result = run_probes(iter([vectors]), MAGNITUDES, ProbeParams(n_boot=10, targets=("log",)))
    assert result.layer_labels == ["0"] and set(result.scores["target"]) == {"log"}
    with pytest.raises(AnalysisError, match="no layers to probe"):
        run_probes([], MAGNITUDES, PARAMS)


def test_the_decoded_slope_is_one_plus_the_slope_of_v_proj_on_a_logarithmic_code():
    # docs/science.md: with a log read-out along PC1, SD(n-hat) ~ n V_proj(n) / k, so beta ~ 1 + alpha_proj.
    # Planted: noise in log units of SD 0.1 (n/5)^-0.5 -> alpha_proj = -0.5, beta = 0.5.
    rng = np.random.default_rng(4)
    direction = rng.standard_normal(24)
    direction /= np.linalg.norm(direction)
    noise = rng.standard_normal((MAGNITUDES.size, 12)) * (0.1 * (MAGNITUDES / 5.0) ** -0.5)[:, None]
    code = np.log(MAGNITUDES)[:, None] + noise
    vectors = (3.0 * code[:, :, None] * direction + rng.normal(0, 1e-4, (MAGNITUDES.size, 12, 24))).astype(np.float32)
    beta = probe_layer(vectors, MAGNITUDES, PARAMS).decoded_scaling.set_index("target").loc["log", "beta"]
    alpha_proj = np.polyfit(np.log(MAGNITUDES), np.log(MEASURES["proj"](vectors)), 1)[0]
    assert alpha_proj == pytest.approx(-0.5, abs=0.1)
    assert beta == pytest.approx(1.0 + alpha_proj, abs=0.1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_read_out_of_constant_log_error_is_judged_null_and_a_growing_one_is_not(seed):
    # Constant log error (the planted "weber" noise): beta ~ 1, which is what any such read-out gives,
    # so the permutation null holds it. Constant absolute noise: beta ~ 0, far from the null of ~1.
    params = ProbeParams(n_boot=1000, targets=("log",))
    constant, _ = planted_layer(noise="weber", size=0.1, seed=seed)
    absolute, _ = planted_layer(noise="absolute", size=0.5, seed=seed)
    null = run_probes([("constant", constant), ("absolute", absolute)], MAGNITUDES, params, model="planted")
    rows = null.decoded_scaling.set_index("label")
    held = rows.loc["constant"]
    assert held["beta_null"] == pytest.approx(1.0, abs=0.05) and held["beta_null_p"] > 0.05
    assert held["beta_null_low"] <= held["beta"] <= held["beta_null_high"]
    assert "says nothing about the model's noise" in exponent_sentence(null, None, 0)
    grown = rows.loc["absolute"]
    assert grown["beta_null_p"] < 0.01 and grown["beta"] < grown["beta_null_low"]
    assert "changes with n beyond what a constant-error read-out gives" in exponent_sentence(null, None, 1)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_random_networks_read_out_is_judged_null(seed):
    # As minilm@random: a random vector per number and carrier noise of one size. Its token identity is
    # read across held-out carriers, nothing across held-out magnitudes, and its beta near 1 is what any
    # constant-error read-out of the design gives.
    paper = np.asarray(PAPER_MAGNITUDES, dtype=np.float64)
    rng = np.random.default_rng(seed)
    vectors = (rng.standard_normal((26, 1, 64)) + 0.3 * rng.standard_normal((26, 5, 64))).astype(np.float32)
    result = run_probes([vectors], paper, ProbeParams(n_boot=1000, targets=("log",)), model="m@random")
    assert result.score_table("carrier", "log")["r2"].iloc[0] > 0.9
    assert result.score_table("magnitude", "log")["r2"].iloc[0] < 0.2
    row = result.decoded_scaling.iloc[0]
    assert 0.8 < row["beta"] < 1.1 and row["beta_null_p"] > 0.05
    assert row["beta_null_low"] <= row["beta"] <= row["beta_null_high"]
    assert "says nothing about the model's noise" in exponent_sentence(result, None, 0)


def test_a_context_free_layer_gives_no_statistic_of_the_spread_between_carriers(monkeypatch):
    # Layer 0 of a decoder: every carrier of a number the same vector (its token's embedding). In
    # more dimensions than vectors (200 > 26 x 5, as SmolLM2's 576) the folds' predictions of the
    # same vector differ in their last digits, and a slope fitted to those gave SmolLM2 a "beta 0.41".
    paper = np.asarray(PAPER_MAGNITUDES, dtype=np.float64)
    rng = np.random.default_rng(0)
    embeddings = (np.log(paper)[:, None] * rng.standard_normal(200) + rng.standard_normal((26, 200))).astype(np.float32)
    context_free = np.repeat(embeddings[:, None], 5, axis=1)
    contextual = context_free + rng.normal(0, 0.3, context_free.shape).astype(np.float32)
    params = ProbeParams(n_boot=200)
    result = run_probes([("embeddings", context_free), ("block 1", contextual)], paper, params, model="m")
    decoded = result.decoded[result.decoded["layer"] == 0]
    assert (decoded["sd_decoded"] == 0).all() and (decoded["weber_fraction"] == 0).all()
    scaling = result.decoded_scaling.set_index(["layer", "target"])
    spread_columns = ["beta", "beta_low", "beta_high", "beta_null", "beta_null_low", "beta_null_high", "beta_null_p",
                      "intercept", "weber_mean", "weber_mean_low", "weber_mean_high"]
    for target in ("log", "linear"):
        assert scaling.loc[(0, target), spread_columns].isna().all(), target
        assert "do not differ between carriers beyond rounding" in scaling.loc[(0, target), "note"]
        assert scaling.loc[(1, target), spread_columns].notna().all() and scaling.loc[(1, target), "note"] == ""
    directions = result.directions.set_index(["layer", "target"])
    assert np.isnan(directions.loc[(0, "log"), "fold_cosine"]) and directions.loc[(1, "log"), "fold_cosine"] > 0.5
    # the scores remain: a context-free vector is read in any sentence (token identity)
    assert result.score_table("carrier", "log").set_index("layer").loc[0, "r2"] > 0.9
    assert "no spread to fit" in exponent_sentence(result, None, 0)
    # without the rule, the rounding of the same layer is fitted as a spread
    monkeypatch.setattr(decoded_module, "resolution", lambda values: 0.0)
    unruled = probe_layer(context_free, paper, params).decoded_scaling.set_index("target")
    assert unruled.loc["log", "n_points"] > 20 and np.isfinite(unruled.loc["log", "beta"])
