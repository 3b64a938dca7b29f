"""Analysis orchestration through a real store: planted exponents, caching, CLI output."""

from __future__ import annotations

import json
import math
import weakref

import numpy as np
import pandas as pd
import pytest

from magdash.cli import main
from magdash.errors import AnalysisError
from magdash.runs.analysis_runs import analysis_key, analyze, compare
from magdash.stimuli import PAPER_CARRIERS, PAPER_MAGNITUDES
from magdash.variability.analysis import AnalysisResult, run_analysis
from magdash.variability.analysis_params import AnalysisParams
from magdash.variability.compare import ComparisonResult
from magdash.variability.hypotheses import programme_verdict

MAGNITUDES = np.array(PAPER_MAGNITUDES, dtype=np.float64)
# Keys of the first release's --json: every one must stay.
FIT_KEYS = {"alpha", "alpha_theil_sen", "ci_low", "ci_high", "r2", "p", "n_points"}
HYPOTHESIS_KEYS = {"H1", "H2", "H3", "H4", "mean_alpha", "positive_layers"}
TOP_KEYS = {"model", "stimuli", "core_layers", "layers", "hypotheses"}
# Added so that --json carries everything the text output and the API have.
NEW_FIT_KEYS = {"intercept", "se", "n_outliers"}
NEW_HYPOTHESIS_KEYS = {
    "h1_t", "h1_p", "h2_t", "h2_p", "h4_rho", "h4_p", "h4_layers", "n_valid", "median_alpha",
    "in_window_layers", "below_one_layers", "window", "core_layers",
    # inference at the unit of replication: the stimulus bootstrap leads; H4 says when it cannot reach .05
    "mean_alpha_ci", "mean_alpha_p", "n_resamples", "h4_reachable", "h4_note",
}
NEW_TOP_KEYS = {
    "conventions", "n_blocks", "e3", "e4", "noise_models", "checks", "warnings", "nonfinite_layers", "params",
    "massive_dims", "carriers", "outlier_vectors", "carrier_influence", "dropped_points", "tokenization",
}


def planted_arrays(rng, alpha: float, n_blocks: int = 6, dim: int = 256, post_norm: bool = False):
    """(26, 5, n_layers, dim) vectors with V_eucl proportional to n^alpha at every block layer.

    Layer 0 repeats one vector per magnitude in every carrier (a context-free embedding: V = 0).
    """
    n_layers = n_blocks + 1 + int(post_norm)
    per_carrier = np.empty((MAGNITUDES.size, 5, n_layers, dim), dtype=np.float32)
    for layer in range(n_layers):
        means = np.outer(np.log(MAGNITUDES), rng.normal(size=dim)) * 4.0 + rng.normal(size=dim)
        noise = rng.normal(size=(MAGNITUDES.size, 5, dim)) * (MAGNITUDES**alpha)[:, None, None]
        per_carrier[:, :, layer] = means[:, None, :] + (0.0 if layer == 0 else noise)
    labels = ["embeddings"] + [f"block {i}" for i in range(1, n_blocks + 1)]
    if post_norm:
        labels.append("final (post-norm)")
    return per_carrier, labels


def import_model(store, name, rng, alpha, **kwargs):
    per_carrier, labels = planted_arrays(rng, alpha, **kwargs)
    store.import_arrays(name, per_carrier, PAPER_MAGNITUDES, carriers=list(PAPER_CARRIERS), layer_labels=labels)
    return per_carrier


FAST = AnalysisParams(n_boot=300)


