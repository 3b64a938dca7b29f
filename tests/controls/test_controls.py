"""Robustness controls: the ICC against Shrout & Fleiss's worked example, leave-one-carrier-out and
the permutation null on planted data, verdicts, the cache and the CLI."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math

import numpy as np
import pytest

from magdash.cli import main
from magdash.controls.carriers import carrier_icc, cosine_rdm, icc_consistency
from magdash.controls.controls_params import ControlsParams
from magdash.controls.permutation import PermutationNull
from magdash.controls.variants import VariantSummary, random_problem
from magdash.errors import AnalysisError, MagdashError
from magdash.runs.analysis_runs import analyze, compare
from magdash.runs.controls_runs import run_controls
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES, paper_stimuli
from magdash.variability.analysis_params import AnalysisParams, FitRules
from magdash.variability.artifacts import leave_one_carrier_out
from magdash.variability.fits import fit_scaling, ols
from magdash.variability.measures import v_eucl

MAGNITUDES = np.asarray(PAPER_MAGNITUDES, dtype=np.float64)
FAST = AnalysisParams(n_boot=300)


def test_icc_matches_shrout_and_fleiss_worked_example():
    # Shrout & Fleiss (1979), Table 2: 6 targets rated by 4 judges; their ICC(3,4) = .91.
    ratings = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]])
    assert icc_consistency(ratings) == pytest.approx(0.9093, abs=5e-4)
    # consistency form: a constant added to one rater changes nothing
    shifted = ratings + np.array([0, 10, 0, -3])
    assert icc_consistency(shifted) == pytest.approx(icc_consistency(ratings), abs=1e-12)
    assert icc_consistency(np.ones((4, 3))) == 0.0
    assert math.isnan(icc_consistency(np.ones((1, 3))))


def test_carrier_icc_is_one_for_carriers_that_only_rescale_the_vectors(rng):
    base = rng.normal(size=(8, 6))
    x = np.stack([base * scale for scale in (1.0, 2.5, 0.3)], axis=1)
    assert carrier_icc(x) == pytest.approx(1.0, abs=1e-12)
    rdm = cosine_rdm(base)
    assert rdm.shape == (28,)
    unit = base / np.linalg.norm(base, axis=1, keepdims=True)
    assert rdm[0] == pytest.approx(1 - unit[0] @ unit[1])
    noisy = np.stack([base + rng.normal(scale=3.0, size=base.shape) for _ in range(3)], axis=1)
    assert carrier_icc(noisy) < 0.9


def _planted_layer(rng, exponents, d=24):
    """Carrier c's offset from the centroid scales as n ** exponents[c]."""
    offsets = rng.normal(size=(len(exponents), d))
    offsets -= offsets.mean(axis=0)
    scales = MAGNITUDES[:, None] ** np.asarray(exponents)[None, :]
    return 5.0 + scales[:, :, None] * offsets[None, :, :]


def test_leaving_out_the_one_carrier_that_drives_alpha_flips_its_sign(rng):
    x = _planted_layer(rng, [-0.2, -0.2, -0.2, -0.2, 1.0])
    full = fit_scaling(MAGNITUDES, v_eucl(x), rules=FitRules(drop_outliers=False, n_boot=0)).alpha
    assert full > 0
    loo = leave_one_carrier_out(x, MAGNITUDES, ["eucl", "proj"], rules=FitRules())
    assert loo.shape == (2, 5)
    assert loo[0, 4] < 0 < loo[0, :4].min()
    # each entry is the plain fit on the remaining carriers
    expected = fit_scaling(MAGNITUDES, v_eucl(x[:, [0, 1, 2, 4]]), rules=FitRules(drop_outliers=True, n_boot=0)).alpha
    assert loo[0, 3] == pytest.approx(expected, abs=1e-12)
    with pytest.raises(AnalysisError, match="at least 3 carriers"):
        leave_one_carrier_out(x[:, :2], MAGNITUDES, ["eucl"], rules=FitRules())