def test_planted_exponent_round_trips_through_store_and_cli(store, rng, capsys):
    import_model(store, "planted", rng, alpha=-0.1)
    status = main(["analyze", "--model", "planted", "--store", str(store.path), "--json", "--n-boot", "500"])
    assert status == 0
    document = json.loads(capsys.readouterr().out)
    assert set(document) == TOP_KEYS | NEW_TOP_KEYS
    assert document["model"] == "planted" and document["stimuli"] == "paper"
    assert document["conventions"] == "magdash" and document["params"]["seed"] == 0
    assert document["core_layers"] == [3, 4, 5]  # floor(6/2) .. 5
    assert [entry["layer"] for entry in document["layers"]] == list(range(7))
    for entry in document["layers"]:
        assert set(entry) == {"layer", "label", "eucl", "residual", "proj"}
        for measure in ("eucl", "residual", "proj"):
            assert set(entry[measure]) == FIT_KEYS | NEW_FIT_KEYS
    embeddings = document["layers"][0]
    assert embeddings["label"] == "embeddings"
    for measure in ("eucl", "residual", "proj"):  # V = 0: no fit, written as null
        assert embeddings[measure]["alpha"] is None and embeddings[measure]["n_points"] == 0
    for entry in document["layers"][1:]:
        assert entry["eucl"]["alpha"] == pytest.approx(-0.1, abs=0.02)
        assert entry["residual"]["alpha"] == pytest.approx(-0.1, abs=0.02)
        has_ci = entry["layer"] in document["core_layers"]
        assert (entry["eucl"]["ci_low"] is not None) == has_ci
        if has_ci:
            assert entry["eucl"]["ci_low"] < entry["eucl"]["alpha"] < entry["eucl"]["ci_high"]
    for measure in ("eucl", "residual", "proj"):
        verdict = document["hypotheses"][measure]
        assert set(verdict) == HYPOTHESIS_KEYS | NEW_HYPOTHESIS_KEYS
        assert verdict["H1"] is False and verdict["H2"] is False and verdict["H3"] is True
        assert verdict["h1_t"] < 0 and 0 <= verdict["h1_p"] <= 1 and verdict["h4_layers"] == [3, 4, 5]
        assert document["e3"][measure]["layers"] == [3, 4, 5]
        rows = document["noise_models"][measure]
        assert len(rows) == 7 * 4 and {row["model"] for row in rows} == {"constant", "scalar", "log_scalar", "power_law"}
        assert all(row["aicc"] is None for row in rows if row["layer"] == 0)  # V = 0: nothing to score
    assert document["hypotheses"]["eucl"]["mean_alpha"] == pytest.approx(-0.1, abs=0.02)
    assert document["hypotheses"]["eucl"]["positive_layers"] == 0
    for measure in ("eucl", "residual", "proj"):
        verdict = document["hypotheses"][measure]
        low, high = verdict["mean_alpha_ci"]  # a two-element list from the stimulus bootstrap
        assert isinstance(verdict["mean_alpha_ci"], list) and low < verdict["mean_alpha"] < high < 0
        assert 0 < verdict["mean_alpha_p"] < 0.05 and 450 <= verdict["n_resamples"] <= 500
        # three core layers: a Spearman test over them cannot reach .05, and the JSON says so
        assert verdict["h4_reachable"] is False and "cannot reach 0.05" in verdict["h4_note"]
    assert document["e4"]["wilcoxon_reachable"] is False and "3 layer pairs" in document["e4"]["wilcoxon_note"]
    assert document["e4"]["n_pairs"] == 3 and document["e4"]["mean_alpha_on"] < 0
    assert set(document["checks"]) == {"ols_theil_sen", "ols_theil_sen_layers", "raw_residual", "raw_proj"}
    assert document["warnings"] == [] and document["nonfinite_layers"] == {}
    # the JSON holds what the API holds, number for number
    result = analyze(store, "planted", params=AnalysisParams(n_boot=500))
    assert result.from_cache
    fit = result.fit("eucl", 4)
    assert document["layers"][4]["eucl"]["intercept"] == pytest.approx(fit.intercept, abs=1e-12)
    assert document["layers"][4]["eucl"]["se"] == pytest.approx(fit.se, abs=1e-12)
    assert document["hypotheses"]["residual"]["h2_t"] == pytest.approx(result.hypotheses["residual"].h2_t, abs=1e-9)


def test_readable_table_and_user_errors(store, rng, capsys):
    import_model(store, "planted", rng, alpha=0.0)
    assert main(["analyze", "--model", "planted", "--store", str(store.path), "--n-boot", "0"]) == 0
    out = capsys.readouterr().out
    assert "H1 alpha > 0" in out and "E4 on-axis" in out and "embeddings" in out
    assert main(["analyze", "--model", "planted", "--store", str(store.path), "--core", "5-9"]) == 2
    assert "core layers [7, 8, 9] do not exist" in capsys.readouterr().err
    assert main(["analyze", "--model", "planted", "--store", str(store.path), "--window", "1"]) == 2
    assert "--window" in capsys.readouterr().err
    assert main(["analyze", "--model", "nobody", "--store", str(store.path)]) == 2
    assert "no model named" in capsys.readouterr().err


@pytest.mark.slow
def test_results_are_cached_and_keyed_by_every_parameter(store, rng, monkeypatch):
    import_model(store, "planted", rng, alpha=-0.05)
    reads = []
    original = store.read_layers

    def counting_read(name, stimuli, layers=None):
        for data in original(name, stimuli, layers):
            reads.append(data.layer)
            yield data

    monkeypatch.setattr(store, "read_layers", counting_read)
    first = analyze(store, "planted", params=FAST)
    assert reads == list(range(7)) and not first.from_cache  # one layer at a time, once each
    second = analyze(store, "planted", params=FAST)
    assert second.from_cache and len(reads) == 7
    pd.testing.assert_frame_equal(second.fits, first.fits)
    assert json.dumps(second.to_json()) == json.dumps(first.to_json())
    # another parameter is another result: computed afresh
    other = analyze(store, "planted", params=AnalysisParams(n_boot=300, seed=1))
    assert not other.from_cache and len(reads) == 14
    assert other.fit("eucl", 4).ci_low != first.fit("eucl", 4).ci_low
    variants = [
        FAST,
        AnalysisParams(n_boot=300, seed=1),
        AnalysisParams(n_boot=301),
        AnalysisParams(n_boot=300, ci=0.9),
        AnalysisParams(n_boot=300, window=(0.7, 1.3)),
        AnalysisParams(n_boot=300, core_layers=(2, 3)),
        AnalysisParams(n_boot=300, boundary=(9, 10)),
        AnalysisParams(n_boot=300, bootstrap_layers="all"),
        AnalysisParams(n_boot=300, measures=("eucl",)),
        AnalysisParams(n_boot=300, outlier_factor=4.0),
    ]
    keys = {analysis_key(store, "planted", "paper", params) for params in variants}
    assert len(keys) == len(variants)
    assert analysis_key(store, "planted", "paper", AnalysisParams(n_boot=300)) in keys


def test_new_vectors_change_the_cache_key(store, rng):
    import_model(store, "first", rng, alpha=-0.05, n_blocks=2, dim=16)
    import_model(store, "second", rng, alpha=-0.05, n_blocks=2, dim=16)
    assert analysis_key(store, "first", "paper", FAST) != analysis_key(store, "second", "paper", FAST)


def test_payload_round_trip_keeps_everything(store, rng):
    import_model(store, "planted", rng, alpha=-0.05)
    result = analyze(store, "planted", params=AnalysisParams(n_boot=100, measures=("eucl", "proj", "cv")))
    restored = AnalysisResult.from_payload(result.to_payload())
    assert restored.params == result.params
    assert restored.hypotheses == result.hypotheses
    assert restored.e3 == result.e3 and restored.e4 == result.e4
    for name in ("fits", "noise_models", "geometry", "cv_trend"):
        pd.testing.assert_frame_equal(getattr(restored, name), getattr(result, name))
    for measure, values in result.values.items():
        np.testing.assert_array_equal(restored.values[measure], values)
    assert restored.fit("eucl", 3) == result.fit("eucl", 3)