def test_permutation_p_agrees_with_the_exact_enumeration(rng):
    magnitudes = np.array([1.0, 2, 3, 5, 8, 13])
    values = np.exp(0.3 * np.log(magnitudes) + rng.normal(scale=0.4, size=6))
    x, y = np.log(magnitudes), np.log(values)
    observed = ols(x, y).slope
    slopes = np.array([ols(x[list(order)], y).slope for order in itertools.permutations(range(6))])
    exact = np.mean(np.abs(slopes) >= abs(observed) - 1e-12)
    null = PermutationNull(n_perm=40_000, seed=3)
    p = null.p_value(magnitudes, values, rules=FitRules(drop_outliers=False))
    assert p == pytest.approx(exact, abs=0.01)
    assert PermutationNull(n_perm=40_000, seed=3).p_value(magnitudes, values, rules=FitRules(drop_outliers=False)) == p


def test_permutation_p_is_uniform_under_the_null_and_minimal_for_a_strong_slope(rng):
    null = PermutationNull(n_perm=999, seed=1)
    ps = np.array([
        null.p_value(MAGNITUDES, np.exp(rng.normal(size=MAGNITUDES.size)), rules=FitRules(drop_outliers=False)) for _ in range(400)
    ])
    assert 0.02 <= np.mean(ps <= 0.05) <= 0.09
    assert 0.4 <= np.mean(ps) <= 0.6
    strong = np.exp(-0.5 * np.log(MAGNITUDES) + rng.normal(scale=0.01, size=MAGNITUDES.size))
    assert null.p_value(MAGNITUDES, strong, rules=FitRules(drop_outliers=True)) == pytest.approx(1 / 1000)
    assert math.isnan(null.p_value(MAGNITUDES[:4], strong[:4], rules=FitRules(drop_outliers=False)))
    with pytest.raises(AnalysisError, match="at least 1 permutation"):
        PermutationNull(n_perm=0)


def _import(store, name, exponent, rng, n_layers=5):
    scale = MAGNITUDES[:, None, None, None] ** exponent
    shape = (MAGNITUDES.size, len(PAPER_CARRIERS), n_layers, 16)
    vectors = rng.normal(size=shape) * scale + np.log(MAGNITUDES)[:, None, None, None] * np.linspace(0.5, 1.5, 16)
    store.import_arrays(name, vectors.astype(np.float32), PAPER_MAGNITUDES, carriers=PAPER_CARRIERS)


@pytest.mark.slow
def test_controls_flag_a_variant_of_the_other_sign_and_an_indistinct_random_control(store, rng):
    _import(store, "m", -0.15, rng)
    _import(store, "m:float16", 0.15, rng)
    _import(store, "m@random", -0.15, rng)  # the "architecture" does everything: a problem
    params = ControlsParams(analysis=FAST, n_perm=2000, variants=("m:float16",))
    result = run_controls(store, "m", params=params)
    verdicts = {v.control: v for v in result.verdicts("eucl")}
    assert verdicts["carriers"].problem is False
    assert verdicts["permutation"].problem is False
    assert verdicts["icc"].problem is False
    assert verdicts["variant"].problem is True and "m:float16" in verdicts["variant"].line
    assert verdicts["random"].problem is True
    summary = result.variant_summaries("eucl")[0]
    assert summary.max_abs_delta == pytest.approx(
        result.variants["m:float16"].measures["eucl"].layers.query("core")["delta"].abs().max()
    )
    assert summary.mean_alpha_model < 0 < summary.mean_alpha_variant
    assert set(result.tables.permutation["measure"]) == {"eucl", "residual", "proj"}
    assert result.tables.loo.shape[0] == 3 * 5 * 5  # measures x layers x carriers
    again = run_controls(store, "m", params=params)
    assert again.from_cache and not result.from_cache
    assert again.tables.permutation.equals(result.tables.permutation)
    assert again.tables.loo["sign_differs"].tolist() == result.tables.loo["sign_differs"].tolist()
    own = run_controls(store, "m@random", params=ControlsParams(analysis=FAST, n_perm=200))
    assert "itself a random-weight control" in {v.control: v for v in own.verdicts("eucl")}["random"].line
    document = json.loads(json.dumps(result.to_json(), default=str))
    assert {v["control"] for v in document["verdicts"]} == {"carriers", "icc", "permutation", "variant", "random"}