def test_result_contents(store, rng):
    import_model(store, "planted", rng, alpha=-0.1, post_norm=True)
    result = analyze(store, "planted", params=AnalysisParams(n_boot=100, bootstrap_layers="all"))
    assert result.n_layers == 8 and result.n_blocks == 6
    assert result.layer_labels[-1] == "final (post-norm)"
    assert result.core_layers == [3, 4, 5]
    assert set(result.values) == {"eucl", "residual", "proj", "on_axis", "off_axis", "cv"}
    assert result.values["eucl"].shape == (8, 26)
    alphas = result.alphas("eucl")
    assert math.isnan(alphas[0]) and np.all(np.abs(alphas[1:] + 0.1) < 0.02)
    # bootstrap on every layer that has a fit
    assert result.fits.loc[result.fits["layer"] > 0, "ci_low"].notna().all()
    assert len(result.noise_models) == 3 * 8 * 4
    assert result.geometry["rsa_log_euclidean"].iloc[1:].gt(0.9).all()
    assert result.geometry["pc1_pearson"].iloc[1:].gt(0.99).all()
    assert result.e3["eucl"].layers == [3, 4, 5]
    assert result.e4.n_pairs == 3
    assert list(result.cv_trend["layer"]) == list(range(8))
    with pytest.raises(AnalysisError):
        result.alphas("pairwise")


def test_run_analysis_without_a_store_and_progress(rng):
    per_carrier, labels = planted_arrays(rng, alpha=0.5, n_blocks=4, dim=128)
    progress = []
    result = run_analysis(
        ((labels[i], per_carrier[:, :, i]) for i in range(per_carrier.shape[2])),
        MAGNITUDES,
        n_blocks=4,
        params=AnalysisParams(n_boot=0, measures=("eucl", "pairwise", "trace")),
        n_layers=5,
        progress=lambda done, total: progress.append((done, total)),
    )
    assert progress == [(i, 5) for i in range(1, 6)]
    assert result.alphas("pairwise")[2] == pytest.approx(0.5, abs=0.03)
    assert result.alphas("trace")[2] == pytest.approx(1.0, abs=0.06)  # a variance: 2 alpha
    with pytest.raises(AnalysisError, match="unknown measure"):
        AnalysisParams(measures=("eucl", "bogus"))


def test_run_analysis_lets_go_of_each_layer_before_reading_the_next(rng):
    held_while_reading = []
    handed_out = []

    def layers():
        for layer in range(5):
            # Counted when the analysis asks for the next layer, i.e. before it is read.
            held_while_reading.append(sum(ref() is not None for ref in handed_out))
            vectors = rng.normal(size=(MAGNITUDES.size, 5, 8)) * (layer > 0)
            handed_out.append(weakref.ref(vectors))
            yield f"layer {layer}", vectors
            del vectors

    run_analysis(layers(), MAGNITUDES, n_blocks=4, params=AnalysisParams(n_boot=0))
    assert held_while_reading == [0] * 5


@pytest.mark.slow
def test_compare_through_store_and_cli(store, rng, capsys):
    import_model(store, "base", rng, alpha=-0.02, n_blocks=4, dim=128)
    import_model(store, "tuned", rng, alpha=-0.12, n_blocks=4, dim=128)
    counted = []
    result = compare(store, "tuned", "base", params=AnalysisParams(n_boot=300), progress=lambda *c: counted.append(c))
    assert counted == [(1, 3), (2, 3), (3, 3)]  # one report per measure: a progress bar can count them
    eucl = result.measures["eucl"]
    assert eucl.mean_delta == pytest.approx(-0.1, abs=0.03)
    assert eucl.n_pairs == 2
    core = eucl.layers[eucl.layers["core"]]
    assert (core["ci_low"] < -0.05).all() and (core["ci_high"] < 0).all()
    again = compare(store, "tuned", "base", params=AnalysisParams(n_boot=300))
    pd.testing.assert_frame_equal(again.measures["eucl"].layers, eucl.layers)
    restored = ComparisonResult.from_payload(result.to_payload())
    assert restored.measures["proj"].wilcoxon_p == result.measures["proj"].wilcoxon_p or math.isnan(
        result.measures["proj"].wilcoxon_p
    )
    status = main(["compare", "--model", "tuned", "--model", "base", "--store", str(store.path), "--json",
                   "--n-boot", "300"])  # fmt: skip
    assert status == 0
    document = json.loads(capsys.readouterr().out)
    assert document["model_a"] == "tuned" and document["model_b"] == "base"
    assert set(document["measures"]) == {"eucl", "residual", "proj"}
    layer_rows = document["measures"]["eucl"]["layers"]
    assert layer_rows[0]["alpha_a"] is None  # embeddings: no fit, null in JSON
    eucl_json = document["measures"]["eucl"]  # the stimulus bootstrap's interval, beside a test that cannot reach .05
    assert eucl_json["mean_delta_ci_low"] < -0.05 and eucl_json["mean_delta_ci_high"] < 0 and eucl_json["n_resamples"] > 250
    assert eucl_json["wilcoxon_reachable"] is False and eucl_json["wilcoxon_note"].startswith("with 2 layer pairs")
    assert eucl.mean_delta_ci == (eucl_json["mean_delta_ci_low"], eucl_json["mean_delta_ci_high"])
    assert layer_rows[3]["delta"] == pytest.approx(-0.1, abs=0.03)
    assert main(["compare", "--model", "tuned", "--model", "base", "--store", str(store.path), "--n-boot", "300"]) == 0
    assert "Wilcoxon" in capsys.readouterr().out
    assert main(["compare", "--model", "tuned", "--store", str(store.path)]) == 2
    assert "exactly two models" in capsys.readouterr().err


def test_compare_models_of_different_depth_through_store(store, rng):
    import_model(store, "deep", rng, alpha=-0.05, n_blocks=6, dim=32)
    import_model(store, "shallow", rng, alpha=-0.05, n_blocks=3, dim=32)
    # the chosen band 4..5 is the deep model's; the shallow one keeps its own default
    params = AnalysisParams(n_boot=0, core_layers=(4, 5), measures=("eucl",))
    result = compare(store, "deep", "shallow", params=params)
    table = result.measures["eucl"].layers
    assert list(table["layer_b"]) == [0, 1, 1, 2, 2, 3, 3]
    assert result.core_layers == [4, 5]
    assert result.measures["eucl"].n_pairs == 2


@pytest.mark.slow
def test_programme_verdict_across_models(store, rng):
    import_model(store, "one", rng, alpha=-0.05, n_blocks=4, dim=64)
    import_model(store, "two", rng, alpha=-0.08, n_blocks=4, dim=64)
    import_model(store, "three", rng, alpha=0.9, n_blocks=4, dim=64)
    params = AnalysisParams(n_boot=0, measures=("eucl",))
    results = [analyze(store, name, params=params) for name in ("one", "two", "three")]
    verdicts = programme_verdict({r.model: r.hypotheses["eucl"] for r in results}).set_index("hypothesis")
    assert verdicts.loc["H1", "supporting_models"] == 1 and not verdicts.loc["H1", "supported"]
    assert verdicts.loc["H2", "models"] == "three" and not verdicts.loc["H2", "supported"]
    assert verdicts.loc["H3", "supporting_models"] == 3 and verdicts.loc["H3", "supported"]
    assert AnalysisParams(core_layers=(3, 2, 3)).core_layers == (2, 3)


def test_an_unknown_measure_is_named_on_one_line_whatever_its_characters():
    with pytest.raises(AnalysisError) as refused:
        AnalysisParams(measures=("eucl", "0\n0"))
    assert "unknown measure(s) '0\\n0'" in str(refused.value) and "\n" not in str(refused.value)