def _import_in_format(store, name, exponent, rng, number_format, n_layers=5):
    """The model ``name`` on the paper's carriers and magnitudes written in ``number_format``."""
    scale = MAGNITUDES[:, None, None, None] ** exponent
    shape = (MAGNITUDES.size, len(PAPER_CARRIERS), n_layers, 16)
    vectors = rng.normal(size=shape) * scale + np.log(MAGNITUDES)[:, None, None, None] * np.linspace(0.5, 1.5, 16)
    store.register_stimulus_set(paper_stimuli(number_format))
    model_id = store.model_record(name).model_id
    store.write_vectors(model_id, [item.key for item in paper_stimuli(number_format).items],
                        vectors.reshape(-1, n_layers, 16).astype(np.float32))


@pytest.mark.slow
def test_a_number_format_variant_gives_a_delta_with_its_joint_bootstrap_ci(store, rng):
    _import(store, "m", -0.15, rng)
    _import_in_format(store, "m", 0.15, rng, "words")  # in words the model's alpha has the other sign
    params = ControlsParams(analysis=FAST, n_perm=200, formats=("words",), random_control=False)
    result = run_controls(store, "m", "paper", params)
    comparison = result.variants["m on paper-words"]
    assert (comparison.model_a, comparison.model_b, comparison.stimuli, comparison.stimuli_b) == (
        "m", "m", "paper", "paper-words")
    assert result.variant_kinds["m on paper-words"] == "number format digits vs words"
    core = comparison.measures["eucl"].layers.query("core")
    assert core["delta"].lt(0).all()
    assert np.isfinite(core[["ci_low", "ci_high"]].to_numpy()).all()
    assert (core["ci_high"] < 0).all()  # a planted difference of -0.3 in alpha: every CI excludes 0
    assert ((core["ci_low"] <= core["delta"]) & (core["delta"] <= core["ci_high"])).all()
    verdict = {v.control: v for v in result.verdicts("eucl")}["variant"]
    assert verdict.problem is True and "m on paper-words (number format digits vs words)" in verdict.line
    rows = store.metric_table("comparison_tests")
    assert set(zip(rows["model_b"], rows["stimuli"], rows["stimuli_b"], strict=True)) == {("m", "paper", "paper-words")}
    # the same analyses as a comparison of the model with itself on the other set
    analysis = analyze(store, "m", "paper-words", FAST)
    assert comparison.measures["eucl"].layers["alpha_b"].tolist() == pytest.approx(list(analysis.alphas("eucl")),
                                                                                 nan_ok=True)
    with pytest.raises(AnalysisError, match="compare it with another number format"):
        run_controls(store, "m", "paper", ControlsParams(analysis=FAST, n_perm=200, formats=("digits",)))
    with pytest.raises(AnalysisError, match=r"not stored on the carriers and magnitudes of 'paper' written in grouped"):
        run_controls(store, "m", "paper", ControlsParams(analysis=FAST, n_perm=200, formats=("grouped",)))
    with pytest.raises(MagdashError, match="unknown number format 'roman'"):
        ControlsParams(formats=("roman",))
    with pytest.raises(AnalysisError, match="both are 'm' on 'paper'"):
        compare(store, "m", "m", "paper")
    # the public API compares the two formats alike (and from the cache the variant wrote)
    import magdash as md

    through_api = md.compare(store, "m", "m", "paper", FAST, stimuli_b="paper-words")
    assert through_api.stimuli_b == "paper-words"
    assert through_api.measures["eucl"].layers["delta"].tolist() == pytest.approx(
        comparison.measures["eucl"].layers["delta"].tolist(), nan_ok=True)


def test_controls_without_variants_or_control_say_so(store, rng):
    _import(store, "alone", -0.1, rng)
    result = run_controls(store, "alone", params=ControlsParams(analysis=FAST, n_perm=500))
    verdicts = {v.control: v for v in result.verdicts("eucl")}
    assert verdicts["variant"].problem is None and verdicts["random"].problem is None
    assert "alone@random is not stored" in verdicts["random"].line
    assert verdicts["permutation"].problem is False  # a planted slope no shuffle reaches
    # 10 permutations cannot give p < 0.05 at any layer: the control says so instead of calling it a problem
    few = run_controls(store, "alone", params=ControlsParams(analysis=FAST, n_perm=10))
    permutation = {v.control: v for v in few.verdicts("eucl")}["permutation"]
    assert permutation.problem is None
    assert permutation.line == ("not judged: with 10 resamples the smallest p this test can give is 0.091, so it "
                                "cannot reach 0.05 however large the effect")
    with pytest.raises(MagdashError, match="no model named 'ghost'"):
        run_controls(store, "alone", params=ControlsParams(analysis=FAST, variants=("ghost",)))
    with pytest.raises(AnalysisError, match="the model itself"):
        run_controls(store, "alone", params=ControlsParams(analysis=FAST, variants=("alone",)))
    with pytest.raises(AnalysisError, match="n_perm="):
        ControlsParams(n_perm=0)


@pytest.mark.slow
def test_cli_controls_json_and_bad_input(store, rng, capsys):
    _import(store, "m", -0.15, rng)
    _import(store, "m:first", -0.12, rng)
    args = ["controls", "--model", "m", "--store", str(store.path), "--n-boot", "200", "--n-perm", "500"]
    assert main([*args, "--variant", "m:first", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["n_perm"] == 500 and document["variants"][0]["variant"] == "m:first"
    report = store.path.parent / "controls.html"
    assert main([*args, "--report", str(report)]) == 0
    out = capsys.readouterr().out
    assert "verdicts over the core band" in out and "leave one carrier out" in out
    assert report.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert main([*args, "--variant", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("magdash: error: no model named 'nope'")
    assert main([*args, "--n-perm", "0"]) == 2
    capsys.readouterr()
    # the controls read the raw vectors: an analysis of another view would mix the two
    assert main([*args, "--massive", "drop"]) == 2
    assert capsys.readouterr().err.startswith("magdash: error: the robustness controls and the design simulator "
                                              "work on the raw vectors")
    # the model on the paper's stimuli in grouped digits: a second set, so --stimuli is needed now
    _import_in_format(store, "m", -0.15, rng, "grouped")
    assert main([*args, "--stimuli", "paper", "--format-variant", "grouped", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["variants"][0]["variant"] == "m on paper-grouped"
    assert document["variants"][0]["kind"] == "number format digits vs grouped"


def test_the_random_control_is_judged_on_the_stimulus_interval_of_the_mean_delta_not_on_counted_layers():
    """Every core layer's own CI excludes 0 (the layers agree, as layers that share their stimuli do),
    but the interval that resamples the stimuli covers 0: the model is not told from its control."""
    agreeing_layers = VariantSummary(
        variant="m@random", kind="random weights (@random)", measure="eucl", mean_alpha_model=-0.04,
        mean_alpha_variant=-0.03, max_abs_delta=0.012, layer_of_max=4, ci_low_at_max=-0.02, ci_high_at_max=-0.004,
        layers_ci_excludes_zero=3, layers_with_ci=3, n_core=3, mean_delta=-0.01, mean_delta_ci_low=-0.03,
        mean_delta_ci_high=0.006, mean_delta_p=0.21, wilcoxon_p=0.25, wilcoxon_reachable=False)
    assert random_problem(agreeing_layers) is True
    apart = dataclasses.replace(agreeing_layers, mean_delta_ci_high=-0.002, mean_delta_p=0.01)
    assert random_problem(apart) is False
    assert random_problem(dataclasses.replace(apart, mean_delta_ci_low=math.nan)) is None  # no bootstrap: no verdict
